//! Abuse resistance: oversized, nested, binary and hostile input is refused or harmless.

use serde_json::{Value, json};

use crate::support::{TestApp, assert_problem, expect_status, post_as, token_for};

#[tokio::test]
async fn an_oversized_body_is_413_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let huge = json!({"email": "x@example.org", "display_name": "x".repeat(100_000), "password": "long enough password"});
    let res = app
        .client
        .post(app.url("/v1/auth/register"))
        .json(&huge)
        .send()
        .await
        .unwrap();
    assert_problem(res, 413, "payload_too_large").await;
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(users, 0);
}

#[tokio::test]
async fn deeply_nested_json_is_refused() {
    let app = TestApp::spawn().await;
    let body = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let res = app
        .client
        .post(app.url("/v1/auth/login"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_problem(res, 400, "invalid_body").await;
}

#[tokio::test]
async fn nul_bytes_and_invalid_utf8_are_400() {
    let app = TestApp::spawn().await;
    let teacher = token_for(&app, "nul@example.org", "instructor").await;
    let res = post_as(
        &app,
        &teacher.access,
        "/v1/courses",
        &json!({"title": "Nul\u{0}Course"}),
    )
    .await;
    assert_problem(res, 400, "invalid_field").await;
    let res = app
        .client
        .post(app.url("/v1/auth/register"))
        .header("content-type", "application/json")
        .body(b"{\"email\": \"a@b.org\", \"display_name\": \"\xff\xfe\", \"password\": \"long enough password\"}".to_vec())
        .send()
        .await
        .unwrap();
    assert_problem(res, 400, "invalid_body").await;
    let res = app
        .client
        .post(app.url("/v1/auth/login"))
        .json(&json!({"email": "a\u{0}@b.org", "password": "x"}))
        .send()
        .await
        .unwrap();
    assert_problem(res, 400, "invalid_field").await;
    let courses: i64 = sqlx::query_scalar("SELECT count(*) FROM courses")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(courses, 0);
}

#[tokio::test]
async fn path_traversal_and_sql_metacharacters_in_every_string_parameter_are_harmless() {
    let app = TestApp::spawn().await;
    let teacher = token_for(&app, "meta@example.org", "instructor").await;
    let hostile = [
        "..%2F..%2Fetc%2Fpasswd",
        "%27%20OR%20%271%27%3D%271",
        "x%3B%20DROP%20TABLE%20users%3B--",
        "%25%00",
        "%C0%AF",
    ];
    for h in hostile {
        for path in [
            format!("/v1/quizzes/{h}"),
            format!("/v1/quizzes/{h}/analytics"),
            format!("/v1/quizzes/{h}/versions/1"),
            format!("/v1/quizzes/data-parallelism?lang={h}"),
            format!("/v1/assignments/{h}"),
            format!("/v1/attempts/{h}"),
            format!("/v1/assignments/00000000-0000-0000-0000-000000000000/analytics?locale={h}"),
        ] {
            let res = crate::support::get_as(&app, &teacher.access, &path).await;
            let status = res.status().as_u16();
            assert!(matches!(status, 200 | 400 | 403 | 404), "{path}: {status}");
            let ct = res.headers()["content-type"].to_str().unwrap().to_string();
            if status != 200 {
                assert!(ct.starts_with("application/problem+json"), "{path}");
            }
        }
    }
    // Nothing was harmed: the tables are all there and the quiz still serves.
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(users, 1);
    let quiz: Value = expect_status(app.get("/v1/quizzes/data-parallelism").await, 200).await;
    assert_eq!(quiz["questions"].as_array().unwrap().len(), 8);
}

#[tokio::test]
async fn cors_allows_only_the_configured_origins() {
    let app = TestApp::spawn_with_cors(vec!["https://learn.example.edu".into()]).await;
    let preflight = |origin: &'static str| {
        app.client
            .request(reqwest::Method::OPTIONS, app.url("/v1/quizzes"))
            .header("origin", origin)
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "authorization")
            .send()
    };
    let ok = preflight("https://learn.example.edu").await.unwrap();
    assert_eq!(
        ok.headers()["access-control-allow-origin"],
        "https://learn.example.edu"
    );
    let refused = preflight("https://evil.example.com").await.unwrap();
    assert!(
        !refused
            .headers()
            .contains_key("access-control-allow-origin")
    );
    let simple = app
        .client
        .get(app.url("/v1/quizzes"))
        .header("origin", "https://evil.example.com")
        .send()
        .await
        .unwrap();
    assert!(!simple.headers().contains_key("access-control-allow-origin"));
}

#[tokio::test]
async fn no_origin_is_allowed_when_none_is_configured() {
    // With no configured origins, no cross-origin access at all.
    let app = TestApp::spawn().await;
    let res = app
        .client
        .get(app.url("/v1/quizzes"))
        .header("origin", "https://learn.example.edu")
        .send()
        .await
        .unwrap();
    assert!(!res.headers().contains_key("access-control-allow-origin"));
}
