//! Questions in and out of other systems: Moodle XML, GIFT and Aiken import
//! (`POST /v1/quizzes/import`) and export (`GET /v1/quizzes/{slug}/versions/{n}/export`).

use serde_json::{Value, json};

use crate::support::{TestApp, assert_problem, bearer, expect_status, get_as};

/// A Moodle XML export in the shape Moodle 4 writes it (written for these tests): a category
/// (no random question draws from it), two multichoice (single, multiple answer), truefalse, numerical, shortanswer and an essay.
const GEOGRAPHY: &str = include_str!("../fixtures/moodle/geography.xml");

async fn import(
    app: &TestApp,
    token: &str,
    query: &str,
    content_type: &str,
    body: &str,
) -> reqwest::Response {
    bearer(
        app,
        reqwest::Method::POST,
        &format!("/v1/quizzes/import?{query}"),
        token,
    )
    .header("content-type", content_type)
    .body(body.to_string())
    .send()
    .await
    .unwrap()
}

async fn export(app: &TestApp, token: &str, slug: &str, n: i32, format: &str) -> reqwest::Response {
    get_as(
        app,
        token,
        &format!("/v1/quizzes/{slug}/versions/{n}/export?format={format}"),
    )
    .await
}

fn en(v: &Value) -> &Value {
    &v["en"]
}

#[tokio::test]
async fn a_moodle_xml_export_becomes_a_private_quiz_and_the_report_names_the_skipped_essay() {
    let app = TestApp::spawn().await;
    let author = app.person("moodle@example.org", "instructor").await;
    let report = expect_status(
        import(
            &app,
            &author.access,
            "slug=geography&title=Geography%20101",
            "application/xml",
            GEOGRAPHY,
        )
        .await,
        201,
    )
    .await;
    assert_eq!(report["version"], 1);
    assert_eq!(report["format"], "moodle-xml");
    assert_eq!(report["imported"]["count"], 5);
    assert_eq!(
        report["imported"]["keys"],
        json!([
            "capital-of-france",
            "landlocked",
            "nile-length",
            "everest-height",
            "longest-river"
        ])
    );
    // Its category has no random question: no bank, its questions are fixed.
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0]["kind"], "essay");
    assert_eq!(skipped[0]["name"], "Climate essay");
    assert_eq!(skipped[0]["line"], 207);
    assert_eq!(report["notes"], json!([]), "50/50/−50 maps exactly");

    // Private: nobody else sees it.
    assert_problem(
        app.get("/v1/quizzes/geography").await,
        404,
        "quiz_not_found",
    )
    .await;
    let v = author
        .get("/v1/quizzes/geography/versions/1")
        .await
        .status(200)
        .await;
    assert_eq!(en(&v["title"]), "Geography 101");
    let q = &v["questions"];
    assert_eq!(en(&q[0]["prompt"]), "What is the capital of France?");
    assert_eq!(
        en(&q[0]["explanation"]),
        "Paris has been the capital since 987 & still is."
    );
    assert_eq!(q[0]["kind"], "single");
    assert_eq!(q[0]["options"][0]["correct"], true);
    assert_eq!(
        en(&q[0]["options"][1]["feedback"]),
        "Lyon is the third-largest city."
    );
    assert_eq!(
        (&q[1]["kind"], &q[1]["points"]),
        (&json!("multiple"), &json!(2.0))
    );
    let correct: Vec<bool> = q[1]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["correct"].as_bool().unwrap())
        .collect();
    assert_eq!(correct, [true, true, false]);
    assert_eq!(q[2]["kind"], "true_false");
    assert_eq!(
        en(&q[2]["wrong_feedback"]),
        "Look at a map: its mouth is in Egypt."
    );
    assert_eq!(
        q[3]["numeric"],
        json!({"answer": 8849.0, "tolerance": 10.0})
    );
    assert_eq!(en(&q[3]["wrong_feedback"]), "It is close to 9 km.");
    assert_eq!(
        q[4]["short_text"]["accepted"],
        json!(["Amazon", "Amazonas"])
    );
}

