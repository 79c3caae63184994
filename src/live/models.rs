//! What live mode's endpoints and event streams send and take.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::attempts::models::{AttemptQuestion, QuestionResult};
use crate::content::QuestionKind;

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// Show the best learners' names and points on the instructor's screen after each
    /// question; off by default.
    #[serde(default)]
    pub leaderboard: bool,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenQuestion {
    /// The question's timer.
    #[schema(minimum = 5, maximum = 600)]
    #[serde(deserialize_with = "crate::extract::whole")]
    pub seconds: u32,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JoinRequest {
    /// The session's code as shown (case, spaces and dashes do not matter).
    #[schema(max_length = 32)]
    pub code: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseName {
    Lobby,
    Open,
    Closed,
    Ended,
}

/// A live session as its instructor sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionView {
    pub id: Uuid,
    pub assignment_id: Uuid,
    /// What learners type at `#/live` (six characters).
    pub code: String,
    pub code_expires_at: DateTime<Utc>,
    pub question_count: usize,
    pub leaderboard: bool,
    pub phase: PhaseName,
    /// The question shown now or last (0-based), absent before the first.
    pub index: Option<usize>,
    pub closes_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    pub joined: i64,
    /// The session's event stream (`text/event-stream`).
    pub events: String,
}

/// A learner in a session.
#[derive(Debug, Serialize, ToSchema)]
pub struct Joined {
    pub session_id: Uuid,
    /// The learner's attempt, which the session runs: graded like any other.
    pub attempt_id: Uuid,
    pub question_count: usize,
    /// The session's event stream (`text/event-stream`).
    pub events: String,
}

/// How the answers to a question are spread, by option key (staff only: keys may hint at
/// correctness); for a question answered by number or text, right and wrong.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct Distribution {
    pub total: i64,
    pub options: Vec<KeyCount>,
    pub correct: i64,
    pub wrong: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct KeyCount {
    pub key: String,
    pub answers: i64,
}

/// A question as the projector shows it: in the quiz's source locale, no key while open.
#[derive(Debug, Serialize, ToSchema)]
pub struct StaffQuestion<'a> {
    pub index: usize,
    pub question_count: usize,
    pub closes_at: DateTime<Utc>,
    pub kind: QuestionKind,
    pub prompt: &'a str,
    pub lang: &'a str,
    pub options: Vec<StaffOption<'a>>,
    /// The question's image, fetched from the session's own media path by its staff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<crate::quizzes::models::QuestionImage>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StaffOption<'a> {
    pub key: &'a str,
    pub text: &'a str,
}

/// A closed question's distribution on the projector, with the key.
#[derive(Debug, Serialize, ToSchema)]
pub struct StaffDistribution<'a> {
    pub index: usize,
    pub total: i64,
    pub options: Vec<StaffOptionCount<'a>>,
    /// Questions answered by number or text: right and wrong answers.
    pub correct: i64,
    pub wrong: i64,
    /// With the leaderboard on: the best learners so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaders: Option<Vec<Leader>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct StaffOptionCount<'a> {
    pub key: &'a str,
    pub text: &'a str,
    pub correct: bool,
    pub answers: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Leader {
    /// A learner's display name: text, never markup.
    pub display_name: String,
    pub points: f64,
}

/// The staff's live numbers.
#[derive(Debug, Serialize, ToSchema)]
pub struct TallyView<'a> {
    pub joined: i64,
    /// The latest joins' display names: text, never markup.
    pub recent: Vec<&'a str>,
    pub index: Option<usize>,
    pub answers: i64,
}

/// The question open now, as one learner's attempt serves it.
#[derive(Debug, Serialize)]
pub struct LearnerQuestion<'a> {
    pub index: usize,
    pub question_count: usize,
    pub closes_at: DateTime<Utc>,
    /// Seconds left by the server's clock when this was sent.
    pub seconds_left: i64,
    pub answered: bool,
    pub question: AttemptQuestion<'a>,
}

/// A closed question as one learner sees it: the spread by their option ids, and the key only
/// as the assignment's feedback timing allows.
#[derive(Debug, Serialize)]
pub struct LearnerDistribution {
    pub index: usize,
    pub question_id: String,
    pub total: i64,
    pub options: Vec<IdCount>,
    pub correct: i64,
    pub wrong: i64,
    pub answered: bool,
    pub result: Option<QuestionResult>,
}

#[derive(Debug, Serialize)]
pub struct IdCount {
    pub id: String,
    pub answers: i64,
}
