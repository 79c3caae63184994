//! Profiles and roles: what a person changes of themselves, and role changes by admins.

use serde_json::json;
use uuid::Uuid;

use crate::support::{TestApp, expect_status};

use super::{claims_of, refreshed};

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
    let refreshed_person = app.bearer_session(&access);
    let created = refreshed_person.post("/v1/courses", &course).await;
    let created = created.status(201).await;
    assert_eq!(created["my_role"], "instructor");

    // Demoted again: the next refreshed token can no longer create courses.
    admin.put(&role, &to("learner")).await.status(200).await;
    let (access, _) = refreshed(&app, &refresh_token).await;
    assert_eq!(claims_of(&access)["role"], "learner");
    let demoted = app.bearer_session(&access);
    let res = demoted.post("/v1/courses", &course).await;
    res.problem(403, "forbidden").await;
    // Teaching is a role in the course, not the site role: the course they made is still theirs.
    let course_id = created["id"].as_str().unwrap();
    let res = demoted
        .get(&format!("/v1/courses/{course_id}/enrollments"))
        .await;
    res.status(200).await;
}
