//! Login rate limits, per account and per client address.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

pub struct LoginLimiter {
    per_account: DefaultKeyedRateLimiter<String>,
    per_address: DefaultKeyedRateLimiter<IpAddr>,
    checks: AtomicU32,
}

impl Default for LoginLimiter {
    /// 5 attempts a minute per account (then one every 12 s); 20 a minute per address.
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
            checks: AtomicU32::new(0),
        }
    }

    /// Counts one login attempt; `Err(wait)` when either limit is exceeded.
    pub fn check(&self, email: &str, address: Option<IpAddr>) -> Result<(), Duration> {
        // Forget idle keys now and then so the maps stay small.
        if self.checks.fetch_add(1, Ordering::Relaxed) % 1024 == 1023 {
            self.per_account.retain_recent();
            self.per_address.retain_recent();
        }
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
