//! The translation workflow: staleness, status per locale, XLIFF 2.1 export and import.

use serde_json::{Value, json};

use crate::support::{TINY_QUIZ, TestApp, assert_problem, expect_status, get_as, put_as};

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
    let author = app.person("translator@example.org", "instructor").await;
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

    let status = author
        .get("/v1/quizzes/tiny/translations")
        .await
        .status(200)
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
    let admin = app.person("admin@example.org", "admin").await;
    let status = admin
        .get("/v1/quizzes/data-parallelism/translations")
        .await
        .status(200)
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
    let author = app.person("owner@example.org", "instructor").await;
    let other = app.person("other@example.org", "instructor").await;
    crate::support::author_exam(&app, &author, "exam-t").await;
    // A private quiz does not exist for others; a public one is forbidden.
    other
        .get("/v1/quizzes/exam-t/translations")
        .await
        .problem(404, "quiz_not_found")
        .await;
    other
        .get("/v1/quizzes/data-parallelism/translations")
        .await
        .problem(403, "not_quiz_author")
        .await;
    assert_problem(
        app.get("/v1/quizzes/data-parallelism/translations").await,
        401,
        "unauthorized",
    )
    .await;
    author
        .get("/v1/quizzes/exam-t/translations")
        .await
        .status(200)
        .await;
    // The catalogue says which quizzes each may edit (and so read the translations of).
    let editable = |list: &Value| -> Vec<(String, bool)> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| {
                (
                    q["slug"].as_str().unwrap().to_string(),
                    q["editable"] == true,
                )
            })
            .collect()
    };
    let list = author.get("/v1/quizzes").await.status(200).await;
    let mine: Vec<String> = editable(&list)
        .into_iter()
        .filter_map(|(slug, e)| e.then_some(slug))
        .collect();
    assert_eq!(mine, ["exam-t"], "the seed quizzes are not theirs");
    let admin = app.person("admin@example.org", "admin").await;
    let list = admin.get("/v1/quizzes").await.status(200).await;
    assert!(editable(&list).iter().all(|(_, e)| *e), "{list}");
    assert_eq!(
        app.get_json("/v1/quizzes", 200).await["items"][0]["editable"],
        false
    );
}

/// A translation file as exported, checking its media type.
async fn get_file(app: &TestApp, token: &str, path: &str, media_type: &str) -> String {
    let res = get_as(app, token, path).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], media_type);
    res.text().await.unwrap()
}

/// A translation file sent back as `media_type`.
async fn put_file(
    app: &TestApp,
    token: &str,
    path: &str,
    media_type: &str,
    body: String,
) -> reqwest::Response {
    app.client
        .put(app.url(path))
        .bearer_auth(token)
        .header("content-type", media_type)
        .body(body)
        .send()
        .await
        .unwrap()
}

const XLIFF: &str = "application/xliff+xml";
const PO: &str = "text/x-gettext-translation";

async fn get_xliff(app: &TestApp, token: &str, path: &str) -> String {
    get_file(app, token, path, XLIFF).await
}

async fn put_xliff(app: &TestApp, token: &str, path: &str, body: String) -> reqwest::Response {
    put_file(app, token, path, XLIFF, body).await
}

#[tokio::test]
async fn an_xliff_round_trip_through_a_translators_edit_changes_the_served_text_in_a_new_version() {
    let app = TestApp::spawn().await;
    let admin = app.person("admin@example.org", "admin").await;
    let path = "/v1/quizzes/data-parallelism/versions/1/translations/bn.xlf";
    let xliff = get_xliff(&app, &admin.access, path).await;
    assert!(
        xliff.contains("<unit id=\"q.sync-collective.prompt\""),
        "{xliff}"
    );
    assert!(xliff.contains("state=\"translated\""));
    // Untranslated questions have no target yet.
    assert!(xliff.contains("<unit id=\"q.memory-limit.prompt\""));
    let before = app
        .get_json("/v1/quizzes/data-parallelism?lang=bn", 200)
        .await;
    let old = before["questions"][1]["prompt"]
        .as_str()
        .unwrap()
        .to_string();
    let edited = xliff.replace(
        &format!("<target>{old}</target>"),
        &format!("<target>{old} (সংশোধিত)</target>"),
    );
    assert_ne!(edited, xliff);
    let res = put_xliff(&app, &admin.access, path, edited).await;
    let saved = expect_status(res, 200).await;
    assert_eq!(saved["version"], 2);
    let after = app
        .get_json("/v1/quizzes/data-parallelism?lang=bn", 200)
        .await;
    assert_eq!(after["version"], 2);
    let q = &after["questions"][1];
    assert_eq!(q["prompt"], format!("{old} (সংশোধিত)"));
    assert_eq!(q["lang"], "bn");
    // Everything else is as it was, byte for byte.
    for (a, b) in before["questions"]
        .as_array()
        .unwrap()
        .iter()
        .zip(after["questions"].as_array().unwrap())
        .skip(2)
    {
        assert_eq!(a, b);
    }
    // The same document again changes nothing.
    let again = get_xliff(
        &app,
        &admin.access,
        "/v1/quizzes/data-parallelism/versions/2/translations/bn.xlf",
    )
    .await;
    let res = put_xliff(
        &app,
        &admin.access,
        "/v1/quizzes/data-parallelism/versions/2/translations/bn.xlf",
        again.clone(),
    )
    .await;
    assert_eq!(expect_status(res, 200).await["status"], "unchanged");
    // For the independent check (tests/xliff/check.py): the export as it is served.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("xliff-check");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("data-parallelism-bn.xlf"), &again).unwrap();
}

