//! Safe retries: an `Idempotency-Key` on the creating POSTs (draft-ietf-httpapi-idempotency-key-header).
//!
//! A client that sends `Idempotency-Key: <key>` and retries the same request with the same key
//! (after a timeout, a dropped connection) gets the first response again, marked
//! `Idempotent-Replayed: true`, instead of a second course, assignment, enrollment, quiz or
//! registration. The key is the client's (1 to 255 visible ASCII characters, e.g. a UUID) and
//! is scoped to the signed-in person: two people's keys never meet.
//!
//! - The same key, method, path (with its query) and body within [`TTL`] → the first
//!   response: its status, body, `Content-Type` and `Location`.
//! - The same key with another method, path or body → `422 idempotency_key_reused`.
//! - The same key while its first request is still running → `409 idempotency_key_in_flight`
//!   (with `Retry-After`).
//! - A request that did not succeed (any status but 2xx) keeps nothing: a retry runs again.
//!   So does one whose response body is larger than [`MAX_STORED_BODY`] (none of the wrapped
//!   endpoints answers that much): it is not replayed.
//!
//! The keys live in PostgreSQL (`idempotency_keys`), so they hold across instances. A key is
//! claimed by inserting its row before the request runs (`INSERT … ON CONFLICT DO NOTHING`):
//! of two identical requests at once exactly one runs. The claimed request then runs to its
//! end even if the client goes away, so that its response is recorded (or the key released).
//! A claim whose request never finished (the instance died) lapses after [`IN_FLIGHT_LEASE`].
//! Keys older than [`TTL`] are purged, a bounded batch at each new claim.
//!
//! Wrap a creating route with `.wrap(from_fn(idempotency::guard))`, and list it in
//! [`OPERATIONS`] so that the OpenAPI document ([`Documented`]) says so.
//!
//! A secret is shown once: an endpoint whose answer carries one (a webhook's signing secret)
//! puts the same answer without it in the response's extensions as a [`ReplayBody`], and that
//! is what is stored and replayed. No secret is kept in `idempotency_keys`.

pub mod store;

use actix_web::body::{BodySize, BoxBody, MessageBody, to_bytes_limited};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::web::{self, Bytes, BytesMut};
use actix_web::{HttpMessage, HttpResponse, HttpResponseBuilder, ResponseError};
use chrono::{DateTime, SubsecRound, TimeDelta, Utc};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::auth::CurrentUser;
use crate::error::{ApiError, Code};
use crate::state::AppState;

/// The request header naming the key.
pub const HEADER: &str = "idempotency-key";
/// The response header that marks a replayed response.
pub const REPLAYED: &str = "idempotent-replayed";
/// The longest key.
pub const MAX_KEY_LEN: usize = 255;
/// How long a key is remembered.
pub const TTL: TimeDelta = TimeDelta::hours(24);
/// How long a claimed key waits for its request to finish before another may claim it (no
/// request of these endpoints takes a fraction of it; only a crashed instance leaves one).
pub const IN_FLIGHT_LEASE: TimeDelta = TimeDelta::minutes(5);
/// The largest response body that is kept for replay.
pub const MAX_STORED_BODY: usize = 64 * 1024;
/// The largest request body read to fingerprint the request (the largest body any wrapped
/// endpoint takes: a quiz's content); the endpoint's own, often smaller, limit still applies.
const MAX_READ_BODY: usize = 1024 * 1024;

/// The operations that take an `Idempotency-Key` (all `POST`), as the OpenAPI document names
/// their paths.
pub const OPERATIONS: [&str; 9] = [
    "/v1/assignments/{id}/live",
    "/v1/assignments/{id}/regrade",
    "/v1/courses",
    "/v1/courses/{id}/assignments",
    "/v1/courses/{id}/enrollments",
    "/v1/quizzes",
    "/v1/quizzes/import",
    "/v1/lti/registrations",
    "/v1/webhooks",
];

/// What a response keeps for its replays instead of its own body: the body without the
/// secret it shows once. An endpoint puts it in the response's extensions.
#[derive(Clone, Debug)]
pub struct ReplayBody(pub Bytes);

