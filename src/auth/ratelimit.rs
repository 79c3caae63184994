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
//!   has signed in from before (remembered for 30 days), so distributed guessers cannot lock
//!   the owner out of their usual address either.
//! - per client address, across accounts: 100 failures, then one every 2 s. Successes are not
//!   counted, so a class of hundreds behind one NAT signs in without a `429`, while one
//!   address cannot spray guesses over many accounts.
//!
//! A successful sign-in clears its (account, address) failures.
//!
//! The counts live in PostgreSQL (`sign_in_limits`, migration 0018), so every quizd instance
//! on one database enforces the same limits: guesses spread over instances meet `429` at the
//! same try as on one. Each count is the generic cell rate algorithm's one instant per key
//! (when the count is back to zero). The sign-in path costs:
//!
//! - one statement before the password is verified, the one that looks the account up: it
//!   reads the keys' instants and the database's clock with it ([`Standing`]);
//! - after a failure, one upsert of the three counts (which also deletes a few expired rows:
//!   the table holds the live keys and not many more);
//! - after a success, nothing, unless the pair had failures to clear or was last remembered
//!   more than a day ago (then one statement).
//!
//! The check reads the counts and a failure is counted after the hash, as in memory before:
//! guesses verified at the same moment (bounded by each instance's hashing queue, see
//! `password::off_the_workers`) may pass one check together, and then are all counted, so the
//! wait after them is that much longer: the rate holds, whichever instances the guesses reach.
//! Keys are keyed hashes (HMAC-SHA256, its key derived from the access-token secret, which
//! every instance shares), so the table holds no email and no address.
//!
//! Sign-ups are limited per client address (a burst for a class, then a third as many a
//! minute), in the same table and by the same algorithm: one statement checks and counts a
//! sign-up at once, so instances share that limit too.

use std::net::IpAddr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;

use super::store;
use crate::attempts::shuffle::hmac_sha256;

/// Failures (or sign-ups) allowed at once, and then one every `every`, per key.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub burst: u32,
    pub every: Duration,
}

impl Rule {
    /// How far ahead of now a key's instant may be for one more to be allowed.
    pub fn tolerance(self) -> Duration {
        self.every * (self.burst - 1)
    }

    /// `Err(wait)` when a failure at `now` would be over the limit, for a key whose count is
    /// back to zero at `until` (the generic cell rate algorithm: `burst - 1` intervals of
    /// tolerance).
    fn check(self, until: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Result<(), Duration> {
        let Some(until) = until else { return Ok(()) };
        let tolerance = self.tolerance();
        match (until - now).to_std() {
            Ok(ahead) if ahead > tolerance => Err(ahead - tolerance),
            _ => Ok(()),
        }
    }
}

/// Per (account, client address).
pub const PER_PAIR: Rule = Rule {
    burst: 5,
    every: Duration::from_secs(12),
};
/// Per account, from all addresses: 100 an hour.
pub const PER_ACCOUNT: Rule = Rule {
    burst: 100,
    every: Duration::from_secs(36),
};
/// Per client address, over all accounts.
pub const PER_ADDRESS: Rule = Rule {
    burst: 100,
    every: Duration::from_secs(2),
};
/// How long a successful sign-in lets its address past the per-account limit.
pub const KNOWN_FOR: Duration = Duration::from_secs(30 * 24 * 3600);
/// A known pair's row is written again when it was last written longer ago than this.
const KNOWN_REFRESH: Duration = Duration::from_secs(24 * 3600);

/// The keys of one sign-in, each a 16-byte keyed hash; the address's and the pair's are
/// `None` without a client address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    pub pair: Option<[u8; 16]>,
    pub account: [u8; 16],
    pub address: Option<[u8; 16]>,
}

/// What the database holds for one sign-in's keys, read with the account, and its clock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Standing {
    pub now: DateTime<Utc>,
    pub pair: Option<DateTime<Utc>>,
    pub account: Option<DateTime<Utc>>,
    pub address: Option<DateTime<Utc>>,
    /// Until when the pair is known (it signed in within [`KNOWN_FOR`]).
    pub known: Option<DateTime<Utc>>,
}

