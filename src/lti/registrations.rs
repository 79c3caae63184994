//! The platforms quizd trusts: issuer, client id, deployments, endpoints and keys.

use chrono::{DateTime, Utc};
use jsonwebtoken::DecodingKey;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgPool;
use utoipa::ToSchema;
use uuid::Uuid;

use super::store;
pub use super::store::RegistrationRow;
use crate::error::{ApiError, Code};

/// A platform registration as given by an admin.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistrationCreate {
    /// A name for people, e.g. `University Moodle`. Defaults to the issuer.
    pub title: Option<String>,
    /// The platform's issuer identifier (`iss`), e.g. `https://moodle.example.edu`.
    pub issuer: String,
    /// The client id the platform gave quizd.
    pub client_id: String,
    /// The deployment ids quizd accepts from this platform (at least one).
    pub deployment_ids: Vec<String>,
    /// The platform's OIDC authorization endpoint (where logins are redirected).
    pub auth_endpoint: String,
    /// The platform's OAuth 2 token endpoint (for grade passback and rosters).
    pub token_endpoint: String,
    /// The audience of client assertions when it is not the token endpoint (some platforms,
    /// e.g. Brightspace, name one).
    pub token_audience: Option<String>,
    /// The platform's public keys: a JWKS URL (exactly one of `jwks_url` and `jwks`).
    pub jwks_url: Option<String>,
    /// The platform's public keys inline, as a JSON Web Key Set `{"keys": [...]}`.
    #[schema(value_type = Option<Object>)]
    pub jwks: Option<Value>,
    /// Hosts (names, e.g. `school.instructure.com`) that the platform's services (grades,
    /// rosters) may be on besides the hosts of its endpoints. Launches naming service URLs on
    /// any other host are refused.
    pub service_hosts: Option<Vec<String>>,
}

/// Changes to a registration; absent fields stay as they are.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistrationUpdate {
    pub title: Option<String>,
    pub deployment_ids: Option<Vec<String>>,
    pub auth_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub token_audience: Option<String>,
    /// Replaces the keys by a JWKS URL.
    pub jwks_url: Option<String>,
    /// Replaces the keys by an inline key set.
    #[schema(value_type = Option<Object>)]
    pub jwks: Option<Value>,
    /// Replaces the extra hosts of the platform's services.
    pub service_hosts: Option<Vec<String>>,
}

/// What to configure in the platform for quizd: its URLs.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ToolConfiguration {
    /// OIDC login initiation URL (GET and POST).
    pub login_url: String,
    /// Target link URI and redirect URI of launches.
    pub launch_url: String,
    /// Deep Linking request URL (the launch URL also takes Deep Linking requests).
    pub deep_linking_url: String,
    /// quizd's public keys.
    pub jwks_url: String,
}

/// A registration as admins see it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Registration {
    pub id: Uuid,
    pub title: String,
    pub issuer: String,
    pub client_id: String,
    pub deployment_ids: Vec<String>,
    pub auth_endpoint: String,
    pub token_endpoint: String,
    pub token_audience: Option<String>,
    pub jwks_url: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub jwks: Option<Value>,
    /// When the keys at `jwks_url` were last fetched.
    pub jwks_fetched_at: Option<DateTime<Utc>>,
    /// Hosts the platform's services may be on besides its endpoints' hosts.
    pub service_hosts: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The URLs to enter in the platform.
    pub tool: ToolConfiguration,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RegistrationList {
    pub items: Vec<Registration>,
}

impl RegistrationRow {
    pub fn view(self, base: &str) -> Registration {
        Registration {
            id: self.id,
            title: self.title,
            issuer: self.issuer,
            client_id: self.client_id,
            deployment_ids: self.deployment_ids,
            auth_endpoint: self.auth_endpoint,
            token_endpoint: self.token_endpoint,
            token_audience: self.token_audience,
            jwks_url: self.jwks_url,
            jwks: self.jwks,
            jwks_fetched_at: self.jwks_fetched_at,
            service_hosts: self.service_hosts,
            created_at: self.created_at,
            updated_at: self.updated_at,
            tool: tool_configuration(base),
        }
    }

    /// The audience of client assertions sent to the token endpoint.
    pub fn assertion_audience(&self) -> &str {
        self.token_audience
            .as_deref()
            .unwrap_or(&self.token_endpoint)
    }