#[tokio::test]
async fn a_refused_import_says_why_by_question_and_line_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let author = app.person("refused@example.org", "instructor").await;
    // One question without general feedback: quizd needs an explanation.
    let no_explanation = GEOGRAPHY.replace(
        "<p>Paris has been the capital since 987 &amp; still is.</p>",
        "",
    );
    let p = assert_problem(
        import(
            &app,
            &author.access,
            "slug=geography",
            "application/xml",
            &no_explanation,
        )
        .await,
        422,
        "invalid_content",
    )
    .await;
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains("question 'Capital of France' (line 15): explanation is empty"),
        "{detail}"
    );
    assert!(
        detail.contains("skipped essay 'Climate essay' (line 207)"),
        "{detail}"
    );

    let bomb = "<?xml version=\"1.0\"?>\n<!DOCTYPE quiz [\n<!ENTITY a \"aaaaaaaaaa\">\n\
                <!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">\n<!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">\n]>\n<quiz>&c;</quiz>";
    let p = assert_problem(
        import(
            &app,
            &author.access,
            "slug=geography",
            "application/xml",
            bomb,
        )
        .await,
        422,
        "invalid_import",
    )
    .await;
    assert!(p["detail"].as_str().unwrap().contains("DTD"), "{p}");
    let external = "<?xml version=\"1.0\"?><!DOCTYPE quiz [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><quiz>&x;</quiz>";
    assert_problem(
        import(&app, &author.access, "slug=geography", "text/xml", external).await,
        422,
        "invalid_import",
    )
    .await;
    let gift = "::a::Fine?{T####Yes.}\n\n::b::Broken {=yes ~no\n";
    let p = assert_problem(
        import(
            &app,
            &author.access,
            "slug=geography&format=gift",
            "text/plain",
            gift,
        )
        .await,
        422,
        "invalid_import",
    )
    .await;
    assert!(p["detail"].as_str().unwrap().starts_with("line 3:"), "{p}");
    assert_problem(
        import(&app, &author.access, "slug=geography", "text/plain", gift).await,
        422,
        "import_format_mismatch",
    )
    .await;
    assert_problem(
        import(
            &app,
            &author.access,
            "slug=geography",
            "application/json",
            "{}",
        )
        .await,
        415,
        "unsupported_media_type",
    )
    .await;
    let huge = format!("<quiz>{}</quiz>", " ".repeat(1024 * 1024));
    assert_problem(
        import(
            &app,
            &author.access,
            "slug=geography",
            "application/xml",
            &huge,
        )
        .await,
        413,
        "payload_too_large",
    )
    .await;
    let learner = app.person("learner@example.org", "learner").await;
    let res = import(
        &app,
        &learner.access,
        "slug=geography",
        "application/xml",
        GEOGRAPHY,
    )
    .await;
    assert_eq!(res.status(), 403);

    // Nothing was created.
    author
        .get("/v1/quizzes/geography")
        .await
        .problem(404, "quiz_not_found")
        .await;
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM quizzes WHERE slug = 'geography'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(count, 0);
}

#[tokio::test]
async fn the_export_is_for_the_quizs_authors_and_admins_and_refused_to_a_learner_or_a_stranger() {
    let app = TestApp::spawn().await;
    let author = app.person("exporter@example.org", "instructor").await;
    expect_status(
        import(
            &app,
            &author.access,
            "slug=geography",
            "application/xml",
            GEOGRAPHY,
        )
        .await,
        201,
    )
    .await;
    let res = export(&app, &author.access, "geography", 1, "moodle-xml").await;
    assert_eq!(res.status(), 200);
    let headers = res.headers().clone();
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/xml")
    );
    assert_eq!(headers["cache-control"], "private, no-store");
    assert_eq!(headers["content-language"], "en");
    assert!(
        headers["content-disposition"]
            .to_str()
            .unwrap()
            .contains("geography-v1.xml")
    );
    let body = res.text().await.unwrap();
    assert!(body.contains("<idnumber>landlocked</idnumber>"), "{body}");
    assert!(body.contains("<answer fraction=\"50\""), "{body}");
    let gift = export(&app, &author.access, "geography", 1, "gift").await;
    assert_eq!(gift.status(), 200);
    assert!(gift.text().await.unwrap().contains("::landlocked::"));
    assert_problem(
        export(&app, &author.access, "geography", 1, "aiken").await,
        400,
        "invalid_query",
    )
    .await;
    assert_problem(
        export(&app, &author.access, "geography", 9, "gift").await,
        404,
        "version_not_found",
    )
    .await;

    // A private quiz does not exist for anyone else; a public one's key is not theirs.
    let learner = app.person("curious@example.org", "learner").await;
    let stranger = app.person("stranger@example.org", "instructor").await;
    for who in [&learner, &stranger] {
        assert_problem(
            export(&app, &who.access, "geography", 1, "moodle-xml").await,
            404,
            "quiz_not_found",
        )
        .await;
        assert_problem(
            export(&app, &who.access, "kinds-sampler", 1, "gift").await,
            403,
            "not_quiz_author",
        )
        .await;
    }
    let anonymous = app
        .get("/v1/quizzes/kinds-sampler/versions/1/export?format=gift")
        .await;
    assert_eq!(anonymous.status(), 401);
    let admin = app.person("admin@example.org", "admin").await;
    let res = export(&app, &admin.access, "kinds-sampler", 1, "gift").await;
    assert_eq!(res.status(), 200);
    // The admin's read of a key that is not theirs is on record.
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action = 'key_read' AND detail->>'export' = 'gift'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(audited, 1);
}

