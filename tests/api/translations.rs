//! The translation workflow: staleness, status per locale, XLIFF 2.1 export and import.

use serde_json::{Value, json};

use crate::support::{
    TINY_QUIZ, TestApp, assert_problem, expect_status, get_as, put_as, token_for,
};

const BN: &str = "title = \"ক্ষুদ্র\"\n\n[questions.q1]\nprompt = \"একটি বাছুন\"\n\n\
                  [questions.q1.options.a]\ntext = \"ক\"\n";

/// `PUT` (or `POST` when `create`) the tiny quiz with `prompt` and a Bengali translation.
async fn save(app: &TestApp, token: &str, prompt: &str, bn: &str, create: bool) -> Value {
    let body = json!({
        "quiz": TINY_QUIZ.replace("Pick one", prompt),
        "translations": {"bn": bn},
    });
    let res = if create {
        crate::support::post_as(app, token, "/v1/quizzes", &body).await
    } else {
        put_as(app, token, "/v1/quizzes/tiny", &body).await
    };
    let status = res.status().as_u16();
    assert!(status == 200 || status == 201, "{status}");
    res.json().await.unwrap()
}

fn bn_coverage(quiz: &Value) -> u64 {
    quiz["locales"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["locale"] == "bn")
        .unwrap()["translated"]
        .as_u64()
        .unwrap()
}

#[tokio::test]
async fn a_translation_whose_source_changed_is_stale_served_in_the_source_and_not_counted() {
    let app = TestApp::spawn().await;
    let author = token_for(&app, "translator@example.org", "instructor").await;
    save(&app, &author.access, "Pick one", BN, true).await;
    let quiz = app.get_json("/v1/quizzes/tiny?lang=bn", 200).await;
    assert_eq!(quiz["questions"][0]["lang"], "bn");
    let before = bn_coverage(&quiz);

    // The English prompt changes; the Bengali file does not.
    let saved = save(&app, &author.access, "Pick exactly one", BN, false).await;
    assert_eq!(saved["version"], 2);
    let quiz = app.get_json("/v1/quizzes/tiny?lang=bn", 200).await;
    let q = &quiz["questions"][0];
    assert_eq!(
        (q["prompt"].as_str(), q["lang"].as_str()),
        (Some("Pick exactly one"), Some("en"))
    );
    assert_eq!(
        q["options"][0]["lang"], "bn",
        "the option's translation is still current"
    );
    assert_eq!(bn_coverage(&quiz), before - 1);

    let status = expect_status(
        get_as(&app, &author.access, "/v1/quizzes/tiny/translations").await,
        200,
    )
    .await;
    let bn = &status["locales"][0];
    assert_eq!(bn["locale"], "bn");
    assert_eq!(
        (bn["stale"].as_u64(), bn["translated"].as_u64()),
        (Some(1), Some(before - 1))
    );
    assert_eq!(bn["items"][1]["question"], "q1");
    assert_eq!(bn["items"][1]["stale_texts"], json!(["q.q1.prompt"]));
    assert_eq!(bn["missing"], status["texts"].as_u64().unwrap() - before);

    // Saved again unchanged: still stale, no new version.
    let saved = save(&app, &author.access, "Pick exactly one", BN, false).await;
    assert_eq!(saved["status"], "unchanged");
    // The translator updates the prompt: current again.
    let updated = BN.replace("একটি বাছুন", "ঠিক একটি বাছুন");
    let saved = save(&app, &author.access, "Pick exactly one", &updated, false).await;
    assert_eq!(saved["version"], 3);
    let quiz = app.get_json("/v1/quizzes/tiny?lang=bn", 200).await;
    assert_eq!(quiz["questions"][0]["lang"], "bn");
    assert_eq!(bn_coverage(&quiz), before);
}

#[tokio::test]
async fn the_seed_quiz_is_fully_current_in_bengali_and_indonesian() {
    let app = TestApp::spawn().await;
    let admin = token_for(&app, "admin@example.org", "admin").await;
    let status = expect_status(
        get_as(
            &app,
            &admin.access,
            "/v1/quizzes/data-parallelism/translations",
        )
        .await,
        200,
    )
    .await;
    let catalogue = app.get_json("/v1/quizzes/data-parallelism", 200).await;
    for (i, locale) in ["bn", "id"].iter().enumerate() {
        let l = &status["locales"][i];
        assert_eq!(l["locale"], *locale);
        assert_eq!(l["stale"], 0);
        let covered = catalogue["locales"][i + 1]["translated"].clone();
        assert_eq!(
            l["translated"], covered,
            "coverage counts the current translations"
        );
    }
}

#[tokio::test]
async fn only_authors_and_admins_read_the_translation_status() {
    let app = TestApp::spawn().await;
    let author = token_for(&app, "owner@example.org", "instructor").await;
    let other = token_for(&app, "other@example.org", "instructor").await;
    crate::support::author_exam(&app, &author, "exam-t").await;
    // A private quiz does not exist for others; a public one is forbidden.
    assert_problem(
        get_as(&app, &other.access, "/v1/quizzes/exam-t/translations").await,
        404,
        "quiz_not_found",
    )
    .await;
    assert_problem(
        get_as(
            &app,
            &other.access,
            "/v1/quizzes/data-parallelism/translations",
        )
        .await,
        403,
        "not_quiz_author",
    )
    .await;
    assert_problem(
        app.get("/v1/quizzes/data-parallelism/translations").await,
        401,
        "unauthorized",
    )
    .await;
    expect_status(
        get_as(&app, &author.access, "/v1/quizzes/exam-t/translations").await,
        200,
    )
    .await;
}
