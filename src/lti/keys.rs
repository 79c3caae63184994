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
use sqlx::PgPool;

use super::store;
pub use super::store::KeyRow;

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

/// A public key as the JWKS endpoint and the admin API show it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PublicKeyInfo {
    pub kid: String,
    pub created_at: DateTime<Utc>,
    /// When it stopped signing; it stays published for a while after.
    pub retired_at: Option<DateTime<Utc>>,
}

async fn generate_off_thread() -> anyhow::Result<NewKey> {
    tokio::task::spawn_blocking(generate).await?
}

/// The key that signs now, made on first use.
pub async fn active(pool: &PgPool) -> anyhow::Result<KeyRow> {
    if let Some(key) = store::active_key(pool).await? {
        return Ok(key);
    }
    let key = generate_off_thread().await?;
    // Two first uses race: the one-active-key index lets one of them win.
    store::insert_first_key(pool, &key).await?;
    store::active_key(pool)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no active LTI key after creating one"))
}

/// Makes a new key the signing key; the previous one stays published for
/// [`RETIRED_KEY_PUBLISHED_DAYS`]. Returns the new key's id.
pub async fn rotate(pool: &PgPool) -> anyhow::Result<String> {
    let key = generate_off_thread().await?;
    let mut tx = pool.begin().await?;
    store::retire_active_key(&mut *tx).await?;
    store::insert_key(&mut *tx, &key).await?;
    tx.commit().await?;
    Ok(key.kid)
}

/// The JSON Web Key Set platforms verify quizd's signatures with (RFC 7517).
pub async fn jwks(pool: &PgPool) -> anyhow::Result<Value> {
    active(pool).await?;
    let keys: Vec<Value> = store::published_keys(pool)
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
