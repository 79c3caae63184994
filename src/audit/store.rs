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

/// Everything recorded about a person or by them (their own export).
pub async fn about(db: impl PgExecutor<'_>, person: Uuid) -> Result<Vec<AuditEntry>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, at, actor_id, action, subject_id, detail, address FROM audit_log
          WHERE actor_id = $1 OR subject_id = $1 ORDER BY id LIMIT 10000",
    )
    .bind(person)
    .fetch_all(db)
    .await
}
