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

#[test]
fn every_operation_declares_its_security_and_one_that_can_answer_401_names_a_scheme() {
    let doc: Value = serde_json::from_str(&quizd::openapi::to_json()).unwrap();
    let mut ids = std::collections::HashSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let security = op["security"]
                .as_array()
                .unwrap_or_else(|| panic!("{method} {path} declares no security"));
            // Public operations that take their credential in the body (a password, a refresh
            // token, a launch code, a signed id_token) answer 401 when it is wrong; any other
            // operation that can answer 401 needs a scheme.
            let credential_in_body = ["login", "refresh", "exchange", "launch"];
            let id = op["operationId"].as_str().unwrap();
            if op["responses"].get("401").is_some() && !credential_in_body.contains(&id) {
                assert!(
                    !security.is_empty(),
                    "{method} {path} can answer 401 but declares itself public"
                );
            }
            assert!(ids.insert(id.to_owned()), "operationId {id} is used twice");
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
