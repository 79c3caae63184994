//! The read side of the catalogue: the seed quiz in three languages, negotiation, fallback.

use serde_json::Value;

use crate::support::{TestApp, assert_problem, repo};

/// A seed document: title, intro, and eight questions with their options, as written.
struct Seed {
    title: String,
    intro: String,
    questions: Vec<(String, Vec<String>)>,
}

fn seed(locale: &str) -> Seed {
    let path = repo().join(format!(
        "tests/fixtures/seeds/data-parallelism.{locale}.txt"
    ));
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut questions: Vec<(String, Vec<String>)> = Vec::new();
    for line in &lines[3..] {
        if let Some(option) = line.strip_prefix("   • ") {
            questions.last_mut().unwrap().1.push(option.to_string());
        } else if let Some((n, prompt)) = line.split_once(". ")
            && n.parse::<u32>().is_ok()
        {
            questions.push((prompt.to_string(), Vec::new()));
        }
    }
    Seed {
        title: lines[0].to_string(),
        intro: lines[2].to_string(),
        questions,
    }
}

/// Questions the seeds leave in English (1-based).
const UNTRANSLATED: [usize; 5] = [3, 4, 6, 7, 8];

async fn assert_matches_seed(app: &TestApp, locale: &str) {
    let res = app
        .get(&format!("/v1/quizzes/data-parallelism?lang={locale}"))
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-language"], locale);
    let quiz: Value = res.json().await.unwrap();
    let seed = seed(locale);
    assert_eq!(quiz["locale"], locale);
    assert_eq!(quiz["title"]["text"], seed.title.as_str());
    assert_eq!(quiz["title"]["lang"], locale);
    assert_eq!(quiz["intro"]["text"], seed.intro.as_str());
    let questions = quiz["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 8);
    assert_eq!(seed.questions.len(), 8);
    for (i, (q, (prompt, options))) in questions.iter().zip(&seed.questions).enumerate() {
        let served_lang = if UNTRANSLATED.contains(&(i + 1)) {
            "en"
        } else {
            locale
        };
        assert_eq!(q["prompt"], prompt.as_str(), "question {}", i + 1);
        assert_eq!(q["lang"], served_lang, "question {}", i + 1);
        assert_eq!(q["kind"], "single");
        let served: Vec<&str> = q["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                assert_eq!(o["lang"], served_lang, "question {} option", i + 1);
                o["text"].as_str().unwrap()
            })
            .collect();
        assert_eq!(served, *options, "question {} options", i + 1);
    }
}

#[tokio::test]
async fn the_seed_quiz_in_bengali_is_exactly_the_seed_document_with_english_fallback_marked() {
    let app = TestApp::spawn().await;
    assert_matches_seed(&app, "bn").await;
}

#[tokio::test]
async fn the_seed_quiz_in_indonesian_is_exactly_the_seed_document_with_english_fallback_marked() {
    let app = TestApp::spawn().await;
    assert_matches_seed(&app, "id").await;
}

#[tokio::test]
async fn the_seed_quiz_in_english_is_english_throughout_and_keeps_the_seeds_english_questions() {
    let app = TestApp::spawn().await;
    let quiz = app
        .get_json("/v1/quizzes/data-parallelism?lang=en", 200)
        .await;
    assert_eq!(quiz["locale"], "en");
    assert_eq!(quiz["title"]["text"], "Data Parallelism Quiz");
    let bn = seed("bn");
    let questions = quiz["questions"].as_array().unwrap();
    for (i, q) in questions.iter().enumerate() {
        assert_eq!(q["lang"], "en");
        assert_eq!(q["options"].as_array().unwrap().len(), 4);
        if UNTRANSLATED.contains(&(i + 1)) {
            assert_eq!(q["prompt"], bn.questions[i].0.as_str());
        }
        for o in q["options"].as_array().unwrap() {
            assert_eq!(o["lang"], "en");
            assert!(!o["text"].as_str().unwrap().is_empty());
        }
    }
}

#[tokio::test]
async fn accept_language_is_negotiated_with_q_values_and_regional_tags() {
    let app = TestApp::spawn().await;
    let cases = [
        ("id;q=0.9, bn;q=0.8", "id"),
        ("bn;q=0.2, id;q=0.9", "id"),
        ("bn-BD, en;q=0.5", "bn"),
        ("fr, de;q=0.8", "en"),
        ("*", "en"),
        ("", "en"),
    ];
    for (header, expected) in cases {
        let res = app
            .client
            .get(app.url("/v1/quizzes/data-parallelism"))
            .header("accept-language", header)
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["content-language"], expected, "{header}");
        assert!(
            res.headers()["vary"]
                .to_str()
                .unwrap()
                .contains("Accept-Language")
        );
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["locale"], expected, "{header}");
    }
}

#[tokio::test]
async fn the_lang_parameter_wins_over_accept_language() {
    let app = TestApp::spawn().await;
    let res = app
        .client
        .get(app.url("/v1/quizzes/data-parallelism?lang=id"))
        .header("accept-language", "bn")
        .send()
        .await
        .unwrap();
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["locale"], "id");
}

