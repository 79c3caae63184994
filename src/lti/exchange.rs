//! The exchange: the front-end trades a launch's one-time code, in the browser the launch
//! redirected, for quizd tokens and where to go.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::cookies::{exchange_cookie_name, hash, is_https, same_hash, spent_exchange_cookie};
use super::store;
use crate::auth::tokens::{ACCESS_TTL_SECS, new_refresh_token};
use crate::error::{ApiError, Code, Problem};
use crate::state::AppState;

/// How long the one-time code of a launch can be traded for tokens.
pub const CODE_TTL_SECS: i64 = 60;

/// Where a launch leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DestinationKind {
    /// A learner: take the assignment (`POST /v1/assignments/{id}/attempts`).
    Attempt,
    /// An instructor: the assignment's analytics.
    Analytics,
    /// An instructor choosing a quiz for the platform (Deep Linking).
    DeepLink,
}

impl DestinationKind {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Attempt => "attempt",
            Self::Analytics => "analytics",
            Self::DeepLink => "deep_link",
        }
    }
    pub(super) fn parse(s: &str) -> Self {
        match s {
            "analytics" => Self::Analytics,
            "deep_link" => Self::DeepLink,
            _ => Self::Attempt,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExchangeRequest {
    /// The one-time code from the launch's redirect.
    pub code: String,
    /// For a launch proved through the platform's storage (no cookie): the secret the
    /// front-end read back from there (`lti.get_data` of `state_<state>`).
    #[serde(default)]
    pub storage_secret: Option<String>,
}

/// Where the front-end takes the person.
#[derive(Debug, Serialize, ToSchema)]
pub struct Destination {
    pub kind: DestinationKind,
    pub course_id: Option<Uuid>,
    pub assignment_id: Option<Uuid>,
    /// For `deep_link`: answer with `POST /v1/lti/deep-link`.
    pub deep_link_id: Option<Uuid>,
    /// The API path to go on with: the assignment's attempts or analytics, or the catalogue.
    pub path: String,
}

/// A signed-in person from an LMS launch, and where to take them.
#[derive(Debug, Serialize, ToSchema)]
pub struct LtiSession {
    /// A JWT (HS256) to send as `Authorization: Bearer …`.
    pub access_token: String,
    /// Single use: exchange it at `/v1/auth/refresh` for a new pair.
    pub refresh_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// Seconds until the access token expires.
    pub expires_in: u64,
    pub user_id: Uuid,
    pub destination: Destination,
}

/// Trades a launch's one-time code (single use, valid for a minute) for quizd tokens, in the
/// browser the launch redirected: the request must carry the HttpOnly cookie the launch set
/// with the code (`quizd_lti_code_…`, path `/v1/lti/exchange`; a same-origin `fetch` sends
/// it), which the answer clears.
#[utoipa::path(post, path = "/v1/lti/exchange", tag = "lti", request_body = ExchangeRequest,
    responses(
        (status = 200, description = "Signed in; the code's cookie is cleared", body = LtiSession),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "The code is unknown, used or expired (`lti_code_invalid`), or this browser is not the one the launch redirected: its cookie is missing or different (`launch_browser_mismatch`; the code is then used up if it was presented with a cookie)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn exchange(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: crate::extract::JsonObject<ExchangeRequest>,
) -> Result<HttpResponse, ApiError> {
    let invalid = || {
        ApiError::new(
            Code::LtiCodeInvalid,
            "The launch code is unknown, used or expired: launch again from the LMS.",
        )
    };
    let other_browser = || {
        ApiError::new(
            Code::LaunchBrowserMismatch,
            "This launch code was issued to another browser (the launch's cookie is missing or \
             different): launch again from the LMS in this browser.",
        )
    };
    if body.code.len() > 200 {
        return Err(invalid());
    }
    // Without the cookie nothing is looked up or used up: a link with a code that reaches
    // the wrong browser costs the right one nothing.
    let secret = req
        .cookie(&exchange_cookie_name(&body.code))
        .map(|c| c.value().to_string())
        .or_else(|| body.storage_secret.clone())
        .filter(|v| !v.is_empty() && v.len() <= 200)
        .ok_or_else(other_browser)?;
    let mut tx = state.pool.begin().await?;
    // Used up by this one try, whatever follows.
    let row = store::take_launch_code(&mut *tx, &hash(&body.code)).await?;
    let row = match row {
        Some(r) if r.expires_at > state.clock.now() => r,
        _ => {
            tx.commit().await?;
            return Err(invalid());
        }
    };
    if !same_hash(&hash(&secret), &row.browser_hash) {
        tx.commit().await?;
        return Err(other_browser());
    }
    let user = crate::auth::store::user_by_id(&mut *tx, row.user_id)
        .await?
        .ok_or_else(invalid)?;
    let (refresh_token, refresh_hash) = new_refresh_token();
    crate::auth::store::insert_refresh_token(&mut *tx, Uuid::now_v7(), user.id, &refresh_hash)
        .await?;
    tx.commit().await?;
    let kind = DestinationKind::parse(&row.destination);
    let path = match (kind, row.assignment_id) {
        (DestinationKind::Attempt, Some(a)) => format!("/v1/assignments/{a}/attempts"),
        (DestinationKind::Analytics, Some(a)) => format!("/v1/assignments/{a}/analytics"),
        _ => "/v1/quizzes".to_string(),
    };
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((
            header::SET_COOKIE,
            spent_exchange_cookie(is_https(&state, &req), &body.code),
        ))
        .json(LtiSession {
            access_token: state.tokens.issue(user.id, user.role()),
            refresh_token,
            token_type: "Bearer",
            expires_in: ACCESS_TTL_SECS,
            user_id: user.id,
            destination: Destination {
                kind,
                course_id: row.course_id,
                assignment_id: row.assignment_id,
                deep_link_id: row.deep_link_id,
                path,
            },
        }))
}
