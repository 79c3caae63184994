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

/// Where hashes wait for a core: at most one hash per core at a time (each takes 19 MiB and
/// tens of milliseconds of CPU, so a burst of sign-ins queues here instead of multiplying memory
/// and starving the HTTP workers), and at most `limit` in the queue, running ones included.
/// Beyond that a caller is turned away at once — a `503` with `Retry-After`, never a request
/// that waits until it times out.
pub struct HashQueue {
    cores: tokio::sync::Semaphore,
    queued: std::sync::atomic::AtomicUsize,
    limit: usize,
}

/// The queue was full.
#[derive(Debug, thiserror::Error)]
#[error("the password hashing queue is full")]
pub struct Busy;

/// Hashes allowed to wait per core: at ~20 ms a hash, about a second's work.
pub const QUEUED_PER_CORE: usize = 48;

impl HashQueue {
    pub fn new(cores: usize, limit: usize) -> Self {
        Self {
            cores: tokio::sync::Semaphore::new(cores),
            queued: std::sync::atomic::AtomicUsize::new(0),
            limit,
        }
    }

    /// Runs `work` (a hash or a verification) on the blocking pool when a core is free, or
    /// `Err(Busy)` at once when the queue is full.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<Result<T, String>, Busy> {
        use std::sync::atomic::Ordering;
        if self.queued.fetch_add(1, Ordering::AcqRel) >= self.limit {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            return Err(Busy);
        }
        // Leaves the queue however this future ends (done, failed, or dropped with its request).
        struct Leave<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _leave = Leave(&self.queued);
        let Ok(_core) = self.cores.acquire().await else {
            return Ok(Err("the hashing queue is closed".into()));
        };
        Ok(actix_web::web::block(work).await.map_err(|e| e.to_string()))
    }
}

/// The process's one queue, deliberately not in `AppState`: what it rations is the process's
/// (its cores and its memory, 19 MiB per hash), not a state's. Two states in one process (the
/// tests run hundreds, `another_instance` two on one database) must not each be allowed a hash
/// per core, and it holds no configuration: the core count is the machine's.
static HASHING: std::sync::LazyLock<HashQueue> = std::sync::LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    HashQueue::new(cores, cores * QUEUED_PER_CORE)
});

/// Runs `work` (a hash or a verification) through the process's [`HashQueue`]: `503` with
/// `Retry-After` when it is full, `500` if the blocking pool fails.
pub async fn off_the_workers<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, crate::error::ApiError> {
    match HASHING.run(work).await {
        Ok(done) => done.map_err(crate::error::ApiError::internal),
        Err(Busy) => Err(crate::error::ApiError::unavailable(
            "Too many sign-ins are being checked at once; try again in a second.",
        )),
    }
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

    #[tokio::test]
    async fn a_full_hashing_queue_turns_callers_away_at_once_and_takes_them_again_when_it_drains() {
        let queue = std::sync::Arc::new(HashQueue::new(1, 3));
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let wait = std::sync::Arc::new(std::sync::Mutex::new(wait));
        // One running (holding the core until released) and two waiting fill the queue.
        let mut running = Vec::new();
        for _ in 0..3 {
            let (queue, wait) = (queue.clone(), wait.clone());
            running.push(tokio::spawn(async move {
                queue
                    .run(move || wait.lock().unwrap().recv().unwrap())
                    .await
                    .map(Result::unwrap)
            }));
        }
        while queue.queued.load(std::sync::atomic::Ordering::Acquire) < 3 {
            tokio::task::yield_now().await;
        }
        assert!(matches!(queue.run(|| ()).await, Err(Busy)));
        for _ in 0..3 {
            release.send(()).unwrap();
        }
        for r in running {
            assert!(r.await.unwrap().is_ok());
        }
        assert!(matches!(queue.run(|| 7).await, Ok(Ok(7))));
    }

    #[test]
    fn a_hash_verifies_its_password_and_no_other() {
        let h = hash("correct horse battery staple").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify("correct horse battery staple", &h));
        assert!(!verify("correct horse battery stapler", &h));
        assert!(!verify("anything", "not a hash"));
    }
}
