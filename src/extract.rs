//! Request extraction shared by every endpoint.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpMessage, HttpRequest, web};
use serde::de::{DeserializeOwned, Deserializer};

use crate::error::{ApiError, Code};

/// A JSON body that must be an object. (serde would also read a struct from an array of its
/// fields, `[null, null]`, which no client means.) Unknown fields are refused by the types.
pub struct JsonObject<T>(pub T);

impl<T> JsonObject<T> {
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for JsonObject<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: DeserializeOwned + 'static> FromRequest for JsonObject<T> {
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self, actix_web::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let json = web::Json::<serde_json::Value>::from_request(req, payload);
        Box::pin(async move {
            let value = json.await?.into_inner();
            if !value.is_object() {
                return Err(
                    ApiError::new(Code::InvalidBody, "The body must be a JSON object.").into(),
                );
            }
            from_object(value).map(JsonObject).map_err(Into::into)
        })
    }
}

/// A JSON object body read but not yet parsed: a handler checks who is asking first, then
/// [`parse`](Self::parse)s it, so that whoever may not use a route gets its `403` or `404`
/// whatever they sent, never a `400` or `415` about a body that was not theirs to send. The
/// body is bounded as every body is (`PayloadConfig`, `413`).
pub struct LaterJson<T> {
    body: web::Bytes,
    json: bool,
    of: std::marker::PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> LaterJson<T> {
    /// The body as a `T`, with [`JsonObject`]'s problems: `415` unless it was sent as JSON,
    /// `400` unless it is a JSON object that fits `T`.
    pub fn parse(self) -> Result<T, ApiError> {
        if !self.json {
            return Err(ApiError::from_status(
                actix_web::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ));
        }
        match serde_json::from_slice::<serde_json::Value>(&self.body) {
            Ok(value @ serde_json::Value::Object(_)) => from_object(value),
            Ok(_) => Err(ApiError::new(
                Code::InvalidBody,
                "The body must be a JSON object.",
            )),
            Err(e) => Err(ApiError::new(
                Code::InvalidBody,
                format!("Invalid JSON body: {e}"),
            )),
        }
    }
}

impl<T: 'static> FromRequest for LaterJson<T> {
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self, actix_web::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        // As `web::Json` judges it: `application/json` or any `+json` type.
        let json = req.mime_type().ok().flatten().is_some_and(|m| {
            m.subtype() == actix_web::mime::JSON || m.suffix() == Some(actix_web::mime::JSON)
        });
        let body = web::Bytes::from_request(req, payload);
        Box::pin(async move {
            Ok(LaterJson {
                body: body.await?,
                json,
                of: std::marker::PhantomData,
            })
        })
    }
}

/// Reads a JSON object into `T`. A value a parsed type refused (a [`crate::validate::Email`],
/// say) gives that type's problem; anything else that does not fit is `invalid_body`.
pub fn from_object<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    crate::validate::take_refused();
    serde_json::from_value(value).map_err(|e| {
        crate::validate::take_refused()
            .unwrap_or_else(|| ApiError::new(Code::InvalidBody, format!("Invalid JSON body: {e}")))
    })
}

/// Reads an optional body: empty or `null` gives `T::default()`, else a JSON object as
/// [`from_object`] reads it.
pub fn optional_object<T: DeserializeOwned + Default>(body: &[u8]) -> Result<T, ApiError> {
    let invalid = |detail: String| ApiError::new(Code::InvalidBody, detail);
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Null) => Ok(T::default()),
        Ok(v @ serde_json::Value::Object(_)) => from_object(v),
        Ok(_) => Err(invalid("The body must be a JSON object.".into())),
        Err(e) => Err(invalid(format!("Invalid JSON body: {e}"))),
    }
}

/// An optional whole number that may arrive as `3` or `3.0`; it lives with the content files,
/// which read their policy with it.
pub use quizd_content::de::optional_whole;

/// A whole number that may arrive as `3` or `3.0` (see [`optional_whole`]).
pub fn whole<'de, D, N>(d: D) -> Result<N, D::Error>
where
    D: Deserializer<'de>,
    N: TryFrom<i64>,
{
    optional_whole(d)?.ok_or_else(|| serde::de::Error::custom("expected a whole number"))
}
