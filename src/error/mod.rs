//! Every 4xx and 5xx leaves quizd as RFC 9457 `application/problem+json` with a stable `code`.
//! Internal causes are logged, never sent.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::ServiceResponse;
use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::middleware::ErrorHandlerResponse;
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use serde::Serialize;
use utoipa::ToSchema;

mod codes;
pub use codes::Code;

pub const PROBLEM_JSON: &str = "application/problem+json";

/// The body of every error response (RFC 9457).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Problem {
    /// A URI naming the kind of problem: `urn:quizd:problem:<code>`.
    #[serde(rename = "type")]
    pub kind: String,
    /// A short summary of the kind of problem.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What went wrong in this occurrence, for a person to read.
    pub detail: String,
    /// A stable machine-readable code, e.g. `quiz_not_found`: one of the table below.
    pub code: Code,
    /// For `answer_final`: the answer on record and its result.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub recorded: Option<serde_json::Value>,
}

/// An error an endpoint answers with: a [`Code`] from the table, and what went wrong this time.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: Code,
    pub detail: String,
    pub retry_after: Option<u32>,
    pub recorded: Option<serde_json::Value>,
}

impl ApiError {
    /// The problem `code` with the status the table gives it.
    pub fn new(code: Code, detail: impl Into<String>) -> Self {
        Self {
            status: code.status(),
            code,
            detail: detail.into(),
            retry_after: None,
            recorded: None,
        }
    }

    /// The same problem answered with another status, where one code covers two situations
    /// (e.g. `invalid_field`: `400` for a NUL character, `422` for a wrong length).
    pub fn with_status(self, status: StatusCode) -> Self {
        Self { status, ..self }
    }

    pub fn unavailable(detail: impl Into<String>) -> Self {
        Self {
            retry_after: Some(1),
            ..Self::new(Code::ServiceUnavailable, detail)
        }
    }

    /// An unexpected failure: the cause is logged here and the client sees nothing of it.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(
            Code::InternalError,
            "The server failed to handle this request; it has been logged.",
        )
    }

    /// The problem for a status produced outside our handlers (routing, actix internals).
    pub fn from_status(status: StatusCode) -> Self {
        let code = match status {
            StatusCode::NOT_FOUND => Code::NotFound,
            StatusCode::METHOD_NOT_ALLOWED => Code::MethodNotAllowed,
            StatusCode::PAYLOAD_TOO_LARGE => Code::PayloadTooLarge,
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Code::UnsupportedMediaType,
            s if s.is_server_error() => Code::InternalError,
            _ => Code::BadRequest,
        };
        let detail = match code {
            Code::UnsupportedMediaType => "Send the body as application/json.",
            Code::InternalError => "The server failed to handle this request; it has been logged.",
            Code::BadRequest => status
                .canonical_reason()
                .unwrap_or("The request was refused."),
            other => other.meaning(),
        };
        Self::new(code, detail).with_status(status)
    }

    pub fn problem(&self) -> Problem {
        Problem {
            kind: format!("urn:quizd:problem:{}", self.code),
            title: self
                .status
                .canonical_reason()
                .unwrap_or("Error")
                .to_string(),
            status: self.status.as_u16(),
            detail: self.detail.clone(),
            code: self.code,
            recorded: self.recorded.clone(),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status.as_u16(), self.code, self.detail)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }
    fn error_response(&self) -> HttpResponse {
        let mut res = HttpResponse::build(self.status);
        res.insert_header((header::CONTENT_TYPE, PROBLEM_JSON));
        if self.status == StatusCode::UNAUTHORIZED {
            res.insert_header((header::WWW_AUTHENTICATE, "Bearer realm=\"quizd\""));
        }
        if let Some(secs) = self.retry_after {
            res.insert_header((header::RETRY_AFTER, secs.to_string()));
        }
        res.body(serde_json::to_string(&self.problem()).unwrap_or_default())
    }
}

