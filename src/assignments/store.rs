//! SQL for assignments.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgExecutor};
use uuid::Uuid;

use super::models::Assignment;
use crate::content::Visibility;
use crate::policy::{FeedbackTiming, GradingMethod, Policy};

#[derive(Debug, Clone, FromRow)]
pub struct AssignmentRow {
    pub id: Uuid,
    pub course_id: Option<Uuid>,
    pub quiz_id: Uuid,
    pub quiz_version_id: Uuid,
    pub slug: String,
    pub version: i32,
    pub title: String,
    pub feedback: String,
    pub attempts_allowed: Option<i32>,
    pub time_limit_minutes: Option<i32>,
    pub grading_method: String,
    pub shuffle_questions: bool,
    pub shuffle_options: bool,
    pub opens_at: Option<DateTime<Utc>>,
    pub closes_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    /// The quiz's visibility now: a practice assignment exists only while it is public.
    pub visibility: Visibility,
}

impl AssignmentRow {
    pub fn policy(&self) -> Policy {
        Policy {
            feedback: FeedbackTiming::parse(&self.feedback).unwrap_or_default(),
            attempts_allowed: self.attempts_allowed.map(|n| n as u32),
            time_limit_minutes: self.time_limit_minutes.map(|n| n as u32),
            grading_method: GradingMethod::parse(&self.grading_method).unwrap_or_default(),
            shuffle_questions: self.shuffle_questions,
            shuffle_options: self.shuffle_options,
            opens_at: self.opens_at,
            closes_at: self.closes_at,
        }
    }

    pub fn view(&self) -> Assignment {
        Assignment {
            id: self.id,
            course_id: self.course_id,
            quiz: self.slug.clone(),
            quiz_version: self.version,
            title: self.title.clone(),
            policy: self.policy(),
            created_at: self.created_at,
        }
    }
}

const SELECT: &str = "SELECT a.id, a.course_id, a.quiz_id, a.quiz_version_id, q.slug, v.version,
        a.title, a.feedback, a.attempts_allowed, a.time_limit_minutes, a.grading_method,
        a.shuffle_questions, a.shuffle_options, a.opens_at, a.closes_at, a.created_at, q.visibility
   FROM assignments a
   JOIN quizzes q ON q.id = a.quiz_id
   JOIN quiz_versions v ON v.id = a.quiz_version_id";

pub struct NewAssignment<'a> {
    pub course_id: Option<Uuid>,
    pub quiz_id: Uuid,
    pub quiz_version_id: Uuid,
    pub title: &'a str,
    pub policy: &'a Policy,
    pub created_by: Option<Uuid>,
}

pub async fn insert(db: impl PgExecutor<'_>, a: NewAssignment<'_>) -> Result<Uuid, sqlx::Error> {
    let id = Uuid::now_v7();
    let p = a.policy;
    sqlx::query(
        "INSERT INTO assignments (id, course_id, quiz_id, quiz_version_id, title, feedback,
                attempts_allowed, time_limit_minutes, grading_method, shuffle_questions,
                shuffle_options, opens_at, closes_at, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    )
    .bind(id)
    .bind(a.course_id)
    .bind(a.quiz_id)
    .bind(a.quiz_version_id)
    .bind(a.title)
    .bind(p.feedback.as_str())
    .bind(p.attempts_allowed.map(|n| n as i32))
    .bind(p.time_limit_minutes.map(|n| n as i32))
    .bind(p.grading_method.as_str())
    .bind(p.shuffle_questions)
    .bind(p.shuffle_options)
    .bind(p.opens_at)
    .bind(p.closes_at)
    .bind(a.created_by)
    .execute(db)
    .await?;
    Ok(id)
}

pub async fn by_id(
    db: impl PgExecutor<'_>,
    id: Uuid,
) -> Result<Option<AssignmentRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("{SELECT} WHERE a.id = $1")))
        .bind(id)
        .fetch_optional(db)
        .await
}

pub async fn for_course(
    db: impl PgExecutor<'_>,
    course: Uuid,
) -> Result<Vec<AssignmentRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{SELECT} WHERE a.course_id = $1 ORDER BY a.created_at, a.id"
    )))
    .bind(course)
    .fetch_all(db)
    .await
}

/// What a person can take: the practice assignment of every public quiz's current version, and the
/// assignments of every course they are in (admins: of every course).
pub async fn for_member(
    db: impl PgExecutor<'_>,
    user: Uuid,
    all: bool,
) -> Result<Vec<AssignmentRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{SELECT}
          WHERE (a.course_id IS NULL AND a.quiz_version_id = q.current_version_id
                 AND q.visibility = 'public')
             OR (a.course_id IS NOT NULL
                 AND ($2 OR EXISTS (SELECT 1 FROM enrollments e
                                     WHERE e.course_id = a.course_id AND e.user_id = $1)))
          ORDER BY a.course_id NULLS FIRST, a.created_at DESC, a.id LIMIT 1000"
    )))
    .bind(user)
    .bind(all)
    .fetch_all(db)
    .await
}

/// The quiz and version id for a slug and an optional version number (default: current).
pub async fn resolve_version(
    db: impl PgExecutor<'_>,
    slug: &str,
    version: Option<i32>,
) -> Result<Option<(Uuid, Uuid)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT q.id, v.id FROM quizzes q JOIN quiz_versions v ON v.quiz_id = q.id
          WHERE q.slug = $1 AND (v.version = $2 OR ($2 IS NULL AND v.id = q.current_version_id))",
    )
    .bind(slug)
    .bind(version)
    .fetch_optional(db)
    .await
}
