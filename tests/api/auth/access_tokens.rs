//! Access tokens: quizd accepts only its own, with its key, algorithm and claims, in a
//! well-formed `Authorization` header, on every protected endpoint.

use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::TestApp;
use crate::support::session::Reply;

use super::{assert_unauthorized, me_with_header, with};

/// The key quizd signs access tokens with (it made it at startup).
async fn signing_key(app: &TestApp) -> Vec<u8> {
    sqlx::query_scalar("SELECT secret FROM signing_keys WHERE purpose = 'access-token'")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

/// Claims like the ones quizd issues, valid for ten minutes.
fn good_claims(sub: Uuid, role: &str) -> Value {
    let now = now();
    json!({
        "sub": sub.to_string(),
        "role": role,
        "iat": now,
        "exp": now + 600,
        "iss": "quizd",
        "aud": "quizd-api",
    })
}

fn without(mut claims: Value, field: &str) -> Value {
    claims.as_object_mut().unwrap().remove(field);
    claims
}

fn hs_token(key: &[u8], alg: Algorithm, claims: &Value) -> String {
    encode(
        &Header::new(alg),
        claims,
        &EncodingKey::from_secret(key).unwrap(),
    )
    .unwrap()
}

fn b64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// `header.claims` in base64url, the part a JWS signature covers.
fn signing_input(header: &Value, claims: &Value) -> String {
    format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    )
}

/// A token with any header, its signature an HMAC-SHA256 with `key` over header and claims.
fn hmac_signed_with_header(key: &[u8], header: &Value, claims: &Value) -> String {
    let input = signing_input(header, claims);
    let signature = jsonwebtoken::crypto::sign(
        input.as_bytes(),
        &EncodingKey::from_secret(key).unwrap(),
        Algorithm::HS256,
    )
    .unwrap();
    format!("{input}.{signature}")
}

#[tokio::test]
async fn a_token_made_here_with_quizds_key_and_claims_is_accepted() {
    // The control for the forgeries below: the test builds tokens the way quizd does.
    let app = TestApp::spawn().await;
    let person = app.person("ada@example.com", "learner").await;
    let key = signing_key(&app).await;
    let token = hs_token(&key, Algorithm::HS256, &good_claims(person.id, "learner"));
    let me = app
        .bearer_session(&token)
        .get("/v1/me")
        .await
        .status(200)
        .await;
    assert_eq!(me["id"], person.id.to_string());
    let token = hmac_signed_with_header(
        &key,
        &json!({ "alg": "HS256", "typ": "JWT" }),
        &good_claims(person.id, "learner"),
    );
    app.bearer_session(&token)
        .get("/v1/me")
        .await
        .status(200)
        .await;
}

#[tokio::test]
async fn unsigned_foreign_and_altered_access_tokens_are_refused() {
    let app = TestApp::spawn().await;
    let person = app.person("ada@example.com", "learner").await;
    let key = signing_key(&app).await;
    let claims = good_claims(person.id, "admin");
    let genuine_signature = person.access.rsplit('.').next().unwrap().to_string();
    let mut cases: Vec<(&str, String)> = Vec::new();
    for alg in ["none", "None", "NONE"] {
        let header = json!({ "alg": alg, "typ": "JWT" });
        cases.push(("alg none", format!("{}.", signing_input(&header, &claims))));
        cases.push((
            "alg none with a signature",
            format!("{}.{genuine_signature}", signing_input(&header, &claims)),
        ));
    }
    cases.push((
        "another key",
        hs_token(
            b"a different secret, long enough for HS256!",
            Algorithm::HS256,
            &claims,
        ),
    ));
    cases.push((
        "HS384 with the real key",
        hs_token(&key, Algorithm::HS384, &claims),
    ));
    cases.push((
        "HS512 with the real key",
        hs_token(&key, Algorithm::HS512, &claims),
    ));
    cases.push((
        "RS256 header, HMAC signature (alg confusion)",
        hmac_signed_with_header(&key, &json!({ "alg": "RS256", "typ": "JWT" }), &claims),
    ));
    cases.push((
        "ES256 header, HMAC signature",
        hmac_signed_with_header(&key, &json!({ "alg": "ES256", "typ": "JWT" }), &claims),
    ));
    // The genuine token with its payload swapped for an admin's.
    let mut parts: Vec<String> = person.access.split('.').map(String::from).collect();
    parts[1] = b64url(claims.to_string().as_bytes());
    cases.push(("payload altered", parts.join(".")));
    let mut parts: Vec<&str> = person.access.split('.').collect();
    parts[2] = "";
    cases.push(("signature stripped", parts.join(".")));
    cases.push(("two parts", parts[..2].join(".")));
    for (case, token) in cases {
        let res = app.bearer_session(&token).get("/v1/me").await;
        assert_unauthorized(res, case).await;
    }
}