#[tokio::test]
async fn an_xliff_with_an_unknown_unit_or_a_changed_source_is_refused_naming_the_unit() {
    let app = TestApp::spawn().await;
    let admin = app.person("admin@example.org", "admin").await;
    let path = "/v1/quizzes/data-parallelism/versions/1/translations/id.xlf";
    let xliff = get_xliff(&app, &admin.access, path).await;
    let bad = xliff
        .replacen("<unit id=\"title\"", "<unit id=\"q.nope.prompt\"", 1)
        .replacen(
            "state=\"initial\">\n        <source>",
            "state=\"translated\">\n        <source>X",
            1,
        );
    let problem = assert_problem(
        put_xliff(&app, &admin.access, path, bad).await,
        422,
        "invalid_xliff_unit",
    )
    .await;
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains("unit 'q.nope.prompt'"), "{detail}");
    assert!(detail.contains("source no longer matches"), "{detail}");
    // Nothing was saved.
    assert_eq!(
        app.get_json("/v1/quizzes/data-parallelism", 200).await["version"],
        1
    );
    let broken = xliff.replace("</xliff>", "");
    assert_problem(
        put_xliff(&app, &admin.access, path, broken).await,
        400,
        "invalid_xliff",
    )
    .await;
    // The source locale is no translation target; a learner is no author.
    admin
        .get("/v1/quizzes/data-parallelism/versions/1/translations/en.xlf")
        .await
        .problem(404, "locale_not_found")
        .await;
    let learner = app.person("learner@example.org", "learner").await;
    learner
        .get(path)
        .await
        .problem(403, "not_quiz_author")
        .await;
}

#[tokio::test]
async fn a_billion_laughs_or_an_external_entity_is_refused_cheaply() {
    let app = TestApp::spawn().await;
    let admin = app.person("admin@example.org", "admin").await;
    let path = "/v1/quizzes/data-parallelism/versions/1/translations/bn.xlf";
    let mut entities = String::from("<!ENTITY l0 \"lol\">");
    for i in 1..10 {
        let prev = format!("&l{};", i - 1).repeat(10);
        entities.push_str(&format!("<!ENTITY l{i} \"{prev}\">"));
    }
    let laughs = format!(
        "<?xml version=\"1.0\"?><!DOCTYPE xliff [{entities}]>\
         <xliff xmlns=\"urn:oasis:names:tc:xliff:document:2.0\" version=\"2.1\" srcLang=\"en\" trgLang=\"bn\">\
         <file id=\"f\"><unit id=\"title\"><segment state=\"translated\"><source>&l9;</source>\
         <target>x</target></segment></unit></file></xliff>"
    );
    let xxe = "<?xml version=\"1.0\"?><!DOCTYPE xliff [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>\
         <xliff xmlns=\"urn:oasis:names:tc:xliff:document:2.0\" version=\"2.1\" srcLang=\"en\" trgLang=\"bn\">\
         <file id=\"f\"><unit id=\"title\"><segment state=\"translated\"><source>&e;</source>\
         <target>x</target></segment></unit></file></xliff>";
    for body in [laughs, xxe.to_string()] {
        let started = std::time::Instant::now();
        let problem = assert_problem(
            put_xliff(&app, &admin.access, path, body).await,
            400,
            "invalid_xliff",
        )
        .await;
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert!(
            !problem["detail"].as_str().unwrap().contains("root:"),
            "nothing read from a file"
        );
    }
    // Larger than the authoring limit: refused before parsing.
    let huge = format!("<xliff>{}</xliff>", "a".repeat(1024 * 1024 + 1));
    assert_problem(
        put_xliff(&app, &admin.access, path, huge).await,
        413,
        "payload_too_large",
    )
    .await;
    assert_eq!(
        app.get_json("/v1/quizzes/data-parallelism", 200).await["version"],
        1
    );
}

