//! The test harness: a real PostgreSQL (the private one quizd runs when no `DATABASE_URL` is
//! set, or the server `DATABASE_URL` names), a fresh database per test cloned from a migrated
//! and seeded template, and quizd serving real HTTP on a loopback port. People and their
//! requests: [`session`] (`app.learner()`, `learner.get(path).await.status(200)`).

pub mod courses;
pub mod peer;
pub mod session;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::OnceLock;

use quizd::app;
use quizd::background::{Background, Loops};
use quizd::clock::Clock;
use quizd::db::{self, postgres::PrivatePostgres};
use quizd::state::AppState;
use reqwest::Client;
use serde_json::Value;
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection, PgPool};

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The Python of the virtual environment `target/<venv>`, made when missing, with the pinned
/// packages of `requirements` (a path in the repository) installed: the real peers the tests
/// start (the LMS, the SMTP server, the LRS) come from PyPI, so `cargo test` needs no setup.
/// Quick when everything is installed already. Call it once per test run (behind a `OnceLock`).
pub fn python_venv(venv: &str, requirements: &str) -> Result<PathBuf, String> {
    let venv = repo().join("target").join(venv);
    let python = venv.join("bin/python");
    let run = |cmd: &mut std::process::Command| -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{cmd:?} failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    if !python.exists() {
        run(std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv))?;
    }
    run(std::process::Command::new(venv.join("bin/pip"))
        .args(["install", "-q", "--disable-pip-version-check", "-r"])
        .arg(repo().join(requirements)))?;
    Ok(python)
}

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

pub fn content_dir() -> PathBuf {
    repo().join("content")
}

struct Cluster {
    admin: PgConnectOptions,
    admin_url: String,
    seeded_template: String,
    empty_template: String,
    _server: Option<PrivatePostgres>,
}

fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Starts (once per test process) the server and the two templates.
fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        // A thread of its own: the tests' runtimes must not nest another.
        std::thread::spawn(start_cluster)
            .join()
            .expect("the test cluster starts")
    })
}

fn start_cluster() -> Cluster {
    let (admin_url, server) = match std::env::var("DATABASE_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            let tmp = std::env::temp_dir();
            // Clusters of test processes that have ended stop with them; remove their files.
            for entry in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                if let Some(pid) = name.strip_prefix("quizd-test-pg-")
                    && let Ok(pid) = pid.parse::<u32>()
                    && !process_alive(pid)
                {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
            let dir = tmp.join(format!("quizd-test-pg-{}", std::process::id()));
            let server = PrivatePostgres::start(&db::postgres::Options {
                dir,
                durable: false,
                max_connections: 400,
                settings: Vec::new(),
            })
            .expect("a private PostgreSQL starts for the tests");
            (server.url("postgres"), Some(server))
        }
    };
    let admin = PgConnectOptions::from_str(&admin_url).expect("DATABASE_URL parses");
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let empty_template = format!("quizd_tpl_empty_{tag}");
    let seeded_template = format!("quizd_tpl_seeded_{tag}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut conn = PgConnection::connect_with(&admin)
            .await
            .expect("admin connection");
        for name in [&empty_template, &seeded_template] {
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                .execute(&mut conn)
                .await
                .unwrap();
            let pool = db::pool_options(2)
                .connect_with(admin.clone().database(name))
                .await
                .unwrap();
            db::MIGRATOR.run(&pool).await.expect("migrations apply");
            if *name == seeded_template {
                let quizzes =
                    quizd::content::load_dir(&content_dir()).expect("seed content is valid");
                quizd::content::store::import(
                    &pool,
                    &quizzes,
                    quizd::content::store::Importer::Files,
                )
                .await
                .unwrap();
            }
            pool.close().await;
        }
    });
    Cluster {
        admin,
        admin_url,
        seeded_template,
        empty_template,
        _server: server,
    }
}

