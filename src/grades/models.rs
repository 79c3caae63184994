//! What the grade endpoints take and answer.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::FromRow;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::grading::scoring::Scoring;
use crate::policy::GradingMethod;

/// What changed a grade.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, sqlx::Type)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum GradeEventKind {
    /// The attempt finished (submitted, its deadline passed, or its assignment closed): its
    /// first grade, computed from the answers; `reason` says how it finished.
    Finished,
    /// Course staff set the grade by hand; `reason` is theirs.
    Override,
    /// The grade was computed again (a corrected key); `reason` says why.
    Regrade,
}

/// One change of an attempt's grade. Append-only: never changed or removed.
#[derive(Debug, Clone, Serialize, ToSchema, FromRow)]
pub struct GradeEvent {
    /// Increasing in the order the changes happened.
    pub id: i64,
    pub kind: GradeEventKind,
    /// Who changed it; absent when quizd did (a finish, the deadline sweep).
    pub actor_id: Option<Uuid>,
    /// When, by the server's clock.
    pub at: DateTime<Utc>,
    /// The grade before (points); absent for a finish.
    pub from_points: Option<f64>,
    /// The grade after (points).
    pub to_points: f64,
    pub max_points: f64,
    /// Why: how the attempt finished (`submitted`, `deadline`, `closed`), or what staff wrote.
    pub reason: String,
}

/// Sets an attempt's grade by hand.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GradeOverride {
    /// The grade in points, from 0 to the attempt's `max_points` inclusive.
    pub points: f64,
    /// Why (kept in the grade history, which the learner reads): one line, 1 to 1000
    /// characters.
    pub reason: String,
}

/// An attempt's grade as it stands.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AttemptGrade {
    pub attempt_id: Uuid,
    pub assignment_id: Uuid,
    pub user_id: Uuid,
    /// The grade that counts (in the gradebook, and sent to the LMS): the override when staff
    /// set one, else the computed score; absent while the attempt is in progress.
    pub points: Option<f64>,
    /// The score computed from the answers.
    pub computed_points: Option<f64>,
    pub max_points: f64,
    /// Whether staff set the grade by hand.
    pub overridden: bool,
}

/// An attempt's grade and every change of it.
#[derive(Debug, Serialize, ToSchema)]
pub struct GradeHistory {
    pub grade: AttemptGrade,
    /// Oldest first; at most 1000.
    pub events: Vec<GradeEvent>,
}

/// Where a learner stands in one assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CellState {
    /// No attempt yet.
    NotStarted,
    /// An attempt is open now (whatever the earlier ones were).
    InProgress,
    /// No attempt open; at least one finished, none graded by hand.
    Finished,
    /// No attempt open; at least one finished attempt was graded by hand.
    Overridden,
}

/// A column of the gradebook.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GradebookAssignment {
    pub id: Uuid,
    pub title: String,
    pub grading_method: GradingMethod,
    /// The most points an attempt can score.
    pub max_points: f64,
}

/// One learner in one assignment.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GradebookCell {
    pub assignment_id: Uuid,
    /// The grade under the assignment's grading method over the finished attempts' effective
    /// grades (overrides count), in points; absent before any attempt finished.
    pub points: Option<f64>,
    pub max_points: f64,
    /// `points` as a percentage of `max_points`, to two decimals.
    pub percentage: Option<f64>,
    /// Attempts started, finished or not.
    pub attempts_used: u32,
    pub state: CellState,
}

/// A learner's row.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GradebookLearner {
    pub user_id: Uuid,
    pub display_name: String,
    pub email: Option<String>,
    /// `false`: no longer in the course (removed), listed for the attempts they made while
    /// enrolled, which stay as they were.
    pub enrolled: bool,
    /// One per assignment, in the order of `assignments`.
    pub cells: Vec<GradebookCell>,
}

/// A page of a course's gradebook: learners × assignments.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Gradebook {
    pub course_id: Uuid,
    /// The course's assignments that are not archived, in the order they were created.
    pub assignments: Vec<GradebookAssignment>,
    /// The course's learners on this page, by display name then user id: those enrolled, and
    /// those removed from the course who have attempts at its assignments (`enrolled: false`).
    pub learners: Vec<GradebookLearner>,
    /// The cursor of the next page (also in the `Link` header); absent on the last page.
    pub next: Option<String>,
}

/// `GET /v1/courses/{id}/gradebook`'s query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct GradebookQuery {
    /// Learners per page: 1 to 200; 50 when absent.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
    /// The `next` of the previous page; absent for the first page.
    pub cursor: Option<String>,
    /// `csv` for `text/csv` (one row per learner, a column per assignment); JSON when absent.
    pub format: Option<GradebookFormat>,
}

/// The gradebook's representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum GradebookFormat {
    Json,
    Csv,
}

/// Moves an assignment to another version of its quiz, or rescores some of its questions for
/// everyone (or both), and grades every attempt again. At least one of `to_version` and
/// `questions` is given.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegradeRequest {
    /// The version number of the assignment's quiz to move to (another quiz cannot be named).
    /// Absent: the version assigned (only `questions` change).
    #[serde(default, deserialize_with = "crate::extract::optional_whole")]
    pub to_version: Option<i32>,
    /// How questions count from now on, by question key (of the version regraded to):
    /// `full_marks` to every attempt that serves it, answered or not; `dropped` from scoring
    /// (0 of 0); `graded` by its key again. Questions not named keep how they count. At most
    /// 1,000 entries.
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, Scoring>>)]
    pub questions: Option<BTreeMap<String, Scoring>>,
    /// `true` (the default): only answer what would change. `false`: change it.
    #[serde(default = "yes")]
    pub dry_run: bool,
    /// Why (kept in every changed grade's history, which learners read): one line, 1 to 1000
    /// characters. Default: "Regraded to version N." or "Questions rescored for everyone."
    pub reason: Option<String>,
}

fn yes() -> bool {
    true
}

/// What a regrade changes (a dry run) or changed: the questions that differ, and the attempts
/// whose responses, score or maximum change. A dry run and the regrade applied right after it
/// answer the same lists.
#[derive(Debug, Serialize, ToSchema)]
pub struct RegradeReport {
    pub assignment_id: Uuid,
    pub from_version: i32,
    pub to_version: i32,
    /// `true`: nothing was changed.
    pub dry_run: bool,
    /// The questions of the assigned version that differ in the new one, in its order.
    pub questions: Vec<super::regrade::QuestionChange>,
    /// Every attempt of the assignment, finished or in progress (all move to the new version).
    pub attempts_total: usize,
    /// The attempts that change, in id order.
    pub attempts: Vec<super::regrade::AttemptChange>,
    /// How many of them get a new grade (a grade event each; the LMS is told).
    pub grades_changed: usize,
}
