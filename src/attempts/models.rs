//! What a learner (or the course's staff) sees of an attempt.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::grading::scoring::Scoring;

use super::shuffle::Id;
use crate::content::QuestionKind;
use crate::i18n::LocalizedText;
use crate::policy::{FeedbackTiming, GradingMethod, Navigation};
use crate::quizzes::models::QuestionImage;

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartAttempt {
    /// The locale to take the quiz in (BCP 47); else your preference, else `Accept-Language`.
    #[schema(value_type = Option<String>)]
    pub locale: Option<crate::validate::Locale>,
}

/// An answer: exactly one of `selected` (option ids, for choice kinds), `number` (numeric) and
/// `text` (short text).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum AnswerRequest {
    Selected(SelectedAnswer),
    Number(NumberAnswer),
    Text(TextAnswer),
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SelectedAnswer {
    /// The chosen options' ids in this attempt: one for single choice and true/false.
    #[schema(max_items = 64)]
    pub selected: Vec<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NumberAnswer {
    pub number: f64,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TextAnswer {
    #[schema(max_length = 1000)]
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttemptState {
    InProgress,
    Finished,
}

// Borrowed from the attempt's layout and its quiz version (texts are not copied: a view is
// serialized as soon as it is made).
#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptView<'a> {
    pub id: Uuid,
    pub assignment_id: Uuid,
    /// The quiz's slug.
    pub quiz: String,
    /// The quiz version this attempt is pinned to.
    pub quiz_version: i32,
    /// 1 for your first attempt at this assignment, and so on.
    pub number: i32,
    /// The locale the attempt is served in; each text says the language it is actually in.
    pub locale: String,
    pub title: LocalizedText,
    pub state: AttemptState,
    /// When answers are judged to you (the assignment's feedback policy).
    pub feedback_timing: FeedbackTiming,
    /// How you move through it: under `sequential` only the questions answered so far and the
    /// current one are served, until the attempt is finished.
    pub navigation: Navigation,
    /// How many questions the attempt has (under sequential navigation, more than are served).
    pub question_count: usize,
    pub started_at: DateTime<Utc>,
    /// The server's deadline, if the attempt is timed or the assignment closes.
    pub deadline: Option<DateTime<Utc>>,
    /// Seconds left before the deadline, by the server's clock.
    pub time_left_seconds: Option<i64>,
    pub finished_at: Option<DateTime<Utc>>,
    /// `submitted`, `deadline`, or `closed` (the assignment was closed early).
    pub finish_reason: Option<String>,
    /// When course staff last regraded it (a corrected key): its questions, points and score
    /// are those of the corrected version; the grade history says what changed.
    pub regraded_at: Option<DateTime<Utc>>,
    /// The questions in this attempt's order (sequential navigation: those answered and the
    /// current one).
    pub questions: Vec<AttemptQuestion<'a>>,
    /// The score, once finished.
    pub result: Option<AttemptResult>,
    /// The quiz's feedback for the band the score falls in (`[[score_bands]]`), in the
    /// attempt's locale or its fallback (`lang` says which). Only beside `result`: never before
    /// the attempt is finished, nor where the score is not shown; null when the quiz has no
    /// band for the score.
    pub score_feedback: Option<LocalizedText>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptQuestion<'a> {
    /// This question's id in this attempt.
    #[schema(value_type = String)]
    pub id: Id,
    pub kind: QuestionKind,
    /// What it is worth in this attempt: 0 when dropped from scoring.
    pub points: f64,
    /// How it counts: as graded, full marks to everyone, or dropped (staff decided after the
    /// fact, for the whole assignment).
    pub scoring: Scoring,
    pub prompt: &'a str,
    /// The language `prompt` is in.
    pub lang: &'a str,
    /// The image shown with the prompt, if it has one: fetch `url` with your token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<QuestionImage>,
    /// In this attempt's order; ids differ in every attempt.
    pub options: Vec<AttemptOption<'a>>,
    /// Your answer so far.
    pub response: Option<ResponseView>,
    /// The judgement, as far as the policy allows by now.
    pub result: Option<QuestionResult>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptOption<'a> {
    #[schema(value_type = String)]
    pub id: Id,
    pub text: &'a str,
    pub lang: &'a str,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ResponseView {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selected: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    pub answered_at: DateTime<Utc>,
}

/// Whether an answer was right, the right answer and why.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct QuestionResult {
    /// Whether the answer is right by the key (whatever `scoring` gives it).
    pub correct: bool,
    /// What it scores: the answer's grade, or full marks, or 0 of 0 when dropped (`scoring`).
    pub points: f64,
    pub max_points: f64,
    /// The correct options' ids (choice kinds).
    pub correct_options: Vec<String>,
    /// The correct number (numeric).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correct_number: Option<f64>,
    /// The accepted answers (short text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted_answers: Option<Vec<String>>,
    /// Why the right answer is right.
    pub explanation: LocalizedText,
    /// About the answer given: the chosen option's feedback, or the question's wrong-answer
    /// feedback.
    pub feedback: Option<LocalizedText>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptResult {
    /// The score computed from the answers.
    pub score: f64,
    pub max_score: f64,
    /// The grade that counts: the score, or the grade course staff set by hand instead.
    pub points: f64,
    /// Whether course staff set the grade by hand (its history says why).
    pub overridden: bool,
    /// `points` as a percentage of `max_score`: 0 to 100.
    pub percentage: f64,
}

/// The answer to `PUT /v1/attempts/{id}/responses/{question_id}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnswerOutcome {
    pub question_id: String,
    pub response: ResponseView,
    /// Present when the policy reveals correctness now (immediate feedback).
    pub result: Option<QuestionResult>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptSummary {
    pub id: Uuid,
    pub assignment_id: Uuid,
    /// The course; absent for practice attempts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub course_id: Option<Uuid>,
    pub quiz: String,
    pub quiz_version: i32,
    pub user_id: Uuid,
    pub display_name: String,
    pub number: i32,
    pub locale: String,
    pub state: AttemptState,
    pub started_at: DateTime<Utc>,
    pub deadline: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// The score computed from the answers.
    pub score: Option<f64>,
    /// The grade course staff set by hand (`PUT /v1/attempts/{id}/grade`), which counts
    /// instead of `score`; absent when none was set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub override_points: Option<f64>,
    pub max_score: f64,
    /// The grade that counts (the override, else the score) as a percentage of `max_score`.
    pub percentage: Option<f64>,
}

/// A learner's grade for an assignment under its grading method.
#[derive(Debug, Serialize, ToSchema)]
pub struct AssignmentGrade {
    pub assignment_id: Uuid,
    pub user_id: Uuid,
    pub grading_method: GradingMethod,
    /// 0 to 100, over the grades that count (a staff override instead of the computed
    /// score); absent until an attempt is finished.
    pub percentage: Option<f64>,
    pub finished_attempts: usize,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptList {
    pub items: Vec<AttemptSummary>,
    /// The grade of each (assignment, learner) with an attempt on this page, from all their
    /// attempts (on this page or another).
    pub grades: Vec<AssignmentGrade>,
    /// The cursor of the next page (pass it as `cursor`); absent on the last page.
    pub next: Option<String>,
}
