//! Deserialization helpers the content files and the server's request bodies share, and the
//! way a stored enum's name is read back.

use serde::Deserialize;
use serde::de::Deserializer;

/// An optional whole number that may arrive as `3` or `3.0` (JSON Schema calls both integers).
pub fn optional_whole<'de, D, N>(d: D) -> Result<Option<N>, D::Error>
where
    D: Deserializer<'de>,
    N: TryFrom<i64>,
{
    let Some(x) = Option::<f64>::deserialize(d)? else {
        return Ok(None);
    };
    if x.fract() != 0.0 || !x.is_finite() || x.abs() > 9.0e15 {
        return Err(serde::de::Error::custom("expected a whole number"));
    }
    N::try_from(x as i64)
        .map(Some)
        .map_err(|_| serde::de::Error::custom("the number is out of range"))
}

/// Reads a stored name back: the `as_str` of one variant, nothing else.
macro_rules! from_stored_name {
    ($ty:ident, $what:literal, [$($variant:ident),+]) => {
        impl TryFrom<String> for $ty {
            type Error = String;

            fn try_from(name: String) -> Result<Self, String> {
                [$(Self::$variant),+]
                    .into_iter()
                    .find(|v| v.as_str() == name)
                    .ok_or_else(|| format!("'{name}' is not a {}", $what))
            }
        }
    };
}

pub(crate) use from_stored_name;

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct T {
        #[serde(default, deserialize_with = "super::optional_whole")]
        n: Option<u32>,
    }

    #[test]
    fn whole_numbers_may_be_written_with_a_zero_fraction() {
        let parse = |s: &str| serde_json::from_str::<T>(s).map(|t| t.n);
        assert_eq!(parse(r#"{"n": 3}"#).unwrap(), Some(3));
        assert_eq!(parse(r#"{"n": 3.0}"#).unwrap(), Some(3));
        assert_eq!(parse(r#"{"n": null}"#).unwrap(), None);
        assert_eq!(parse("{}").unwrap(), None);
        assert!(parse(r#"{"n": 3.5}"#).is_err());
        assert!(parse(r#"{"n": -1}"#).is_err());
    }
}
