//! Authoring over the API: validated like the importer, versioned, owned; the key only for staff.

use serde_json::{Value, json};

use crate::support::{TINY_QUIZ as QUIZ, TestApp, assert_problem, token_for};

async fn post_toml(
    app: &TestApp,
    token: &str,
    path: &str,
    put: bool,
    body: &str,
) -> reqwest::Response {
    let req = if put {
        app.client.put(app.url(path))
    } else {
        app.client.post(app.url(path))
    };
    req.bearer_auth(token)
        .header("content-type", "application/toml")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn an_instructor_creates_a_quiz_in_toml_and_changes_it_into_a_new_version() {
    let app = TestApp::spawn().await;
    let token = token_for(&app, "ada@example.org", "instructor")
        .await
        .access;
    let res = post_toml(&app, &token, "/v1/quizzes", false, QUIZ).await;
    assert_eq!(res.status(), 201);
    let body: Value = res.json().await.unwrap();
    assert_eq!(
        body,
        json!({"slug": "tiny", "version": 1, "status": "created"})
    );
    // The same content again changes nothing.
    let res = post_toml(&app, &token, "/v1/quizzes/tiny", true, QUIZ).await;
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["status"], "unchanged");
    // A change is a new version; the catalogue serves it, the old one stays readable.
    let changed = QUIZ.replace("Pick one", "Pick exactly one");
    let res = post_toml(&app, &token, "/v1/quizzes/tiny", true, &changed).await;
    let body: Value = res.json().await.unwrap();
    assert_eq!(
        body,
        json!({"slug": "tiny", "version": 2, "status": "new_version"})
    );
    let quiz = app.get_json("/v1/quizzes/tiny", 200).await;
    assert_eq!(quiz["questions"][0]["prompt"], "Pick exactly one");
    let v1: Value = app
        .client
        .get(app.url("/v1/quizzes/tiny/versions/1"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v1["questions"][0]["prompt"]["en"], "Pick one");
    assert_eq!(v1["questions"][0]["options"][0]["correct"], true);
    // Each version has its own practice assignment.
    assert!(quiz["practice_assignment_id"].is_string());
}

#[tokio::test]
async fn a_quiz_in_json_with_translations_is_validated_like_the_importer() {
    let app = TestApp::spawn().await;
    let token = token_for(&app, "ada@example.org", "admin").await.access;
    let quiz: toml::Value = toml::from_str(QUIZ).unwrap();
    let doc = json!({"quiz": quiz, "translations": {"bn": {"title": "ছোট"}}});
    let res = app
        .client
        .post(app.url("/v1/quizzes"))
        .bearer_auth(&token)
        .json(&doc)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let bn = app.get_json("/v1/quizzes/tiny?lang=bn", 200).await;
    assert_eq!(bn["title"], json!({"text": "ছোট", "lang": "bn"}));
    // Refused content: every problem named, nothing written.
    let bad = json!({"quiz": QUIZ.replace("correct = true", "").replace("slug = \"tiny\"", "slug = \"tiny2\""),
                     "translations": {"id": "[questions.q7]\nprompt = \"?\""}});
    let res = app
        .client
        .post(app.url("/v1/quizzes"))
        .bearer_auth(&token)
        .json(&bad)
        .send()
        .await
        .unwrap();
    let problem = assert_problem(res, 422, "invalid_content").await;
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.contains(
            "quiz.toml: question 'q1': a single-choice question needs exactly one correct option"
        ),
        "{detail}"
    );
    assert!(detail.contains("id.toml: question 'q7'"), "{detail}");
    assert_eq!(app.get("/v1/quizzes/tiny2").await.status(), 404);
}

#[tokio::test]
async fn learners_cannot_author_or_read_a_public_quizs_key() {
    let app = TestApp::spawn().await;
    let token = token_for(&app, "lee@example.org", "learner").await.access;
    assert_problem(
        post_toml(&app, &token, "/v1/quizzes", false, QUIZ).await,
        403,
        "forbidden",
    )
    .await;
    let res = app
        .client
        .get(app.url("/v1/quizzes/data-parallelism/versions/1"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_problem(res, 403, "key_forbidden").await;
    let res = app.get("/v1/quizzes/data-parallelism/versions/1").await;
    assert_problem(res, 401, "unauthorized").await;
}

#[tokio::test]
async fn only_its_authors_or_an_admin_change_a_quiz() {
    let app = TestApp::spawn().await;
    let owner = token_for(&app, "ada@example.org", "instructor")
        .await
        .access;
    let other = token_for(&app, "bob@example.org", "instructor")
        .await
        .access;
    let admin = token_for(&app, "root@example.org", "admin").await.access;
    assert_eq!(
        post_toml(&app, &owner, "/v1/quizzes", false, QUIZ)
            .await
            .status(),
        201
    );
    let changed = QUIZ.replace("Tiny", "Tiny 2");
    let res = post_toml(&app, &other, "/v1/quizzes/tiny", true, &changed).await;
    assert_problem(res, 403, "not_quiz_author").await;
    // Imported seed content has no owner: only admins change it.
    let seed =
        std::fs::read_to_string(crate::support::content_dir().join("data-parallelism/quiz.toml"))
            .unwrap();
    let res = post_toml(&app, &owner, "/v1/quizzes/data-parallelism", true, &seed).await;
    assert_problem(res, 403, "not_quiz_author").await;
    let res = post_toml(&app, &admin, "/v1/quizzes/tiny", true, &changed).await;
    assert_eq!(res.status(), 200);
    // Creating over someone else's slug is a conflict; the owner's own is a new version (here:
    // back to the first content); a slug that differs from the path is refused.
    assert_problem(
        post_toml(&app, &other, "/v1/quizzes", false, QUIZ).await,
        409,
        "slug_taken",
    )
    .await;
    let res = post_toml(&app, &owner, "/v1/quizzes", false, QUIZ).await;
    assert_eq!(res.status(), 200);
    let res = post_toml(&app, &admin, "/v1/quizzes/data-parallelism", true, QUIZ).await;
    assert_problem(res, 422, "slug_mismatch").await;
}
