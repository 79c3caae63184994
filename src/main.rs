//! The quizd command line: serve, migrate, import, export, openapi, translations.

#![forbid(unsafe_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use quizd::app;
use quizd::auth::{Role, password, store};
use quizd::background::{Background, Loops};
use quizd::content::{self, store::ImportStatus};
use quizd::state::{AppState, Settings};
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
    /// A direct connection to the primary, when --database-url goes through a connection
    /// pooler in transaction pooling (PgBouncer): the migrations (a session advisory lock) and
    /// the quiz change listener (LISTEN) need a session of their own. Defaults to
    /// --database-url. See docs/SCALING.md, "PgBouncer".
    #[arg(
        long,
        env = "QUIZD_DIRECT_DATABASE_URL",
        global = true,
        hide_env_values = true
    )]
    direct_database_url: Option<String>,
    /// Database connections in each of the two pools (the general one, and the one resuming
    /// and answering run on).
    #[arg(long, env = "QUIZD_DB_POOL_SIZE", global = true, default_value_t = 16)]
    db_pool_size: u32,
}

// Parsed once from the command line: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Serve the API (the default): migrate, import the content directory, listen.
    Serve(ServeArgs),
    /// Apply the database migrations and exit.
    Migrate,
    /// Validate and import quiz content from a directory (one quiz, or a directory of quizzes),
    /// or questions from a Moodle XML (.xml), GIFT (.gift) or Aiken (.txt) file as one quiz
    /// (with --slug). Idempotent: unchanged quizzes stay as they are, changed ones become new
    /// versions.
    Import {
        /// A quiz directory (with quiz.toml) or a directory of them, e.g. `content/`; or a
        /// questions file.
        dir: PathBuf,
        #[command(flatten)]
        questions: quizd::quizzes::cli::QuestionsImport,
    },
    /// Write a quiz version's questions (with their key) as Moodle XML or GIFT, in its source
    /// locale.
    Export {
        /// The quiz's slug.
        slug: String,
        /// The version (default: the current one).
        #[arg(long)]
        version: Option<i32>,
        /// moodle-xml, gift or qti3 (a zip with every locale).
        #[arg(long, value_parser = ["moodle-xml", "gift", "qti3"])]
        format: String,
        /// Where to write it (default: standard output).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Print the OpenAPI document (as committed in openapi/openapi.json).
    Openapi,
    /// A quiz's translation files for translators' tools: XLIFF 2.1 or gettext PO, exported
    /// from the database and imported into a new version.
    Translations {
        #[command(subcommand)]
        action: quizd::quizzes::cli::TranslationsCommand,
    },
    /// Manage people.
    User {
        #[command(subcommand)]
        action: UserCommand,
    },
    /// LMS integration (LTI 1.3): platform registrations, quizd's signing keys, grade
    /// deliveries.
    Lti {
        #[command(subcommand)]
        action: quizd::lti::cli::LtiCommand,
    },
}

