//! Passwords, stored only as argon2id hashes (OWASP's minimum parameters: 19 MiB, 2 passes).
//! Hashing takes tens of milliseconds of CPU, so callers run it on the blocking pool.
//!
//! Argon2's 19 MiB of working memory comes from [`Memory`], a pool of blocks made once and
//! reused by every hash and verification, never from the allocator per hash: a freed 19 MiB
//! block would raise glibc's mmap threshold, and later ones would then stay in the heap (the
//! process's memory growing after a burst of sign-ins). The pool holds at most one block per
//! core, as many as the [`HashQueue`] lets run at once, made when first needed.

use std::sync::{Condvar, Mutex, PoisonError};

use argon2::password_hash::phc::{Output, ParamsString, PasswordHash, Salt};
use argon2::{Algorithm, Argon2, Block, Params, Version};

pub const MIN_LEN: usize = 8;
pub const MAX_LEN: usize = 256;

/// The working memory of one hash with quizd's parameters (`m=19456`: 19 MiB), the size of each
/// pooled block. A stored hash that needs more is refused (see [`verify`]).
const BLOCKS: usize = Params::DEFAULT.block_count();

/// The most passes a stored hash may ask for: quizd writes 2; a verification of 8 takes four
/// times a sign-in's CPU, and more is refused (see [`verify`]).
const MAX_PASSES: u32 = 8;

/// A new password's PHC string, `$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`, with a fresh
/// 16-byte salt: the string the argon2 crate's own `hash_password` makes.
pub fn hash(password: &str) -> Result<String, String> {
    let salt = argon2::password_hash::try_generate_salt().map_err(|e| e.to_string())?;
    hash_with_salt(&MEMORY, password.as_bytes(), &salt)
}

fn hash_with_salt(memory: &Memory, password: &[u8], salt: &[u8]) -> Result<String, String> {
    let argon2 = Argon2::default();
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    memory
        .with_blocks(|blocks| {
            argon2.hash_password_into_with_memory(password, salt, &mut out, blocks)
        })
        .map_err(|e| e.to_string())?;
    let phc = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(argon2.params()).map_err(|e| e.to_string())?,
        salt: Some(Salt::new(salt).map_err(|e| e.to_string())?),
        hash: Some(Output::new(&out).map_err(|e| e.to_string())?),
    };
    Ok(phc.to_string())
}

/// Whether `password` is the one `stored` (a PHC string) was made from. The string's own
/// algorithm (any Argon2 variant), version, parameters, salt and output length are used, as the
/// argon2 crate's `verify_password` would; the outputs are compared in constant time
/// (`Output`'s `==`). False, never a panic, for anything that is not such a string, and for a
/// hash that needs more memory than a pooled block or more than [`MAX_PASSES`] passes: quizd
/// never wrote one, and computing it would step outside the memory and time the hashing queue
/// rations (a warning says so, so that an operator who imported such hashes learns why those
/// sign-ins fail).
pub fn verify(password: &str, stored: &str) -> bool {
    verify_with(&MEMORY, password.as_bytes(), stored)
}

fn verify_with(memory: &Memory, password: &[u8], stored: &str) -> bool {
    let Ok(phc) = PasswordHash::new(stored) else {
        return false;
    };
    let (Some(salt), Some(expected)) = (&phc.salt, &phc.hash) else {
        return false;
    };
    let (Ok(algorithm), Ok(version), Ok(params)) = (
        Algorithm::new(phc.algorithm.as_str()),
        phc.version
            .map_or(Ok(Version::default()), Version::try_from),
        Params::try_from(&phc),
    ) else {
        return false;
    };
    if params.block_count() > BLOCKS || params.t_cost() > MAX_PASSES {
        tracing::warn!(
            m = params.m_cost(),
            t = params.t_cost(),
            "a stored password hash asks for more memory or passes than quizd allows; refused"
        );
        return false;
    }
    let mut buffer = [0u8; Output::MAX_LENGTH];
    let Some(out) = buffer.get_mut(..expected.len()) else {
        return false;
    };
    let argon2 = Argon2::new(algorithm, version, params);
    memory
        .with_blocks(|blocks| {
            argon2.hash_password_into_with_memory(password, salt, &mut *out, blocks)
        })
        .is_ok()
        && Output::new(out).is_ok_and(|computed| computed == *expected)
}

