//! Assignment and Grade Services 2.0: grade passback. A worker takes the `attempt.finished`
//! (and `attempt.regraded`) events of LTI-linked assignments from the outbox, computes the
//! learner's grade under the assignment's grading method, and posts it as a Score to the
//! resource link's line item. At least once, idempotent (the Score always carries the current
//! grade), with the backoff, parking and retry every outbox consumer shares (`crate::events`);
//! failures stay visible to admins, who can retry them.

use std::time::Duration as StdDuration;

use chrono::{SecondsFormat, Utc};
use serde::Serialize;
use serde_json::{Value, json};
use sqlx::{FromRow, PgPool};
use utoipa::ToSchema;
use uuid::Uuid;

use super::registrations::RegistrationRow;
use super::services::{access_token, excerpt};
use super::store::{self, ResourceLinkKey, Target};
use super::{PlatformClient, read_body, scope};
use crate::events::{self, AGS, Outcome, Retry};
use crate::grading::{FinishedAttempt, assignment_grade};

/// The outbox topics this worker delivers, as its rows in `event_consumers` (migration 0022)
/// say to dispatch. `response.recorded` is not among them: it is another consumer's (xAPI).
pub const TOPICS: [&str; 2] = ["attempt.finished", "attempt.regraded"];
pub const SCORE_MEDIA_TYPE: &str = "application/vnd.ims.lis.v1.score+json";
pub const LINEITEM_MEDIA_TYPE: &str = "application/vnd.ims.lis.v2.lineitem+json";
pub const LINEITEMS_MEDIA_TYPE: &str = "application/vnd.ims.lis.v2.lineitemcontainer+json";
/// The Score of AGS 2.0 §3.4 for a grade (a fraction of the maximum).
pub fn score(user_id: &str, fraction: f64, max: f64, at: chrono::DateTime<Utc>) -> Value {
    let given = ((fraction * max) * 1e6).round() / 1e6;
    json!({
        "userId": user_id,
        "scoreGiven": given.clamp(0.0, max),
        "scoreMaximum": max,
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",
        "timestamp": at.to_rfc3339_opts(SecondsFormat::Millis, true),
    })
}

/// The scores endpoint of a line item: its URL with `/scores` appended to the path (the
/// query string, if any, kept), as AGS 2.0 §3.4 says.
pub fn scores_url(lineitem: &str) -> anyhow::Result<reqwest::Url> {
    let mut url = reqwest::Url::parse(lineitem)?;
    url.path_segments_mut()
        .map_err(|_| anyhow::anyhow!("the line item URL cannot take a path"))?
        .pop_if_empty()
        .push("scores");
    Ok(url)
}

/// Delivers the grade an event calls for.
pub async fn deliver(pool: &PgPool, platforms: &PlatformClient, attempt: Uuid) -> Outcome {
    match try_deliver(pool, platforms, attempt).await {
        Ok(outcome) => outcome,
        Err(e) => Outcome::Failed(format!("{e:#}")),
    }
}

async fn try_deliver(
    pool: &PgPool,
    platforms: &PlatformClient,
    attempt: Uuid,
) -> anyhow::Result<Outcome> {
    let target = store::delivery_target(pool, attempt).await?;
    let Some(target) = target else {
        return Ok(Outcome::Delivered(Some(
            "skipped: the attempt or its LMS link no longer exists".into(),
        )));
    };
    let Some(reg) = store::registration(pool, target.registration_id).await? else {
        return Ok(Outcome::Delivered(Some(
            "skipped: the platform's registration was removed".into(),
        )));
    };
    let subject = match (&target.ext_issuer, &target.ext_subject) {
        (Some(iss), Some(sub)) if *iss == reg.issuer => sub.clone(),
        _ => {
            return Ok(Outcome::Delivered(Some(
                "skipped: the learner did not come from this platform".into(),
            )));
        }
    };
    let finished = store::finished_grades(pool, target.assignment_id, target.user_id).await?;
    let max = finished.iter().map(|f| f.2).fold(0.0, f64::max);
    let method = target.grading_method;
    let attempts: Vec<FinishedAttempt> = finished
        .iter()
        .map(|&(number, score, max_score)| FinishedAttempt {
            number,
            fraction: if max_score > 0.0 {
                score / max_score
            } else {
                0.0
            },
        })
        .collect();
    let Some(fraction) = assignment_grade(method, &attempts) else {
        return Ok(Outcome::Delivered(Some(
            "skipped: no finished attempt to grade".into(),
        )));
    };
    let lineitem = match &target.lineitem_url {
        Some(l) => l.clone(),
        None => {
            let can_manage = target.ags_scopes.iter().any(|s| s == scope::LINEITEM);
            match (&target.lineitems_url, can_manage) {
                (Some(container), true) => {
                    let l = find_or_create_lineitem(pool, platforms, &reg, &target, container, max)
                        .await?;
                    let link = ResourceLinkKey {
                        registration_id: reg.id,
                        deployment_id: &target.deployment_id,
                        resource_link_id: &target.resource_link_id,
                    };
                    store::set_lineitem_url(pool, link, &l).await?;
                    l
                }
                _ => {
                    return Ok(Outcome::Delivered(Some(
                        "skipped: the platform gave no line item for this link".into(),
                    )));
                }
            }
        }
    };
    if !target.ags_scopes.iter().any(|s| s == scope::SCORE) {
        return Ok(Outcome::Delivered(Some(
            "skipped: the platform did not grant the score scope".into(),
        )));
    }
    let body = score(&subject, fraction, max, Utc::now());
    post_score(pool, platforms, &reg, &lineitem, &body).await?;
    Ok(Outcome::Delivered(None))
}