#[derive(Subcommand)]
enum UserCommand {
    /// Create a person, e.g. the first admin. The password is read from standard input (never
    /// from an argument, which would land in shell history): typed without echo on a
    /// terminal, or the first line of a pipe.
    Create {
        #[arg(long)]
        email: String,
        #[arg(long, default_value = "learner", value_parser = ["learner", "instructor", "admin"])]
        role: String,
        /// Defaults to the part of the email before the @.
        #[arg(long)]
        display_name: Option<String>,
    },
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
    /// A read-only database (a streaming replica) for analytics, read while it has replayed
    /// what the primary had committed when a request came (else the primary answers); without
    /// it analytics read the main one.
    #[arg(long, env = "QUIZD_ANALYTICS_DATABASE_URL", hide_env_values = true)]
    analytics_database_url: Option<String>,
    /// Origins allowed to call the API from a browser (CORS), comma-separated, e.g.
    /// `https://lms.example.edu`. None by default.
    #[arg(
        long = "cors-origin",
        env = "QUIZD_CORS_ORIGINS",
        value_delimiter = ','
    )]
    cors_origins: Vec<String>,
    /// Origins that may show the web front-end in a frame (the LMSs that launch quizd),
    /// comma-separated. None by default.
    #[arg(
        long = "frame-ancestor",
        env = "QUIZD_FRAME_ANCESTORS",
        value_delimiter = ','
    )]
    frame_ancestors: Vec<String>,
    /// Sign-ups one client address may make at once (then a third as many a minute); `0`
    /// turns the limit off (when a proxy in front of quizd limits them instead).
    #[arg(long, env = "QUIZD_SIGNUP_BURST", default_value_t = quizd::auth::ratelimit::SIGNUP_BURST)]
    signup_burst: u32,
    /// Memory for cached quiz versions, in MiB (by their approximate size in memory); versions
    /// beyond it are loaded again from the database when needed.
    #[arg(long, env = "QUIZD_VERSION_CACHE_MB", default_value_t = quizd::quizzes::DEFAULT_CAPACITY_BYTES >> 20)]
    version_cache_mb: u64,
    /// `/metrics` wants `Authorization: Bearer <token>`. Without this or --metrics-bind,
    /// `/metrics` is not served.
    #[arg(long, env = "QUIZD_METRICS_TOKEN", hide_env_values = true)]
    metrics_token: Option<String>,
    /// Serve `/metrics` on this address of its own (e.g. one only the scraper reaches) instead
    /// of the API's listener.
    #[arg(long, env = "QUIZD_METRICS_BIND")]
    metrics_bind: Option<String>,
    /// Reverse proxies (CIDRs or addresses, comma-separated) whose forwarded headers
    /// (`Forwarded`, `X-Forwarded-For`, `-Host`, `-Proto`) are believed: the client's address
    /// (sign-in limits) and the origin of LTI URLs (without --public-url). None by default:
    /// from anyone else those headers are ignored.
    #[arg(
        long = "trusted-proxy",
        env = "QUIZD_TRUSTED_PROXIES",
        value_delimiter = ',',
        value_parser = quizd::net::parse_cidr
    )]
    trusted_proxies: Vec<ipnet::IpNet>,
    /// Secret (32+ characters) that signs access tokens. Without it, quizd generates one and
    /// keeps it in the database, so tokens survive restarts.
    #[arg(long, env = "QUIZD_JWT_SECRET", hide_env_values = true)]
    jwt_secret: Option<String>,
    /// SMTP server for verification links and course invitations: `smtp://host:port` (in
    /// clear, for a relay on localhost), `smtps://user:password@host` (TLS) or
    /// `smtp://host?tls=required` (STARTTLS). Without it, quizd writes each link to its log.
    /// The links are made from --public-url only, never from a request: without it (and not
    /// on loopback) mail with a link is not sent, and the link goes to the log.
    #[arg(long, env = "QUIZD_SMTP_URL", hide_env_values = true)]
    smtp_url: Option<String>,
    /// The sender of quizd's mail.
    #[arg(
        long,
        env = "QUIZD_MAIL_FROM",
        default_value = "quizd <quizd@localhost>"
    )]
    mail_from: String,
    #[command(flatten)]
    lti: quizd::lti::cli::ServeSettings,
    #[command(flatten)]
    xapi: XapiArgs,
    /// A host that webhook subscriptions may send to (`hooks.example.org`, or
    /// `*.example.org` for its subdomains); repeat it, or separate hosts with commas. Without
    /// one, no subscription can be made or delivered: quizd calls no host the configuration
    /// does not name. Plain http only to a loopback host.
    #[arg(
        long = "webhook-host",
        env = "QUIZD_WEBHOOK_HOSTS",
        value_delimiter = ','
    )]
    webhook_hosts: Vec<String>,
}