/// Argon2's working memory: at most `limit` blocks of [`BLOCKS`], each made when no made one is
/// free and fewer than `limit` exist, and kept for the next hash. A caller that finds them all
/// lent waits for one (callers through the [`HashQueue`] never do: it runs at most one hash per
/// core, and the process's pool has a block per core). Argon2's first pass writes every block
/// before any is read, so what a previous hash left in a block changes nothing.
struct Memory {
    pool: Mutex<Pool>,
    returned: Condvar,
}

struct Pool {
    free: Vec<Box<[Block]>>,
    made: usize,
    limit: usize,
}

impl Memory {
    const fn new(limit: usize) -> Self {
        Self {
            pool: Mutex::new(Pool {
                free: Vec::new(),
                made: 0,
                limit,
            }),
            returned: Condvar::new(),
        }
    }

    /// Runs `work` with a block lent from the pool; the block goes back however `work` ends.
    fn with_blocks<T>(&self, work: impl FnOnce(&mut [Block]) -> T) -> T {
        /// Gives the block back when dropped, also if `work` panics.
        struct Lent<'a>(&'a Memory, Box<[Block]>);
        impl Drop for Lent<'_> {
            fn drop(&mut self) {
                let blocks = std::mem::take(&mut self.1);
                let mut pool = self.0.pool.lock().unwrap_or_else(PoisonError::into_inner);
                pool.free.push(blocks);
                self.0.returned.notify_one();
            }
        }
        let mut lent = Lent(self, self.take());
        work(&mut lent.1[..])
    }

    fn take(&self) -> Box<[Block]> {
        let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(blocks) = pool.free.pop() {
                return blocks;
            }
            if pool.made < pool.limit {
                pool.made += 1;
                drop(pool);
                return vec![Block::new(); BLOCKS].into_boxed_slice();
            }
            pool = self
                .returned
                .wait(pool)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// The process's password memory, a block per core (see [`HASHING`] for why per process).
static MEMORY: std::sync::LazyLock<Memory> = std::sync::LazyLock::new(|| Memory::new(cores()));

/// The machine's cores: the hashes that run at once, and the pooled blocks they use.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
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
static HASHING: std::sync::LazyLock<HashQueue> =
    std::sync::LazyLock::new(|| HashQueue::new(cores(), cores() * QUEUED_PER_CORE));

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

    use argon2::password_hash::{PasswordHasher, PasswordVerifier};
    use proptest::prelude::*;

    /// A PHC string's parts as the argon2 crate reads them.
    fn argon2_made(argon2: &Argon2, password: &str) -> String {
        argon2
            .hash_password(password.as_bytes())
            .unwrap()
            .to_string()
    }

    #[test]
    fn a_new_hash_is_the_string_the_argon2_crate_makes_from_the_same_salt_even_in_reused_memory() {
        let memory = Memory::new(1);
        let salt = *b"sixteen byte slt";
        for password in ["first password", "second password", "first password"] {
            let ours = hash_with_salt(&memory, password.as_bytes(), &salt).unwrap();
            let theirs = Argon2::default()
                .hash_password_with_salt(password.as_bytes(), &salt)
                .unwrap()
                .to_string();
            assert_eq!(ours, theirs);
            assert!(ours.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        }
        assert_eq!(memory.pool.lock().unwrap().made, 1);
    }

    #[test]
    fn a_new_hash_verifies_with_the_argon2_crates_own_verifier_and_only_for_its_password() {
        let h = hash("correct horse battery staple").unwrap();
        let argon2 = Argon2::default();
        assert!(
            argon2
                .verify_password(b"correct horse battery staple", h.as_str())
                .is_ok()
        );
        assert!(
            argon2
                .verify_password(b"correct horse battery stapler", h.as_str())
                .is_err()
        );
    }

    #[test]
    fn hashes_the_argon2_crate_made_verify_with_their_own_variant_version_and_parameters() {
        // Today's stored hashes (the crate's `hash_password` with the defaults), and hashes
        // with other parameters within the bounds.
        let others = [
            Argon2::default(),
            Argon2::new(
                Algorithm::Argon2i,
                Version::V0x10,
                Params::new(8192, 3, 2, Some(64)).unwrap(),
            ),
            Argon2::new(
                Algorithm::Argon2d,
                Version::V0x13,
                Params::new(BLOCKS as u32, MAX_PASSES, 4, Some(16)).unwrap(),
            ),
        ];
        for argon2 in others {
            let stored = argon2_made(&argon2, "an older password");
            assert!(verify("an older password", &stored), "{stored}");
            assert!(!verify("an older passwore", &stored), "{stored}");
            assert!(!verify("", &stored), "{stored}");
        }
    }

    #[test]
    fn a_stored_hash_beyond_the_pooled_memory_or_the_passes_allowed_is_refused() {
        let heavier = Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(20 * 1024, 2, 1, None).unwrap(),
        );
        let stored = argon2_made(&heavier, "a heavy password");
        assert!(
            heavier
                .verify_password(b"a heavy password", stored.as_str())
                .is_ok()
        );
        assert!(!verify("a heavy password", &stored));
        // Edited parameters are refused before any work (4 TiB would not be allocated, a
        // million passes not run): the test would not end otherwise.
        let ours = hash("a password").unwrap();
        for edited in [
            ours.replace("m=19456", "m=4294967295"),
            ours.replace("t=2", &format!("t={}", MAX_PASSES + 1)),
            ours.replace("t=2", "t=1000000"),
        ] {
            assert!(!verify("a password", &edited), "{edited}");
        }
    }

    #[test]
    fn anything_that_is_not_an_argon2_hash_with_salt_and_output_is_refused() {
        let ours = hash("a password").unwrap();
        let (head, output) = ours.rsplit_once('$').unwrap();
        let (params, salt) = head.rsplit_once('$').unwrap();
        for stored in [
            String::new(),
            "not a hash".into(),
            "$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW".into(),
            "$scrypt$ln=16,r=8,p=1$aM15713r3Xsvxbi31lqr1Q$nFNh2CVHVjNldFVKDHDlm4CbdRSCdEBsjjJxD+iCs5E".into(),
            params.to_string(),
            head.to_string(),
            format!("{params}${output}"),
            ours.replace("$argon2id$", "$argon3$"),
            ours.replace("v=19", "v=20"),
            ours.replace("p=1", "p=0"),
            ours.replace("m=19456", "m=1"),
            ours.replace("p=1", "p=1,x=2"),
            ours.replace(salt, "c2FsdA"),
            ours.replace(output, "short"),
            format!("{ours}$"),
        ] {
            assert!(!verify("a password", &stored), "{stored}");
        }
        assert!(verify("a password", &ours));
    }

    #[test]
    fn the_pool_lends_no_more_blocks_than_its_limit_and_keeps_them_for_the_next_hash() {
        let memory = Memory::new(2);
        let salt = *b"sixteen byte slt";
        std::thread::scope(|s| {
            let hashes: Vec<_> = (0..6)
                .map(|i| {
                    let memory = &memory;
                    s.spawn(move || {
                        let password = format!("password {i}");
                        let h = hash_with_salt(memory, password.as_bytes(), &salt).unwrap();
                        assert!(verify_with(memory, password.as_bytes(), &h));
                        assert!(!verify_with(memory, b"password 9", &h));
                    })
                })
                .collect();
            for h in hashes {
                h.join().unwrap();
            }
        });
        // Two when two hashes overlapped, one if the threads happened to take turns.
        let pool = memory.pool.lock().unwrap();
        assert!((1..=2).contains(&pool.made), "{} blocks made", pool.made);
        assert_eq!(pool.free.len(), pool.made);
    }

    proptest! {
        // Each case hashes once and verifies twice (tens of milliseconds apiece).
        #![proptest_config(ProptestConfig::with_cases(8))]
        #[test]
        fn any_password_verifies_against_its_hash_and_a_different_one_does_not(
            password in "\\PC{0,80}",
            other in "\\PC{0,80}",
        ) {
            prop_assume!(password != other);
            let h = hash(&password).unwrap();
            prop_assert!(verify(&password, &h));
            prop_assert!(!verify(&other, &h));
        }
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
