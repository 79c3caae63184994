//! The launch (LTI 1.3 Core §5.1.1.3, the OIDC redirect URI): the platform posts the
//! id_token; quizd takes the login's state, checks the browser, verifies the signature with
//! the platform's key and the claims, has the launch provisioned, and redirects the browser to
//! the front-end with a one-time code.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::claims::{self, Expected, Launch};
use super::cookies::{BROWSER_COOKIE, exchange_cookie, hash, is_https, random_token, same_hash};
use super::params::{parameters, required};
use super::registrations::{self, KeyError, RegistrationRow};
use super::store::{self, LoginState};
use crate::error::{ApiError, Code, Problem};
use crate::state::AppState;

/// The form a platform posts to the launch URL.
#[derive(Debug, Deserialize, ToSchema)]
pub struct LaunchForm {
    /// The signed launch message (a JWT, RS256).
    #[schema(min_length = 1)]
    pub id_token: String,
    /// The state quizd sent with the login.
    #[schema(min_length = 1, max_length = 200)]
    pub state: String,
    /// For a login kept in the platform's storage, the second post: the secret quizd's launch
    /// page read back from the platform's storage frame.
    pub lti_storage_secret: Option<String>,
    /// Set when the platform refused the authentication request (`login_required`, …).
    pub error: Option<String>,
    pub error_description: Option<String>,
}

/// The header of a JWT, read before anything is trusted: only RS256 with a kid goes on.
fn rs256_kid(id_token: &str) -> Result<String, ApiError> {
    let malformed = || {
        ApiError::new(
            Code::LtiMalformedToken,
            "The id_token is not a well-formed JWT.",
        )
    };
    let mut parts = id_token.split('.');
    let (Some(head), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed());
    };
    let header: Value = URL_SAFE_NO_PAD
        .decode(head.trim_end_matches('='))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(malformed)?;
    match header.get("alg").and_then(Value::as_str) {
        Some("RS256") => {}
        other => {
            return Err(ApiError::new(
                Code::LtiBadAlgorithm,
                format!(
                    "The id_token is signed with {}; LTI 1.3 requires RS256.",
                    other.unwrap_or("no algorithm")
                ),
            ));
        }
    }
    header
        .get("kid")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| {
            ApiError::new(
                Code::LtiUnknownKey,
                "The id_token's header names no key (kid).",
            )
        })
}

/// The launch: the platform posts the id_token here (the OIDC redirect URI). A valid launch
/// redirects the browser to the front-end with a one-time code (`<front-end>#/lti/<code>`)
/// that `POST /v1/lti/exchange` trades for quizd tokens in this browser only (with the
/// cookie this answer sets).
///
/// A refused launch is a problem; for a browser's form post (`Accept` prefers `text/html`), a
/// page with the same status instead, in the learner's language, that the LMS may frame: what
/// happened and, where launching again can help (a state cookie the frame dropped, an expired
/// or used login, the platform's refusal, a failure), a link that opens the platform's login
/// initiation again (`/v1/lti/login`) in a new window.
#[utoipa::path(post, path = "/v1/lti/launch", tag = "lti",
    request_body(content = LaunchForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "To the front-end with a one-time code: `Location: <front-end>#/lti/<code>`; sets the HttpOnly cookie that `POST /v1/lti/exchange` needs with that code (for a login kept in the platform's storage: no cookie, and the fragment says where the front-end reads the exchange's secret back)"),
        (status = 200, description = "For a login kept in the platform's storage, the first post: a page that reads the state's secret back from the platform's storage (`lti.get_data`) and posts the launch again with it as `lti_storage_secret`", content_type = "text/html"),
        (status = 400, description = "Not an acceptable LTI message: a required claim missing or invalid, wrong message type or version, no quiz named, or a service URL (AGS, NRPS) that is not https or not on the platform's hosts (`lti_service_url_refused`)", content((Problem = "application/problem+json"), (String = "text/html"))),
        (status = 401, description = "Not authentic: bad signature, algorithm or key; wrong issuer or audience; expired; nonce or state invalid, expired (`lti_state_expired`) or replayed; the state cookie missing (`lti_state_mismatch`); unknown deployment; the platform refused the login", content((Problem = "application/problem+json"), (String = "text/html"))),
        (status = 403, description = "Deep Linking by someone who does not teach", content((Problem = "application/problem+json"), (String = "text/html"))),
        (status = 409, description = "The LMS course is archived in quizd (`course_archived`): it takes no launches until made active again", content((Problem = "application/problem+json"), (String = "text/html"))),
        (status = 502, description = "The platform's keys could not be fetched", content((Problem = "application/problem+json"), (String = "text/html"))),
    ))]
