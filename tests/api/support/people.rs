//! People and sign-in: registering test people with [`PASSWORD`], signing in, roles.

use super::{TestApp, expect_status, get_as};

/// The password every test person registers with.
pub const PASSWORD: &str = "correct horse battery staple";

/// A registered, signed-in person.
#[derive(Debug, Clone)]
pub struct Person {
    pub id: uuid::Uuid,
    pub email: String,
    pub access: String,
    pub refresh: String,
}

/// Registers a learner over HTTP with [`PASSWORD`] and marks the address verified behind the
/// API's back, as if they had followed the mailed link (an email enrolls only a verified
/// account; most tests enroll people by email); returns them signed in.
pub async fn register(app: &TestApp, email: &str) -> Person {
    let person = register_unverified(app, email).await;
    sqlx::query("UPDATE users SET email_verified_at = now() WHERE id = $1")
        .bind(person.id)
        .execute(&app.pool)
        .await
        .unwrap();
    person
}

/// Registers a learner over HTTP with [`PASSWORD`], the address not verified; returns them
/// signed in.
pub async fn register_unverified(app: &TestApp, email: &str) -> Person {
    let res = app
        .client
        .post(app.url("/v1/auth/register"))
        .json(&serde_json::json!({
            "email": email,
            "display_name": format!("Person {email}"),
            "password": PASSWORD,
        }))
        .send()
        .await
        .unwrap();
    let tokens = expect_status(res, 201).await;
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let me = expect_status(get_as(app, &access, "/v1/me").await, 200).await;
    Person {
        id: me["id"].as_str().unwrap().parse().unwrap(),
        email: email.to_string(),
        access,
        refresh: tokens["refresh_token"].as_str().unwrap().to_string(),
    }
}

/// POST /v1/auth/login with these credentials.
pub async fn login_request(app: &TestApp, email: &str, password: &str) -> reqwest::Response {
    app.anonymous().sign_in(email, password).await.response()
}

/// Signs in with [`PASSWORD`], expecting success; returns (access token, refresh token).
pub async fn login(app: &TestApp, email: &str) -> (String, String) {
    let tokens = expect_status(login_request(app, email, PASSWORD).await, 200).await;
    (
        tokens["access_token"].as_str().unwrap().to_string(),
        tokens["refresh_token"].as_str().unwrap().to_string(),
    )
}

/// Sets a person's role behind the API's back.
pub async fn set_role_in_db(app: &TestApp, id: uuid::Uuid, role: &str) {
    sqlx::query("UPDATE users SET role = $2 WHERE id = $1")
        .bind(id)
        .bind(role)
        .execute(&app.pool)
        .await
        .unwrap();
}

/// A person with this role (`learner`, `instructor` or `admin`), signed in after the role
/// was set, so the role is in their access token. Costs one login.
pub async fn token_for(app: &TestApp, email: &str, role: &str) -> Person {
    let mut person = register(app, email).await;
    if role != "learner" {
        set_role_in_db(app, person.id, role).await;
        (person.access, person.refresh) = login(app, email).await;
    }
    person
}
