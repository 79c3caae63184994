//! One error shape everywhere: RFC 9457 problems with a stable code, even from actix itself.

use crate::support::{TestApp, assert_problem};

#[tokio::test]
async fn an_unknown_route_is_a_problem() {
    let app = TestApp::spawn().await;
    assert_problem(app.get("/v1/nothing-here").await, 404, "not_found").await;
    assert_problem(app.get("/nothing-here").await, 404, "not_found").await;
}

#[tokio::test]
async fn a_wrong_method_is_a_problem_that_says_what_is_allowed() {
    let app = TestApp::spawn().await;
    let res = app
        .client
        .delete(app.url("/v1/quizzes/data-parallelism"))
        .send()
        .await
        .unwrap();
    assert_problem(res, 405, "method_not_allowed").await;
    let res = app.client.put(app.url("/v1/quizzes")).send().await.unwrap();
    let allow = res.headers()["allow"].to_str().unwrap().to_string();
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
    assert_problem(res, 405, "method_not_allowed").await;
}

#[tokio::test]
async fn an_unknown_query_parameter_is_refused() {
    let app = TestApp::spawn().await;
    let res = app.get("/v1/quizzes?lang=bn&admin=true").await;
    let body = assert_problem(res, 400, "invalid_query").await;
    assert!(body["detail"].as_str().unwrap().contains("admin"));
}

#[tokio::test]
async fn every_response_carries_security_headers_and_a_request_id() {
    let app = TestApp::spawn().await;
    for path in ["/v1/quizzes", "/nope"] {
        let res = app.get(path).await;
        let h = res.headers();
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        assert!(h.contains_key("x-request-id"), "{path}");
    }
    // The front-end's own policy forbids framing unless LMS origins are configured.
    let page = app.get("/").await;
    let csp = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.ends_with("frame-ancestors 'none'"), "{csp}");
}

#[tokio::test]
async fn head_and_get_of_the_front_end_carry_the_same_framing_headers() {
    let framing = |res: &reqwest::Response| {
        let h = res.headers();
        let value = |name: &str| h.get(name).map(|v| v.to_str().unwrap().to_string());
        (
            res.status().as_u16(),
            value("content-security-policy"),
            value("x-frame-options"),
            value("content-type"),
        )
    };
    let alone = TestApp::spawn().await;
    let lms = TestApp::spawn_configured(|s| {
        s.frame_ancestors = quizd::frontend::frame_ancestors(&["https://lms.example.edu".into()]);
    })
    .await;
    for (app, ancestors) in [(&alone, "'none'"), (&lms, "https://lms.example.edu")] {
        for path in ["/", "/assets/app.js"] {
            let get = app.get(path).await;
            let head = app.client.head(app.url(path)).send().await.unwrap();
            let (get, head) = (framing(&get), framing(&head));
            assert_eq!(
                head, get,
                "HEAD and GET {path} with frame-ancestors {ancestors}"
            );
            assert_eq!(get.0, 200, "{path}");
            let csp = get.1.unwrap();
            assert!(
                csp.ends_with(&format!("frame-ancestors {ancestors}")),
                "{csp}"
            );
            // One rule: the policy's frame-ancestors says who may frame the page; no
            // X-Frame-Options contradicts it (DENY would forbid the LMS that may frame it).
            assert_eq!(get.2, None, "{path}");
        }
    }
}