/// Learning events out: xAPI statements to a Learning Record Store.
#[derive(Debug, clap::Args)]
struct XapiArgs {
    /// The LRS's xAPI endpoint (e.g. `https://lrs.example.org/xAPI/`; plain http only on
    /// loopback): quizd sends it a statement when an attempt starts, for each answer, and when
    /// an attempt finishes. Needs --public-url (the learners' account home page) and either
    /// --xapi-username/--xapi-password or --xapi-token. Without it, no statements are sent.
    #[arg(long, env = "QUIZD_XAPI_ENDPOINT")]
    xapi_endpoint: Option<String>,
    /// HTTP basic user at the LRS.
    #[arg(long, env = "QUIZD_XAPI_USERNAME", requires = "xapi_password")]
    xapi_username: Option<String>,
    /// HTTP basic password at the LRS.
    #[arg(long, env = "QUIZD_XAPI_PASSWORD", hide_env_values = true)]
    xapi_password: Option<String>,
    /// Bearer token for the LRS (instead of a user and password).
    #[arg(
        long,
        env = "QUIZD_XAPI_TOKEN",
        hide_env_values = true,
        conflicts_with = "xapi_username"
    )]
    xapi_token: Option<String>,
    /// Identify learners by their email address (`mbox`) where they have one, instead of an
    /// opaque account (their quizd user id on --public-url).
    #[arg(long, env = "QUIZD_XAPI_ACTOR_EMAIL")]
    xapi_actor_email: bool,
}

impl XapiArgs {
    fn settings(self, public_url: Option<&str>) -> Result<Option<quizd::events::xapi::Settings>> {
        let Some(endpoint) = self.xapi_endpoint else {
            return Ok(None);
        };
        quizd::events::xapi::Settings::new(
            &endpoint,
            self.xapi_username,
            self.xapi_password,
            self.xapi_token,
            public_url,
            self.xapi_actor_email,
        )
        .map(Some)
        .map_err(|e| anyhow::anyhow!(e))
    }
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
    for imported in content::store::import(pool, &quizzes, content::store::Importer::Files).await? {
        let what = match imported.status {
            ImportStatus::Created => "created",
            ImportStatus::NewVersion => "new version",
            ImportStatus::Unchanged => "unchanged",
        };
        tracing::info!(slug = %imported.slug, version = imported.version, "quiz {what}");
    }
    Ok(())
}

/// quizd's public origin: `--public-url`; without it, on a loopback address only, the address
/// quizd listens on (only this machine reaches it, so that is the origin its people use: the
/// quick start's links work); otherwise none, and links are not mailed (see `quizd::mail`).
fn public_url(configured: Option<String>, listening: std::net::SocketAddr) -> Option<String> {
    configured.or_else(|| {
        listening
            .ip()
            .is_loopback()
            .then(|| format!("http://{listening}"))
    })
}

