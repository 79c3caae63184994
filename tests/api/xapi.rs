//! xAPI statements to a real Learning Record Store: Ralph (`ralph-malph` from PyPI, run by
//! `tests/xapi/lrs.py` with its file-system backend), in `target/xapi-venv`, made (pip, from
//! the pinned `tests/xapi/requirements.txt`) when missing. quizd's worker sends to it as it
//! would to any LRS; the tests read the statements back through Ralph's xAPI API.

use std::time::Duration;

use serde_json::{Value, json};

use crate::grades::{answer_some, assignment, course, finish, start};
use crate::support::peer::PythonPeer;
use crate::support::session::Session;
use crate::support::{TestApp, expect_status, wait_until};

const HOMEPAGE: &str = "https://quiz.example.org";

/// A running Ralph LRS; it stops when dropped.
struct Lrs {
    dir: std::path::PathBuf,
    ralph: PythonPeer,
}

impl Lrs {
    /// Starts Ralph on `port` (a free one when 0) with its data in `dir`.
    fn start(dir: &std::path::Path, port: u16) -> Lrs {
        let port = port.to_string();
        let ralph = PythonPeer::start(
            "Ralph",
            "xapi-venv",
            "tests/xapi/requirements.txt",
            "tests/xapi/lrs.py",
            &[
                "--dir".as_ref(),
                dir.as_os_str(),
                "--port".as_ref(),
                port.as_ref(),
            ],
        );
        Lrs {
            dir: dir.to_path_buf(),
            ralph,
        }
    }

    fn new() -> Lrs {
        let dir = std::env::temp_dir().join(format!("quizd-lrs-{}", uuid::Uuid::new_v4().simple()));
        Lrs::start(&dir, 0)
    }

    fn endpoint(&self) -> String {
        self.ralph.url("/xAPI/")
    }

    /// Stops Ralph (as dropping it does); where its data is, and its port, to start it again.
    fn stop(self) -> (std::path::PathBuf, u16) {
        let Lrs { dir, ralph } = self;
        let port = ralph.port;
        drop(ralph);
        (dir, port)
    }

    /// The statements of one attempt, as Ralph's `GET /xAPI/statements` gives them.
    async fn statements(&self, registration: &str) -> Vec<Value> {
        let res = reqwest::Client::new()
            .get(format!("{}statements", self.endpoint()))
            .query(&[("registration", registration), ("limit", "500")])
            .basic_auth("quizd", Some("quizd-secret"))
            .header("X-Experience-API-Version", "1.0.3")
            .send()
            .await
            .unwrap();
        let body = expect_status(res, 200).await;
        body["statements"].as_array().unwrap().clone()
    }

    /// Waits (up to 30 s) until the attempt has `count` statements at the LRS.
    async fn wait_for(&self, registration: &str, count: usize) -> Vec<Value> {
        let what = format!("{count} statements at the LRS");
        let read = || self.statements(registration);
        wait_until(&what, read, |got| got.len() >= count).await
    }
}

async fn quizd_sending_to(endpoint: String) -> TestApp {
    TestApp::spawn_configured(move |s| {
        s.xapi = Some(
            quizd::events::xapi::Settings::new(
                &endpoint,
                Some("quizd".into()),
                Some("quizd-secret".into()),
                None,
                Some(HOMEPAGE),
                false,
            )
            .unwrap(),
        );
    })
    .await
}

