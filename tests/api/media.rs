//! Images in questions: served with the page that shows their question (an attempt, the quiz's
//! page), to whoever may see that page, and to nobody else.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{TestApp, content_dir, courses::assigned, session::Session};
use quizd::content::store::{Importer, import};

/// The seed image of `content/kinds-sampler` (its first question's).
fn seed_image() -> Vec<u8> {
    std::fs::read(content_dir().join("kinds-sampler/media/ring.png")).unwrap()
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// A PNG header of `w`×`h` followed by `fill` (quizd reads the type and the size only).
pub fn png(w: u32, h: u32, fill: u8) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    b.extend(w.to_be_bytes());
    b.extend(h.to_be_bytes());
    b.extend([8, 2, 0, 0, 0, fill]);
    b
}

/// Imports quiz `slug` from a directory of its own, as `author` (who then owns it): a fixed
/// question with image `fixed`, and a bank of two questions with images `one` and `two` that a
/// slot draws one of. Public with open practice, or private with none.
pub async fn import_pictures(app: &TestApp, author: uuid::Uuid, slug: &str, public: bool) {
    let visibility = if public {
        "visibility = \"public\"\n[practice]\nfeedback = \"immediate\"\n"
    } else {
        "visibility = \"private\"\n"
    };
    let question = |key: &str, file: &str| {
        format!(
            "key = \"{key}\"\nkind = \"true_false\"\nprompt = \"Is {key} a ring?\"\n\
             explanation = \"It is.\"\nanswer = true\nimage = \"media/{file}\"\n\
             image_alt = \"The diagram of {key}\"\n"
        )
    };
    let quiz = format!(
        "slug = \"{slug}\"\ntitle = \"Pictures\"\n{visibility}\n[[questions]]\n{}\n\
         [[questions]]\nbank = \"pool\"\ndraw = 1\n\n[[banks]]\nkey = \"pool\"\n\
         [[banks.questions]]\n{}\n[[banks.questions]]\n{}",
        question("fixed", "fixed.png"),
        question("one", "one.png"),
        question("two", "two.png"),
    );
    import_dir(app, author, &quiz, &[("fixed", 1), ("one", 2), ("two", 3)]).await;
}

/// Imports the quiz of `quiz_toml` from a directory of its own, with `media/<name>.png` made by
/// [`png`] for each (name, fill), as `author` (who then owns it).
async fn import_dir(app: &TestApp, author: uuid::Uuid, quiz_toml: &str, images: &[(&str, u8)]) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("quiz.toml"), quiz_toml).unwrap();
    std::fs::create_dir(dir.path().join("media")).unwrap();
    for (name, fill) in images {
        let path = dir.path().join(format!("media/{name}.png"));
        std::fs::write(path, png(4, 3, *fill)).unwrap();
    }
    let quizzes = quizd::content::load_dir(dir.path()).unwrap();
    let importer = Importer::Person {
        id: author,
        admin: false,
        create: true,
    };
    import(&app.pool, &quizzes, importer).await.unwrap();
}