/// Whether `value` is a key quizd takes: 1 to 255 visible ASCII characters.
pub fn valid_key(value: &[u8]) -> bool {
    (1..=MAX_KEY_LEN).contains(&value.len()) && value.iter().all(|b| (0x21..=0x7e).contains(b))
}

/// The request's fingerprint: SHA-256 of its method, path with query, and body.
fn fingerprint(method: &Method, path: &str, body: &[u8]) -> Vec<u8> {
    let mut hash = Sha256::new();
    hash.update(method.as_str().as_bytes());
    hash.update([0]);
    hash.update(path.as_bytes());
    hash.update([0]);
    hash.update(body);
    hash.finalize().to_vec()
}

fn invalid_key(detail: &str) -> ApiError {
    ApiError::new(Code::InvalidIdempotencyKey, detail)
}

/// Reads the whole body (at most [`MAX_READ_BODY`]) so that it can be fingerprinted; the
/// caller puts it back for the handler.
async fn read_body(req: &mut ServiceRequest) -> Result<Bytes, ApiError> {
    let too_large = || ApiError::from_status(StatusCode::PAYLOAD_TOO_LARGE);
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if announced.is_some_and(|n| n > MAX_READ_BODY) {
        return Err(too_large());
    }
    let mut payload = req.take_payload();
    let mut body = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(Code::InvalidBody, format!("Could not read the body: {e}"))
        })?;
        if body.len() + chunk.len() > MAX_READ_BODY {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// How a claim ended.
enum Claim {
    /// The key is this request's: run it.
    Won(DateTime<Utc>),
    /// Answer this instead of running the request.
    Answer(HttpResponse),
}

/// Claims `key` for this request, or says what to answer instead.
async fn claim(
    state: &AppState,
    user: Uuid,
    key: &str,
    request_hash: &[u8],
) -> Result<Claim, ApiError> {
    // Stored to the microsecond, as PostgreSQL keeps it, so that the claim can be named later.
    let now = state.clock.now().trunc_subsecs(6);
    store::purge_expired(&state.pool, now - TTL).await?;
    // A key freed between our insert and our read (its first request failed) is tried again.
    for _ in 0..3 {
        store::free_stale(&state.pool, user, key, now - TTL, now - IN_FLIGHT_LEASE).await?;
        if store::insert(&state.pool, user, key, request_hash, now).await? {
            return Ok(Claim::Won(now));
        }
        let Some(held) = store::held(&state.pool, user, key).await? else {
            continue;
        };
        if held.request_hash != request_hash {
            return Err(ApiError::new(
                Code::IdempotencyKeyReused,
                "This Idempotency-Key was used with another request (method, path or body); \
                 use a new key for a new request.",
            ));
        }
        let Some(status) = held
            .response_status
            .and_then(|s| StatusCode::from_u16(s as u16).ok())
        else {
            return Err(in_flight());
        };
        let mut res = HttpResponseBuilder::new(status);
        if let Some(ct) = held.response_content_type {
            res.insert_header((header::CONTENT_TYPE, ct));
        }
        if let Some(location) = held.response_location {
            res.insert_header((header::LOCATION, location));
        }
        res.insert_header((REPLAYED, "true"));
        return Ok(Claim::Answer(
            res.body(held.response_body.unwrap_or_default()),
        ));
    }
    Err(in_flight())
}

fn in_flight() -> ApiError {
    ApiError {
        retry_after: Some(1),
        ..ApiError::new(
            Code::IdempotencyKeyInFlight,
            "A request with this Idempotency-Key is still running; retry after `Retry-After` \
             seconds to get its response.",
        )
    }
}

/// The middleware: replays, refuses or runs a `POST` that carries an `Idempotency-Key`; any
/// other request passes untouched. A request with no valid access token passes too (the
/// handler answers it `401`).
pub async fn guard(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    if req.method() != Method::POST || !req.headers().contains_key(HEADER) {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    }
    let mut values = req.headers().get_all(HEADER);
    let value = values.next().map(HeaderValue::as_bytes).unwrap_or_default();
    if values.next().is_some() {
        return Ok(req.error_response(invalid_key("Send one Idempotency-Key header.")));
    }
    if !valid_key(value) {
        return Ok(req.error_response(invalid_key(
            "Idempotency-Key must be 1 to 255 visible ASCII characters (e.g. a UUID).",
        )));
    }
    let key = String::from_utf8_lossy(value).into_owned();
    let Ok(user) = req.extract::<CurrentUser>().await else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return Ok(req.error_response(ApiError::internal("no app state")));
    };
    let body = match read_body(&mut req).await {
        Ok(body) => body,
        Err(e) => return Ok(req.error_response(e)),
    };
    let path = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.path().to_owned(), |p| p.as_str().to_owned());
    let request_hash = fingerprint(req.method(), &path, &body);
    req.set_payload(body.into());
    let claimed_at = match claim(&state, user.id, &key, &request_hash).await {
        Ok(Claim::Won(at)) => at,
        Ok(Claim::Answer(res)) => return Ok(req.into_response(res)),
        Err(e) => return Ok(req.error_response(e)),
    };
    // The request runs to its end even if the client goes away (and this future with it), so
    // that its response is recorded or its key released.
    let run = actix_web::rt::spawn(async move {
        let res = next.call(req).await;
        settle(&state, user.id, &key, claimed_at, res).await
    });
    run.await
        .map_err(|e| ApiError::internal(format!("an idempotent request failed: {e}")).into())
        .and_then(|res| res)
}

