//! The launch: OIDC third-party login initiation, the redirect to the platform, the id_token
//! it posts back, and what a valid launch makes of it (the person, the course, the
//! enrollment, the assignment), handed to the browser as a one-time code.

use std::collections::HashMap;

use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, Utc};
use jsonwebtoken::{Algorithm, Validation};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::{Postgres, Transaction};
use utoipa::ToSchema;
use uuid::Uuid;

use super::claims::{self, Expected, Launch, MessageType};
use super::course_role;
use super::registrations::{self, KeyError, RegistrationRow};
use super::store::{self, AgsEndpoints, ContextKey, ResourceLinkKey};
use crate::auth::Role;
use crate::auth::tokens::{ACCESS_TTL_SECS, new_refresh_token};
use crate::courses::models::CourseRole;
use crate::error::{ApiError, Code, Problem};
use crate::policy::Policy;
use crate::state::AppState;

/// How long a login may take from initiation to launch.
pub const LOGIN_TTL_MINUTES: i64 = 10;
/// How long the one-time code of a launch can be traded for tokens.
pub const CODE_TTL_SECS: i64 = 60;
/// How long an instructor has to answer a Deep Linking request.
pub const DEEP_LINK_TTL_MINUTES: i64 = 60;
/// The cookie that binds a login to the browser that started it.
pub const BROWSER_COOKIE: &str = "quizd_lti_browser";
/// The start of the name of the cookie that binds a launch's code to the browser the launch
/// redirected; the rest of the name comes from the code (see [`exchange_cookie_name`]).
pub const EXCHANGE_COOKIE_PREFIX: &str = "quizd_lti_code_";
/// The path of the exchange cookie: it goes with the exchange and nowhere else.
pub const EXCHANGE_COOKIE_PATH: &str = "/v1/lti/exchange";

/// 32 random bytes, hex.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

pub fn hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// The parameters quizd reads from logins and launches. Others are ignored, as OIDC asks.
const KNOWN_PARAMETERS: [&str; 10] = [
    "iss",
    "login_hint",
    "target_link_uri",
    "lti_message_hint",
    "client_id",
    "lti_deployment_id",
    "id_token",
    "state",
    "error",
    "error_description",
];

/// The known parameters of a form or query string; one of them given twice is refused.
fn parameters(raw: &[u8]) -> Result<HashMap<String, String>, ApiError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(raw).map_err(|e| {
        ApiError::new(
            Code::LtiInvalidRequest,
            format!("The parameters cannot be read: {e}."),
        )
    })?;
    let mut map = HashMap::new();
    for (k, v) in pairs {
        if !KNOWN_PARAMETERS.contains(&k.as_str()) {
            continue;
        }
        if v.contains('\0') {
            return Err(ApiError::new(
                Code::LtiInvalidRequest,
                format!("The parameter `{k}` contains a NUL character."),
            ));
        }
        if map.insert(k.clone(), v).is_some() {
            return Err(ApiError::new(
                Code::LtiInvalidRequest,
                format!("The parameter `{k}` is given more than once."),
            ));
        }
    }
    Ok(map)
}

fn required<'a>(
    p: &'a HashMap<String, String>,
    name: &str,
    max: usize,
    code: Code,
) -> Result<&'a str, ApiError> {
    match p.get(name).map(String::as_str) {
        Some(v) if !v.is_empty() && v.len() <= max => Ok(v),
        Some(v) if v.len() > max => Err(ApiError::new(
            code,
            format!("The parameter `{name}` is longer than {max} bytes."),
        )),
        _ => Err(ApiError::new(
            code,
            format!("The required parameter `{name}` is missing."),
        )),
    }
}

/// The parameters of LTI 1.3 Core §5.1.1 (OIDC third-party initiated login).
#[derive(Debug, Deserialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LoginParameters {
    /// The platform's issuer identifier.
    #[param(min_length = 1, max_length = 2048)]
    #[schema(min_length = 1, max_length = 2048)]
    pub iss: String,
    /// Opaque to quizd; the platform's hint about who is logging in.
    #[param(min_length = 1, max_length = 4096)]
    #[schema(min_length = 1, max_length = 4096)]
    pub login_hint: String,
    /// The URL the launch will be for.
    #[param(min_length = 1, max_length = 2048)]
    #[schema(min_length = 1, max_length = 2048)]
    pub target_link_uri: String,
    /// Opaque to quizd; returned to the platform with the authentication request.
    #[param(max_length = 8192)]
    #[schema(max_length = 8192)]
    pub lti_message_hint: Option<String>,
    /// Which registration of the issuer, when it has several.
    pub client_id: Option<String>,
    /// The deployment the launch will be for.
    pub lti_deployment_id: Option<String>,
}

