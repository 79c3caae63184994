//! The SQL the database layer itself runs: the migrations' state, and the snapshot a
//! read-only transaction of any module asks for.

use sqlx::{PgExecutor, PgPool};

use super::MIGRATOR;

/// Whether every migration this build knows is applied.
pub async fn migrations_applied(pool: &PgPool) -> Result<bool, sqlx::Error> {
    let applied: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
            .fetch_all(pool)
            .await?;
    Ok(MIGRATOR
        .iter()
        .filter(|m| m.migration_type.is_up_migration())
        .all(|m| applied.contains(&m.version)))
}

/// Makes the transaction just begun one read-only snapshot (repeatable read): every statement
/// in it sees the tables as of one moment. Its first statement, before any read.
pub async fn snapshot(tx: impl PgExecutor<'_>) -> Result<(), sqlx::Error> {
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(tx)
        .await?;
    Ok(())
}
