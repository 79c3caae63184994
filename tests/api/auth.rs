//! Accounts and sign-in: registration, argon2id passwords, login limits, rotating refresh
//! tokens, access-token validation and role changes.

use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::{
    PASSWORD, TestApp, assert_problem, client_from, expect_status, get_as, login, login_from,
    login_request, patch_as, post_as, put_as, register, token_for,
};

async fn post_json(app: &TestApp, path: &str, body: &Value) -> reqwest::Response {
    app.client
        .post(app.url(path))
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn register_with(app: &TestApp, body: Value) -> reqwest::Response {
    post_json(app, "/v1/auth/register", &body).await
}

async fn refresh(app: &TestApp, token: &str) -> reqwest::Response {
    post_json(app, "/v1/auth/refresh", &json!({ "refresh_token": token })).await
}

/// Refreshes, expecting success; returns (access token, refresh token).
async fn refreshed(app: &TestApp, token: &str) -> (String, String) {
    let body = expect_status(refresh(app, token).await, 200).await;
    (
        body["access_token"].as_str().unwrap().to_string(),
        body["refresh_token"].as_str().unwrap().to_string(),
    )
}

async fn user_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn password_hash(app: &TestApp, id: Uuid) -> String {
    sqlx::query_scalar("SELECT password_hash FROM users WHERE id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// The key quizd signs access tokens with (it made it at startup).
async fn signing_key(app: &TestApp) -> Vec<u8> {
    sqlx::query_scalar("SELECT secret FROM signing_keys WHERE purpose = 'access-token'")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

fn claims_of(token: &str) -> Value {
    jsonwebtoken::dangerous::insecure_decode_claims(token).unwrap()
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

fn with(mut claims: Value, field: &str, value: Value) -> Value {
    claims[field] = value;
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

/// GET /v1/me with this exact `Authorization` header (or none).
async fn me_with_header(app: &TestApp, authorization: Option<&str>) -> reqwest::Response {
    let mut req = app.client.get(app.url("/v1/me"));
    if let Some(value) = authorization {
        req = req.header("authorization", value);
    }
    req.send().await.unwrap()
}

async fn assert_unauthorized(res: reqwest::Response, case: &str) {
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

fn retry_after(res: &reqwest::Response) -> u64 {
    res.headers()
        .get("retry-after")
        .expect("a Retry-After header")
        .to_str()
        .unwrap()
        .parse()
        .expect("Retry-After in seconds")
}

// Registration, sign-in and the current user.

#[tokio::test]
async fn a_learner_registers_signs_in_and_sees_themselves() {
    let app = TestApp::spawn().await;
    let res = register_with(
        &app,
        json!({
            "email": "ada@example.com",
            "display_name": "  Ada Lovelace ",
            "password": PASSWORD,
            "locale": "bn",
        }),
    )
    .await;
    let tokens = expect_status(res, 201).await;
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 900);
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(access.split('.').count(), 3, "a JWS compact token");
    assert!(tokens["refresh_token"].as_str().unwrap().len() >= 32);

    let me = expect_status(get_as(&app, access, "/v1/me").await, 200).await;
    let id: Uuid = me["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(me["email"], "ada@example.com");
    assert_eq!(me["display_name"], "Ada Lovelace");
    assert_eq!(me["role"], "learner");
    assert_eq!(me["locale"], "bn");
    assert!(me["created_at"].is_string());

    // The access token says who and what, for quizd only, for 15 minutes.
    let header = jsonwebtoken::decode_header(access).unwrap();
    assert_eq!(header.alg, Algorithm::HS256);
    let claims = claims_of(access);
    assert_eq!(claims["sub"], id.to_string());
    assert_eq!(claims["role"], "learner");
    assert_eq!(claims["iss"], "quizd");
    assert_eq!(claims["aud"], "quizd-api");
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        900
    );

    // Signing in again, with the email in another case, is the same person.
    let res = login_request(&app, "ADA@Example.COM", PASSWORD).await;
    let tokens = expect_status(res, 200).await;
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 900);
    let access = tokens["access_token"].as_str().unwrap();
    let again = expect_status(get_as(&app, access, "/v1/me").await, 200).await;
    assert_eq!(again, me);

    // And without a token there is no "me".
    assert_unauthorized(me_with_header(&app, None).await, "no token").await;
}

#[tokio::test]
async fn registration_always_makes_a_learner() {
    let app = TestApp::spawn().await;
    let person = register(&app, "grace@example.com").await;
    let role: String = sqlx::query_scalar("SELECT role FROM users WHERE id = $1")
        .bind(person.id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(role, "learner");
    assert_eq!(claims_of(&person.access)["role"], "learner");
    // Asking for another role is not a way in: the field is unknown.
    let res = register_with(
        &app,
        json!({
            "email": "mallory@example.com",
            "display_name": "Mallory",
            "password": PASSWORD,
            "role": "admin",
        }),
    )
    .await;
    assert_problem(res, 400, "invalid_body").await;
    assert_eq!(user_count(&app).await, 1);
}

#[tokio::test]
async fn the_password_is_stored_only_as_an_argon2id_hash() {
    let app = TestApp::spawn().await;
    let person = register(&app, "ada@example.com").await;
    let hash = password_hash(&app, person.id).await;
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    assert_ne!(hash, PASSWORD);
    assert!(!hash.contains(PASSWORD));
    // Nowhere else in the person's row either.
    let row: String = sqlx::query_scalar("SELECT row_to_json(u)::text FROM users u WHERE id = $1")
        .bind(person.id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(!row.contains(PASSWORD), "{row}");
    // Two people with the same password get different hashes (salted).
    let other = register(&app, "grace@example.com").await;
    assert_ne!(password_hash(&app, other.id).await, hash);
}

#[tokio::test]
async fn refresh_tokens_are_stored_only_as_hashes() {
    let app = TestApp::spawn().await;
    let person = register(&app, "ada@example.com").await;
    let stored: Vec<Vec<u8>> =
        sqlx::query_scalar("SELECT token_hash FROM refresh_tokens WHERE user_id = $1")
            .bind(person.id)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].len(), 32, "a SHA-256 digest");
    assert_ne!(stored[0], person.refresh.as_bytes());
    let as_text = String::from_utf8_lossy(&stored[0]);
    assert!(!as_text.contains(&person.refresh));
}

#[tokio::test]
async fn no_response_carries_the_password_or_its_hash() {
    let app = TestApp::spawn().await;
    let admin = token_for(&app, "admin@example.com", "admin").await;
    let res = register_with(
        &app,
        json!({ "email": "ada@example.com", "display_name": "Ada", "password": PASSWORD }),
    )
    .await;
    assert_eq!(res.status(), 201);
    let mut bodies = vec![("register", res.text().await.unwrap())];
    let tokens: Value = serde_json::from_str(&bodies[0].1).unwrap();
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let refresh_token = tokens["refresh_token"].as_str().unwrap().to_string();
    let me = get_as(&app, &access, "/v1/me").await;
    assert_eq!(me.status(), 200);
    let me_text = me.text().await.unwrap();
    let id = serde_json::from_str::<Value>(&me_text).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    bodies.push(("me", me_text));
    let hash = password_hash(&app, id.parse().unwrap()).await;

    let res = login_request(&app, "ada@example.com", PASSWORD).await;
    assert_eq!(res.status(), 200);
    bodies.push(("login", res.text().await.unwrap()));
    let res = login_request(&app, "ada@example.com", "wrong password").await;
    assert_eq!(res.status(), 401);
    bodies.push(("failed login", res.text().await.unwrap()));
    let res = refresh(&app, &refresh_token).await;
    assert_eq!(res.status(), 200);
    bodies.push(("refresh", res.text().await.unwrap()));
    let res = patch_as(
        &app,
        &access,
        "/v1/me",
        &json!({ "display_name": "Ada L." }),
    )
    .await;
    assert_eq!(res.status(), 200);
    bodies.push(("profile update", res.text().await.unwrap()));
    let res = put_as(
        &app,
        &admin.access,
        &format!("/v1/users/{id}/role"),
        &json!({ "role": "instructor" }),
    )
    .await;
    assert_eq!(res.status(), 200);
    bodies.push(("role change", res.text().await.unwrap()));
    let res = register_with(
        &app,
        json!({ "email": "ada@example.com", "display_name": "Ada", "password": PASSWORD }),
    )
    .await;
    assert_eq!(res.status(), 409);
    bodies.push(("duplicate registration", res.text().await.unwrap()));

    // The digest part of the PHC string, in case only a piece of it leaked.
    let digest = hash.rsplit('$').next().unwrap();
    for (what, body) in &bodies {
        assert!(
            !body.contains(PASSWORD),
            "{what} carries the password: {body}"
        );
        assert!(!body.contains(&hash), "{what} carries the hash: {body}");
        assert!(!body.contains(digest), "{what} carries the digest: {body}");
        assert!(!body.contains("argon2"), "{what} mentions argon2: {body}");
        assert!(!body.contains("password_hash"), "{what}: {body}");
    }
}

#[tokio::test]
async fn an_email_is_taken_whatever_its_case() {
    let app = TestApp::spawn().await;
    register(&app, "Ada.Lovelace@Example.com").await;
    for email in [
        "Ada.Lovelace@Example.com",
        "ada.lovelace@example.com",
        "ADA.LOVELACE@EXAMPLE.COM",
    ] {
        let res = register_with(
            &app,
            json!({ "email": email, "display_name": "Imposter", "password": "another password" }),
        )
        .await;
        assert_problem(res, 409, "email_taken").await;
    }
    assert_eq!(user_count(&app).await, 1);
    // The original password still signs in: the account was not overwritten.
    login(&app, "ada.lovelace@example.com").await;

    // Two registrations racing for one address: one wins, the other is told it is taken.
    let body =
        |email: &str| json!({ "email": email, "display_name": "Racer", "password": PASSWORD });
    let (a, b) = tokio::join!(
        register_with(&app, body("race@example.com")),
        register_with(&app, body("RACE@example.com")),
    );
    let mut statuses = [a.status().as_u16(), b.status().as_u16()];
    statuses.sort();
    assert_eq!(statuses, [201, 409]);
    let loser = if a.status() == 409 { a } else { b };
    assert_problem(loser, 409, "email_taken").await;
    assert_eq!(user_count(&app).await, 2);
}

#[tokio::test]
async fn a_password_must_be_8_to_256_characters() {
    let app = TestApp::spawn().await;
    let attempt = |email: &str, password: String| json!({ "email": email, "display_name": "Someone", "password": password });
    for (i, password) in [
        String::new(),
        "1234567".to_string(),
        "é".repeat(7), // 14 bytes, but 7 characters
        "x".repeat(257),
        "é".repeat(257),
    ]
    .into_iter()
    .enumerate()
    {
        let res = register_with(&app, attempt(&format!("weak{i}@example.com"), password)).await;
        assert_problem(res, 422, "weak_password").await;
    }
    assert_eq!(user_count(&app).await, 0);
    for (i, password) in [
        "12345678".to_string(),
        "é".repeat(8),
        "x".repeat(256),
        "é".repeat(256),
    ]
    .into_iter()
    .enumerate()
    {
        let email = format!("fine{i}@example.com");
        let res = register_with(&app, attempt(&email, password.clone())).await;
        expect_status(res, 201).await;
        expect_status(login_request(&app, &email, &password).await, 200).await;
    }
}

#[tokio::test]
async fn an_invalid_email_name_or_locale_is_refused() {
    let app = TestApp::spawn().await;
    let base = json!({ "email": "ok@example.com", "display_name": "Ok", "password": PASSWORD });
    let cases = [
        ("email", json!("not-an-email"), 422, "invalid_email"),
        ("email", json!("ada@localhost"), 422, "invalid_email"),
        ("email", json!("@example.com"), 422, "invalid_email"),
        (
            "email",
            json!("ada lovelace@example.com"),
            422,
            "invalid_email",
        ),
        ("email", json!(""), 422, "invalid_field"),
        ("display_name", json!(""), 422, "invalid_field"),
        ("display_name", json!("   "), 422, "invalid_field"),
        ("display_name", json!("x".repeat(201)), 422, "invalid_field"),
        ("display_name", json!("Ada\nLovelace"), 422, "invalid_field"),
        ("locale", json!("english"), 422, "invalid_locale"),
        ("locale", json!("12"), 422, "invalid_locale"),
        ("email", json!(42), 400, "invalid_body"),
    ];
    for (field, value, status, code) in cases {
        let res = register_with(&app, with(base.clone(), field, value.clone())).await;
        let body = assert_problem(res, status, code).await;
        assert!(body["detail"].is_string(), "{field} = {value}");
    }
    assert_eq!(user_count(&app).await, 0);
    // A locale is stored in its canonical form.
    let res = register_with(&app, with(base.clone(), "locale", json!("pt-br"))).await;
    let tokens = expect_status(res, 201).await;
    let me = get_as(&app, tokens["access_token"].as_str().unwrap(), "/v1/me").await;
    assert_eq!(expect_status(me, 200).await["locale"], "pt-BR");
}

#[tokio::test]
async fn unknown_or_missing_fields_in_auth_bodies_are_refused() {
    let app = TestApp::spawn().await;
    let admin = token_for(&app, "admin@example.com", "admin").await;
    let person = register(&app, "ada@example.com").await;
    let cases = [
        (
            "/v1/auth/register",
            json!({ "email": "x@example.com", "display_name": "X", "password": PASSWORD, "is_admin": true }),
        ),
        (
            "/v1/auth/register",
            json!({ "email": "x@example.com", "password": PASSWORD }),
        ),
        (
            "/v1/auth/login",
            json!({ "email": "ada@example.com", "password": PASSWORD, "remember": true }),
        ),
        ("/v1/auth/login", json!({ "email": "ada@example.com" })),
        (
            "/v1/auth/refresh",
            json!({ "refresh_token": person.refresh, "role": "admin" }),
        ),
        ("/v1/auth/refresh", json!({})),
        (
            "/v1/auth/logout",
            json!({ "refresh_token": person.refresh, "everywhere": true }),
        ),
    ];
    for (path, body) in cases {
        let res = post_json(&app, path, &body).await;
        assert_problem(res, 400, "invalid_body").await;
    }
    let res = patch_as(&app, &person.access, "/v1/me", &json!({ "role": "admin" })).await;
    assert_problem(res, 400, "invalid_body").await;
    let res = put_as(
        &app,
        &admin.access,
        &format!("/v1/users/{}/role", person.id),
        &json!({ "role": "instructor", "reason": "promotion" }),
    )
    .await;
    assert_problem(res, 400, "invalid_body").await;
    // Nothing changed: still a learner, and the refresh token is still good.
    let me = expect_status(get_as(&app, &person.access, "/v1/me").await, 200).await;
    assert_eq!(me["role"], "learner");
    assert_eq!(user_count(&app).await, 2);
    refreshed(&app, &person.refresh).await;
}

#[tokio::test]
async fn sign_in_fails_the_same_way_for_an_unknown_email_and_a_wrong_password() {
    let app = TestApp::spawn().await;
    register(&app, "ada@example.com").await;
    // Someone who signs in elsewhere (an LMS) and has no password here.
    sqlx::query(
        "INSERT INTO users (id, email, display_name, role) VALUES ($1, 'lms@example.com', 'L', 'learner')",
    )
    .bind(Uuid::now_v7())
    .execute(&app.pool)
    .await
    .unwrap();
    let mut answers = Vec::new();
    for (email, password) in [
        ("nobody@example.com", PASSWORD),
        ("ada@example.com", "not the password"),
        ("lms@example.com", PASSWORD),
        ("lms@example.com", ""),
    ] {
        let res = login_request(&app, email, password).await;
        let www = res.headers().get("www-authenticate").cloned();
        assert!(www.is_some(), "{email}");
        let body = assert_problem(res, 401, "invalid_credentials").await;
        answers.push((body, www));
    }
    for answer in &answers[1..] {
        assert_eq!(answer, &answers[0], "the answers tell the cases apart");
    }
}

// Login rate limits.

#[tokio::test]
async fn a_sixth_sign_in_attempt_on_one_account_within_a_minute_is_throttled() {
    let app = TestApp::spawn().await;
    register(&app, "ada@example.com").await;
    register(&app, "grace@example.com").await;
    // Five attempts, in any case of the email, are allowed (and answered).
    for email in [
        "ada@example.com",
        "ADA@example.com",
        "Ada@Example.com",
        "ada@EXAMPLE.com",
        "ada@example.COM",
    ] {
        let res = login_request(&app, email, "guess").await;
        assert_problem(res, 401, "invalid_credentials").await;
    }
    // The sixth is refused, even with the right password.
    let res = login_request(&app, "ada@example.com", PASSWORD).await;
    let wait = retry_after(&res);
    assert!((1..=60).contains(&wait), "Retry-After: {wait}");
    let body = assert_problem(res, 429, "too_many_attempts").await;
    assert!(!body.to_string().contains("access_token"));
    // Another account from the same address is not affected.
    login(&app, "grace@example.com").await;
}

#[tokio::test]
async fn whitespace_around_the_email_does_not_escape_the_per_account_limit() {
    let app = TestApp::spawn().await;
    register(&app, "ada@example.com").await;
    for _ in 0..5 {
        let res = login_request(&app, "ada@example.com", "guess").await;
        assert_problem(res, 401, "invalid_credentials").await;
    }
    for email in [" ada@example.com", "ada@example.com ", "\tADA@example.com"] {
        let res = login_request(&app, email, PASSWORD).await;
        assert_eq!(
            res.status().as_u16(),
            429,
            "{email:?} is the same account and should be throttled"
        );
    }
}

#[tokio::test]
async fn guesses_from_one_address_meet_429() {
    let app = TestApp::spawn().await;
    register(&app, "ada@example.com").await;
    // Failures over many accounts: 100 from one address, then one every 2 s; allow slack.
    let mut throttled_at = None;
    for i in 0..110 {
        let res = login_request(&app, &format!("guess{i}@example.com"), "guess").await;
        if res.status() == 429 {
            let wait = retry_after(&res);
            assert!((1..=60).contains(&wait), "Retry-After: {wait}");
            assert_problem(res, 429, "too_many_attempts").await;
            throttled_at = Some(i);
            break;
        }
        assert_problem(res, 401, "invalid_credentials").await;
    }
    let throttled_at = throttled_at.expect("the address was throttled within 110 guesses");
    assert!(throttled_at >= 100, "throttled after only {throttled_at}");
    // The guessing address is refused even for a real account with its password …
    let res = login_request(&app, "ada@example.com", PASSWORD).await;
    assert!(retry_after(&res) >= 1);
    assert_problem(res, 429, "too_many_attempts").await;
    // … and other addresses are not.
    let res = login_from(&app, &client_from("127.0.0.2"), "ada@example.com", PASSWORD).await;
    expect_status(res, 200).await;
}

#[tokio::test]
async fn the_owner_signs_in_while_an_attacker_guesses_from_elsewhere() {
    let app = TestApp::spawn().await;
    register(&app, "ada@example.com").await;
    let attacker = client_from("127.0.0.2");
    for i in 0..12 {
        let res = login_from(&app, &attacker, "ada@example.com", "guess").await;
        if i < 5 {
            assert_problem(res, 401, "invalid_credentials").await;
        } else {
            let wait = retry_after(&res);
            assert!((1..=13).contains(&wait), "Retry-After: {wait}");
            assert_problem(res, 429, "too_many_attempts").await;
        }
        // Between the guesses, the owner signs in from their own address, every time.
        login(&app, "ada@example.com").await;
    }
    // The attacker's address is refused even with the right password: it is still guessing.
    let res = login_from(&app, &attacker, "ada@example.com", PASSWORD).await;
    assert_problem(res, 429, "too_many_attempts").await;
}

#[tokio::test]
async fn a_class_behind_one_address_signs_in_without_429() {
    let app = TestApp::spawn_configured(|state| {
        state.login_limiter =
            quizd::auth::ratelimit::LoginLimiter::new(b"the class's own secret", 0);
    })
    .await;
    let class: Vec<String> = (0..60).map(|i| format!("learner{i}@example.com")).collect();
    for email in &class {
        register(&app, email).await;
    }
    // Everyone signs in, some after a typo or two, from the one address of the school.
    for (i, email) in class.iter().enumerate() {
        for _ in 0..(i % 3) {
            let res = login_request(&app, email, "typo in it").await;
            assert_problem(res, 401, "invalid_credentials").await;
        }
        let res = login_request(&app, email, PASSWORD).await;
        expect_status(res, 200).await;
    }
    // And again, at once, as the class opens the quiz on a second device.
    let again = class
        .iter()
        .map(|email| login_request(&app, email, PASSWORD));
    for res in futures_util::future::join_all(again).await {
        expect_status(res, 200).await;
    }
}

#[tokio::test]
async fn distributed_guessing_meets_the_per_account_limit() {
    let app = TestApp::spawn().await;
    register(&app, "ada@example.com").await;
    // The owner has signed in from their address before.
    login(&app, "ada@example.com").await;
    // 100 failures an hour per account from all addresses: 20 addresses × 5 guesses (each
    // pair stays within its own limit).
    for a in 0..20 {
        let guesser = client_from(&format!("127.0.1.{}", a + 1));
        for _ in 0..5 {
            let res = login_from(&app, &guesser, "ada@example.com", "guess").await;
            assert_problem(res, 401, "invalid_credentials").await;
        }
    }
    // A fresh address meets the account's limit, even with the right password.
    let fresh = client_from("127.0.2.1");
    let res = login_from(&app, &fresh, "ada@example.com", "guess").await;
    let wait = retry_after(&res);
    assert!((1..=37).contains(&wait), "Retry-After: {wait}");
    assert_problem(res, 429, "too_many_attempts").await;
    let res = login_from(&app, &fresh, "ada@example.com", PASSWORD).await;
    assert_problem(res, 429, "too_many_attempts").await;
    // The owner's own address is not refused; other accounts are not affected.
    login(&app, "ada@example.com").await;
    register(&app, "grace@example.com").await;
    let res = login_from(&app, &fresh, "grace@example.com", PASSWORD).await;
    expect_status(res, 200).await;
}

/// The try (1-based) at which guesses at `email` from `guesser` meet `429`, each sent to the
/// next of `apps` in turn; `None` within 20 tries.
async fn try_meeting_429(
    apps: &[&TestApp],
    guesser: &reqwest::Client,
    email: &str,
) -> Option<usize> {
    for try_no in 1..=20 {
        let app = apps[try_no % apps.len()];
        let res = login_from(app, guesser, email, "guess").await;
        if res.status() == 429 {
            assert_problem(res, 429, "too_many_attempts").await;
            return Some(try_no);
        }
        assert_problem(res, 401, "invalid_credentials").await;
    }
    None
}

#[tokio::test]
async fn guesses_spread_over_two_instances_meet_429_at_the_same_try_as_on_one() {
    let app = TestApp::spawn().await;
    let other = app.another_instance().await;
    register(&app, "ada@example.com").await;
    register(&app, "grace@example.com").await;
    let guesser = client_from("127.0.0.2");
    let on_one = try_meeting_429(&[&app], &guesser, "ada@example.com").await;
    let on_two = try_meeting_429(&[&app, &other], &guesser, "grace@example.com").await;
    assert_eq!(on_one, Some(6));
    assert_eq!(
        on_two, on_one,
        "spreading the guesses over instances gained tries"
    );
    // Both instances refuse the guesser, even with the right password; the owners, from
    // their own address, sign in through either.
    for instance in [&app, &other] {
        let res = login_from(instance, &guesser, "grace@example.com", PASSWORD).await;
        assert_problem(res, 429, "too_many_attempts").await;
        login(instance, "grace@example.com").await;
        login(instance, "ada@example.com").await;
    }
}

#[tokio::test]
async fn an_address_known_to_one_instance_passes_the_account_limit_on_another() {
    let app = TestApp::spawn().await;
    let other = app.another_instance().await;
    register(&app, "ada@example.com").await;
    // The owner signs in through the first instance.
    login(&app, "ada@example.com").await;
    // 20 addresses × 5 guesses, over both instances: the account's 100.
    for a in 0..20 {
        let guesser = client_from(&format!("127.0.1.{}", a + 1));
        for g in 0..5 {
            let instance = if (a + g) % 2 == 0 { &app } else { &other };
            let res = login_from(instance, &guesser, "ada@example.com", "guess").await;
            assert_problem(res, 401, "invalid_credentials").await;
        }
    }
    let fresh = client_from("127.0.2.1");
    for instance in [&app, &other] {
        let res = login_from(instance, &fresh, "ada@example.com", PASSWORD).await;
        assert_problem(res, 429, "too_many_attempts").await;
    }
    // The second instance knows the owner's address from the first one's sign-in.
    login(&other, "ada@example.com").await;
}

#[tokio::test]
async fn expired_limit_rows_are_deleted_as_failures_are_counted() {
    let app = TestApp::spawn().await;
    // 40 keys whose counts ran out an hour ago, as a quiet night leaves them.
    sqlx::query(
        "INSERT INTO sign_in_limits (kind, key, until)
         SELECT 'address', substring(sha256(i::text::bytea) FROM 1 FOR 16), now() - interval '1 hour'
           FROM generate_series(1, 40) i",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let expired = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM sign_in_limits WHERE until < now()")
            .fetch_one(&app.pool)
            .await
            .unwrap()
    };
    assert_eq!(expired().await, 40);
    for _ in 0..3 {
        let res = login_request(&app, "nobody@example.com", "guess").await;
        assert_problem(res, 401, "invalid_credentials").await;
    }
    // Each failure deleted 16 of them and wrote its own three keys (live).
    assert_eq!(expired().await, 0);
    let live: i64 = sqlx::query_scalar("SELECT count(*) FROM sign_in_limits")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        live, 3,
        "one row per key: the pair, the account, the address"
    );
}

/// `POST /v1/auth/register` for student `i`.
async fn sign_up_student(app: &TestApp, i: usize) -> reqwest::Response {
    register_with(
        app,
        json!({
            "email": format!("student{i}@example.com"),
            "display_name": format!("Student {i}"),
            "password": PASSWORD,
        }),
    )
    .await
}

#[tokio::test]
async fn sign_ups_from_one_address_are_throttled_after_a_classroom_burst_and_create_nothing() {
    let app = TestApp::spawn().await;
    // 30 at once (a class behind one NAT), then 10 a minute; allow slack for the refill.
    let mut throttled_at = None;
    for i in 0..40 {
        let res = sign_up_student(&app, i).await;
        if res.status() == 429 {
            let wait = retry_after(&res);
            assert!((1..=60).contains(&wait), "Retry-After: {wait}");
            assert_problem(res, 429, "too_many_signups").await;
            throttled_at = Some(i);
            break;
        }
        expect_status(res, 201).await;
    }
    let throttled_at = throttled_at.expect("the address was throttled within 40 sign-ups");
    assert!(throttled_at >= 30, "throttled after only {throttled_at}");
    let refused: bool =
        sqlx::query_scalar("SELECT NOT EXISTS (SELECT 1 FROM users WHERE email = $1)")
            .bind(format!("student{throttled_at}@example.com"))
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(refused, "the refused sign-up created no account");
    // Signing in is limited separately: a student who signed up can still sign in.
    login(&app, "student0@example.com").await;
}

#[tokio::test]
async fn sign_ups_spread_over_two_instances_meet_the_same_burst_as_on_one() {
    let app = TestApp::spawn().await;
    let other = app.another_instance().await;
    let mut throttled_at = None;
    for i in 0..40 {
        let instance = if i % 2 == 0 { &app } else { &other };
        let res = sign_up_student(instance, i).await;
        if res.status() == 429 {
            assert_problem(res, 429, "too_many_signups").await;
            throttled_at = Some(i);
            break;
        }
        expect_status(res, 201).await;
    }
    // 30 at once, as on one instance (the refill adds one every 6 s: allow one more).
    let throttled_at = throttled_at.expect("the address was throttled within 40 sign-ups");
    assert!(
        (30..=31).contains(&throttled_at),
        "throttled at {throttled_at}"
    );
}

// Refresh tokens.

#[tokio::test]
async fn a_refresh_token_rotates_and_a_reused_one_signs_out_its_whole_sign_in() {
    let app = TestApp::spawn().await;
    let person = register(&app, "ada@example.com").await;
    let (_, r1) = login(&app, "ada@example.com").await;
    let (a2, r2) = refreshed(&app, &r1).await;
    assert_ne!(r2, r1);
    let me = expect_status(get_as(&app, &a2, "/v1/me").await, 200).await;
    assert_eq!(me["id"], person.id.to_string());
    let (a3, r3) = refreshed(&app, &r2).await;
    assert_ne!(r3, r2);
    assert_ne!(r3, r1);
    expect_status(get_as(&app, &a3, "/v1/me").await, 200).await;

    // r1 comes back: someone has a copy. The whole sign-in is revoked.
    let res = refresh(&app, &r1).await;
    assert!(res.headers().contains_key("www-authenticate"));
    assert_problem(res, 401, "refresh_token_reused").await;
    let res = refresh(&app, &r3).await;
    assert_eq!(
        res.status(),
        401,
        "the newest token of the family still works"
    );
    // r2 (used) and r3 (revoked) are both dead now.
    assert_eq!(refresh(&app, &r2).await.status(), 401);
    assert_eq!(refresh(&app, &r3).await.status(), 401);

    // The sign-in from registration is another family and is untouched.
    refreshed(&app, &person.refresh).await;
}

#[tokio::test]
async fn two_concurrent_uses_of_one_refresh_token_sign_out_the_family() {
    let app = TestApp::spawn().await;
    register(&app, "ada@example.com").await;
    let (_, r1) = login(&app, "ada@example.com").await;
    let (a, b) = tokio::join!(refresh(&app, &r1), refresh(&app, &r1));
    let mut statuses = [a.status().as_u16(), b.status().as_u16()];
    statuses.sort();
    assert_eq!(statuses, [200, 401]);
    let (winner, loser) = if a.status() == 200 { (a, b) } else { (b, a) };
    assert_problem(loser, 401, "refresh_token_reused").await;
    let won: Value = winner.json().await.unwrap();
    let res = refresh(&app, won["refresh_token"].as_str().unwrap()).await;
    assert_eq!(
        res.status(),
        401,
        "the winner's new token survived the reuse"
    );
}

#[tokio::test]
async fn an_unknown_or_expired_refresh_token_is_refused() {
    let app = TestApp::spawn().await;
    let person = register(&app, "ada@example.com").await;
    for token in ["", "nonsense", &"0".repeat(64), &person.access] {
        let res = refresh(&app, token).await;
        assert_unauthorized(res, token).await;
    }
    sqlx::query(
        "UPDATE refresh_tokens SET expires_at = now() - interval '1 second' WHERE user_id = $1",
    )
    .bind(person.id)
    .execute(&app.pool)
    .await
    .unwrap();
    assert_unauthorized(refresh(&app, &person.refresh).await, "expired").await;
}

#[tokio::test]
async fn logging_out_revokes_the_sign_in() {
    let app = TestApp::spawn().await;
    let person = register(&app, "ada@example.com").await;
    let (_, r1) = login(&app, "ada@example.com").await;
    let (_, r2) = refreshed(&app, &r1).await;
    let res = post_json(&app, "/v1/auth/logout", &json!({ "refresh_token": r2 })).await;
    assert_eq!(res.status(), 204);
    assert!(res.text().await.unwrap().is_empty());
    assert_unauthorized(refresh(&app, &r2).await, "logged out").await;
    assert_eq!(refresh(&app, &r1).await.status(), 401);
    // Logging out with the older (used) token of a sign-in revokes it too.
    let (_, s1) = login(&app, "ada@example.com").await;
    let (_, s2) = refreshed(&app, &s1).await;
    let res = post_json(&app, "/v1/auth/logout", &json!({ "refresh_token": s1 })).await;
    assert_eq!(res.status(), 204);
    assert_eq!(refresh(&app, &s2).await.status(), 401);
    // Logging out twice, or with a token nobody has, says nothing.
    for token in [r2.as_str(), "unknown"] {
        let res = post_json(&app, "/v1/auth/logout", &json!({ "refresh_token": token })).await;
        assert_eq!(res.status(), 204);
    }
    // The registration's sign-in is another family and survives.
    refreshed(&app, &person.refresh).await;
}

// Access tokens.

#[tokio::test]
async fn a_token_made_here_with_quizds_key_and_claims_is_accepted() {
    // The control for the forgeries below: the test builds tokens the way quizd does.
    let app = TestApp::spawn().await;
    let person = register(&app, "ada@example.com").await;
    let key = signing_key(&app).await;
    let token = hs_token(&key, Algorithm::HS256, &good_claims(person.id, "learner"));
    let me = expect_status(get_as(&app, &token, "/v1/me").await, 200).await;
    assert_eq!(me["id"], person.id.to_string());
    let token = hmac_signed_with_header(
        &key,
        &json!({ "alg": "HS256", "typ": "JWT" }),
        &good_claims(person.id, "learner"),
    );
    expect_status(get_as(&app, &token, "/v1/me").await, 200).await;
}

#[tokio::test]
async fn unsigned_foreign_and_altered_access_tokens_are_refused() {
    let app = TestApp::spawn().await;
    let person = register(&app, "ada@example.com").await;
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
        let res = get_as(&app, &token, "/v1/me").await;
        assert_unauthorized(res, case).await;
    }
}

#[tokio::test]
async fn tokens_with_bad_claims_are_refused_even_with_quizds_key() {
    let app = TestApp::spawn().await;
    let person = register(&app, "ada@example.com").await;
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
        assert_unauthorized(get_as(&app, &token, "/v1/me").await, case).await;
    }
}

#[tokio::test]
async fn malformed_authorization_headers_are_refused() {
    let app = TestApp::spawn().await;
    let person = register(&app, "ada@example.com").await;
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
    expect_status(
        me_with_header(&app, Some(&format!("Bearer {token}"))).await,
        200,
    )
    .await;
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
                let res = req.send().await.unwrap();
                assert_unauthorized(res, &format!("{method} {path} with {token:?}")).await;
            }
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} operations require a token");
}

