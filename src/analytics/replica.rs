//! Where analytics read: a streaming replica (`--analytics-database-url`) when it is fresh
//! enough, else the primary.
//!
//! The freshness rule: **a report is never older than what the primary had committed when the
//! request came.** Each request reads, on the primary and in one statement, the assignments'
//! analytics generation (the cache key) and the primary's committed WAL position (its flush
//! position under `synchronous_commit`, past every commit it has made visible; see
//! `store::COMMITTED_LSN`). A cached
//! report of that generation is served as it is. Otherwise the replica is used only once it
//! has replayed up to that position (`pg_last_wal_replay_lsn()`), waiting up to
//! [`MAX_WAIT`] for it; a replica that lags longer, or that cannot be reached, is passed over
//! and the primary answers instead: a report is never marked stale because none is served
//! stale. A replica that could not be reached is not asked again for [`DOWN_FOR`], so that an
//! outage costs one short timeout, not one per request. Answering never reads the replica.
//!
//! A report read from the count tables takes the position again after making sure they are
//! built (it rebuilds them on the primary at first use, or finds them rebuilt by another
//! request), so that the replica must have them too.
//!
//! A report read on a replica that is ahead of the generation it is cached under is newer, not
//! older, than that generation: it is cached under the older key, which the next start or
//! finish replaces.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use sqlx::PgPool;

use super::store;

/// How long a request waits for the replica to replay up to the primary's position.
pub const MAX_WAIT: Duration = Duration::from_millis(250);
/// How long a replica that could not be reached is passed over.
pub const DOWN_FOR: Duration = Duration::from_secs(10);
/// Between two looks at the replica's replay position.
const POLL: Duration = Duration::from_millis(10);

/// A read-only replica and whether it is being passed over.
pub struct Replica {
    pool: PgPool,
    down_until: Mutex<Option<Instant>>,
}

impl Replica {
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            down_until: Mutex::new(None),
        }
    }

    fn is_down(&self) -> bool {
        self.down_until
            .lock()
            .expect("replica lock")
            .is_some_and(|until| Instant::now() < until)
    }

    fn mark_down(&self) {
        *self.down_until.lock().expect("replica lock") = Some(Instant::now() + DOWN_FOR);
    }

    /// Waits up to [`MAX_WAIT`] for the replica to replay up to `lsn`: `Ok(true)` once it has,
    /// `Ok(false)` if it still lags, `Err` if it cannot be asked.
    async fn caught_up(&self, lsn: &str) -> Result<bool, sqlx::Error> {
        let deadline = Instant::now() + MAX_WAIT;
        loop {
            if store::replayed_past(&self.pool, lsn).await? {
                return Ok(true);
            }
            if Instant::now() + POLL > deadline {
                return Ok(false);
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Where a read as fresh as the primary at `lsn` may run: the replica when it has replayed up
/// to `lsn` (within [`MAX_WAIT`]), else `primary`.
pub async fn pool_for(primary: &PgPool, replica: Option<&Replica>, lsn: &str) -> PgPool {
    let Some(replica) = replica else {
        return primary.clone();
    };
    if replica.is_down() {
        ::metrics::counter!("quizd_analytics_reads_total", "source" => "primary", "why" => "replica_down").increment(1);
        return primary.clone();
    }
    // The pool's own acquire timeout is 2 s; an unreachable replica must cost less.
    match tokio::time::timeout(MAX_WAIT * 2, replica.caught_up(lsn)).await {
        Ok(Ok(true)) => {
            ::metrics::counter!("quizd_analytics_reads_total", "source" => "replica", "why" => "fresh").increment(1);
            replica.pool.clone()
        }
        Ok(Ok(false)) => {
            ::metrics::counter!("quizd_analytics_reads_total", "source" => "primary", "why" => "replica_lags").increment(1);
            tracing::info!(
                lsn,
                "the analytics replica lags; this report reads the primary"
            );
            primary.clone()
        }
        Ok(Err(e)) => {
            replica.mark_down();
            ::metrics::counter!("quizd_analytics_reads_total", "source" => "primary", "why" => "replica_down").increment(1);
            tracing::warn!(error = %e, "the analytics replica cannot be reached; reading the primary for {DOWN_FOR:?}");
            primary.clone()
        }
        Err(_) => {
            replica.mark_down();
            ::metrics::counter!("quizd_analytics_reads_total", "source" => "primary", "why" => "replica_down").increment(1);
            tracing::warn!(
                "the analytics replica did not answer in time; reading the primary for {DOWN_FOR:?}"
            );
            primary.clone()
        }
    }
}
