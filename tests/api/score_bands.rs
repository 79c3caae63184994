//! Feedback by score band (`[[score_bands]]`): the band a finished attempt's percentage falls
//! in, at its boundaries, in the attempt's locale or its fallback, translated through PO like
//! every text; never beside an attempt whose score is not shown (in progress).

use serde_json::{Value, json};

use crate::support::courses::assigned;
use crate::support::session::Session;
use crate::support::{TestApp, expect_status};

/// A private exam of five true/false questions (the key: all true), 1 point each, with three
/// bands.
fn banded_quiz() -> String {
    let mut s = String::from(
        "slug = \"banded\"\ntitle = \"Banded\"\n\n\
         [[score_bands]]\nmin = 0\ntext = \"Review the chapter.\"\n\n\
         [[score_bands]]\nmin = 60\ntext = \"You pass.\"\n\n\
         [[score_bands]]\nmin = 80\ntext = \"Excellent.\"\n",
    );
    for i in 1..=5 {
        s += &format!(
            "\n[[questions]]\nkey = \"q{i}\"\nkind = \"true_false\"\nprompt = \"Statement {i}?\"\n\
             explanation = \"It holds.\"\nanswer = true\n"
        );
    }
    s
}

/// The teacher's exam, its Bengali translation of the top band (through the PO workflow), and
/// an enrolled learner with an assignment under `policy`.
async fn exam(app: &TestApp, policy: Value) -> (Session<'_>, String) {
    let teacher = app.person("teacher@example.org", "instructor").await;
    teacher
        .send_quiz(None, &banded_quiz())
        .await
        .status(201)
        .await;
    let path = "/v1/quizzes/banded/versions/1/translations/bn.po";
    let po = expect_text(teacher.get(path).await.response()).await;
    let entry = "msgctxt \"score_band.80\"\nmsgid \"Excellent.\"\nmsgstr \"\"";
    assert!(po.contains(entry), "{po}");
    let po = po.replace(
        entry,
        "msgctxt \"score_band.80\"\nmsgid \"Excellent.\"\nmsgstr \"চমৎকার।\"",
    );
    let res = teacher
        .request(reqwest::Method::PUT, path)
        .header("content-type", "text/x-gettext-translation")
        .body(po)
        .send()
        .await
        .unwrap();
    expect_status(res, 200).await;

    assigned(&teacher, "banded", policy).await
}

async fn expect_text(res: reqwest::Response) -> String {
    assert_eq!(res.status(), 200);
    res.text().await.unwrap()
}

/// Takes an attempt in `locale`, answering `right` questions right and the others wrong;
/// returns the attempt's view as it is before finishing and the finish's.
async fn take(
    learner: &Session<'_>,
    assignment: &str,
    locale: &str,
    right: usize,
) -> (Value, Value) {
    let path = format!("/v1/assignments/{assignment}/attempts");
    let attempt = learner
        .post(&path, &json!({"locale": locale}))
        .await
        .status(201)
        .await;
    let id = attempt["id"].as_str().unwrap();
    for (n, q) in attempt["questions"].as_array().unwrap().iter().enumerate() {
        // The options are True, then False.
        let option = &q["options"][if n < right { 0 } else { 1 }]["id"];
        let path = format!("/v1/attempts/{id}/responses/{}", q["id"].as_str().unwrap());
        let body = json!({"selected": [option]});
        let _: Value = learner.put(&path, &body).await.ok().await;
    }
    let before = learner
        .get(&format!("/v1/attempts/{id}"))
        .await
        .status(200)
        .await;
    let path = format!("/v1/attempts/{id}/finish");
    let finished = learner.post(&path, &json!({})).await.status(200).await;
    let again = learner
        .get(&format!("/v1/attempts/{id}"))
        .await
        .status(200)
        .await;
    assert_eq!(again["score_feedback"], finished["score_feedback"]);
    (before, finished)
}

#[tokio::test]
async fn a_finished_attempt_gets_the_feedback_of_its_score_band_at_each_boundary_in_its_locale() {
    let app = TestApp::spawn().await;
    let (learner, assignment) = exam(&app, json!({"feedback": "on_finish"})).await;
    // 4 of 5 is exactly 80 %: the top band, translated into Bengali.
    let (before, after) = take(&learner, &assignment, "bn", 4).await;
    assert_eq!(after["result"]["percentage"], 80.0);
    assert_eq!(
        after["score_feedback"],
        json!({"text": "চমৎকার।", "lang": "bn"})
    );
    // Before the finish there is no score, and no band feedback beside it.
    assert_eq!(before["state"], "in_progress");
    assert!(before["result"].is_null() && before["score_feedback"].is_null());
    assert!(!before.to_string().contains("Excellent") && !before.to_string().contains("চমৎকার"));
    // 3 of 5 is exactly 60 %: the middle band, untranslated, so in English, saying so.
    let (_, after) = take(&learner, &assignment, "bn", 3).await;
    assert_eq!(after["result"]["percentage"], 60.0);
    assert_eq!(
        after["score_feedback"],
        json!({"text": "You pass.", "lang": "en"})
    );
    // 2 of 5 (40 %) and 0 of 5: the band from 0.
    for right in [2, 0] {
        let (_, after) = take(&learner, &assignment, "en", right).await;
        assert_eq!(
            after["score_feedback"],
            json!({"text": "Review the chapter.", "lang": "en"})
        );
    }
    // 5 of 5 in English: the top band in the source language.
    let (_, after) = take(&learner, &assignment, "en", 5).await;
    assert_eq!(
        after["score_feedback"],
        json!({"text": "Excellent.", "lang": "en"})
    );
}

#[tokio::test]
async fn bands_out_of_order_are_refused_over_the_api_naming_the_band() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teacher@example.org", "instructor").await;
    let unsorted = banded_quiz().replace("min = 60", "min = 90");
    let body = teacher.send_quiz(None, &unsorted).await.status(422).await;
    assert!(
        body.to_string().contains("bands go by ascending min"),
        "{body}"
    );
}
