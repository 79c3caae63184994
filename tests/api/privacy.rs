//! A person's own data (export, erasure) and the audit log.

use serde_json::{Value, json};

use crate::support::session::Session;
use crate::support::{
    PASSWORD, TestApp, assert_problem, author_exam, expect_status, login_request, register,
    register_unverified,
};

/// An exam (`never` shows the key) that `learner` has taken: one answer, finished. Returns the
/// attempt's id.
async fn exam_taken(app: &TestApp, teacher: &Session<'_>, learner: &Session<'_>) -> String {
    author_exam(app, teacher, "exam").await;
    let course = teacher
        .post("/v1/courses", &json!({"title": "C"}))
        .await
        .status(201)
        .await;
    let course = course["id"].as_str().unwrap();
    let a = teacher
        .post(
            &format!("/v1/courses/{course}/assignments"),
            &json!({"quiz": "exam", "policy": {"feedback": "never"}}),
        )
        .await
        .status(201)
        .await;
    teacher
        .post(
            &format!("/v1/courses/{course}/enrollments"),
            &json!({"user_id": learner.id}),
        )
        .await
        .status(201)
        .await;
    let attempt = learner
        .post(
            &format!("/v1/assignments/{}/attempts", a["id"].as_str().unwrap()),
            &json!({}),
        )
        .await
        .status(201)
        .await;
    let id = attempt["id"].as_str().unwrap().to_string();
    let q = &attempt["questions"][0];
    learner
        .put(
            &format!("/v1/attempts/{id}/responses/{}", q["id"].as_str().unwrap()),
            &json!({"selected": [q["options"][1]["id"]]}),
        )
        .await
        .status(200)
        .await;
    learner
        .post(&format!("/v1/attempts/{id}/finish"), &json!({}))
        .await
        .status(200)
        .await;
    id
}