/// Records a successful response for replay, or releases the key.
async fn settle(
    state: &AppState,
    user: Uuid,
    key: &str,
    claimed_at: DateTime<Utc>,
    res: Result<ServiceResponse<impl MessageBody + 'static>, actix_web::Error>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let release = || async {
        if let Err(e) = store::release(&state.pool, user, key, claimed_at).await {
            // The lease frees it later.
            tracing::warn!(error = %e, "an idempotency key could not be released");
        }
    };
    let res = match res {
        Ok(res) => res,
        Err(e) => {
            release().await;
            return Err(e);
        }
    };
    let storable = match res.response().body().size() {
        BodySize::None => true,
        BodySize::Sized(n) => n <= MAX_STORED_BODY as u64,
        // A stream is not kept: its size is unknown until read.
        BodySize::Stream => false,
    };
    if !res.status().is_success() || !storable {
        release().await;
        return Ok(res.map_into_boxed_body());
    }
    let (req, res) = res.into_parts();
    let (head, body) = res.into_parts();
    let Ok(Ok(body)) = to_bytes_limited(body, MAX_STORED_BODY).await else {
        release().await;
        let res = ApiError::internal("a response body could not be read").error_response();
        return Ok(ServiceResponse::new(req, res));
    };
    let text = |name| head.headers().get(name).and_then(|v| v.to_str().ok());
    let replay = head.extensions().get::<ReplayBody>().map(|r| r.0.clone());
    if let Err(e) = store::record(
        &state.pool,
        user,
        key,
        claimed_at,
        head.status().as_u16(),
        text(header::CONTENT_TYPE),
        text(header::LOCATION),
        replay.as_ref().unwrap_or(&body),
    )
    .await
    {
        // The request did what it was asked; a retry is told it is in flight until the lease
        // lapses, then runs again.
        tracing::warn!(error = %e, "an idempotent response could not be recorded");
    }
    Ok(ServiceResponse::new(req, head.set_body(BoxBody::new(body))))
}

/// Documents the `Idempotency-Key` header on [`OPERATIONS`]: the request parameter, the
/// `Idempotent-Replayed` header of a replayed success, and the `400`, `409` and `422` the key
/// can answer.
pub struct Documented;

impl utoipa::Modify for Documented {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::header::HeaderBuilder;
        use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        use utoipa::openapi::{RefOr, Required};

