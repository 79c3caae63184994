//! A live session's state machine, pure: which question is open, until when, and what each
//! step is allowed to do, by the server's clock. The state itself lives in PostgreSQL
//! (`live_sessions`); `live::store` reads it into a [`Snapshot`] and writes what a step
//! decided, on condition that nobody stepped meanwhile.

use chrono::{DateTime, Duration, Utc};
use rand::Rng;

/// The join code's alphabet: digits and capitals without 0/O, 1/I/L (read off a projector
/// and typed on a phone).
pub const CODE_ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";
pub const CODE_LEN: usize = 6;
/// How long a code joins a session that was never ended.
pub const CODE_HOURS: i64 = 6;
/// A question's timer, in seconds.
pub const MIN_SECONDS: u32 = 5;
pub const MAX_SECONDS: u32 = 600;

/// A fresh join code: 6 characters of [`CODE_ALPHABET`] (31⁶ ≈ 887 million codes).
pub fn new_code(rng: &mut impl Rng) -> String {
    (0..CODE_LEN)
        .map(|_| char::from(CODE_ALPHABET[rng.random_range(0..CODE_ALPHABET.len())]))
        .collect()
}

/// A code as typed (spaces, dashes, lower case allowed), normalized; `None` when it cannot be
/// a code, which is refused without looking anything up. Bounded: long input is refused
/// before any work.
pub fn normalize_code(typed: &str) -> Option<String> {
    if typed.len() > 32 {
        return None;
    }
    let code: String = typed
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    (code.len() == CODE_LEN && code.bytes().all(|b| CODE_ALPHABET.contains(&b))).then_some(code)
}

/// A session as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// How many questions the session's quiz version has.
    pub question_count: usize,
    /// The question shown now or last; `None` before the first.
    pub index: Option<usize>,
    pub closes_at: Option<DateTime<Utc>>,
    pub ended: bool,
}

/// Where a session stands at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Joined learners wait for the first question.
    Lobby,
    /// Question `index` takes answers until `closes_at`.
    Open {
        index: usize,
        closes_at: DateTime<Utc>,
    },
    /// Question `index` was closed (early, or its timer ran out): its distribution shows.
    Closed {
        index: usize,
    },
    Ended,
}

/// Why a step is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Ended,
    QuestionOpen,
    NoMoreQuestions,
    InvalidTimer,
    /// Closing when no question is open.
    NothingOpen,
    /// An answer to a question that is not open now.
    QuestionClosed,
}

/// How far a session has shown the quiz to its learners: the first `opened` of the version's
/// questions (a session opens them in the content's order) have been shown, and the key of the
/// first `revealed`. A question is revealed when it closes (early, or its timer runs out), or
/// when the session ends while it is open; one never opened is never shown, not even after
/// the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub opened: usize,
    pub revealed: usize,
}

/// What opening the next question writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opening {
    pub index: usize,
    pub opened_at: DateTime<Utc>,
    pub closes_at: DateTime<Utc>,
}

impl Snapshot {
    pub fn phase(&self, now: DateTime<Utc>) -> Phase {
        match (self.ended, self.index, self.closes_at) {
            (true, _, _) => Phase::Ended,
            (false, Some(index), Some(closes_at)) if now < closes_at => {
                Phase::Open { index, closes_at }
            }
            (false, Some(index), _) => Phase::Closed { index },
            (false, None, _) => Phase::Lobby,
        }
    }

    /// How far the session has gone at `now`.
    pub fn progress(&self, now: DateTime<Utc>) -> Progress {
        let (opened, revealed) = match self.phase(now) {
            Phase::Lobby => (0, 0),
            Phase::Open { index, .. } => (index + 1, index),
            Phase::Closed { index } => (index + 1, index + 1),
            Phase::Ended => {
                let shown = self.index.map_or(0, |i| i + 1);
                (shown, shown)
            }
        };
        Progress { opened, revealed }
    }

    /// Opens the next question for `seconds`.
    pub fn open_next(&self, now: DateTime<Utc>, seconds: u32) -> Result<Opening, Refusal> {
        if !(MIN_SECONDS..=MAX_SECONDS).contains(&seconds) {
            return Err(Refusal::InvalidTimer);
        }
        let index = match self.phase(now) {
            Phase::Ended => return Err(Refusal::Ended),
            Phase::Open { .. } => return Err(Refusal::QuestionOpen),
            Phase::Lobby => 0,
            Phase::Closed { index } => index + 1,
        };
        if index >= self.question_count {
            return Err(Refusal::NoMoreQuestions);
        }
        Ok(Opening {
            index,
            opened_at: now,
            closes_at: now + Duration::seconds(i64::from(seconds)),
        })
    }

    /// Closes the open question now; its new `closes_at`.
    pub fn close(&self, now: DateTime<Utc>) -> Result<DateTime<Utc>, Refusal> {
        match self.phase(now) {
            Phase::Open { .. } => Ok(now),
            Phase::Ended => Err(Refusal::Ended),
            _ => Err(Refusal::NothingOpen),
        }
    }

