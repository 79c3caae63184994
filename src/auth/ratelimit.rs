//! Rate limits on passwords being tried and hashed.
//!
//! Sign-in limits count *failed* sign-ins, so that they stop guessing without locking out the
//! owner or a class:
//!
//! - per (account, client address): 5 failures, then one every 12 s. This is what stops a
//!   guesser, and it touches no one else: the owner signing in from their own address is a
//!   different pair.
//! - per account, from all addresses: 100 failures, then one every 36 s (100 an hour). This
//!   bounds guessing spread over many addresses. It does not refuse an address the account
//!   has signed in from before (remembered for 30 days, in memory), so distributed guessers
//!   cannot lock the owner out of their usual address either.
//! - per client address, across accounts: 100 failures, then one every 2 s. Successes are not
//!   counted, so a class of hundreds behind one NAT signs in without a `429`, while one
//!   address cannot spray guesses over many accounts.
//!
//! A successful sign-in clears its (account, address) failures. The checks read the counts
//! before the password is verified and count a failure after it; guesses verified at the same
//! moment are bounded by the hashing queue (see `password::off_the_workers`).
//!
//! Sign-ups are limited per client address (a burst for a class, then a third as many a
//! minute).

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// Failures allowed at once, and then one every `every`, per key: the generic cell rate
/// algorithm, keeping one instant per key that has failed recently.
struct FailureLimit<K> {
    burst: u32,
    every: Duration,
    /// When each key's count is back to zero (the "theoretical arrival time").
    clear_at: Mutex<HashMap<K, Instant>>,
}

impl<K: Hash + Eq + Clone> FailureLimit<K> {
    fn new(burst: u32, every: Duration) -> Self {
        Self {
            burst,
            every,
            clear_at: Mutex::default(),
        }
    }

    /// `Err(wait)` when a failure now would be over the limit.
    fn check(&self, key: &K, now: Instant) -> Result<(), Duration> {
        let map = self.clear_at.lock().expect("limit lock");
        let Some(&clear_at) = map.get(key) else {
            return Ok(());
        };
        let tolerance = self.every * (self.burst - 1);
        match clear_at.checked_duration_since(now + tolerance) {
            Some(wait) if !wait.is_zero() => Err(wait),
            _ => Ok(()),
        }
    }

    fn fail(&self, key: &K, now: Instant) {
        let mut map = self.clear_at.lock().expect("limit lock");
        let at = map.entry(key.clone()).or_insert(now);
        *at = (*at).max(now) + self.every;
    }

    fn clear(&self, key: &K) {
        self.clear_at.lock().expect("limit lock").remove(key);
    }

    /// Forgets keys whose count is back to zero.
    fn tidy(&self, now: Instant) {
        self.clear_at
            .lock()
            .expect("limit lock")
            .retain(|_, at| *at > now);
    }

    #[cfg(test)]
    fn keys(&self) -> usize {
        self.clear_at.lock().expect("limit lock").len()
    }
}

/// (account, address) pairs that signed in, by a keyed hash (8 bytes, not the email), with
/// when they last did.
struct KnownPairs {
    hasher: RandomState,
    seen: Mutex<HashMap<u64, Instant>>,
}

/// How long a successful sign-in lets its address past the per-account limit.
const KNOWN_FOR: Duration = Duration::from_secs(30 * 24 * 3600);
/// The most pairs remembered (some 4 MB); past it the stale ones go, then all of them.
const KNOWN_MAX: usize = 100_000;

impl KnownPairs {
    fn key(&self, account: &str, address: IpAddr) -> u64 {
        self.hasher.hash_one((account, address))
    }

    fn remember(&self, account: &str, address: IpAddr, now: Instant) {
        let key = self.key(account, address);
        let mut seen = self.seen.lock().expect("known lock");
        if seen.len() >= KNOWN_MAX && !seen.contains_key(&key) {
            seen.retain(|_, at| now.duration_since(*at) < KNOWN_FOR);
            if seen.len() >= KNOWN_MAX {
                seen.clear();
            }
        }
        seen.insert(key, now);
    }

    fn knows(&self, account: &str, address: IpAddr, now: Instant) -> bool {
        let key = self.key(account, address);
        self.seen
            .lock()
            .expect("known lock")
            .get(&key)
            .is_some_and(|at| now.duration_since(*at) < KNOWN_FOR)
    }
}