// Profiles and roles.

#[tokio::test]
async fn a_person_updates_their_name_and_locale_but_nothing_else() {
    let app = TestApp::spawn().await;
    let person = app.person("ada@example.com", "learner").await;
    let path = "/v1/me";
    let body = json!({ "display_name": " Ada L. ", "locale": "id" });
    let me = person.patch(path, &body).await.status(200).await;
    assert_eq!(me["display_name"], "Ada L.");
    assert_eq!(me["locale"], "id");
    assert_eq!(me["email"], "ada@example.com");
    assert_eq!(me["role"], "learner");
    // Omitted fields stay as they are.
    let body = json!({ "locale": "pt-br" });
    let me = person.patch(path, &body).await.status(200).await;
    assert_eq!(me["display_name"], "Ada L.");
    assert_eq!(me["locale"], "pt-BR");
    for (body, status, code) in [
        (json!({ "display_name": "" }), 422, "invalid_field"),
        (json!({ "locale": "english" }), 422, "invalid_locale"),
        (json!({ "email": "new@example.com" }), 400, "invalid_body"),
    ] {
        person.patch(path, &body).await.problem(status, code).await;
    }
    let me = person.get(path).await.status(200).await;
    assert_eq!(me["display_name"], "Ada L.");
    assert_eq!(me["email"], "ada@example.com");
}

