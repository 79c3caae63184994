//! The content pipeline: the seed content, every refused case, idempotent versioned import.

use quizd::content::store::{ImportStatus, import};
use quizd::content::{QuestionKind, QuizSource, SourceFile, compile, load_dir};
use serde_json::Value;

use crate::support::{TINY_QUIZ as QUIZ, TestApp, content_dir};

fn source(quiz: &str, translations: &[(&str, &str)]) -> QuizSource {
    QuizSource {
        quiz: SourceFile {
            name: "content/tiny/quiz.toml".into(),
            text: quiz.into(),
        },
        translations: translations
            .iter()
            .map(|(locale, text)| {
                (
                    locale.to_string(),
                    SourceFile {
                        name: format!("content/tiny/{locale}.toml"),
                        text: text.to_string(),
                    },
                )
            })
            .collect(),
    }
}

/// Compiles, expecting refusal; returns the messages.
fn refused(quiz: &str, translations: &[(&str, &str)]) -> Vec<String> {
    match compile(&source(quiz, translations)) {
        Ok(_) => panic!("the content was accepted"),
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

fn assert_refused(quiz: &str, translations: &[(&str, &str)], expected: &[&str]) {
    let messages = refused(quiz, translations);
    let all = messages.join("\n");
    for part in expected {
        assert!(all.contains(part), "expected {part:?} in:\n{all}");
    }
}

#[test]
fn the_tiny_quiz_compiles() {
    let content = compile(&source(QUIZ, &[("bn", "title = \"ছোট\"")])).unwrap();
    assert_eq!(content.locales, ["en", "bn"]);
    assert_eq!(content.questions[0].kind, QuestionKind::Single);
}

#[test]
fn malformed_toml_is_refused_naming_the_file_and_line() {
    assert_refused(
        "slug = \"tiny\"\ntitle = ",
        &[],
        &["content/tiny/quiz.toml", "malformed TOML", "line 2"],
    );
}

#[test]
fn an_unknown_kind_is_refused_naming_the_question() {
    assert_refused(
        &QUIZ.replace("kind = \"single\"", "kind = \"essay\""),
        &[],
        &["content/tiny/quiz.toml: question 'q1': unknown kind 'essay'"],
    );
}

#[test]
fn duplicate_question_keys_are_refused() {
    let doubled = format!("{QUIZ}\n{}", &QUIZ[QUIZ.find("[[questions]]").unwrap()..]);
    assert_refused(&doubled, &[], &["question 'q1': duplicate question key"]);
}

#[test]
fn duplicate_option_keys_are_refused() {
    assert_refused(
        &QUIZ.replace("key = \"b\"", "key = \"a\""),
        &[],
        &["question 'q1': duplicate option key 'a'"],
    );
}

#[test]
fn a_single_choice_question_without_a_correct_option_is_refused() {
    assert_refused(
        &QUIZ.replace("correct = true", ""),
        &[],
        &["question 'q1': a single-choice question needs exactly one correct option, found 0"],
    );
}

#[test]
fn a_single_choice_question_with_two_correct_options_is_refused() {
    assert_refused(
        &QUIZ.replace("feedback = \"Not B.\"", "correct = true"),
        &[],
        &["exactly one correct option, found 2"],
    );
}

#[test]
fn a_translation_for_a_question_that_does_not_exist_is_refused() {
    assert_refused(
        QUIZ,
        &[("bn", "[questions.q9]\nprompt = \"?\"")],
        &[
            "content/tiny/bn.toml: question 'q9': translation for a question key that does not exist",
        ],
    );
}

#[test]
fn a_translation_for_an_option_that_does_not_exist_is_refused() {
    assert_refused(
        QUIZ,
        &[("id", "[questions.q1.options.zz]\ntext = \"?\"")],
        &["content/tiny/id.toml: question 'q1': translation for option 'zz'"],
    );
}

#[test]
fn an_invalid_locale_tag_is_refused() {
    assert_refused(
        QUIZ,
        &[("bengali", "title = \"x\"")],
        &["content/tiny/bengali.toml", "not a valid BCP 47"],
    );
    assert_refused(
        QUIZ,
        &[("pt_br", "title = \"x\"")],
        &["name the file pt-BR.toml"],
    );
    assert_refused(
        &QUIZ.replace(
            "slug = \"tiny\"",
            "slug = \"tiny\"\nsource_locale = \"english\"",
        ),
        &[],
        &["source_locale 'english'"],
    );
}

#[test]
fn unknown_fields_are_refused() {
    assert_refused(
        &QUIZ.replace("kind = \"single\"", "kind = \"single\"\nshuffle = true"),
        &[],
        &["unknown field `shuffle`"],
    );
    assert_refused(
        QUIZ,
        &[("bn", "titel = \"x\"")],
        &["content/tiny/bn.toml", "unknown field `titel`"],
    );
}

#[test]
fn kind_specific_rules_are_enforced() {
    let numeric = QUIZ
        .replace("kind = \"single\"", "kind = \"numeric\"\ntolerance = -1.0")
        .split("[[questions.options]]")
        .next()
        .unwrap()
        .to_string();
    assert_refused(
        &numeric,
        &[],
        &["needs a number `answer`", "tolerance must be a number"],
    );
    let short = numeric.replace(
        "kind = \"numeric\"\ntolerance = -1.0",
        "kind = \"short_text\"",
    );
    assert_refused(&short, &[], &["needs `accepted` answers"]);
    let tf = numeric.replace(
        "kind = \"numeric\"\ntolerance = -1.0",
        "kind = \"true_false\"\nanswer = 3",
    );
    assert_refused(&tf, &[], &["`answer = true` or `false`"]);
}

#[test]
fn the_seed_quiz_has_a_complete_answer_key_explanations_and_feedback() {
    let quizzes = load_dir(&content_dir()).unwrap();
    let dp = quizzes
        .iter()
        .find(|q| q.slug == "data-parallelism")
        .unwrap();
    assert_eq!(dp.locales, ["en", "bn", "id"]);
    assert_eq!(dp.visibility, quizd::content::Visibility::Public);
    assert_eq!(
        dp.practice.as_ref().map(|p| p.feedback),
        Some(quizd::policy::FeedbackTiming::Immediate)
    );
    assert_eq!(dp.questions.len(), 8);
    for (i, q) in dp.questions.iter().enumerate() {
        assert_eq!(q.kind, QuestionKind::Single);
        assert_eq!(q.options.len(), 4);
        assert_eq!(q.options.iter().filter(|o| o.correct).count(), 1);
        assert!(q.explanation["en"].len() > 20, "{}", q.key);
        for o in q.options.iter().filter(|o| !o.correct) {
            assert!(
                o.feedback.as_ref().is_some_and(|f| f.contains_key("en")),
                "{} {}",
                q.key,
                o.key
            );
        }
        let translated = [0, 1, 4].contains(&i);
        for locale in ["bn", "id"] {
            assert_eq!(
                q.prompt.contains_key(locale),
                translated,
                "{} {locale}",
                q.key
            );
            assert_eq!(
                q.explanation.contains_key(locale),
                translated,
                "{} {locale}",
                q.key
            );
            for o in q.options.iter().filter(|o| !o.correct) {
                assert_eq!(
                    o.feedback.as_ref().unwrap().contains_key(locale),
                    translated
                );
            }
        }
    }
    // The answer key: the option at this seed position (0-based) is the correct one.
    let key: Vec<usize> = dp
        .questions
        .iter()
        .map(|q| q.options.iter().position(|o| o.correct).unwrap())
        .collect();
    assert_eq!(key, [0, 1, 2, 3, 0, 1, 2, 3]);
}

async fn version_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM quiz_versions")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn importing_unchanged_content_changes_nothing() {
    let app = TestApp::spawn_empty().await;
    let quizzes = load_dir(&content_dir()).unwrap();
    let first = import(&app.pool, &quizzes, quizd::content::store::Importer::Files)
        .await
        .unwrap();
    assert!(first.iter().all(|i| i.status == ImportStatus::Created));
    let second = import(&app.pool, &quizzes, quizd::content::store::Importer::Files)
        .await
        .unwrap();
    assert!(second.iter().all(|i| i.status == ImportStatus::Unchanged));
    assert_eq!(
        first.iter().map(|i| i.version_id).collect::<Vec<_>>(),
        second.iter().map(|i| i.version_id).collect::<Vec<_>>()
    );
    assert_eq!(version_count(&app).await, quizzes.len() as i64);
}

#[tokio::test]
async fn a_changed_quiz_becomes_a_new_version_and_the_old_one_stays() {
    let app = TestApp::spawn().await;
    let mut quizzes = load_dir(&content_dir()).unwrap();
    let dp = quizzes
        .iter_mut()
        .find(|q| q.slug == "data-parallelism")
        .unwrap();
    dp.title
        .insert("en".into(), "Data Parallelism Quiz, revised".into());
    let out = import(&app.pool, &quizzes, quizd::content::store::Importer::Files)
        .await
        .unwrap();
    let dp_out = out.iter().find(|i| i.slug == "data-parallelism").unwrap();
    assert_eq!(
        (dp_out.status, dp_out.version),
        (ImportStatus::NewVersion, 2)
    );
    assert_eq!(version_count(&app).await, quizzes.len() as i64 + 1);
    // Other processes learn of the change from PostgreSQL's notification, within moments.
    let mut quiz: Value = app.get_json("/v1/quizzes/data-parallelism", 200).await;
    for _ in 0..100 {
        if quiz["version"] == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        quiz = app.get_json("/v1/quizzes/data-parallelism", 200).await;
    }
    assert_eq!(quiz["version"], 2);
    assert_eq!(quiz["title"]["text"], "Data Parallelism Quiz, revised");
    // Versions are immutable, even to SQL.
    let update = sqlx::query("UPDATE quiz_versions SET content_hash = 'x'")
        .execute(&app.pool)
        .await;
    assert!(update.is_err());
}

fn write_tree(root: &std::path::Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

#[tokio::test]
async fn a_directory_with_one_bad_quiz_imports_nothing() {
    let app = TestApp::spawn_empty().await;
    let dir = tempfile::tempdir().unwrap();
    write_tree(
        dir.path(),
        &[
            ("good/quiz.toml", QUIZ),
            (
                "bad/quiz.toml",
                &QUIZ.replace("slug = \"tiny\"", "slug = \"bad\""),
            ),
            ("bad/bn.toml", "[questions.nope]\nprompt = \"x\""),
        ],
    );
    let errors = load_dir(dir.path()).unwrap_err().to_string();
    assert!(errors.contains("bad/bn.toml: question 'nope'"), "{errors}");
    // The command line refuses it too, says why, and writes nothing.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_quizd"))
        .arg("import")
        .arg(dir.path())
        .env("DATABASE_URL", app.db_url())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad/bn.toml: question 'nope'"), "{stderr}");
    assert!(stderr.contains("nothing was imported"), "{stderr}");
    assert_eq!(version_count(&app).await, 0);
    // Fixed, it imports.
    std::fs::remove_file(dir.path().join("bad/bn.toml")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_quizd"))
        .arg("import")
        .arg(dir.path())
        .env("DATABASE_URL", app.db_url())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(version_count(&app).await, 2);
}
