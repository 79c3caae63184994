//! Crash durability and database outages, with the real binary under concurrent load.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::support::{TestApp, content_dir, expect_status, post_as, token_for};

/// The quizd binary serving `database_url`; returns the process and its base URL.
fn start_quizd(database_url: &str) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_quizd"))
        .args(["serve", "--bind", "127.0.0.1:0", "--content-dir"])
        .arg(content_dir())
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let base = first
        .strip_prefix("quizd listening on ")
        .unwrap()
        .to_string();
    std::thread::spawn(move || for _ in lines {});
    (child, base)
}

/// A learner's open attempt and the (question id, option id) pairs it can still answer.
struct Slot {
    token: String,
    attempt: String,
    question: String,
    option: String,
}

/// Learners with course attempts, every question of which is an answer to send.
async fn answer_slots(app: &TestApp, base: &str, learners: usize, assignments: usize) -> Vec<Slot> {
    let client = reqwest::Client::new();
    let teacher = token_for(app, "teacher@example.org", "instructor").await;
    let course = expect_status(
        post_as(
            app,
            &teacher.access,
            "/v1/courses",
            &json!({"title": "Load"}),
        )
        .await,
        201,
    )
    .await;
    let course = course["id"].as_str().unwrap().to_string();
    let mut ids = Vec::new();
    for _ in 0..assignments {
        let res = post_as(
            app,
            &teacher.access,
            &format!("/v1/courses/{course}/assignments"),
            &json!({"quiz": "data-parallelism"}),
        )
        .await;
        ids.push(
            expect_status(res, 201).await["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let mut slots = Vec::new();
    for n in 0..learners {
        let learner = token_for(app, &format!("load{n}@example.org"), "learner").await;
        let res = post_as(
            app,
            &teacher.access,
            &format!("/v1/courses/{course}/enrollments"),
            &json!({"email": learner.email}),
        )
        .await;
        expect_status(res, 201).await;
        for a in &ids {
            let attempt: Value = client
                .post(format!("{base}/v1/assignments/{a}/attempts"))
                .bearer_auth(&learner.access)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            for q in attempt["questions"].as_array().unwrap() {
                slots.push(Slot {
                    token: learner.access.clone(),
                    attempt: attempt["id"].as_str().unwrap().to_string(),
                    question: q["id"].as_str().unwrap().to_string(),
                    option: q["options"][0]["id"].as_str().unwrap().to_string(),
                });
            }
        }
    }
    slots
}

#[tokio::test]
async fn every_acknowledged_answer_survives_kill_9_and_none_is_recorded_twice() {
    let app = TestApp::spawn().await;
    app.want_events(&["response.recorded"]).await;
    let (mut quizd, base) = start_quizd(&app.db_url());
    let slots = Arc::new(answer_slots(&app, &base, 6, 10).await);
    assert_eq!(slots.len(), 480);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let acked = Arc::new(Mutex::new(Vec::<usize>::new()));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut workers = Vec::new();
    for _ in 0..8 {
        let (slots, next, acked, client, base) = (
            slots.clone(),
            next.clone(),
            acked.clone(),
            client.clone(),
            base.clone(),
        );
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(s) = slots.get(i) else { return };
                let res = client
                    .put(format!(
                        "{base}/v1/attempts/{}/responses/{}",
                        s.attempt, s.question
                    ))
                    .bearer_auth(&s.token)
                    .json(&json!({"selected": [s.option]}))
                    .send()
                    .await;
                match res {
                    Ok(r) if r.status().is_success() => acked.lock().await.push(i),
                    Ok(r) => panic!("answer refused: {}", r.status()),
                    Err(_) => return, // the server is gone
                }
            }
        }));
    }
    // Kill it in the middle of the load.
    while next.load(Ordering::SeqCst) < 200 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    quizd.kill().unwrap(); // SIGKILL
    quizd.wait().unwrap();
    for w in workers {
        w.await.unwrap();
    }
    let acked = acked.lock().await.clone();
    assert!(
        acked.len() >= 150,
        "only {} answers were acknowledged",
        acked.len()
    );

    // Restarted, the service has every acknowledged answer, and each question once.
    let (mut quizd, base) = start_quizd(&app.db_url());
    let mut by_attempt: std::collections::HashMap<&str, Value> = std::collections::HashMap::new();
    for i in &acked {
        let s = &slots[*i];
        if !by_attempt.contains_key(s.attempt.as_str()) {
            let view: Value = client
                .get(format!("{base}/v1/attempts/{}", s.attempt))
                .bearer_auth(&s.token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            by_attempt.insert(&s.attempt, view);
        }
        let view = &by_attempt[s.attempt.as_str()];
        let q = view["questions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["id"] == s.question.as_str())
            .unwrap();
        assert_eq!(
            q["response"]["selected"],
            json!([s.option]),
            "an acknowledged answer was lost"
        );
    }
    let (responses, distinct, events): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM responses),
                (SELECT count(DISTINCT (attempt_id, question_key)) FROM responses),
                (SELECT count(*) FROM outbox WHERE topic = 'response.recorded')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(responses, distinct, "a question answered twice");
    assert_eq!(
        events, responses,
        "one outbox event per response, written with it"
    );
    assert!(responses as usize >= acked.len());
    unsafe { libc::kill(quizd.id() as i32, libc::SIGTERM) };
    quizd.wait().unwrap();
}

