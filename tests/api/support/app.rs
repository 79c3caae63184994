//! quizd serving one test over real HTTP on a loopback port, on a database of its own cloned
//! from a template; running a test alone; waiting for what happens in the background.

use std::net::TcpListener;

use quizd::app;
use quizd::background::{Background, Loops};
use quizd::clock::Clock;
use quizd::db;
use quizd::state::AppState;
use reqwest::Client;
use serde_json::Value;
use sqlx::{Connection, PgConnection, PgPool};

use super::postgres::cluster;

/// Reads with `read` every 100 ms until `done` holds of what it read, for up to 30 s: for what
/// happens in the background (a delivery, a statement at the LRS); what it read last. After
/// 30 s it fails, saying what it waited for (`what`) and what it read.
pub async fn wait_until<T: std::fmt::Debug, F: std::future::Future<Output = T>>(
    what: &str,
    mut read: impl FnMut() -> F,
    done: impl Fn(&T) -> bool,
) -> T {
    for _ in 0..300 {
        let value = read().await;
        if done(&value) {
            return value;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("waited 30 s for {what}; read last: {:#?}", read().await);
}

/// Changes a test's server state before it serves (limits, metrics access, caches); it is
/// given the server's own base URL (`http://127.0.0.1:<port>`).
type Configure = Box<dyn FnOnce(&mut AppState, &str) + Send>;

/// Runs the calling test again in a process of its own, where no other test runs, and
/// returns whether it passed there. For tests that measure the process (its memory). The
/// child uses this process's PostgreSQL. `test` is the test's full name.
pub async fn passes_alone(test: &str) -> bool {
    let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env("QUIZD_TEST_ALONE", "1")
        .env("DATABASE_URL", &cluster().admin_url);
    command.status().await.unwrap().success()
}

/// Whether this process is one [`passes_alone`] started.
pub fn alone() -> bool {
    std::env::var_os("QUIZD_TEST_ALONE").is_some()
}

/// The database a test's quizd runs on.
enum Db<'a> {
    /// A new one cloned from this template, dropped when the quizd stops.
    From(&'a str),
    /// Another quizd's, left to it.
    Shared(&'a str),
}

/// quizd serving one test over real HTTP, on its own database.
pub struct TestApp {
    pub base: String,
    /// The metrics listener's base URL, when the test asked for one.
    pub metrics_base: Option<String>,
    pub client: Client,
    /// A pool on the test's database, for looking behind the API.
    pub pool: PgPool,
    db_name: String,
    handle: actix_web::dev::ServerHandle,
    metrics_handle: Option<actix_web::dev::ServerHandle>,
}

impl TestApp {
    /// A quizd with the seed content imported.
    pub async fn spawn() -> Self {
        Self::spawn_configured(|_| {}).await
    }

    /// A quizd with the seed content whose clock the test moves.
    pub async fn spawn_with_clock(clock: Clock) -> Self {
        Self::spawn_configured(move |s| s.clock = clock).await
    }

    /// A quizd with the seed content that allows these origins (CORS).
    pub async fn spawn_with_cors(origins: Vec<String>) -> Self {
        Self::spawn_configured(move |s| s.cors_origins = origins).await
    }

    /// A quizd with the seed content and settings of `quizd serve` as `configure` sets them.
    pub async fn spawn_configured(configure: impl FnOnce(&mut AppState) + Send + 'static) -> Self {
        Self::spawn_knowing_base(move |state, _| configure(state)).await
    }

    /// As [`spawn_configured`](Self::spawn_configured), with the server's base URL known to
    /// `configure` (for `--public-url`).
    pub async fn spawn_knowing_base(
        configure: impl FnOnce(&mut AppState, &str) + Send + 'static,
    ) -> Self {
        Self::start(
            Db::From(&cluster().seeded_template),
            Box::new(configure),
            false,
        )
        .await
    }

    /// A second quizd on this one's database, as a second instance behind a load balancer:
    /// it shares nothing with the first but PostgreSQL (the database stays the first's).
    pub async fn another_instance(&self) -> Self {
        Self::start(Db::Shared(&self.db_name), Box::new(|_, _| {}), false).await
    }

    /// A quizd with the seed content that serves `/metrics` on a listener of its own
    /// (`--metrics-bind`), at `metrics_base`.
    pub async fn spawn_with_metrics_listener(token: Option<String>) -> Self {
        let access = quizd::ops::MetricsAccess {
            token,
            separate_listener: true,
        };
        Self::start(
            Db::From(&cluster().seeded_template),
            Box::new(move |state, _| state.metrics_access = access),
            true,
        )
        .await
    }

    /// A quizd with a migrated, empty database.
    pub async fn spawn_empty() -> Self {
        Self::start(
            Db::From(&cluster().empty_template),
            Box::new(|_, _| {}),
            false,
        )
        .await
    }

    async fn start(db: Db<'_>, configure: Configure, metrics_listener: bool) -> Self {
        let cluster = cluster();
        let (name, owned) = match db {
            Db::From(template) => {
                let name = format!("t_{}", uuid::Uuid::new_v4().simple());
                let mut admin = PgConnection::connect_with(&cluster.admin).await.unwrap();
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "CREATE DATABASE {name} TEMPLATE {template}"
                )))
                .execute(&mut admin)
                .await
                .unwrap();
                admin.close().await.unwrap();
                (name, true)
            }
            Db::Shared(name) => (name.to_string(), false),
        };
        let db_name = name.clone();
        let db_options = cluster.admin.clone().database(&name);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let metrics_listener = metrics_listener.then(|| TcpListener::bind("127.0.0.1:0").unwrap());
        let metrics_base = metrics_listener
            .as_ref()
            .map(|l| format!("http://{}", l.local_addr().unwrap()));
        let (tx, rx) = std::sync::mpsc::channel();
        let server_options = db_options.clone();
        let server_base = base.clone();
        let drop_options = cluster.admin.clone();
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let pool = db::pool_options(4).connect_lazy_with(server_options);
                let mut state = AppState::build(pool.clone(), None, None, Default::default())
                    .await
                    .unwrap();
                configure(&mut state, &server_base);
                let state = actix_web::web::Data::new(state);
                // The loops a test relies on run with the server; the others, driven by the
                // manual clock or started by the test itself, do not.
                let _background = Background::start(
                    state.clone(),
                    Loops {
                        deadline_sweep: false,
                        grade_delivery: None,
                        // Runs only where the test configured an LRS.
                        xapi_delivery: Some(std::time::Duration::from_millis(100)),
                        // One query a tick until a test subscribes a webhook.
                        webhook_delivery: Some(std::time::Duration::from_millis(100)),
                        change_listener: true,
                        erasure_listener: true,
                        live_listener: true,
                        metrics_upkeep: false,
                        analytics_backfill: false,
                    },
                );
                let metrics =
                    metrics_listener.map(|l| app::serve_metrics(l, state.clone()).unwrap());
                let server = app::serve(listener, state, Some(1)).unwrap();
                tx.send((server.handle(), metrics.as_ref().map(|m| m.handle())))
                    .unwrap();
                if let Some(metrics) = metrics {
                    actix_web::rt::spawn(metrics);
                }
                let _ = server.await;
                pool.close().await;
                if !owned {
                    return;
                }
                if let Ok(mut admin) = PgConnection::connect_with(&drop_options).await {
                    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                    )))
                    .execute(&mut admin)
                    .await;
                }
            })
        });
        let (handle, metrics_handle) = rx.recv().expect("the server starts");
        let pool = db::pool_options(2).connect_lazy_with(db_options.clone());
        TestApp {
            base,
            metrics_base,
            metrics_handle,
            client: Client::new(),
            pool,
            db_name,
            handle,
        }
    }

    /// The test database's URL, for the `quizd` binary.
    pub fn db_url(&self) -> String {
        let mut url = reqwest::Url::parse(&cluster().admin_url).expect("the admin URL parses");
        url.set_path(&format!("/{}", self.db_name));
        url.to_string()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Makes a consumer (`test-consumer`, which nobody runs) want `topics`: quizd writes an
    /// event to the outbox only when some consumer wants its topic (`crate::events`).
    pub async fn want_events(&self, topics: &[&str]) {
        sqlx::query(
            "INSERT INTO event_consumers (consumer, topic)
             SELECT 'test-consumer', unnest($1::text[]) ON CONFLICT DO NOTHING",
        )
        .bind(topics)
        .execute(&self.pool)
        .await
        .unwrap();
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.unwrap()
    }

    /// GET, expecting `status`, returning the JSON body.
    pub async fn get_json(&self, path: &str, status: u16) -> Value {
        let res = self.get(path).await;
        assert_eq!(res.status().as_u16(), status, "GET {path}");
        res.json().await.unwrap()
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        // The stop command is sent at once; the server's thread then closes its pool.
        drop(self.handle.stop(false));
        if let Some(h) = &self.metrics_handle {
            drop(h.stop(false));
        }
    }
}
