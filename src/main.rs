//! The quizd command line: serve, migrate, import, openapi.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use quizd::app::{self, AppState};
use quizd::content::{self, store::ImportStatus};
use quizd::{db, openapi, telemetry};

#[derive(Parser)]
#[command(name = "quizd", version, about = "quizd: quizzes in the learner's language, graded on the server", long_about = None)]
struct Cli {
    #[command(flatten)]
    db: DbArgs,
    /// What to do; without a command, quizd serves.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Args)]
struct DbArgs {
    /// PostgreSQL to use. Without it, quizd runs a private PostgreSQL in --data-dir.
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    database_url: Option<String>,
    /// Where the private PostgreSQL keeps its data (kept across restarts).
    #[arg(
        long,
        env = "QUIZD_DATA_DIR",
        global = true,
        default_value = "quizd-data"
    )]
    data_dir: PathBuf,
    /// Database connections in the pool.
    #[arg(long, env = "QUIZD_DB_POOL_SIZE", global = true, default_value_t = 16)]
    db_pool_size: u32,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API (the default): migrate, import the content directory, listen.
    Serve(ServeArgs),
    /// Apply the database migrations and exit.
    Migrate,
    /// Validate and import quiz content from a directory (one quiz, or a directory of quizzes).
    /// Idempotent: unchanged quizzes stay as they are, changed ones become new versions.
    Import {
        /// A quiz directory (with quiz.toml) or a directory of them, e.g. `content/`.
        dir: PathBuf,
    },
    /// Print the OpenAPI document (as committed in openapi/openapi.json).
    Openapi,
}

/// `quizd` with no command serves with the serve defaults (and their environment variables).
#[derive(Parser)]
struct DefaultServe {
    #[command(flatten)]
    args: ServeArgs,
}

#[derive(Args)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "QUIZD_BIND", default_value = "127.0.0.1:8080")]
    bind: String,
    /// Content to import at start-up (default: ./content, else the one in the source tree).
    #[arg(long, env = "QUIZD_CONTENT_DIR")]
    content_dir: Option<PathBuf>,
    /// HTTP worker threads (default: one per core).
    #[arg(long, env = "QUIZD_WORKERS")]
    workers: Option<usize>,
}

fn default_content_dir() -> Option<PathBuf> {
    [
        PathBuf::from("content"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("content"),
    ]
    .into_iter()
    .find(|d| d.is_dir())
}

async fn import(pool: &sqlx::PgPool, dir: &Path) -> Result<()> {
    let quizzes = content::load_dir(dir).map_err(|e| {
        anyhow::anyhow!(
            "the content in {} was refused, nothing was imported:\n{e}",
            dir.display()
        )
    })?;
    for imported in content::store::import(pool, &quizzes).await? {
        let what = match imported.status {
            ImportStatus::Created => "created",
            ImportStatus::NewVersion => "new version",
            ImportStatus::Unchanged => "unchanged",
        };
        tracing::info!(slug = %imported.slug, version = imported.version, "quiz {what}");
    }
    Ok(())
}

async fn serve(dbargs: &DbArgs, args: ServeArgs) -> Result<()> {
    let listener =
        TcpListener::bind(&args.bind).with_context(|| format!("cannot listen on {}", args.bind))?;
    let database = db::open(
        dbargs.database_url.as_deref(),
        &dbargs.data_dir,
        dbargs.db_pool_size,
    )
    .await?;
    match args.content_dir.or_else(default_content_dir) {
        Some(dir) => import(&database.pool, &dir).await?,
        None => tracing::warn!("no content directory found; serving what the database holds"),
    }
    let addr = listener.local_addr()?;
    let server = app::serve(listener, AppState::new(database.pool.clone()), args.workers)?;
    println!("quizd listening on http://{addr}");
    println!("  API docs:  http://{addr}/docs/");
    println!("  OpenAPI:   http://{addr}/openapi.json");
    server.await?;
    database.pool.close().await;
    drop(database);
    tracing::info!("quizd stopped");
    Ok(())
}

async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Some(Command::Openapi) => {
            print!("{}", openapi::to_json());
            Ok(())
        }
        Some(Command::Migrate) => {
            let d = cli.db;
            db::open(d.database_url.as_deref(), &d.data_dir, 2).await?;
            println!("migrations applied");
            Ok(())
        }
        Some(Command::Import { dir }) => {
            let d = cli.db;
            let database = db::open(d.database_url.as_deref(), &d.data_dir, 2).await?;
            import(&database.pool, &dir).await
        }
        Some(Command::Serve(args)) => serve(&cli.db, args).await,
        None => {
            let args = DefaultServe::parse_from(["quizd"]).args;
            serve(&cli.db, args).await
        }
    }
}

#[actix_web::main]
async fn main() -> ExitCode {
    telemetry::init_logging();
    match run(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quizd: {e:#}");
            ExitCode::FAILURE
        }
    }
}
