//! Signed webhooks over HTTP, to a receiver written apart from quizd: `tests/webhooks/receiver.py`
//! verifies every delivery with `standardwebhooks` (the Standard Webhooks reference library,
//! pinned in `tests/webhooks/requirements.txt`, in `target/webhooks-venv`) and records it; the
//! tests read what it recorded.

use std::time::Duration;

use serde_json::{Value, json};

use crate::grades::{answer_some, assignment, course, finish, start};
use crate::support::peer::PythonPeer;
use crate::support::session::Session;
use crate::support::{TestApp, author_exam, expect_status, wait_until};

/// A running receiver; it stops when dropped.
struct Receiver(PythonPeer);

impl Receiver {
    fn start() -> Receiver {
        Receiver(PythonPeer::start(
            "the receiver",
            "webhooks-venv",
            "tests/webhooks/requirements.txt",
            "tests/webhooks/receiver.py",
            &[],
        ))
    }

    fn hook(&self, name: &str) -> String {
        self.0.url(&format!("/hooks/{name}"))
    }

    /// What the hook `name` verifies with and answers.
    async fn configure(&self, name: &str, secrets: &[&str], status: u16, answer_bytes: usize) {
        let res = reqwest::Client::new()
            .put(self.0.url(&format!("/_config/{name}")))
            .json(&json!({"secrets": secrets, "status": status, "answer_bytes": answer_bytes}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 204);
    }

    async fn received(&self, name: &str) -> Vec<Value> {
        let res = reqwest::get(self.0.url(&format!("/_received/{name}")))
            .await
            .unwrap();
        expect_status(res, 200).await.as_array().unwrap().clone()
    }

    /// Waits (up to 30 s) until the hook has `count` deliveries.
    async fn wait_for(&self, name: &str, count: usize) -> Vec<Value> {
        let what = format!("{count} deliveries to the hook {name}");
        wait_until(&what, || self.received(name), |got| got.len() >= count).await
    }
}

/// A quizd that may call the test's receivers (on loopback) and `hooks.example`.
async fn quizd() -> TestApp {
    TestApp::spawn_configured(|s| {
        s.webhook_hosts = vec!["127.0.0.1".into(), "hooks.example".into()];
    })
    .await
}

/// Subscribes `url` to `topics`; the subscription as created (with its secret).
async fn subscribe(admin: &Session<'_>, url: &str, topics: &[&str]) -> Value {
    let body = json!({"url": url, "topics": topics, "description": "the test's receiver"});
    admin.post("/v1/webhooks", &body).await.status(201).await
}

async fn deliveries(admin: &Session<'_>, hook: &Value, filter: &str) -> Vec<Value> {
    let path = format!(
        "/v1/webhooks/{}/deliveries{filter}",
        hook["id"].as_str().unwrap()
    );
    let list = admin.get(&path).await.status(200).await;
    list["items"].as_array().unwrap().clone()
}

/// Waits (up to 30 s) until the subscription has a delivery with this status; returns it.
async fn wait_for_status(admin: &Session<'_>, hook: &Value, status: &str) -> Value {
    let with_status = |d: &&Value| d["status"] == status;
    let all = wait_until(
        &format!("a {status} delivery"),
        || deliveries(admin, hook, ""),
        |all| all.iter().any(|d| with_status(&d)),
    )
    .await;
    all.iter().find(with_status).unwrap().clone()
}

const ALL_TOPICS: [&str; 5] = [
    "response.recorded",
    "attempt.started",
    "attempt.finished",
    "grade.changed",
    "quiz.version_created",
];

#[tokio::test]
async fn every_topic_arrives_signed_as_standard_webhooks_says_and_verifies_at_an_independent_receiver()
 {
    let receiver = Receiver::start();
    let app = quizd().await;
    let admin = app.person("admin@hooks.example", "admin").await;
    let all = subscribe(&admin, &receiver.hook("all"), &ALL_TOPICS).await;
    let secret = all["secret"].as_str().unwrap();
    assert!(
        secret.starts_with("whsec_") && secret.len() >= 6 + 32,
        "{secret}"
    );
    assert_eq!(all["topics"], json!(ALL_TOPICS));
    receiver.configure("all", &[secret], 200, 0).await;
    let finished_only = subscribe(&admin, &receiver.hook("finished"), &["attempt.finished"]).await;
    receiver
        .configure(
            "finished",
            &[finished_only["secret"].as_str().unwrap()],
            200,
            0,
        )
        .await;

    // One of each: a start, an answer, a finish, a staff override, a new quiz version.
    let c = course(&app, "teacher@hooks.example", &["learner@hooks.example"]).await;
    let learner = &c.learners[0];
    let a = assignment(&c, json!({})).await;
    let attempt = start(learner, &a).await;
    answer_some(learner, &attempt, 1, 1).await;
    let done = finish(learner, &attempt).await;
    let id = attempt["id"].as_str().unwrap();
    let score = done["result"]["score"].as_f64().unwrap();
    let max = done["result"]["max_score"].as_f64().unwrap();
    let path = format!("/v1/attempts/{id}/grade");
    let body = json!({"points": max, "reason": "Full marks after review."});
    let teacher = &c.teacher;
    teacher.put(&path, &body).await.status(200).await;
    author_exam(&app, teacher, "hooked-exam").await;

    let got = receiver.wait_for("all", 5).await;
    let now = chrono::Utc::now().timestamp();
    let mut types: Vec<&str> = got
        .iter()
        .map(|d| d["body"]["type"].as_str().unwrap())
        .collect();
    types.sort();
    let mut expected = ALL_TOPICS.to_vec();
    expected.sort();
    assert_eq!(types, expected, "{got:#?}");
    for d in &got {
        assert_eq!(d["verified"], json!([true]), "{d:#}");
        assert!(d["id"].as_str().unwrap().starts_with("msg_"), "{d}");
        let ts: i64 = d["timestamp"].as_str().unwrap().parse().unwrap();
        assert!((now - ts).abs() < 60, "{d}");
        assert!(d["signature"].as_str().unwrap().starts_with("v1,"), "{d}");
        assert!(!d["signature"].as_str().unwrap().contains(' '), "{d}");
        assert_eq!(d["content_type"], "application/json");
        assert!(d["body"]["timestamp"].is_string(), "{d}");
        // Ids, points, scores and times: never an answer, nor whether it was right.
        let data = &d["body"]["data"];
        assert!(
            data.get("correct").is_none() && data.get("answer").is_none(),
            "{d}"
        );
    }
    let of = |t: &str| got.iter().find(|d| d["body"]["type"] == t).unwrap()["body"]["data"].clone();
    let started = of("attempt.started");
    assert_eq!(started["attempt_id"], id);
    assert_eq!(started["user_id"], learner.id.to_string());
    assert_eq!(started["assignment_id"], a);
    let answered = of("response.recorded");
    assert_eq!(answered["attempt_id"], id);
    assert!(answered["points"].is_number() && answered["max_points"].is_number());
    let finished = of("attempt.finished");
    assert_eq!(finished["score"].as_f64().unwrap(), score);
    assert_eq!(finished["max_score"].as_f64().unwrap(), max);
    let changed = of("grade.changed");
    assert_eq!(changed["kind"], "override");
    assert_eq!(changed["points"].as_f64().unwrap(), max);
    assert_eq!(changed["computed_points"].as_f64().unwrap(), score);
    assert_eq!(changed["by"], c.teacher.id.to_string());
    let version = of("quiz.version_created");
    assert_eq!(version["slug"], "hooked-exam");
    assert_eq!(version["version"], 1);
    assert!(version["version_id"].is_string() && version["quiz_id"].is_string());

    // The other subscription got only its topic, under an id of its own.
    let other = receiver.wait_for("finished", 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let other_now = receiver.received("finished").await;
    assert_eq!(other_now.len(), 1, "{other_now:#?}");
    assert_eq!(other[0]["verified"], json!([true]));
    assert_eq!(
        other[0]["body"],
        got.iter()
            .find(|d| d["body"]["type"] == "attempt.finished")
            .unwrap()["body"]
    );
    assert!(got.iter().all(|d| d["id"] != other[0]["id"]));

    // Admins see each delivery, delivered, under the id the receiver got.
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen = deliveries(&admin, &all, "").await;
        if seen.len() == 5 && seen.iter().all(|d| d["status"] == "delivered") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen.len(), 5, "{seen:#?}");
    for d in &seen {
        assert_eq!(d["status"], "delivered", "{d}");
        assert_eq!(d["tries"], 1);
        let r = got
            .iter()
            .find(|r| r["id"] == d["webhook_id"])
            .expect("received under its id");
        assert_eq!(r["body"]["type"], d["topic"]);
    }

    // The secret is shown once: never in the list, nor in one subscription.
    let list = admin.get("/v1/webhooks").await.status(200).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    assert!(!list.to_string().contains("whsec_"), "{list}");
    let one_path = format!("/v1/webhooks/{}", all["id"].as_str().unwrap());
    let one = admin.get(&one_path).await.status(200).await;
    assert!(one.get("secret").is_none());
    assert_eq!(one["url"], receiver.hook("all"));
}

#[tokio::test]
async fn a_failing_receiver_gets_retries_with_backoff_then_parks_and_an_admin_retry_delivers() {
    let receiver = Receiver::start();
    let app = quizd().await;
    let admin = app.person("admin@down.example", "admin").await;
    let hook = subscribe(&admin, &receiver.hook("down"), &["attempt.started"]).await;
    let secret = hook["secret"].as_str().unwrap();
    // It fails, with a long answer that quizd reads only the start of.
    receiver.configure("down", &[secret], 503, 1 << 20).await;
    let c = course(&app, "teacher@down.example", &["learner@down.example"]).await;
    let a = assignment(&c, json!({})).await;
    start(&c.learners[0], &a).await;

    let failed = wait_for_status(&admin, &hook, "failed").await;
    assert_eq!(failed["topic"], "attempt.started");
    assert_eq!(failed["tries"], 1);
    let error = failed["last_error"].as_str().unwrap();
    assert!(error.contains("503"), "{error}");
    assert!(error.len() < 1200, "{} bytes kept", error.len());
    let next: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(failed["next_attempt_at"].clone()).unwrap();
    let wait = next - chrono::Utc::now();
    assert!(
        wait > chrono::Duration::seconds(5) && wait <= chrono::Duration::seconds(10),
        "{wait}"
    );

    // Many failed tries later (the backoff's waits skipped here), the last one parks it.
    sqlx::query(
        "UPDATE deliveries SET tries = $1 - 1, next_attempt_at = now()
          WHERE consumer LIKE 'webhook:%'",
    )
    .bind(quizd::events::MAX_TRIES)
    .execute(&app.pool)
    .await
    .unwrap();
    let parked = wait_for_status(&admin, &hook, "parked").await;
    assert_eq!(parked["tries"], quizd::events::MAX_TRIES);
    assert!(parked["next_attempt_at"].is_null());
    let tried = receiver.received("down").await;
    assert_eq!(tried.len(), 2, "{tried:#?}");
    // Every try is the same message (the same webhook-id), signed afresh, verified.
    assert!(tried.iter().all(|d| d["id"] == parked["webhook_id"]));
    assert!(tried.iter().all(|d| d["verified"] == json!([true])));

    // The receiver is mended; an admin retries; it arrives, under the same id.
    receiver.configure("down", &[secret], 204, 0).await;
    let hook_id = hook["id"].as_str().unwrap();
    let retry = format!("/v1/webhooks/{hook_id}/deliveries/{}/retry", parked["id"]);
    let scheduled = admin.post(&retry, &json!({})).await.status(202).await;
    assert_eq!(scheduled["tries"], 0);
    let got = receiver.wait_for("down", 3).await;
    assert_eq!(got[2]["id"], parked["webhook_id"]);
    assert_eq!(got[2]["verified"], json!([true]));
    let delivered = wait_for_status(&admin, &hook, "delivered").await;
    assert_eq!(delivered["tries"], 1);
    assert!(delivered["last_error"].is_null());
    assert_eq!(deliveries(&admin, &hook, "?status=failed").await.len(), 0);

    // A delivered one is not retried; an unknown one, or another webhook's, is not found.
    admin
        .post(&retry, &json!({}))
        .await
        .problem(409, "delivery_done")
        .await;
    let unknown = format!("/v1/webhooks/{hook_id}/deliveries/999999/retry");
    admin
        .post(&unknown, &json!({}))
        .await
        .problem(404, "delivery_not_found")
        .await;
    let elsewhere = format!(
        "/v1/webhooks/{}/deliveries/{}/retry",
        uuid::Uuid::new_v4(),
        parked["id"]
    );
    admin
        .post(&elsewhere, &json!({}))
        .await
        .problem(404, "webhook_not_found")
        .await;
}

#[tokio::test]
async fn during_a_rotation_deliveries_verify_with_the_old_secret_and_the_new_one_until_it_expires()
{
    let receiver = Receiver::start();
    let app = quizd().await;
    let admin = app.person("admin@rotate.example", "admin").await;
    let hook = subscribe(&admin, &receiver.hook("r"), &["response.recorded"]).await;
    let hook_id = hook["id"].as_str().unwrap();
    let old = hook["secret"].as_str().unwrap().to_string();
    let c = course(&app, "teacher@rotate.example", &["learner@rotate.example"]).await;
    let a = assignment(&c, json!({})).await;
    let learner = &c.learners[0];
    let attempt = start(learner, &a).await;
    let questions = attempt["questions"].as_array().unwrap().clone();
    assert!(questions.len() >= 4);
    let answer = |i: usize| {
        let q = &questions[i];
        let body = match q["kind"].as_str().unwrap() {
            "numeric" => json!({"number": 4}),
            "short_text" => json!({"text": "gather"}),
            _ => json!({"selected": [q["options"][0]["id"]]}),
        };
        let path = format!(
            "/v1/attempts/{}/responses/{}",
            attempt["id"].as_str().unwrap(),
            q["id"].as_str().unwrap()
        );
        async move { learner.put(&path, &body).await.status(200).await }
    };

    // Rotated: the new secret is shown once; the old one signs for 24 hours more.
    let rotate = format!("/v1/webhooks/{hook_id}/rotate-secret");
    let rotated = admin.post(&rotate, &json!({})).await.status(200).await;
    let new = rotated["secret"].as_str().unwrap().to_string();
    assert!(new.starts_with("whsec_") && new != old);
    let until: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(rotated["previous_secret_expires_at"].clone()).unwrap();
    let grace = until - chrono::Utc::now();
    assert!(
        grace > chrono::Duration::hours(23) && grace <= chrono::Duration::hours(24),
        "{grace}"
    );
    let unrelated = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    receiver
        .configure("r", &[&old, &new, unrelated], 200, 0)
        .await;
    answer(0).await;
    let got = receiver.wait_for("r", 1).await;
    assert_eq!(
        got[0]["verified"],
        json!([true, true, false]),
        "{:#}",
        got[0]
    );
    assert_eq!(got[0]["signature"].as_str().unwrap().split(' ').count(), 2);
    let shown = admin
        .get(&format!("/v1/webhooks/{hook_id}"))
        .await
        .status(200)
        .await;
    assert_eq!(
        shown["previous_secret_expires_at"],
        rotated["previous_secret_expires_at"]
    );
    assert!(!shown.to_string().contains("whsec_"));

    // The grace period over, only the new secret signs.
    sqlx::query("UPDATE webhook_secrets SET previous_expires_at = now() - interval '1 second'")
        .execute(&app.pool)
        .await
        .unwrap();
    answer(1).await;
    let got = receiver.wait_for("r", 2).await;
    assert_eq!(
        got[1]["verified"],
        json!([false, true, false]),
        "{:#}",
        got[1]
    );
    assert_eq!(got[1]["signature"].as_str().unwrap().split(' ').count(), 1);
    let shown = admin
        .get(&format!("/v1/webhooks/{hook_id}"))
        .await
        .status(200)
        .await;
    assert!(shown["previous_secret_expires_at"].is_null());

    // Disabled, it is sent nothing; enabled again, it is sent what happened since.
    let path = format!("/v1/webhooks/{hook_id}");
    let off = admin
        .patch(&path, &json!({"disabled": true}))
        .await
        .status(200)
        .await;
    assert!(off["disabled_at"].is_string());
    answer(2).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(receiver.received("r").await.len(), 2);
    let on = admin
        .patch(&path, &json!({"disabled": false}))
        .await
        .status(200)
        .await;
    assert!(on["disabled_at"].is_null());
    // (The answer while it was disabled is never sent to it.)
    answer(3).await;
    let got = receiver.wait_for("r", 3).await;
    assert_eq!(got[2]["verified"], json!([false, true, false]));
}

#[tokio::test]
async fn learners_and_teachers_cannot_create_list_read_change_or_rotate_webhooks() {
    let app = quizd().await;
    let admin = app.person("admin@roles.example", "admin").await;
    let hook = subscribe(&admin, "https://hooks.example/quizd", &["attempt.finished"]).await;
    let id = hook["id"].as_str().unwrap();
    let c = course(&app, "teacher@roles.example", &["learner@roles.example"]).await;
    let body = json!({"url": "https://evil.example/", "topics": ["response.recorded"]});
    let learner = &c.learners[0];
    let teacher = &c.teacher;
    for who in [learner, teacher] {
        who.post("/v1/webhooks", &body)
            .await
            .problem(403, "forbidden")
            .await;
        who.get("/v1/webhooks")
            .await
            .problem(403, "forbidden")
            .await;
        let one = format!("/v1/webhooks/{id}");
        who.get(&one).await.problem(403, "forbidden").await;
        who.patch(&one, &body).await.problem(403, "forbidden").await;
        let rotate = format!("/v1/webhooks/{id}/rotate-secret");
        who.post(&rotate, &json!({}))
            .await
            .problem(403, "forbidden")
            .await;
        let list = format!("/v1/webhooks/{id}/deliveries");
        who.get(&list).await.problem(403, "forbidden").await;
        who.delete(&one).await.problem(403, "forbidden").await;
    }
    let nobody = app.anonymous();
    nobody
        .get("/v1/webhooks")
        .await
        .problem(401, "unauthorized")
        .await;
    nobody
        .post("/v1/webhooks", &body)
        .await
        .problem(401, "unauthorized")
        .await;
    let (count, url): (i64, String) =
        sqlx::query_as("SELECT count(*) OVER (), url FROM webhook_subscriptions")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((count, url.as_str()), (1, "https://hooks.example/quizd"));
}

#[tokio::test]
async fn hostile_subscriptions_are_refused_with_clear_problems_and_change_nothing() {
    let app = quizd().await;
    let admin = app.person("admin@hostile.example", "admin").await;
    let topics = json!(["attempt.finished"]);
    for (url, says) in [
        ("ftp://hooks.example/", "must be https"),
        ("http://hooks.example/", "must be https"),
        ("https://intranet.example/", "may not call intranet.example"),
        (
            "https://169.254.169.254/latest/meta-data/",
            "may not call 169.254.169.254",
        ),
        ("http://localhost:5432/", "may not call localhost"),
        ("https://user:pw@hooks.example/", "user name or password"),
        ("https://token@hooks.example/", "user name or password"),
        ("hooks.example/quizd", "not a URL"),
        ("https://hooks.example/#x", "fragment"),
        ("javascript:alert(1)", "must be https"),
    ] {
        let res = admin
            .post("/v1/webhooks", &json!({"url": url, "topics": topics}))
            .await;
        let p = res.problem(422, "invalid_webhook").await;
        assert!(p["detail"].as_str().unwrap().contains(says), "{url}: {p}");
    }
    let long = format!("https://hooks.example/{}", "a".repeat(3000));
    let res = admin
        .post("/v1/webhooks", &json!({"url": long, "topics": topics}))
        .await;
    res.problem(422, "invalid_webhook").await;
    for (topics, says) in [
        (json!([]), "at least one"),
        (
            json!(["attempt.finished", "attempt.regraded"]),
            "\"attempt.regraded\" is not a topic",
        ),
        (json!(["x".repeat(10_000)]), "is not a topic"),
    ] {
        let body = json!({"url": "https://hooks.example/", "topics": topics});
        let p = admin
            .post("/v1/webhooks", &body)
            .await
            .problem(422, "invalid_webhook")
            .await;
        let detail = p["detail"].as_str().unwrap();
        assert!(detail.contains(says) && detail.len() < 400, "{detail}");
    }
    let body = json!({"url": "https://hooks.example/", "topics": topics, "description": "a\u{7}b"});
    admin
        .post("/v1/webhooks", &body)
        .await
        .problem(422, "invalid_webhook")
        .await;
    let body = json!({"url": "https://hooks.example/", "topics": topics, "secret": "whsec_mine"});
    admin
        .post("/v1/webhooks", &body)
        .await
        .problem(400, "invalid_body")
        .await;
    let body = json!({"url": "https://hooks.example/", "topics": "attempt.finished"});
    admin
        .post("/v1/webhooks", &body)
        .await
        .problem(400, "invalid_body")
        .await;
    let huge = json!({"url": "https://hooks.example/", "topics": topics, "description": "x".repeat(200_000)});
    admin
        .post("/v1/webhooks", &huge)
        .await
        .problem(413, "payload_too_large")
        .await;
    let counts = || async {
        sqlx::query_as::<_, (i64, i64)>(
            "SELECT (SELECT count(*) FROM webhook_subscriptions),
                    (SELECT count(*) FROM event_consumers WHERE consumer LIKE 'webhook:%')",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap()
    };
    assert_eq!(counts().await, (0, 0));

    // A creating POST retried with its Idempotency-Key creates one subscription, and the
    // replay is the first answer but for the secret, shown once.
    let body = json!({"url": "https://hooks.example/q", "topics": ["grade.changed"]});
    let send = || {
        admin
            .request(reqwest::Method::POST, "/v1/webhooks")
            .header("idempotency-key", "hook-1")
            .json(&body)
            .send()
    };
    let first = expect_status(send().await.unwrap(), 201).await;
    let again = send().await.unwrap();
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let mut shown_once = first.clone();
    shown_once.as_object_mut().unwrap().remove("secret");
    assert_eq!(expect_status(again, 201).await, shown_once);
    assert_eq!(counts().await, (1, 1));

    // A refused change changes nothing; a deletion takes the consumer with it.
    let path = format!("/v1/webhooks/{}", first["id"].as_str().unwrap());
    let res = admin
        .patch(&path, &json!({"url": "gopher://x/", "topics": ALL_TOPICS}))
        .await;
    res.problem(422, "invalid_webhook").await;
    let now = admin.get(&path).await.status(200).await;
    assert_eq!(now["url"], "https://hooks.example/q");
    assert_eq!(now["topics"], json!(["grade.changed"]));
    let changed = admin
        .patch(
            &path,
            &json!({"topics": ["attempt.started", "grade.changed"]}),
        )
        .await
        .status(200)
        .await;
    assert_eq!(
        changed["topics"],
        json!(["attempt.started", "grade.changed"])
    );
    assert_eq!(counts().await, (1, 2));
    admin.delete(&path).await.status(204).await;
    admin
        .get(&path)
        .await
        .problem(404, "webhook_not_found")
        .await;
    admin
        .delete(&path)
        .await
        .problem(404, "webhook_not_found")
        .await;
    assert_eq!(counts().await, (0, 0));
    let audit: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE action LIKE 'webhook_%' ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        audit,
        ["webhook_created", "webhook_updated", "webhook_deleted"]
    );
}

#[tokio::test]
async fn a_regrade_reaches_subscribers_as_a_grade_change_of_kind_regrade_after_the_new_version() {
    let receiver = Receiver::start();
    let app = quizd().await;
    let admin = app.person("admin@regraded.example", "admin").await;
    let topics = ["grade.changed", "quiz.version_created"];
    let hook = subscribe(&admin, &receiver.hook("g"), &topics).await;
    receiver
        .configure("g", &[hook["secret"].as_str().unwrap()], 200, 0)
        .await;
    let c = course(
        &app,
        "teacher@regraded.example",
        &["learner@regraded.example"],
    )
    .await;
    let learner = &c.learners[0];
    let a = assignment(&c, json!({})).await;
    let attempt = start(learner, &a).await;
    answer_some(learner, &attempt, 1, 0).await;
    let done = finish(learner, &attempt).await;

    // An admin publishes version 2 with the first question worth 3 points; the teacher
    // regrades the assignment to it.
    let toml =
        std::fs::read_to_string(crate::support::content_dir().join("data-parallelism/quiz.toml"))
            .unwrap()
            .replacen("points = 1\n", "points = 3\n", 1);
    let _: Value = admin
        .send_quiz(Some("data-parallelism"), &toml)
        .await
        .ok()
        .await;
    let path = format!("/v1/assignments/{a}/regrade");
    let body = json!({"to_version": 2, "dry_run": false});
    let teacher = &c.teacher;
    let report = teacher.post(&path, &body).await.status(200).await;
    let change = &report["attempts"][0];
    assert_eq!(change["grade_changed"], true);

    let got = receiver.wait_for("g", 2).await;
    assert!(
        got.iter().all(|d| d["verified"] == json!([true])),
        "{got:#?}"
    );
    let of = |t: &str| got.iter().find(|d| d["body"]["type"] == t).unwrap()["body"]["data"].clone();
    let version = of("quiz.version_created");
    assert_eq!(
        (&version["slug"], &version["version"]),
        (&json!("data-parallelism"), &json!(2))
    );
    let changed = of("grade.changed");
    assert_eq!(changed["kind"], "regrade");
    assert_eq!(changed["attempt_id"], attempt["id"]);
    assert_eq!(changed["user_id"], learner.id.to_string());
    assert_eq!(changed["points"].as_f64(), change["to_points"].as_f64());
    assert_eq!(changed["max_score"].as_f64(), change["to_max"].as_f64());
    assert_eq!(
        changed["from_max_score"].as_f64(),
        done["result"]["max_score"].as_f64()
    );
    assert_eq!(changed["by"], c.teacher.id.to_string());
}

#[tokio::test]
async fn a_batch_stops_at_its_first_failure_so_a_failing_receiver_is_called_once_per_batch() {
    let receiver = Receiver::start();
    let app = quizd().await;
    let admin = app.person("admin@batch.example", "admin").await;
    let hook = subscribe(&admin, &receiver.hook("b"), &["attempt.finished"]).await;
    receiver
        .configure("b", &[hook["secret"].as_str().unwrap()], 500, 0)
        .await;
    // Three events written at once (one dispatch, one batch).
    sqlx::query(
        "INSERT INTO outbox (topic, aggregate_id, payload)
         SELECT 'attempt.finished', gen_random_uuid(), jsonb_build_object('score', n)
           FROM generate_series(1, 3) AS n",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let failed = wait_until(
        "three failed deliveries",
        || deliveries(&admin, &hook, "?status=failed"),
        |failed| failed.len() == 3,
    )
    .await;
    let tried = receiver.received("b").await;
    assert_eq!(tried.len(), 1, "{tried:#?}");
    let errors: Vec<&str> = failed
        .iter()
        .map(|d| d["last_error"].as_str().unwrap())
        .collect();
    let untried = errors
        .iter()
        .filter(|e| e.starts_with("not tried after an earlier failure"))
        .count();
    assert_eq!(untried, 2, "{errors:#?}");
    assert!(errors.iter().all(|e| e.contains("500")), "{errors:#?}");
}

#[tokio::test]
async fn a_replayed_subscription_never_shows_its_signing_secret_again() {
    let app = quizd().await;
    let admin = app.person("admin@replay.example", "admin").await;
    let body = json!({"url": "https://hooks.example/quizd", "topics": ["attempt.finished"]});
    let create = || async {
        crate::support::session::Reply::of(
            admin
                .request(reqwest::Method::POST, "/v1/webhooks")
                .header("idempotency-key", "subscribe-once")
                .json(&body),
        )
        .await
    };
    let first = create().await.status(201).await;
    let secret = first["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_"));
    let id = first["id"].as_str().unwrap();

    let replay = create().await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    let replayed = replay.status(201).await;
    assert_eq!(replayed["id"], id);
    assert_eq!(replayed["url"], first["url"]);
    assert!(replayed.get("secret").is_none(), "{replayed}");

    // Nor after a rotation, and nothing kept for replays holds either secret.
    let rotated = admin
        .post(&format!("/v1/webhooks/{id}/rotate-secret"), &json!({}))
        .await
        .status(200)
        .await;
    let replayed = create().await.status(201).await;
    assert!(replayed.get("secret").is_none(), "{replayed}");
    for secret in [secret.as_str(), rotated["secret"].as_str().unwrap()] {
        let kept: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM idempotency_keys
              WHERE position(convert_to($1, 'UTF8') IN coalesce(response_body, '')) > 0",
        )
        .bind(secret)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert_eq!(kept, 0);
    }
}