async fn get_po(app: &TestApp, token: &str, path: &str) -> String {
    get_file(app, token, path, PO).await
}

async fn put_po(app: &TestApp, token: &str, path: &str, body: String) -> reqwest::Response {
    put_file(app, token, path, PO, body).await
}

/// For the independent checks (tests/xliff/check.py): an export as it is served.
fn keep_for_check(name: &str, text: &str) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("xliff-check");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
}

#[tokio::test]
async fn a_po_round_trip_through_a_translators_edit_changes_the_served_text_in_a_new_version() {
    let app = TestApp::spawn().await;
    let admin = app.person("admin@example.org", "admin").await;
    let path = "/v1/quizzes/data-parallelism/versions/1/translations/bn.po";
    let po = get_po(&app, &admin.access, path).await;
    // The same version as XLIFF, for check.py to compare the two exports unit by unit.
    let xliff = get_xliff(
        &app,
        &admin.access,
        "/v1/quizzes/data-parallelism/versions/1/translations/bn.xlf",
    )
    .await;
    keep_for_check("data-parallelism-v1-bn.po", &po);
    keep_for_check("data-parallelism-v1-bn.xlf", &xliff);
    assert!(po.contains("msgctxt \"q.sync-collective.prompt\""), "{po}");
    assert!(po.contains("\"Language: bn\\n\""));
    let before = app
        .get_json("/v1/quizzes/data-parallelism?lang=bn", 200)
        .await;
    let old = before["questions"][1]["prompt"]
        .as_str()
        .unwrap()
        .to_string();
    let untranslated = before["questions"]
        .as_array()
        .unwrap()
        .iter()
        .position(|q| q["lang"] == "en")
        .expect("the seed leaves questions in English");
    let key = before["questions"][untranslated]["key"]
        .as_str()
        .unwrap()
        .to_string();
    let context = format!("msgctxt \"q.{key}.prompt\"\n");
    let at = po.find(&context).expect("the untranslated prompt's entry");
    let empty = po[at..].find("msgstr \"\"\n").unwrap() + at;
    let mut edited = po.clone();
    edited.replace_range(
        empty..empty + "msgstr \"\"\n".len(),
        "msgstr \"\"\n\"নতুন \\\"অনুবাদ\\\"\"\n",
    );
    let edited = edited.replace(
        &format!("msgstr \"{old}\""),
        &format!("msgstr \"{old} (সংশোধিত)\""),
    );
    assert!(edited.contains("(সংশোধিত)"));
    let saved = expect_status(put_po(&app, &admin.access, path, edited).await, 200).await;
    assert_eq!(saved["version"], 2);
    let after = app
        .get_json("/v1/quizzes/data-parallelism?lang=bn", 200)
        .await;
    assert_eq!(after["version"], 2);
    assert_eq!(after["questions"][1]["prompt"], format!("{old} (সংশোধিত)"));
    let q = &after["questions"][untranslated];
    assert_eq!(
        (q["prompt"].as_str(), q["lang"].as_str()),
        (Some("নতুন \"অনুবাদ\""), Some("bn"))
    );
    // The texts no entry changed are as they were, byte for byte.
    assert_eq!(before["title"], after["title"]);
    assert_eq!(before["questions"][0], after["questions"][0]);
    // The new version's export again changes nothing.
    let path = "/v1/quizzes/data-parallelism/versions/2/translations/bn.po";
    let again = get_po(&app, &admin.access, path).await;
    let res = put_po(&app, &admin.access, path, again).await;
    assert_eq!(expect_status(res, 200).await["status"], "unchanged");
}