async fn serve(dbargs: &DbArgs, args: ServeArgs) -> Result<()> {
    let listener =
        TcpListener::bind(&args.bind).with_context(|| format!("cannot listen on {}", args.bind))?;
    let metrics_listener = args
        .metrics_bind
        .as_deref()
        .map(|a| TcpListener::bind(a).with_context(|| format!("cannot listen on {a}")))
        .transpose()?;
    anyhow::ensure!(
        args.metrics_token
            .as_deref()
            .is_none_or(|t| !t.trim().is_empty()),
        "QUIZD_METRICS_TOKEN is empty"
    );
    let database = db::open(
        dbargs.database_url.as_deref(),
        dbargs.direct_database_url.as_deref(),
        &dbargs.data_dir,
        dbargs.db_pool_size,
    )
    .await?;
    match args.content_dir.or_else(default_content_dir) {
        Some(dir) => import(&database.pool, &dir).await?,
        None => tracing::warn!("no content directory found; serving what the database holds"),
    }
    let addr = listener.local_addr()?;
    // Lazily: quizd starts, and answers, while its replica is down (analytics then read the
    // primary; see `analytics::replica`).
    let analytics_pool = match &args.analytics_database_url {
        Some(url) => Some(db::pool_options(dbargs.db_pool_size).connect_lazy_with(
            db::connect_options(url).context("the analytics database URL is malformed")?,
        )),
        None => None,
    };
    let settings = Settings {
        cors_origins: args.cors_origins,
        frame_ancestors: args.frame_ancestors,
        signup_burst: args.signup_burst,
        version_cache_bytes: args.version_cache_mb << 20,
        metrics_access: quizd::ops::MetricsAccess {
            token: args.metrics_token,
            separate_listener: metrics_listener.is_some(),
        },
        trusted_proxies: quizd::net::TrustedProxies::new(args.trusted_proxies),
        xapi: args.xapi.settings(args.lti.public_url.as_deref())?,
        lti: quizd::lti::Settings {
            public_url: public_url(args.lti.public_url.clone(), addr),
            ..args.lti.settings()
        },
        smtp_url: args.smtp_url,
        mail_from: args.mail_from,
        webhook_hosts: args.webhook_hosts,
    };
    let mail_to_log = settings.smtp_url.is_none();
    let public = (
        settings.lti.public_url.clone(),
        args.lti.public_url.is_none(),
    );
    let state = AppState::build(
        database.pool.clone(),
        analytics_pool,
        args.jwt_secret.as_deref(),
        settings,
    )
    .await?
    .with_direct(database.direct.clone());
    quizd::events::xapi::register(&state.pool, state.xapi.is_some()).await?;
    let state = actix_web::web::Data::new(state);
    let background = Background::start(state.clone(), Loops::SERVE);
    let metrics_server = match metrics_listener {
        Some(l) => {
            println!("  metrics:   http://{}/metrics", l.local_addr()?);
            Some(app::serve_metrics(l, state.clone())?)
        }
        None => None,
    };
    let server = app::serve(listener, state, args.workers)?;
    println!("quizd listening on http://{addr}");
    println!("  API docs:  http://{addr}/docs/");
    println!("  OpenAPI:   http://{addr}/openapi.json");
    if mail_to_log {
        println!("  mail:      no --smtp-url: verification and invitation links go to the log");
        tracing::warn!("no --smtp-url: verification and invitation links go to the log");
    }
    match public {
        (Some(url), true) => println!("  links:     {url} (no --public-url; quizd is on loopback)"),
        (Some(_), false) => {}
        (None, _) => {
            println!(
                "  links:     no --public-url: mail with a link is not sent, the link is logged"
            );
            tracing::warn!(
                "no --public-url: quizd mails no link (a link made from a request's Host would \
                 go where the client says); verification and invitation links go to the log"
            );
        }
    }
    match metrics_server {
        // Both stop on the same signal.
        Some(m) => {
            let (api, metrics) = futures_util::future::join(server, m).await;
            api?;
            metrics?;
        }
        None => server.await?,
    }
    background.stop().await;
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
            db::open(
                d.database_url.as_deref(),
                d.direct_database_url.as_deref(),
                &d.data_dir,
                2,
            )
            .await?;
            println!("migrations applied");
            Ok(())
        }
        Some(Command::Import { dir, questions }) => {
            let d = cli.db;
            let database = db::open(
                d.database_url.as_deref(),
                d.direct_database_url.as_deref(),
                &d.data_dir,
                2,
            )
            .await?;
            if dir.is_file() {
                quizd::quizzes::cli::import_questions(&database.pool, &dir, questions).await
            } else {
                import(&database.pool, &dir).await
            }
        }
        Some(Command::Export {
            slug,
            version,
            format,
            output,
        }) => {
            let d = cli.db;
            let database = db::open(
                d.database_url.as_deref(),
                d.direct_database_url.as_deref(),
                &d.data_dir,
                2,
            )
            .await?;
            quizd::quizzes::cli::export_questions(&database.pool, &slug, version, &format, output)
                .await
        }
        Some(Command::Serve(args)) => serve(&cli.db, args).await,
        Some(Command::Translations { action }) => {
            let d = cli.db;
            let database = db::open(
                d.database_url.as_deref(),
                d.direct_database_url.as_deref(),
                &d.data_dir,
                2,
            )
            .await?;
            quizd::quizzes::cli::run(&database.pool, action).await
        }
        Some(Command::Lti { action }) => {
            let d = cli.db;
            let database = db::open(
                d.database_url.as_deref(),
                d.direct_database_url.as_deref(),
                &d.data_dir,
                2,
            )
            .await?;
            quizd::lti::cli::run(&database.pool, action).await
        }
        Some(Command::User {
            action:
                UserCommand::Create {
                    email,
                    role,
                    display_name,
                },
        }) => {
            let d = cli.db;
            let database = db::open(
                d.database_url.as_deref(),
                d.direct_database_url.as_deref(),
                &d.data_dir,
                2,
            )
            .await?;
            let password = read_password()?;
            let display_name = display_name
                .unwrap_or_else(|| email.split('@').next().unwrap_or_default().to_string());
            let role = Role::parse(&role).expect("clap checked the role");
            let user = create_user(&database.pool, &email, &display_name, &password, role).await?;
            println!("created {} ({}) with id {}", email, role.as_str(), user);
            Ok(())
        }
        None => {
            let args = DefaultServe::parse_from(["quizd"]).args;
            serve(&cli.db, args).await
        }
    }
}

