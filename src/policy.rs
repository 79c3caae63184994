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

/// What the feedback timing allows a learner to see now, by the server's clock.
pub fn reveal(
    feedback: FeedbackTiming,
    finished: bool,
    closes_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Reveal {
    match feedback {
        FeedbackTiming::Immediate if finished => Reveal::All,
        FeedbackTiming::Immediate => Reveal::Answered,
        FeedbackTiming::OnFinish if finished => Reveal::All,
        FeedbackTiming::AfterClose if finished && closes_at.is_none_or(|c| now >= c) => Reveal::All,
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
        assert_eq!(reveal(Immediate, false, None, now), Reveal::Answered);
        assert_eq!(reveal(Immediate, true, None, now), Reveal::All);
        assert_eq!(reveal(OnFinish, false, None, now), Reveal::Nothing);
        assert_eq!(reveal(OnFinish, true, None, now), Reveal::All);
        assert_eq!(reveal(AfterClose, true, Some(later), now), Reveal::Nothing);
        assert_eq!(reveal(AfterClose, false, Some(now), later), Reveal::Nothing);
        assert_eq!(reveal(AfterClose, true, Some(now), later), Reveal::All);
        assert_eq!(reveal(Never, true, Some(now), later), Reveal::Nothing);
    }
}
