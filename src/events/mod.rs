//! Learning events out: the delivery machinery every outbox consumer shares, and the xAPI
//! consumer.
//!
//! The outbox (migration 0003) holds the events, each written in the transaction of the change
//! it reports. Delivery state is per consumer (migration 0022): a dispatch step, run by every
//! worker before it claims, turns each new event into one `deliveries` row per consumer that
//! wants its topic (`event_consumers`); then each consumer claims its due rows with a lease
//! (`FOR UPDATE SKIP LOCKED`, so instances share the work), delivers, and records the outcome:
//! delivered, or failed with exponential backoff, parked after [`MAX_TRIES`] until an admin
//! retries it. Consumers: LTI grade passback (`lti::ags`, [`AGS`]), xAPI ([`xapi`],
//! [`XAPI`]) and each webhook subscription ([`webhooks`], `webhook:<id>`). A week after its
//! dispatch an event whose deliveries are all done is purged.
//!
//! **Who wants what.** The hot writers (a start, an answer, a cleared answer) add their event
//! only when a consumer wants its topic, decided in the writing statement itself:
//! `… WHERE EXISTS (SELECT 1 FROM event_consumers WHERE topic = '<topic>')`, an uncorrelated
//! subquery run once. By default nobody wants those (no xAPI, no webhook for them), and their
//! outbox row was the one part of an answer's statement that cost PostgreSQL something
//! (BENCHMARKS.md, "The answer against the cheapest durable HTTP write"). A consumer gets the
//! events of the writes that start after its registration commits. (Written into each statement,
//! not as a SQL function: PostgreSQL does not inline a function whose body has a subquery, and
//! calling one made the answer slower than writing the row.)
//!
//! - `store`: the SQL of all of this.
//! - `xapi`: statements from events (pure) and the worker that sends them to an LRS.
//! - `webhooks`: signed webhooks (Standard Webhooks): subscriptions, their secrets, the worker
//!   and their admin API.
//! - `routes`: the admin list and retry of xAPI deliveries.

pub mod routes;
pub mod store;
pub mod webhooks;
pub mod xapi;

use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use utoipa::ToSchema;

pub use store::Claimed;

/// The LTI grade passback consumer.
pub const AGS: &str = "lti-ags";
/// The xAPI consumer.
pub const XAPI: &str = "xapi";
/// After this many failed tries a delivery is parked until an admin retries it.
pub const MAX_TRIES: i32 = 12;
/// How long a claimed delivery is left alone by other workers while it is being delivered.
pub const LEASE_SECS: i64 = 300;
/// Events dispatched longer ago than this, whose deliveries are all done, are purged.
pub const RETENTION: Duration = Duration::days(7);
/// How many new events one dispatch statement takes.
const DISPATCH_BATCH: i64 = 1000;
/// How many events one purge statement removes.
const PURGE_BATCH: i64 = 5000;

/// The wait before the next try after `tries` failed ones; `None`: park it.
pub fn backoff(tries: i32) -> Option<Duration> {
    if tries >= MAX_TRIES {
        return None;
    }
    let exp = tries.clamp(1, 20) - 1;
    Some(Duration::seconds((10i64 << exp).min(3600)))
}

/// What became of one delivery.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Done; with a note when there was nothing to send (and why).
    Delivered(Option<String>),
    Failed(String),
}

/// Dispatches the new events to the consumers that want them, then claims up to `limit` of
/// `consumer`'s due deliveries (each leased for [`LEASE_SECS`], its try counted).
pub async fn claim(pool: &PgPool, consumer: &str, limit: i64) -> Result<Vec<Claimed>, sqlx::Error> {
    dispatch_new(pool).await?;
    store::claim(pool, consumer, limit).await
}

/// Dispatches every new event to the consumers that want it (a worker that claims for several
/// consumers dispatches once, then claims each with [`store::claim`]).
pub async fn dispatch_new(pool: &PgPool) -> Result<(), sqlx::Error> {
    while store::dispatch(pool, DISPATCH_BATCH).await? == DISPATCH_BATCH as u64 {}
    Ok(())
}

