//! Safe retries: `Idempotency-Key` on the creating POSTs (#22).

use chrono::{Duration, Utc};
use quizd::clock::Clock;
use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{Person, TestApp, assert_problem, bearer, expect_status, token_for};

/// POST `body` (as these exact bytes of JSON) to `path`, with `key` when given.
async fn post_keyed(
    app: &TestApp,
    who: &Person,
    path: &str,
    key: Option<&str>,
    body: &str,
) -> reqwest::Response {
    let mut req = bearer(app, Method::POST, path, &who.access)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(key) = key {
        req = req.header("idempotency-key", key);
    }
    req.send().await.unwrap()
}

async fn courses_titled(app: &TestApp, title: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM courses WHERE title = $1")
        .bind(title)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn keys_held(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM idempotency_keys")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

fn header(res: &reqwest::Response, name: &str) -> Option<String> {
    res.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
}

#[tokio::test]
async fn a_retried_post_with_the_same_key_creates_one_course_and_replays_status_body_and_location()
{
    let app = TestApp::spawn().await;
    let teacher = token_for(&app, "t@example.com", "instructor").await;
    let body = r#"{"title": "Retried course", "code": "CS-1"}"#;

    let first = post_keyed(&app, &teacher, "/v1/courses", Some("key-1"), body).await;
    assert_eq!(header(&first, "idempotent-replayed"), None);
    let location = header(&first, "location").expect("a Location");
    let first_body = expect_status(first, 201).await;
    assert_eq!(
        location,
        format!("/v1/courses/{}", first_body["id"].as_str().unwrap())
    );

    for _ in 0..2 {
        let again = post_keyed(&app, &teacher, "/v1/courses", Some("key-1"), body).await;
        assert_eq!(
            header(&again, "idempotent-replayed").as_deref(),
            Some("true")
        );
        assert_eq!(
            header(&again, "location").as_deref(),
            Some(location.as_str())
        );
        assert_eq!(
            header(&again, "content-type").as_deref(),
            Some("application/json")
        );
        assert_eq!(expect_status(again, 201).await, first_body);
    }
    assert_eq!(courses_titled(&app, "Retried course").await, 1);
    assert_eq!(keys_held(&app).await, 1);
}

#[tokio::test]
async fn two_identical_requests_at_once_create_one_course() {
    let app = TestApp::spawn().await;
    let teacher = token_for(&app, "t@example.com", "instructor").await;
    for round in 0..5 {
        let title = format!("Raced course {round}");
        let body = json!({ "title": title }).to_string();
        let key = format!("race-{round}");
        let (a, b) = tokio::join!(
            post_keyed(&app, &teacher, "/v1/courses", Some(&key), &body),
            post_keyed(&app, &teacher, "/v1/courses", Some(&key), &body),
        );
        let mut created = 0;
        for res in [a, b] {
            match (res.status().as_u16(), header(&res, "idempotent-replayed")) {
                (201, None) => created += 1,
                // The other one finished first and this one was answered from the record.
                (201, Some(_)) => {}
                (409, _) => {
                    assert_eq!(header(&res, "retry-after").as_deref(), Some("1"));
                    assert_problem(res, 409, "idempotency_key_in_flight").await;
                }
                (status, _) => panic!("status {status}: {}", res.text().await.unwrap()),
            }
        }
        assert_eq!(created, 1, "round {round}: exactly one request ran");
        assert_eq!(courses_titled(&app, &title).await, 1, "round {round}");
    }
    assert_eq!(keys_held(&app).await, 5);
}

#[tokio::test]
async fn the_same_key_with_another_body_or_path_is_refused_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let teacher = token_for(&app, "t@example.com", "instructor").await;
    let first = post_keyed(
        &app,
        &teacher,
        "/v1/courses",
        Some("k"),
        r#"{"title": "One"}"#,
    )
    .await;
    let course = expect_status(first, 201).await;

    let other_body = post_keyed(
        &app,
        &teacher,
        "/v1/courses",
        Some("k"),
        r#"{"title": "Two"}"#,
    )
    .await;
    assert_problem(other_body, 422, "idempotency_key_reused").await;
    let enrollments = format!("/v1/courses/{}/enrollments", course["id"].as_str().unwrap());
    let other_path = post_keyed(
        &app,
        &teacher,
        &enrollments,
        Some("k"),
        r#"{"title": "One"}"#,
    )
    .await;
    assert_problem(other_path, 422, "idempotency_key_reused").await;
    // Even the same bytes written differently are another request.
    let reformatted = post_keyed(
        &app,
        &teacher,
        "/v1/courses",
        Some("k"),
        r#"{"title":"One"}"#,
    )
    .await;
    assert_problem(reformatted, 422, "idempotency_key_reused").await;

    assert_eq!(courses_titled(&app, "Two").await, 0);
    assert_eq!(courses_titled(&app, "One").await, 1);
}

#[tokio::test]
async fn a_key_that_is_empty_too_long_or_not_visible_ascii_is_refused_on_every_creating_post() {
    let app = TestApp::spawn().await;
    let admin = token_for(&app, "admin@example.com", "admin").await;
    let long = "k".repeat(256);
    for path in quizd::idempotency::OPERATIONS {
        let path = path.replace("{id}", &uuid::Uuid::new_v4().to_string());
        for key in ["", long.as_str(), "two words"] {
            let res = post_keyed(&app, &admin, &path, Some(key), r#"{"title": "Bad key"}"#).await;
            assert_problem(res, 400, "invalid_idempotency_key").await;
        }
    }
    // 255 characters is a key.
    let res = post_keyed(
        &app,
        &admin,
        "/v1/courses",
        Some(&long[..255]),
        r#"{"title": "Bad key"}"#,
    )
    .await;
    expect_status(res, 201).await;
    assert_eq!(courses_titled(&app, "Bad key").await, 1);
}

#[tokio::test]
async fn another_persons_same_key_is_independent() {
    let app = TestApp::spawn().await;
    let ada = token_for(&app, "ada@example.com", "instructor").await;
    let bob = token_for(&app, "bob@example.com", "instructor").await;
    let body = r#"{"title": "Shared key"}"#;
    let a = expect_status(
        post_keyed(&app, &ada, "/v1/courses", Some("same"), body).await,
        201,
    )
    .await;
    let res = post_keyed(&app, &bob, "/v1/courses", Some("same"), body).await;
    assert_eq!(header(&res, "idempotent-replayed"), None);
    let b = expect_status(res, 201).await;
    assert_ne!(a["id"], b["id"]);
    assert_eq!(b["owner_id"], json!(bob.id));
    assert_eq!(courses_titled(&app, "Shared key").await, 2);
}

#[tokio::test]
async fn without_the_header_every_post_runs_and_no_key_is_kept() {
    let app = TestApp::spawn().await;
    let teacher = token_for(&app, "t@example.com", "instructor").await;
    for _ in 0..2 {
        let res = post_keyed(&app, &teacher, "/v1/courses", None, r#"{"title": "Plain"}"#).await;
        assert_eq!(header(&res, "idempotent-replayed"), None);
        expect_status(res, 201).await;
    }
    assert_eq!(courses_titled(&app, "Plain").await, 2);
    assert_eq!(keys_held(&app).await, 0);
}

#[tokio::test]
async fn a_request_that_failed_keeps_nothing_so_the_key_serves_the_corrected_retry() {
    let app = TestApp::spawn().await;
    let teacher = token_for(&app, "t@example.com", "instructor").await;
    let learner = token_for(&app, "l@example.com", "learner").await;
    let refused = post_keyed(&app, &teacher, "/v1/courses", Some("k"), r#"{"title": ""}"#).await;
    assert_eq!(refused.status().as_u16(), 422);
    // A learner's 403 with a key keeps nothing either.
    let forbidden = post_keyed(
        &app,
        &learner,
        "/v1/courses",
        Some("k"),
        r#"{"title": "X"}"#,
    )
    .await;
    assert_problem(forbidden, 403, "forbidden").await;
    assert_eq!(keys_held(&app).await, 0);

    let res = post_keyed(
        &app,
        &teacher,
        "/v1/courses",
        Some("k"),
        r#"{"title": "Fixed"}"#,
    )
    .await;
    expect_status(res, 201).await;
    assert_eq!(courses_titled(&app, "Fixed").await, 1);
}

/// The fingerprint quizd keeps: SHA-256 of method, path and body.
fn fingerprint(path: &str, body: &str) -> Vec<u8> {
    let mut hash = Sha256::new();
    hash.update(b"POST\0");
    hash.update(path.as_bytes());
    hash.update(b"\0");
    hash.update(body.as_bytes());
    hash.finalize().to_vec()
}

#[tokio::test]
async fn a_key_in_flight_elsewhere_is_409_until_its_lease_lapses_and_a_key_lasts_24_hours() {
    let clock = Clock::manual(Utc::now());
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let teacher = token_for(&app, "t@example.com", "instructor").await;
    let body = r#"{"title": "Leased"}"#;
    // Another instance claimed the key and is still running the request.
    sqlx::query(
        "INSERT INTO idempotency_keys (user_id, key, request_hash, created_at)
         VALUES ($1, 'k', $2, $3)",
    )
    .bind(teacher.id)
    .bind(fingerprint("/v1/courses", body))
    .bind(clock.now())
    .execute(&app.pool)
    .await
    .unwrap();
    let res = post_keyed(&app, &teacher, "/v1/courses", Some("k"), body).await;
    assert_eq!(header(&res, "retry-after").as_deref(), Some("1"));
    assert_problem(res, 409, "idempotency_key_in_flight").await;
    assert_eq!(courses_titled(&app, "Leased").await, 0);

    // That instance died: after the lease the key is claimed anew.
    clock.advance(Duration::minutes(5) + Duration::seconds(1));
    let first = expect_status(
        post_keyed(&app, &teacher, "/v1/courses", Some("k"), body).await,
        201,
    )
    .await;
    clock.advance(Duration::hours(23));
    let res = post_keyed(&app, &teacher, "/v1/courses", Some("k"), body).await;
    assert_eq!(header(&res, "idempotent-replayed").as_deref(), Some("true"));
    assert_eq!(expect_status(res, 201).await, first);

    // After 24 hours the key is forgotten (and purged): the same request runs again.
    clock.advance(Duration::hours(1) + Duration::seconds(1));
    let res = post_keyed(&app, &teacher, "/v1/courses", Some("other"), body).await;
    expect_status(res, 201).await;
    let res = post_keyed(&app, &teacher, "/v1/courses", Some("k"), body).await;
    assert_eq!(header(&res, "idempotent-replayed"), None);
    assert_ne!(expect_status(res, 201).await["id"], first["id"]);
    assert_eq!(courses_titled(&app, "Leased").await, 3);
    assert_eq!(keys_held(&app).await, 2);
}

#[tokio::test]
async fn enrollments_assignments_quizzes_and_registrations_are_replayed_too() {
    let app = TestApp::spawn().await;
    let admin = token_for(&app, "admin@example.com", "admin").await;
    let learner = token_for(&app, "l@example.com", "learner").await;
    let course = expect_status(
        post_keyed(&app, &admin, "/v1/courses", None, r#"{"title": "C"}"#).await,
        201,
    )
    .await;
    let course = course["id"].as_str().unwrap();
    let enroll = json!({ "user_id": learner.id, "role": "learner" }).to_string();
    let assign = json!({ "quiz": "data-parallelism", "title": "Week 1" }).to_string();
    let cases: [(String, String); 2] = [
        (format!("/v1/courses/{course}/enrollments"), enroll),
        (format!("/v1/courses/{course}/assignments"), assign),
    ];
    for (path, body) in cases {
        let first = post_keyed(&app, &admin, &path, Some(&path), &body).await;
        let status = first.status().as_u16();
        let first: Value = first.json().await.unwrap();
        assert!((200..300).contains(&status), "{path}: {status} {first}");
        let again = post_keyed(&app, &admin, &path, Some(&path), &body).await;
        assert_eq!(
            header(&again, "idempotent-replayed").as_deref(),
            Some("true")
        );
        assert_eq!(again.status().as_u16(), status);
        assert_eq!(again.json::<Value>().await.unwrap(), first, "{path}");
    }
    let assignments: i64 =
        sqlx::query_scalar("SELECT count(*) FROM assignments WHERE title = 'Week 1'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(assignments, 1);
}

#[tokio::test]
async fn the_openapi_document_names_the_header_on_each_creating_post() {
    let app = TestApp::spawn().await;
    let doc = app.get_json("/openapi.json", 200).await;
    for path in quizd::idempotency::OPERATIONS {
        let op = &doc["paths"][path]["post"];
        let params = op["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{path}"));
        let key = params
            .iter()
            .find(|p| p["name"] == "Idempotency-Key")
            .unwrap_or_else(|| panic!("{path} documents no Idempotency-Key"));
        assert_eq!(key["in"], "header");
        assert_eq!(key["schema"]["maxLength"], 255);
        for status in ["400", "409", "422"] {
            assert!(op["responses"][status].is_object(), "{path} {status}");
        }
    }
}

#[tokio::test]
async fn erasing_a_person_forgets_the_responses_kept_for_their_retries() {
    let app = TestApp::spawn().await;
    let teacher = token_for(&app, "t@example.com", "instructor").await;
    let other = token_for(&app, "o@example.com", "instructor").await;
    for who in [&teacher, &other] {
        let res = post_keyed(&app, who, "/v1/courses", Some("k"), r#"{"title": "Mine"}"#).await;
        expect_status(res, 201).await;
    }
    let res = app
        .client
        .delete(app.url("/v1/me"))
        .bearer_auth(&teacher.access)
        .json(&json!({ "password": crate::support::PASSWORD }))
        .send()
        .await
        .unwrap();
    expect_status(res, 204).await;
    let kept: Vec<uuid::Uuid> = sqlx::query_scalar("SELECT user_id FROM idempotency_keys")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(kept, vec![other.id]);
}

#[tokio::test]
async fn a_key_without_a_valid_token_is_401_and_keeps_nothing() {
    let app = TestApp::spawn().await;
    for auth in [None, Some("Bearer forged")] {
        let mut req = app
            .client
            .post(app.url("/v1/courses"))
            .header("idempotency-key", "k")
            .json(&json!({ "title": "Anonymous" }));
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        assert_problem(req.send().await.unwrap(), 401, "unauthorized").await;
    }
    assert_eq!(keys_held(&app).await, 0);
    assert_eq!(courses_titled(&app, "Anonymous").await, 0);
}

#[tokio::test]
async fn a_retried_quiz_import_and_platform_registration_are_replayed_not_refused_as_duplicates() {
    let app = TestApp::spawn().await;
    let admin = token_for(&app, "admin@example.com", "admin").await;
    let quiz = crate::support::private_quiz("retried-exam");
    let send = || {
        bearer(&app, Method::POST, "/v1/quizzes", &admin.access)
            .header("content-type", "application/toml")
            .header("idempotency-key", "quiz-1")
            .body(quiz.clone())
            .send()
    };
    let first = expect_status(send().await.unwrap(), 201).await;
    // Without the key the retry would be `409 slug_taken`; with it, the first answer.
    let again = send().await.unwrap();
    assert_eq!(
        header(&again, "idempotent-replayed").as_deref(),
        Some("true")
    );
    assert_eq!(expect_status(again, 201).await, first);

    let registration = json!({
        "title": "An LMS",
        "issuer": "https://lms.example",
        "client_id": "quizd",
        "deployment_ids": ["1"],
        "auth_endpoint": "https://lms.example/auth",
        "token_endpoint": "https://lms.example/token",
        "jwks_url": "https://lms.example/jwks",
    })
    .to_string();
    let path = "/v1/lti/registrations";
    let first = expect_status(
        post_keyed(&app, &admin, path, Some("reg-1"), &registration).await,
        201,
    )
    .await;
    let again = post_keyed(&app, &admin, path, Some("reg-1"), &registration).await;
    assert_eq!(
        header(&again, "idempotent-replayed").as_deref(),
        Some("true")
    );
    assert_eq!(expect_status(again, 201).await, first);
    let without_key = post_keyed(&app, &admin, path, None, &registration).await;
    assert_problem(without_key, 409, "registration_exists").await;
}
