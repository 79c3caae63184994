//! The quiz catalogue: quizzes, their immutable versions, and the read API.

pub mod authoring;
pub mod models;
pub mod routes;
pub mod store;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use sqlx::PgPool;
use uuid::Uuid;

pub use models::QuizVersion;

/// Immutable quiz versions, kept in memory forever once loaded: a version never changes, so
/// the cache can never be stale. Which version is current is always read from PostgreSQL.
#[derive(Default)]
pub struct VersionCache {
    versions: RwLock<HashMap<Uuid, Arc<QuizVersion>>>,
}

impl VersionCache {
    pub async fn get(
        &self,
        pool: &PgPool,
        id: Uuid,
    ) -> Result<Option<Arc<QuizVersion>>, sqlx::Error> {
        if let Some(v) = self.versions.read().expect("cache lock").get(&id) {
            return Ok(Some(v.clone()));
        }
        let Some(row) = store::version(pool, id).await? else {
            return Ok(None);
        };
        let version = Arc::new(QuizVersion::new(
            row.id,
            row.quiz_id,
            row.version,
            row.created_at,
            row.content.0,
            row.practice_assignment_id,
        ));
        self.versions
            .write()
            .expect("cache lock")
            .insert(id, version.clone());
        Ok(Some(version))
    }

    /// The current version of the quiz with this slug.
    pub async fn current(
        &self,
        pool: &PgPool,
        slug: &str,
    ) -> Result<Option<Arc<QuizVersion>>, sqlx::Error> {
        match store::current_version_id(pool, slug).await? {
            Some(id) => self.get(pool, id).await,
            None => Ok(None),
        }
    }
}