pub async fn launch(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    match accept(&req, &state, &body).await {
        Err(err) => super::error_page::respond(&state, &req, &body, err).await,
        accepted => accepted,
    }
}

async fn accept(
    req: &HttpRequest,
    state: &AppState,
    body: &[u8],
) -> Result<HttpResponse, ApiError> {
    let p = parameters(body)?;
    if let Some(error) = p.get("error") {
        return Err(ApiError::new(
            Code::LtiPlatformError,
            format!(
                "The platform refused the login ({}): {}",
                error.chars().take(100).collect::<String>(),
                p.get("error_description")
                    .map(|d| d.chars().take(500).collect::<String>())
                    .unwrap_or_default()
            ),
        ));
    }
    let id_token = required(&p, "id_token", 60_000, Code::LtiInvalidRequest)?;
    let login_state = required(&p, "state", 200, Code::LtiInvalidRequest)?;
    let storage_secret = p.get("lti_storage_secret").filter(|s| !s.is_empty());
    let now = state.clock.now();

    // A login kept in the platform's storage whose state cookie did not come back: the first
    // post gets the page that reads the secret back from there and posts the launch again with
    // it; nothing is used up yet.
    if storage_secret.is_none()
        && let Some(peeked) = store::peek_login_state(&state.pool, &hash(login_state)).await?
        && let Some(target) = &peeked.storage_target
        && peeked.expires_at > now
        && !same_browser_cookie(req, &peeked)
        && let Some(reg) = store::registration(&state.pool, peeked.registration_id).await?
        && let Some(origin) = super::storage::origin_of(&reg.auth_endpoint)
    {
        return Ok(super::storage::launch_page(
            state,
            target,
            &origin,
            login_state,
            id_token,
        ));
    }

    let (stored, via_storage) =
        take_login_state(state, req, login_state, storage_secret, now).await?;
    let reg = store::registration(&state.pool, stored.registration_id)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                Code::LtiUnknownRegistration,
                "The platform's registration was removed during the login.",
            )
            .with_status(StatusCode::UNAUTHORIZED)
        })?;

    let claims = verified_claims(state, &reg, id_token, now).await?;

    if let Some(nonce) = claims.get("nonce").and_then(Value::as_str)
        && store::nonce_used(&state.pool, reg.id, nonce).await?
    {
        return Err(nonce_replayed());
    }
    let launch = claims::validate(
        &claims,
        &Expected {
            issuer: &reg.issuer,
            client_id: &reg.client_id,
            deployment_ids: &reg.deployment_ids,
            nonce: &stored.nonce,
            login_deployment_id: stored.deployment_id.as_deref(),
            target_link_uri: &stored.target_link_uri,
            now: now.timestamp(),
        },
    )?;

    check_service_urls(&reg, &launch)?;

    // The code travels in the front-end's URL, where anyone can put one (their own, in a
    // link) for someone else's browser to exchange: signed in as the link's author (login
    // CSRF). The exchange also needs this browser's secret, which only this response sets.
    //
    // Through the platform's storage, the secret that proved this browser binds the code too:
    // the front-end reads it back from the platform's storage for the exchange (no cookie).
    let storage = stored
        .storage_target
        .as_deref()
        .zip(storage_secret)
        .filter(|_| via_storage);
    let secret = storage.map_or_else(random_token, |(_, s)| s.clone());
    let mut tx = state.pool.begin().await?;
    let code = super::provision::provision(&mut tx, &reg, &launch, now, &hash(&secret)).await?;
    tx.commit().await?;
    tracing::info!(registration = %reg.id, kind = ?launch.message.kind(), storage = storage.is_some(), "LTI launch accepted");
    if let Some((target, _)) = storage {
        let origin = super::storage::origin_of(&reg.auth_endpoint).unwrap_or_default();
        return Ok(HttpResponse::SeeOther()
            .insert_header((
                header::LOCATION,
                format!(
                    "{}{}",
                    super::frontend_url(state),
                    super::storage::frontend_fragment(&code, target, &origin, login_state)
                ),
            ))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish());
    }
    Ok(HttpResponse::SeeOther()
        .insert_header((
            header::LOCATION,
            format!("{}#/lti/{code}", super::frontend_url(state)),
        ))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((
            header::SET_COOKIE,
            exchange_cookie(is_https(state, req), &code, secret),
        ))
        .finish())
}

