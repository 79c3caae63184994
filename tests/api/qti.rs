//! QTI 3.0 export checked by an independent validator: the packages written here are
//! validated against 1EdTech's published XSDs by `tests/qti/check.py` (run by `.ci/run`).

use std::path::Path;

use quizd::content::load_dir;
use quizd::content::qti::{export_qti3, import_qti};

/// Writes the QTI 3.0 packages of the seed quizzes (data-parallelism: en, bn, id;
/// kinds-sampler: every question kind) for the schema check, after checking that each one
/// imports back to the same questions.
#[test]
fn the_seed_quizzes_export_as_qti_packages_for_the_schema_check() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("qti-check");
    std::fs::create_dir_all(&dir).unwrap();
    let content = Path::new(env!("CARGO_MANIFEST_DIR")).join("content");
    for name in ["data-parallelism", "kinds-sampler"] {
        let quiz = load_dir(&content.join(name)).unwrap().remove(0);
        let package = export_qti3(&quiz).unwrap();
        let back = import_qti(&package).unwrap();
        assert_eq!(back.content.questions, quiz.questions);
        assert_eq!(back.content.locales, quiz.locales);
        std::fs::write(dir.join(format!("{name}.zip")), &package).unwrap();
    }
}