    /// Whether quizd may call this URL of the platform's services (AGS, NRPS), which a launch
    /// or a platform's answer names: `https` (plain http on loopback only, as for the
    /// registration's endpoints) on the host of one of the registration's endpoints or one of
    /// its `service_hosts`. Anything else would let whoever controls a launch's claims point
    /// quizd, with the platform's access token, at another host or into quizd's own network
    /// (docs/development.md, Guarantees). Hosts are compared without ports.
    pub fn check_service_url(&self, value: &str) -> Result<(), String> {
        let url = reqwest::Url::parse(value).map_err(|_| "is not an absolute URL".to_string())?;
        if !scheme_allowed(&url) {
            return Err("is not https (plain http only on loopback)".into());
        }
        let host = url.host_str().unwrap_or_default();
        let endpoint_hosts = [
            Some(self.auth_endpoint.as_str()),
            Some(self.token_endpoint.as_str()),
            self.jwks_url.as_deref(),
        ]
        .into_iter()
        .flatten()
        .filter_map(|e| reqwest::Url::parse(e).ok()?.host_str().map(str::to_string));
        let allowed = endpoint_hosts
            .chain(self.service_hosts.iter().cloned())
            .any(|h| h.eq_ignore_ascii_case(host));
        if allowed {
            Ok(())
        } else {
            Err(format!(
                "is on the host `{host}`, which is not one of this platform's (its endpoints' \
                 hosts or its registration's `service_hosts`)"
            ))
        }
    }
}

pub fn tool_configuration(base: &str) -> ToolConfiguration {
    ToolConfiguration {
        login_url: format!("{base}/v1/lti/login"),
        launch_url: format!("{base}/v1/lti/launch"),
        deep_linking_url: format!("{base}/v1/lti/launch"),
        jwks_url: format!("{base}/.well-known/jwks.json"),
    }
}

fn invalid(detail: impl Into<String>) -> ApiError {
    ApiError::new(Code::InvalidRegistration, detail)
}

fn check_text(field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    if value.trim().is_empty() || value.chars().count() > max || value.chars().any(char::is_control)
    {
        return Err(invalid(format!(
            "`{field}` must be 1 to {max} characters without control characters."
        )));
    }
    Ok(())
}

/// Whether quizd talks to a platform at this URL: https, or plain http for loopback hosts
/// (development, tests). The one rule for registrations' endpoints and services' URLs.
pub fn scheme_allowed(url: &reqwest::Url) -> bool {
    let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
    match url.scheme() {
        "https" => true,
        "http" => loopback,
        _ => false,
    }
}

/// An absolute http(s) URL. Plain http only for loopback hosts (development, tests).
pub fn check_url(field: &str, value: &str) -> Result<(), ApiError> {
    check_text(field, value, 2048)?;
    let url = reqwest::Url::parse(value)
        .map_err(|_| invalid(format!("`{field}` must be an absolute URL.")))?;
    if scheme_allowed(&url) {
        Ok(())
    } else {
        Err(invalid(format!(
            "`{field}` must be an https URL (http only on loopback)."
        )))
    }
}

/// Host names, as a URL carries them (no scheme, port or path); at most 50.
fn check_hosts(hosts: &[String]) -> Result<(), ApiError> {
    if hosts.len() > 50 {
        return Err(invalid("Give at most 50 `service_hosts`."));
    }
    for h in hosts {
        let parsed = reqwest::Url::parse(&format!("https://{h}/")).ok();
        let same = parsed.as_ref().and_then(|u| u.host_str()) == Some(h.as_str())
            && parsed.is_some_and(|u| u.port().is_none());
        if !same {
            return Err(invalid(format!(
                "`service_hosts`: `{h}` is not a host name in lower case (no scheme, port or path)."
            )));
        }
    }
    Ok(())
}

/// Every key of an inline key set must be a usable RSA signing key with a kid.
pub fn check_jwks(jwks: &Value) -> Result<(), ApiError> {
    // PostgreSQL's jsonb cannot hold a NUL character.
    if jwks.to_string().contains("\\u0000") {
        return Err(invalid("`jwks` contains a NUL character."));
    }
    let keys = jwks
        .get("keys")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("`jwks` must be a JSON Web Key Set: {\"keys\": [...]}."))?;
    if keys.is_empty() {
        return Err(invalid("`jwks` has no keys."));
    }
    for key in keys {
        if key.get("kid").and_then(Value::as_str).is_none() {
            return Err(invalid("Every key in `jwks` needs a `kid`."));
        }
        rsa_key(key).ok_or_else(|| {
            invalid("Every key in `jwks` must be an RSA signing key (kty RSA, n, e, alg RS256 if given).")
        })?;
    }
    Ok(())
}