/// The login this launch answers, used up now (whatever follows: a launch cannot be posted
/// twice), if it is unexpired and was started in this browser.
async fn take_login_state(
    state: &AppState,
    req: &HttpRequest,
    login_state: &str,
    storage_secret: Option<&String>,
    now: DateTime<Utc>,
) -> Result<(LoginState, bool), ApiError> {
    let stored = match store::take_login_state(&state.pool, &hash(login_state)).await? {
        Some(s) if s.expires_at > now => s,
        Some(_) => {
            return Err(ApiError::new(
                Code::LtiStateExpired,
                format!(
                    "The login was started more than {} minutes ago: start the launch again.",
                    super::login::LOGIN_TTL_MINUTES
                ),
            ));
        }
        None => {
            return Err(ApiError::new(
                Code::LtiStateInvalid,
                "The login state is unknown or used already (was the launch posted twice?): start the launch again.",
            ));
        }
    };
    // The browser proves itself by what the login left with it: the state cookie, or, for a
    // login kept in the platform's storage, the secret read back from there.
    let via_storage = !same_browser_cookie(req, &stored)
        && storage_secret
            .zip(stored.storage_hash.as_deref())
            .is_some_and(|(s, h)| same_hash(&hash(s), h));
    if !same_browser_cookie(req, &stored) && !via_storage {
        return Err(ApiError::new(
            Code::LtiStateMismatch,
            "This launch was not started in this browser (its state cookie, or the secret kept in the platform's storage, is missing or different).",
        ));
    }
    Ok((stored, via_storage))
}

/// Whether the request carries the state cookie of this login.
fn same_browser_cookie(req: &HttpRequest, login: &LoginState) -> bool {
    req.cookie(BROWSER_COOKIE)
        .is_some_and(|c| same_hash(&hash(c.value()), &login.browser_hash))
}

/// The id_token's claims, once its signature verifies with the platform's key (the one its
/// header names). Only the signature: the claims are checked by [`claims::validate`].
async fn verified_claims(
    state: &AppState,
    reg: &RegistrationRow,
    id_token: &str,
    now: DateTime<Utc>,
) -> Result<Value, ApiError> {
    let kid = rs256_kid(id_token)?;
    let key = match registrations::platform_key(&state.pool, state.platforms.http(), reg, &kid, now)
        .await
    {
        Ok(key) => key,
        Err(KeyError::Unknown) => {
            return Err(ApiError::new(
                Code::LtiUnknownKey,
                "The id_token is signed with a key (kid) the platform does not publish.",
            ));
        }
        Err(KeyError::Unreachable(cause)) => {
            tracing::warn!(registration = %reg.id, error = %cause, "platform JWKS fetch failed");
            return Err(ApiError::new(
                Code::LtiPlatformUnreachable,
                "The platform's public keys could not be fetched; try again later.",
            ));
        }
    };
    let mut validation = Validation::new(Algorithm::RS256);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    Ok(jsonwebtoken::decode::<Value>(id_token, &key, &validation)
        .map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::InvalidSignature => ApiError::new(
                Code::LtiBadSignature,
                "The id_token's signature does not verify with the platform's key.",
            ),
            _ => ApiError::new(
                Code::LtiMalformedToken,
                "The id_token is not a well-formed JWT.",
            ),
        })?
        .claims)
}