/// Whether a database error means "not now": the server is down, restarting, out of
/// connections, or chose this transaction as a deadlock victim. Retrying later works.
fn transient(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|c| {
            // 08: connection exception; 53: insufficient resources; 57: operator intervention
            // (admin or crash shutdown, cannot connect now, statement timeout); 40001/40P01:
            // serialization failure and deadlock.
            c.starts_with("08")
                || c.starts_with("53")
                || c.starts_with("57")
                || c == "40001"
                || c == "40P01"
        }),
        _ => false,
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        if transient(&err) {
            tracing::warn!(error = %err, "database unavailable");
            return Self::unavailable("The database is unavailable; retry shortly.");
        }
        match &err {
            sqlx::Error::Database(db) if db.is_unique_violation() => {
                Self::new(Code::Conflict, "This conflicts with an existing record.")
            }
            sqlx::Error::Database(db) if db.is_check_violation() => {
                tracing::warn!(error = %err, "a write broke a CHECK constraint");
                check_violated(db.constraint())
            }
            _ => Self::internal(err),
        }
    }
}

/// The problem of a write that broke the CHECK constraint `constraint`, by its name: a value
/// a handler did not refuse first is still a refused value (`400`), never a `500`.
fn check_violated(constraint: Option<&str>) -> ApiError {
    match constraint {
        Some("users_erased_anonymous") => ApiError::new(
            Code::AccountErased,
            "This account was erased; nothing can be set on it.",
        ),
        _ => ApiError::new(
            Code::ValueRefused,
            "A value is outside what quizd keeps; nothing changed.",
        ),
    }
}

/// Maps actix's JSON extractor errors to problems (malformed JSON, wrong type, too large).
pub fn json_error(err: actix_web::error::JsonPayloadError, _req: &HttpRequest) -> actix_web::Error {
    use actix_web::error::JsonPayloadError as E;
    let api = match &err {
        E::OverflowKnownLength { .. } | E::Overflow { .. } => {
            ApiError::from_status(StatusCode::PAYLOAD_TOO_LARGE)
        }
        E::ContentType => ApiError::from_status(StatusCode::UNSUPPORTED_MEDIA_TYPE),
        E::Deserialize(e) => ApiError::new(Code::InvalidBody, format!("Invalid JSON body: {e}")),
        other => ApiError::new(
            Code::InvalidBody,
            format!("Could not read the body: {other}"),
        ),
    };
    api.into()
}

pub fn path_error(err: actix_web::error::PathError, _req: &HttpRequest) -> actix_web::Error {
    ApiError::new(Code::InvalidPath, format!("Invalid path parameter: {err}")).into()
}

pub fn query_error(
    err: actix_web::error::QueryPayloadError,
    _req: &HttpRequest,
) -> actix_web::Error {
    ApiError::new(Code::InvalidQuery, format!("Invalid query string: {err}")).into()
}

/// Marks an error response that a handler made as a page for a person on purpose, in
/// answer to a browser that asked for HTML (an LTI launch refused inside the LMS's frame):
/// [`problem_fallback`] leaves it as it is.
#[derive(Debug, Clone, Copy)]
pub struct ErrorPage;

/// Turns any error response that is not already a problem (a 404 from routing, a 405, a
/// payload error raised inside actix) into one, so clients can rely on a single error shape.
/// An [`ErrorPage`] stays a page.
pub fn problem_fallback<B: MessageBody + 'static>(
    res: ServiceResponse<B>,
) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let is_problem = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(PROBLEM_JSON.as_bytes()));
    if is_problem || res.response().extensions().contains::<ErrorPage>() {
        return Ok(ErrorHandlerResponse::Response(res.map_into_left_body()));
    }
    let status = res.status();
    let allow = res.headers().get(header::ALLOW).cloned();
    let (req, _) = res.into_parts();
    let mut replacement = ApiError::from_status(status).error_response();
    if let Some(allow) = allow {
        replacement.headers_mut().insert(header::ALLOW, allow);
    }
    let res = ServiceResponse::new(req, replacement).map_into_right_body::<B>();
    let res: ServiceResponse<EitherBody<B>> = res;
    Ok(ErrorHandlerResponse::Response(res))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_check_constraint_is_a_400_named_by_the_constraint() {
        let erased = check_violated(Some("users_erased_anonymous"));
        assert_eq!(
            (erased.status, erased.code),
            (StatusCode::BAD_REQUEST, Code::AccountErased)
        );
        let other = check_violated(Some("courses_title_check"));
        assert_eq!(
            (other.status, other.code),
            (StatusCode::BAD_REQUEST, Code::ValueRefused)
        );
        assert_eq!(check_violated(None).code, Code::ValueRefused);
    }
}
