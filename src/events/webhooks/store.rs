//! SQL of webhook subscriptions and their secrets (migration 0023). Their deliveries are the
//! shared `deliveries` rows of consumer `webhook:<id>` (`crate::events::store`).

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{FromRow, PgExecutor};
use utoipa::ToSchema;
use uuid::Uuid;

/// A subscription, as admins see it (never its secret).
#[derive(Debug, Clone, Serialize, ToSchema, FromRow)]
pub struct Webhook {
    pub id: Uuid,
    /// Where events are POSTed.
    pub url: String,
    /// The public topics it wants.
    pub topics: Vec<String>,
    pub description: String,
    pub created_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Set: nothing is queued for it, and what was queued waits until it is enabled again.
    pub disabled_at: Option<DateTime<Utc>>,
    /// When its secret was last rotated.
    pub secret_rotated_at: Option<DateTime<Utc>>,
    /// Until then deliveries are signed with the previous secret too.
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
}

const COLUMNS: &str = "s.id, s.url, s.topics, s.description, s.created_by, s.created_at,
        s.updated_at, s.disabled_at, k.rotated_at AS secret_rotated_at,
        CASE WHEN k.previous_expires_at > now() THEN k.previous_expires_at END
            AS previous_secret_expires_at";

/// A new subscription and its secret.
pub struct NewWebhook<'a> {
    pub id: Uuid,
    pub url: &'a str,
    pub topics: &'a [String],
    pub description: &'a str,
    pub created_by: Uuid,
    pub secret: &'a str,
}

/// Inserts a subscription and its secret (the caller sets its consumer's topics in the same
/// transaction).
pub async fn insert(
    db: &mut sqlx::PgConnection,
    w: NewWebhook<'_>,
) -> Result<Webhook, sqlx::Error> {
    sqlx::query(
        "INSERT INTO webhook_subscriptions (id, url, topics, description, created_by)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(w.id)
    .bind(w.url)
    .bind(w.topics)
    .bind(w.description)
    .bind(w.created_by)
    .execute(&mut *db)
    .await?;
    sqlx::query("INSERT INTO webhook_secrets (subscription_id, secret) VALUES ($1, $2)")
        .bind(w.id)
        .bind(w.secret)
        .execute(&mut *db)
        .await?;
    Ok(get(&mut *db, w.id)
        .await?
        .expect("inserted in this transaction"))
}

/// Every subscription, oldest first.
pub async fn list(db: impl PgExecutor<'_>) -> Result<Vec<Webhook>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM webhook_subscriptions s
           JOIN webhook_secrets k ON k.subscription_id = s.id
          ORDER BY s.created_at, s.id"
    )))
    .fetch_all(db)
    .await
}

/// One subscription.
pub async fn get(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<Webhook>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM webhook_subscriptions s
           JOIN webhook_secrets k ON k.subscription_id = s.id
          WHERE s.id = $1"
    )))
    .bind(id)
    .fetch_optional(db)
    .await
}

/// What an update changes (`None`: leaves it).
pub struct Change<'a> {
    pub url: Option<&'a str>,
    pub topics: Option<&'a [String]>,
    pub description: Option<&'a str>,
    pub disabled: Option<bool>,
}

/// Changes a subscription, locked for the caller's transaction; `None` when there is none.
pub async fn update(
    db: &mut sqlx::PgConnection,
    id: Uuid,
    c: Change<'_>,
) -> Result<Option<Webhook>, sqlx::Error> {
    let updated = sqlx::query(
        "UPDATE webhook_subscriptions
            SET url = coalesce($2, url), topics = coalesce($3, topics),
                description = coalesce($4, description),
                disabled_at = CASE WHEN $5::boolean IS NULL THEN disabled_at
                                   WHEN $5 THEN coalesce(disabled_at, now())
                                   ELSE NULL END,
                updated_at = now()
          WHERE id = $1",
    )
    .bind(id)
    .bind(c.url)
    .bind(c.topics)
    .bind(c.description)
    .bind(c.disabled)
    .execute(&mut *db)
    .await?;
    if updated.rows_affected() == 0 {
        return Ok(None);
    }
    get(&mut *db, id).await
}

/// Deletes a subscription and its secret; `false` when there is none.
pub async fn delete(db: impl PgExecutor<'_>, id: Uuid) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("DELETE FROM webhook_subscriptions WHERE id = $1")
        .bind(id)
        .execute(db)
        .await?;
    Ok(done.rows_affected() != 0)
}

/// Makes `secret` the subscription's secret, the one it replaces valid for `grace_secs` more;
/// `None` when there is no such subscription.
pub async fn rotate(
    db: impl PgExecutor<'_>,
    id: Uuid,
    secret: &str,
    grace_secs: i64,
) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    sqlx::query_scalar(
        "UPDATE webhook_secrets
            SET previous_secret = secret, secret = $2,
                previous_expires_at = now() + make_interval(secs => $3), rotated_at = now()
          WHERE subscription_id = $1
         RETURNING previous_expires_at",
    )
    .bind(id)
    .bind(secret)
    .bind(grace_secs as f64)
    .fetch_optional(db)
    .await
}

/// An enabled subscription as its deliveries need it: where, and the secrets that sign now
/// (the current one, and the previous one until it expires).
#[derive(Debug, Clone, FromRow)]
pub struct Target {
    pub id: Uuid,
    pub url: String,
    pub secret: String,
    pub previous_secret: Option<String>,
}

/// The enabled subscriptions.
pub async fn targets(db: impl PgExecutor<'_>) -> Result<Vec<Target>, sqlx::Error> {
    sqlx::query_as(
        "SELECT s.id, s.url, k.secret,
                CASE WHEN k.previous_expires_at > now() THEN k.previous_secret END
                    AS previous_secret
           FROM webhook_subscriptions s JOIN webhook_secrets k ON k.subscription_id = s.id
          WHERE s.disabled_at IS NULL
          ORDER BY s.id",
    )
    .fetch_all(db)
    .await
}
