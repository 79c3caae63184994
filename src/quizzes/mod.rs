//! The quiz catalogue: quizzes, their immutable versions, and the read API.

pub mod access;
pub mod authoring;
pub mod cli;
pub mod interchange;
pub mod media;
pub mod models;
pub mod routes;
pub mod store;
pub mod translations;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use quick_cache::sync::Cache;
use quick_cache::{DefaultHashBuilder, Lifecycle, OptionsBuilder, Weighter};
use sqlx::PgPool;
use uuid::Uuid;

pub use models::QuizVersion;

/// The version cache's capacity by default: some 10–30 ordinary quizzes' versions per MiB.
pub const DEFAULT_CAPACITY_BYTES: u64 = 64 << 20;

/// Shards of the version cache. A version weighing more than (almost) a shard's share of the
/// capacity is not kept: it is loaded for each request that needs it.
const SHARDS: usize = 4;

/// A cached version with its weight, [`QuizVersion::approx_bytes`] (worked out once).
#[derive(Clone)]
struct Cached {
    version: Arc<QuizVersion>,
    bytes: u64,
}

#[derive(Clone)]
struct ByBytes;

impl Weighter<Uuid, Cached> for ByBytes {
    fn weight(&self, _: &Uuid, v: &Cached) -> u64 {
        v.bytes
    }
}

/// Collects the versions a request evicts, for [`VersionCache::on_evict`]; they are dropped
/// after the shard lock is released.
#[derive(Clone)]
struct Evictions;

impl Lifecycle<Uuid, Cached> for Evictions {
    type RequestState = Vec<(Uuid, Cached)>;
    fn on_evict(&self, state: &mut Self::RequestState, key: Uuid, val: Cached) {
        state.push((key, val));
    }
}

type EvictHook = Box<dyn Fn(&[Uuid]) + Send + Sync>;

/// Immutable quiz versions, kept in memory within a capacity in bytes: a version never
/// changes, so a cached one can never be stale, and an evicted one is loaded again from
/// PostgreSQL when it is needed. Which version is current is cached per slug only while this
/// process listens to PostgreSQL's `quizd_quizzes` notifications (a trigger sends one in the
/// transaction that changes a quiz's current version); without a live listener it is read from
/// PostgreSQL on every request.
pub struct VersionCache {
    versions: Cache<Uuid, Cached, ByBytes, DefaultHashBuilder, Evictions>,
    /// Told which versions were evicted, so that what else holds them (the attempt cache's
    /// layouts) lets them go too: otherwise an evicted version would live on unaccounted.
    on_evict: OnceLock<EvictHook>,
    current: RwLock<HashMap<String, Uuid>>,
    /// Whether the listener is connected and subscribed.
    listening: AtomicBool,
    /// Bumped by every notification: a lookup that raced with one does not cache its answer.
    changes: AtomicU64,
}

impl Default for VersionCache {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY_BYTES)
    }
}

impl VersionCache {
    /// A cache holding versions of at most `bytes` together (by [`QuizVersion::approx_bytes`]).
    pub fn with_capacity(bytes: u64) -> Self {
        let options = OptionsBuilder::new()
            .estimated_items_capacity(256)
            .weight_capacity(bytes)
            .shards(SHARDS)
            .build()
            .expect("valid cache options");
        Self {
            versions: Cache::with_options(
                options,
                ByBytes,
                DefaultHashBuilder::default(),
                Evictions,
            ),
            on_evict: OnceLock::new(),
            current: RwLock::default(),
            listening: AtomicBool::new(false),
            changes: AtomicU64::new(0),
        }
    }

    /// Changes the capacity (evicting what no longer fits).
    pub fn set_capacity(&self, bytes: u64) {
        self.versions.set_capacity(bytes);
    }

    /// Calls `hook` with the ids of the versions each insertion evicted (set once).
    pub fn on_evict(&self, hook: impl Fn(&[Uuid]) + Send + Sync + 'static) {
        let _ = self.on_evict.set(Box::new(hook));
    }

    /// The weight of what is cached now, its capacity, and how many versions it holds.
    pub fn usage(&self) -> (u64, u64, usize) {
        (
            self.versions.weight(),
            self.versions.capacity(),
            self.versions.len(),
        )
    }

    /// Whether this very version is the cached one (not an evicted copy still in use).
    pub fn holds(&self, version: &Arc<QuizVersion>) -> bool {
        self.versions
            .peek(&version.id)
            .is_some_and(|c| Arc::ptr_eq(&c.version, version))
    }

    pub async fn get(
        &self,
        pool: &PgPool,
        id: Uuid,
    ) -> Result<Option<Arc<QuizVersion>>, sqlx::Error> {
        if let Some(c) = self.versions.get(&id) {
            return Ok(Some(c.version));
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
        let bytes = version.approx_bytes() as u64;
        let mut evicted = Vec::new();
        self.versions.insert_with_lifecycle(
            id,
            Cached {
                version: version.clone(),
                bytes,
            },
            &mut evicted,
        );
        if !evicted.is_empty()
            && let Some(hook) = self.on_evict.get()
        {
            let ids: Vec<Uuid> = evicted.iter().map(|(id, _)| *id).collect();
            hook(&ids);
        }
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

/// Listens for quiz changes until quizd stops, reconnecting after a lost connection
/// (and caching nothing until it is back).
pub async fn listen_for_changes(
    state: actix_web::web::Data<crate::state::AppState>,
    mut shutdown: crate::background::Shutdown,
) {
    let cache = &state.quizzes;
    let listen = async {
        loop {
            if let Ok(mut listener) =
                sqlx::postgres::PgListener::connect_with(state.session_pool()).await
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
    };
    tokio::select! {
        _ = listen => {}
        _ = shutdown.stopping() => cache.set_listening(false),
    }
}