/// OIDC login initiation (GET): redirects the browser to the platform's authorization
/// endpoint with a fresh state and nonce.
#[utoipa::path(get, path = "/v1/lti/login", tag = "lti", params(LoginParameters),
    responses(
        (status = 302, description = "To the platform's authorization endpoint; sets the state cookie"),
        (status = 400, description = "A missing or repeated parameter", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An unknown platform or deployment, or a target link that is not an http(s) URL", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn login_get(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let params = parameters(req.query_string().as_bytes())?;
    login(&req, &state, params).await
}

/// OIDC login initiation (POST, form-encoded): as the GET.
#[utoipa::path(post, path = "/v1/lti/login", tag = "lti",
    request_body(content = LoginParameters, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 302, description = "To the platform's authorization endpoint; sets the state cookie"),
        (status = 400, description = "A missing or repeated parameter", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An unknown platform or deployment, or a target link that is not an http(s) URL", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn login_post(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    // Some platforms put part of the parameters in the query string of the POST.
    let mut params = parameters(req.query_string().as_bytes())?;
    for (k, v) in parameters(&body)? {
        if params.insert(k.clone(), v).is_some() {
            return Err(ApiError::new(
                Code::LtiInvalidRequest,
                format!("The parameter `{k}` is given more than once."),
            ));
        }
    }
    login(&req, &state, params).await
}

fn is_https(state: &AppState, req: &HttpRequest) -> bool {
    super::public_base(state, req).starts_with("https://")
}

/// A cookie of the LTI flow (a `Set-Cookie` value), HttpOnly. Over HTTPS it is
/// `SameSite=None; Secure; Partitioned`: the platform's cross-site form post carries it, and a
/// launch inside the platform's iframe keeps it where third-party cookies are blocked (CHIPS).
/// Over plain HTTP (development on loopback, where the platform and quizd are the same site),
/// `SameSite=Lax`.
fn lti_cookie(
    https: bool,
    name: String,
    value: String,
    path: &'static str,
    max_age: actix_web::cookie::time::Duration,
) -> String {
    let cookie = Cookie::build(name, value)
        .path(path)
        .http_only(true)
        .secure(https)
        .same_site(if https { SameSite::None } else { SameSite::Lax })
        .max_age(max_age)
        .finish()
        .to_string();
    if https {
        format!("{cookie}; Partitioned")
    } else {
        cookie
    }
}

/// The browser cookie of a login.
fn browser_cookie(https: bool, value: String) -> String {
    lti_cookie(
        https,
        BROWSER_COOKIE.to_string(),
        value,
        "/v1/lti",
        actix_web::cookie::time::Duration::days(1),
    )
}

/// The name of the cookie that goes with a launch's code: one per code, so that two
/// launches at once in one browser (two tools on one LMS page, a double click) do not
/// overwrite each other's secret before each page has exchanged its code.
pub fn exchange_cookie_name(code: &str) -> String {
    format!("{EXCHANGE_COOKIE_PREFIX}{}", hex::encode(&hash(code)[..8]))
}

/// The cookie that binds a launch's code to this browser; it lasts as long as the code.
fn exchange_cookie(https: bool, code: &str, secret: String) -> String {
    lti_cookie(
        https,
        exchange_cookie_name(code),
        secret,
        EXCHANGE_COOKIE_PATH,
        actix_web::cookie::time::Duration::seconds(CODE_TTL_SECS),
    )
}

/// The exchange cookie of a code, expired (it has served).
fn spent_exchange_cookie(https: bool, code: &str) -> String {
    lti_cookie(
        https,
        exchange_cookie_name(code),
        String::new(),
        EXCHANGE_COOKIE_PATH,
        actix_web::cookie::time::Duration::ZERO,
    )
}

/// Whether two hashes are equal, in time that does not depend on where they differ.
fn same_hash(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.ct_eq(b).into()
}

fn valid_browser_id(v: &str) -> bool {
    v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit())
}

