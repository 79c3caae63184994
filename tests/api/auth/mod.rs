//! Accounts and sign-in: registration, argon2id passwords, sign-in and sign-up limits, rotating
//! refresh tokens, access-token validation, profiles and role changes. The helpers here are the
//! requests and checks more than one topic uses.

mod access_tokens;
mod accounts;
mod limits;
mod refresh_tokens;
mod roles;

use serde_json::{Value, json};

use crate::support::session::Reply;
use crate::support::{TestApp, assert_problem};

/// `POST /v1/auth/register` with this body, from nobody signed in.
async fn register_with(app: &TestApp, body: Value) -> Reply {
    app.anonymous().post("/v1/auth/register", &body).await
}

/// `POST /v1/auth/refresh` with this refresh token.
async fn refresh(app: &TestApp, token: &str) -> Reply {
    let body = json!({ "refresh_token": token });
    app.anonymous().post("/v1/auth/refresh", &body).await
}

/// Refreshes, expecting success; returns (access token, refresh token).
async fn refreshed(app: &TestApp, token: &str) -> (String, String) {
    let body = refresh(app, token).await.status(200).await;
    (
        body["access_token"].as_str().unwrap().to_string(),
        body["refresh_token"].as_str().unwrap().to_string(),
    )
}

fn claims_of(token: &str) -> Value {
    jsonwebtoken::dangerous::insecure_decode_claims(token).unwrap()
}

fn with(mut claims: Value, field: &str, value: Value) -> Value {
    claims[field] = value;
    claims
}

/// GET /v1/me with this exact `Authorization` header (or none).
async fn me_with_header(app: &TestApp, authorization: Option<&str>) -> Reply {
    let mut req = app.client.get(app.url("/v1/me"));
    if let Some(value) = authorization {
        req = req.header("authorization", value);
    }
    Reply::of(req).await
}

/// Asserts a `401` with the `WWW-Authenticate` challenge and the `unauthorized` problem.
async fn assert_unauthorized(reply: Reply, case: &str) {
    let res = reply.response();
    assert_eq!(res.status().as_u16(), 401, "{case}");
    assert_eq!(
        res.headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_string())
            .as_deref(),
        Some("Bearer realm=\"quizd\""),
        "{case}"
    );
    let body = assert_problem(res, 401, "unauthorized").await;
    assert!(body["detail"].is_string(), "{case}");
}
