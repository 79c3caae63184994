//! Rate limits on passwords being tried and hashed: sign-ins per account and per client
//! address, sign-ups per client address.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

pub struct LoginLimiter {
    per_account: DefaultKeyedRateLimiter<String>,
    per_address: DefaultKeyedRateLimiter<IpAddr>,
    signups_per_address: DefaultKeyedRateLimiter<IpAddr>,
    checks: AtomicU32,
}

impl Default for LoginLimiter {
    /// 5 sign-in attempts a minute per account (then one every 12 s); 20 a minute per address.
    /// Sign-ups: 30 at once per address (a class behind one NAT), then 10 a minute.
    fn default() -> Self {
        Self::new(
            Quota::per_minute(NonZeroU32::new(5).unwrap()),
            Quota::per_minute(NonZeroU32::new(20).unwrap()),
        )
    }
}

impl LoginLimiter {
    pub fn new(account: Quota, address: Quota) -> Self {
        Self {
            per_account: RateLimiter::keyed(account),
            per_address: RateLimiter::keyed(address),
            signups_per_address: RateLimiter::keyed(
                Quota::per_minute(NonZeroU32::new(10).unwrap())
                    .allow_burst(NonZeroU32::new(30).unwrap()),
            ),
            checks: AtomicU32::new(0),
        }
    }

    /// Forgets idle keys now and then so the maps stay small.
    fn tidy(&self) {
        if self.checks.fetch_add(1, Ordering::Relaxed) % 1024 == 1023 {
            self.per_account.retain_recent();
            self.per_address.retain_recent();
            self.signups_per_address.retain_recent();
        }
    }

    /// Counts one sign-up; `Err(wait)` when the address has signed up too many accounts.
    pub fn check_signup(&self, address: Option<IpAddr>) -> Result<(), Duration> {
        self.tidy();
        let Some(ip) = address else {
            return Ok(());
        };
        self.signups_per_address
            .check_key(&ip)
            .map_err(|n| n.wait_time_from(DefaultClock::default().now()))
    }

    /// Counts one login attempt; `Err(wait)` when either limit is exceeded.
    pub fn check(&self, email: &str, address: Option<IpAddr>) -> Result<(), Duration> {
        self.tidy();
        let now = DefaultClock::default().now();
        if let Some(ip) = address {
            self.per_address
                .check_key(&ip)
                .map_err(|n| n.wait_time_from(now))?;
        }
        self.per_account
            .check_key(&email.trim().to_lowercase())
            .map_err(|n| n.wait_time_from(now))
    }
}