async fn login(
    req: &HttpRequest,
    state: &AppState,
    p: HashMap<String, String>,
) -> Result<HttpResponse, ApiError> {
    let code = Code::LtiInvalidLogin;
    let iss = required(&p, "iss", 2048, code)?;
    let login_hint = required(&p, "login_hint", 4096, code)?;
    let target_link_uri = required(&p, "target_link_uri", 2048, code)?;
    let message_hint = p.get("lti_message_hint").filter(|h| !h.is_empty());
    if message_hint.is_some_and(|h| h.len() > 8192) {
        return Err(ApiError::new(code, "`lti_message_hint` is too long."));
    }
    let client_id = p
        .get("client_id")
        .map(String::as_str)
        .filter(|c| !c.is_empty());
    let deployment_id = p
        .get("lti_deployment_id")
        .map(String::as_str)
        .filter(|d| !d.is_empty());
    // Well-formed logins that quizd cannot take are 422; malformed ones, 400.
    match reqwest::Url::parse(target_link_uri) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {}
        _ => {
            return Err(
                ApiError::new(code, "`target_link_uri` must be an absolute http(s) URL.")
                    .with_status(StatusCode::UNPROCESSABLE_ENTITY),
            );
        }
    }
    let regs = store::registrations_for_issuer(&state.pool, iss, client_id).await?;
    let reg = match regs.as_slice() {
        [] => {
            return Err(ApiError::new(
                Code::LtiUnknownRegistration,
                match client_id {
                    Some(c) => format!(
                        "No platform with issuer `{iss}` and client id `{c}` is registered with quizd."
                    ),
                    None => format!("No platform with issuer `{iss}` is registered with quizd."),
                },
            ));
        }
        [one] => one,
        _ => {
            return Err(ApiError::new(
                Code::LtiAmbiguousRegistration,
                "This issuer has several registrations: the login must name its `client_id`.",
            ));
        }
    };
    if let Some(d) = deployment_id
        && !reg.deployment_ids.iter().any(|r| r == d)
    {
        return Err(ApiError::new(
            Code::LtiUnknownDeployment,
            format!("The deployment `{d}` is not registered with quizd for this platform."),
        )
        .with_status(StatusCode::UNPROCESSABLE_ENTITY));
    }
    let browser = req
        .cookie(BROWSER_COOKIE)
        .map(|c| c.value().to_string())
        .filter(|v| valid_browser_id(v))
        .unwrap_or_else(random_token);
    let login_state = random_token();
    let nonce = random_token();
    let now = state.clock.now();
    store::insert_login_state(
        &state.pool,
        store::NewLoginState {
            state_hash: &hash(&login_state),
            registration_id: reg.id,
            nonce: &nonce,
            browser_hash: &hash(&browser),
            target_link_uri,
            deployment_id,
            created_at: now,
            expires_at: now + Duration::minutes(LOGIN_TTL_MINUTES),
        },
    )
    .await?;
    let mut auth = reqwest::Url::parse(&reg.auth_endpoint)
        .map_err(|_| ApiError::internal("a registration's auth endpoint does not parse"))?;
    {
        let mut q = auth.query_pairs_mut();
        q.append_pair("scope", "openid")
            .append_pair("response_type", "id_token")
            .append_pair("response_mode", "form_post")
            .append_pair("prompt", "none")
            .append_pair("client_id", &reg.client_id)
            .append_pair("redirect_uri", &super::launch_url(state, req))
            .append_pair("login_hint", login_hint)
            .append_pair("state", &login_state)
            .append_pair("nonce", &nonce);
        if let Some(h) = message_hint {
            q.append_pair("lti_message_hint", h);
        }
    }
    Ok(HttpResponse::Found()
        .insert_header((header::LOCATION, auth.to_string()))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((
            header::SET_COOKIE,
            browser_cookie(is_https(state, req), browser),
        ))
        .finish())
}

