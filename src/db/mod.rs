//! The connection pool, migrations, and the private PostgreSQL used when no `DATABASE_URL`
//! is given.

// The one module with `unsafe` (the crate denies it elsewhere): who runs the server, its
// parent-death signal, the signals that stop it.
#[allow(unsafe_code)]
pub mod postgres;
pub mod quick;
pub mod store;

use std::str::FromStr;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// How the pool behaves: no ping before each acquire (it costs 20–35% on reads), a short
/// acquire timeout so an outage turns into `503` quickly, and a statement timeout.
pub fn pool_options(max_connections: u32) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .min_connections(0)
        .acquire_timeout(Duration::from_secs(2))
        .test_before_acquire(false)
        .idle_timeout(Some(Duration::from_secs(300)))
}

pub fn connect_options(url: &str) -> Result<PgConnectOptions, sqlx::Error> {
    Ok(PgConnectOptions::from_str(url)?
        .application_name("quizd")
        .options([("statement_timeout", "10s")]))
}

pub async fn connect(url: &str, max_connections: u32) -> Result<PgPool, sqlx::Error> {
    pool_options(max_connections)
        .connect_with(connect_options(url)?)
        .await
}

/// A connected database: the pool, its URL, and the private server when quizd runs one.
pub struct Database {
    pub pool: PgPool,
    /// A direct connection to the primary beside a pooler in transaction pooling, for what
    /// needs a session (LISTEN); `None`: `pool` is direct.
    pub direct: Option<PgPool>,
    pub url: String,
    /// Stops the private server when dropped.
    pub server: Option<postgres::PrivatePostgres>,
}

/// Connects to `database_url`, or, without one, starts the private PostgreSQL in `data_dir`.
/// Then applies the migrations, through `direct_url` when there is one (a connection pooler in
/// transaction pooling keeps no session: the migrator's advisory lock needs one).
pub async fn open(
    database_url: Option<&str>,
    direct_url: Option<&str>,
    data_dir: &std::path::Path,
    pool_size: u32,
) -> anyhow::Result<Database> {
    use anyhow::Context;
    let (url, server) = match database_url {
        Some(url) => (url.to_string(), None),
        None => {
            let opts = postgres::Options {
                dir: data_dir.to_path_buf(),
                durable: true,
                max_connections: 100,
                settings: Vec::new(),
            };
            let server =
                tokio::task::spawn_blocking(move || postgres::PrivatePostgres::start(&opts))
                    .await??;
            tracing::info!(dir = %data_dir.display(), "private PostgreSQL running");
            (server.url(postgres::DB_NAME), Some(server))
        }
    };
    let pool = connect(&url, pool_size)
        .await
        .with_context(|| "cannot connect to the database")?;
    let direct = match direct_url {
        Some(direct) => Some(
            connect(direct, 1)
                .await
                .context("cannot connect to the database's direct URL")?,
        ),
        None => None,
    };
    MIGRATOR
        .run(direct.as_ref().unwrap_or(&pool))
        .await
        .context("cannot apply the database migrations")?;
    Ok(Database {
        pool,
        direct,
        url,
        server,
    })
}
