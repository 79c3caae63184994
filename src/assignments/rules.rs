//! What a learner's policy is once their overrides and accommodations are applied. Pure: no I/O.
//!
//! # The most generous applicable rule wins
//!
//! The rules that apply to a learner in an assignment are the assignment's own policy, the
//! learner's override of that assignment (`PUT /v1/assignments/{id}/overrides/{user_id}`) and
//! the learner's accommodation in its course (`PUT /v1/courses/{id}/accommodations/{user_id}`).
//! The assignment's policy counts as a rule with multiplier 1, no extra minutes, no extra
//! attempts and its own window. Each quantity takes its most generous value over them all,
//! independently:
//!
//! - time limit = `time_limit_minutes × max(multipliers) + max(extra_minutes)`, only when the
//!   assignment is timed (an untimed assignment stays untimed; a multiplier below 1 never
//!   shortens, since the assignment's own 1 is among the rules);
//! - attempts = `attempts_allowed + max(extra_attempts)` (unlimited stays unlimited);
//! - window = the earliest `opens_at` and the latest `closes_at` among the rules (an assignment
//!   that never closes, or is always open, stays so);
//! - an attempt's deadline = `min(started_at + time limit, window close)`.
//!
//! A rule change reaches attempts in progress at once (their stored deadline is recomputed in
//! the same transaction), and never shortens a deadline the learner was shown unless the
//! instructor asks (`shorten_running` on `PATCH /v1/assignments/{id}`).

use chrono::{DateTime, Duration, Utc};

use crate::policy::Policy;

/// One override or accommodation: each part absent means "nothing extra".
#[derive(Debug, Clone, Default, PartialEq, sqlx::FromRow)]
pub struct Adjustment {
    pub time_multiplier: Option<f64>,
    pub extra_minutes: Option<i32>,
    pub extra_attempts: Option<i32>,
    pub opens_at: Option<DateTime<Utc>>,
    pub closes_at: Option<DateTime<Utc>>,
}

/// A learner's policy after every applicable rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Effective {
    pub opens_at: Option<DateTime<Utc>>,
    pub closes_at: Option<DateTime<Utc>>,
    /// `None`: unlimited.
    pub attempts_allowed: Option<u32>,
    /// `None`: untimed.
    pub time_limit: Option<Duration>,
}

/// The most generous of `policy` and `rules` (see the module's documentation).
pub fn effective(policy: &Policy, rules: &[Adjustment]) -> Effective {
    let multiplier = rules
        .iter()
        .filter_map(|r| r.time_multiplier)
        .fold(1.0_f64, f64::max);
    let extra_minutes = rules
        .iter()
        .filter_map(|r| r.extra_minutes)
        .fold(0, i32::max);
    let extra_attempts = rules
        .iter()
        .filter_map(|r| r.extra_attempts)
        .fold(0, i32::max);
    let opens_at = policy.opens_at.map(|own| {
        rules
            .iter()
            .filter_map(|r| r.opens_at)
            .fold(own, DateTime::min)
    });
    let closes_at = policy.closes_at.map(|own| {
        rules
            .iter()
            .filter_map(|r| r.closes_at)
            .fold(own, DateTime::max)
    });
    Effective {
        opens_at,
        closes_at,
        attempts_allowed: policy
            .attempts_allowed
            .map(|n| n.saturating_add(extra_attempts.max(0) as u32)),
        time_limit: policy.time_limit_minutes.map(|m| {
            let ms = (f64::from(m) * multiplier * 60_000.0).round() as i64;
            Duration::milliseconds(ms) + Duration::minutes(i64::from(extra_minutes))
        }),
    }
}

impl Effective {
    /// The deadline of an attempt started at `started_at` under these rules.
    pub fn deadline(&self, started_at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let limit = self.time_limit.map(|l| started_at + l);
        match (limit, self.closes_at) {
            (Some(l), Some(c)) => Some(l.min(c)),
            (l, c) => l.or(c),
        }
    }
}

/// What a learner has done in an assignment, as far as what they may still do there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Attempts started, finished or not.
    pub used: u32,
    /// An attempt of theirs is unfinished and before its deadline.
    pub running: bool,
    /// The assignment and its course take new attempts (neither is archived).
    pub taking: bool,
}

impl Effective {
    /// Whether the learner may still start an attempt (now or once their window opens) or
    /// continue one: what `after_close` waits for.
    pub fn may_go_on(&self, p: Progress, now: DateTime<Utc>) -> bool {
        p.running || (p.taking && !self.closed(now) && self.attempts_left(p.used))
    }

    /// Whether the learner sits the assignment now: an attempt running, or the window open
    /// for them with an attempt left. Its quiz's practice is closed to them meanwhile.
    pub fn sitting(&self, p: Progress, now: DateTime<Utc>) -> bool {
        p.running
            || (p.taking
                && self.opens_at.is_none_or(|o| now >= o)
                && !self.closed(now)
                && self.attempts_left(p.used))
    }

    fn closed(&self, now: DateTime<Utc>) -> bool {
        self.closes_at.is_some_and(|c| now >= c)
    }

    fn attempts_left(&self, used: u32) -> bool {
        self.attempts_allowed.is_none_or(|n| used < n)
    }
}

