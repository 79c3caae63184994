//! OIDC third-party initiated login (LTI 1.3 Core §5.1.1): the platform names itself and the
//! link; quizd finds the registration, remembers a fresh state and nonce bound to this
//! browser, and redirects to the platform's authorization endpoint.

use std::collections::HashMap;

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Duration;
use serde::Deserialize;
use utoipa::ToSchema;

use super::cookies::{
    BROWSER_COOKIE, browser_cookie, hash, is_https, random_token, valid_browser_id,
};
use super::params::{parameters, required};
use super::store::{self, RegistrationRow};
use crate::error::{ApiError, Code, Problem};
use crate::state::AppState;

/// How long a login may take from initiation to launch.
pub const LOGIN_TTL_MINUTES: i64 = 10;

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
    /// The platform's storage frame (LTI client-side postMessage storage): `_parent`, or the
    /// name of a frame in the parent window. With it, quizd keeps the login's secret there
    /// instead of relying on its state cookie.
    #[param(max_length = 200)]
    #[schema(max_length = 200)]
    pub lti_storage_target: Option<String>,
}

/// OIDC login initiation (GET): redirects the browser to the platform's authorization
/// endpoint with a fresh state and nonce.
#[utoipa::path(get, path = "/v1/lti/login", tag = "lti", params(LoginParameters),
    responses(
        (status = 302, description = "To the platform's authorization endpoint; sets the state cookie"),
        (status = 200, description = "With `lti_storage_target`: a page that puts the state's secret in the platform's storage frame (`lti.put_data`), then goes to the platform's authorization endpoint; sets the state cookie too", content_type = "text/html"),
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
        (status = 200, description = "With `lti_storage_target`: a page that puts the state's secret in the platform's storage frame (`lti.put_data`), then goes to the platform's authorization endpoint; sets the state cookie too", content_type = "text/html"),
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
    let storage_target = p
        .get("lti_storage_target")
        .map(String::as_str)
        .filter(|t| !t.is_empty());
    if storage_target.is_some_and(|t| !super::storage::valid_target(t)) {
        return Err(ApiError::new(
            code,
            "`lti_storage_target` must be a frame name of at most 200 characters.",
        ));
    }
    let reg = registration_for_login(state, iss, client_id, deployment_id).await?;
    // With the platform's storage, the browser is proved by the state cookie where it comes
    // back, else by a secret of this login alone, kept there (inside the platform's iframe the
    // browser may block the cookie).
    let storage = match storage_target {
        Some(target) => {
            let origin = super::storage::origin_of(&reg.auth_endpoint).ok_or_else(|| {
                ApiError::internal("a registration's auth endpoint has no origin")
            })?;
            Some((target, origin, random_token()))
        }
        None => None,
    };
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
            storage_target,
            storage_hash: storage
                .as_ref()
                .map(|(_, _, secret)| hash(secret))
                .as_deref(),
            login_hint,
            message_hint: message_hint.map(String::as_str),
        },
    )
    .await?;
    let auth = authentication_request(
        &reg,
        &super::launch_url(state, req),
        login_hint,
        &login_state,
        &nonce,
        message_hint.map(String::as_str),
    )?;
    let cookie = browser_cookie(is_https(state, req), browser);
    if let Some((target, origin, secret)) = &storage {
        let mut page = super::storage::login_page(
            state,
            target,
            origin,
            &login_state,
            &nonce,
            secret,
            auth.as_str(),
        );
        page.headers_mut().insert(
            header::SET_COOKIE,
            header::HeaderValue::from_str(&cookie)
                .map_err(|_| ApiError::internal("a cookie that is no header value"))?,
        );
        return Ok(page);
    }
    Ok(HttpResponse::Found()
        .insert_header((header::LOCATION, auth.to_string()))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::SET_COOKIE, cookie))
        .finish())
}

/// The registration a login is for: the issuer's, narrowed by the client id when the issuer
/// has several; the deployment, when the login names one, must be one of its.
async fn registration_for_login(
    state: &AppState,
    iss: &str,
    client_id: Option<&str>,
    deployment_id: Option<&str>,
) -> Result<RegistrationRow, ApiError> {
    let mut regs = store::registrations_for_issuer(&state.pool, iss, client_id).await?;
    let reg = match regs.len() {
        0 => {
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
        1 => regs.remove(0),
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
    Ok(reg)
}

/// The OIDC authentication request (LTI 1.3 Core §5.1.1.2): the URL of the platform's
/// authorization endpoint with quizd's client id, redirect URI, state and nonce.
fn authentication_request(
    reg: &RegistrationRow,
    redirect_uri: &str,
    login_hint: &str,
    login_state: &str,
    nonce: &str,
    message_hint: Option<&str>,
) -> Result<reqwest::Url, ApiError> {
    let mut auth = reqwest::Url::parse(&reg.auth_endpoint)
        .map_err(|_| ApiError::internal("a registration's auth endpoint does not parse"))?;
    {
        let mut q = auth.query_pairs_mut();
        q.append_pair("scope", "openid")
            .append_pair("response_type", "id_token")
            .append_pair("response_mode", "form_post")
            .append_pair("prompt", "none")
            .append_pair("client_id", &reg.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("login_hint", login_hint)
            .append_pair("state", login_state)
            .append_pair("nonce", nonce);
        if let Some(h) = message_hint {
            q.append_pair("lti_message_hint", h);
        }
    }
    Ok(auth)
}