/// Records what became of a claimed delivery: done, or the next try after the backoff (or
/// parked).
pub async fn record(
    pool: &PgPool,
    consumer: &str,
    event: &Claimed,
    outcome: &Outcome,
) -> Result<(), sqlx::Error> {
    match outcome {
        Outcome::Delivered(note) => {
            store::mark_delivered(pool, consumer, event.id, note.as_deref()).await
        }
        Outcome::Failed(error) => {
            let next = backoff(event.tries).map(|d| d.num_seconds());
            store::mark_failed(pool, consumer, event.id, error, next).await
        }
    }
}

/// Purges old events whose deliveries are done, at most once a minute per `last`.
pub async fn purge_now_and_then(pool: &PgPool, last: &mut Instant) {
    if last.elapsed() < StdDuration::from_secs(60) {
        return;
    }
    *last = Instant::now();
    match store::purge(pool, RETENTION.num_seconds(), PURGE_BATCH).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(events = n, "purged delivered outbox events"),
        Err(e) => tracing::warn!(error = %e, "purging the outbox failed"),
    }
}

/// Which deliveries to list.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryFilter {
    /// Failed at least once and not delivered since (including parked ones).
    Failed,
    /// Not delivered yet.
    Pending,
    Delivered,
}

impl DeliveryFilter {
    /// The filter on a delivery row `d` (a constant fragment, never the caller's text).
    pub fn sql(filter: Option<Self>) -> &'static str {
        match filter {
            Some(Self::Failed) => "d.delivered_at IS NULL AND d.last_error IS NOT NULL",
            Some(Self::Pending) => "d.delivered_at IS NULL",
            Some(Self::Delivered) => "d.delivered_at IS NOT NULL",
            None => "true",
        }
    }
}

/// A delivery of an event to a consumer, as admins see it.
#[derive(Debug, Serialize, ToSchema, sqlx::FromRow)]
pub struct EventDelivery {
    /// The outbox event's id.
    pub id: i64,
    pub topic: String,
    /// The attempt the event is about.
    pub attempt_id: uuid::Uuid,
    /// `delivered`, `pending` (not yet tried or waiting for its next try), `failed` (tried,
    /// will be tried again) or `parked` (gave up after many tries; retry it by hand).
    pub status: String,
    pub tries: i32,
    /// The last failure, or why nothing was sent.
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub next_attempt_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EventDeliveryList {
    pub items: Vec<EventDelivery>,
}

/// What a retry found.
pub enum Retry<T> {
    Scheduled(Box<T>),
    AlreadyDelivered,
    NotFound,
}

/// Makes a consumer's undelivered event due now, with its tries counted afresh; `read` reads
/// the delivery as the consumer's admin API shows it (`None`: no such delivery), and
/// `delivered` tells whether that says it is done.
pub async fn retry<T, F, Fut>(
    pool: &PgPool,
    consumer: &str,
    id: i64,
    read: F,
    delivered: impl Fn(&T) -> bool,
) -> Result<Retry<T>, sqlx::Error>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>, sqlx::Error>>,
{
    store::reschedule(pool, consumer, id).await?;
    Ok(match read().await? {
        None => Retry::NotFound,
        Some(d) if delivered(&d) => Retry::AlreadyDelivered,
        Some(d) => Retry::Scheduled(Box::new(d)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_an_hour_then_parks() {
        assert_eq!(backoff(1), Some(Duration::seconds(10)));
        assert_eq!(backoff(2), Some(Duration::seconds(20)));
        assert_eq!(backoff(3), Some(Duration::seconds(40)));
        assert_eq!(backoff(10), Some(Duration::seconds(3600)));
        assert_eq!(backoff(MAX_TRIES), None);
    }
}