fn check_deployments(ids: &[String]) -> Result<(), ApiError> {
    if ids.is_empty() {
        return Err(invalid("Give at least one deployment id."));
    }
    for id in ids {
        check_text("deployment_ids", id, super::claims::MAX_ID_LEN)?;
    }
    Ok(())
}

pub fn check_create(r: &RegistrationCreate) -> Result<(), ApiError> {
    if let Some(t) = &r.title {
        check_text("title", t, 200)?;
    }
    check_url("issuer", &r.issuer)?;
    check_text("client_id", &r.client_id, 255)?;
    check_deployments(&r.deployment_ids)?;
    check_url("auth_endpoint", &r.auth_endpoint)?;
    check_url("token_endpoint", &r.token_endpoint)?;
    if let Some(a) = &r.token_audience {
        check_text("token_audience", a, 2048)?;
    }
    if let Some(h) = &r.service_hosts {
        check_hosts(h)?;
    }
    match (&r.jwks_url, &r.jwks) {
        (Some(u), None) => check_url("jwks_url", u),
        (None, Some(k)) => check_jwks(k),
        _ => Err(invalid("Give exactly one of `jwks_url` and `jwks`.")),
    }
}

pub async fn update(
    pool: &PgPool,
    id: Uuid,
    u: &RegistrationUpdate,
) -> Result<Option<RegistrationRow>, ApiError> {
    if let Some(t) = &u.title {
        check_text("title", t, 200)?;
    }
    if let Some(d) = &u.deployment_ids {
        check_deployments(d)?;
    }
    for (field, value) in [
        ("auth_endpoint", &u.auth_endpoint),
        ("token_endpoint", &u.token_endpoint),
        ("jwks_url", &u.jwks_url),
    ] {
        if let Some(v) = value {
            check_url(field, v)?;
        }
    }
    if let Some(a) = &u.token_audience {
        check_text("token_audience", a, 2048)?;
    }
    if u.jwks_url.is_some() && u.jwks.is_some() {
        return Err(invalid("Give at most one of `jwks_url` and `jwks`."));
    }
    if let Some(k) = &u.jwks {
        check_jwks(k)?;
    }
    if let Some(h) = &u.service_hosts {
        check_hosts(h)?;
    }
    Ok(store::update_registration(pool, id, u).await?)
}

/// The decoding key of an RSA signing JWK, if it is one.
pub fn rsa_key(jwk: &Value) -> Option<DecodingKey> {
    if jwk.get("kty").and_then(Value::as_str) != Some("RSA") {
        return None;
    }
    if jwk
        .get("alg")
        .and_then(Value::as_str)
        .is_some_and(|a| a != "RS256")
    {
        return None;
    }
    if jwk
        .get("use")
        .and_then(Value::as_str)
        .is_some_and(|u| u != "sig")
    {
        return None;
    }
    let n = jwk.get("n")?.as_str()?;
    let e = jwk.get("e")?.as_str()?;
    DecodingKey::from_rsa_components(n, e).ok()
}

fn find_key(set: Option<&Value>, kid: &str) -> Option<DecodingKey> {
    set?.get("keys")?
        .as_array()?
        .iter()
        .find(|k| k.get("kid").and_then(Value::as_str) == Some(kid))
        .and_then(rsa_key)
}

/// Why the platform's key for a kid could not be had.
#[derive(Debug)]
pub enum KeyError {
    /// No key with this kid, even after refetching the key set.
    Unknown,
    /// The key set could not be fetched.
    Unreachable(String),
}

/// Fetching the key set again on an unknown kid is limited to once in this many seconds,
/// so a stream of made-up kids cannot make quizd hammer the platform.
pub const JWKS_REFETCH_SECS: i64 = 2;

/// Fetches the key set at the registration's `jwks_url` and caches it.
pub async fn refresh_jwks(
    pool: &PgPool,
    http: &reqwest::Client,
    reg: &RegistrationRow,
) -> Result<Value, KeyError> {
    let url = reg.jwks_url.as_deref().ok_or(KeyError::Unknown)?;
    let fetched = async {
        let res = http
            .get(url)
            .header("accept", "application/json")
            .send()
            .await?
            .error_for_status()?;
        let body = super::read_body(res).await?;
        let set: Value = serde_json::from_slice(&body)?;
        anyhow::ensure!(
            set.get("keys").is_some_and(Value::is_array),
            "not a JSON Web Key Set"
        );
        anyhow::Ok(set)
    }
    .await
    .map_err(|e| KeyError::Unreachable(format!("{e:#}")))?;
    store::cache_jwks(pool, reg.id, &fetched)
        .await
        .map_err(|e| KeyError::Unreachable(e.to_string()))?;
    Ok(fetched)
}

