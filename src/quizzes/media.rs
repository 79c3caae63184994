//! Serving a question's image, once the caller's page (the quiz view, an attempt) has said
//! that the caller may see the question it belongs to: its stored bytes and type, and headers
//! that keep a browser from reading it as anything but an image of that type.

use std::collections::BTreeMap;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{
    ContentBuilder, HeaderBuilder, RefOr, Response, ResponseBuilder, ResponsesBuilder,
};

use crate::conditional::none_match_hits;
use crate::content::Image;
use crate::content::media::ImageType;
use crate::error::{ApiError, Code};
use crate::state::AppState;

/// What both image routes answer alike, for their OpenAPI documentation: the image with its
/// headers, or `304`.
pub struct ImageResponses;

impl utoipa::IntoResponses for ImageResponses {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let header = |description: &str| {
            HeaderBuilder::new()
                .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
                .description(Some(description))
                .build()
        };
        let etag = "The image's hash, quoted";
        let mut image = ResponseBuilder::new()
            .description("The image, in its stored type (PNG, JPEG, GIF or WebP)")
            .header("ETag", header(etag))
            .header(
                "Cache-Control",
                header("`private, max-age=31536000, immutable`"),
            )
            .header("X-Content-Type-Options", header("`nosniff`"))
            .header(
                "Content-Security-Policy",
                header("`default-src 'none'; sandbox`"),
            );
        for kind in [
            ImageType::Png,
            ImageType::Jpeg,
            ImageType::Gif,
            ImageType::Webp,
        ] {
            image = image.content(kind.content_type(), ContentBuilder::new().build());
        }
        let not_modified = ResponseBuilder::new()
            .description("Not modified: `If-None-Match` names this image; no body")
            .header("ETag", header(etag));
        ResponsesBuilder::new()
            .response("200", image)
            .response("304", not_modified)
            .build()
            .into()
    }
}

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
