//! SQL for reading quizzes and their versions.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{FromRow, PgExecutor};
use uuid::Uuid;

use crate::content::QuizContent;

#[derive(FromRow)]
pub struct VersionRow {
    pub id: Uuid,
    pub quiz_id: Uuid,
    pub version: i32,
    pub created_at: DateTime<Utc>,
    pub content: Json<QuizContent>,
    pub practice_assignment_id: Option<Uuid>,
}

/// Every published quiz's slug and current version id, by slug.
pub async fn current_versions(db: impl PgExecutor<'_>) -> Result<Vec<(String, Uuid)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT slug, current_version_id FROM quizzes
          WHERE current_version_id IS NOT NULL ORDER BY slug",
    )
    .fetch_all(db)
    .await
}

pub async fn current_version_id(
    db: impl PgExecutor<'_>,
    slug: &str,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar("SELECT current_version_id FROM quizzes WHERE slug = $1")
        .bind(slug)
        .fetch_optional(db)
        .await
        .map(Option::flatten)
}

pub async fn version(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<VersionRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT v.id, v.quiz_id, v.version, v.created_at, v.content,
                (SELECT a.id FROM assignments a
                  WHERE a.quiz_version_id = v.id AND a.course_id IS NULL) AS practice_assignment_id
           FROM quiz_versions v WHERE v.id = $1",
    )
    .bind(id)
    .fetch_optional(db)
    .await
}
