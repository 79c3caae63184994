//! SQL for a person's export and erasure.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{FromRow, PgExecutor, Postgres, Transaction};
use utoipa::ToSchema;
use uuid::Uuid;

#[derive(Debug, FromRow, Serialize, ToSchema)]
pub struct ExportedPerson {
    pub id: Uuid,
    pub email: Option<String>,
    pub display_name: String,
    pub role: String,
    pub locale: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The LMS that knows you (LTI: its issuer and your id there), if any.
    pub lms_issuer: Option<String>,
    pub lms_subject: Option<String>,
}

#[derive(Debug, FromRow, Serialize, ToSchema)]
pub struct ExportedEnrollment {
    pub course_id: Uuid,
    pub title: String,
    pub code: Option<String>,
    /// `learner` or `instructor`.
    pub role: String,
    pub enrolled_at: DateTime<Utc>,
}

#[derive(Debug, FromRow, Serialize, ToSchema)]
pub struct ExportedAuthorship {
    pub quiz: String,
    /// `owner` or `coauthor`.
    pub role: String,
}

#[derive(Debug, FromRow, Serialize, ToSchema)]
pub struct ExportedAttempt {
    pub id: Uuid,
    pub assignment_id: Uuid,
    pub quiz: String,
    pub version: i32,
    pub number: i32,
    pub locale: String,
    pub started_at: DateTime<Utc>,
    pub deadline: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub finish_reason: Option<String>,
    pub score: Option<f64>,
    /// The grade course staff set by hand, which counts instead of `score`.
    pub override_points: Option<f64>,
    pub max_score: f64,
    /// Every change of the attempt's grade, oldest first: `kind`, `at`, `from_points`,
    /// `to_points`, `max_points`, `reason`, and who: `by_you`, or someone else by
    /// `actor_role` and `actor_name` only (absent: quizd itself).
    #[schema(value_type = Vec<Object>)]
    pub grade_events: serde_json::Value,
    /// Your answers as you gave them. Whether each was right is not here: the attempt's review
    /// (`GET /v1/attempts/{id}`) shows it when the assignment's feedback policy allows.
    #[schema(value_type = Vec<Object>)]
    pub answers: serde_json::Value,
}

pub async fn person(
    db: impl PgExecutor<'_>,
    id: Uuid,
) -> Result<Option<ExportedPerson>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, email, display_name, role, locale, created_at, updated_at,
                ext_issuer AS lms_issuer, ext_subject AS lms_subject
           FROM users WHERE id = $1 AND erased_at IS NULL",
    )
    .bind(id)
    .fetch_optional(db)
    .await
}

pub async fn enrollments(
    db: impl PgExecutor<'_>,
    id: Uuid,
) -> Result<Vec<ExportedEnrollment>, sqlx::Error> {
    sqlx::query_as(
        "SELECT c.id AS course_id, c.title, c.code, e.role, e.created_at AS enrolled_at
           FROM enrollments e JOIN courses c ON c.id = e.course_id
          WHERE e.user_id = $1 ORDER BY e.created_at, c.id",
    )
    .bind(id)
    .fetch_all(db)
    .await
}

pub async fn authorships(
    db: impl PgExecutor<'_>,
    id: Uuid,
) -> Result<Vec<ExportedAuthorship>, sqlx::Error> {
    sqlx::query_as(
        "SELECT slug AS quiz, 'owner' AS role FROM quizzes WHERE owner_id = $1
         UNION ALL
         SELECT q.slug, 'coauthor' FROM quiz_coauthors c JOIN quizzes q ON q.id = c.quiz_id
          WHERE c.user_id = $1
         ORDER BY 1",
    )
    .bind(id)
    .fetch_all(db)
    .await
}

/// Every attempt with its answers (no grades per answer, no seed).
pub async fn attempts(
    db: impl PgExecutor<'_>,
    id: Uuid,
) -> Result<Vec<ExportedAttempt>, sqlx::Error> {
    sqlx::query_as(
        "SELECT t.id, t.assignment_id, q.slug AS quiz, v.version, t.number, t.locale,
                t.started_at, t.deadline, t.finished_at, t.finish_reason, t.score,
                t.override_points, t.max_score,
                coalesce((SELECT jsonb_agg(jsonb_build_object(
                                 'kind', g.kind, 'by_you', coalesce(g.actor_id = $1, false),
                                 'actor_role', a.role, 'actor_name', a.display_name, 'at', g.at,
                                 'from_points', g.from_points, 'to_points', g.to_points,
                                 'max_points', g.max_points, 'reason', g.reason) ORDER BY g.id)
                            FROM grade_events g
                            LEFT JOIN users a ON a.id = g.actor_id AND a.id <> $1
                           WHERE g.attempt_id = t.id), '[]') AS grade_events,
                coalesce((SELECT jsonb_agg(jsonb_build_object(
                                 'question', r.question_key, 'answer', r.answer,
                                 'answered_at', r.answered_at, 'revision', r.revision)
                                 ORDER BY r.answered_at, r.question_key)
                            FROM responses r WHERE r.attempt_id = t.id), '[]') AS answers
           FROM attempts t
           JOIN quiz_versions v ON v.id = t.quiz_version_id
           JOIN quizzes q ON q.id = v.quiz_id
          WHERE t.user_id = $1 ORDER BY t.started_at, t.id",
    )
    .bind(id)
    .fetch_all(db)
    .await
}

/// Erases a person: what identifies them goes; their attempts stay, under an opaque id with no
/// name, for the statistics of the assignments they took. `false` if already erased.
pub async fn erase(tx: &mut Transaction<'_, Postgres>, id: Uuid) -> Result<bool, sqlx::Error> {
    // The address it had, for what is kept under the address rather than the account.
    let erased: Option<Option<String>> = sqlx::query_scalar(
        "WITH old AS (SELECT id, email FROM users WHERE id = $1 AND erased_at IS NULL FOR UPDATE)
         UPDATE users u SET email = NULL, display_name = 'Erased person', password_hash = NULL,
                          locale = NULL, ext_issuer = NULL, ext_subject = NULL, role = 'learner',
                          email_verified_at = NULL, erased_at = now(), updated_at = now()
           FROM old WHERE u.id = old.id
         RETURNING old.email",
    )
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    let Some(email) = erased else {
        return Ok(false);
    };
    crate::invitations::store::forget(tx, id, email.as_deref()).await?;
    crate::auth::store::announce_erasure(&mut **tx, id).await?;
    for statement in [
        "DELETE FROM refresh_tokens WHERE user_id = $1",
        "DELETE FROM enrollments WHERE user_id = $1",
        "DELETE FROM quiz_coauthors WHERE user_id = $1",
        "DELETE FROM lti_launch_codes WHERE user_id = $1",
        "DELETE FROM lti_deep_links WHERE user_id = $1",
        // The responses kept for retries can name the person (a course, an enrollment).
        "DELETE FROM idempotency_keys WHERE user_id = $1",
    ] {
        sqlx::query(statement).bind(id).execute(&mut **tx).await?;
    }
    Ok(true)
}
