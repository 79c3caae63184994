//! SQL of the outbox's deliveries (migration 0022): dispatch, claim, outcome, retry, purge,
//! the consumers' topics, and the admin view of a consumer's deliveries.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{FromRow, PgExecutor};
use uuid::Uuid;

use super::{AGS, DeliveryFilter, LEASE_SECS};

/// A delivery claimed by its consumer: the event and the tries so far (this one included).
#[derive(Debug, FromRow)]
pub struct Claimed {
    /// The outbox event's id.
    pub id: i64,
    pub topic: String,
    pub aggregate_id: Uuid,
    pub payload: Json<Value>,
    pub created_at: DateTime<Utc>,
    pub tries: i32,
}

/// Takes up to `limit` undispatched events (skipping those another instance holds), writes a
/// delivery for each consumer that wants the event's topic, and marks them dispatched; returns
/// how many events it took. Grade passback wants only the events of attempts whose assignment
/// an LMS links.
pub async fn dispatch(db: impl PgExecutor<'_>, limit: i64) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "WITH batch AS (
            SELECT id, topic, aggregate_id, created_at FROM outbox
             WHERE dispatched_at IS NULL
             ORDER BY id LIMIT $1
             FOR UPDATE SKIP LOCKED
         ), fanned AS (
            INSERT INTO deliveries (consumer, event_id)
            SELECT c.consumer, b.id FROM batch b
              JOIN event_consumers c
                ON c.topic = b.topic AND (c.since IS NULL OR b.created_at >= c.since)
             WHERE c.consumer <> $2
                OR EXISTS (SELECT 1 FROM attempts t
                             JOIN lti_resource_links l ON l.assignment_id = t.assignment_id
                            WHERE t.id = b.aggregate_id)
            ON CONFLICT (consumer, event_id) DO NOTHING
         )
         UPDATE outbox o SET dispatched_at = now() FROM batch b WHERE o.id = b.id",
    )
    .bind(limit)
    .bind(AGS)
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// Claims up to `limit` of a consumer's due deliveries and leases them for [`LEASE_SECS`]:
/// `FOR UPDATE … SKIP LOCKED`, so that several quizd instances share the work without waiting
/// on each other, and the lease (a later `next_attempt_at`) keeps the others off a delivery
/// while it is under way, after this statement's locks are gone. The try is counted here,
/// before the delivery: a crash mid-delivery still counts it.
pub async fn claim(
    db: impl PgExecutor<'_>,
    consumer: &str,
    limit: i64,
) -> Result<Vec<Claimed>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "WITH due AS (
            SELECT consumer, event_id FROM deliveries
             WHERE consumer = $1 AND delivered_at IS NULL AND next_attempt_at <= now()
             ORDER BY next_attempt_at, event_id
             LIMIT $2
             FOR UPDATE SKIP LOCKED
         ), leased AS (
            UPDATE deliveries d
               SET next_attempt_at = now() + interval '{LEASE_SECS} seconds', tries = d.tries + 1
              FROM due WHERE d.consumer = due.consumer AND d.event_id = due.event_id
            RETURNING d.event_id, d.tries
         )
         SELECT o.id, o.topic, o.aggregate_id, o.payload, o.created_at, leased.tries
           FROM leased JOIN outbox o ON o.id = leased.event_id
          ORDER BY o.id"
    )))
    .bind(consumer)
    .bind(limit)
    .fetch_all(db)
    .await
}

/// Marks a delivery done, with a note when nothing was sent (and why).
pub async fn mark_delivered(
    db: impl PgExecutor<'_>,
    consumer: &str,
    event: i64,
    note: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE deliveries SET delivered_at = now(), last_error = $3
          WHERE consumer = $1 AND event_id = $2",
    )
    .bind(consumer)
    .bind(event)
    .bind(note)
    .execute(db)
    .await?;
    Ok(())
}

/// Records a failed delivery and when to try again: after `retry_in_secs`, or, with `None`,
/// never (`next_attempt_at` = infinity: parked until an admin retries it).
pub async fn mark_failed(
    db: impl PgExecutor<'_>,
    consumer: &str,
    event: i64,
    error: &str,
    retry_in_secs: Option<i64>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE deliveries SET last_error = $3,
                next_attempt_at = CASE WHEN $4::bigint IS NULL THEN 'infinity'
                                       ELSE now() + make_interval(secs => $4) END
          WHERE consumer = $1 AND event_id = $2",
    )
    .bind(consumer)
    .bind(event)
    .bind(error)
    .bind(retry_in_secs)
    .execute(db)
    .await?;
    Ok(())
}

/// Makes a consumer's undelivered delivery due now, with its tries counted afresh; `false`
/// when there is none (delivered already, not dispatched yet, or no such event).
pub async fn reschedule(
    db: impl PgExecutor<'_>,
    consumer: &str,
    event: i64,
) -> Result<bool, sqlx::Error> {
    let updated = sqlx::query(
        "UPDATE deliveries SET next_attempt_at = now(), tries = 0
          WHERE consumer = $1 AND event_id = $2 AND delivered_at IS NULL",
    )
    .bind(consumer)
    .bind(event)
    .execute(db)
    .await?;
    Ok(updated.rows_affected() != 0)
}