/// Changes a test's server state before it serves (limits, metrics access, caches).
type Configure = Box<dyn FnOnce(&mut AppState) + Send>;

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
        Self::start(Db::Shared(&self.db_name), Box::new(|_| {}), false).await
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
            Box::new(move |state| state.metrics_access = access),
            true,
        )
        .await
    }

    /// A quizd with a migrated, empty database.
    pub async fn spawn_empty() -> Self {
        Self::start(Db::From(&cluster().empty_template), Box::new(|_| {}), false).await
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
        let drop_options = cluster.admin.clone();
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let pool = db::pool_options(4).connect_lazy_with(server_options);
                let mut state = AppState::build(pool.clone(), None, None, Default::default())
                    .await
                    .unwrap();
                configure(&mut state);
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

/// Asserts a response is an RFC 9457 problem with this status and code; returns the body.
pub async fn assert_problem(res: reqwest::Response, status: u16, code: &str) -> Value {
    assert_eq!(res.status().as_u16(), status, "status of {}", res.url());
    let ct = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    assert!(
        ct.starts_with("application/problem+json"),
        "content-type {ct}"
    );
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["status"], status);
    assert_eq!(body["code"], code, "{body}");
    for field in ["type", "title", "detail"] {
        assert!(body[field].is_string(), "problem lacks {field}: {body}");
    }
    body
}

// People, tokens and authenticated requests (used by the auth and course tests).

/// The password every test person registers with.
pub const PASSWORD: &str = "correct horse battery staple";

/// [`TINY_QUIZ`] as a course exam: private, with no practice assignment.
pub fn private_quiz(slug: &str) -> String {
    TINY_QUIZ
        .replace("slug = \"tiny\"", &format!("slug = \"{slug}\""))
        .replace("visibility = \"public\"\n\n[practice]\n", "")
}

/// `author` writes [`private_quiz`] `slug` over the API (they own it).
pub async fn author_exam(app: &TestApp, author: &Person, slug: &str) {
    expect_status(
        send_quiz(app, &author.access, None, &private_quiz(slug)).await,
        201,
    )
    .await;
}

/// Sends a quiz in TOML (`POST /v1/quizzes`, or `PUT /v1/quizzes/{slug}` when `put`).
pub async fn send_quiz(
    app: &TestApp,
    token: &str,
    slug: Option<&str>,
    toml: &str,
) -> reqwest::Response {
    let req = match slug {
        Some(slug) => app.client.put(app.url(&format!("/v1/quizzes/{slug}"))),
        None => app.client.post(app.url("/v1/quizzes")),
    };
    req.bearer_auth(token)
        .header("content-type", "application/toml")
        .body(toml.to_string())
        .send()
        .await
        .unwrap()
}

/// A registered, signed-in person.
#[derive(Debug, Clone)]
pub struct Person {
    pub id: uuid::Uuid,
    pub email: String,
    pub access: String,
    pub refresh: String,
}

/// Asserts the status (showing the body if it differs) and returns the JSON body (`Null` when
/// there is none).
pub async fn expect_status(res: reqwest::Response, status: u16) -> Value {
    let actual = res.status().as_u16();
    let url = res.url().to_string();
    let text = res.text().await.unwrap();
    assert_eq!(actual, status, "status of {url}: {text}");
    if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap()
    }
}

/// Registers a learner over HTTP with [`PASSWORD`] and marks the address verified behind the
/// API's back, as if they had followed the mailed link (an email enrolls only a verified
/// account; most tests enroll people by email); returns them signed in.
pub async fn register(app: &TestApp, email: &str) -> Person {
    let person = register_unverified(app, email).await;
    sqlx::query("UPDATE users SET email_verified_at = now() WHERE id = $1")
        .bind(person.id)
        .execute(&app.pool)
        .await
        .unwrap();
    person
}

/// Registers a learner over HTTP with [`PASSWORD`], the address not verified; returns them
/// signed in.
pub async fn register_unverified(app: &TestApp, email: &str) -> Person {
    let res = app
        .client
        .post(app.url("/v1/auth/register"))
        .json(&serde_json::json!({
            "email": email,
            "display_name": format!("Person {email}"),
            "password": PASSWORD,
        }))
        .send()
        .await
        .unwrap();
    let tokens = expect_status(res, 201).await;
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let me = expect_status(get_as(app, &access, "/v1/me").await, 200).await;
    Person {
        id: me["id"].as_str().unwrap().parse().unwrap(),
        email: email.to_string(),
        access,
        refresh: tokens["refresh_token"].as_str().unwrap().to_string(),
    }
}