/// The form a platform posts to the launch URL.
#[derive(Debug, Deserialize, ToSchema)]
pub struct LaunchForm {
    /// The signed launch message (a JWT, RS256).
    #[schema(min_length = 1)]
    pub id_token: String,
    /// The state quizd sent with the login.
    #[schema(min_length = 1, max_length = 200)]
    pub state: String,
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
#[utoipa::path(post, path = "/v1/lti/launch", tag = "lti",
    request_body(content = LaunchForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "To the front-end with a one-time code: `Location: <front-end>#/lti/<code>`; sets the HttpOnly cookie that `POST /v1/lti/exchange` needs with that code"),
        (status = 400, description = "Not an acceptable LTI message: a required claim missing or invalid, wrong message type or version, no quiz named, or a service URL (AGS, NRPS) that is not https or not on the platform's hosts (`lti_service_url_refused`)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Not authentic: bad signature, algorithm or key; wrong issuer or audience; expired; nonce or state invalid or replayed; unknown deployment; the platform refused the login", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Deep Linking by someone who does not teach", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The LMS course is archived in quizd (`course_archived`): it takes no launches until made active again", body = Problem, content_type = "application/problem+json"),
        (status = 502, description = "The platform's keys could not be fetched", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn launch(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let p = parameters(&body)?;
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
    let now = state.clock.now();

    // The state is used up now, whatever follows: a launch cannot be posted twice.
    let stored = store::take_login_state(&state.pool, &hash(login_state)).await?;
    let stored = match stored {
        Some(s) if s.expires_at > now => s,
        _ => {
            return Err(ApiError::new(
                Code::LtiStateInvalid,
                "The login state is unknown, used or expired: start the launch again from the LMS.",
            ));
        }
    };
    let same_browser = req
        .cookie(BROWSER_COOKIE)
        .is_some_and(|c| same_hash(&hash(c.value()), &stored.browser_hash));
    if !same_browser {
        return Err(ApiError::new(
            Code::LtiStateMismatch,
            "This launch was not started in this browser (its state cookie is missing or different).",
        ));
    }
    let reg = store::registration(&state.pool, stored.registration_id)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                Code::LtiUnknownRegistration,
                "The platform's registration was removed during the login.",
            )
            .with_status(StatusCode::UNAUTHORIZED)
        })?;

    let kid = rs256_kid(id_token)?;
    let key = match registrations::platform_key(&state.pool, &reg, &kid, now).await {
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
    let claims = jsonwebtoken::decode::<Value>(id_token, &key, &validation)
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
        .claims;

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
    let secret = random_token();
    let mut tx = state.pool.begin().await?;
    let code = provision(&mut tx, &reg, &launch, now, &hash(&secret)).await?;
    tx.commit().await?;
    tracing::info!(registration = %reg.id, kind = ?launch.message_type, "LTI launch accepted");
    Ok(HttpResponse::SeeOther()
        .insert_header((
            header::LOCATION,
            format!("{}#/lti/{code}", super::frontend_url(&state)),
        ))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((
            header::SET_COOKIE,
            exchange_cookie(is_https(&state, &req), &code, secret),
        ))
        .finish())
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

fn nonce_replayed() -> ApiError {
    ApiError::new(
        Code::LtiNonceReplayed,
        "The id_token's nonce has been used already: a launch cannot be replayed.",
    )
}

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
    fn as_str(self) -> &'static str {
        match self {
            Self::Attempt => "attempt",
            Self::Analytics => "analytics",
            Self::DeepLink => "deep_link",
        }
    }
    fn parse(s: &str) -> Self {
        match s {
            "analytics" => Self::Analytics,
            "deep_link" => Self::DeepLink,
            _ => Self::Attempt,
        }
    }
}