    /// Whether an answer to question `index` is taken now.
    pub fn accepts(&self, index: usize, now: DateTime<Utc>) -> Result<(), Refusal> {
        match self.phase(now) {
            Phase::Open { index: open, .. } if open == index => Ok(()),
            Phase::Ended => Err(Refusal::Ended),
            _ => Err(Refusal::QuestionClosed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t0() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    fn lobby(count: usize) -> Snapshot {
        Snapshot {
            question_count: count,
            index: None,
            closes_at: None,
            ended: false,
        }
    }

    fn apply(s: Snapshot, o: Opening) -> Snapshot {
        Snapshot {
            index: Some(o.index),
            closes_at: Some(o.closes_at),
            ..s
        }
    }

    #[test]
    fn questions_open_one_after_another_each_until_its_timer_runs_out() {
        let now = t0();
        let s = lobby(2);
        assert_eq!(s.phase(now), Phase::Lobby);
        let first = s.open_next(now, 20).unwrap();
        assert_eq!(first.index, 0);
        let s = apply(s, first);
        assert_eq!(
            s.phase(now + Duration::seconds(19)),
            Phase::Open {
                index: 0,
                closes_at: now + Duration::seconds(20)
            }
        );
        assert_eq!(s.open_next(now, 20), Err(Refusal::QuestionOpen));
        let later = now + Duration::seconds(20);
        assert_eq!(s.phase(later), Phase::Closed { index: 0 });
        let s = apply(s, s.open_next(later, 20).unwrap());
        assert_eq!(s.index, Some(1));
        let end = later + Duration::seconds(20);
        assert_eq!(s.open_next(end, 20), Err(Refusal::NoMoreQuestions));
    }

    #[test]
    fn answers_are_taken_only_for_the_open_question_before_its_timer() {
        let now = t0();
        let s = apply(lobby(3), lobby(3).open_next(now, 10).unwrap());
        assert_eq!(s.accepts(0, now + Duration::seconds(9)), Ok(()));
        assert_eq!(
            s.accepts(0, now + Duration::seconds(10)),
            Err(Refusal::QuestionClosed)
        );
        assert_eq!(s.accepts(1, now), Err(Refusal::QuestionClosed));
        assert_eq!(lobby(3).accepts(0, now), Err(Refusal::QuestionClosed));
        let ended = Snapshot { ended: true, ..s };
        assert_eq!(ended.accepts(0, now), Err(Refusal::Ended));
    }

    #[test]
    fn closing_early_needs_an_open_question_and_ending_stops_everything() {
        let now = t0();
        assert_eq!(lobby(1).close(now), Err(Refusal::NothingOpen));
        let s = apply(lobby(1), lobby(1).open_next(now, 30).unwrap());
        let at = now + Duration::seconds(3);
        assert_eq!(s.close(at), Ok(at));
        let closed = Snapshot {
            closes_at: Some(at),
            ..s
        };
        assert_eq!(closed.phase(at), Phase::Closed { index: 0 });
        assert_eq!(closed.close(at), Err(Refusal::NothingOpen));
        let ended = Snapshot { ended: true, ..s };
        assert_eq!(ended.phase(now), Phase::Ended);
        assert_eq!(ended.open_next(now, 30), Err(Refusal::Ended));
        assert_eq!(ended.close(now), Err(Refusal::Ended));
    }

    #[test]
    fn a_question_is_shown_once_opened_and_revealed_once_closed_or_the_session_ends() {
        let now = t0();
        let progress = |opened, revealed| Progress { opened, revealed };
        assert_eq!(lobby(3).progress(now), progress(0, 0));
        let s = apply(lobby(3), lobby(3).open_next(now, 10).unwrap());
        assert_eq!(s.progress(now), progress(1, 0));
        let later = now + Duration::seconds(10);
        assert_eq!(s.progress(later), progress(1, 1), "its timer ran out");
        let s = apply(s, s.open_next(later, 10).unwrap());
        assert_eq!(s.progress(later), progress(2, 1));
        let ended = Snapshot { ended: true, ..s };
        assert_eq!(
            ended.progress(later),
            progress(2, 2),
            "ended while the second was open: the third was never shown"
        );
        let never = Snapshot {
            ended: true,
            ..lobby(3)
        };
        assert_eq!(never.progress(now), progress(0, 0));
    }

    #[test]
    fn a_timer_must_be_5_to_600_seconds() {
        let now = t0();
        assert_eq!(lobby(1).open_next(now, 4), Err(Refusal::InvalidTimer));
        assert_eq!(lobby(1).open_next(now, 601), Err(Refusal::InvalidTimer));
        assert!(lobby(1).open_next(now, 5).is_ok());
        assert!(lobby(1).open_next(now, 600).is_ok());
    }

    #[test]
    fn codes_use_the_unambiguous_alphabet_and_typed_codes_are_normalized() {
        let mut rng = rand::rng();
        for _ in 0..100 {
            let code = new_code(&mut rng);
            assert_eq!(normalize_code(&code), Some(code.clone()));
        }
        assert_eq!(normalize_code(" abc-def "), Some("ABCDEF".into()));
        assert_eq!(normalize_code("ABCDE0"), None);
        assert_eq!(normalize_code("ABCDEFG"), None);
        assert_eq!(normalize_code("ÄBCDEF"), None);
        assert_eq!(normalize_code(&"A".repeat(10_000)), None);
        assert_eq!(normalize_code(""), None);
    }
}
