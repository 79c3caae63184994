//! Accounts: registration, the stored password and refresh-token hashes, sign-in and the
//! current user, and the bodies these refuse.

use jsonwebtoken::Algorithm;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::{PASSWORD, TestApp, login};

use super::{
    assert_unauthorized, claims_of, me_with_header, refresh, refreshed, register_with, with,
};

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
    let tokens = res.status(201).await;
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 900);
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(access.split('.').count(), 3, "a JWS compact token");
    assert!(tokens["refresh_token"].as_str().unwrap().len() >= 32);

    let me = app
        .bearer_session(access)
        .get("/v1/me")
        .await
        .status(200)
        .await;
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
    let res = app.anonymous().sign_in("ADA@Example.COM", PASSWORD).await;
    let tokens = res.status(200).await;
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 900);
    let access = tokens["access_token"].as_str().unwrap();
    let again = app
        .bearer_session(access)
        .get("/v1/me")
        .await
        .status(200)
        .await;
    assert_eq!(again, me);

    // And without a token there is no "me".
    assert_unauthorized(me_with_header(&app, None).await, "no token").await;
}

#[tokio::test]
async fn registration_always_makes_a_learner() {
    let app = TestApp::spawn().await;
    let person = app.person("grace@example.com", "learner").await;
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
    res.problem(400, "invalid_body").await;
    assert_eq!(user_count(&app).await, 1);
}

#[tokio::test]
async fn the_password_is_stored_only_as_an_argon2id_hash() {
    let app = TestApp::spawn().await;
    let person = app.person("ada@example.com", "learner").await;
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
    let other = app.person("grace@example.com", "learner").await;
    assert_ne!(password_hash(&app, other.id).await, hash);
}

#[tokio::test]
async fn refresh_tokens_are_stored_only_as_hashes() {
    let app = TestApp::spawn().await;
    let person = app.person("ada@example.com", "learner").await;
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
    let admin = app.person("admin@example.com", "admin").await;
    let res = register_with(
        &app,
        json!({ "email": "ada@example.com", "display_name": "Ada", "password": PASSWORD }),
    )
    .await
    .response();
    assert_eq!(res.status(), 201);
    let mut bodies = vec![("register", res.text().await.unwrap())];
    let tokens: Value = serde_json::from_str(&bodies[0].1).unwrap();
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let refresh_token = tokens["refresh_token"].as_str().unwrap().to_string();
    let person = app.bearer_session(&access);
    let me = person.get("/v1/me").await.response();
    assert_eq!(me.status(), 200);
    let me_text = me.text().await.unwrap();
    let id = serde_json::from_str::<Value>(&me_text).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    bodies.push(("me", me_text));
    let hash = password_hash(&app, id.parse().unwrap()).await;

    let res = app.anonymous().sign_in("ada@example.com", PASSWORD).await;
    let res = res.response();
    assert_eq!(res.status(), 200);
    bodies.push(("login", res.text().await.unwrap()));
    let res = app
        .anonymous()
        .sign_in("ada@example.com", "wrong password")
        .await;
    let res = res.response();
    assert_eq!(res.status(), 401);
    bodies.push(("failed login", res.text().await.unwrap()));
    let res = refresh(&app, &refresh_token).await.response();
    assert_eq!(res.status(), 200);
    bodies.push(("refresh", res.text().await.unwrap()));
    let body = json!({ "display_name": "Ada L." });
    let res = person.patch("/v1/me", &body).await.response();
    assert_eq!(res.status(), 200);
    bodies.push(("profile update", res.text().await.unwrap()));
    let body = json!({ "role": "instructor" });
    let res = admin.put(&format!("/v1/users/{id}/role"), &body).await;
    let res = res.response();
    assert_eq!(res.status(), 200);
    bodies.push(("role change", res.text().await.unwrap()));
    let res = register_with(
        &app,
        json!({ "email": "ada@example.com", "display_name": "Ada", "password": PASSWORD }),
    )
    .await
    .response();
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
    app.person("Ada.Lovelace@Example.com", "learner").await;
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
        res.problem(409, "email_taken").await;
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
    let mut statuses = [a.status_code(), b.status_code()];
    statuses.sort();
    assert_eq!(statuses, [201, 409]);
    let loser = if a.status_code() == 409 { a } else { b };
    loser.problem(409, "email_taken").await;
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
        res.problem(422, "weak_password").await;
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
        res.status(201).await;
        let res = app.anonymous().sign_in(&email, &password).await;
        res.status(200).await;
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
        let body = res.problem(status, code).await;
        assert!(body["detail"].is_string(), "{field} = {value}");
    }
    assert_eq!(user_count(&app).await, 0);
    // A locale is stored in its canonical form.
    let res = register_with(&app, with(base.clone(), "locale", json!("pt-br"))).await;
    let tokens = res.status(201).await;
    let person = app.bearer_session(tokens["access_token"].as_str().unwrap());
    let me = person.get("/v1/me").await;
    assert_eq!(me.status(200).await["locale"], "pt-BR");
}

#[tokio::test]
async fn unknown_or_missing_fields_in_auth_bodies_are_refused() {
    let app = TestApp::spawn().await;
    let admin = app.person("admin@example.com", "admin").await;
    let person = app.person("ada@example.com", "learner").await;
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
        let res = app.anonymous().post(path, &body).await;
        res.problem(400, "invalid_body").await;
    }
    let res = person.patch("/v1/me", &json!({ "role": "admin" })).await;
    res.problem(400, "invalid_body").await;
    let body = json!({ "role": "instructor", "reason": "promotion" });
    let res = admin
        .put(&format!("/v1/users/{}/role", person.id), &body)
        .await;
    res.problem(400, "invalid_body").await;
    // Nothing changed: still a learner, and the refresh token is still good.
    let me = person.get("/v1/me").await.status(200).await;
    assert_eq!(me["role"], "learner");
    assert_eq!(user_count(&app).await, 2);
    refreshed(&app, &person.refresh).await;
}

#[tokio::test]
async fn sign_in_fails_the_same_way_for_an_unknown_email_and_a_wrong_password() {
    let app = TestApp::spawn().await;
    app.person("ada@example.com", "learner").await;
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
        let res = app.anonymous().sign_in(email, password).await;
        let www = res.header("www-authenticate").map(str::to_string);
        assert!(www.is_some(), "{email}");
        let body = res.problem(401, "invalid_credentials").await;
        answers.push((body, www));
    }
    for answer in &answers[1..] {
        assert_eq!(answer, &answers[0], "the answers tell the cases apart");
    }
}
