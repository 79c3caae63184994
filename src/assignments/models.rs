use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::policy::Policy;

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
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AssignmentList {
    pub items: Vec<Assignment>,
}
