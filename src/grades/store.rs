//! SQL for grades: grade events, overrides, and the gradebook's one query per page.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;
use sqlx::types::Json;
use sqlx::{FromRow, PgExecutor};
use uuid::Uuid;

use super::models::{GradeEvent, GradeEventKind};
use crate::grading::scoring::QuestionRules;

/// The most events `GET /v1/attempts/{id}/grade-history` returns (oldest first).
pub const HISTORY_LIMIT: i64 = 1000;

/// A grade event to append.
pub struct NewEvent<'a> {
    pub attempt: Uuid,
    pub kind: GradeEventKind,
    /// `None`: quizd itself.
    pub actor: Option<Uuid>,
    pub at: DateTime<Utc>,
    pub from_points: Option<f64>,
    pub to_points: f64,
    pub max_points: f64,
    pub reason: &'a str,
}

/// Appends one grade event (in the caller's transaction, with the change it records).
pub async fn record_event(db: impl PgExecutor<'_>, e: NewEvent<'_>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO grade_events (attempt_id, kind, actor_id, at, from_points, to_points,
                                   max_points, reason)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(e.attempt)
    .bind(e.kind)
    .bind(e.actor)
    .bind(e.at)
    .bind(e.from_points)
    .bind(e.to_points)
    .bind(e.max_points)
    .bind(e.reason)
    .execute(db)
    .await?;
    Ok(())
}

/// An attempt's grade as it stands, locked for update when read with [`lock_grade`].
#[derive(Debug, Clone, FromRow)]
pub struct GradeRow {
    pub attempt_id: Uuid,
    pub assignment_id: Uuid,
    pub user_id: Uuid,
    pub finished_at: Option<DateTime<Utc>>,
    pub score: Option<f64>,
    pub override_points: Option<f64>,
    pub max_score: f64,
}

impl GradeRow {
    /// The grade that counts: the override if staff set one, else the computed score.
    pub fn effective(&self) -> Option<f64> {
        self.override_points.or(self.score)
    }
}

const GRADE_SELECT: &str = "SELECT id AS attempt_id, assignment_id, user_id, finished_at, score,
        override_points, max_score FROM attempts WHERE id = $1";

/// The attempt's grade, locked until the transaction ends (a finish, or another override,
/// waits for it).
pub async fn lock_grade(
    db: impl PgExecutor<'_>,
    attempt: Uuid,
) -> Result<Option<GradeRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("{GRADE_SELECT} FOR UPDATE")))
        .bind(attempt)
        .fetch_optional(db)
        .await
}

pub async fn grade(
    db: impl PgExecutor<'_>,
    attempt: Uuid,
) -> Result<Option<GradeRow>, sqlx::Error> {
    sqlx::query_as(GRADE_SELECT)
        .bind(attempt)
        .fetch_optional(db)
        .await
}

/// Sets the attempt's grade by hand and writes the `attempt.regraded` outbox event that LMS
/// grade passback delivers (the caller appends the grade event in the same transaction).
pub async fn set_override(
    db: &mut sqlx::PgConnection,
    g: &GradeRow,
    points: f64,
    actor: Uuid,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE attempts SET override_points = $2 WHERE id = $1")
        .bind(g.attempt_id)
        .bind(points)
        .execute(&mut *db)
        .await?;
    sqlx::query(
        "INSERT INTO outbox (topic, aggregate_id, payload) VALUES ('attempt.regraded', $1, $2)",
    )
    .bind(g.attempt_id)
    .bind(json!({
        "attempt_id": g.attempt_id,
        "assignment_id": g.assignment_id,
        "user_id": g.user_id,
        "points": points,
        "computed_points": g.score,
        "max_score": g.max_score,
        "by": actor,
        "at": at,
    }))
    .execute(&mut *db)
    .await?;
    Ok(())
}

