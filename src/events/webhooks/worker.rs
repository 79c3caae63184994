//! The loop that delivers every enabled subscription's due events: one loop for them all, at
//! most [`CONCURRENCY`] subscriptions at once, each subscription's events in order, in batches
//! of [`BATCH`] (up to [`ROUNDS`] a tick, until one fails). A
//! delivery is a POST of the event's body, signed, with a [`TIMEOUT`]; any 2xx answer means
//! delivered, anything else (or no answer) a failure that the shared machinery backs off and,
//! after `events::MAX_TRIES`, parks. Of a receiver's answer only its status and the first
//! [`ERROR_BYTES`] of its body are read.

use std::time::Duration as StdDuration;

use futures_util::StreamExt;
use sqlx::PgPool;

use super::store::{self, Target};
use crate::events::{self, Claimed, Outcome};

/// Subscriptions delivered at once.
pub const CONCURRENCY: usize = 8;
/// Events one subscription takes per claim (each claimed one is leased for
/// `events::LEASE_SECS`, more than a batch of timeouts).
pub const BATCH: i64 = 20;
/// Batches one subscription may deliver per tick.
pub const ROUNDS: usize = 10;
/// The longest wait for a receiver, connection included.
pub const TIMEOUT: StdDuration = StdDuration::from_secs(5);
/// How much of a failing receiver's answer is kept.
const ERROR_BYTES: usize = 1024;

/// The HTTP client for receivers: bounded waits, no redirects (a redirect could lead anywhere,
/// and would carry the signed body there).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(TIMEOUT)
        .timeout(TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("quizd-webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("a client with these settings builds")
}

/// Delivers the due events of every enabled subscription; returns how many were delivered.
pub async fn deliver_due(
    pool: &PgPool,
    client: &reqwest::Client,
    allowed: &[String],
) -> Result<usize, sqlx::Error> {
    let targets = store::targets(pool).await?;
    if targets.is_empty() {
        return Ok(0);
    }
    events::dispatch_new(pool).await?;
    let results: Vec<Result<usize, sqlx::Error>> = futures_util::stream::iter(targets)
        .map(|t| deliver_subscription(pool, client, allowed, t))
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut delivered = 0;
    for r in results {
        delivered += r?;
    }
    Ok(delivered)
}

async fn deliver_subscription(
    pool: &PgPool,
    client: &reqwest::Client,
    allowed: &[String],
    target: Target,
) -> Result<usize, sqlx::Error> {
    let consumer = super::consumer(target.id);
    // A host the configuration no longer allows is not called: its deliveries wait (without
    // a try counted) until it is allowed again, or the subscription changes.
    let refused = reqwest::Url::parse(&target.url)
        .map_err(|e| e.to_string())
        .and_then(|u| super::callable(&u, allowed))
        .err();
    if let Some(why) = refused {
        tracing::warn!(webhook = %target.id, reason = %why, "webhook not delivered");
        return Ok(0);
    }
    let mut delivered = 0;
    // A backlog is worked through in one tick, a batch at a time, up to ROUNDS batches, until
    // a batch fails.
    for _ in 0..ROUNDS {
        let claimed = events::store::claim(pool, &consumer, BATCH).await?;
        let (done, failed) = deliver_batch(pool, client, &target, &consumer, &claimed).await?;
        delivered += done;
        if failed || (claimed.len() as i64) < BATCH {
            break;
        }
    }
    Ok(delivered)
}

/// Delivers claimed events one after another (a subscription's events in order), recording
/// each outcome; after a failure, the rest of the batch fails with it untried (so that a
/// receiver that times out holds the loop [`TIMEOUT`] once per batch, not once per event).
/// Returns how many were delivered, and whether one failed.
async fn deliver_batch(
    pool: &PgPool,
    client: &reqwest::Client,
    target: &Target,
    consumer: &str,
    claimed: &[Claimed],
) -> Result<(usize, bool), sqlx::Error> {
    let mut delivered = 0;
    let mut failure: Option<String> = None;
    for event in claimed {
        let outcome = match &failure {
            Some(e) => Outcome::Failed(format!("not tried after an earlier failure: {e}")),
            None => deliver(client, target, event).await,
        };
        match &outcome {
            Outcome::Delivered(None) => delivered += 1,
            Outcome::Delivered(Some(note)) => {
                tracing::info!(event = event.id, webhook = %target.id, note = %note, "webhook skipped")
            }
            Outcome::Failed(e) => {
                if failure.is_none() {
                    tracing::warn!(event = event.id, webhook = %target.id, tries = event.tries, error = %e, "webhook delivery failed");
                    failure = Some(e.clone());
                }
            }
        }
        events::record(pool, consumer, event, &outcome).await?;
    }
    Ok((delivered, failure.is_some()))
}

/// POSTs one event to a subscription, signed with its secrets now.
async fn deliver(client: &reqwest::Client, target: &Target, event: &Claimed) -> Outcome {
    let Some(body) = super::body(&event.topic, &event.payload.0, event.created_at) else {
        return Outcome::Delivered(Some(format!(
            "skipped: {} is not a webhook topic",
            event.topic
        )));
    };
    let body = body.to_string().into_bytes();
    let id = super::message_id(target.id, event.id);
    let timestamp = chrono::Utc::now().timestamp();
    let mut secrets = vec![target.secret.as_str()];
    secrets.extend(target.previous_secret.as_deref());
    let signature = super::signature_header(&secrets, &id, timestamp, &body);
    let sent = client
        .post(&target.url)
        .header("content-type", "application/json")
        .header("webhook-id", &id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body)
        .send()
        .await;
    match sent {
        Ok(res) if res.status().is_success() => Outcome::Delivered(None),
        Ok(res) => Outcome::Failed(failure(res).await),
        Err(e) if e.is_timeout() => Outcome::Failed(format!(
            "the receiver did not answer within {} s",
            TIMEOUT.as_secs()
        )),
        Err(e) => Outcome::Failed(format!("the receiver could not be reached: {e}")),
    }
}

/// A receiver's failing answer: its status and the start of its body (read no further).
async fn failure(mut res: reqwest::Response) -> String {
    let status = res.status();
    let mut body = Vec::new();
    while body.len() < ERROR_BYTES {
        match res.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(ERROR_BYTES);
    let text = String::from_utf8_lossy(&body);
    let text: String = text.trim().chars().filter(|c| !c.is_control()).collect();
    format!("the receiver answered {status}: {text}")
}

/// Delivers every `every` until quizd stops (and purges old delivered events every minute).
pub async fn deliver_webhooks(
    pool: PgPool,
    allowed: Vec<String>,
    every: StdDuration,
    mut shutdown: crate::background::Shutdown,
) {
    let client = client();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_purge = std::time::Instant::now();
    while shutdown.tick(&mut tick).await {
        if allowed.is_empty() {
            continue;
        }
        if let Err(e) = deliver_due(&pool, &client, &allowed).await {
            tracing::warn!(error = %e, "webhook delivery failed to read the outbox");
        }
        events::purge_now_and_then(&pool, &mut last_purge).await;
    }
}
