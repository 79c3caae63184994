//! Platform registrations and keys: admin-only registration, quizd's rotating keys, the
//! command line, and the platform's own keys as quizd fetches and expires them.

use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::support::{TestApp, assert_problem};

use super::{launch_session, learner, run_launch, setup, take_quiz};

#[tokio::test]
async fn a_rotated_platform_key_is_fetched_on_its_first_use_and_a_withdrawn_one_expires() {
    let lti = setup().await;
    launch_session(&lti, &learner("before-rotation")).await;
    // quizd refetches the platform's keys for an unknown kid, at most every few seconds.
    tokio::time::sleep(Duration::from_millis(
        quizd::lti::registrations::JWKS_REFETCH_SECS as u64 * 1000 + 200,
    ))
    .await;
    lti.platform.control(json!({"rotate_key": true})).await;
    launch_session(&lti, &learner("after-rotation")).await;

    // The platform withdraws its old key. quizd's cached copy of the key set still has it
    // until the cache is older than its maximum age; then it is fetched again, and the
    // withdrawn key is refused.
    lti.platform
        .control(json!({"withdraw_previous_keys": true}))
        .await;
    let mut old_key = learner("old-key");
    old_key["tamper"] = json!({"sign": "withdrawn_key"});
    launch_session(&lti, &old_key).await;
    sqlx::query("UPDATE lti_registrations SET jwks_fetched_at = now() - make_interval(secs => $1)")
        .bind(quizd::lti::registrations::JWKS_MAX_AGE_SECS as f64 + 1.0)
        .execute(&lti.app.pool)
        .await
        .unwrap();
    let flow = run_launch(&lti, &old_key).await;
    assert_problem(flow.response, 401, "lti_unknown_key").await;
    launch_session(&lti, &learner("current-key")).await;
}

#[tokio::test]
async fn registrations_and_keys_are_for_admins_and_keys_rotate() {
    let lti = setup().await;
    let app = &lti.app;
    let admin = lti.admin();
    let someone = app.person("learner@lti.example", "learner").await;
    someone
        .get("/v1/lti/registrations")
        .await
        .problem(403, "forbidden")
        .await;
    app.anonymous()
        .get("/v1/lti/registrations")
        .await
        .problem(401, "unauthorized")
        .await;

    // The same issuer and client id twice; invalid fields.
    let mut again = lti.registration.clone();
    let obj = again.as_object_mut().unwrap();
    for k in [
        "id",
        "created_at",
        "updated_at",
        "tool",
        "jwks",
        "jwks_fetched_at",
        "token_audience",
    ] {
        obj.remove(k);
    }
    let registrations = "/v1/lti/registrations";
    admin
        .post(registrations, &again)
        .await
        .problem(409, "registration_exists")
        .await;
    let mut bad = again.clone();
    bad["client_id"] = json!("other");
    bad["auth_endpoint"] = json!("http://lms.example/auth");
    admin
        .post(registrations, &bad)
        .await
        .problem(422, "invalid_registration")
        .await;
    bad["auth_endpoint"] = json!("https://lms.example/auth");
    bad["deployment_ids"] = json!([]);
    admin
        .post(registrations, &bad)
        .await
        .problem(422, "invalid_registration")
        .await;
    bad["deployment_ids"] = json!(["d"]);
    bad["jwks"] = json!({"keys": [{"kty": "EC", "kid": "k"}]});
    admin
        .post(registrations, &bad)
        .await
        .problem(422, "invalid_registration")
        .await;
    bad.as_object_mut().unwrap().remove("jwks_url");
    admin
        .post(registrations, &bad)
        .await
        .problem(422, "invalid_registration")
        .await;

    let id = lti.registration["id"].as_str().unwrap();
    let registration = format!("/v1/lti/registrations/{id}");
    let changed = admin
        .patch(
            &registration,
            &json!({"deployment_ids": ["deployment-1", "deployment-2"]}),
        )
        .await
        .status(200)
        .await;
    assert_eq!(
        changed["deployment_ids"],
        json!(["deployment-1", "deployment-2"])
    );
    let list = admin.get(registrations).await.status(200).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);

    // quizd's keys: one signs; rotation keeps the previous one published.
    let jwks = app
        .anonymous()
        .get("/.well-known/jwks.json")
        .await
        .status(200)
        .await;
    let keys = jwks["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0]["kty"], "RSA");
    assert_eq!(keys[0]["alg"], "RS256");
    assert_eq!(keys[0]["use"], "sig");
    let first = keys[0]["kid"].as_str().unwrap().to_string();
    let rotated = admin
        .post("/v1/lti/keys/rotate", &json!({}))
        .await
        .status(201)
        .await;
    let second = rotated["kid"].as_str().unwrap();
    assert_ne!(second, first);
    let jwks = app.anonymous().get("/v1/lti/jwks").await.status(200).await;
    let kids: Vec<&str> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap())
        .collect();
    assert_eq!(kids, vec![second, first.as_str()]);
    let list = admin.get("/v1/lti/keys").await.status(200).await;
    assert!(list["items"][0]["retired_at"].is_null());
    assert!(list["items"][1]["retired_at"].is_string());
    someone
        .post("/v1/lti/keys/rotate", &json!({}))
        .await
        .problem(403, "forbidden")
        .await;

    // The platform takes client assertions signed with the new key.
    let session = launch_session(&lti, &learner("after-key-rotation")).await;
    take_quiz(
        &lti.signed_in(&session),
        session["destination"]["assignment_id"].as_str().unwrap(),
    )
    .await;
    lti.platform.scores(1).await;

    admin.delete(&registration).await.status(204).await;
    let flow = run_launch(&lti, &learner("after-removal")).await;
    assert_problem(flow.response, 422, "lti_unknown_registration").await;
}

#[tokio::test]
async fn the_command_line_registers_platforms_and_rotates_keys() {
    let app = TestApp::spawn_empty().await;
    let quizd = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_quizd"))
            .args(args)
            .env("DATABASE_URL", app.db_url())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let (ok, out) = quizd(&[
        "lti",
        "register",
        "--issuer",
        "https://moodle.example.edu",
        "--client-id",
        "abc123",
        "--deployment-id",
        "1",
        "--deployment-id",
        "2",
        "--auth-endpoint",
        "https://moodle.example.edu/mod/lti/auth.php",
        "--token-endpoint",
        "https://moodle.example.edu/mod/lti/token.php",
        "--jwks-url",
        "https://moodle.example.edu/mod/lti/certs.php",
    ]);
    assert!(ok, "{out}");
    assert!(out.contains("/v1/lti/login"), "{out}");
    let (ok, out) = quizd(&["lti", "list"]);
    assert!(
        ok && out.contains("client_id=abc123 deployments=1,2"),
        "{out}"
    );
    let (ok, out) = quizd(&[
        "lti",
        "register",
        "--issuer",
        "http://moodle.example.edu",
        "--client-id",
        "x",
        "--deployment-id",
        "1",
        "--auth-endpoint",
        "https://a.example",
        "--token-endpoint",
        "https://a.example",
        "--jwks-url",
        "https://a.example",
    ]);
    assert!(!ok && out.contains("https"), "{out}");
    let (ok, _) = quizd(&["lti", "keys"]);
    assert!(ok);
    let (ok, out) = quizd(&["lti", "rotate-key"]);
    assert!(ok, "{out}");
    let (ok, out) = quizd(&["lti", "keys"]);
    assert!(
        ok && out.contains("signing") && out.contains("retired"),
        "{out}"
    );
}