pub struct LoginLimiter {
    per_pair: FailureLimit<(String, IpAddr)>,
    per_account: FailureLimit<String>,
    per_address: FailureLimit<IpAddr>,
    known: KnownPairs,
    /// `None`: sign-ups are not limited.
    signups_per_address: Option<DefaultKeyedRateLimiter<IpAddr>>,
    checks: AtomicU32,
}

/// Sign-ups one address may make at once, by default: a class behind one NAT.
pub const SIGNUP_BURST: u32 = 30;

impl Default for LoginLimiter {
    /// The sign-in limits of the module documentation; sign-ups: [`SIGNUP_BURST`] at once per
    /// address, then a third as many a minute.
    fn default() -> Self {
        Self::with_signup_burst(SIGNUP_BURST)
    }
}

/// The account as the limits know it: the email as typed, trimmed and lower-cased.
fn account_key(email: &str) -> String {
    email.trim().to_lowercase()
}

impl LoginLimiter {
    /// The default sign-in limits, and `burst` sign-ups at once per address (`0`: no limit).
    pub fn with_signup_burst(burst: u32) -> Self {
        Self {
            per_pair: FailureLimit::new(5, Duration::from_secs(12)),
            per_account: FailureLimit::new(100, Duration::from_secs(36)),
            per_address: FailureLimit::new(100, Duration::from_secs(2)),
            known: KnownPairs {
                hasher: RandomState::new(),
                seen: Mutex::default(),
            },
            signups_per_address: NonZeroU32::new(burst).map(|burst| {
                RateLimiter::keyed(
                    Quota::per_minute(NonZeroU32::new(burst.get().div_ceil(3)).unwrap())
                        .allow_burst(burst),
                )
            }),
            checks: AtomicU32::new(0),
        }
    }

    /// Forgets idle keys now and then so the maps stay small.
    fn tidy(&self, now: Instant) {
        if self.checks.fetch_add(1, Ordering::Relaxed) % 1024 == 1023 {
            self.per_pair.tidy(now);
            self.per_account.tidy(now);
            self.per_address.tidy(now);
            if let Some(signups) = &self.signups_per_address {
                signups.retain_recent();
            }
        }
    }

    /// Counts one sign-up; `Err(wait)` when the address has signed up too many accounts.
    pub fn check_signup(&self, address: Option<IpAddr>) -> Result<(), Duration> {
        self.tidy(Instant::now());
        let (Some(ip), Some(signups)) = (address, &self.signups_per_address) else {
            return Ok(());
        };
        signups
            .check_key(&ip)
            .map_err(|n| n.wait_time_from(DefaultClock::default().now()))
    }

    /// Before a password is verified: `Err(wait)` when a failure from this address on this
    /// account would be over a limit. Counts nothing; report the outcome with
    /// [`LoginLimiter::failed`] or [`LoginLimiter::succeeded`].
    pub fn check(&self, email: &str, address: Option<IpAddr>) -> Result<(), Duration> {
        self.check_at(email, address, Instant::now())
    }

    fn check_at(&self, email: &str, address: Option<IpAddr>, now: Instant) -> Result<(), Duration> {
        self.tidy(now);
        let account = account_key(email);
        if let Some(ip) = address {
            self.per_pair.check(&(account.clone(), ip), now)?;
            self.per_address.check(&ip, now)?;
            if self.known.knows(&account, ip, now) {
                return Ok(());
            }
        }
        self.per_account.check(&account, now)
    }

    /// A sign-in failed (unknown email or wrong password alike).
    pub fn failed(&self, email: &str, address: Option<IpAddr>) {
        self.failed_at(email, address, Instant::now());
    }

    fn failed_at(&self, email: &str, address: Option<IpAddr>, now: Instant) {
        let account = account_key(email);
        if let Some(ip) = address {
            self.per_pair.fail(&(account.clone(), ip), now);
            self.per_address.fail(&ip, now);
        }
        self.per_account.fail(&account, now);
    }

    /// A sign-in succeeded: its pair's failures are forgotten and the pair is remembered.
    pub fn succeeded(&self, email: &str, address: Option<IpAddr>) {
        self.succeeded_at(email, address, Instant::now());
    }

