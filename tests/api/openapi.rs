//! The OpenAPI document is generated from the code, committed, current, and served.

use serde_json::Value;

use crate::support::{TestApp, repo};

#[test]
fn the_committed_openapi_document_is_current() {
    let committed =
        std::fs::read_to_string(repo().join("openapi/openapi.json")).unwrap_or_default();
    assert!(
        committed == quizd::openapi::to_json(),
        "openapi/openapi.json is stale: regenerate it with `cargo run -- openapi > openapi/openapi.json`"
    );
}

#[test]
fn every_operation_documents_its_errors_as_problems() {
    let doc: Value = serde_json::from_str(&quizd::openapi::to_json()).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            for (status, response) in responses {
                if status.starts_with('4') || status.starts_with('5') {
                    assert!(
                        response["content"]["application/problem+json"].is_object(),
                        "{method} {path} {status} is not documented as a problem"
                    );
                }
            }
            // The verification link's page is a static form; its button's POST reads the database.
            let static_page = path == "/v1/email-verifications/{token}" && method == "get";
            let touches_db = !["/healthz", "/metrics"].contains(&path.as_str()) && !static_page;
            if touches_db {
                assert!(responses.contains_key("503"), "{method} {path} lacks 503");
            }
        }
    }
}

#[tokio::test]
async fn the_document_and_the_docs_are_served_without_the_internet() {
    let app = TestApp::spawn().await;
    let served: Value = app.get_json("/openapi.json", 200).await;
    let generated: Value = serde_json::from_str(&quizd::openapi::to_json()).unwrap();
    assert_eq!(served, generated);
    let res = app.client.get(app.url("/docs/")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let html = res.text().await.unwrap();
    assert!(html.contains("swagger-ui"), "{html}");
    // The UI's assets are vendored in the binary.
    let res = app.get("/docs/swagger-ui-bundle.js").await;
    assert_eq!(res.status(), 200);
}
