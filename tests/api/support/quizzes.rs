//! Quizzes and content: the seed content's directory, a one-question quiz, and writing quizzes
//! over the API.

use std::path::PathBuf;

use super::{Person, TestApp, expect_status, repo};

pub fn content_dir() -> PathBuf {
    repo().join("content")
}

/// [`TINY_QUIZ`] as a course exam: private, with no practice assignment.
pub fn private_quiz(slug: &str) -> String {
    TINY_QUIZ
        .replace("slug = \"tiny\"", &format!("slug = \"{slug}\""))
        .replace("visibility = \"public\"\n\n[practice]\n", "")
}

/// `author` writes [`private_quiz`] `slug` over the API (they own it).
pub async fn author_exam(app: &TestApp, author: &Person, slug: &str) {
    expect_status(
        send_quiz(app, &author.access, None, &private_quiz(slug)).await,
        201,
    )
    .await;
}

/// Sends a quiz in TOML (`POST /v1/quizzes`, or `PUT /v1/quizzes/{slug}` when `put`).
pub async fn send_quiz(
    app: &TestApp,
    token: &str,
    slug: Option<&str>,
    toml: &str,
) -> reqwest::Response {
    let req = match slug {
        Some(slug) => app.client.put(app.url(&format!("/v1/quizzes/{slug}"))),
        None => app.client.post(app.url("/v1/quizzes")),
    };
    req.bearer_auth(token)
        .header("content-type", "application/toml")
        .body(toml.to_string())
        .send()
        .await
        .unwrap()
}

/// A one-question quiz in the content format, for authoring and import tests.
pub const TINY_QUIZ: &str = r#"
slug = "tiny"
title = "Tiny"
visibility = "public"

[practice]

[[questions]]
key = "q1"
kind = "single"
prompt = "Pick one"
explanation = "Because."

[[questions.options]]
key = "a"
text = "A"
correct = true

[[questions.options]]
key = "b"
text = "B"
feedback = "Not B."
"#;
