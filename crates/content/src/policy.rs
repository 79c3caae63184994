//! The rules an assignment is taken under: what a content file's `[practice]` section and an
//! assignment say. Enforced by the server, with the server's clock (its `policy::reveal`).
//!
//! The enums are stored as text: the server writes [`FeedbackTiming::as_str`] (and the others')
//! and reads a column back with `TryFrom<String>`, which refuses any other word.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::de::from_stored_name;

/// When a learner learns whether an answer was right.
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
    #[serde(deserialize_with = "crate::de::optional_whole")]
    #[schema(minimum = 1, maximum = 1000)]
    pub attempts_allowed: Option<u32>,
    /// Minutes from the start of an attempt to its deadline; absent means untimed.
    #[serde(deserialize_with = "crate::de::optional_whole")]
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

from_stored_name!(
    FeedbackTiming,
    "feedback timing",
    [Immediate, OnFinish, AfterClose, Never]
);
from_stored_name!(
    GradingMethod,
    "grading method",
    [Highest, Latest, First, Average]
);
from_stored_name!(Navigation, "navigation", [Free, Sequential]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_name_reads_back_as_its_variant_and_no_other_word_does() {
        for t in [
            FeedbackTiming::Immediate,
            FeedbackTiming::OnFinish,
            FeedbackTiming::AfterClose,
            FeedbackTiming::Never,
        ] {
            assert_eq!(FeedbackTiming::try_from(t.as_str().to_string()), Ok(t));
        }
        for m in [
            GradingMethod::Highest,
            GradingMethod::Latest,
            GradingMethod::First,
            GradingMethod::Average,
        ] {
            assert_eq!(GradingMethod::try_from(m.as_str().to_string()), Ok(m));
        }
        for n in [Navigation::Free, Navigation::Sequential] {
            assert_eq!(Navigation::try_from(n.as_str().to_string()), Ok(n));
        }
        for v in [crate::Visibility::Public, crate::Visibility::Private] {
            assert_eq!(crate::Visibility::try_from(v.as_str().to_string()), Ok(v));
            // The stored name is the serde name.
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
        assert!(FeedbackTiming::try_from("Immediate".to_string()).is_err());
        assert!(crate::Visibility::try_from(String::new()).is_err());
    }
}
