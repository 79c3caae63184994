//! An erased account stops at once: its access tokens are refused on the next request, on
//! every instance, not when they expire.
//!
//! An access token is a JWT read without the database and valid for 15 minutes, so erasure
//! alone would leave it working that long (and a profile write through it would put a name
//! back on the erased row). So each authenticated request asks whether its account is live.
//! PostgreSQL holds the answer (`users.erased_at`). Each instance remembers the ids it found
//! live, in a bounded cache, and only while it listens to `quizd_erasures`: the erasing
//! transaction sends that notification with the id, PostgreSQL delivers it to every listener
//! when the transaction commits, and each instance forgets the id. Without a live listener
//! (at start, after a lost connection, until it is back) nothing is remembered and every
//! request reads PostgreSQL: one primary-key lookup (`store::account_is_live`; an index scan
//! of `users_pkey`, a few microseconds of server time, measured with `EXPLAIN ANALYZE`, plus
//! one round trip). With the listener, a request of a known account reads nothing.
//!
//! Race: a lookup that reads "live" just before an erasure commits must not cache that answer
//! after the notification was handled. Every forgetting bumps `changes` under the same lock
//! that an insertion checks it under, so such a lookup does not cache its answer.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use quick_cache::sync::Cache;
use sqlx::PgPool;
use uuid::Uuid;

/// The channel an erasure is announced on (its payload: the erased id).
pub const CHANNEL: &str = "quizd_erasures";

/// How many live accounts an instance remembers (16 bytes and the cache's overhead each).
const CAPACITY: usize = 100_000;

/// The accounts this instance knows to be live (not erased), while it hears erasures.
pub struct LiveAccounts {
    live: Cache<Uuid, ()>,
    listening: AtomicBool,
    /// Bumped by every forgetting, under `insert`.
    changes: AtomicU64,
    insert: Mutex<()>,
}

impl Default for LiveAccounts {
    fn default() -> Self {
        Self {
            live: Cache::new(CAPACITY),
            listening: AtomicBool::new(false),
            changes: AtomicU64::new(0),
            insert: Mutex::new(()),
        }
    }
}

impl LiveAccounts {
    /// Whether the account `id` exists and is not erased.
    pub async fn is_live(&self, pool: &PgPool, id: Uuid) -> Result<bool, sqlx::Error> {
        let listening = self.listening.load(Ordering::Acquire);
        if listening && self.live.get(&id).is_some() {
            return Ok(true);
        }
        let before = self.changes.load(Ordering::Acquire);
        let live = super::store::account_is_live(pool, id).await?;
        if live && listening {
            let _guard = self.insert.lock().expect("live accounts lock");
            if self.listening.load(Ordering::Acquire)
                && self.changes.load(Ordering::Acquire) == before
            {
                self.live.insert(id, ());
            }
        }
        Ok(live)
    }

    /// The account `id` was erased (here, or on another instance): no longer live.
    pub fn forget(&self, id: Uuid) {
        let _guard = self.insert.lock().expect("live accounts lock");
        self.changes.fetch_add(1, Ordering::AcqRel);
        self.live.remove(&id);
    }

    /// Notifications may have been missed (or start now): forget everything.
    fn set_listening(&self, on: bool) {
        let _guard = self.insert.lock().expect("live accounts lock");
        self.listening.store(on, Ordering::Release);
        self.changes.fetch_add(1, Ordering::AcqRel);
        self.live.clear();
    }
}

/// Hears erasures made on any instance until quizd stops, reconnecting after a lost
/// connection (and remembering nothing until it is back).
pub async fn listen_for_erasures(
    state: actix_web::web::Data<crate::state::AppState>,
    mut shutdown: crate::background::Shutdown,
) {
    let accounts = &state.accounts;
    let listen = async {
        loop {
            if let Ok(mut listener) =
                sqlx::postgres::PgListener::connect_with(state.session_pool()).await
                && listener.listen(CHANNEL).await.is_ok()
            {
                accounts.set_listening(true);
                // `Ok(None)`: the connection was lost; notifications may have been missed.
                while let Ok(Some(notification)) = listener.try_recv().await {
                    match notification.payload().parse() {
                        Ok(id) => accounts.forget(id),
                        Err(_) => accounts.set_listening(true),
                    }
                }
            }
            accounts.set_listening(false);
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
    };
    tokio::select! {
        _ = listen => {}
        _ = shutdown.stopping() => accounts.set_listening(false),
    }
}
