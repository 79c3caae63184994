//! quizd's own RSA key pairs for LTI: they sign Deep Linking responses and the client
//! assertions of the client-credentials grant, and are published at the JWKS endpoint.
//! Rotation makes a new key the signing key and keeps the previous one published for
//! [`RETIRED_KEY_PUBLISHED_DAYS`], so platforms that cached the old set still verify.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rsa::PrivateKey as RsaPrivateKey;
use rsa::pkcs8::{EncodePrivateKey, LineEnding};
use rsa::traits::PublicKeyParts;
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sqlx::{FromRow, PgPool};

/// Modulus size of quizd's keys: what LTI platforms expect for RS256.
pub const KEY_BITS: usize = 2048;
/// How long a retired key stays in the published set.
pub const RETIRED_KEY_PUBLISHED_DAYS: i64 = 7;

/// A freshly generated key pair.
pub struct NewKey {
    pub kid: String,
    pub private_pem: String,
    /// Modulus and exponent, base64url without padding (JWK `n` and `e`).
    pub n: String,
    pub e: String,
}

/// Generates an RSA key pair; its kid is the RFC 7638 thumbprint of the public key.
/// CPU-bound (tens to hundreds of milliseconds): call it off the async workers.
pub fn generate() -> anyhow::Result<NewKey> {
    let key = RsaPrivateKey::new(&mut SystemRng, KEY_BITS)?;
    let n = URL_SAFE_NO_PAD.encode(key.n_bytes());
    let e = URL_SAFE_NO_PAD.encode(key.e_bytes());
    let private_pem = key.to_pkcs8_pem(LineEnding::LF)?.to_string();
    Ok(NewKey {
        kid: thumbprint(&n, &e),
        private_pem,
        n,
        e,
    })
}

/// The operating system's random generator, as the `rsa` crate's RNG traits want it.
struct SystemRng;

impl rsa::rand_core::TryRng for SystemRng {
    type Error = std::io::Error;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        let mut b = [0u8; 4];
        self.try_fill_bytes(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let mut b = [0u8; 8];
        self.try_fill_bytes(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        use rand::TryRngCore;
        rand::rngs::OsRng
            .try_fill_bytes(dst)
            .map_err(std::io::Error::other)
    }
}

impl rsa::rand_core::TryCryptoRng for SystemRng {}

/// RFC 7638: SHA-256 over the canonical JSON of the required RSA members, base64url.
pub fn thumbprint(n: &str, e: &str) -> String {
    let canonical = format!(r#"{{"e":"{e}","kty":"RSA","n":"{n}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// A key as stored.
#[derive(Debug, Clone, FromRow)]
pub struct KeyRow {
    pub kid: String,
    pub private_pem: String,
    pub n: String,
    pub e: String,
    pub created_at: DateTime<Utc>,
    pub retired_at: Option<DateTime<Utc>>,
}

/// A public key as the JWKS endpoint and the admin API show it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PublicKeyInfo {
    pub kid: String,
    pub created_at: DateTime<Utc>,
    /// When it stopped signing; it stays published for a while after.
    pub retired_at: Option<DateTime<Utc>>,
}

async fn insert(pool: &PgPool, key: &NewKey) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO lti_keys (kid, private_pem, n, e) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING",
    )
    .bind(&key.kid)
    .bind(&key.private_pem)
    .bind(&key.n)
    .bind(&key.e)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

async fn generate_off_thread() -> anyhow::Result<NewKey> {
    tokio::task::spawn_blocking(generate).await?
}

/// The key that signs now, made on first use.
pub async fn active(pool: &PgPool) -> anyhow::Result<KeyRow> {
    let current = || {
        sqlx::query_as::<_, KeyRow>(
            "SELECT kid, private_pem, n, e, created_at, retired_at FROM lti_keys
              WHERE retired_at IS NULL",
        )
        .fetch_optional(pool)
    };
    if let Some(key) = current().await? {
        return Ok(key);
    }
    let key = generate_off_thread().await?;
    // Two first uses race: the one-active-key index lets one of them win.
    insert(pool, &key).await?;
    current()
        .await?
        .ok_or_else(|| anyhow::anyhow!("no active LTI key after creating one"))
}

/// Makes a new key the signing key; the previous one stays published for
/// [`RETIRED_KEY_PUBLISHED_DAYS`]. Returns the new key's id.
pub async fn rotate(pool: &PgPool) -> anyhow::Result<String> {
    let key = generate_off_thread().await?;
    let mut tx = pool.begin().await?;
    sqlx::query("UPDATE lti_keys SET retired_at = now() WHERE retired_at IS NULL")
        .execute(&mut *tx)
        .await?;
    sqlx::query("INSERT INTO lti_keys (kid, private_pem, n, e) VALUES ($1, $2, $3, $4)")
        .bind(&key.kid)
        .bind(&key.private_pem)
        .bind(&key.n)
        .bind(&key.e)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(key.kid)
}

/// The keys in the published set: the signing key and those retired recently, newest first.
pub async fn published(pool: &PgPool) -> Result<Vec<KeyRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT kid, private_pem, n, e, created_at, retired_at FROM lti_keys
          WHERE retired_at IS NULL OR retired_at > now() - interval '{RETIRED_KEY_PUBLISHED_DAYS} days'
          ORDER BY created_at DESC, kid"
    )))
    .fetch_all(pool)
    .await
}

/// The JSON Web Key Set platforms verify quizd's signatures with (RFC 7517).
pub async fn jwks(pool: &PgPool) -> anyhow::Result<Value> {
    active(pool).await?;
    let keys: Vec<Value> = published(pool)
        .await?
        .iter()
        .map(|k| {
            json!({"kty": "RSA", "alg": "RS256", "use": "sig", "kid": k.kid, "n": k.n, "e": k.e})
        })
        .collect();
    Ok(json!({ "keys": keys }))
}

/// Signs claims with the active key (RS256, its kid in the header).
pub async fn sign(pool: &PgPool, claims: &Value) -> anyhow::Result<String> {
    let key = active(pool).await?;
    let encoding = EncodingKey::from_rsa_pem(key.private_pem.as_bytes())?;
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(key.kid);
    header.typ = Some("JWT".into());
    Ok(jsonwebtoken::encode(&header, claims, &encoding)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_signs_and_its_public_half_verifies() {
        let key = generate().unwrap();
        let enc = jsonwebtoken::EncodingKey::from_rsa_pem(key.private_pem.as_bytes()).unwrap();
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some(key.kid.clone());
        let token = jsonwebtoken::encode(&header, &serde_json::json!({"a": 1}), &enc).unwrap();
        let dec = jsonwebtoken::DecodingKey::from_rsa_components(&key.n, &key.e).unwrap();
        let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        let data = jsonwebtoken::decode::<serde_json::Value>(&token, &dec, &v).unwrap();
        assert_eq!(data.claims["a"], 1);
        assert_eq!(key.e, "AQAB");
    }
}