impl Standing {
    /// Pure: `Err(wait)` when a failure now would be over a limit: the pair's, the address's,
    /// then (unless the pair is known) the account's.
    pub fn check(&self) -> Result<(), Duration> {
        PER_PAIR.check(self.pair, self.now)?;
        PER_ADDRESS.check(self.address, self.now)?;
        if self.known.is_some_and(|until| until > self.now) {
            return Ok(());
        }
        PER_ACCOUNT.check(self.account, self.now)
    }

    /// Pure: whether a success must write (the pair has failures to clear, or is not known
    /// or was remembered more than a day ago).
    fn success_writes(&self) -> bool {
        let failing = self.pair.is_some_and(|until| until > self.now);
        let fresh = self.known.is_some_and(|until| {
            (until - self.now)
                .to_std()
                .is_ok_and(|left| left + KNOWN_REFRESH > KNOWN_FOR)
        });
        failing || !fresh
    }
}

pub struct LoginLimiter {
    /// The key of the keys' hashes.
    key: [u8; 32],
    /// Sign-ups per client address; `None`: not limited.
    signups: Option<Rule>,
}

/// Sign-ups one address may make at once, by default: a class behind one NAT.
pub const SIGNUP_BURST: u32 = 30;

/// The account as the limits know it: the email as typed, trimmed and lower-cased.
fn account_key(email: &str) -> String {
    email.trim().to_lowercase()
}

impl LoginLimiter {
    /// The sign-in limits of the module documentation, their keys hashed with a key derived
    /// from `secret` (the access-token secret: every instance has the same); `burst` sign-ups
    /// at once per address, then a third as many a minute (`0`: no limit).
    pub fn new(secret: &[u8], burst: u32) -> Self {
        Self {
            key: hmac_sha256(secret, b"quizd sign-in limits"),
            signups: (burst > 0).then(|| Rule {
                burst,
                every: Duration::from_secs(60) / burst.div_ceil(3),
            }),
        }
    }

    /// A key of another count kept by the same algorithm (live-session joins): the keyed
    /// hash of `parts`, so the table holds no address or account id.
    pub fn key(&self, parts: &[&[u8]]) -> [u8; 16] {
        self.hash(parts)
    }

    fn hash(&self, parts: &[&[u8]]) -> [u8; 16] {
        let mut message = Vec::new();
        for part in parts {
            // Length-prefixed, so that no two lists of parts are the same bytes.
            message.extend_from_slice(&(part.len() as u32).to_be_bytes());
            message.extend_from_slice(part);
        }
        let mac = hmac_sha256(&self.key, &message);
        mac[..16].try_into().expect("16 of 32 bytes")
    }

    /// The keys of a sign-in to `email`'s account from `address`.
    pub fn keys(&self, email: &str, address: Option<IpAddr>) -> Keys {
        let account = account_key(email);
        let ip = address.map(|ip| ip.to_string());
        Keys {
            pair: ip
                .as_ref()
                .map(|ip| self.hash(&[b"pair", account.as_bytes(), ip.as_bytes()])),
            account: self.hash(&[b"account", account.as_bytes()]),
            address: ip
                .as_ref()
                .map(|ip| self.hash(&[b"address", ip.as_bytes()])),
        }
    }

    /// Counts the outcome of a password verified under `standing`: a failure against all three
    /// keys; a success clears its pair's failures and remembers the pair (only when needed).
    pub async fn record(
        &self,
        db: impl PgExecutor<'_>,
        keys: &Keys,
        standing: &Standing,
        ok: bool,
    ) -> Result<(), sqlx::Error> {
        match (ok, keys.pair) {
            (false, _) => store::count_sign_in_failure(db, keys).await,
            (true, Some(pair)) if standing.success_writes() => {
                store::remember_sign_in(db, &pair).await
            }
            (true, _) => Ok(()),
        }
    }