/// `session`'s GET of `path` with `If-None-Match` when given: the response itself.
async fn fetch(session: &Session<'_>, path: &str, etag: Option<&str>) -> reqwest::Response {
    let mut req = session.request(Method::GET, path);
    if let Some(tag) = etag {
        req = req.header("if-none-match", tag);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn a_learner_sees_a_questions_image_in_their_attempts_locale_and_fetches_it_with_its_headers()
{
    let app = TestApp::spawn().await;
    let learner = app.learner().await;
    let attempt = learner
        .post(
            "/v1/quizzes/kinds-sampler/attempts",
            &json!({"locale": "id"}),
        )
        .await
        .status(201)
        .await;
    let id = attempt["id"].as_str().unwrap();
    let bytes = seed_image();
    let hash = sha256(&bytes);
    let with_image: Vec<&Value> = attempt["questions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| !q["image"].is_null())
        .collect();
    assert_eq!(with_image.len(), 1, "{attempt}");
    let image = &with_image[0]["image"];
    assert_eq!(image["url"], format!("/v1/attempts/{id}/media/{hash}"));
    assert_eq!(image["alt"]["lang"], "id");
    assert!(
        image["alt"]["text"]
            .as_str()
            .unwrap()
            .starts_with("Empat GPU"),
        "{image}"
    );
    assert_eq!(
        (image["width"].as_u64(), image["height"].as_u64()),
        (Some(360), Some(240))
    );
    // Untranslated questions say they are in English; the image says what its alt is in.
    assert_eq!(with_image[0]["lang"], "en");

    let url = image["url"].as_str().unwrap();
    let res = fetch(&learner, url, None).await;
    assert_eq!(res.status(), 200);
    let header = |res: &reqwest::Response, name: &str| {
        res.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
    };
    let etag = format!("\"{hash}\"");
    assert_eq!(header(&res, "content-type").as_deref(), Some("image/png"));
    assert_eq!(
        header(&res, "x-content-type-options").as_deref(),
        Some("nosniff")
    );
    assert_eq!(
        header(&res, "content-security-policy").as_deref(),
        Some("default-src 'none'; sandbox")
    );
    assert_eq!(
        header(&res, "cache-control").as_deref(),
        Some("private, max-age=31536000, immutable")
    );
    assert_eq!(header(&res, "etag").as_deref(), Some(etag.as_str()));
    assert_eq!(res.bytes().await.unwrap(), bytes);
    // The copy held is current: 304, no body, the same validators and caching.
    let again = fetch(&learner, url, Some(&etag)).await;
    assert_eq!(again.status(), 304);
    assert_eq!(header(&again, "etag").as_deref(), Some(etag.as_str()));
    assert_eq!(
        header(&again, "cache-control").as_deref(),
        Some("private, max-age=31536000, immutable")
    );
    assert!(again.bytes().await.unwrap().is_empty());
    // Another tag is not this image: the bytes again.
    assert_eq!(fetch(&learner, url, Some("\"other\"")).await.status(), 200);

    // Nobody else's attempt: another learner does not learn that it exists.
    let other = app.learner().await;
    other.get(url).await.problem(404, "attempt_not_found").await;
    // A hash the attempt does not show, or no hash at all, is unknown.
    let unknown = format!("/v1/attempts/{id}/media/{}", sha256(b"nothing"));
    learner
        .get(&unknown)
        .await
        .problem(404, "media_not_found")
        .await;
    let malformed = format!("/v1/attempts/{id}/media/..%2F..%2Fetc");
    learner
        .get(&malformed)
        .await
        .problem(404, "media_not_found")
        .await;
    // The quiz is public: its page shows the same image, to anyone, under its own path.
    let page = app.get_json("/v1/quizzes/kinds-sampler?lang=id", 200).await;
    let on_page = &page["questions"][0]["image"];
    assert_eq!(
        on_page["url"],
        format!("/v1/quizzes/kinds-sampler/media/{hash}")
    );
    assert_eq!(on_page["alt"]["lang"], "id");
    let res = app.get(on_page["url"].as_str().unwrap()).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.bytes().await.unwrap(), bytes);
}

#[tokio::test]
async fn an_image_of_a_bank_question_not_drawn_for_the_attempt_is_not_served() {
    let app = TestApp::spawn().await;
    let author = app.instructor().await;
    import_pictures(&app, author.id, "pictures", true).await;
    let learner = app.learner().await;
    let attempt = learner
        .post("/v1/quizzes/pictures/attempts", &json!({}))
        .await
        .status(201)
        .await;
    let id = attempt["id"].as_str().unwrap();
    let urls: Vec<String> = attempt["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["image"]["url"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(urls.len(), 2, "{attempt}");
    for url in &urls {
        let res = learner.get(url).await.response();
        assert_eq!(res.status(), 200, "{url}");
    }
    let drawn_two = urls.iter().any(|u| u.ends_with(&sha256(&png(4, 3, 3))));
    let undrawn = if drawn_two {
        png(4, 3, 2)
    } else {
        png(4, 3, 3)
    };
    let undrawn = format!("/v1/attempts/{id}/media/{}", sha256(&undrawn));
    learner
        .get(&undrawn)
        .await
        .problem(404, "media_not_found")
        .await;
    // The quiz's page lists the fixed question only, and so serves its image only.
    let page = app.get_json("/v1/quizzes/pictures", 200).await;
    assert_eq!(page["questions"].as_array().unwrap().len(), 1);
    let fixed = format!("/v1/quizzes/pictures/media/{}", sha256(&png(4, 3, 1)));
    assert_eq!(page["questions"][0]["image"]["url"], fixed);
    assert_eq!(app.get(&fixed).await.status(), 200);
    for bank in [png(4, 3, 2), png(4, 3, 3)] {
        let path = format!("/v1/quizzes/pictures/media/{}", sha256(&bank));
        learner
            .get(&path)
            .await
            .problem(404, "media_not_found")
            .await;
    }
}

#[tokio::test]
async fn the_xliff_and_po_exports_and_the_translation_status_carry_the_alt_text() {
    let app = TestApp::spawn().await;
    // The seed quizzes have no owner: admins author them.
    let admin = app.admin().await;
    let xliff = admin
        .get("/v1/quizzes/kinds-sampler/versions/1/translations/id.xlf")
        .await
        .response()
        .text()
        .await
        .unwrap();
    let unit = xliff
        .split("<unit ")
        .find(|u| u.starts_with("id=\"q.collective-library.image_alt\""))
        .unwrap_or_else(|| panic!("no unit for the alt text in {xliff}"));
    assert!(
        unit.contains("Four GPUs, labelled GPU 0 to GPU 3"),
        "{unit}"
    );
    assert!(unit.contains("Empat GPU, berlabel GPU 0"), "{unit}");
    let po = admin
        .get("/v1/quizzes/kinds-sampler/versions/1/translations/id.po")
        .await
        .response()
        .text()
        .await
        .unwrap();
    assert!(
        po.contains("msgctxt \"q.collective-library.image_alt\""),
        "{po}"
    );
    let status = admin
        .get("/v1/quizzes/kinds-sampler/translations")
        .await
        .status(200)
        .await;
    // In Indonesian, of that question only the alt text is translated.
    let question = status["locales"][0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["question"] == "collective-library")
        .unwrap()
        .clone();
    assert_eq!(question["translated"], 1, "{question}");
    let missing = question["missing_texts"].to_string();
    assert!(missing.contains("q.collective-library.prompt"), "{missing}");
    assert!(!missing.contains("image_alt"), "{missing}");
}

#[tokio::test]
async fn a_live_phone_gets_the_open_questions_image_though_it_left_an_earlier_one_unanswered_and_the_staff_get_theirs()
 {
    let app = TestApp::spawn().await;
    let teacher = app.instructor().await;
    let question = |key: &str| {
        format!(
            "[[questions]]\nkey = \"{key}\"\nkind = \"true_false\"\nprompt = \"Is {key} a ring?\"\n\
             explanation = \"It is.\"\nanswer = true\nimage = \"media/{key}.png\"\n\
             image_alt = \"The diagram of {key}\"\n"
        )
    };
    let quiz = format!(
        "slug = \"live-pictures\"\ntitle = \"Pictures\"\n\n{}\n{}",
        question("first"),
        question("second")
    );
    import_dir(&app, teacher.id, &quiz, &[("first", 1), ("second", 2)]).await;
    let policy = json!({"navigation": "sequential", "feedback": "on_finish"});
    let (learner, assignment) = assigned(&teacher, "live-pictures", policy).await;
    let live = format!("/v1/assignments/{assignment}/live");
    let session = teacher.post(&live, &json!({})).await.status(201).await;
    let joined = learner
        .post("/v1/live/join", &json!({"code": session["code"]}))
        .await
        .ok::<Value>()
        .await;
    let id = session["id"].as_str().unwrap();
    let attempt = joined["attempt_id"].as_str().unwrap();
    let image = |fill| format!("/v1/attempts/{attempt}/media/{}", sha256(&png(4, 3, fill)));
    // Before the session opens a question, no image of it (#32).
    assert_eq!(fetch(&learner, &image(1), None).await.status(), 404);
    // The first question opens and closes unanswered, then the second opens.
    for (what, body) in [
        ("next", json!({"seconds": 30})),
        ("close", json!({})),
        ("next", json!({"seconds": 30})),
    ] {
        let path = format!("/v1/live/sessions/{id}/{what}");
        teacher.post(&path, &body).await.ok::<Value>().await;
    }
    let url = image(2);
    let res = fetch(&learner, &url, None).await;
    assert_eq!(res.status(), 200, "the open question's image");
    assert_eq!(res.bytes().await.unwrap().as_ref(), png(4, 3, 2).as_slice());
    // Another learner's token gets nothing of this attempt.
    let other = app.learner().await;
    assert_eq!(fetch(&other, &url, None).await.status(), 404);
    // The projector's: the session's staff get its images, learners do not.
    let staff = format!("/v1/live/sessions/{id}/media/{}", sha256(&png(4, 3, 1)));
    let res = fetch(&teacher, &staff, None).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.bytes().await.unwrap().as_ref(), png(4, 3, 1).as_slice());
    assert_eq!(fetch(&learner, &staff, None).await.status(), 404);
}