/// Makes what a valid launch stands for exist, and returns the one-time code for the browser.
async fn provision(
    tx: &mut Transaction<'_, Postgres>,
    reg: &RegistrationRow,
    launch: &Launch,
    now: DateTime<Utc>,
    browser_hash: &[u8],
) -> Result<String, ApiError> {
    let expires_at = DateTime::from_timestamp(launch.expires_at, 0)
        .unwrap_or(now)
        .max(now + Duration::minutes(5));
    if !store::record_nonce(&mut **tx, reg.id, &launch.nonce, expires_at).await? {
        return Err(nonce_replayed());
    }

    let role = course_role(&launch.roles).unwrap_or(CourseRole::Learner);
    let locale = launch
        .locale
        .as_deref()
        .and_then(|l| crate::validate::locale(l).ok());
    let user_id = store::upsert_launch_user(
        &mut **tx,
        store::LaunchUser {
            display_name: launch.name.as_deref().unwrap_or("LMS user"),
            // Teaching is a role in the launch's course (the enrollment below), never a site
            // role: a TeachingAssistant in one course must not become staff of every other. A
            // person the launch creates is a site learner; an existing person's site role is
            // left as it is.
            role: Role::Learner.as_str(),
            locale: locale.as_deref(),
            issuer: &reg.issuer,
            subject: &launch.subject,
            named: launch.name.is_some(),
        },
    )
    .await?;

    let course_id = match &launch.context {
        Some(context) => {
            let course = context_course(tx, reg, launch, context).await?;
            store::enroll(&mut **tx, course, user_id, role.as_str()).await?;
            Some(course)
        }
        None => None,
    };

    let (destination, assignment_id, deep_link_id) = match launch.message_type {
        MessageType::ResourceLink => {
            let course = course_id.expect("validated: a resource link launch has a context");
            let assignment = link_assignment(tx, reg, launch, course, user_id, role).await?;
            let kind = match role {
                CourseRole::Instructor => DestinationKind::Analytics,
                CourseRole::Learner => DestinationKind::Attempt,
            };
            (kind, Some(assignment), None)
        }
        MessageType::DeepLinking => {
            if role != CourseRole::Instructor {
                return Err(ApiError::new(
                    Code::LtiForbiddenRole,
                    "Only the course's instructors can place quizzes (Deep Linking).",
                ));
            }
            let settings = launch
                .deep_linking
                .as_ref()
                .expect("validated: a deep linking request has its settings");
            let id = Uuid::now_v7();
            store::insert_deep_link(
                &mut **tx,
                store::NewDeepLink {
                    id,
                    registration_id: reg.id,
                    deployment_id: &launch.deployment_id,
                    user_id,
                    return_url: &settings.return_url,
                    data: settings.data.as_deref(),
                    accept_multiple: settings.accept_multiple,
                    accept_lineitem: settings.accept_lineitem,
                    created_at: now,
                    expires_at: now + Duration::minutes(DEEP_LINK_TTL_MINUTES),
                },
            )
            .await?;
            (DestinationKind::DeepLink, None, Some(id))
        }
    };

    let code = random_token();
    store::insert_launch_code(
        &mut **tx,
        store::NewLaunchCode {
            code_hash: &hash(&code),
            user_id,
            destination: destination.as_str(),
            course_id,
            assignment_id,
            deep_link_id,
            created_at: now,
            expires_at: now + Duration::seconds(CODE_TTL_SECS),
            browser_hash,
        },
    )
    .await?;
    Ok(code)
}

/// The course of the LMS context, made on its first launch.
async fn context_course(
    tx: &mut Transaction<'_, Postgres>,
    reg: &RegistrationRow,
    launch: &Launch,
    context: &claims::Context,
) -> Result<Uuid, ApiError> {
    let key = ContextKey {
        registration_id: reg.id,
        deployment_id: &launch.deployment_id,
        context_id: &context.id,
    };
    let memberships_url = launch.memberships_url.as_deref();
    if let Some(course) = store::touch_context(&mut **tx, key, memberships_url).await? {
        // An archived course is read-only: a launch would enroll people and place assignments.
        if store::course_archived(&mut **tx, course).await? {
            return Err(crate::courses::course_archived());
        }
        return Ok(course);
    }
    let title = context
        .title
        .clone()
        .or_else(|| context.label.clone())
        .unwrap_or_else(|| "LMS course".to_string());
    let course = Uuid::now_v7();
    store::insert_course(&mut **tx, course, &title, context.label.as_deref()).await?;
    // A simultaneous first launch of the same context waits here and then finds the other's.
    if let Some(course) = store::link_context(&mut **tx, key, course, memberships_url).await? {
        return Ok(course);
    }
    store::delete_course(&mut **tx, course).await?;
    Ok(store::context_course(&mut **tx, key).await?)
}