/// The deadline a running attempt gets when the rules change: the new one, but never earlier
/// than the one it has (no deadline is the latest of all) unless `shorten` says so.
pub fn adjusted_deadline(
    current: Option<DateTime<Utc>>,
    computed: Option<DateTime<Utc>>,
    shorten: bool,
) -> Option<DateTime<Utc>> {
    if shorten {
        return computed;
    }
    match (current, computed) {
        (Some(a), Some(b)) => Some(a.max(b)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(h: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + Duration::hours(h)
    }

    fn timed(minutes: u32) -> Policy {
        Policy {
            time_limit_minutes: Some(minutes),
            attempts_allowed: Some(1),
            opens_at: Some(at(10)),
            closes_at: Some(at(20)),
            ..Policy::default()
        }
    }

    #[test]
    fn without_rules_the_policy_is_the_policy() {
        let e = effective(&timed(60), &[]);
        assert_eq!(e.time_limit, Some(Duration::minutes(60)));
        assert_eq!(e.attempts_allowed, Some(1));
        assert_eq!((e.opens_at, e.closes_at), (Some(at(10)), Some(at(20))));
        assert_eq!(e.deadline(at(11)), Some(at(12)));
        assert_eq!(
            e.deadline(at(19)),
            Some(at(20)),
            "the close bounds the attempt"
        );
    }

    #[test]
    fn each_quantity_takes_its_most_generous_value_across_rules() {
        let rules = [
            Adjustment {
                time_multiplier: Some(1.5),
                extra_minutes: Some(5),
                closes_at: Some(at(21)),
                ..Adjustment::default()
            },
            Adjustment {
                time_multiplier: Some(1.25),
                extra_minutes: Some(10),
                extra_attempts: Some(2),
                opens_at: Some(at(9)),
                closes_at: Some(at(19)),
            },
        ];
        let e = effective(&timed(60), &rules);
        assert_eq!(e.time_limit, Some(Duration::minutes(60 * 3 / 2 + 10)));
        assert_eq!(e.attempts_allowed, Some(3));
        assert_eq!((e.opens_at, e.closes_at), (Some(at(9)), Some(at(21))));
    }

    #[test]
    fn no_rule_makes_a_learner_worse_off_than_the_assignment() {
        let rules = [Adjustment {
            time_multiplier: Some(0.5),
            opens_at: Some(at(12)),
            closes_at: Some(at(15)),
            ..Adjustment::default()
        }];
        let e = effective(&timed(60), &rules);
        assert_eq!(e.time_limit, Some(Duration::minutes(60)));
        assert_eq!((e.opens_at, e.closes_at), (Some(at(10)), Some(at(20))));
        // Untimed, unlimited, always open stays so.
        let e = effective(&Policy::default(), &rules);
        assert_eq!(
            e,
            Effective {
                opens_at: None,
                closes_at: None,
                attempts_allowed: None,
                time_limit: None
            }
        );
        assert_eq!(e.deadline(at(11)), None);
    }

    #[test]
    fn a_learner_sits_an_assignment_while_open_to_them_with_an_attempt_left_or_running() {
        let e = effective(&timed(60), &[]);
        let p = |used, running, taking| Progress {
            used,
            running,
            taking,
        };
        let fresh = p(0, false, true);
        assert!(!e.sitting(fresh, at(9)), "not open yet");
        assert!(e.may_go_on(fresh, at(9)), "but they may start later");
        assert!(e.sitting(fresh, at(11)) && e.may_go_on(fresh, at(11)));
        assert!(
            !e.sitting(fresh, at(20)) && !e.may_go_on(fresh, at(20)),
            "closed"
        );
        let done = p(1, false, true);
        assert!(
            !e.sitting(done, at(11)) && !e.may_go_on(done, at(11)),
            "no attempt left"
        );
        let running = p(1, true, true);
        assert!(e.sitting(running, at(21)) && e.may_go_on(running, at(21)));
        let archived = p(0, false, false);
        assert!(!e.sitting(archived, at(11)) && !e.may_go_on(archived, at(11)));
        // An extension: a later close and an extra attempt.
        let extended = effective(
            &timed(60),
            &[Adjustment {
                closes_at: Some(at(30)),
                extra_attempts: Some(1),
                ..Adjustment::default()
            }],
        );
        assert!(extended.sitting(done, at(25)) && extended.may_go_on(done, at(25)));
        // Unlimited attempts, no close: always.
        let open = effective(&Policy::default(), &[]);
        assert!(open.sitting(p(50, false, true), at(1_000)));
    }

    #[test]
    fn a_running_deadline_moves_later_only_unless_shortening_is_asked_for() {
        assert_eq!(
            adjusted_deadline(Some(at(2)), Some(at(3)), false),
            Some(at(3))
        );
        assert_eq!(
            adjusted_deadline(Some(at(3)), Some(at(2)), false),
            Some(at(3))
        );
        assert_eq!(
            adjusted_deadline(Some(at(3)), Some(at(2)), true),
            Some(at(2))
        );
        assert_eq!(adjusted_deadline(None, Some(at(2)), false), None);
        assert_eq!(adjusted_deadline(None, Some(at(2)), true), Some(at(2)));
        assert_eq!(adjusted_deadline(Some(at(2)), None, false), None);
    }
}