async fn post_score(
    pool: &PgPool,
    platforms: &PlatformClient,
    reg: &RegistrationRow,
    lineitem: &str,
    body: &Value,
) -> anyhow::Result<()> {
    // Checked at launch too; here for links stored before that check, and for line items
    // the platform's container answered with.
    reg.check_service_url(lineitem)
        .map_err(|why| anyhow::anyhow!("the line item URL {why}"))?;
    let url = scores_url(lineitem)?;
    let payload = serde_json::to_vec(body)?;
    for fresh_token in [false, true] {
        let token = access_token(pool, platforms, reg, scope::SCORE).await?;
        let res = platforms
            .http()
            .post(url.clone())
            .bearer_auth(&token)
            .header("content-type", SCORE_MEDIA_TYPE)
            .body(payload.clone())
            .send()
            .await?;
        let status = res.status();
        if status.is_success() {
            return Ok(());
        }
        // A token the platform no longer takes: forget it and ask for a new one, once.
        if status == reqwest::StatusCode::UNAUTHORIZED && !fresh_token {
            platforms.tokens().forget(reg.id, scope::SCORE);
            continue;
        }
        let text = String::from_utf8_lossy(&read_body(res).await.unwrap_or_default()).to_string();
        anyhow::bail!(
            "the platform answered {status} to the score: {}",
            excerpt(&text)
        );
    }
    unreachable!("the loop returns or fails")
}

/// The line item of the resource link in the platform's container, created if it has none.
async fn find_or_create_lineitem(
    pool: &PgPool,
    platforms: &PlatformClient,
    reg: &RegistrationRow,
    target: &Target,
    container: &str,
    max: f64,
) -> anyhow::Result<String> {
    reg.check_service_url(container)
        .map_err(|why| anyhow::anyhow!("the line items URL {why}"))?;
    let token = access_token(pool, platforms, reg, scope::LINEITEM).await?;
    let mut url = reqwest::Url::parse(container)?;
    url.query_pairs_mut()
        .append_pair("resource_link_id", &target.resource_link_id);
    let res = platforms
        .http()
        .get(url)
        .bearer_auth(&token)
        .header("accept", LINEITEMS_MEDIA_TYPE)
        .send()
        .await?;
    if res.status().is_success() {
        let items: Value = serde_json::from_slice(&read_body(res).await?)?;
        let found = items.as_array().and_then(|items| {
            items.iter().find_map(|i| {
                (i.get("resourceLinkId").and_then(Value::as_str)
                    == Some(target.resource_link_id.as_str()))
                .then(|| i.get("id").and_then(Value::as_str).map(str::to_string))
                .flatten()
            })
        });
        if let Some(id) = found {
            return Ok(id);
        }
    }
    let res = platforms
        .http()
        .post(container)
        .bearer_auth(&token)
        .header("content-type", LINEITEM_MEDIA_TYPE)
        .header("accept", LINEITEM_MEDIA_TYPE)
        .body(serde_json::to_vec(&json!({
            "scoreMaximum": max,
            "label": target.title,
            "resourceLinkId": target.resource_link_id,
            "resourceId": target.slug,
            "tag": "quizd",
        }))?)
        .send()
        .await?;
    let status = res.status();
    let body = read_body(res).await?;
    if !status.is_success() {
        anyhow::bail!(
            "the platform answered {status} to creating a line item: {}",
            excerpt(&String::from_utf8_lossy(&body))
        );
    }
    let created: Value = serde_json::from_slice(&body)?;
    created
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| anyhow::anyhow!("the created line item has no id"))
}