#[tokio::test]
async fn only_an_admin_changes_roles() {
    let app = TestApp::spawn().await;
    let admin = app.person("admin@example.com", "admin").await;
    let instructor = app.person("teach@example.com", "instructor").await;
    let learner = app.person("ada@example.com", "learner").await;
    let role_path = |id: Uuid| format!("/v1/users/{id}/role");
    // Not learners or instructors, not for others and not for themselves.
    for (who, target) in [
        (&learner, learner.id),
        (&learner, instructor.id),
        (&instructor, instructor.id),
        (&instructor, learner.id),
    ] {
        for role in ["admin", "instructor", "learner"] {
            let res = who.put(&role_path(target), &json!({ "role": role })).await;
            res.problem(403, "forbidden").await;
        }
    }
    let roles: Vec<String> =
        sqlx::query_scalar("SELECT role FROM users WHERE id = ANY($1) ORDER BY email")
            .bind(vec![admin.id, instructor.id, learner.id])
            .fetch_all(&app.pool)
            .await
            .unwrap();
    // ada@, admin@, teach@
    assert_eq!(roles, ["learner", "admin", "instructor"]);

    // An admin can.
    let res = admin
        .put(&role_path(learner.id), &json!({ "role": "instructor" }))
        .await
        .response();
    assert_eq!(res.headers()["cache-control"], "no-store");
    let user = expect_status(res, 200).await;
    assert_eq!(user["id"], learner.id.to_string());
    assert_eq!(user["role"], "instructor");
    assert_eq!(user["email"], "ada@example.com");
    let to_admin = json!({ "role": "admin" });
    let user = admin
        .put(&role_path(instructor.id), &to_admin)
        .await
        .status(200)
        .await;
    assert_eq!(user["role"], "admin");
    let me = learner.get("/v1/me").await.status(200).await;
    assert_eq!(me["role"], "instructor");

    // Its mistakes are answered precisely.
    let res = admin.put(&role_path(Uuid::now_v7()), &to_admin).await;
    res.problem(404, "user_not_found").await;
    let res = admin
        .put(&role_path(learner.id), &json!({ "role": "superuser" }))
        .await;
    res.problem(400, "invalid_body").await;
    let res = admin.put("/v1/users/not-a-uuid/role", &to_admin).await;
    res.problem(400, "invalid_path").await;
}

