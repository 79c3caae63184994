//! SQL for idempotency keys: claim a key before the request runs, record its response after,
//! release it when the request did not succeed.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgExecutor};
use uuid::Uuid;

/// At most this many expired keys (anyone's) are purged by one claim: the purge keeps pace with
/// the keys coming in, at a bounded cost to each request.
const PURGE_BATCH: i64 = 100;

/// A key someone else's request (or an earlier one) holds.
#[derive(Debug, FromRow)]
pub struct Held {
    pub request_hash: Vec<u8>,
    pub response_status: Option<i16>,
    pub response_content_type: Option<String>,
    pub response_location: Option<String>,
    pub response_body: Option<Vec<u8>>,
}

/// Deletes up to [`PURGE_BATCH`] keys created before `expired_before`.
pub async fn purge_expired(
    db: impl PgExecutor<'_>,
    expired_before: DateTime<Utc>,
) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(
             SELECT ctid FROM idempotency_keys WHERE created_at < $1 LIMIT $2))",
    )
    .bind(expired_before)
    .bind(PURGE_BATCH)
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// Frees this person's `key` if it has expired, or if its request never finished and its lease
/// (`abandoned_before`) has lapsed, so that it can be claimed anew.
pub async fn free_stale(
    db: impl PgExecutor<'_>,
    user_id: Uuid,
    key: &str,
    expired_before: DateTime<Utc>,
    abandoned_before: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query(
        "DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2
             AND (created_at < $3 OR (response_status IS NULL AND created_at < $4))",
    )
    .bind(user_id)
    .bind(key)
    .bind(expired_before)
    .bind(abandoned_before)
    .execute(db)
    .await?;
    Ok(())
}

/// Inserts the key with no response yet; `false` when the person holds this key already. Of two
/// requests that insert the same key at once, exactly one gets `true`.
pub async fn insert(
    db: impl PgExecutor<'_>,
    user_id: Uuid,
    key: &str,
    request_hash: &[u8],
    now: DateTime<Utc>,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "INSERT INTO idempotency_keys (user_id, key, request_hash, created_at)
         VALUES ($1, $2, $3, $4) ON CONFLICT (user_id, key) DO NOTHING",
    )
    .bind(user_id)
    .bind(key)
    .bind(request_hash)
    .bind(now)
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The key as held now, if it is.
pub async fn held(db: impl PgExecutor<'_>, user_id: Uuid, key: &str) -> sqlx::Result<Option<Held>> {
    sqlx::query_as(
        "SELECT request_hash, response_status, response_content_type, response_location,
                response_body
         FROM idempotency_keys WHERE user_id = $1 AND key = $2",
    )
    .bind(user_id)
    .bind(key)
    .fetch_optional(db)
    .await
}

/// Records the response of the request that claimed the key at `claimed_at`.
#[allow(clippy::too_many_arguments)]
pub async fn record(
    db: impl PgExecutor<'_>,
    user_id: Uuid,
    key: &str,
    claimed_at: DateTime<Utc>,
    status: u16,
    content_type: Option<&str>,
    location: Option<&str>,
    body: &[u8],
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE idempotency_keys
         SET response_status = $3, response_content_type = $4, response_location = $5,
             response_body = $6
         WHERE user_id = $1 AND key = $2 AND created_at = $7 AND response_status IS NULL",
    )
    .bind(user_id)
    .bind(key)
    .bind(status as i16)
    .bind(content_type)
    .bind(location)
    .bind(body)
    .bind(claimed_at)
    .execute(db)
    .await?;
    Ok(())
}

/// Lets go of a key whose request did not succeed (or whose response is not kept), so that a
/// retry runs again.
pub async fn release(
    db: impl PgExecutor<'_>,
    user_id: Uuid,
    key: &str,
    claimed_at: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query(
        "DELETE FROM idempotency_keys
         WHERE user_id = $1 AND key = $2 AND created_at = $3 AND response_status IS NULL",
    )
    .bind(user_id)
    .bind(key)
    .bind(claimed_at)
    .execute(db)
    .await?;
    Ok(())
}
