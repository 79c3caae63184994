//! Importing content as immutable quiz versions.

use serde::Serialize;
use sqlx::PgPool;
use sqlx::types::Json;
use uuid::Uuid;

use super::QuizContent;
use super::media::Media;

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
    owner_id: Option<Uuid>,
    is_coauthor: bool,
    version_id: Option<Uuid>,
    version: Option<i32>,
    content_hash: Option<String>,
    content: Option<Json<QuizContent>>,
}

/// Who imports, which decides what an existing slug means.
#[derive(Debug, Clone, Copy)]
pub enum Importer {
    /// Content files (`quizd import`, `serve` at start-up): trusted like an admin; quizzes
    /// they create have no owner, so only admins change them over the API.
    Files,
    /// A person over the API. `create`: they asked for a new quiz (`POST`), so an existing
    /// slug is theirs to change only if they author it; otherwise (`PUT`) the slug must exist.
    Person { id: Uuid, admin: bool, create: bool },
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    /// The slug belongs to a quiz this person does not author.
    #[error("the slug '{0}' is taken")]
    SlugTaken(String),
    /// Changing a quiz this person does not author.
    #[error("not an author of '{0}'")]
    NotAuthor(String),
    /// Changing a quiz that does not exist.
    #[error("no quiz '{0}'")]
    NoSuchQuiz(String),
}

/// Imports quizzes in one transaction (each new version with its practice assignment, when its
/// content asks for one): a quiz whose content hash equals its current version is left alone;
/// otherwise a new version is written and becomes current. Concurrent imports (two instances
/// starting, two instructors creating one slug) are serialized by an advisory lock, and who may
/// write a slug is decided inside it, so two creates of one slug cannot both win.
pub async fn import(
    pool: &PgPool,
    quizzes: &[QuizContent],
    importer: Importer,
) -> Result<Vec<Imported>, ImportError> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('quizd:content-import'))")
        .execute(&mut *tx)
        .await?;
    let mut out = Vec::new();
    for content in quizzes {
        let mut content = content.clone();
        let current: Option<CurrentVersion> =
            current_version(&mut tx, &content.slug, importer).await?;
        // Which source each translation was made from carries over from the current version,
        // so a translation left unchanged while its source changed becomes stale.
        if let Some(Json(previous)) = current.as_ref().and_then(|c| c.content.as_ref()) {
            content.carry_translation_sources(previous);
        }
        let content = &content;
        let hash = content.content_hash();
        if let (Some(c), Importer::Person { id, admin, create }) = (&current, importer) {
            let author = admin || c.owner_id == Some(id) || c.is_coauthor;
            if !author && create {
                return Err(ImportError::SlugTaken(content.slug.clone()));
            }
            if !author {
                return Err(ImportError::NotAuthor(content.slug.clone()));
            }
        }
        if let (None, Importer::Person { create: false, .. }) = (&current, importer) {
            return Err(ImportError::NoSuchQuiz(content.slug.clone()));
        }
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
                let owner = match importer {
                    Importer::Person { id, .. } => Some(id),
                    Importer::Files => None,
                };
                sqlx::query("INSERT INTO quizzes (id, slug, owner_id) VALUES ($1, $2, $3)")
                    .bind(quiz_id)
                    .bind(&content.slug)
                    .bind(owner)
                    .execute(&mut *tx)
                    .await?;
                (quiz_id, 1, ImportStatus::Created)
            }
        };
        insert_media(&mut tx, &content.media).await?;
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
        if let Some(practice) = &content.practice {
            crate::assignments::store::insert(
                &mut *tx,
                crate::assignments::store::NewAssignment {
                    course_id: None,
                    quiz_id,
                    quiz_version_id: version_id,
                    title: &content.title[&content.source_locale],
                    policy: practice,
                    created_by: None,
                },
            )
            .await?;
        }
        // Webhooks' `quiz.version_created`, in the transaction that creates the version.
        sqlx::query(
            "INSERT INTO outbox (topic, aggregate_id, payload)
             VALUES ('quiz.version_created', $1,
                     jsonb_build_object('quiz_id', $2::uuid, 'slug', $3::text, 'version_id', $1,
                                        'version', $4::integer, 'created_at', now()))",
        )
        .bind(version_id)
        .bind(quiz_id)
        .bind(&content.slug)
        .bind(next_version)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE quizzes SET current_version_id = $2, visibility = $3, updated_at = now()
              WHERE id = $1",
        )
        .bind(quiz_id)
        .bind(version_id)
        .bind(content.visibility.as_str())
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

async fn current_version(
    tx: &mut sqlx::PgConnection,
    slug: &str,
    importer: Importer,
) -> Result<Option<CurrentVersion>, sqlx::Error> {
    sqlx::query_as(
        "SELECT q.id AS quiz_id, q.owner_id, v.id AS version_id, v.version, v.content_hash,
                    v.content,
                    EXISTS (SELECT 1 FROM quiz_coauthors c
                             WHERE c.quiz_id = q.id AND c.user_id = $2) AS is_coauthor
               FROM quizzes q LEFT JOIN quiz_versions v ON v.id = q.current_version_id
              WHERE q.slug = $1",
    )
    .bind(slug)
    .bind(match importer {
        Importer::Person { id, .. } => Some(id),
        Importer::Files => None,
    })
    .fetch_optional(tx)
    .await
}

/// Stores the image files of a new version (each once, by hash: a file already stored under
/// its hash is the same file), in the import's transaction.
async fn insert_media(tx: &mut sqlx::PgConnection, media: &Media) -> Result<(), sqlx::Error> {
    for file in &media.0 {
        sqlx::query(
            "INSERT INTO media (sha256, content_type, size, bytes) VALUES ($1, $2, $3, $4)
             ON CONFLICT (sha256) DO NOTHING",
        )
        .bind(&file.sha256)
        .bind(file.kind.content_type())
        .bind(i32::try_from(file.bytes.len()).unwrap_or(i32::MAX))
        .bind(&file.bytes[..])
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

/// A stored image: its type and bytes.
#[derive(sqlx::FromRow)]
pub struct StoredMedia {
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// The image stored under `sha256`, if any. Who may read it is for the caller to decide,
/// from the content that refers to it.
pub async fn media(
    db: impl sqlx::PgExecutor<'_>,
    sha256: &str,
) -> Result<Option<StoredMedia>, sqlx::Error> {
    sqlx::query_as("SELECT content_type, bytes FROM media WHERE sha256 = $1")
        .bind(sha256)
        .fetch_optional(db)
        .await
}
