//! Checks on strings from requests, applied before anything reaches PostgreSQL.

use crate::error::{ApiError, Code};
use crate::i18n::canonical_tag;
use actix_web::http::StatusCode;

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

pub fn email(value: &str) -> Result<(), ApiError> {
    line("email", value, 3, 254)?;
    let ok = value.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty() && domain.contains('.') && !domain.starts_with('.')
    }) && !value.contains(char::is_whitespace);
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            Code::InvalidEmail,
            "`email` is not an email address.",
        ))
    }
}

/// A locale preference: a canonical BCP 47 tag.
pub fn locale(value: &str) -> Result<String, ApiError> {
    canonical_tag(value).ok_or_else(|| {
        ApiError::new(
            Code::InvalidLocale,
            "`locale` must be a BCP 47 language tag such as bn, id or pt-BR.",
        )
    })
}
