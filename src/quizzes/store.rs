//! SQL for reading quizzes and their versions.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{FromRow, PgExecutor};
use uuid::Uuid;

use crate::content::{QuizContent, Visibility};

#[derive(FromRow)]
pub struct VersionRow {
    pub id: Uuid,
    pub quiz_id: Uuid,
    pub version: i32,
    pub created_at: DateTime<Utc>,
    pub content: Json<QuizContent>,
    pub practice_assignment_id: Option<Uuid>,
}

/// The catalogue: every public quiz's slug and current version id, by slug, and the private
/// ones `author` (if any) owns or co-authors, with whether `author` owns or co-authors each:
/// a page of them, by slug after `after`; `fetch` at most.
pub async fn current_versions(
    db: impl PgExecutor<'_>,
    author: Option<Uuid>,
    after: Option<&str>,
    fetch: i64,
) -> Result<Vec<(String, Uuid, bool)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT slug, current_version_id, authored FROM (
           SELECT q.slug, q.current_version_id, q.visibility,
                  ($1::uuid IS NOT NULL
                   AND (q.owner_id IS NOT DISTINCT FROM $1
                        OR EXISTS (SELECT 1 FROM quiz_coauthors c
                                    WHERE c.quiz_id = q.id AND c.user_id = $1))) AS authored
             FROM quizzes q
            WHERE q.current_version_id IS NOT NULL
              AND ($2::text IS NULL OR q.slug > $2)) q
          WHERE q.visibility = 'public' OR q.authored
          ORDER BY q.slug LIMIT $3",
    )
    .bind(author)
    .bind(after)
    .bind(fetch)
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

/// The content of every version of quiz `slug`, newest first (for earlier source texts).
pub async fn version_contents(
    db: impl PgExecutor<'_>,
    slug: &str,
) -> Result<Vec<Json<QuizContent>>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT v.content FROM quiz_versions v JOIN quizzes q ON q.id = v.quiz_id
          WHERE q.slug = $1 ORDER BY v.version DESC",
    )
    .bind(slug)
    .fetch_all(db)
    .await
}

pub async fn version(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<VersionRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT v.id, v.quiz_id, v.version, v.created_at, v.content,
                (SELECT a.id FROM assignments a
                  WHERE a.quiz_version_id = v.id AND a.course_id IS NULL
                    AND q.visibility = 'public') AS practice_assignment_id
           FROM quiz_versions v JOIN quizzes q ON q.id = v.quiz_id WHERE v.id = $1",
    )
    .bind(id)
    .fetch_optional(db)
    .await
}

/// A quiz as one person stands to it.
#[derive(Debug, FromRow)]
pub struct QuizAccess {
    pub quiz_id: Uuid,
    #[sqlx(try_from = "String")]
    pub visibility: Visibility,
    pub owner_id: Option<Uuid>,
    /// The person is its owner or a co-author.
    pub is_author: bool,
}

pub async fn access(
    db: impl PgExecutor<'_>,
    slug: &str,
    user: Uuid,
) -> Result<Option<QuizAccess>, sqlx::Error> {
    sqlx::query_as(
        "SELECT q.id AS quiz_id, q.visibility, q.owner_id,
                (q.owner_id IS NOT DISTINCT FROM $2
                 OR EXISTS (SELECT 1 FROM quiz_coauthors c
                             WHERE c.quiz_id = q.id AND c.user_id = $2)) AS is_author
           FROM quizzes q WHERE q.slug = $1",
    )
    .bind(slug)
    .bind(user)
    .fetch_optional(db)
    .await
}

/// Whether the person teaches a course where this version is assigned: its staff review
/// attempts there, so they read its key; no other staff do.
pub async fn teaches_version(
    db: impl PgExecutor<'_>,
    version_id: Uuid,
    user: Uuid,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM assignments a
                          JOIN enrollments e ON e.course_id = a.course_id
                         WHERE a.quiz_version_id = $1 AND e.user_id = $2
                           AND e.role = 'instructor')",
    )
    .bind(version_id)
    .bind(user)
    .fetch_one(db)
    .await
}

/// A quiz's author, as its authors and admins see the list.
#[derive(Debug, FromRow, serde::Serialize, utoipa::ToSchema)]
pub struct Author {
    pub user_id: Uuid,
    pub display_name: String,
    /// `owner` (who created it; cannot be removed) or `coauthor`.
    pub role: String,
    pub since: DateTime<Utc>,
}

pub async fn authors(db: impl PgExecutor<'_>, quiz_id: Uuid) -> Result<Vec<Author>, sqlx::Error> {
    sqlx::query_as(
        "SELECT u.id AS user_id, u.display_name, 'owner' AS role, q.created_at AS since
           FROM quizzes q JOIN users u ON u.id = q.owner_id WHERE q.id = $1
         UNION ALL
         SELECT u.id, u.display_name, 'coauthor', c.created_at
           FROM quiz_coauthors c JOIN users u ON u.id = c.user_id WHERE c.quiz_id = $1
         ORDER BY 3 DESC, 4, 1",
    )
    .bind(quiz_id)
    .fetch_all(db)
    .await
}

/// Adds a co-author (again: no change); `false` when there is no such person.
pub async fn add_coauthor(
    db: impl PgExecutor<'_>,
    quiz_id: Uuid,
    user: Uuid,
    added_by: Uuid,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "WITH u AS (SELECT id FROM users WHERE id = $2),
              i AS (INSERT INTO quiz_coauthors (quiz_id, user_id, added_by)
                    SELECT $1, id, $3 FROM u ON CONFLICT (quiz_id, user_id) DO NOTHING)
         SELECT EXISTS (SELECT 1 FROM u)",
    )
    .bind(quiz_id)
    .bind(user)
    .bind(added_by)
    .fetch_one(db)
    .await
}

/// Removes a co-author; `false` when they were not one.
pub async fn remove_coauthor(
    db: impl PgExecutor<'_>,
    quiz_id: Uuid,
    user: Uuid,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("DELETE FROM quiz_coauthors WHERE quiz_id = $1 AND user_id = $2")
        .bind(quiz_id)
        .bind(user)
        .execute(db)
        .await?;
    Ok(done.rows_affected() > 0)
}