#[tokio::test]
async fn a_person_exports_everything_quizd_holds_about_them_and_no_key() {
    let app = TestApp::spawn().await;
    let teacher = app.person("t@example.org", "instructor").await;
    let learner = app.person("l@example.org", "learner").await;
    let attempt = exam_taken(&app, &teacher, &learner).await;
    let res = learner.get("/v1/me/export").await.response();
    assert_eq!(res.headers()["cache-control"], "private, no-store");
    let text = res.text().await.unwrap();
    let export: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(export["person"]["email"], "l@example.org");
    assert_eq!(export["enrollments"][0]["role"], "learner");
    assert_eq!(export["attempts"][0]["id"], attempt);
    assert_eq!(export["attempts"][0]["quiz"], "exam");
    assert_eq!(export["attempts"][0]["answers"][0]["question"], "q1");
    assert_eq!(
        export["attempts"][0]["answers"][0]["answer"],
        json!({"selected": ["b"]})
    );
    // Under `never` the export tells no more than the review: the score, not which was right.
    for secret in ["\"correct\"", "explanation", "seed", "password"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    let teacher_export = teacher.get("/v1/me/export").await.status(200).await;
    assert_eq!(
        teacher_export["authored_quizzes"],
        json!([{"quiz": "exam", "role": "owner"}])
    );
}

#[tokio::test]
async fn erasure_removes_the_person_and_keeps_their_attempts_for_statistics() {
    let app = TestApp::spawn().await;
    let teacher = app.person("t@example.org", "instructor").await;
    let learner = app.person("l@example.org", "learner").await;
    let attempt = exam_taken(&app, &teacher, &learner).await;
    let erase = |body: Value| {
        learner
            .request(reqwest::Method::DELETE, "/v1/me")
            .json(&body)
            .send()
    };
    // A wrong password changes nothing.
    let wrong = erase(json!({"password": "wrong"})).await.unwrap();
    assert_problem(wrong, 401, "invalid_credentials").await;
    learner.get("/v1/me").await.status(200).await;

    expect_status(erase(json!({"password": PASSWORD})).await.unwrap(), 204).await;
    let login = login_request(&app, "l@example.org", PASSWORD).await;
    assert_problem(login, 401, "invalid_credentials").await;
    let res = app
        .client
        .post(app.url("/v1/auth/refresh"))
        .json(&json!({"refresh_token": learner.refresh}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    // The access token stopped working with the account.
    learner
        .get("/v1/me")
        .await
        .problem(401, "unauthorized")
        .await;
    assert_problem(erase(json!({})).await.unwrap(), 401, "unauthorized").await;

    // Nothing that names them is left; the attempt is, for the assignment's statistics.
    let (email, name, erased): (Option<String>, String, bool) = sqlx::query_as(
        "SELECT email, display_name, erased_at IS NOT NULL FROM users WHERE id = $1",
    )
    .bind(learner.id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        (email, name.as_str(), erased),
        (None, "Erased person", true)
    );
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM attempts WHERE id = $1::uuid")
        .bind(&attempt)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(kept, 1);
    let enrolled: i64 = sqlx::query_scalar("SELECT count(*) FROM enrollments WHERE user_id = $1")
        .bind(learner.id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(enrolled, 0);
    // The same email may sign up again, as a new person.
    let again = register(&app, "l@example.org").await;
    assert_ne!(again.id, learner.id);
}

#[tokio::test]
async fn the_audit_log_records_security_actions_for_admins_and_nothing_edits_it() {
    let app = TestApp::spawn().await;
    let admin = app.person("root@example.org", "admin").await;
    let owner = app.person("o@example.org", "instructor").await;
    let co = register(&app, "co@example.org").await;
    let ta = app.person("ta@example.org", "learner").await;
    admin
        .put(
            &format!("/v1/users/{}/role", co.id),
            &json!({"role": "instructor"}),
        )
        .await
        .status(200)
        .await;
    author_exam(&app, &owner, "exam").await;
    let res = owner
        .request(
            reqwest::Method::PUT,
            &format!("/v1/quizzes/exam/authors/{}", co.id),
        )
        .send()
        .await
        .unwrap();
    expect_status(res, 204).await;
    // Staff of a course reading the key is on record; the owner's own reads are not.
    let course = owner
        .post("/v1/courses", &json!({"title": "C"}))
        .await
        .status(201)
        .await;
    let course = course["id"].as_str().unwrap();
    for (path, body) in [
        (
            format!("/v1/courses/{course}/assignments"),
            json!({"quiz": "exam", "policy": {}}),
        ),
        (
            format!("/v1/courses/{course}/enrollments"),
            json!({"user_id": ta.id, "role": "instructor"}),
        ),
    ] {
        owner.post(&path, &body).await.status(201).await;
    }
    owner
        .get("/v1/quizzes/exam/versions/1")
        .await
        .status(200)
        .await;
    ta.get("/v1/quizzes/exam/versions/1")
        .await
        .status(200)
        .await;

    let log = admin.get("/v1/audit").await.status(200).await;
    let actions: Vec<&str> = log["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["key_read", "coauthor_added", "role_changed"],
        "{log:#}"
    );
    let key_read = &log["items"][0];
    assert_eq!(key_read["actor_id"], ta.id.to_string());
    assert_eq!(key_read["detail"], json!({"quiz": "exam", "version": 1}));
    assert_eq!(key_read["address"], "127.0.0.1");
    let role = &log["items"][2];
    assert_eq!(
        (&role["actor_id"], &role["subject_id"]),
        (&json!(admin.id), &json!(co.id))
    );
    assert_eq!(role["detail"], json!({"to": "instructor"}));
    // Filters and pages.
    let only = admin
        .get(&format!(
            "/v1/audit?action=coauthor_added&subject={}",
            co.id
        ))
        .await
        .status(200)
        .await;
    assert_eq!(only["items"].as_array().unwrap().len(), 1);
    let page = admin.get("/v1/audit?limit=2").await.status(200).await;
    let before = page["next_before"].as_i64().unwrap();
    let rest = admin
        .get(&format!("/v1/audit?limit=2&before={before}"))
        .await
        .status(200)
        .await;
    assert_eq!(rest["items"][0]["action"], "role_changed");
    assert!(rest["next_before"].is_null());
    admin
        .get("/v1/audit?limit=0")
        .await
        .problem(400, "invalid_limit")
        .await;
    // Admins only; and not even the database's owner edits it.
    owner.get("/v1/audit").await.problem(403, "forbidden").await;
    for statement in [
        "UPDATE audit_log SET action = 'key_read'",
        "DELETE FROM audit_log",
        "TRUNCATE audit_log",
    ] {
        let err = sqlx::query(statement).execute(&app.pool).await.unwrap_err();
        assert!(
            err.to_string().contains("append-only"),
            "{statement}: {err}"
        );
    }
}

/// `DELETE /v1/me` confirmed with [`PASSWORD`].
async fn erase(person: &Session<'_>) {
    person
        .request(reqwest::Method::DELETE, "/v1/me")
        .json(&json!({"password": PASSWORD}))
        .send()
        .await
        .map(|res| assert_eq!(res.status(), 204))
        .unwrap();
}

#[tokio::test]
async fn an_erased_persons_access_token_stops_working_at_once_on_every_instance() {
    let app = TestApp::spawn().await;
    let other = app.another_instance().await;
    let learner = app.person("l@example.org", "learner").await;
    // Through the other instance first, so that it has seen the account alive.
    let elsewhere = other.bearer_session(&learner.access);
    elsewhere.get("/v1/me").await.status(200).await;
    elsewhere
        .patch("/v1/me", &json!({"display_name": "Before"}))
        .await
        .status(200)
        .await;

    erase(&learner).await;
    learner
        .get("/v1/me")
        .await
        .problem(401, "unauthorized")
        .await;
    learner
        .patch("/v1/me", &json!({"display_name": "Still here"}))
        .await
        .problem(401, "unauthorized")
        .await;
    learner
        .patch("/v1/me", &json!({"locale": "id"}))
        .await
        .problem(401, "unauthorized")
        .await;
    // The other instance hears of it through PostgreSQL within moments, not 15 minutes.
    let mut refused = false;
    for _ in 0..20 {
        let res = elsewhere
            .patch("/v1/me", &json!({"display_name": "Still here"}))
            .await;
        if res.status_code() == 401 {
            refused = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        refused,
        "the other instance still takes the erased person's token"
    );
    let name: String = sqlx::query_scalar("SELECT display_name FROM users WHERE id = $1")
        .bind(learner.id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(name, "Erased person");
}

#[tokio::test]
async fn erasure_deletes_the_addresss_invitations_and_its_audit_entry_keeps_only_the_opaque_id() {
    let app = TestApp::spawn().await;
    let admin = app.person("root@example.org", "admin").await;
    let teacher = app.person("t@example.org", "instructor").await;
    let course = teacher
        .post("/v1/courses", &json!({"title": "C"}))
        .await
        .status(201)
        .await;
    let course = course["id"].as_str().unwrap();
    // Not verified: enrolling the address invites it.
    let learner = app.session(register_unverified(&app, "l@example.org").await);
    teacher
        .post(
            &format!("/v1/courses/{course}/enrollments"),
            &json!({"email": "l@example.org"}),
        )
        .await
        .status(202)
        .await;

    erase(&learner).await;
    let left: (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM invitations WHERE email = 'l@example.org'),
                (SELECT count(*) FROM email_verifications WHERE email = 'l@example.org')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(left, (0, 0));
    let pending = teacher
        .get(&format!("/v1/courses/{course}/invitations"))
        .await
        .status(200)
        .await;
    assert_eq!(pending["items"], json!([]));
    let audit = admin
        .get("/v1/audit?action=account_erased")
        .await
        .status(200)
        .await;
    let entry = &audit["items"][0];
    assert_eq!(entry["actor_id"], learner.id.to_string());
    assert_eq!(entry["subject_id"], learner.id.to_string());
    assert_eq!(entry["address"], Value::Null);
    assert_eq!(entry["detail"], json!({}));
}

#[tokio::test]
async fn a_learners_export_shows_staff_by_role_and_name_never_by_address_or_id() {
    let app = TestApp::spawn().await;
    let teacher = app.person("t@example.org", "instructor").await;
    let learner = app.person("l@example.org", "learner").await;
    let attempt = exam_taken(&app, &teacher, &learner).await;
    teacher
        .put(
            &format!("/v1/attempts/{attempt}/grade"),
            &json!({"points": 0, "reason": "Copied."}),
        )
        .await
        .status(200)
        .await;
    let assignment: uuid::Uuid =
        sqlx::query_scalar("SELECT assignment_id FROM attempts WHERE id = $1::uuid")
            .bind(&attempt)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    teacher
        .put(
            &format!("/v1/assignments/{assignment}/overrides/{}", learner.id),
            &json!({"extra_attempts": 1}),
        )
        .await
        .status(200)
        .await;

    let text = learner
        .get("/v1/me/export")
        .await
        .response()
        .text()
        .await
        .unwrap();
    // (The test people's display names hold their addresses, so only the field is looked for.)
    for staff in [
        "127.0.0.1",
        "\"email\":\"t@example.org\"",
        &teacher.id.to_string(),
    ] {
        assert!(!text.contains(staff), "{staff} in {text}");
    }
    let export: Value = serde_json::from_str(&text).unwrap();
    let audit = export["audit"].as_array().unwrap();
    assert!(audit.len() >= 2, "{audit:?}");
    for entry in audit {
        assert_eq!(entry["by_you"], false, "{entry}");
        assert_eq!(entry["actor_role"], "instructor", "{entry}");
        assert_eq!(entry["actor_name"], "Person t@example.org", "{entry}");
    }
    let events = export["attempts"][0]["grade_events"].as_array().unwrap();
    let by_staff = events.iter().find(|e| e["kind"] == "override").unwrap();
    assert_eq!(by_staff["actor_role"], "instructor");
    // The learner's own export still shows their own address where they acted.
    let own = teacher.get("/v1/me/export").await.status(200).await;
    assert!(
        own["audit"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["by_you"] == true && e["address"] == "127.0.0.1"),
        "{own}"
    );
}