    fn succeeded_at(&self, email: &str, address: Option<IpAddr>, now: Instant) {
        let account = account_key(email);
        if let Some(ip) = address {
            self.per_pair.clear(&(account.clone(), ip));
            self.known.remember(&account, ip, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOME: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 7)));
    const ELSEWHERE: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 8)));

    #[test]
    fn sign_ups_beyond_the_burst_wait_and_other_addresses_are_not_affected() {
        let limiter = LoginLimiter::with_signup_burst(3);
        for _ in 0..3 {
            assert!(limiter.check_signup(HOME).is_ok());
        }
        let wait = limiter.check_signup(HOME).expect_err("the fourth waits");
        // A third of the burst a minute: one every 60 s.
        assert!(wait <= Duration::from_secs(60), "{wait:?}");
        assert!(limiter.check_signup(ELSEWHERE).is_ok());
    }

    const THIRD: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 9)));

    fn address(i: u32) -> Option<IpAddr> {
        Some(IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i)))
    }

    #[test]
    fn five_failures_of_one_pair_then_one_every_12_s() {
        let limiter = LoginLimiter::default();
        let t0 = Instant::now();
        for _ in 0..5 {
            assert!(limiter.check_at("ada@example.com", ELSEWHERE, t0).is_ok());
            limiter.failed_at("ada@example.com", ELSEWHERE, t0);
        }
        let wait = limiter
            .check_at("ADA@example.com ", ELSEWHERE, t0)
            .expect_err("the sixth waits");
        assert_eq!(wait, Duration::from_secs(12));
        assert!(
            limiter
                .check_at("ada@example.com", ELSEWHERE, t0 + Duration::from_secs(12))
                .is_ok()
        );
        // The owner, from their own address, is not affected.
        assert!(limiter.check_at("ada@example.com", HOME, t0).is_ok());
    }

    #[test]
    fn successes_count_nothing_and_clear_their_pairs_failures() {
        let limiter = LoginLimiter::default();
        let t0 = Instant::now();
        for i in 0..1000 {
            let email = format!("learner{i}@example.com");
            assert!(limiter.check_at(&email, HOME, t0).is_ok());
            limiter.succeeded_at(&email, HOME, t0);
        }
        for _ in 0..4 {
            limiter.failed_at("ada@example.com", HOME, t0);
        }
        limiter.succeeded_at("ada@example.com", HOME, t0);
        for _ in 0..5 {
            assert!(limiter.check_at("ada@example.com", HOME, t0).is_ok());
            limiter.failed_at("ada@example.com", HOME, t0);
        }
        assert!(limiter.check_at("ada@example.com", HOME, t0).is_err());
    }

    #[test]
    fn guesses_from_many_addresses_meet_the_account_limit_but_not_the_owners_known_address() {
        let limiter = LoginLimiter::default();
        let t0 = Instant::now();
        limiter.succeeded_at("ada@example.com", HOME, t0);
        for i in 0..100 {
            assert!(limiter.check_at("ada@example.com", address(i), t0).is_ok());
            limiter.failed_at("ada@example.com", address(i), t0);
        }
        let wait = limiter
            .check_at("ada@example.com", address(1000), t0)
            .expect_err("the 101st guess waits");
        assert_eq!(wait, Duration::from_secs(36));
        // The address the owner signed in from still may try; so may other accounts.
        assert!(limiter.check_at("ada@example.com", HOME, t0).is_ok());
        assert!(limiter.check_at("grace@example.com", THIRD, t0).is_ok());
    }

    #[test]
    fn one_address_guessing_over_many_accounts_meets_the_address_limit() {
        let limiter = LoginLimiter::default();
        let t0 = Instant::now();
        for i in 0..100 {
            let email = format!("guess{i}@example.com");
            assert!(limiter.check_at(&email, ELSEWHERE, t0).is_ok());
            limiter.failed_at(&email, ELSEWHERE, t0);
        }
        let wait = limiter
            .check_at("another@example.com", ELSEWHERE, t0)
            .expect_err("the 101st failure waits");
        assert_eq!(wait, Duration::from_secs(2));
        assert!(limiter.check_at("another@example.com", HOME, t0).is_ok());
    }

    #[test]
    fn idle_keys_are_forgotten() {
        let limiter = LoginLimiter::default();
        let t0 = Instant::now();
        limiter.failed_at("ada@example.com", HOME, t0);
        assert_eq!(limiter.per_pair.keys(), 1);
        limiter.per_pair.tidy(t0 + Duration::from_secs(13));
        assert_eq!(limiter.per_pair.keys(), 0);
    }

    #[test]
    fn a_burst_of_zero_turns_the_sign_up_limit_off() {
        let limiter = LoginLimiter::with_signup_burst(0);
        for _ in 0..1000 {
            assert!(limiter.check_signup(HOME).is_ok());
        }
    }
}