/// The attempt's grade events, oldest first (at most [`HISTORY_LIMIT`]).
pub async fn history(
    db: impl PgExecutor<'_>,
    attempt: Uuid,
) -> Result<Vec<GradeEvent>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, kind, actor_id, at, from_points, to_points, max_points, reason
           FROM grade_events WHERE attempt_id = $1 ORDER BY id LIMIT $2",
    )
    .bind(attempt)
    .bind(HISTORY_LIMIT)
    .fetch_all(db)
    .await
}

/// A column of the gradebook: an assignment of the course that is not archived.
#[derive(Debug, Clone, Deserialize)]
pub struct ColumnRow {
    pub id: Uuid,
    pub title: String,
    pub grading_method: crate::policy::GradingMethod,
    pub max_points: f64,
}

/// One attempt of a learner at one of the course's assignments.
#[derive(Debug, Clone)]
pub struct AttemptCellRow {
    pub assignment_id: Uuid,
    pub number: i32,
    pub finished: bool,
    /// The effective grade (override, else computed); `None` while in progress.
    pub points: Option<f64>,
    pub max_points: f64,
    pub overridden: bool,
}

/// One row of a gradebook page: the columns (the same on every row), and a learner with their
/// attempts as parallel arrays (cheaper for PostgreSQL to build than JSON: a page of 200
/// learners × 50 assignments took about half the time); `user_id` is `None` only on the one
/// row of a page without learners, and the arrays are `None` for a learner without attempts.
#[derive(Debug, FromRow)]
pub struct GradebookRow {
    pub columns: Json<Vec<ColumnRow>>,
    pub user_id: Option<Uuid>,
    pub display_name: Option<String>,
    pub email: Option<String>,
    /// `false`: no longer in the course (in any role), kept for their attempts.
    pub enrolled: Option<bool>,
    pub assignment_ids: Option<Vec<Uuid>>,
    pub numbers: Option<Vec<i32>>,
    pub finished: Option<Vec<bool>>,
    pub points: Option<Vec<Option<f64>>>,
    pub max_points: Option<Vec<f64>>,
    pub overridden: Option<Vec<bool>>,
}

impl GradebookRow {
    /// The learner's attempts, one per element of the arrays.
    pub fn attempts(&self) -> Vec<AttemptCellRow> {
        let (Some(ids), Some(numbers), Some(finished), Some(points), Some(max), Some(over)) = (
            &self.assignment_ids,
            &self.numbers,
            &self.finished,
            &self.points,
            &self.max_points,
            &self.overridden,
        ) else {
            return Vec::new();
        };
        (0..ids.len())
            .filter_map(|i| {
                Some(AttemptCellRow {
                    assignment_id: ids[i],
                    number: *numbers.get(i)?,
                    finished: *finished.get(i)?,
                    points: *points.get(i)?,
                    max_points: *max.get(i)?,
                    overridden: *over.get(i)?,
                })
            })
            .collect()
    }
}