#[tokio::test]
async fn a_stale_translation_is_exported_fuzzy_with_its_previous_msgid_and_imported_once_reviewed()
{
    let app = TestApp::spawn().await;
    let author = app.person("translator@example.org", "instructor").await;
    save(&app, &author.access, "Pick one", BN, true).await;
    save(&app, &author.access, "Pick exactly one", BN, false).await;
    let path = "/v1/quizzes/tiny/versions/2/translations/bn.po";
    let po = get_po(&app, &author.access, path).await;
    keep_for_check("tiny-v2-bn.po", &po);
    let xliff = get_xliff(&app, &author.access, &path.replace(".po", ".xlf")).await;
    keep_for_check("tiny-v2-bn.xlf", &xliff);
    assert!(
        po.contains(
            "#, fuzzy\n#| msgid \"Pick one\"\nmsgctxt \"q.q1.prompt\"\nmsgid \"Pick exactly \
             one\"\nmsgstr \"একটি বাছুন\"\n"
        ),
        "{po}"
    );
    // Still fuzzy: nothing changes.
    let res = put_po(&app, &author.access, path, po.clone()).await;
    assert_eq!(expect_status(res, 200).await["status"], "unchanged");
    // Reviewed (the flag removed): current again, served in Bengali.
    let reviewed = po.replace("#, fuzzy\n", "");
    let saved = expect_status(put_po(&app, &author.access, path, reviewed).await, 200).await;
    assert_eq!(saved["version"], 3);
    let quiz = app.get_json("/v1/quizzes/tiny?lang=bn", 200).await;
    assert_eq!(
        (
            quiz["questions"][0]["prompt"].as_str(),
            quiz["questions"][0]["lang"].as_str()
        ),
        (Some("একটি বাছুন"), Some("bn"))
    );
}

#[tokio::test]
async fn a_po_with_an_unknown_entry_a_changed_msgid_or_bad_syntax_is_refused_naming_entry_and_line()
{
    let app = TestApp::spawn().await;
    let admin = app.person("admin@example.org", "admin").await;
    let path = "/v1/quizzes/data-parallelism/versions/1/translations/id.po";
    let po = get_po(&app, &admin.access, path).await;
    let bad = po
        .replacen("msgctxt \"title\"", "msgctxt \"q.nope.prompt\"", 1)
        .replacen(
            "msgctxt \"intro\"\nmsgid \"",
            "msgctxt \"intro\"\nmsgid \"X",
            1,
        );
    let problem = assert_problem(
        put_po(&app, &admin.access, path, bad.clone()).await,
        422,
        "invalid_po_entry",
    )
    .await;
    let detail = problem["detail"].as_str().unwrap();
    let line = |needle: &str| bad[..bad.find(needle).unwrap()].matches('\n').count() + 1;
    // An entry starts at its first comment.
    let unknown = line("msgctxt \"q.nope.prompt\"") - 1;
    assert!(
        detail.contains(&format!(
            "entry 'q.nope.prompt' (line {unknown}): no such text"
        )),
        "{detail}"
    );
    assert!(
        detail.contains("entry 'intro'") && detail.contains("source no longer matches"),
        "{detail}"
    );
    let broken = po.replacen("msgstr \"", "msgstr \"\\q", 2);
    let problem = assert_problem(
        put_po(&app, &admin.access, path, broken.clone()).await,
        400,
        "invalid_po",
    )
    .await;
    // Reading stops at the first bad line (the header's here).
    let first = broken.find("msgstr \"\\q").unwrap();
    let n = broken[..first].matches('\n').count() + 1;
    assert_eq!(
        problem["detail"],
        format!("line {n}: the escape \\q is not read (only \\n \\t \\r \\\" \\\\)")
    );
    // Nothing was saved.
    assert_eq!(
        app.get_json("/v1/quizzes/data-parallelism", 200).await["version"],
        1
    );
    // Larger than the authoring limit: refused before parsing.
    let huge = format!("msgid \"\"\nmsgstr \"{}\"\n", "a".repeat(1024 * 1024));
    assert_problem(
        put_po(&app, &admin.access, path, huge).await,
        413,
        "payload_too_large",
    )
    .await;
    let res = put_file(&app, &admin.access, path, "application/json", po).await;
    assert_problem(res, 415, "unsupported_media_type").await;
}