    /// Counts one sign-up from `address`, checked and counted in one statement;
    /// `Ok(Err(wait))` when the address has signed up too many accounts (nothing is counted).
    pub async fn check_signup(
        &self,
        db: impl PgExecutor<'_>,
        address: Option<IpAddr>,
    ) -> Result<Result<(), Duration>, sqlx::Error> {
        let (Some(ip), Some(rule)) = (address, self.signups) else {
            return Ok(Ok(()));
        };
        let key = self.hash(&[b"signup", ip.to_string().as_bytes()]);
        Ok(match store::count_sign_up(db, &key, rule).await? {
            None => Ok(()),
            // The instant read may predate a sign-up counted at the same moment: wait at least 1 s.
            Some((until, now)) => Err(rule
                .check(Some(until), now)
                .err()
                .unwrap_or(Duration::from_secs(1))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOME: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 7)));
    const ELSEWHERE: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 8)));

    fn t0() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    fn secs(s: i64) -> chrono::Duration {
        chrono::Duration::seconds(s)
    }

    /// Where a key's instant stands after `n` failures at `now`, from zero.
    fn after(rule: Rule, n: u32, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        (n > 0).then(|| now + chrono::Duration::from_std(rule.every * n).unwrap())
    }

    #[test]
    fn the_sign_up_rule_is_the_burst_then_a_third_as_many_a_minute() {
        let rule = LoginLimiter::new(b"secret", 30).signups.unwrap();
        assert_eq!((rule.burst, rule.every), (30, Duration::from_secs(6)));
        let rule = LoginLimiter::new(b"secret", 3).signups.unwrap();
        assert_eq!((rule.burst, rule.every), (3, Duration::from_secs(60)));
        assert!(LoginLimiter::new(b"secret", 0).signups.is_none());
    }

    #[test]
    fn five_failures_of_one_pair_then_one_every_12_s() {
        let now = t0();
        for n in 0..5 {
            let standing = Standing {
                now,
                pair: after(PER_PAIR, n, now),
                ..Standing::default()
            };
            assert!(standing.check().is_ok(), "failure {}", n + 1);
        }
        let mut standing = Standing {
            now,
            pair: after(PER_PAIR, 5, now),
            ..Standing::default()
        };
        assert_eq!(standing.check(), Err(Duration::from_secs(12)));
        standing.now = now + secs(12);
        assert!(standing.check().is_ok());
    }

    #[test]
    fn the_account_limit_does_not_refuse_a_known_pair_and_the_others_still_do() {
        let now = t0();
        let guessed = Standing {
            now,
            account: after(PER_ACCOUNT, 100, now),
            ..Standing::default()
        };
        assert_eq!(guessed.check(), Err(Duration::from_secs(36)));
        let known = Standing {
            known: Some(now + secs(3600)),
            ..guessed.clone()
        };
        assert!(known.check().is_ok());
        let forgotten = Standing {
            known: Some(now - secs(1)),
            ..guessed.clone()
        };
        assert!(forgotten.check().is_err());
        // A known pair still meets its own limit and its address's.
        let pair = Standing {
            pair: after(PER_PAIR, 5, now),
            ..known.clone()
        };
        assert!(pair.check().is_err());
        let address = Standing {
            address: after(PER_ADDRESS, 100, now),
            ..known
        };
        assert_eq!(address.check(), Err(Duration::from_secs(2)));
    }

    #[test]
    fn a_success_writes_only_to_clear_failures_or_to_remember_the_pair_again() {
        let now = t0();
        let remembered = Standing {
            now,
            known: Some(now + chrono::Duration::from_std(KNOWN_FOR).unwrap() - secs(60)),
            ..Standing::default()
        };
        assert!(!remembered.success_writes());
        let expired_failures = Standing {
            pair: Some(now - secs(1)),
            ..remembered.clone()
        };
        assert!(!expired_failures.success_writes());
        let failing = Standing {
            pair: Some(now + secs(1)),
            ..remembered.clone()
        };
        assert!(failing.success_writes());
        let stale = Standing {
            known: Some(now + secs(3600)),
            ..remembered
        };
        assert!(stale.success_writes());
        assert!(Standing::default().success_writes());
    }

    #[test]
    fn keys_are_the_same_for_every_spelling_of_an_account_and_differ_by_address_and_secret() {
        let limiter = LoginLimiter::new(b"secret", 0);
        let keys = limiter.keys("ada@example.com", HOME);
        assert_eq!(keys, limiter.keys("  ADA@Example.com\t", HOME));
        let elsewhere = limiter.keys("ada@example.com", ELSEWHERE);
        assert_eq!(keys.account, elsewhere.account);
        assert_ne!(keys.pair, elsewhere.pair);
        assert_ne!(keys.address, elsewhere.address);
        assert_ne!(
            keys,
            LoginLimiter::new(b"other", 0).keys("ada@example.com", HOME)
        );
        let nowhere = limiter.keys("ada@example.com", None);
        assert_eq!((nowhere.pair, nowhere.address), (None, None));
    }
}
