//! SQL for the audit log.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{FromRow, PgExecutor};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{Action, Entry};

pub async fn record(db: impl PgExecutor<'_>, e: Entry) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO audit_log (actor_id, action, subject_id, detail, address)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(e.actor)
    .bind(e.action)
    .bind(e.subject)
    .bind(e.detail)
    .bind(e.address)
    .execute(db)
    .await?;
    Ok(())
}

/// One recorded action.
#[derive(Debug, FromRow, Serialize, ToSchema)]
pub struct AuditEntry {
    /// Increasing; pass the last one seen as `before` for the next (older) page.
    pub id: i64,
    pub at: DateTime<Utc>,
    /// Who acted (absent: quizd itself, or the command line).
    pub actor_id: Option<Uuid>,
    pub action: Action,
    /// About whom or what: a person, a quiz, a registration.
    pub subject_id: Option<Uuid>,
    #[schema(value_type = Object)]
    pub detail: serde_json::Value,
    /// The client address the action came from.
    pub address: Option<String>,
}

/// What to list, newest first.
pub struct Filter {
    pub action: Option<Action>,
    pub actor: Option<Uuid>,
    pub subject: Option<Uuid>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub before: Option<i64>,
    pub limit: i64,
}

pub async fn list(db: impl PgExecutor<'_>, f: &Filter) -> Result<Vec<AuditEntry>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, at, actor_id, action, subject_id, detail, address FROM audit_log
          WHERE ($1::text IS NULL OR action = $1)
            AND ($2::uuid IS NULL OR actor_id = $2)
            AND ($3::uuid IS NULL OR subject_id = $3)
            AND ($4::timestamptz IS NULL OR at >= $4)
            AND ($5::timestamptz IS NULL OR at < $5)
            AND ($6::bigint IS NULL OR id < $6)
          ORDER BY id DESC LIMIT $7",
    )
    .bind(f.action)
    .bind(f.actor)
    .bind(f.subject)
    .bind(f.since)
    .bind(f.until)
    .bind(f.before)
    .bind(f.limit)
    .fetch_all(db)
    .await
}

/// An audit entry in a person's own export: someone else who acted appears by site role and
/// display name only, never by id or client address.
#[derive(Debug, FromRow, Serialize, ToSchema)]
pub struct AuditEntryAboutYou {
    pub id: i64,
    pub at: DateTime<Utc>,
    pub action: Action,
    /// Whether you did it (then `address` is where you did it from).
    pub by_you: bool,
    /// Who else did it, by their site role and display name (absent when it was you, or quizd
    /// itself).
    pub actor_role: Option<String>,
    pub actor_name: Option<String>,
    /// About whom or what: you, a quiz, a registration.
    pub subject_id: Option<Uuid>,
    #[schema(value_type = Object)]
    pub detail: serde_json::Value,
    /// The client address you acted from; never anyone else's.
    pub address: Option<String>,
}

/// The entries `person` made or that are about them, as their export shows them.
pub async fn about(
    db: impl PgExecutor<'_>,
    person: Uuid,
) -> Result<Vec<AuditEntryAboutYou>, sqlx::Error> {
    sqlx::query_as(
        "SELECT a.id, a.at, a.action, coalesce(a.actor_id = $1, false) AS by_you,
                u.role AS actor_role, u.display_name AS actor_name, a.subject_id, a.detail,
                CASE WHEN a.actor_id = $1 THEN a.address END AS address
           FROM audit_log a LEFT JOIN users u ON u.id = a.actor_id AND u.id <> $1
          WHERE a.actor_id = $1 OR a.subject_id = $1 ORDER BY a.id LIMIT 10000",
    )
    .bind(person)
    .fetch_all(db)
    .await
}
