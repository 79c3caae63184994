//! QTI 3.0 export checked by an independent validator: the packages written here are
//! validated against 1EdTech's published XSDs by `tests/qti/check.py` (run by `.ci/run`).

use std::path::Path;

use quizd::content::qti::{export_qti3, import_qti};
use quizd::content::{QuizSource, SourceFile, compile, load_dir};

/// Writes the QTI 3.0 packages of the seed quizzes (data-parallelism: en, bn, id;
/// kinds-sampler: every question kind; collectives: banks, a slot by tag and a question no
/// slot draws, as sections that select) for the schema check, after checking that each one
/// imports back to the same questions, banks and slots.
#[test]
fn the_seed_quizzes_export_as_qti_packages_for_the_schema_check() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("qti-check");
    std::fs::create_dir_all(&dir).unwrap();
    let content = Path::new(env!("CARGO_MANIFEST_DIR")).join("content");
    for name in ["data-parallelism", "kinds-sampler", "collectives"] {
        let quiz = load_dir(&content.join(name)).unwrap().remove(0);
        let package = export_qti3(&quiz).unwrap();
        let back = import_qti(&package).unwrap();
        // Everything but images, which no package carries (each item's comment says so).
        let mut questions = quiz.questions.clone();
        for q in &mut questions {
            q.image = None;
        }
        assert_eq!(back.content.questions, questions);
        assert_eq!(back.content.banks, quiz.banks);
        assert_eq!(back.content.layout, quiz.layout);
        assert_eq!(back.content.locales, quiz.locales);
        std::fs::write(dir.join(format!("{name}.zip")), &package).unwrap();
    }
}

/// A quiz whose Bengali translation leaves texts out: those are written in English, marked
/// `xml:lang="en"` inside the Bengali items (on `qti-prompt`, `qti-simple-choice`, `p`), which
/// the schema check must accept too.
#[test]
fn a_partly_translated_quiz_exports_for_the_schema_check() {
    let file = |name: &str, text: &str| SourceFile {
        name: name.into(),
        text: text.into(),
    };
    let quiz = "slug = \"partial\"\ntitle = \"Partial\"\nintro = \"Hi\"\n\
                [[questions]]\nkey = \"q1\"\nkind = \"single\"\nprompt = \"Pick <one> & go\"\n\
                explanation = \"Because\\nof\\ttabs\"\n[[questions.options]]\nkey = \"1a\"\n\
                text = \"A\"\ncorrect = true\n[[questions.options]]\nkey = \"b\"\n\
                text = \"B\"\nfeedback = \"Not B\"\n\
                [[questions]]\nkey = \"q2\"\nkind = \"numeric\"\nprompt = \"2+2?\"\n\
                answer = 4\ntolerance = 0.5\nexplanation = \"Four\"\nwrong_feedback = \"Count\"\n";
    let bn = "[questions.q1.options.b]\nfeedback = \"খ নয়\"\n[questions.q2]\nprompt = \"২+২?\"\n";
    let source = QuizSource {
        quiz: file("quiz.toml", quiz),
        translations: vec![("bn".into(), file("bn.toml", bn))],
    };
    let content = compile(&source).unwrap();
    let package = export_qti3(&content).unwrap();
    let back = import_qti(&package).unwrap();
    assert_eq!(back.content.questions, content.questions);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("qti-check");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("partial-translation.zip"), &package).unwrap();
}