/// Cached keys older than this are fetched again before use, so a key the platform has
/// withdrawn stops being trusted within this time.
pub const JWKS_MAX_AGE_SECS: i64 = 3600;

/// The platform's public key with this kid: from the inline set, or from the cached set at
/// `jwks_url`, fetched again when it is older than [`JWKS_MAX_AGE_SECS`] (if the platform is
/// unreachable then, the cached keys serve) or when the kid is unknown (at most every
/// [`JWKS_REFETCH_SECS`]).
pub async fn platform_key(
    pool: &PgPool,
    http: &reqwest::Client,
    reg: &RegistrationRow,
    kid: &str,
    now: DateTime<Utc>,
) -> Result<DecodingKey, KeyError> {
    if reg.jwks_url.is_none() {
        return find_key(reg.jwks.as_ref(), kid).ok_or(KeyError::Unknown);
    }
    let age = reg.jwks_fetched_at.map(|t| (now - t).num_seconds());
    let mut cached = reg.jwks_cache.clone();
    let stale = age.is_some_and(|a| a >= JWKS_MAX_AGE_SECS);
    if stale {
        match refresh_jwks(pool, http, reg).await {
            Ok(set) => return find_key(Some(&set), kid).ok_or(KeyError::Unknown),
            Err(KeyError::Unreachable(cause)) => {
                tracing::warn!(registration = %reg.id, error = %cause, "refreshing the platform's keys failed; using the cached ones");
            }
            Err(KeyError::Unknown) => cached = None,
        }
    }
    if let Some(key) = find_key(cached.as_ref(), kid) {
        return Ok(key);
    }
    // Tried just now, or recently enough: the kid is unknown.
    if stale || age.is_some_and(|a| a < JWKS_REFETCH_SECS) {
        return Err(KeyError::Unknown);
    }
    let set = refresh_jwks(pool, http, reg).await?;
    find_key(Some(&set), kid).ok_or(KeyError::Unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(service_hosts: &[&str]) -> RegistrationRow {
        let now = Utc::now();
        RegistrationRow {
            id: Uuid::nil(),
            title: "LMS".into(),
            issuer: "https://canvas.example".into(),
            client_id: "c".into(),
            deployment_ids: vec!["1".into()],
            auth_endpoint: "https://sso.lms.example/authorize".into(),
            token_endpoint: "https://sso.lms.example/token".into(),
            token_audience: None,
            jwks_url: Some("https://keys.lms.example/jwks".into()),
            jwks: None,
            jwks_cache: None,
            jwks_fetched_at: None,
            service_hosts: service_hosts.iter().map(|h| h.to_string()).collect(),
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn service_urls_must_be_https_on_a_host_of_the_platform() {
        let reg = row(&["school.lms.example"]);
        for ok in [
            "https://sso.lms.example/api/lti/courses/1/line_items",
            "https://keys.lms.example:8443/nrps",
            "https://SCHOOL.lms.example/api/lti/courses/1/names_and_roles",
        ] {
            assert!(reg.check_service_url(ok).is_ok(), "{ok}");
        }
        for refused in [
            "http://sso.lms.example/line_items",
            "https://canvas.example/line_items",
            "https://evil.example/line_items",
            "https://sso.lms.example.evil.example/line_items",
            "http://169.254.169.254/latest/meta-data",
            "ftp://sso.lms.example/x",
            "not a url",
        ] {
            assert!(reg.check_service_url(refused).is_err(), "{refused}");
        }
        // Plain http only on loopback, and there too only on the platform's hosts.
        let mut local = row(&[]);
        local.auth_endpoint = "http://127.0.0.1:9000/auth".into();
        assert!(
            local
                .check_service_url("http://127.0.0.1:9001/lineitems")
                .is_ok()
        );
        assert!(
            local
                .check_service_url("http://localhost:9001/lineitems")
                .is_err()
        );
    }

    #[test]
    fn service_hosts_are_bare_host_names() {
        assert!(check_hosts(&["school.lms.example".into(), "10.0.0.1".into()]).is_ok());
        for bad in [
            "https://school.lms.example",
            "school.lms.example:443",
            "school.lms.example/path",
            "School.lms.example",
            "",
        ] {
            assert!(check_hosts(&[bad.into()]).is_err(), "{bad}");
        }
    }
}
