//! The quiz catalogue: quizzes, their immutable versions, and the read API.

pub mod access;
pub mod authoring;
pub mod models;
pub mod routes;
pub mod store;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use sqlx::PgPool;
use uuid::Uuid;

pub use models::QuizVersion;

/// Immutable quiz versions, kept in memory forever once loaded: a version never changes, so
/// that part can never be stale. Which version is current is cached per slug only while this
/// process listens to PostgreSQL's `quizd_quizzes` notifications (a trigger sends one in the
/// transaction that changes a quiz's current version); without a live listener it is read from
/// PostgreSQL on every request.
#[derive(Default)]
pub struct VersionCache {
    versions: RwLock<HashMap<Uuid, Arc<QuizVersion>>>,
    current: RwLock<HashMap<String, Uuid>>,
    /// Whether the listener is connected and subscribed.
    listening: AtomicBool,
    /// Bumped by every notification: a lookup that raced with one does not cache its answer.
    changes: AtomicU64,
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
        let listening = self.listening.load(Ordering::Acquire);
        let cached = listening
            .then(|| self.current.read().expect("cache lock").get(slug).copied())
            .flatten();
        if let Some(id) = cached {
            return self.get(pool, id).await;
        }
        let before = self.changes.load(Ordering::Acquire);
        let Some(id) = store::current_version_id(pool, slug).await? else {
            return Ok(None);
        };
        if listening && self.listening.load(Ordering::Acquire) {
            let mut current = self.current.write().expect("cache lock");
            if self.changes.load(Ordering::Acquire) == before {
                current.insert(slug.to_string(), id);
            }
        }
        self.get(pool, id).await
    }

    /// A quiz changed (or notifications may have been missed): forget every current version.
    pub fn forget_current(&self) {
        let mut current = self.current.write().expect("cache lock");
        self.changes.fetch_add(1, Ordering::AcqRel);
        current.clear();
    }

    fn set_listening(&self, on: bool) {
        self.listening.store(on, Ordering::Release);
        self.forget_current();
    }
}

/// Listens for quiz changes for the life of the server, reconnecting after a lost connection
/// (and caching nothing until it is back).
pub fn spawn_change_listener(state: actix_web::web::Data<crate::app::AppState>) {
    actix_web::rt::spawn(async move {
        let cache = &state.quizzes;
        loop {
            if let Ok(mut listener) = sqlx::postgres::PgListener::connect_with(&state.pool).await
                && listener.listen("quizd_quizzes").await.is_ok()
            {
                cache.set_listening(true);
                // `Ok(None)`: the connection was lost; notifications may have been missed.
                while let Ok(Some(_)) = listener.try_recv().await {
                    cache.forget_current();
                }
            }
            cache.set_listening(false);
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
    });
}