#[tokio::test]
async fn tokens_with_bad_claims_are_refused_even_with_quizds_key() {
    let app = TestApp::spawn().await;
    let person = app.person("ada@example.com", "learner").await;
    let key = signing_key(&app).await;
    let good = good_claims(person.id, "learner");
    let now = now();
    let cases = [
        (
            "expired a minute ago",
            with(good.clone(), "exp", json!(now - 60)),
        ),
        (
            "expired long ago",
            with(good.clone(), "exp", json!(1_000_000)),
        ),
        ("no exp", without(good.clone(), "exp")),
        (
            "wrong aud",
            with(good.clone(), "aud", json!("some-other-api")),
        ),
        (
            "aud list without ours",
            with(good.clone(), "aud", json!(["other"])),
        ),
        ("no aud", without(good.clone(), "aud")),
        ("wrong iss", with(good.clone(), "iss", json!("not-quizd"))),
        ("no iss", without(good.clone(), "iss")),
        ("no sub", without(good.clone(), "sub")),
        (
            "sub not an id",
            with(good.clone(), "sub", json!("ada@example.com")),
        ),
        ("no role", without(good.clone(), "role")),
        (
            "unknown role",
            with(good.clone(), "role", json!("superuser")),
        ),
        ("no iat", without(good.clone(), "iat")),
        (
            "exp as a string",
            with(good.clone(), "exp", json!((now + 600).to_string())),
        ),
    ];
    for (case, claims) in cases {
        let token = hs_token(&key, Algorithm::HS256, &claims);
        let res = app.bearer_session(&token).get("/v1/me").await;
        assert_unauthorized(res, case).await;
    }
}

#[tokio::test]
async fn malformed_authorization_headers_are_refused() {
    let app = TestApp::spawn().await;
    let person = app.person("ada@example.com", "learner").await;
    let token = person.access.as_str();
    let cases = [
        token.to_string(),
        format!("Token {token}"),
        format!("Basic {token}"),
        format!("Bearer{token}"),
        "Bearer ".to_string(),
        "Bearer garbage".to_string(),
        "Bearer a.b.c".to_string(),
        "Bearer ....".to_string(),
        format!("Bearer {token}x"),
        format!("Bearer {}", &token[..token.len() - 2]),
        String::new(),
    ];
    for header in cases {
        assert_unauthorized(me_with_header(&app, Some(&header)).await, &header).await;
    }
    // The genuine header works, so the refusals above are about the header.
    let genuine = format!("Bearer {token}");
    me_with_header(&app, Some(&genuine)).await.status(200).await;
}

/// Every operation the OpenAPI document says requires a bearer token, found in the document
/// (so a new endpoint is covered the day it is registered), answers `401` without one and with
/// a forged one.
#[tokio::test]
async fn every_protected_endpoint_wants_a_token() {
    let app = TestApp::spawn().await;
    let doc: Value = serde_json::from_str(&quizd::openapi::to_json()).unwrap();
    let id = Uuid::now_v7().to_string();
    let mut checked = 0;
    for (template, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let requirements = op["security"].as_array().unwrap();
            let bearer_required =
                !requirements.is_empty() && requirements.iter().all(|r| r.get("bearer").is_some());
            if !bearer_required {
                continue;
            }
            // Every other parameter (`{id}`, `{user_id}`, `{invitation_id}`, …) is an id.
            let path = template
                .replace("{slug}", "data-parallelism")
                .replace("{version}", "1")
                .replace("{locale}", "bn")
                .split('/')
                .map(|part| {
                    if part.starts_with('{') {
                        id.as_str()
                    } else {
                        part
                    }
                })
                .collect::<Vec<_>>()
                .join("/");
            assert!(!path.contains('{'), "{template}: fill in its parameter");
            let content_type = op["requestBody"]["content"]
                .as_object()
                .and_then(|c| c.keys().next().cloned())
                .unwrap_or_else(|| "application/json".to_string());
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            for token in [None, Some("garbage")] {
                let mut req = app
                    .client
                    .request(method.clone(), app.url(&path))
                    .header("content-type", &content_type)
                    .body("{}");
                if let Some(t) = token {
                    req = req.bearer_auth(t);
                }
                let res = Reply::of(req).await;
                assert_unauthorized(res, &format!("{method} {path} with {token:?}")).await;
            }
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} operations require a token");
}