        let key_schema = ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(MAX_KEY_LEN))
            .pattern(Some("^[\\x21-\\x7E]+$"));
        let parameter = ParameterBuilder::new()
            .name("Idempotency-Key")
            .parameter_in(ParameterIn::Header)
            .required(Required::False)
            .description(Some(
                "Makes a retry safe (draft-ietf-httpapi-idempotency-key-header): a key of 1 to \
                 255 visible ASCII characters, new for each request (e.g. a UUID). The same \
                 key with the same request (method, path, body) by the same person within 24 \
                 hours answers the first successful response again (its status, body, \
                 `Content-Type` and `Location`, with `Idempotent-Replayed: true`) instead of \
                 running again; with another request it is `422 idempotency_key_reused`; while \
                 the first is still running, `409 idempotency_key_in_flight`. A request that \
                 did not succeed keeps nothing (a retry runs again), nor does one whose \
                 response is larger than 64 KiB. Keys are scoped to the signed-in person.",
            ))
            .schema(Some(key_schema))
            .build();
        let replayed = HeaderBuilder::new()
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(["true"])),
            ))
            .description(Some(
                "`true` when this is the replayed response to an earlier request with the same \
                 Idempotency-Key",
            ))
            .build();
        let retry_after = HeaderBuilder::new()
            .schema(Some(ObjectBuilder::new().schema_type(Type::Integer)))
            .description(Some("Seconds to wait (`idempotency_key_in_flight`)"))
            .build();
        let problems = [
            (
                "400",
                "The Idempotency-Key is empty, longer than 255 characters, not visible ASCII, or sent twice (`invalid_idempotency_key`)",
            ),
            (
                "409",
                "A request with this Idempotency-Key is still running (`idempotency_key_in_flight`; retry after `Retry-After` seconds)",
            ),
            (
                "422",
                "The Idempotency-Key was used with another request (`idempotency_key_reused`)",
            ),
        ];
        for path in OPERATIONS {
            let Some(operation) = openapi
                .paths
                .paths
                .get_mut(path)
                .and_then(|item| item.post.as_mut())
            else {
                continue;
            };
            operation
                .parameters
                .get_or_insert_with(Vec::new)
                .push(parameter.clone().into());
            for (status, response) in operation.responses.responses.iter_mut() {
                if let (true, RefOr::T(response)) = (status.starts_with('2'), response) {
                    response
                        .headers
                        .insert("Idempotent-Replayed".to_string(), replayed.clone().into());
                }
            }
            for (status, description) in problems {
                let response = operation
                    .responses
                    .responses
                    .entry(status.to_string())
                    .or_insert_with(|| crate::openapi::problem(description));
                if let RefOr::T(response) = response {
                    if !response.description.contains(description) {
                        response.description =
                            format!("{}; or {description}", response.description);
                    }
                    if status == "409" {
                        response
                            .headers
                            .insert("Retry-After".to_string(), retry_after.clone().into());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_one_to_255_visible_ascii_characters() {
        assert!(valid_key(b"a"));
        assert!(valid_key(b"8e0f2a4c-1b7d-4c1e-9f3a-2d6b5e7c9a10"));
        assert!(valid_key("~".repeat(255).as_bytes()));
        assert!(!valid_key(b""));
        assert!(!valid_key("k".repeat(256).as_bytes()));
        assert!(!valid_key(b"with space"));
        assert!(!valid_key(b"tab\there"));
        assert!(!valid_key("caf\u{e9}".as_bytes()));
    }

    #[test]
    fn the_fingerprint_covers_method_path_and_body() {
        let a = fingerprint(&Method::POST, "/v1/courses", b"{}");
        assert_eq!(a, fingerprint(&Method::POST, "/v1/courses", b"{}"));
        assert_ne!(a, fingerprint(&Method::PUT, "/v1/courses", b"{}"));
        assert_ne!(a, fingerprint(&Method::POST, "/v1/courses?x", b"{}"));
        assert_ne!(a, fingerprint(&Method::POST, "/v1/courses", b"{ }"));
        // The separators keep path and body apart.
        assert_ne!(
            fingerprint(&Method::POST, "/a", b"b"),
            fingerprint(&Method::POST, "/ab", b"")
        );
    }
}