/// Reads a password from standard input: without echo (and twice) on a terminal, by
/// `rpassword`; else the first line of the pipe.
fn read_password() -> Result<String> {
    use std::io::{BufRead, IsTerminal};
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let mut line = String::new();
        stdin.lock().read_line(&mut line)?;
        return Ok(line.trim_end_matches(['\r', '\n']).to_string());
    }
    let first = rpassword::prompt_password("Password: ")?;
    let second = rpassword::prompt_password("Again: ")?;
    anyhow::ensure!(first == second, "the passwords differ");
    Ok(first)
}

async fn create_user(
    pool: &sqlx::PgPool,
    email: &str,
    display_name: &str,
    password: &str,
    role: Role,
) -> Result<uuid::Uuid> {
    // Checked as a request's would be; stored as given (as before the parsed types).
    quizd::validate::Email::try_from(email.to_string()).map_err(|e| anyhow::anyhow!(e.0.detail))?;
    quizd::validate::DisplayName::try_from(display_name.to_string())
        .map_err(|e| anyhow::anyhow!(e.0.detail))?;
    let len = password.chars().count();
    anyhow::ensure!(
        (password::MIN_LEN..=password::MAX_LEN).contains(&len) && !password.contains('\0'),
        "the password must be {} to {} characters",
        password::MIN_LEN,
        password::MAX_LEN
    );
    let hash = password::hash(password).map_err(|e| anyhow::anyhow!(e))?;
    let user = store::insert_user(
        pool,
        store::NewUser {
            email: Some(email),
            display_name,
            password_hash: Some(&hash),
            role,
            locale: None,
        },
    )
    .await
    .map_err(|e| match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            anyhow::anyhow!("a person with email {email} exists already")
        }
        _ => anyhow::Error::from(e),
    })?;
    // The operator who runs this vouches for the address, as no mailed link could: the
    // account is enrolled by its email at once (an unverified one would only be invited).
    quizd::invitations::store::mark_verified(pool, user.id, email, chrono::Utc::now()).await?;
    Ok(user.id)
}

fn main() -> ExitCode {
    telemetry::init_logging();
    actix_web::rt::System::new().block_on(async {
        match run(Cli::parse()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("quizd: {e:#}");
                ExitCode::FAILURE
            }
        }
    })
}