/// The service URLs of a launch (AGS line items and line item, NRPS memberships) are where
/// quizd will later send the platform's access tokens and learners' grades, so they must be
/// the platform's ([`RegistrationRow::check_service_url`]). A launch naming another is
/// refused whole rather than taken without the service: the platform signed these claims, so
/// a foreign URL is a misconfigured registration (a `service_hosts` entry missing) or a
/// forged claim, and either should be seen now, by the person launching and in the log,
/// not found weeks later as grades that silently never reached the LMS.
fn check_service_urls(reg: &RegistrationRow, launch: &Launch) -> Result<(), ApiError> {
    let ags = launch.ags.as_ref();
    let urls = [
        (
            super::claim::AGS_ENDPOINT,
            "lineitems",
            ags.and_then(|a| a.lineitems.as_deref()),
        ),
        (
            super::claim::AGS_ENDPOINT,
            "lineitem",
            ags.and_then(|a| a.lineitem.as_deref()),
        ),
        (
            super::claim::NRPS,
            "context_memberships_url",
            launch.memberships_url.as_deref(),
        ),
    ];
    for (claim, field, url) in urls {
        let Some(url) = url else { continue };
        if let Err(why) = reg.check_service_url(url) {
            tracing::warn!(registration = %reg.id, claim, field, url, "LTI launch names a service URL quizd will not call");
            return Err(ApiError::new(
                Code::LtiServiceUrlRefused,
                format!(
                    "The claim `{claim}` names `{field}` {}, which {why}: quizd calls a \
                     platform's services only there.",
                    crate::lti::services::excerpt(url)
                ),
            ));
        }
    }
    Ok(())
}

pub(super) fn nonce_replayed() -> ApiError {
    ApiError::new(
        Code::LtiNonceReplayed,
        "The id_token's nonce has been used already: a launch cannot be replayed.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt_with_header(header: &str) -> String {
        format!("{}.e30.c2ln", URL_SAFE_NO_PAD.encode(header))
    }

    #[test]
    fn only_rs256_with_a_kid_goes_on() {
        assert_eq!(
            rs256_kid(&jwt_with_header(r#"{"alg":"RS256","kid":"k1"}"#)).unwrap(),
            "k1"
        );
        for (header, code) in [
            (r#"{"alg":"HS256","kid":"k1"}"#, "lti_bad_algorithm"),
            (r#"{"alg":"none","kid":"k1"}"#, "lti_bad_algorithm"),
            (r#"{"alg":"RS512","kid":"k1"}"#, "lti_bad_algorithm"),
            (r#"{"kid":"k1"}"#, "lti_bad_algorithm"),
            (r#"{"alg":"RS256"}"#, "lti_unknown_key"),
            ("not json", "lti_malformed_token"),
        ] {
            assert_eq!(
                rs256_kid(&jwt_with_header(header)).unwrap_err().code,
                code,
                "{header}"
            );
        }
        assert_eq!(rs256_kid("a.b").unwrap_err().code, "lti_malformed_token");
        assert_eq!(
            rs256_kid("a.b.c.d").unwrap_err().code,
            "lti_malformed_token"
        );
    }
}
