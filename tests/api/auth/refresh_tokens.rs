//! Refresh tokens: rotation, reuse signing out the whole sign-in, expiry and logging out.

use serde_json::{Value, json};

use crate::support::{TestApp, login};

use super::{assert_unauthorized, refresh, refreshed};

#[tokio::test]
async fn a_refresh_token_rotates_and_a_reused_one_signs_out_its_whole_sign_in() {
    let app = TestApp::spawn().await;
    let person = app.person("ada@example.com", "learner").await;
    let (_, r1) = login(&app, "ada@example.com").await;
    let (a2, r2) = refreshed(&app, &r1).await;
    assert_ne!(r2, r1);
    let me = app
        .bearer_session(&a2)
        .get("/v1/me")
        .await
        .status(200)
        .await;
    assert_eq!(me["id"], person.id.to_string());
    let (a3, r3) = refreshed(&app, &r2).await;
    assert_ne!(r3, r2);
    assert_ne!(r3, r1);
    app.bearer_session(&a3)
        .get("/v1/me")
        .await
        .status(200)
        .await;

    // r1 comes back: someone has a copy. The whole sign-in is revoked.
    let res = refresh(&app, &r1).await;
    assert!(res.header("www-authenticate").is_some());
    res.problem(401, "refresh_token_reused").await;
    let res = refresh(&app, &r3).await.response();
    assert_eq!(
        res.status(),
        401,
        "the newest token of the family still works"
    );
    // r2 (used) and r3 (revoked) are both dead now.
    assert_eq!(refresh(&app, &r2).await.response().status(), 401);
    assert_eq!(refresh(&app, &r3).await.response().status(), 401);

    // The sign-in from registration is another family and is untouched.
    refreshed(&app, &person.refresh).await;
}

#[tokio::test]
async fn two_concurrent_uses_of_one_refresh_token_sign_out_the_family() {
    let app = TestApp::spawn().await;
    app.person("ada@example.com", "learner").await;
    let (_, r1) = login(&app, "ada@example.com").await;
    let (a, b) = tokio::join!(refresh(&app, &r1), refresh(&app, &r1));
    let mut statuses = [a.status_code(), b.status_code()];
    statuses.sort();
    assert_eq!(statuses, [200, 401]);
    let (winner, loser) = if a.status_code() == 200 {
        (a, b)
    } else {
        (b, a)
    };
    loser.problem(401, "refresh_token_reused").await;
    let won: Value = winner.ok().await;
    let res = refresh(&app, won["refresh_token"].as_str().unwrap()).await;
    let res = res.response();
    assert_eq!(
        res.status(),
        401,
        "the winner's new token survived the reuse"
    );
}

#[tokio::test]
async fn an_unknown_or_expired_refresh_token_is_refused() {
    let app = TestApp::spawn().await;
    let person = app.person("ada@example.com", "learner").await;
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

/// `POST /v1/auth/logout` with this refresh token: the response, bytes and all.
async fn logout(app: &TestApp, token: &str) -> reqwest::Response {
    let body = json!({ "refresh_token": token });
    app.anonymous()
        .post("/v1/auth/logout", &body)
        .await
        .response()
}

#[tokio::test]
async fn logging_out_revokes_the_sign_in() {
    let app = TestApp::spawn().await;
    let person = app.person("ada@example.com", "learner").await;
    let (_, r1) = login(&app, "ada@example.com").await;
    let (_, r2) = refreshed(&app, &r1).await;
    let res = logout(&app, &r2).await;
    assert_eq!(res.status(), 204);
    assert!(res.text().await.unwrap().is_empty());
    assert_unauthorized(refresh(&app, &r2).await, "logged out").await;
    assert_eq!(refresh(&app, &r1).await.response().status(), 401);
    // Logging out with the older (used) token of a sign-in revokes it too.
    let (_, s1) = login(&app, "ada@example.com").await;
    let (_, s2) = refreshed(&app, &s1).await;
    let res = logout(&app, &s1).await;
    assert_eq!(res.status(), 204);
    assert_eq!(refresh(&app, &s2).await.response().status(), 401);
    // Logging out twice, or with a token nobody has, says nothing.
    for token in [r2.as_str(), "unknown"] {
        let res = logout(&app, token).await;
        assert_eq!(res.status(), 204);
    }
    // The registration's sign-in is another family and survives.
    refreshed(&app, &person.refresh).await;
}
