//! Passwords, stored only as argon2id hashes (OWASP's minimum parameters: 19 MiB, 2 passes).
//! Hashing takes tens of milliseconds of CPU, so callers run it on the blocking pool.

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};

pub const MIN_LEN: usize = 8;
pub const MAX_LEN: usize = 256;

pub fn hash(password: &str) -> Result<String, String> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

pub fn verify(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored).ok().is_some_and(|h| {
        Argon2::default()
            .verify_password(password.as_bytes(), &h)
            .is_ok()
    })
}

/// At most one hash per core at a time: each takes 19 MiB and tens of milliseconds of CPU, so
/// a burst of sign-ups queues here instead of multiplying memory and starving the workers.
static HASHING: std::sync::LazyLock<tokio::sync::Semaphore> = std::sync::LazyLock::new(|| {
    tokio::sync::Semaphore::new(std::thread::available_parallelism().map_or(2, |n| n.get()))
});

/// Runs `work` (a hash or a verification) on the blocking pool, one per core at a time.
pub async fn off_the_workers<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let _permit = HASHING.acquire().await.map_err(|e| e.to_string())?;
    actix_web::web::block(work).await.map_err(|e| e.to_string())
}

/// A hash of a password nobody has, verified against when the account does not exist so that
/// an unknown email costs the same time as a wrong password.
pub fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash("decoy password that matches nothing").expect("argon2 hashes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_password_and_no_other() {
        let h = hash("correct horse battery staple").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify("correct horse battery staple", &h));
        assert!(!verify("correct horse battery stapler", &h));
        assert!(!verify("anything", "not a hash"));
    }
}
