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
    /// `None`: sign-ups are not limited.
    signups_per_address: Option<DefaultKeyedRateLimiter<IpAddr>>,
    checks: AtomicU32,
}

/// Sign-ups one address may make at once, by default: a class behind one NAT.
pub const SIGNUP_BURST: u32 = 30;

impl Default for LoginLimiter {
    /// 5 sign-in attempts a minute per account (then one every 12 s); 20 a minute per address.
    /// Sign-ups: [`SIGNUP_BURST`] at once per address, then a third as many a minute.
    fn default() -> Self {
        Self::with_signup_burst(SIGNUP_BURST)
    }
}

impl LoginLimiter {
    /// The default sign-in limits, and `burst` sign-ups at once per address (`0`: no limit).
    pub fn with_signup_burst(burst: u32) -> Self {
        Self::new(
            Quota::per_minute(NonZeroU32::new(5).unwrap()),
            Quota::per_minute(NonZeroU32::new(20).unwrap()),
            NonZeroU32::new(burst).map(|burst| {
                Quota::per_minute(NonZeroU32::new(burst.get().div_ceil(3)).unwrap())
                    .allow_burst(burst)
            }),
        )
    }

    pub fn new(account: Quota, address: Quota, signups: Option<Quota>) -> Self {
        Self {
            per_account: RateLimiter::keyed(account),
            per_address: RateLimiter::keyed(address),
            signups_per_address: signups.map(RateLimiter::keyed),
            checks: AtomicU32::new(0),
        }
    }

    /// Forgets idle keys now and then so the maps stay small.
    fn tidy(&self) {
        if self.checks.fetch_add(1, Ordering::Relaxed) % 1024 == 1023 {
            self.per_account.retain_recent();
            self.per_address.retain_recent();
            if let Some(signups) = &self.signups_per_address {
                signups.retain_recent();
            }
        }
    }

    /// Counts one sign-up; `Err(wait)` when the address has signed up too many accounts.
    pub fn check_signup(&self, address: Option<IpAddr>) -> Result<(), Duration> {
        self.tidy();
        let (Some(ip), Some(signups)) = (address, &self.signups_per_address) else {
            return Ok(());
        };
        signups
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

    #[test]
    fn a_burst_of_zero_turns_the_sign_up_limit_off() {
        let limiter = LoginLimiter::with_signup_burst(0);
        for _ in 0..1000 {
            assert!(limiter.check_signup(HOME).is_ok());
        }
    }
}