/// Delivers the events that are due, up to `limit`; returns how many were delivered.
pub async fn deliver_due(
    pool: &PgPool,
    platforms: &PlatformClient,
    limit: i64,
) -> Result<usize, sqlx::Error> {
    let claimed = events::claim(pool, AGS, limit).await?;
    let mut delivered = 0;
    for event in &claimed {
        let outcome = deliver(pool, platforms, event.aggregate_id).await;
        match &outcome {
            Outcome::Delivered(None) => {
                delivered += 1;
                tracing::info!(event = event.id, "grade delivered to the LMS");
            }
            Outcome::Delivered(Some(note)) => {
                tracing::info!(event = event.id, note = %note, "grade delivery skipped");
            }
            Outcome::Failed(e) => {
                tracing::warn!(event = event.id, tries = event.tries, error = %e, "grade delivery failed");
            }
        }
        events::record(pool, AGS, event, &outcome).await?;
    }
    Ok(delivered)
}

/// Runs grade passback every `every` until quizd stops (and, every minute, purges expired
/// login material and old delivered outbox events). `platforms` is the state's
/// ([`crate::state::AppState::platforms`]): the worker shares its client and tokens.
pub async fn deliver_grades(
    pool: PgPool,
    platforms: PlatformClient,
    every: StdDuration,
    mut shutdown: crate::background::Shutdown,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_purge = std::time::Instant::now();
    let mut last_outbox_purge = std::time::Instant::now();
    while shutdown.tick(&mut tick).await {
        if let Err(e) = deliver_due(&pool, &platforms, 20).await {
            tracing::warn!(error = %e, "grade passback failed to read the outbox");
        }
        if last_purge.elapsed() > StdDuration::from_secs(60) {
            last_purge = std::time::Instant::now();
            if let Err(e) = store::purge_expired(&pool).await {
                tracing::warn!(error = %e, "purging expired LTI logins failed");
            }
        }
        events::purge_now_and_then(&pool, &mut last_outbox_purge).await;
    }
}

/// A grade delivery as admins see it.
#[derive(Debug, Serialize, ToSchema, FromRow)]
pub struct Delivery {
    /// The outbox event's id.
    pub id: i64,
    pub topic: String,
    pub attempt_id: Uuid,
    pub assignment_id: Uuid,
    pub user_id: Uuid,
    pub registration_id: Uuid,
    /// `delivered`, `pending` (not yet tried or waiting for its next try), `failed` (tried,
    /// will be tried again) or `parked` (gave up after many tries; retry it by hand).
    pub status: String,
    pub tries: i32,
    /// The last failure, or why nothing was sent.
    pub last_error: Option<String>,
    pub created_at: chrono::DateTime<Utc>,
    pub delivered_at: Option<chrono::DateTime<Utc>>,
    pub next_attempt_at: Option<chrono::DateTime<Utc>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryList {
    pub items: Vec<Delivery>,
}

/// Makes an undelivered grade due now, with its tries counted afresh.
pub async fn retry(pool: &PgPool, id: i64) -> Result<Retry<Delivery>, sqlx::Error> {
    events::retry(
        pool,
        AGS,
        id,
        || store::delivery(pool, id),
        |d| d.status == "delivered",
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scores_url_appends_to_the_path_and_keeps_the_query() {
        assert_eq!(
            scores_url("https://lms.example/api/lti/courses/1/line_items/7?type_id=3")
                .unwrap()
                .as_str(),
            "https://lms.example/api/lti/courses/1/line_items/7/scores?type_id=3"
        );
        assert_eq!(
            scores_url("https://lms.example/lineitems/7/")
                .unwrap()
                .as_str(),
            "https://lms.example/lineitems/7/scores"
        );
    }

    #[test]
    fn a_score_is_the_grade_of_the_maximum_completed_and_fully_graded() {
        let at = chrono::DateTime::parse_from_rfc3339("2030-01-02T03:04:05.678Z")
            .unwrap()
            .with_timezone(&Utc);
        let s = score("sub-1", 0.625, 8.0, at);
        assert_eq!(s["userId"], "sub-1");
        assert_eq!(s["scoreGiven"], 5.0);
        assert_eq!(s["scoreMaximum"], 8.0);
        assert_eq!(s["activityProgress"], "Completed");
        assert_eq!(s["gradingProgress"], "FullyGraded");
        assert_eq!(s["timestamp"], "2030-01-02T03:04:05.678Z");
        assert_eq!(score("x", 1.0 / 3.0, 3.0, at)["scoreGiven"], 1.0);
    }
}
