//! `quizd serve` with no DATABASE_URL: a private PostgreSQL that starts, stops with quizd and
//! keeps its data across restarts.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::content_dir;

struct Running {
    child: Child,
    base: String,
}

fn start(data_dir: &Path) -> Running {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quizd"))
        .args(["serve", "--bind", "127.0.0.1:0", "--content-dir"])
        .arg(content_dir())
        .arg("--data-dir")
        .arg(data_dir)
        .env_remove("DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let first = lines
        .next()
        .expect("quizd prints where it listens")
        .unwrap();
    let base = first
        .strip_prefix("quizd listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_string();
    let docs = lines.next().unwrap().unwrap();
    assert!(docs.contains(&format!("{base}/docs/")), "{docs}");
    std::thread::spawn(move || for _ in lines {});
    Running { child, base }
}

fn stop(mut running: Running) {
    unsafe {
        libc::kill(running.child.id() as i32, libc::SIGTERM);
    }
    let status = running.child.wait().unwrap();
    assert!(status.success(), "quizd exited with {status}");
}

#[tokio::test]
async fn serve_runs_a_private_postgres_that_stops_with_quizd_and_keeps_data() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let client = reqwest::Client::new();

    let running = start(&data);
    let ready = client
        .get(format!("{}/readyz", running.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    let quiz: Value = client
        .get(format!(
            "{}/v1/quizzes/data-parallelism?lang=bn",
            running.base
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(quiz["version"], 1);
    assert!(
        data.join("socket/.s.PGSQL.5432").exists(),
        "listens on a socket in its directory"
    );
    stop(running);
    // PostgreSQL stopped cleanly with quizd: no server left holding the directory.
    for _ in 0..50 {
        if !data.join("pgdata/postmaster.pid").exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !data.join("pgdata/postmaster.pid").exists(),
        "PostgreSQL still running"
    );

    // Restarting keeps everything: the same version, not a re-import.
    let running = start(&data);
    let quiz: Value = client
        .get(format!("{}/v1/quizzes/data-parallelism", running.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(quiz["version"], 1);
    stop(running);
}

#[tokio::test]
async fn no_password_token_or_hash_reaches_the_logs_of_a_full_flow() {
    let app = crate::support::TestApp::spawn_empty().await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_quizd"))
        .args(["serve", "--bind", "127.0.0.1:0", "--content-dir"])
        .arg(content_dir())
        .arg("--frame-ancestor")
        .arg("https://lms.example.edu")
        .env("DATABASE_URL", app.db_url())
        .env("RUST_LOG", "trace,hyper=info,h2=info,mio=info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let logs = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap());
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().unwrap().unwrap();
    let base = first
        .strip_prefix("quizd listening on ")
        .unwrap()
        .to_string();
    std::thread::spawn(move || for _ in lines {});

    // The LMS that launches quizd may frame the front-end; the API is framed by nobody.
    let page = reqwest::get(format!("{base}/")).await.unwrap();
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("frame-ancestors https://lms.example.edu"),
        "{csp}"
    );
    assert!(!page.headers().contains_key("x-frame-options"));
    let api = reqwest::get(format!("{base}/v1/quizzes")).await.unwrap();
    assert_eq!(api.headers()["x-frame-options"], "DENY");
    let client = reqwest::Client::new();
    let password = "a secret nobody logs 7";
    let register: Value = client
        .post(format!("{base}/v1/auth/register"))
        .json(&serde_json::json!({"email": "log@example.org", "display_name": "Log", "password": password}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let login: Value = client
        .post(format!("{base}/v1/auth/login"))
        .json(&serde_json::json!({"email": "log@example.org", "password": password}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let wrong = client
        .post(format!("{base}/v1/auth/login"))
        .json(&serde_json::json!({"email": "log@example.org", "password": "wrong wrong wrong"}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let access = login["access_token"].as_str().unwrap().to_string();
    let refresh = login["refresh_token"].as_str().unwrap().to_string();
    let refreshed: Value = client
        .post(format!("{base}/v1/auth/refresh"))
        .json(&serde_json::json!({"refresh_token": refresh}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let attempt: Value = client
        .post(format!("{base}/v1/quizzes/data-parallelism/attempts"))
        .bearer_auth(&access)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(attempt["id"].is_string(), "{attempt}");
    let hash: String = sqlx::query_scalar("SELECT password_hash FROM users")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    child.wait().unwrap();
    let logs = logs.join().unwrap();
    assert!(logs.contains("/v1/auth/login"), "the flow is logged at all");
    // SIGTERM stops the eight background tasks (after the HTTP server has drained): the
    // deadline sweep, grade and webhook delivery, the quiz change, erasure and live
    // listeners, the analytics backfill and the metrics upkeep (xAPI delivery runs only with
    // an LRS).
    assert!(
        logs.contains("background loops stopped") && logs.contains("loops=8"),
        "{logs}"
    );
    let secrets = [
        password.to_string(),
        "wrong wrong wrong".to_string(),
        hash,
        access,
        refresh,
        register["access_token"].as_str().unwrap().to_string(),
        register["refresh_token"].as_str().unwrap().to_string(),
        refreshed["access_token"].as_str().unwrap().to_string(),
        refreshed["refresh_token"].as_str().unwrap().to_string(),
    ];
    for secret in secrets {
        // A JWT's signature alone would be enough to misuse it.
        let tail = &secret[secret.len().saturating_sub(24)..];
        assert!(!logs.contains(tail), "a secret reached the logs");
    }
}