/// The assignment of the resource link, placed on its first launch from the quiz it names;
/// its grade service endpoints are kept as the latest launch gives them.
async fn link_assignment(
    tx: &mut Transaction<'_, Postgres>,
    reg: &RegistrationRow,
    launch: &Launch,
    course: Uuid,
    user: Uuid,
    role: CourseRole,
) -> Result<Uuid, ApiError> {
    let link = launch
        .resource_link
        .as_ref()
        .expect("validated: a resource link launch has its link");
    let ags = launch.ags.clone().unwrap_or_default();
    let key = ResourceLinkKey {
        registration_id: reg.id,
        deployment_id: &launch.deployment_id,
        resource_link_id: &link.id,
    };
    let endpoints = AgsEndpoints {
        lineitem: ags.lineitem.as_deref(),
        lineitems: ags.lineitems.as_deref(),
        scopes: &ags.scopes,
    };
    let offered = launch.ags.is_some();
    if let Some(assignment) = store::touch_resource_link(&mut **tx, key, offered, endpoints).await?
    {
        return Ok(assignment);
    }
    let slug = claims::quiz_slug(launch)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ApiError::new(
                Code::LtiQuizMissing,
                "The launch names no quiz: place it with Deep Linking, or set the custom parameter \
             `quiz=<slug>` (or `?quiz=<slug>` on the target link URI).",
            )
        })?;
    let unknown = || {
        ApiError::new(
            Code::LtiQuizUnknown,
            format!("The launch names the quiz `{slug}`, which quizd does not have."),
        )
    };
    // Placing a quiz makes the course's staff readers of its key: a private quiz is placed
    // only by a launch of one of its authors (the instructor who placed the link opens it
    // first); for anyone else it does not exist. Custom parameters are the LMS's to set, so a
    // slug in them proves nothing.
    let quiz = crate::quizzes::store::access(&mut **tx, &slug, user)
        .await?
        .ok_or_else(unknown)?;
    if quiz.visibility != crate::content::Visibility::Public && !quiz.is_author {
        return Err(unknown());
    }
    let (quiz_id, version_id) = crate::assignments::store::resolve_version(&mut **tx, &slug, None)
        .await?
        .ok_or_else(unknown)?;
    let quiz_title = store::quiz_source_title(&mut **tx, version_id).await?;
    let title = link
        .title
        .clone()
        .or(quiz_title)
        .unwrap_or_else(|| slug.clone());
    let title: String = title.chars().take(200).collect();
    let assignment = crate::assignments::store::insert(
        &mut **tx,
        crate::assignments::store::NewAssignment {
            course_id: Some(course),
            quiz_id,
            quiz_version_id: version_id,
            title: &title,
            policy: &Policy::default(),
            created_by: (role == CourseRole::Instructor).then_some(user),
        },
    )
    .await?;
    if store::link_resource(&mut **tx, key, assignment, endpoints).await? {
        return Ok(assignment);
    }
    // A simultaneous first launch placed it: use that one.
    store::delete_assignment(&mut **tx, assignment).await?;
    Ok(
        store::touch_resource_link(&mut **tx, key, offered, endpoints)
            .await?
            .ok_or(sqlx::Error::RowNotFound)?,
    )
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExchangeRequest {
    /// The one-time code from the launch's redirect.
    pub code: String,
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
        .filter(|v| !v.is_empty())
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

    #[test]
    fn a_parameter_given_twice_is_refused() {
        assert_eq!(
            parameters(b"iss=a&login_hint=b").unwrap()["login_hint"],
            "b"
        );
        assert_eq!(
            parameters(b"iss=a&iss=b").unwrap_err().code,
            "lti_invalid_request"
        );
        assert_eq!(
            parameters(b"iss=a%00b").unwrap_err().code,
            "lti_invalid_request"
        );
        // Unknown parameters are ignored, however they come.
        let p = parameters(b"x=1&x=2&lti_storage_target=_parent&iss=a").unwrap();
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn the_state_cookie_crosses_sites_only_over_https() {
        let c = browser_cookie(true, "ab".repeat(32));
        for part in [
            "HttpOnly",
            "SameSite=None",
            "Secure",
            "Path=/v1/lti",
            "Partitioned",
        ] {
            assert!(c.contains(part), "{c}");
        }
        let c = browser_cookie(false, "ab".repeat(32));
        assert!(c.contains("SameSite=Lax") && !c.contains("Secure"), "{c}");
    }

    #[test]
    fn the_exchange_cookie_follows_the_state_cookies_rule_and_goes_only_to_the_exchange() {
        let code = "c".repeat(64);
        let c = exchange_cookie(true, &code, "ab".repeat(32));
        for part in [
            "HttpOnly",
            "SameSite=None",
            "Secure",
            "Path=/v1/lti/exchange",
            "Partitioned",
            "Max-Age=60",
        ] {
            assert!(c.contains(part), "{c}");
        }
        assert!(
            c.starts_with(&format!("{}=", exchange_cookie_name(&code))),
            "{c}"
        );
        let c = exchange_cookie(false, &code, "ab".repeat(32));
        assert!(c.contains("SameSite=Lax") && !c.contains("Secure"), "{c}");
        assert!(spent_exchange_cookie(false, &code).contains("Max-Age=0"));
        // One name per code.
        assert_ne!(
            exchange_cookie_name(&code),
            exchange_cookie_name(&"d".repeat(64))
        );
    }
}
