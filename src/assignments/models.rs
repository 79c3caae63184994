use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::policy::{FeedbackTiming, GradingMethod, Navigation, Policy};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AssignmentCreate {
    /// The quiz's slug.
    pub quiz: String,
    /// The quiz version to pin; the current one when absent.
    #[serde(default, deserialize_with = "crate::extract::optional_whole")]
    #[schema(minimum = 1)]
    pub version: Option<i32>,
    /// Defaults to the quiz's title in its source language.
    pub title: Option<String>,
    /// Omitted fields take their defaults: immediate feedback, unlimited untimed attempts,
    /// highest grade, no shuffling, always open.
    #[serde(default)]
    pub policy: Policy,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Assignment {
    pub id: Uuid,
    /// The course; absent for a quiz's practice assignment, open to every signed-in learner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub course_id: Option<Uuid>,
    /// The quiz's slug.
    pub quiz: String,
    /// The pinned quiz version.
    pub quiz_version: i32,
    pub title: String,
    pub policy: Policy,
    pub created_at: DateTime<Utc>,
    /// When it was archived (deleted while it had attempts): hidden from learners' lists, no
    /// new attempts. Absent while it is current.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<DateTime<Utc>>,
    /// Your attempts at it under your rules: the assignment's policy with your overrides and
    /// your course accommodation applied (`GET /v1/assignments/{id}` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub your_attempts: Option<YourAttempts>,
}

/// How many attempts you have used and have left, staff overrides and accommodations
/// included, and your window: a new attempt starts exactly when `remaining` is absent or above
/// zero and now is inside the window (and the assignment and its course are not archived).
#[derive(Debug, Serialize, ToSchema)]
pub struct YourAttempts {
    /// Attempts allowed to you (the policy's plus your extra attempts); absent: unlimited.
    pub allowed: Option<u32>,
    /// Attempts you have started, finished or not.
    pub used: u32,
    /// Attempts you may still start; absent: unlimited.
    pub remaining: Option<u32>,
    /// When your window opens (the earliest of the policy's and your rules'); absent: open.
    pub opens_at: Option<DateTime<Utc>>,
    /// When your window closes (the latest); absent: never.
    pub closes_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AssignmentList {
    pub items: Vec<Assignment>,
    /// The cursor of the next page (pass it as `cursor`); absent on the last page.
    pub next: Option<String>,
}

/// `Some(None)` for an explicit `null`, `None` when the field is absent.
fn explicit<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

fn explicit_whole<'de, D>(d: D) -> Result<Option<Option<u32>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    crate::extract::optional_whole(d).map(Some)
}

/// A change of an assignment: only the fields present change; `null` removes an optional one
/// (a time limit, an attempts limit, an open or close time).
///
/// It applies at once to attempts in progress: their deadlines are recomputed under the new
/// policy and every override (see `rules`), and are never made earlier than they were unless
/// `shorten_running` is `true`. The shuffle flags and `navigation` are fixed for each attempt
/// when it starts (its layout comes from its seed and these flags): a change reaches only
/// attempts started afterwards. A feedback or close-time change shows in the next read of
/// every attempt.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AssignmentPatch {
    pub title: Option<String>,
    #[serde(default, deserialize_with = "explicit")]
    #[schema(value_type = Option<DateTime<Utc>>)]
    pub opens_at: Option<Option<DateTime<Utc>>>,
    #[serde(default, deserialize_with = "explicit")]
    #[schema(value_type = Option<DateTime<Utc>>)]
    pub closes_at: Option<Option<DateTime<Utc>>>,
    #[serde(default, deserialize_with = "explicit_whole")]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 10080)]
    pub time_limit_minutes: Option<Option<u32>>,
    #[serde(default, deserialize_with = "explicit_whole")]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub attempts_allowed: Option<Option<u32>>,
    pub feedback: Option<FeedbackTiming>,
    pub grading_method: Option<GradingMethod>,
    pub shuffle_questions: Option<bool>,
    pub shuffle_options: Option<bool>,
    pub navigation: Option<Navigation>,
    /// Let this change make the deadlines of attempts in progress earlier (default: a running
    /// attempt's deadline only ever moves later).
    #[serde(default)]
    pub shorten_running: bool,
}

impl AssignmentPatch {
    /// `policy` with this change applied.
    pub fn apply(&self, mut policy: Policy) -> Policy {
        if let Some(v) = self.opens_at {
            policy.opens_at = v;
        }
        if let Some(v) = self.closes_at {
            policy.closes_at = v;
        }
        if let Some(v) = self.time_limit_minutes {
            policy.time_limit_minutes = v;
        }
        if let Some(v) = self.attempts_allowed {
            policy.attempts_allowed = v;
        }
        if let Some(v) = self.feedback {
            policy.feedback = v;
        }
        if let Some(v) = self.grading_method {
            policy.grading_method = v;
        }
        if let Some(v) = self.shuffle_questions {
            policy.shuffle_questions = v;
        }
        if let Some(v) = self.shuffle_options {
            policy.shuffle_options = v;
        }
        if let Some(v) = self.navigation {
            policy.navigation = v;
        }
        policy
    }
}

/// One learner's exceptions to the policy: each part absent means nothing extra. The most
/// generous applicable rule wins: see docs/instructors.md ("Overrides and accommodations").
#[derive(Debug, Default, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AdjustmentRequest {
    /// Multiplies the time limit, e.g. 1.5 (more than 0, at most 10).
    #[schema(exclusive_minimum = 0.0, maximum = 10.0)]
    pub time_multiplier: Option<f64>,
    /// Minutes added to the time limit.
    #[serde(default, deserialize_with = "crate::extract::optional_whole")]
    #[schema(minimum = 0, maximum = 10080)]
    pub extra_minutes: Option<i32>,
    /// Attempts added to those allowed.
    #[serde(default, deserialize_with = "crate::extract::optional_whole")]
    #[schema(minimum = 0, maximum = 1000)]
    pub extra_attempts: Option<i32>,
    /// An own opening time (counts when earlier than the assignment's).
    pub opens_at: Option<DateTime<Utc>>,
    /// An own closing time (counts when later than the assignment's).
    pub closes_at: Option<DateTime<Utc>>,
}

/// The same override for many learners at once: all of them, or (on any bad row) none.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkOverrides {
    /// The learners (enrolled in the course as learners), at most 1000.
    #[schema(max_items = 1000)]
    pub user_ids: Vec<Uuid>,
    /// The override each of them gets.
    #[serde(rename = "override")]
    pub adjustment: AdjustmentRequest,
}

/// An override of one assignment, or an accommodation in a whole course, for one learner.
#[derive(Debug, Serialize, ToSchema, sqlx::FromRow)]
pub struct Override {
    pub user_id: Uuid,
    pub display_name: String,
    pub time_multiplier: Option<f64>,
    pub extra_minutes: Option<i32>,
    pub extra_attempts: Option<i32>,
    pub opens_at: Option<DateTime<Utc>>,
    pub closes_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OverrideList {
    pub items: Vec<Override>,
}