/// A client whose connections come from `ip`, a loopback address such as `127.0.0.2` (Linux
/// answers the whole of 127.0.0.0/8), so that quizd sees another client address.
pub fn client_from(ip: &str) -> Client {
    Client::builder()
        .local_address(Some(ip.parse().unwrap()))
        .build()
        .unwrap()
}

/// POST /v1/auth/login with these credentials from `client`.
pub async fn login_from(
    app: &TestApp,
    client: &Client,
    email: &str,
    password: &str,
) -> reqwest::Response {
    client
        .post(app.url("/v1/auth/login"))
        .json(&serde_json::json!({ "email": email, "password": password }))
        .send()
        .await
        .unwrap()
}

/// POST /v1/auth/login with these credentials.
pub async fn login_request(app: &TestApp, email: &str, password: &str) -> reqwest::Response {
    app.client
        .post(app.url("/v1/auth/login"))
        .json(&serde_json::json!({ "email": email, "password": password }))
        .send()
        .await
        .unwrap()
}

/// Signs in with [`PASSWORD`], expecting success; returns (access token, refresh token).
pub async fn login(app: &TestApp, email: &str) -> (String, String) {
    let tokens = expect_status(login_request(app, email, PASSWORD).await, 200).await;
    (
        tokens["access_token"].as_str().unwrap().to_string(),
        tokens["refresh_token"].as_str().unwrap().to_string(),
    )
}

/// Sets a person's role behind the API's back.
pub async fn set_role_in_db(app: &TestApp, id: uuid::Uuid, role: &str) {
    sqlx::query("UPDATE users SET role = $2 WHERE id = $1")
        .bind(id)
        .bind(role)
        .execute(&app.pool)
        .await
        .unwrap();
}

/// A person with this role (`learner`, `instructor` or `admin`), signed in after the role
/// was set, so the role is in their access token. Costs one login.
pub async fn token_for(app: &TestApp, email: &str, role: &str) -> Person {
    let mut person = register(app, email).await;
    if role != "learner" {
        set_role_in_db(app, person.id, role).await;
        (person.access, person.refresh) = login(app, email).await;
    }
    person
}

/// A request with `Authorization: Bearer <token>`.
pub fn bearer(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: &str,
) -> reqwest::RequestBuilder {
    app.client
        .request(method, app.url(path))
        .header("authorization", format!("Bearer {token}"))
}

pub async fn get_as(app: &TestApp, token: &str, path: &str) -> reqwest::Response {
    bearer(app, reqwest::Method::GET, path, token)
        .send()
        .await
        .unwrap()
}

pub async fn post_as(app: &TestApp, token: &str, path: &str, body: &Value) -> reqwest::Response {
    bearer(app, reqwest::Method::POST, path, token)
        .json(body)
        .send()
        .await
        .unwrap()
}

pub async fn put_as(app: &TestApp, token: &str, path: &str, body: &Value) -> reqwest::Response {
    bearer(app, reqwest::Method::PUT, path, token)
        .json(body)
        .send()
        .await
        .unwrap()
}

pub async fn patch_as(app: &TestApp, token: &str, path: &str, body: &Value) -> reqwest::Response {
    bearer(app, reqwest::Method::PATCH, path, token)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// A one-question quiz in the content format, for authoring and import tests.
pub const TINY_QUIZ: &str = r#"
slug = "tiny"
title = "Tiny"
visibility = "public"

[practice]

[[questions]]
key = "q1"
kind = "single"
prompt = "Pick one"
explanation = "Because."

[[questions.options]]
key = "a"
text = "A"
correct = true

[[questions.options]]
key = "b"
text = "B"
feedback = "Not B."
"#;