/// A page of the gradebook in ONE statement: the course's assignments (not archived; in the
/// order they were created) and up to `limit` learners after the cursor, ordered by display
/// name then user id, each with all their attempts at those assignments (the grading method
/// is applied by the caller, [`crate::grading::assignment_grade`], the one definition of it).
/// The learners are those enrolled as learners and, marked `enrolled = false`, the people
/// with attempts at those assignments who are no longer in the course in any role (removed:
/// their grades stay), except erased accounts (their attempts stay nameless, for statistics
/// only; erasure also ends their enrollments). Nobody is both, so a learner enrolled again
/// shows once. The people with attempts come from the attempts' `(assignment_id, user_id)`
/// index, then those still in the course are taken out through the enrollments' key.
/// A page without learners is one row with the columns and no learner.
pub async fn gradebook_page(
    db: impl PgExecutor<'_>,
    course: Uuid,
    after: Option<(&str, Uuid)>,
    limit: i64,
) -> Result<Vec<GradebookRow>, sqlx::Error> {
    sqlx::query_as(
        "WITH columns AS MATERIALIZED (
            SELECT a.id, a.title, a.grading_method, a.created_at,
                   (SELECT coalesce(sum((q ->> 'points')::float8), 0)
                      FROM jsonb_array_elements(v.content -> 'questions') q) AS max_points
              FROM assignments a JOIN quiz_versions v ON v.id = a.quiz_version_id
             WHERE a.course_id = $1 AND a.archived_at IS NULL
         ), page AS (
            SELECT u.id, u.display_name, u.email, m.enrolled
              FROM (SELECT e.user_id, true AS enrolled
                      FROM enrollments e
                     WHERE e.course_id = $1 AND e.role = 'learner'
                    UNION ALL
                    SELECT f.user_id, false
                      FROM (SELECT DISTINCT t.user_id FROM attempts t
                             WHERE t.assignment_id IN (SELECT id FROM columns)) f
                     WHERE NOT EXISTS (SELECT 1 FROM enrollments e
                                        WHERE e.course_id = $1 AND e.user_id = f.user_id)) m
              JOIN users u ON u.id = m.user_id
             WHERE u.erased_at IS NULL
               AND ($2::text IS NULL OR (u.display_name, u.id) > ($2::text, $3::uuid))
             ORDER BY u.display_name, u.id
             LIMIT $4
         )
         SELECT (SELECT coalesce(jsonb_agg(jsonb_build_object(
                            'id', c.id, 'title', c.title, 'grading_method', c.grading_method,
                            'max_points', c.max_points) ORDER BY c.created_at, c.id), '[]')
                   FROM columns c) AS columns,
                p.id AS user_id, p.display_name, p.email, p.enrolled, w.assignment_ids, w.numbers,
                w.finished, w.points, w.max_points, w.overridden
           FROM (SELECT 1) AS one
           LEFT JOIN page p ON true
           LEFT JOIN LATERAL (
                SELECT array_agg(t.assignment_id) AS assignment_ids,
                       array_agg(t.number) AS numbers,
                       array_agg(t.finished_at IS NOT NULL) AS finished,
                       array_agg(coalesce(t.override_points, t.score)) AS points,
                       array_agg(t.max_score) AS max_points,
                       array_agg(t.override_points IS NOT NULL) AS overridden
                  FROM attempts t
                 WHERE t.user_id = p.id AND t.assignment_id IN (SELECT id FROM columns)
           ) w ON true
          ORDER BY p.display_name, p.id",
    )
    .bind(course)
    .bind(after.map(|(name, _)| name))
    .bind(after.map(|(_, id)| id))
    .bind(limit)
    .fetch_all(db)
    .await
}

/// An attempt of an assignment as a regrade reads it.
#[derive(Debug, Clone, FromRow)]
pub struct RegradeAttemptRow {
    pub id: Uuid,
    pub user_id: Uuid,
    pub number: i32,
    pub quiz_version_id: Uuid,
    pub finished: bool,
    pub score: Option<f64>,
    pub override_points: Option<f64>,
    pub max_score: f64,
    /// The questions it serves; `None`: every question of its version.
    pub question_set: Option<Vec<String>>,
}

/// Every attempt of the assignment, in id order; `lock`: locked (`FOR NO KEY UPDATE`, which
/// leaves foreign key checks alone) until the transaction ends (in id order, like every other multi-attempt lock), so that an answer or a
/// finish in flight either lands before the regrade reads the attempt or waits for its commit.
pub async fn regrade_attempts(
    db: impl PgExecutor<'_>,
    assignment: Uuid,
    lock: bool,
) -> Result<Vec<RegradeAttemptRow>, sqlx::Error> {
    macro_rules! select {
        () => {
            "SELECT id, user_id, number, quiz_version_id,
                    finished_at IS NOT NULL AS finished, score, override_points, max_score,
                    question_set
               FROM attempts WHERE assignment_id = $1 ORDER BY id"
        };
    }
    const SELECT: &str = select!();
    const LOCKED: &str = concat!(select!(), " FOR NO KEY UPDATE");
    sqlx::query_as(if lock { LOCKED } else { SELECT })
        .bind(assignment)
        .fetch_all(db)
        .await
}

