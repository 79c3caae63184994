//! SQL for grades: grade events, overrides, and the gradebook's one query per page.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;
use sqlx::types::Json;
use sqlx::{FromRow, PgExecutor};
use uuid::Uuid;

use super::models::{GradeEvent, GradeEventKind};

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
            SELECT u.id, u.display_name, u.email
              FROM enrollments e JOIN users u ON u.id = e.user_id
             WHERE e.course_id = $1 AND e.role = 'learner'
               AND ($2::text IS NULL OR (u.display_name, u.id) > ($2::text, $3::uuid))
             ORDER BY u.display_name, u.id
             LIMIT $4
         )
         SELECT (SELECT coalesce(jsonb_agg(jsonb_build_object(
                            'id', c.id, 'title', c.title, 'grading_method', c.grading_method,
                            'max_points', c.max_points) ORDER BY c.created_at, c.id), '[]')
                   FROM columns c) AS columns,
                p.id AS user_id, p.display_name, p.email, w.assignment_ids, w.numbers,
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