#[tokio::test]
async fn a_changed_role_takes_effect_when_the_token_is_refreshed() {
    let app = TestApp::spawn().await;
    let admin = app.person("admin@example.com", "admin").await;
    let person = app.person("ada@example.com", "learner").await;
    let course = json!({ "title": "Parallel computing" });
    let role = format!("/v1/users/{}/role", person.id);
    let to = |role: &str| json!({ "role": role });
    admin.put(&role, &to("instructor")).await.status(200).await;
    // The old access token still carries the old role…
    assert_eq!(claims_of(&person.access)["role"], "learner");
    let res = person.post("/v1/courses", &course).await;
    res.problem(403, "forbidden").await;
    // …while /v1/me reads the role from the database.
    let me = person.get("/v1/me").await.status(200).await;
    assert_eq!(me["role"], "instructor");
    // A refreshed token carries the new role, and instructor-only endpoints open.
    let (access, refresh_token) = refreshed(&app, &person.refresh).await;
    assert_eq!(claims_of(&access)["role"], "instructor");
    let created = expect_status(post_as(&app, &access, "/v1/courses", &course).await, 201).await;
    assert_eq!(created["my_role"], "instructor");

    // Demoted again: the next refreshed token can no longer create courses.
    admin.put(&role, &to("learner")).await.status(200).await;
    let (access, _) = refreshed(&app, &refresh_token).await;
    assert_eq!(claims_of(&access)["role"], "learner");
    let res = post_as(&app, &access, "/v1/courses", &course).await;
    assert_problem(res, 403, "forbidden").await;
    // Teaching is a role in the course, not the site role: the course they made is still theirs.
    let course_id = created["id"].as_str().unwrap();
    let res = get_as(
        &app,
        &access,
        &format!("/v1/courses/{course_id}/enrollments"),
    )
    .await;
    expect_status(res, 200).await;
}