#[tokio::test]
async fn during_a_database_outage_quizd_answers_503_quickly_and_recovers_by_itself() {
    use quizd::db::postgres::{Options, PrivatePostgres};
    let dir = tempfile::Builder::new()
        .prefix("quizd-outage-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let opts = Options {
        dir: dir.path().join("pg"),
        durable: true,
        max_connections: 50,
        settings: Vec::new(),
    };
    let server = PrivatePostgres::start(&opts).unwrap();
    let url = server.url("quizd");
    let (mut quizd, base) = start_quizd(&url);
    // A fresh connection per request: a kept-alive connection that the server closes while the
    // client reuses it fails the request in the client ("IncompleteMessage"), which says
    // nothing about quizd (seen under load on 2 shared cores).
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let get = |path: &str| client.get(format!("{base}{path}")).send();
    assert_eq!(
        get("/v1/quizzes/data-parallelism").await.unwrap().status(),
        200
    );

    // Background load through the outage.
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(HashSet::new()));
    let load = {
        let (stop, seen, client, base) = (stop.clone(), seen.clone(), client.clone(), base.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let t = Instant::now();
                let res = client
                    .get(format!("{base}/v1/quizzes/data-parallelism"))
                    .send()
                    .await
                    .unwrap();
                let status = res.status().as_u16();
                assert!(
                    t.elapsed() < Duration::from_secs(4),
                    "a request hung for {:?}",
                    t.elapsed()
                );
                assert!(
                    status == 200 || status == 503,
                    "status {status} during the outage"
                );
                if status == 503 {
                    assert!(res.headers().contains_key("retry-after"));
                    let body: Value = res.json().await.unwrap();
                    assert_eq!(body["code"], "service_unavailable");
                }
                seen.lock().await.insert(status);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.stop_immediately(); // SIGQUIT: no checkpoint, no goodbye to clients
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        seen.lock().await.contains(&503),
        "the outage was never noticed"
    );
    let readiness = get("/readyz").await.unwrap();
    assert_eq!(readiness.status(), 503);

    // PostgreSQL comes back (same data directory, same socket): quizd recovers by itself.
    drop(server);
    let server = PrivatePostgres::start(&opts).unwrap();
    let back = Instant::now();
    loop {
        if get("/v1/quizzes/data-parallelism").await.unwrap().status() == 200 {
            break;
        }
        assert!(
            back.elapsed() < Duration::from_secs(10),
            "quizd did not recover"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let recovered_in = back.elapsed();
    stop.store(true, Ordering::SeqCst);
    load.await.unwrap();
    assert_eq!(get("/readyz").await.unwrap().status(), 200);
    assert!(
        recovered_in < Duration::from_secs(5),
        "recovery took {recovered_in:?}"
    );
    unsafe { libc::kill(quizd.id() as i32, libc::SIGTERM) };
    quizd.wait().unwrap();
    drop(server);
}
