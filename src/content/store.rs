//! Importing content as immutable quiz versions.

use serde::Serialize;
use sqlx::PgPool;
use sqlx::types::Json;
use uuid::Uuid;

use super::QuizContent;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportStatus {
    Created,
    NewVersion,
    Unchanged,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Imported {
    pub slug: String,
    pub version: i32,
    pub version_id: Uuid,
    pub status: ImportStatus,
}

#[derive(sqlx::FromRow)]
struct CurrentVersion {
    quiz_id: Uuid,
    version_id: Option<Uuid>,
    version: Option<i32>,
    content_hash: Option<String>,
}

/// Imports quizzes in one transaction (each new version with its practice assignment): a quiz whose content hash equals its current version
/// is left alone; otherwise a new version is written and becomes current. Concurrent imports
/// (two instances starting) are serialized by an advisory lock.
/// `owner` becomes the owner of quizzes this import creates (authored over the API); content
/// imported from files has no owner, and only admins change it over the API.
pub async fn import(
    pool: &PgPool,
    quizzes: &[QuizContent],
    owner: Option<Uuid>,
) -> Result<Vec<Imported>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('quizd:content-import'))")
        .execute(&mut *tx)
        .await?;
    let mut out = Vec::new();
    for content in quizzes {
        let hash = content.content_hash();
        let current: Option<CurrentVersion> = sqlx::query_as(
            "SELECT q.id AS quiz_id, v.id AS version_id, v.version, v.content_hash
               FROM quizzes q LEFT JOIN quiz_versions v ON v.id = q.current_version_id
              WHERE q.slug = $1",
        )
        .bind(&content.slug)
        .fetch_optional(&mut *tx)
        .await?;
        let (quiz_id, next_version, status) = match current {
            Some(CurrentVersion {
                version_id: Some(version_id),
                version: Some(version),
                content_hash: Some(h),
                ..
            }) if h == hash => {
                out.push(Imported {
                    slug: content.slug.clone(),
                    version,
                    version_id,
                    status: ImportStatus::Unchanged,
                });
                continue;
            }
            Some(CurrentVersion {
                quiz_id, version, ..
            }) => (quiz_id, version.unwrap_or(0) + 1, ImportStatus::NewVersion),
            None => {
                let quiz_id = Uuid::now_v7();
                sqlx::query("INSERT INTO quizzes (id, slug, owner_id) VALUES ($1, $2, $3)")
                    .bind(quiz_id)
                    .bind(&content.slug)
                    .bind(owner)
                    .execute(&mut *tx)
                    .await?;
                (quiz_id, 1, ImportStatus::Created)
            }
        };
        let version_id = Uuid::now_v7();
        sqlx::query(
            "INSERT INTO quiz_versions (id, quiz_id, version, content_hash, content)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(version_id)
        .bind(quiz_id)
        .bind(next_version)
        .bind(&hash)
        .bind(Json(content))
        .execute(&mut *tx)
        .await?;
        crate::assignments::store::insert(
            &mut *tx,
            crate::assignments::store::NewAssignment {
                course_id: None,
                quiz_id,
                quiz_version_id: version_id,
                title: &content.title[&content.source_locale],
                policy: &content.practice,
                created_by: None,
            },
        )
        .await?;
        sqlx::query("UPDATE quizzes SET current_version_id = $2, updated_at = now() WHERE id = $1")
            .bind(quiz_id)
            .bind(version_id)
            .execute(&mut *tx)
            .await?;
        out.push(Imported {
            slug: content.slug.clone(),
            version: next_version,
            version_id,
            status,
        });
    }
    tx.commit().await?;
    Ok(out)
}