/// The quiz versions of the assignment's attempts, and `assigned` (the assignment's own).
pub async fn attempt_versions(
    db: impl PgExecutor<'_>,
    assignment: Uuid,
    assigned: Uuid,
) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT $2::uuid UNION SELECT DISTINCT quiz_version_id FROM attempts WHERE assignment_id = $1",
    )
    .bind(assignment)
    .bind(assigned)
    .fetch_all(db)
    .await
}

/// A response as a regrade reads it.
#[derive(Debug, Clone, FromRow)]
pub struct RegradeResponseRow {
    pub attempt_id: Uuid,
    pub question_key: String,
    pub answer: Json<crate::grading::Answer>,
    pub points: f64,
    pub max_points: f64,
    pub correct: bool,
}

/// Every response of the assignment's attempts, by attempt.
pub async fn regrade_responses(
    db: impl PgExecutor<'_>,
    assignment: Uuid,
) -> Result<Vec<RegradeResponseRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT r.attempt_id, r.question_key, r.answer, r.points, r.max_points, r.correct
           FROM responses r JOIN attempts t ON t.id = r.attempt_id
          WHERE t.assignment_id = $1
          ORDER BY r.attempt_id, r.question_key",
    )
    .bind(assignment)
    .fetch_all(db)
    .await
}

/// Writes a regrade's plan in the caller's transaction (which holds the assignment and its
/// attempts locked): the responses' new grades, the attempts' new scores, maximums and capped
/// overrides (and the per-question points analytics keep on a finished attempt), every
/// attempt and the assignment moved to `to_version`, a `regrade` grade event and an
/// `attempt.regraded` outbox event (LMS grade passback) for every attempt whose grade changed.
/// The question keys of the version an assignment's attempts move from and to, whether they
/// are the same set, and the assignment's question rules from now on.
pub struct Move {
    pub old_keys: Vec<String>,
    pub new_keys: Vec<String>,
    pub same_questions: bool,
    pub rules: QuestionRules,
}