#[tokio::test]
async fn an_author_who_keeps_stale_translations_has_them_served_while_still_reported_stale() {
    let app = TestApp::spawn().await;
    let author = app.person("keeper@example.org", "instructor").await;
    let keep = |prompt: &str| {
        json!({
            "quiz": TINY_QUIZ
                .replace("Pick one", prompt)
                .replace("visibility = \"public\"", "visibility = \"public\"\nkeep_stale_translations = true"),
            "translations": {"bn": BN},
        })
    };
    expect_status(
        crate::support::post_as(&app, &author.access, "/v1/quizzes", &keep("Pick one")).await,
        201,
    )
    .await;
    author
        .put("/v1/quizzes/tiny", &keep("Pick exactly one"))
        .await
        .status(200)
        .await;
    let quiz = app.get_json("/v1/quizzes/tiny?lang=bn", 200).await;
    let q = &quiz["questions"][0];
    assert_eq!(
        (q["prompt"].as_str(), q["lang"].as_str()),
        (Some("একটি বাছুন"), Some("bn"))
    );
    let status = author
        .get("/v1/quizzes/tiny/translations")
        .await
        .status(200)
        .await;
    assert_eq!(status["locales"][0]["stale"], 1);
    assert_eq!(
        status["locales"][0]["items"][1]["stale_texts"],
        json!(["q.q1.prompt"])
    );
    // Without the setting (the default) the same change falls back to English.
    save(&app, &author.access, "Pick one, again", BN, false).await;
    let quiz = app.get_json("/v1/quizzes/tiny?lang=bn", 200).await;
    assert_eq!(quiz["questions"][0]["lang"], "en");
}

fn quizd(app: &TestApp, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_quizd"))
        .args(args)
        .env("DATABASE_URL", app.db_url())
        .output()
        .unwrap()
}

#[tokio::test]
async fn the_command_line_exports_what_the_api_does_and_imports_a_translators_file_as_a_new_version()
 {
    let app = TestApp::spawn().await;
    let admin = app.person("admin@example.org", "admin").await;
    let dir = tempfile::tempdir().unwrap();
    let po_path = dir.path().join("bn.po");
    let po_file = po_path.to_str().unwrap();
    let out = quizd(
        &app,
        &[
            "translations",
            "export",
            "data-parallelism",
            "--locale",
            "bn",
            "-o",
            po_file,
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let po = std::fs::read_to_string(&po_path).unwrap();
    let path = "/v1/quizzes/data-parallelism/versions/1/translations/bn.po";
    assert_eq!(po, get_po(&app, &admin.access, path).await);
    let out = quizd(
        &app,
        &[
            "translations",
            "export",
            "data-parallelism",
            "--locale",
            "bn",
            "--version",
            "1",
        ],
    );
    assert!(out.status.success());
    let xliff = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        xliff,
        get_xliff(
            &app,
            &admin.access,
            "/v1/quizzes/data-parallelism/versions/1/translations/bn.xlf"
        )
        .await,
        "XLIFF by default"
    );

    // A refused file: non-zero, says which entry, saves nothing.
    let bad = po.replacen("msgctxt \"title\"", "msgctxt \"q.nope.prompt\"", 1);
    std::fs::write(&po_path, bad).unwrap();
    let out = quizd(
        &app,
        &[
            "translations",
            "import",
            "data-parallelism",
            "--locale",
            "bn",
            po_file,
        ],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("entry 'q.nope.prompt'"), "{stderr}");
    assert!(stderr.contains("nothing was imported"), "{stderr}");
    assert_eq!(
        app.get_json("/v1/quizzes/data-parallelism", 200).await["version"],
        1
    );

    // The translator's edit, through XLIFF this time.
    let before = app
        .get_json("/v1/quizzes/data-parallelism?lang=bn", 200)
        .await;
    let old = before["questions"][0]["prompt"]
        .as_str()
        .unwrap()
        .to_string();
    let xlf_path = dir.path().join("bn.xlf");
    std::fs::write(
        &xlf_path,
        xliff.replace(
            &format!("<target>{old}</target>"),
            "<target>নতুন প্রশ্ন</target>",
        ),
    )
    .unwrap();
    let out = quizd(
        &app,
        &[
            "translations",
            "import",
            "data-parallelism",
            "--locale",
            "bn",
            xlf_path.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("new version (version 2)"),
        "{:?}",
        out
    );
    // Read from the database (the served cache hears of the change asynchronously).
    let v2 = get_po(
        &app,
        &admin.access,
        "/v1/quizzes/data-parallelism/versions/2/translations/bn.po",
    )
    .await;
    let key = before["questions"][0]["key"].as_str().unwrap();
    let entry = &v2[v2.find(&format!("msgctxt \"q.{key}.prompt\"")).unwrap()..];
    let msgstr = entry.lines().find(|l| l.starts_with("msgstr ")).unwrap();
    assert_eq!(msgstr, "msgstr \"নতুন প্রশ্ন\"");
}
