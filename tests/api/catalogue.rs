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
    // Its intro line, to read before starting, as the quiz itself gives it.
    assert_eq!(dp["intro"]["text"], seed("bn").intro.as_str());
    assert_eq!(dp["intro"]["lang"], "bn");
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

/// The resident memory of this test process, in KiB (the server runs inside it).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status")
}

/// An `Accept-Language` of about `bytes` bytes: `lead` first, then distinct tags none of the
/// quizzes has (two or three letters after `x`, so every request's list differs by `salt`).
fn huge_accept_language(lead: &str, salt: usize, bytes: usize) -> String {
    let mut header = lead.to_string();
    let mut i = salt * 7919;
    while header.len() < bytes {
        let a = (b'a' + (i % 26) as u8) as char;
        let b = (b'a' + (i / 26 % 26) as u8) as char;
        header.push_str(&format!(", x{a}{b}-{};q=0.{}", i % 997, 1 + i % 8));
        i += 1;
    }
    header
}

#[tokio::test]
async fn an_accept_language_of_100_kb_is_answered_fast_and_leaves_memory_flat() {
    // The memory measured is the whole process's: measure where no other test runs.
    if !crate::support::alone() {
        let name =
            "catalogue::an_accept_language_of_100_kb_is_answered_fast_and_leaves_memory_flat";
        assert!(
            crate::support::passes_alone(name).await,
            "{name} failed alone"
        );
        return;
    }
    let app = TestApp::spawn().await;
    // actix refuses a request head over 128 KiB with 431 before quizd sees it; 100 KB passes.
    let too_big = huge_accept_language("id", 0, 140_000);
    let res = app
        .client
        .get(app.url("/v1/quizzes/data-parallelism"))
        .header("accept-language", too_big)
        .send()
        .await;
    if let Ok(res) = res {
        assert_eq!(res.status(), 431);
    }
    let warm = |salt: usize| {
        let header = huge_accept_language("fr, id;q=0.9", salt, 100_000);
        let client = app.client.clone();
        let url = app.url("/v1/quizzes/data-parallelism");
        async move {
            let res = client
                .get(url)
                .header("accept-language", header)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
            assert_eq!(res.headers()["content-language"], "id");
            let body: Value = res.json().await.unwrap();
            assert_eq!(body["locale"], "id");
            assert_eq!(body["title"]["lang"], "id");
        }
    };
    // A first round grows whatever grows once (buffers, the views in the locales asked).
    futures_util::future::join_all((0..16).map(warm)).await;
    let before = rss_kib();
    for round in 0..20 {
        futures_util::future::join_all((0..16).map(|i| warm(1000 + round * 16 + i))).await;
        // The catalogue too, which negotiates for every quiz.
        let header = huge_accept_language("bn", round, 100_000);
        let res = app
            .client
            .get(app.url("/v1/quizzes"))
            .header("accept-language", header)
            .send()
            .await
            .unwrap();
        let list: Value = res.json().await.unwrap();
        assert_eq!(list["items"][0]["locale"], "bn");
    }
    let after = rss_kib();
    // 340 distinct 100 KB lists: were they remembered, they would take tens of MiB.
    eprintln!("RSS before {before} KiB, after {after} KiB");
    assert!(
        after < before + 8 * 1024,
        "RSS grew from {before} KiB to {after} KiB"
    );
}

#[tokio::test]
async fn loading_more_versions_than_the_cache_holds_keeps_it_under_its_capacity() {
    let app = TestApp::spawn().await;
    let mut quizzes = quizd::content::load_dir(&crate::support::content_dir()).unwrap();
    quizzes.truncate(1);
    for i in 0..30 {
        quizzes[0]
            .title
            .insert("en".into(), format!("Data Parallelism, take {i}"));
        quizd::content::store::import(&app.pool, &quizzes, quizd::content::store::Importer::Files)
            .await
            .unwrap();
    }
    let ids: Vec<uuid::Uuid> =
        sqlx::query_scalar("SELECT id FROM quiz_versions ORDER BY created_at")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert!(ids.len() > 30);
    let one = quizd::quizzes::VersionCache::default()
        .get(&app.pool, ids[0])
        .await
        .unwrap()
        .unwrap()
        .approx_bytes() as u64;
    // Room for about three versions of this quiz.
    let capacity = 3 * one + one / 2;
    let cache = quizd::quizzes::VersionCache::with_capacity(capacity);
    let evicted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = evicted.clone();
    cache.on_evict(move |ids| {
        counter.fetch_add(ids.len(), std::sync::atomic::Ordering::Relaxed);
    });
    for _ in 0..2 {
        for id in &ids {
            let version = cache.get(&app.pool, *id).await.unwrap().unwrap();
            assert_eq!(version.id, *id, "an evicted version is loaded again");
            let (weight, cap, len) = cache.usage();
            // The capacity is split evenly between the shards, rounded up.
            assert!((capacity..capacity + 4).contains(&cap), "{cap}");
            assert!(weight <= cap, "{weight} > {cap}");
            assert!(len <= 4, "{len} versions held");
        }
    }
    assert!(evicted.load(std::sync::atomic::Ordering::Relaxed) >= ids.len());
}

#[tokio::test]
async fn a_client_holding_the_current_copy_gets_304_without_a_body_and_each_language_has_its_own_tag()
 {
    let app = TestApp::spawn().await;
    let get = |path: &'static str, lang: &'static str, tag: Option<String>| {
        let mut req = app
            .client
            .get(app.url(path))
            .header("accept-language", lang);
        if let Some(t) = tag {
            req = req.header("if-none-match", t);
        }
        req.send()
    };
    for path in ["/v1/quizzes", "/v1/quizzes/data-parallelism"] {
        let first = get(path, "bn", None).await.unwrap();
        assert_eq!(first.status(), 200);
        let h = first.headers().clone();
        let tag = h["etag"].to_str().unwrap().to_string();
        assert!(
            tag.starts_with('"') && !tag.starts_with("W/"),
            "strong: {tag}"
        );
        assert_eq!(h["cache-control"], "no-cache", "{path}");
        // The same tag whether the handler computed it with its cached body (a quiz) or the
        // middleware hashed the body (the catalogue).
        let body = first.bytes().await.unwrap();
        assert_eq!(tag, quizd::conditional::entity_tag(&body), "{path}");
        let vary = h["vary"].to_str().unwrap();
        assert!(
            vary.starts_with("Accept-Language, Authorization"),
            "{path}: {vary}"
        );

        let again = get(path, "bn", Some(tag.clone())).await.unwrap();
        assert_eq!(again.status(), 304, "{path}");
        assert_eq!(again.headers()["etag"].to_str().unwrap(), tag);
        assert!(again.headers().get("content-type").is_none());
        assert!(again.bytes().await.unwrap().is_empty());

        // Another language is another representation, with its own tag.
        let id = get(path, "id", Some(tag.clone())).await.unwrap();
        assert_eq!(id.status(), 200, "{path}");
        assert_ne!(id.headers()["etag"].to_str().unwrap(), tag);

        // A list of hundreds of tags is read only as far as the bound: a 200, cheaply.
        let many = vec!["\"x\""; 500].join(", ") + ", " + &tag;
        assert_eq!(get(path, "bn", Some(many)).await.unwrap().status(), 200);
    }
    // What says nothing of caching is not cached.
    let health = app.get("/readyz").await;
    assert_eq!(health.headers()["cache-control"], "no-store");
}