#[allow(clippy::too_many_arguments)]
pub async fn apply_regrade(
    db: &mut sqlx::PgConnection,
    assignment: Uuid,
    to_version: Uuid,
    moves: &Move,
    plan: &super::regrade::Plan,
    actor: Uuid,
    at: DateTime<Utc>,
    reason: &str,
) -> Result<(), sqlx::Error> {
    let r = &plan.responses;
    sqlx::query(
        "UPDATE responses r SET points = u.points, max_points = u.max_points, correct = u.correct
           FROM unnest($1::uuid[], $2::text[], $3::float8[], $4::float8[], $5::bool[])
                AS u(attempt_id, question_key, points, max_points, correct)
          WHERE r.attempt_id = u.attempt_id AND r.question_key = u.question_key",
    )
    .bind(r.iter().map(|x| x.attempt).collect::<Vec<_>>())
    .bind(
        r.iter()
            .map(|x| x.question_key.as_str())
            .collect::<Vec<_>>(),
    )
    .bind(r.iter().map(|x| x.points).collect::<Vec<_>>())
    .bind(r.iter().map(|x| x.max_points).collect::<Vec<_>>())
    .bind(r.iter().map(|x| x.correct).collect::<Vec<_>>())
    .execute(&mut *db)
    .await?;
    let g = &plan.grades;
    let ids: Vec<Uuid> = g.iter().map(|x| x.attempt).collect();
    sqlx::query(
        "UPDATE attempts t SET score = u.score, max_score = u.max_score,
                override_points = u.override_points, regraded_at = $5
           FROM unnest($1::uuid[], $2::float8[], $3::float8[], $4::float8[])
                AS u(id, score, max_score, override_points)
          WHERE t.id = u.id",
    )
    .bind(&ids)
    .bind(g.iter().map(|x| x.score).collect::<Vec<_>>())
    .bind(g.iter().map(|x| x.max_score).collect::<Vec<_>>())
    .bind(g.iter().map(|x| x.override_points).collect::<Vec<_>>())
    .bind(at)
    .execute(&mut *db)
    .await?;
    // A finished attempt's per-question points, kept in key order as `finish_in` keeps them.
    sqlx::query(
        "UPDATE attempts t SET question_points = s.points
           FROM (SELECT attempt_id, array_agg(points ORDER BY question_key) AS points
                   FROM responses WHERE attempt_id = ANY($1) GROUP BY attempt_id) s
          WHERE t.id = s.attempt_id AND t.finished_at IS NOT NULL",
    )
    .bind(&ids)
    .execute(&mut *db)
    .await?;
    // Moved, each keeping the questions it serves (those the new version still has); an
    // attempt that served every question stays so only if the new version has the same ones.
    sqlx::query(
        "UPDATE attempts t SET quiz_version_id = $2,
                question_set = CASE WHEN t.question_set IS NULL AND $5 THEN NULL
                    ELSE ARRAY(SELECT u.key
                                 FROM unnest(coalesce(t.question_set, $3::text[]))
                                      WITH ORDINALITY AS u(key, i)
                                WHERE u.key = ANY($4::text[]) ORDER BY u.i) END
          WHERE t.assignment_id = $1",
    )
    .bind(assignment)
    .bind(to_version)
    .bind(&moves.old_keys)
    .bind(&moves.new_keys)
    .bind(moves.same_questions)
    .execute(&mut *db)
    .await?;
    sqlx::query("UPDATE assignments SET quiz_version_id = $2, question_rules = $3 WHERE id = $1")
        .bind(assignment)
        .bind(to_version)
        .bind(Json(&moves.rules))
        .execute(&mut *db)
        .await?;
    let changed: Vec<&super::regrade::AttemptChange> =
        plan.attempts.iter().filter(|a| a.grade_changed).collect();
    sqlx::query(
        "WITH u AS (
            SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::float8[], $4::float8[], $5::float8[],
                                 $6::float8[], $7::float8[])
                   AS u(attempt_id, user_id, from_points, to_points, max_points, score, from_max)
         ), events AS (
            INSERT INTO grade_events (attempt_id, kind, actor_id, at, from_points, to_points,
                                      max_points, reason)
            SELECT attempt_id, 'regrade', $8, $9, from_points, to_points, max_points, $10
              FROM u ORDER BY attempt_id
         )
         INSERT INTO outbox (topic, aggregate_id, payload)
         SELECT 'attempt.regraded', u.attempt_id,
                jsonb_build_object('attempt_id', u.attempt_id, 'assignment_id', $11::uuid,
                                   'user_id', u.user_id, 'points', u.to_points,
                                   'computed_points', u.score, 'max_score', u.max_points,
                                   'from_points', u.from_points, 'from_max_score', u.from_max,
                                   'by', $8::uuid, 'at', $9::timestamptz, 'regrade', true)
           FROM u ORDER BY u.attempt_id",
    )
    .bind(changed.iter().map(|a| a.attempt_id).collect::<Vec<_>>())
    .bind(changed.iter().map(|a| a.user_id).collect::<Vec<_>>())
    .bind(changed.iter().map(|a| a.from_points).collect::<Vec<_>>())
    .bind(changed.iter().map(|a| a.to_points).collect::<Vec<_>>())
    .bind(changed.iter().map(|a| a.to_max).collect::<Vec<_>>())
    .bind(changed.iter().map(|a| a.to_score).collect::<Vec<_>>())
    .bind(changed.iter().map(|a| a.from_max).collect::<Vec<_>>())
    .bind(actor)
    .bind(at)
    .bind(reason)
    .bind(assignment)
    .execute(&mut *db)
    .await?;
    Ok(())
}
