//! Checks on strings from requests, applied before anything reaches PostgreSQL; and the
//! parsed types of the values that have one meaning wherever they come ([`Email`],
//! [`DisplayName`], [`Locale`]): a request body holding one is refused at extraction, with
//! the same problem the check would give, so a handler never sees an unchecked value.

use std::cell::RefCell;

use actix_web::http::StatusCode;
use serde::Deserialize;

use crate::error::{ApiError, Code};
use crate::i18n::canonical_tag;

/// A single-line text of `min..=max` characters: no NUL, no control characters.
pub fn line(field: &str, value: &str, min: usize, max: usize) -> Result<(), ApiError> {
    if value.contains('\0') {
        return Err(ApiError::new(
            Code::InvalidField,
            format!("`{field}` contains a NUL character."),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(ApiError::new(
            Code::InvalidField,
            format!("`{field}` contains control characters."),
        )
        .with_status(StatusCode::UNPROCESSABLE_ENTITY));
    }
    let len = value.trim().chars().count();
    if len < min || value.chars().count() > max {
        return Err(ApiError::new(
            Code::InvalidField,
            format!("`{field}` must be {min} to {max} characters."),
        )
        .with_status(StatusCode::UNPROCESSABLE_ENTITY));
    }
    Ok(())
}

thread_local! {
    /// The problem of the last value a parse refused on this thread, for the body extractor
    /// ([`crate::extract::from_object`]): serde keeps only an error's text.
    static REFUSED: RefCell<Option<(Code, StatusCode, String)>> = const { RefCell::new(None) };
}

/// A value its parse refused: the problem a request holding it gets.
#[derive(Debug)]
pub struct Refused(pub ApiError);

impl From<ApiError> for Refused {
    fn from(e: ApiError) -> Self {
        REFUSED.with(|r| *r.borrow_mut() = Some((e.code, e.status, e.detail.clone())));
        Self(e)
    }
}

impl From<Refused> for ApiError {
    fn from(r: Refused) -> Self {
        r.0
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.detail)
    }
}

/// Takes (and forgets) the problem of the last value refused on this thread, if any.
pub fn take_refused() -> Option<ApiError> {
    REFUSED
        .with(|r| r.borrow_mut().take())
        .map(|(code, status, detail)| ApiError::new(code, detail).with_status(status))
}

/// An email address as quizd takes one: 3 to 254 characters, no whitespace or control
/// characters, a local part, `@`, and a domain with a dot not at its start. As given (case kept).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Email(String);

impl Email {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Email {
    type Error = Refused;

    fn try_from(value: String) -> Result<Self, Refused> {
        line("email", &value, 3, 254)?;
        let ok = value.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && domain.contains('.') && !domain.starts_with('.')
        }) && !value.contains(char::is_whitespace);
        if ok {
            Ok(Self(value))
        } else {
            Err(ApiError::new(Code::InvalidEmail, "`email` is not an email address.").into())
        }
    }
}

/// A person's name as shown: one line of 1 to 200 characters, kept trimmed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct DisplayName(String);

impl DisplayName {
    pub const MAX: usize = 200;

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for DisplayName {
    type Error = Refused;

    fn try_from(value: String) -> Result<Self, Refused> {
        line("display_name", &value, 1, Self::MAX)?;
        Ok(Self(value.trim().to_string()))
    }
}

/// A locale preference: a BCP 47 language tag, kept in its canonical form (`pt-br` → `pt-BR`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Locale(String);

impl Locale {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Locale {
    type Error = Refused;

    fn try_from(value: String) -> Result<Self, Refused> {
        canonical_tag(&value).map(Self).ok_or_else(|| {
            ApiError::new(
                Code::InvalidLocale,
                "`locale` must be a BCP 47 language tag such as bn, id or pt-BR.",
            )
            .into()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Body {
        email: Email,
        display_name: Option<DisplayName>,
        locale: Option<Locale>,
    }

    fn refused(json: serde_json::Value) -> ApiError {
        take_refused();
        serde_json::from_value::<Body>(json).unwrap_err();
        take_refused().expect("a parse refused a value")
    }

    #[test]
    fn parsed_values_are_kept_in_their_one_form() {
        let body: Body = serde_json::from_value(serde_json::json!({
            "email": "Ann@Example.org", "display_name": "  Ann  ", "locale": "pt-br",
        }))
        .unwrap();
        assert_eq!(body.email.as_str(), "Ann@Example.org");
        assert_eq!(body.display_name.unwrap().as_str(), "Ann");
        assert_eq!(body.locale.unwrap().as_str(), "pt-BR");
    }

    #[test]
    fn a_refused_value_gives_the_problem_of_its_check() {
        let e = refused(serde_json::json!({"email": "no-at-sign.org"}));
        assert_eq!((e.code, e.status.as_u16()), (Code::InvalidEmail, 422));
        let e = refused(serde_json::json!({"email": "a\0@b.org"}));
        assert_eq!((e.code, e.status.as_u16()), (Code::InvalidField, 400));
        assert_eq!(e.detail, "`email` contains a NUL character.");
        let e = refused(serde_json::json!({"email": "a@b.org", "display_name": " "}));
        assert_eq!((e.code, e.status.as_u16()), (Code::InvalidField, 422));
        assert_eq!(e.detail, "`display_name` must be 1 to 200 characters.");
        let e = refused(serde_json::json!({"email": "a@b.org", "locale": "bengali"}));
        assert_eq!((e.code, e.status.as_u16()), (Code::InvalidLocale, 422));
        // A body refused for another reason leaves nothing behind.
        take_refused();
        serde_json::from_value::<Body>(serde_json::json!({"email": 7})).unwrap_err();
        assert!(take_refused().is_none());
    }
}
