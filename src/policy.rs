//! What a policy lets a learner see, and when. The policy itself is the content files' type
//! (`quizd_content::policy`), re-exported here.

use chrono::{DateTime, Utc};

pub use quizd_content::policy::{FeedbackTiming, GradingMethod, Navigation, Policy};

/// How much of the judgement a learner may see at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reveal {
    /// Nothing about correctness.
    Nothing,
    /// Correctness, the right answer and the explanation of the questions answered so far.
    Answered,
    /// All of it, for every question.
    All,
}

/// What `after_close` waits for, for one learner in one assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnClose {
    /// Their own close: the latest of the assignment's, their override's and their
    /// accommodation's; absent: the assignment never closes.
    pub closes_at: Option<DateTime<Utc>>,
    /// Whether they may still start an attempt (one left, before their close) or continue one.
    pub may_go_on: bool,
}

impl OwnClose {
    /// Whether the assignment is over for them: their close has passed (or there is none) and
    /// they can neither start nor continue an attempt.
    pub fn passed(&self, now: DateTime<Utc>) -> bool {
        !self.may_go_on && self.closes_at.is_none_or(|c| now >= c)
    }
}

/// What the feedback timing allows a learner to see now, by the server's clock. `own_close`:
/// where the learner stands for `after_close`; `None` (not known) reveals nothing under it.
pub fn reveal(
    feedback: FeedbackTiming,
    finished: bool,
    own_close: Option<OwnClose>,
    now: DateTime<Utc>,
) -> Reveal {
    match feedback {
        FeedbackTiming::Immediate if finished => Reveal::All,
        FeedbackTiming::Immediate => Reveal::Answered,
        FeedbackTiming::OnFinish if finished => Reveal::All,
        FeedbackTiming::AfterClose if finished && own_close.is_some_and(|c| c.passed(now)) => {
            Reveal::All
        }
        _ => Reveal::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_timing_reveals_when_it_promises_and_not_before() {
        let now = Utc::now();
        let later = now + chrono::Duration::hours(1);
        use FeedbackTiming::*;
        let closing = |at, may_go_on| {
            Some(OwnClose {
                closes_at: at,
                may_go_on,
            })
        };
        assert_eq!(reveal(Immediate, false, None, now), Reveal::Answered);
        assert_eq!(reveal(Immediate, true, None, now), Reveal::All);
        assert_eq!(reveal(OnFinish, false, None, now), Reveal::Nothing);
        assert_eq!(reveal(OnFinish, true, None, now), Reveal::All);
        let passed = closing(Some(now), false);
        assert_eq!(
            reveal(AfterClose, true, closing(Some(later), false), now),
            Reveal::Nothing
        );
        assert_eq!(reveal(AfterClose, false, passed, later), Reveal::Nothing);
        assert_eq!(reveal(AfterClose, true, passed, later), Reveal::All);
        assert_eq!(
            reveal(AfterClose, true, None, later),
            Reveal::Nothing,
            "not known"
        );
        assert_eq!(reveal(Never, true, passed, later), Reveal::Nothing);
    }

    #[test]
    fn after_close_waits_while_the_learner_may_start_or_continue_an_attempt() {
        let now = Utc::now();
        let earlier = now - chrono::Duration::hours(1);
        use FeedbackTiming::AfterClose;
        let own = |closes_at, may_go_on| {
            Some(OwnClose {
                closes_at,
                may_go_on,
            })
        };
        // An attempt running past the close (a deadline that was not shortened).
        assert_eq!(
            reveal(AfterClose, true, own(Some(earlier), true), now),
            Reveal::Nothing
        );
        // No close: only once no attempt is left and none runs.
        assert_eq!(
            reveal(AfterClose, true, own(None, true), now),
            Reveal::Nothing
        );
        assert_eq!(reveal(AfterClose, true, own(None, false), now), Reveal::All);
    }
}
