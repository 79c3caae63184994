//! Liveness, readiness and metrics.

use serde_json::Value;

use crate::support::TestApp;

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
    let app = TestApp::spawn().await;
    app.get("/v1/quizzes/data-parallelism").await;
    app.get("/v1/quizzes/unknown").await;
    let res = app.get("/metrics").await;
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
    let app = TestApp::spawn().await;
    let method = reqwest::Method::from_bytes(b"FROBNICATE").unwrap();
    let res = app
        .client
        .request(method, app.url("/v1/quizzes"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 405);
    let text = app.get("/metrics").await.text().await.unwrap();
    assert!(text.contains(r#"method="OTHER""#), "{text}");
    assert!(!text.contains("FROBNICATE"), "{text}");
}
