//! Access to a platform's services (AGS, NRPS): the OAuth 2 client-credentials grant with a
//! JWT client assertion signed by quizd (1EdTech Security Framework §4.1), and a cache of the
//! access tokens until shortly before they expire.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use super::PlatformClient;
use super::registrations::RegistrationRow;

pub const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A token is used until this long before it expires.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);

#[derive(Clone)]
struct Cached {
    token: String,
    until: Instant,
}

/// Access tokens by (registration, scopes), each until [`EXPIRY_MARGIN`] before it expires;
/// at most [`TokenCache::MAX_TOKENS`], the most used kept (quick_cache, as every in-memory
/// cache of quizd). Part of [`super::PlatformClient`]; clones share the tokens.
#[derive(Clone)]
pub struct TokenCache(Arc<quick_cache::sync::Cache<(Uuid, String), Cached>>);

impl Default for TokenCache {
    fn default() -> Self {
        Self(Arc::new(quick_cache::sync::Cache::new(Self::MAX_TOKENS)))
    }
}

impl TokenCache {
    /// A few per registration (one per set of scopes).
    pub const MAX_TOKENS: usize = 4096;

    fn get(&self, key: &(Uuid, String)) -> Option<String> {
        let c = self.0.get(key)?;
        (c.until > Instant::now()).then_some(c.token)
    }

    fn insert(&self, key: (Uuid, String), cached: Cached) {
        self.0.insert(key, cached);
    }

    /// Forgets a token the platform refused, so the next call asks for a new one.
    pub fn forget(&self, reg: Uuid, scopes: &str) {
        self.0.remove(&(reg, scopes.to_string()));
    }
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// The client assertion: quizd (its client id) asserts itself to the token endpoint.
pub async fn client_assertion(pool: &PgPool, reg: &RegistrationRow) -> anyhow::Result<String> {
    let now = jsonwebtoken::get_current_timestamp();
    super::keys::sign(
        pool,
        &json!({
            "iss": reg.client_id,
            "sub": reg.client_id,
            "aud": reg.assertion_audience(),
            "iat": now,
            "exp": now + 300,
            "jti": Uuid::new_v4().to_string(),
        }),
    )
    .await
}

/// An access token for these scopes (space-separated), from the cache or the token endpoint.
pub async fn access_token(
    pool: &PgPool,
    platforms: &PlatformClient,
    reg: &RegistrationRow,
    scopes: &str,
) -> anyhow::Result<String> {
    let key = (reg.id, scopes.to_string());
    if let Some(token) = platforms.tokens().get(&key) {
        return Ok(token);
    }
    let assertion = client_assertion(pool, reg).await?;
    let res = platforms
        .http()
        .post(&reg.token_endpoint)
        .header("accept", "application/json")
        .form(&[
            ("grant_type", "client_credentials"),
            ("client_assertion_type", CLIENT_ASSERTION_TYPE),
            ("client_assertion", assertion.as_str()),
            ("scope", scopes),
        ])
        .send()
        .await?;
    let status = res.status();
    let body = super::read_body(res).await?;
    if !status.is_success() {
        anyhow::bail!(
            "the token endpoint answered {status}: {}",
            excerpt(&String::from_utf8_lossy(&body))
        );
    }
    let token: TokenResponse = serde_json::from_slice(&body)
        .map_err(|e| anyhow::anyhow!("the token endpoint's answer is not a token: {e}"))?;
    if token
        .token_type
        .as_deref()
        .is_some_and(|t| !t.eq_ignore_ascii_case("bearer"))
    {
        anyhow::bail!("the token endpoint issued a token that is not a bearer token");
    }
    let lifetime = Duration::from_secs(token.expires_in.unwrap_or(3600));
    platforms.tokens().insert(
        key,
        Cached {
            token: token.access_token.clone(),
            until: Instant::now() + lifetime.saturating_sub(EXPIRY_MARGIN),
        },
    );
    Ok(token.access_token)
}

/// The start of a platform's answer, for error messages.
pub fn excerpt(text: &str) -> String {
    let t: String = text.chars().filter(|c| !c.is_control()).take(300).collect();
    if text.chars().count() > 300 {
        format!("{t}…")
    } else {
        t
    }
}
