//! Conditional requests (RFC 9110 §13): a strong `ETag` on the responses a client reads again
//! and again (the catalogue, a quiz in a locale, analytics reports), and `304 Not Modified` with
//! no body when the client's copy is current. The tag is a hash of the body as sent, so it
//! changes exactly when the representation does (a new quiz version, another locale, a new
//! attempt in a report) and needs no bookkeeping in the handlers.
//!
//! Wrap a resource with `.wrap(from_fn(conditional::revalidate))`. The handler still runs (who
//! may see what is decided there, every time); what a `304` saves is the body on the wire. A
//! handler that serves a cached body may send the tag it computed with it (a quiz in a locale
//! does): the body is then neither buffered nor hashed here.

use actix_web::body::{BoxBody, MessageBody, to_bytes_limited};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::HeaderMap;
use actix_web::http::{Method, StatusCode, header};
use actix_web::middleware::Next;
use actix_web::web::Bytes;
use actix_web::{HttpResponse, HttpResponseBuilder, ResponseError};
use base64::Engine;
use sha2::{Digest, Sha256};

/// The most entity tags of an `If-None-Match` that are compared; the rest are ignored (the
/// response is then a `200`, which is always correct).
pub const MAX_IF_NONE_MATCH_TAGS: usize = 64;

/// The largest body buffered to be tagged. The wrapped resources stay far below it (a quiz's
/// content is at most 1 MiB, a report is bounded by its questions); one beyond it is a bug,
/// answered `500` rather than buffered without bound.
const MAX_TAGGED_BODY: usize = 16 << 20;

/// The strong entity tag of a body: 128 bits of its SHA-256, quoted.
pub fn entity_tag(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    format!(
        "\"{}\"",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..16])
    )
}

/// Whether `If-None-Match` names `etag` (or `*`), comparing at most
/// [`MAX_IF_NONE_MATCH_TAGS`] tags (weak comparison, as RFC 9110 §13.1.2 says for this header).
pub fn none_match_hits(if_none_match: &str, etag: &str) -> bool {
    if_none_match
        .split(',')
        .take(MAX_IF_NONE_MATCH_TAGS)
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == etag || t == "*")
}

/// Tags a `200` answer to `GET`/`HEAD` and answers `304` when the client has it already.
pub async fn revalidate(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let conditional = matches!(*req.method(), Method::GET | Method::HEAD);
    let if_none_match = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let res = next.call(req).await?;
    if !conditional || res.status() != StatusCode::OK {
        return Ok(res.map_into_boxed_body());
    }
    let hits = |etag: &str| (if_none_match.as_deref()).is_some_and(|v| none_match_hits(v, etag));
    if let Some(etag) = res.headers().get(header::ETAG) {
        // Tagged by the handler: a miss goes out as it is, a hit without its body.
        if !etag.to_str().is_ok_and(hits) {
            return Ok(res.map_into_boxed_body());
        }
        let (req, res) = res.into_parts();
        let not_modified = answer(res.headers(), None, None);
        return Ok(ServiceResponse::new(req, not_modified));
    }
    let (req, res) = res.into_parts();
    let (head, body) = res.into_parts();
    let Ok(Ok(bytes)) = to_bytes_limited(body, MAX_TAGGED_BODY).await else {
        let res = crate::error::ApiError::internal(
            "a response body could not be read, or exceeded the tagging limit",
        )
        .error_response();
        return Ok(ServiceResponse::new(req, res));
    };
    let etag = entity_tag(&bytes);
    let body = (!hits(&etag)).then_some(bytes);
    Ok(ServiceResponse::new(
        req,
        answer(head.headers(), Some(etag), body),
    ))
}

/// The answer with `headers` (and `etag`, when given): a `200` with `body`, or, with none, a
/// `304`, which carries the validators and caching headers but not the body's own.
fn answer(headers: &HeaderMap, etag: Option<String>, body: Option<Bytes>) -> HttpResponse {
    let mut builder = HttpResponseBuilder::new(if body.is_some() {
        StatusCode::OK
    } else {
        StatusCode::NOT_MODIFIED
    });
    for (name, value) in headers {
        if body.is_none() && (name == header::CONTENT_TYPE || name == header::CONTENT_LENGTH) {
            continue;
        }
        builder.append_header((name.clone(), value.clone()));
    }
    if let Some(etag) = etag {
        builder.insert_header((header::ETAG, etag));
    }
    match body {
        Some(body) => builder.body(body),
        None => builder.finish(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_is_strong_quoted_and_changes_with_the_body() {
        let a = entity_tag(b"{\"a\":1}");
        assert!(
            a.starts_with('"') && a.ends_with('"') && a.len() == 24,
            "{a}"
        );
        assert_ne!(a, entity_tag(b"{\"a\":2}"));
        assert_eq!(a, entity_tag(b"{\"a\":1}"));
    }

    #[test]
    fn if_none_match_hits_its_tag_a_weak_copy_or_star_but_reads_a_bounded_list() {
        let tag = entity_tag(b"x");
        assert!(none_match_hits(&tag, &tag));
        assert!(none_match_hits(&format!("\"other\", W/{tag}"), &tag));
        assert!(none_match_hits("*", &tag));
        assert!(!none_match_hits("\"other\"", &tag));
        let many = vec!["\"nope\""; MAX_IF_NONE_MATCH_TAGS].join(", ");
        assert!(!none_match_hits(&format!("{many}, {tag}"), &tag));
    }
}
