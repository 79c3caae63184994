//! Requests and answers by hand: the status and problem checks every [`Reply`](super::session::Reply)
//! makes, bearer requests, and clients from other loopback addresses.

use reqwest::Client;
use serde_json::Value;

use super::TestApp;

/// Asserts a response is an RFC 9457 problem with this status and code; returns the body.
pub async fn assert_problem(res: reqwest::Response, status: u16, code: &str) -> Value {
    assert_eq!(res.status().as_u16(), status, "status of {}", res.url());
    let ct = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    assert!(
        ct.starts_with("application/problem+json"),
        "content-type {ct}"
    );
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["status"], status);
    assert_eq!(body["code"], code, "{body}");
    for field in ["type", "title", "detail"] {
        assert!(body[field].is_string(), "problem lacks {field}: {body}");
    }
    body
}

/// Asserts the status (showing the body if it differs) and returns the JSON body (`Null` when
/// there is none).
pub async fn expect_status(res: reqwest::Response, status: u16) -> Value {
    let actual = res.status().as_u16();
    let url = res.url().to_string();
    let text = res.text().await.unwrap();
    assert_eq!(actual, status, "status of {url}: {text}");
    if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap()
    }
}

/// A client whose connections come from `ip`, a loopback address such as `127.0.0.2` (Linux
/// answers the whole of 127.0.0.0/8), so that quizd sees another client address.
pub fn client_from(ip: &str) -> Client {
    Client::builder()
        .local_address(Some(ip.parse().unwrap()))
        .build()
        .unwrap()
}

/// A request with `Authorization: Bearer <token>`.
pub fn bearer(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: &str,
) -> reqwest::RequestBuilder {
    app.client
        .request(method, app.url(path))
        .header("authorization", format!("Bearer {token}"))
}

pub async fn get_as(app: &TestApp, token: &str, path: &str) -> reqwest::Response {
    bearer(app, reqwest::Method::GET, path, token)
        .send()
        .await
        .unwrap()
}

pub async fn post_as(app: &TestApp, token: &str, path: &str, body: &Value) -> reqwest::Response {
    bearer(app, reqwest::Method::POST, path, token)
        .json(body)
        .send()
        .await
        .unwrap()
}

pub async fn put_as(app: &TestApp, token: &str, path: &str, body: &Value) -> reqwest::Response {
    bearer(app, reqwest::Method::PUT, path, token)
        .json(body)
        .send()
        .await
        .unwrap()
}

pub async fn patch_as(app: &TestApp, token: &str, path: &str, body: &Value) -> reqwest::Response {
    bearer(app, reqwest::Method::PATCH, path, token)
        .json(body)
        .send()
        .await
        .unwrap()
}
