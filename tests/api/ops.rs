//! Liveness, readiness and metrics.

use serde_json::Value;

use crate::support::{TestApp, assert_problem};

const METRICS_TOKEN: &str = "scraper-token-for-the-tests";

/// A quizd whose `/metrics` wants [`METRICS_TOKEN`].
async fn with_metrics_token() -> TestApp {
    TestApp::spawn_configured(|state| {
        state.metrics_access.token = Some(METRICS_TOKEN.to_string());
    })
    .await
}

async fn scrape(app: &TestApp) -> reqwest::Response {
    app.client
        .get(app.url("/metrics"))
        .bearer_auth(METRICS_TOKEN)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn healthz_and_readyz_answer_when_the_database_is_migrated() {
    let app = TestApp::spawn().await;
    let health: Value = app.get_json("/healthz", 200).await;
    assert_eq!(health["status"], "ok");
    let ready: Value = app.get_json("/readyz", 200).await;
    assert_eq!(ready["status"], "ready");
}

#[tokio::test]
async fn readyz_is_503_when_a_migration_is_missing() {
    let app = TestApp::spawn().await;
    sqlx::query("DELETE FROM _sqlx_migrations")
        .execute(&app.pool)
        .await
        .unwrap();
    let res = app.get("/readyz").await;
    assert_eq!(res.status(), 503);
    assert!(res.headers().contains_key("retry-after"));
}

#[tokio::test]
async fn metrics_count_requests_by_route_and_status_and_show_the_pool() {
    let app = with_metrics_token().await;
    app.get("/v1/quizzes/data-parallelism").await;
    app.get("/v1/quizzes/unknown").await;
    let res = scrape(&app).await;
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    assert!(text.contains("quizd_http_requests_total{"), "{text}");
    assert!(text.contains(r#"route="/v1/quizzes/{slug}""#), "{text}");
    assert!(text.contains(r#"status="404""#), "{text}");
    assert!(
        text.contains("quizd_http_request_duration_seconds_bucket"),
        "{text}"
    );
    assert!(text.contains("quizd_db_pool_connections"), "{text}");
}

#[tokio::test]
async fn a_made_up_method_is_counted_as_other_not_as_a_new_series() {
    let app = with_metrics_token().await;
    let method = reqwest::Method::from_bytes(b"FROBNICATE").unwrap();
    let res = app
        .client
        .request(method, app.url("/v1/quizzes"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 405);
    let text = scrape(&app).await.text().await.unwrap();
    assert!(text.contains(r#"method="OTHER""#), "{text}");
    assert!(!text.contains("FROBNICATE"), "{text}");
}

#[tokio::test]
async fn without_configuration_metrics_are_not_served() {
    let app = TestApp::spawn().await;
    let res = app.get("/metrics").await;
    assert_problem(res, 404, "not_found").await;
    // Not even to a bearer of some token.
    let res = app
        .client
        .get(app.url("/metrics"))
        .bearer_auth("anything")
        .send()
        .await
        .unwrap();
    assert_problem(res, 404, "not_found").await;
}

#[tokio::test]
async fn with_a_metrics_token_only_its_bearer_reads_the_metrics() {
    let app = with_metrics_token().await;
    let res = app.get("/metrics").await;
    assert!(res.headers().contains_key("www-authenticate"));
    assert_problem(res, 401, "metrics_token_required").await;
    for wrong in [
        "wrong".to_string(),
        format!("{METRICS_TOKEN}x"),
        METRICS_TOKEN[..10].to_string(),
        String::new(),
    ] {
        let res = app
            .client
            .get(app.url("/metrics"))
            .header("authorization", format!("Bearer {wrong}"))
            .send()
            .await
            .unwrap();
        assert_problem(res, 401, "metrics_token_required").await;
    }
    let res = app
        .client
        .get(app.url("/metrics"))
        .header("authorization", format!("Basic {METRICS_TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_problem(res, 401, "metrics_token_required").await;
    let res = scrape(&app).await;
    assert_eq!(res.status(), 200);
    assert!(
        res.text()
            .await
            .unwrap()
            .contains("quizd_db_pool_connections")
    );
}

#[tokio::test]
async fn a_metrics_listener_serves_the_metrics_and_the_api_listener_does_not() {
    let app = TestApp::spawn_with_metrics_listener(None).await;
    app.get("/v1/quizzes").await;
    let metrics = app.metrics_base.clone().unwrap();
    let res = app
        .client
        .get(format!("{metrics}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.text().await.unwrap().contains(r#"route="/v1/quizzes""#));
    // Only the metrics: the API is not on that listener.
    let res = app
        .client
        .get(format!("{metrics}/v1/quizzes"))
        .send()
        .await
        .unwrap();
    assert_problem(res, 404, "not_found").await;
    let res = app.get("/metrics").await;
    assert_problem(res, 404, "not_found").await;
}

#[tokio::test]
async fn a_metrics_listener_with_a_token_wants_it_too() {
    let app = TestApp::spawn_with_metrics_listener(Some(METRICS_TOKEN.into())).await;
    let url = format!("{}/metrics", app.metrics_base.clone().unwrap());
    let res = app.client.get(&url).send().await.unwrap();
    assert_problem(res, 401, "metrics_token_required").await;
    let res = app
        .client
        .get(&url)
        .bearer_auth(METRICS_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    // With a listener of its own, the API's listener does not serve them, token or not.
    let res = scrape(&app).await;
    assert_problem(res, 404, "not_found").await;
}