/// The parts of a question that an export and an import carry: everything but option keys
/// and translations (and, through GIFT, case sensitivity and a numeric question's wrong
/// feedback, which GIFT cannot say).
fn carried(q: &Value, gift: bool) -> Value {
    let options: Vec<Value> = q["options"]
        .as_array()
        .map(|os| {
            os.iter()
                .map(|o| json!([o["text"]["en"], o["correct"], o["feedback"]["en"]]))
                .collect()
        })
        .unwrap_or_default();
    let mut short = q["short_text"].clone();
    let mut wrong = q["wrong_feedback"]["en"].clone();
    if gift {
        if let Some(s) = short.as_object_mut() {
            s.insert("case_sensitive".into(), json!(false));
        }
        if q["kind"] == "numeric" {
            wrong = Value::Null;
        }
    }
    json!({
        "key": q["key"], "kind": q["kind"], "points": q["points"],
        "prompt": q["prompt"]["en"], "explanation": q["explanation"]["en"],
        "options": options, "numeric": q["numeric"], "short_text": short, "wrong_feedback": wrong,
    })
}

#[tokio::test]
async fn a_quiz_exported_and_imported_again_through_http_is_the_same_quiz() {
    let app = TestApp::spawn().await;
    let admin = app.person("roundtrip@example.org", "admin").await;
    let original = admin
        .get("/v1/quizzes/kinds-sampler/versions/1")
        .await
        .status(200)
        .await;
    for (format, content_type, slug) in [
        ("moodle-xml", "application/xml", "kinds-moodle"),
        ("gift", "text/plain", "kinds-gift"),
    ] {
        let res = export(&app, &admin.access, "kinds-sampler", 1, format).await;
        let body = res.text().await.unwrap();
        let report = expect_status(
            import(
                &app,
                &admin.access,
                &format!("slug={slug}&format={format}&title=Copy"),
                content_type,
                &body,
            )
            .await,
            201,
        )
        .await;
        assert_eq!(report["skipped"], json!([]), "{format}");
        let copy = admin
            .get(&format!("/v1/quizzes/{slug}/versions/1"))
            .await
            .status(200)
            .await;
        let gift = format == "gift";
        let want: Vec<Value> = original["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| carried(q, gift))
            .collect();
        let got: Vec<Value> = copy["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| carried(q, gift))
            .collect();
        assert_eq!(got, want, "{format}");
        // Translations stay in quizd: the copy has the source locale only.
        assert_eq!(copy["locales"], json!(["en"]));
    }
}

#[tokio::test]
async fn importing_again_makes_a_new_version_for_the_author_and_the_slug_stays_theirs() {
    let app = TestApp::spawn().await;
    let author = app.person("again@example.org", "instructor").await;
    let aiken = "Which planet is largest?\nA. Mars\nB. Jupiter\nANSWER: B\n";
    let p = assert_problem(
        import(
            &app,
            &author.access,
            "slug=planets&format=aiken",
            "text/plain",
            aiken,
        )
        .await,
        422,
        "invalid_content",
    )
    .await;
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("explanation_default"),
        "{p}"
    );
    let report = expect_status(
        import(
            &app,
            &author.access,
            "slug=planets&format=aiken&title=Planets&explanation_default=See%20the%20textbook.",
            "text/plain",
            aiken,
        )
        .await,
        201,
    )
    .await;
    assert_eq!(report["imported"]["keys"], json!(["q1"]));
    assert_eq!(report["notes"][0]["question"], "q1");

    let gift =
        "::largest::Which planet is largest?{=Jupiter ~Mars#Mars is small.####Jupiter is.}\n";
    let report = expect_status(
        import(
            &app,
            &author.access,
            "slug=planets&format=gift",
            "text/plain",
            gift,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (&report["version"], &report["status"]),
        (&json!(2), &json!("new_version"))
    );
    let v = author
        .get("/v1/quizzes/planets/versions/2")
        .await
        .status(200)
        .await;
    assert_eq!(v["title"]["en"], "Planets", "the title is kept");
    assert_eq!(v["visibility"], "private");

    let other = app.person("other@example.org", "instructor").await;
    assert_problem(
        import(
            &app,
            &other.access,
            "slug=planets&format=gift",
            "text/plain",
            gift,
        )
        .await,
        409,
        "slug_taken",
    )
    .await;
}

#[tokio::test]
async fn a_qti_package_exported_with_every_language_is_imported_again_as_the_same_quiz() {
    let app = TestApp::spawn().await;
    let admin = app.person("qti@example.org", "admin").await;
    let learner = app.person("qti-learner@example.org", "learner").await;
    let original = admin
        .get("/v1/quizzes/data-parallelism/versions/1")
        .await
        .status(200)
        .await;
    // The package holds the key: a learner is refused it like every export.
    let refused = export(&app, &learner.access, "data-parallelism", 1, "qti3").await;
    assert!(
        [403, 404].contains(&refused.status().as_u16()),
        "{}",
        refused.status()
    );
    let res = export(&app, &admin.access, "data-parallelism", 1, "qti3").await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/zip");
    let package = res.bytes().await.unwrap();
    assert_eq!(&package[..2], b"PK", "a zip");
    let report = expect_status(
        bearer(
            &app,
            reqwest::Method::POST,
            "/v1/quizzes/import?slug=dp-from-qti",
            &admin.access,
        )
        .header("content-type", "application/zip")
        .body(package.to_vec())
        .send()
        .await
        .unwrap(),
        201,
    )
    .await;
    assert_eq!(report["format"], "qti3");
    assert_eq!(report["skipped"], json!([]));
    assert_eq!(report["imported"]["count"], 8);
    let copy = admin
        .get("/v1/quizzes/dp-from-qti/versions/1")
        .await
        .status(200)
        .await;
    // Every language comes back, each text as it was (the untranslated ones still untranslated).
    assert_eq!(copy["locales"], original["locales"]);
    assert_eq!(copy["questions"], original["questions"]);
    // A package that is not a zip is refused, naming why, and imports nothing.
    let bad = bearer(
        &app,
        reqwest::Method::POST,
        "/v1/quizzes/import?slug=not-a-package",
        &admin.access,
    )
    .header("content-type", "application/zip")
    .body(b"PK\x03\x04 not really a zip".to_vec())
    .send()
    .await
    .unwrap();
    assert_problem(bad, 422, "invalid_import").await;
    let missing = admin.get("/v1/quizzes/not-a-package").await.response();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn import_is_the_endpoints_name_and_no_quizs_slug() {
    let app = TestApp::spawn().await;
    let admin = app.person("reserved@example.org", "admin").await;
    let gift = "::sum:: What is 2 + 2? {=4 ~5 ####Two and two make four.}\n";
    let refused = import(
        &app,
        &admin.access,
        "slug=import&format=gift",
        "text/plain",
        gift,
    )
    .await;
    let problem = assert_problem(refused, 422, "invalid_content").await;
    assert!(
        problem["detail"].as_str().unwrap().contains("reserved"),
        "{problem}"
    );
    // Another method on the endpoint is a 405 that names only POST.
    let get = admin.get("/v1/quizzes/import").await.response();
    assert_eq!(get.headers()["allow"], "POST");
    assert_problem(get, 405, "method_not_allowed").await;
}

/// text2qti's Canvas QTI 1.2 package (`tests/qti/fixtures/canvas-text2qti`): told from QTI
/// 2.1/3.0 by its documents, imported with its essay and file upload reported skipped, and the
/// key stays with the quiz's author.
#[tokio::test]
async fn a_canvas_qti_1_2_package_imports_as_a_private_quiz_and_reports_what_it_skipped() {
    let app = TestApp::spawn().await;
    let admin = app.person("canvas@example.org", "admin").await;
    let learner = app.person("canvas-learner@example.org", "learner").await;
    let zip = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/qti/fixtures/canvas-text2qti/quiz.zip"),
    )
    .unwrap();
    let post = |token: String, body: Vec<u8>| {
        let app = &app;
        async move {
            bearer(
                app,
                reqwest::Method::POST,
                "/v1/quizzes/import?slug=from-canvas&title=From%20Canvas",
                &token,
            )
            .header("content-type", "application/zip")
            .body(body)
            .send()
            .await
            .unwrap()
        }
    };
    assert_problem(
        post(learner.access.clone(), zip.clone()).await,
        403,
        "forbidden",
    )
    .await;
    let report = expect_status(post(admin.access.clone(), zip.clone()).await, 201).await;
    assert_eq!(report["format"], "qti12");
    assert_eq!(report["imported"]["count"], 7);
    assert_eq!(report["imported"]["keys"][0], "shards");
    let skipped: Vec<&str> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(skipped, ["essay_question", "file_upload_question"]);
    let quiz = admin
        .get("/v1/quizzes/from-canvas/versions/1")
        .await
        .status(200)
        .await;
    assert_eq!(en(&quiz["title"]), "From Canvas");
    assert_eq!(quiz["questions"][0]["options"][1]["correct"], true);
    // A private quiz: the learner does not see it at all.
    let hidden = learner.get("/v1/quizzes/from-canvas").await.response();
    assert_eq!(hidden.status(), 404);
    // Half a package imports nothing.
    let half = post(admin.access.clone(), zip[..zip.len() / 2].to_vec()).await;
    assert_problem(half, 422, "invalid_import").await;
}

/// A form part: its name, file name, content type and bytes.
type Part<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a [u8]);

/// A `multipart/form-data` body of the parts given.
fn form(parts: &[Part]) -> (String, Vec<u8>) {
    let boundary = "quizd-form-boundary-7d1f";
    let mut body = Vec::new();
    for (name, filename, content_type, bytes) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        let filename = filename.map_or(String::new(), |f| format!("; filename=\"{f}\""));
        body.extend_from_slice(
            format!("Content-Disposition: form-data; name=\"{name}\"{filename}\r\n").as_bytes(),
        );
        if let Some(t) = content_type {
            body.extend_from_slice(format!("Content-Type: {t}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// An HTML form's upload: the file part's content type, or its name, says the format; a
/// `format` field names GIFT; a second file, another part or no file is refused, importing
/// nothing; the body limit is the same as a bare body's.
#[tokio::test]
async fn a_file_uploaded_through_a_form_imports_as_the_same_file_sent_alone_would() {
    let app = TestApp::spawn().await;
    let author = app.person("form@example.org", "instructor").await;
    let post = |query: &'static str, (content_type, body): (String, Vec<u8>)| {
        let app = &app;
        let token = author.access.clone();
        async move {
            bearer(
                app,
                reqwest::Method::POST,
                &format!("/v1/quizzes/import?{query}"),
                &token,
            )
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap()
        }
    };
    // Moodle XML by its part's content type.
    let xml = GEOGRAPHY.as_bytes();
    let report = expect_status(
        post(
            "slug=form-moodle",
            form(&[("file", Some("export.xml"), Some("application/xml"), xml)]),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(report["format"], "moodle-xml");
    assert_eq!(report["imported"]["count"], 5);
    // A Canvas zip by its file name alone (a browser may send application/octet-stream).
    let zip = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/qti/fixtures/canvas-text2qti/quiz.zip"),
    )
    .unwrap();
    let report = expect_status(
        post(
            "slug=form-canvas",
            form(&[(
                "file",
                Some("quiz.zip"),
                Some("application/octet-stream"),
                &zip,
            )]),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(report["format"], "qti12");
    assert_eq!(report["imported"]["count"], 7);
    // GIFT named by the form's `format` field.
    let gift = b"::sum:: What is 2 + 2? {=4 ~5 ####Two and two make four.}\n";
    let report = expect_status(
        post(
            "slug=form-gift",
            form(&[
                ("format", None, None, b"gift"),
                ("file", Some("questions"), Some("text/plain"), gift),
            ]),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(report["format"], "gift");
    assert_eq!(report["imported"]["keys"], json!(["sum"]));

    let file = ("file", Some("a.gift"), Some("text/plain"), gift.as_slice());
    for (parts, why) in [
        (vec![file, file], "more than one `file` part"),
        (
            vec![file, ("comment", None, None, b"hi".as_slice())],
            "a part 'comment'",
        ),
        (
            vec![("format", None, None, b"gift".as_slice())],
            "no `file` part",
        ),
    ] {
        let problem = assert_problem(
            post("slug=form-refused", form(&parts)).await,
            400,
            "invalid_upload_form",
        )
        .await;
        assert!(
            problem["detail"].as_str().unwrap().contains(why),
            "{problem}"
        );
    }
    let unnamed = form(&[("file", Some("blob"), Some("application/octet-stream"), gift)]);
    assert_problem(
        post("slug=form-refused", unnamed).await,
        422,
        "import_format_mismatch",
    )
    .await;
    let (content_type, mut broken) = form(&[file]);
    broken.truncate(broken.len() - 20);
    assert_problem(
        post("slug=form-refused", (content_type, broken)).await,
        400,
        "invalid_upload_form",
    )
    .await;
    let big = vec![b'x'; (1 << 20) + 1];
    let too_big = form(&[("file", Some("a.gift"), Some("text/plain"), &big)]);
    assert_eq!(post("slug=form-refused", too_big).await.status(), 413);
    let missing = author.get("/v1/quizzes/form-refused").await.response();
    assert_eq!(missing.status(), 404);
}