/// Waits (up to 30 s) until no xAPI delivery is left undelivered; returns them all.
async fn all_delivered(admin: &Session<'_>) -> Vec<Value> {
    for _ in 0..300 {
        let pending = admin
            .get("/v1/xapi/deliveries?status=pending")
            .await
            .status(200)
            .await;
        let all = admin.get("/v1/xapi/deliveries").await.status(200).await;
        let all = all["items"].as_array().unwrap().clone();
        if pending["items"].as_array().unwrap().is_empty() && !all.is_empty() {
            return all;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("xAPI deliveries were left undelivered");
}

fn verbs(statements: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = statements
        .iter()
        .map(|s| {
            s["verb"]["id"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn an_attempt_reaches_the_lrs_as_statements_named_in_every_locale_and_only_once() {
    let lrs = Lrs::new();
    let app = quizd_sending_to(lrs.endpoint()).await;
    let admin = app.person("admin@xapi.example", "admin").await;
    let c = course(&app, "teacher@xapi.example", &["learner@xapi.example"]).await;
    let learner = &c.learners[0];
    let a = assignment(&c, json!({})).await;
    let attempt = start(learner, &a).await;
    let questions = attempt["questions"].as_array().unwrap().len();
    answer_some(learner, &attempt, questions, 0).await;
    let done = finish(learner, &attempt).await;
    let id = attempt["id"].as_str().unwrap();

    let statements = lrs.wait_for(id, questions + 2).await;
    let mut expected = vec!["answered".to_string(); questions];
    expected.extend(["completed".into(), "initialized".into()]);
    expected.sort();
    assert_eq!(verbs(&statements), expected);
    for s in &statements {
        // The learner is an opaque account on quizd's origin, never their address.
        assert_eq!(
            s["actor"]["account"],
            json!({"homePage": HOMEPAGE, "name": learner.id.to_string()}),
            "{s}"
        );
        assert!(s["actor"].get("mbox").is_none(), "{s}");
        assert_eq!(s["context"]["registration"], id);
        let grouping = &s["context"]["contextActivities"]["grouping"][0];
        assert_eq!(grouping["id"], format!("{HOMEPAGE}/courses/{}", c.id));
        assert_eq!(
            grouping["definition"]["name"]["und"],
            "Distributed training"
        );
    }
    let quiz_name = json!({
        "en": "Data Parallelism Quiz",
        "bn": "ডেটা সমান্তরাল কুইজ",
        "id": "Kuis Paralelisme Data",
    });
    let by_verb = |verb: &str| {
        statements
            .iter()
            .filter(|s| {
                s["verb"]["id"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("/{verb}"))
            })
            .collect::<Vec<_>>()
    };
    let initialized = by_verb("initialized")[0];
    assert_eq!(
        initialized["object"]["id"],
        format!("{HOMEPAGE}/quizzes/data-parallelism")
    );
    assert_eq!(initialized["object"]["definition"]["name"], quiz_name);
    assert!(initialized.get("result").is_none());

    // Each answer: the question named in each locale it has, its score and whether it was right.
    let answered = by_verb("answered");
    let first = answered
        .iter()
        .find(|s| {
            s["object"]["id"]
                .as_str()
                .unwrap()
                .ends_with("/questions/replica-contents")
        })
        .expect("the first question's statement");
    let name = &first["object"]["definition"]["name"];
    assert_eq!(
        name["en"],
        "In standard data parallelism, what does each GPU hold?"
    );
    assert_eq!(name["bn"], "স্ট্যান্ডার্ড ডেটা সমান্তরালে, প্রতিটি জিপিইউ কী ধরে রাখে?");
    assert!(name["id"].is_string(), "{name}");
    assert_eq!(first["object"]["definition"]["interactionType"], "choice");
    assert_eq!(
        first["context"]["contextActivities"]["parent"][0]["id"],
        initialized["object"]["id"]
    );
    let mut raw_sum = 0.0;
    for s in &answered {
        let r = &s["result"];
        let (raw, max) = (
            r["score"]["raw"].as_f64().unwrap(),
            r["score"]["max"].as_f64().unwrap(),
        );
        assert!(r["success"].is_boolean(), "{s}");
        assert_eq!(
            r["success"].as_bool().unwrap(),
            raw == max && max > 0.0,
            "{s}"
        );
        assert_eq!(r["score"]["min"].as_f64().unwrap(), 0.0);
        assert!((r["score"]["scaled"].as_f64().unwrap() - raw / max).abs() < 1e-4);
        raw_sum += raw;
    }

    // The finish: completed with the attempt's score (no pass mark: no passed/failed).
    let completed = by_verb("completed")[0];
    let score = done["result"]["score"].as_f64().unwrap();
    let max = done["result"]["max_score"].as_f64().unwrap();
    assert_eq!(completed["result"]["score"]["raw"].as_f64().unwrap(), score);
    assert_eq!(completed["result"]["score"]["max"].as_f64().unwrap(), max);
    assert!((raw_sum - score).abs() < 1e-9);
    assert_eq!(completed["result"]["completion"], true);
    assert!(completed["result"].get("success").is_none());

    // Delivered, as admins see it; a second delivery of the same events (as after a crash
    // between sending and recording) adds nothing at the LRS: the ids are the events'.
    let deliveries = all_delivered(&admin).await;
    assert_eq!(deliveries.len(), questions + 2);
    assert!(
        deliveries
            .iter()
            .all(|d| d["status"] == "delivered" && d["attempt_id"] == id)
    );
    sqlx::query(
        "UPDATE deliveries SET delivered_at = NULL, next_attempt_at = now(), tries = 0
          WHERE consumer = 'xapi'",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    all_delivered(&admin).await;
    let again = lrs.statements(id).await;
    assert_eq!(again.len(), questions + 2, "{again:#?}");
    let ids = |s: &[Value]| {
        let mut v: Vec<String> = s
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids(&again), ids(&statements));

    // A delivered one is not retried; the learner and the teacher never see these endpoints.
    let one = deliveries[0]["id"].as_i64().unwrap();
    let retry = format!("/v1/xapi/deliveries/{one}/retry");
    admin
        .post(&retry, &json!({}))
        .await
        .problem(409, "delivery_done")
        .await;
    admin
        .post("/v1/xapi/deliveries/999999/retry", &json!({}))
        .await
        .problem(404, "delivery_not_found")
        .await;
    for who in [learner, &c.teacher] {
        who.get("/v1/xapi/deliveries")
            .await
            .problem(403, "forbidden")
            .await;
        who.post(&retry, &json!({}))
            .await
            .problem(403, "forbidden")
            .await;
    }
    let forged = app.bearer_session("not-a-token");
    forged.get("/v1/xapi/deliveries").await.status(401).await;
    app.anonymous()
        .get("/v1/xapi/deliveries")
        .await
        .status(401)
        .await;
}

#[tokio::test]
async fn statements_for_an_lrs_that_is_down_are_retried_with_backoff_and_arrive_later() {
    let (dir, port) = Lrs::new().stop();
    let app = quizd_sending_to(format!("http://127.0.0.1:{port}/xAPI/")).await;
    let admin = app.person("admin@xapi-down.example", "admin").await;
    let c = course(
        &app,
        "teacher@xapi-down.example",
        &["learner@xapi-down.example"],
    )
    .await;
    let a = assignment(&c, json!({})).await;
    let attempt = start(&c.learners[0], &a).await;
    let id = attempt["id"].as_str().unwrap();

    // The start's statement fails, and waits for its next try.
    let failed = loop {
        let list = admin
            .get("/v1/xapi/deliveries?status=failed")
            .await
            .status(200)
            .await;
        if let Some(f) = list["items"].as_array().unwrap().first() {
            break f.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(failed["topic"], "attempt.started");
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["tries"], 1);
    assert!(
        failed["last_error"]
            .as_str()
            .unwrap()
            .contains("could not be reached"),
        "{failed}"
    );
    let next: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(failed["next_attempt_at"].clone()).unwrap();
    let wait = next - chrono::Utc::now();
    assert!(
        wait > chrono::Duration::seconds(5) && wait <= chrono::Duration::seconds(10),
        "{wait}"
    );

    // The LRS comes back; the backoff ends and the statement arrives, once.
    let lrs = Lrs::start(&dir, port);
    let statements = lrs.wait_for(id, 1).await;
    assert_eq!(verbs(&statements), ["initialized"]);
    let deliveries = all_delivered(&admin).await;
    assert_eq!(deliveries[0]["status"], "delivered");
    assert_eq!(deliveries[0]["tries"], 2);
    assert!(deliveries[0]["last_error"].is_null());
}