#[tokio::test]
async fn an_unsupported_lang_is_served_in_the_fallback_and_says_so() {
    let app = TestApp::spawn().await;
    let res = app
        .client
        .get(app.url("/v1/quizzes/data-parallelism?lang=fr"))
        .header("accept-language", "bn")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["locale"], "bn");
    let body = app
        .get_json("/v1/quizzes/data-parallelism?lang=zh-Hant-TW", 200)
        .await;
    assert_eq!(body["locale"], "en");
    assert_eq!(body["title"]["lang"], "en");
}

#[tokio::test]
async fn a_malformed_or_empty_lang_is_ignored_like_an_unsupported_one() {
    let app = TestApp::spawn().await;
    for lang in ["%3Cscript%3E", ""] {
        let res = app
            .client
            .get(app.url(&format!("/v1/quizzes/data-parallelism?lang={lang}")))
            .header("accept-language", "id")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["locale"], "id", "{lang}: the header still decides");
    }
}

#[tokio::test]
async fn an_unknown_quiz_is_404() {
    let app = TestApp::spawn().await;
    for slug in [
        "no-such-quiz",
        "Data-Parallelism",
        "..%2F..%2Fetc",
        "x%00y",
        "a'%20OR%201=1",
    ] {
        let res = app.get(&format!("/v1/quizzes/{slug}")).await;
        assert_problem(res, 404, "quiz_not_found").await;
    }
}

#[tokio::test]
async fn the_catalogue_lists_each_quiz_with_its_locales_and_their_coverage() {
    let app = TestApp::spawn().await;
    let list = app.get_json("/v1/quizzes?lang=bn", 200).await;
    let items = list["items"].as_array().unwrap();
    let slugs: Vec<&str> = items.iter().map(|q| q["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs, ["data-parallelism", "kinds-sampler"]);
    let dp = &items[0];
    assert_eq!(dp["title"]["text"], seed("bn").title.as_str());
    assert_eq!(dp["title"]["lang"], "bn");
    assert_eq!(dp["question_count"], 8);
    assert_eq!(dp["version"], 1);
    let locales: Vec<&str> = dp["locales"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["locale"].as_str().unwrap())
        .collect();
    assert_eq!(locales, ["en", "bn", "id"]);
    let coverage = |i: usize| {
        let l = &dp["locales"][i];
        (
            l["translated"].as_u64().unwrap(),
            l["total"].as_u64().unwrap(),
        )
    };
    let (en, total) = coverage(0);
    assert_eq!(en, total);
    // Title, intro, and questions 1, 2 and 5: prompt, explanation, 4 options, 3 feedbacks.
    assert_eq!(coverage(1), (2 + 3 * 9, total));
    assert_eq!(coverage(2), (2 + 3 * 9, total));
    // The other quiz has no Bengali: its title falls back and says so.
    assert_eq!(items[1]["title"]["lang"], "en");
    assert_eq!(items[1]["locale"], "en");
}

/// Every text of a quiz that would tell a learner the answer: explanations, feedback, the
/// keys of its options (which may hint), and the names of key fields.
fn key_material(quiz: &quizd::content::QuizContent) -> Vec<String> {
    let mut out: Vec<String> = [
        "\"correct",
        "\"explanation",
        "\"feedback",
        "\"answer",
        "\"accepted",
        "\"wrong_feedback",
    ]
    .map(String::from)
    .to_vec();
    let question_keys: Vec<&str> = quiz.questions.iter().map(|q| q.key.as_str()).collect();
    for q in &quiz.questions {
        out.extend(q.explanation.values().cloned());
        for o in &q.options {
            if !question_keys.contains(&o.key.as_str())
                && !["true", "false"].contains(&o.key.as_str())
            {
                out.push(format!("\"{}\"", o.key));
            }
            out.extend(o.feedback.iter().flat_map(|f| f.values().cloned()));
        }
        out.extend(q.wrong_feedback.iter().flat_map(|f| f.values().cloned()));
    }
    out
}

#[tokio::test]
async fn no_catalogue_response_in_any_locale_contains_key_material() {
    let app = TestApp::spawn().await;
    let quizzes = quizd::content::load_dir(&crate::support::content_dir()).unwrap();
    for lang in ["en", "bn", "id", "fr"] {
        let list = app
            .get(&format!("/v1/quizzes?lang={lang}"))
            .await
            .text()
            .await
            .unwrap();
        for quiz in &quizzes {
            let path = format!("/v1/quizzes/{}?lang={lang}", quiz.slug);
            let body = app.get(&path).await.text().await.unwrap();
            for f in key_material(quiz) {
                assert!(!body.contains(f.as_str()), "{path} contains {f}");
                assert!(
                    !list.contains(f.as_str()),
                    "the catalogue in {lang} contains {f}"
                );
            }
        }
    }
}

#[tokio::test]
async fn the_sampler_quiz_shows_every_question_kind() {
    let app = TestApp::spawn().await;
    let quiz = app.get_json("/v1/quizzes/kinds-sampler", 200).await;
    let kinds: Vec<&str> = quiz["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["kind"].as_str().unwrap())
        .collect();
    for kind in ["single", "multiple", "true_false", "numeric", "short_text"] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    let tf = quiz["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["kind"] == "true_false")
        .unwrap();
    let labels: Vec<&str> = tf["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["text"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["True", "False"]);
}
