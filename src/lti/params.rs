//! The parameters of logins and launches, from a query string or a form. Pure: no I/O.

use std::collections::HashMap;

use crate::error::{ApiError, Code};

/// The parameters quizd reads from logins and launches. Others are ignored, as OIDC asks.
const KNOWN_PARAMETERS: [&str; 12] = [
    "iss",
    "login_hint",
    "target_link_uri",
    "lti_message_hint",
    "client_id",
    "lti_deployment_id",
    "id_token",
    "state",
    "error",
    "error_description",
    // LTI client-side postMessage storage: the platform's storage frame (login), and the
    // secret quizd's launch page read back from it (the launch's second post).
    "lti_storage_target",
    "lti_storage_secret",
];

/// The known parameters of a form or query string; one of them given twice is refused.
pub(super) fn parameters(raw: &[u8]) -> Result<HashMap<String, String>, ApiError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(raw).map_err(|e| {
        ApiError::new(
            Code::LtiInvalidRequest,
            format!("The parameters cannot be read: {e}."),
        )
    })?;
    let mut map = HashMap::new();
    for (k, v) in pairs {
        if !KNOWN_PARAMETERS.contains(&k.as_str()) {
            continue;
        }
        if v.contains('\0') {
            return Err(ApiError::new(
                Code::LtiInvalidRequest,
                format!("The parameter `{k}` contains a NUL character."),
            ));
        }
        if map.insert(k.clone(), v).is_some() {
            return Err(ApiError::new(
                Code::LtiInvalidRequest,
                format!("The parameter `{k}` is given more than once."),
            ));
        }
    }
    Ok(map)
}

pub(super) fn required<'a>(
    p: &'a HashMap<String, String>,
    name: &str,
    max: usize,
    code: Code,
) -> Result<&'a str, ApiError> {
    match p.get(name).map(String::as_str) {
        Some(v) if !v.is_empty() && v.len() <= max => Ok(v),
        Some(v) if v.len() > max => Err(ApiError::new(
            code,
            format!("The parameter `{name}` is longer than {max} bytes."),
        )),
        _ => Err(ApiError::new(
            code,
            format!("The required parameter `{name}` is missing."),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_given_twice_is_refused() {
        assert_eq!(
            parameters(b"iss=a&login_hint=b").unwrap()["login_hint"],
            "b"
        );
        assert_eq!(
            parameters(b"iss=a&iss=b").unwrap_err().code,
            "lti_invalid_request"
        );
        assert_eq!(
            parameters(b"iss=a%00b").unwrap_err().code,
            "lti_invalid_request"
        );
        // Unknown parameters are ignored, however they come.
        let p = parameters(b"x=1&x=2&lti_storage_target=_parent&iss=a").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p["lti_storage_target"], "_parent");
    }
}
