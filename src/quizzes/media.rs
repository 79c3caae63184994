//! Serving a question's image, once the caller's page (the quiz view, an attempt) has said
//! that the caller may see the question it belongs to: its stored bytes and type, and headers
//! that keep a browser from reading it as anything but an image of that type.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};

use crate::conditional::none_match_hits;
use crate::content::Image;
use crate::error::{ApiError, Code};
use crate::state::AppState;

pub fn media_not_found() -> ApiError {
    ApiError::new(
        Code::MediaNotFound,
        "There is no image with this hash here, or it is not yours to see.",
    )
}

/// Whether `sha256` is written as a hash can be (64 lowercase hex digits): anything else is
/// answered without asking the database.
pub fn plausible_hash(sha256: &str) -> bool {
    sha256.len() == 64
        && sha256
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The image, to a caller who may see it: `304` when `If-None-Match` names it (its entity tag
/// is its hash: the bytes never change), else its bytes. Cached privately (the token decided),
/// for a year (a hash names one content forever).
pub async fn serve(
    state: &AppState,
    req: &HttpRequest,
    image: &Image,
) -> Result<HttpResponse, ApiError> {
    let etag = format!("\"{}\"", image.sha256);
    let headers = |res: &mut actix_web::HttpResponseBuilder| {
        res.insert_header((header::ETAG, etag.clone()))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .insert_header((
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; sandbox",
            ))
            .insert_header((
                header::CACHE_CONTROL,
                "private, max-age=31536000, immutable",
            ));
    };
    let cached = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| none_match_hits(v, &etag));
    if cached {
        let mut res = HttpResponse::NotModified();
        headers(&mut res);
        return Ok(res.finish());
    }
    let stored = crate::content::store::media(&state.pool, &image.sha256)
        .await?
        .ok_or_else(media_not_found)?;
    let mut res = HttpResponse::Ok();
    headers(&mut res);
    Ok(res.content_type(stored.content_type).body(stored.bytes))
}