/// Deletes up to `limit` events dispatched more than `older_than_secs` ago whose deliveries
/// are all done (their delivery rows go with them); a parked or pending delivery keeps its
/// event.
pub async fn purge(
    db: impl PgExecutor<'_>,
    older_than_secs: i64,
    limit: i64,
) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "DELETE FROM outbox WHERE id IN (
            SELECT o.id FROM outbox o
             WHERE o.dispatched_at < now() - make_interval(secs => $1)
               AND NOT EXISTS (SELECT 1 FROM deliveries d
                                WHERE d.event_id = o.id AND d.delivered_at IS NULL)
             ORDER BY o.dispatched_at LIMIT $2)",
    )
    .bind(older_than_secs as f64)
    .bind(limit)
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// Makes `topics` the ones `consumer` wants from now on (none: it wants nothing).
pub async fn set_topics(
    db: impl PgExecutor<'_>,
    consumer: &str,
    topics: &[&str],
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "WITH gone AS (
            DELETE FROM event_consumers WHERE consumer = $1 AND NOT topic = ANY($2)
         )
         INSERT INTO event_consumers (consumer, topic) SELECT $1, unnest($2::text[])
         ON CONFLICT DO NOTHING",
    )
    .bind(consumer)
    .bind(topics)
    .execute(db)
    .await?;
    Ok(())
}

/// Makes `topics` the ones `consumer` wants from now on, taking only events created from now
/// on for a topic it did not want before (`since`, migration 0023; none: it wants nothing).
pub async fn set_topics_from_now(
    db: impl PgExecutor<'_>,
    consumer: &str,
    topics: &[&str],
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "WITH gone AS (
            DELETE FROM event_consumers WHERE consumer = $1 AND NOT topic = ANY($2)
         )
         INSERT INTO event_consumers (consumer, topic, since)
         SELECT $1, unnest($2::text[]), now()
         ON CONFLICT DO NOTHING",
    )
    .bind(consumer)
    .bind(topics)
    .execute(db)
    .await?;
    Ok(())
}

/// A delivery's status as admins see it, from the delivery row `d` (absent: not dispatched
/// yet, so pending) of the event `o`.
pub const STATUS: &str = "CASE WHEN d.delivered_at IS NOT NULL THEN 'delivered'
             WHEN NOT isfinite(d.next_attempt_at) THEN 'parked'
             WHEN d.last_error IS NOT NULL THEN 'failed'
             ELSE 'pending' END AS status,
        coalesce(d.tries, 0) AS tries, d.last_error, o.created_at, d.delivered_at,
        CASE WHEN d.delivered_at IS NOT NULL THEN NULL
             WHEN d.next_attempt_at IS NULL THEN o.created_at
             WHEN isfinite(d.next_attempt_at) THEN d.next_attempt_at END AS next_attempt_at";

/// A consumer's deliveries, newest first, as `T` (an [`super::EventDelivery`], or a consumer's own
/// view: the row has the event's `id`, `topic`, `aggregate_id` (also as `attempt_id`) and the
/// columns of [`STATUS`]).
pub async fn deliveries<T>(
    db: impl PgExecutor<'_>,
    consumer: &str,
    filter: Option<DeliveryFilter>,
    limit: i64,
) -> Result<Vec<T>, sqlx::Error>
where
    T: for<'r> FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
{
    let filter = DeliveryFilter::sql(filter);
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT o.id, o.topic, o.aggregate_id AS attempt_id, o.aggregate_id, {STATUS}
           FROM deliveries d JOIN outbox o ON o.id = d.event_id
          WHERE d.consumer = $1 AND {filter}
          ORDER BY d.event_id DESC LIMIT $2"
    )))
    .bind(consumer)
    .bind(limit)
    .fetch_all(db)
    .await
}

/// One of a consumer's deliveries, as `T` (see [`deliveries`]).
pub async fn delivery<T>(
    db: impl PgExecutor<'_>,
    consumer: &str,
    event: i64,
) -> Result<Option<T>, sqlx::Error>
where
    T: for<'r> FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
{
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT o.id, o.topic, o.aggregate_id AS attempt_id, o.aggregate_id, {STATUS}
           FROM deliveries d JOIN outbox o ON o.id = d.event_id
          WHERE d.consumer = $1 AND d.event_id = $2"
    )))
    .bind(consumer)
    .bind(event)
    .fetch_optional(db)
    .await
}

/// Forgets a consumer: its topics and its deliveries (a deleted webhook subscription).
pub async fn forget_consumer(
    db: &mut sqlx::PgConnection,
    consumer: &str,
) -> Result<(), sqlx::Error> {
    set_topics(&mut *db, consumer, &[]).await?;
    sqlx::query("DELETE FROM deliveries WHERE consumer = $1")
        .bind(consumer)
        .execute(&mut *db)
        .await?;
    Ok(())
}

/// What the xAPI statements of an attempt's events say about it besides the event.
#[derive(Debug, Clone, FromRow)]
pub struct AttemptFacts {
    pub id: Uuid,
    pub user_id: Uuid,
    pub email: Option<String>,
    pub quiz_version_id: Uuid,
    pub locale: String,
    pub started_at: DateTime<Utc>,
    pub slug: String,
    pub course_id: Option<Uuid>,
    pub course_title: Option<String>,
}

/// The facts of these attempts (an erased or deleted one is absent).
pub async fn attempt_facts(
    db: impl PgExecutor<'_>,
    attempts: &[Uuid],
) -> Result<Vec<AttemptFacts>, sqlx::Error> {
    sqlx::query_as(
        "SELECT t.id, t.user_id, u.email, t.quiz_version_id, t.locale, t.started_at, q.slug,
                c.id AS course_id, c.title AS course_title
           FROM attempts t
           JOIN users u ON u.id = t.user_id
           JOIN assignments a ON a.id = t.assignment_id
           JOIN quizzes q ON q.id = a.quiz_id
           LEFT JOIN courses c ON c.id = a.course_id
          WHERE t.id = ANY($1)",
    )
    .bind(attempts)
    .fetch_all(db)
    .await
}
