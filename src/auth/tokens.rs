//! Access tokens (JWT, HS256 only, signed by quizd) and refresh tokens (random, stored hashed).

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, decode, encode};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::Role;

pub const ISSUER: &str = "quizd";
pub const AUDIENCE: &str = "quizd-api";
/// Access tokens are short-lived; a role change takes effect within this time.
pub const ACCESS_TTL_SECS: u64 = 15 * 60;
pub const REFRESH_TTL_DAYS: i64 = 30;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Claims {
    pub sub: Uuid,
    pub role: Role,
    pub iat: u64,
    pub exp: u64,
    pub iss: String,
    pub aud: String,
}

/// The signing key and the one validation every access token must pass.
pub struct TokenKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl TokenKeys {
    pub fn new(secret: &[u8]) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "iat", "iss", "aud", "sub"]);
        validation.leeway = 5;
        Self {
            encoding: EncodingKey::from_secret(secret).expect("an HMAC key of any length"),
            decoding: DecodingKey::from_secret(secret).expect("an HMAC key of any length"),
            validation,
        }
    }

    pub fn issue(&self, user: Uuid, role: Role) -> String {
        let now = jsonwebtoken::get_current_timestamp();
        let claims = Claims {
            sub: user,
            role,
            iat: now,
            exp: now + ACCESS_TTL_SECS,
            iss: ISSUER.into(),
            aud: AUDIENCE.into(),
        };
        encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).expect("HS256 signs")
    }

    /// The claims of a valid token: right algorithm and signature, unexpired, ours.
    pub fn verify(&self, token: &str) -> Option<Claims> {
        decode::<Claims>(token, &self.decoding, &self.validation)
            .ok()
            .map(|d| d.claims)
    }
}

/// A new refresh token and the hash under which it is stored.
pub fn new_refresh_token() -> (String, Vec<u8>) {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = hex::encode(bytes);
    let hash = refresh_token_hash(&token);
    (token, hash)
}

pub fn refresh_token_hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// 32 random bytes for a signing key.
pub fn new_secret() -> Vec<u8> {
    let mut bytes = vec![0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issued_token_verifies_and_a_tampered_one_does_not() {
        let keys = TokenKeys::new(&[7u8; 32]);
        let id = Uuid::now_v7();
        let token = keys.issue(id, Role::Instructor);
        let claims = keys.verify(&token).unwrap();
        assert_eq!((claims.sub, claims.role), (id, Role::Instructor));
        let other = TokenKeys::new(&[8u8; 32]);
        assert!(other.verify(&token).is_none());
        let mut parts: Vec<&str> = token.split('.').collect();
        parts[2] = "AAAA";
        assert!(keys.verify(&parts.join(".")).is_none());
    }
}
