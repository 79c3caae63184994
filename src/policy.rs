//! The rules an assignment is taken under. Enforced on the server, with the server's clock.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// When a learner learns whether an answer was right.
#[derive(sqlx::Type)]
#[sqlx(type_name = "text", rename_all = "snake_case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackTiming {
    /// Right after each answer: correctness, the right option and the explanation.
    #[default]
    Immediate,
    /// When the learner finishes the attempt.
    OnFinish,
    /// When the assignment closes for the learner: at their own close (an override or an
    /// accommodation may set a later one), once they can neither start nor continue an attempt.
    AfterClose,
    /// Never; only the score.
    Never,
}

/// Which attempt's score is the learner's grade.
#[derive(sqlx::Type)]
#[sqlx(type_name = "text", rename_all = "snake_case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum GradingMethod {
    #[default]
    Highest,
    Latest,
    First,
    Average,
}

/// How a learner moves through an attempt.
#[derive(sqlx::Type)]
#[sqlx(type_name = "text", rename_all = "snake_case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum Navigation {
    /// Any question, in any order.
    #[default]
    Free,
    /// One question at a time in the attempt's order: the API serves the questions answered
    /// so far and the current one (the first unanswered), takes an answer only to the current
    /// one, and every answer is final (no way back).
    Sequential,
}

impl Navigation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Free => "free",
            Self::Sequential => "sequential",
        }
    }
}

/// The policy of an assignment. The content file gives it for a quiz's practice assignment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    pub feedback: FeedbackTiming,
    /// How many attempts a learner may start; absent means unlimited.
    #[serde(deserialize_with = "crate::extract::optional_whole")]
    #[schema(minimum = 1, maximum = 1000)]
    pub attempts_allowed: Option<u32>,
    /// Minutes from the start of an attempt to its deadline; absent means untimed.
    #[serde(deserialize_with = "crate::extract::optional_whole")]
    #[schema(minimum = 1, maximum = 10080)]
    pub time_limit_minutes: Option<u32>,
    pub grading_method: GradingMethod,
    /// Fixed for each attempt when it starts: a change reorders only attempts started later.
    pub shuffle_questions: bool,
    /// Fixed for each attempt when it starts, like `shuffle_questions`.
    pub shuffle_options: bool,
    /// Fixed for each attempt when it starts.
    pub navigation: Navigation,
    /// No attempt may start before this time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opens_at: Option<DateTime<Utc>>,
    /// No attempt may start, and no answer is taken, after this time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closes_at: Option<DateTime<Utc>>,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            feedback: FeedbackTiming::Immediate,
            attempts_allowed: None,
            time_limit_minutes: None,
            grading_method: GradingMethod::Highest,
            shuffle_questions: false,
            shuffle_options: false,
            navigation: Navigation::Free,
            opens_at: None,
            closes_at: None,
        }
    }
}

impl FeedbackTiming {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Immediate => "immediate",
            Self::OnFinish => "on_finish",
            Self::AfterClose => "after_close",
            Self::Never => "never",
        }
    }
}

impl GradingMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Highest => "highest",
            Self::Latest => "latest",
            Self::First => "first",
            Self::Average => "average",
        }
    }
}

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
