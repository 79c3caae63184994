//! Quiz content: the file format, its validation, the model it compiles to, and the exchange
//! formats (QTI, Moodle XML, GIFT, Aiken, XLIFF, PO).
//!
//! Pure: no I/O beyond reading the files it is pointed at. This package depends on neither
//! sqlx nor actix nor tokio, and its `Cargo.toml` is what keeps it so; the server stores what
//! it compiles (its `content::store`) and serves it.

pub mod de;
pub mod exchange;
mod format;
pub mod gift;
pub mod i18n;
pub mod interchange;
pub mod media;
pub mod model;
pub mod moodle_xml;
pub mod po;
pub mod policy;
pub mod qti;
pub mod xliff;

use std::fmt;
use std::path::Path;

pub use format::{
    QuizSource, RESERVED_SLUGS, SourceFile, check_slug, compile, compile_dir, retranslate,
};
pub use model::{
    Bank, Choice, Image, Question, QuestionKind, QuizContent, ScoreBand, Slot, Visibility,
};

/// One problem in one content file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentError {
    pub file: String,
    pub question: Option<String>,
    pub message: String,
}

impl fmt::Display for ContentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.question {
            Some(q) => write!(f, "{}: question '{}': {}", self.file, q, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// Every problem found in a set of content files; nothing is imported while there are any.
#[derive(Debug, Clone)]
pub struct ContentErrors(pub Vec<ContentError>);

impl fmt::Display for ContentErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ContentErrors {}

fn io_error(path: &Path, e: std::io::Error) -> ContentErrors {
    ContentErrors(vec![ContentError {
        file: path.display().to_string(),
        question: None,
        message: format!("cannot read: {e}"),
    }])
}

/// Reads one quiz directory: `quiz.toml` and every other `*.toml` as a translation named by
/// its locale. (Its questions' images are read as `compile_dir` finds them named.)
pub fn read_quiz_dir(dir: &Path) -> Result<QuizSource, ContentErrors> {
    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .map(|text| SourceFile {
                name: path.display().to_string(),
                text,
            })
            .map_err(|e| io_error(path, e))
    };
    let quiz = read(&dir.join("quiz.toml"))?;
    let mut translations = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| io_error(dir, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        let is_toml = path.extension().is_some_and(|e| e == "toml");
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if is_toml && path.is_file() && stem != "quiz" {
            translations.push((stem.to_string(), read(&path)?));
        }
    }
    Ok(QuizSource { quiz, translations })
}

/// Loads and validates every quiz under `dir`: either one quiz directory (it has a
/// `quiz.toml`) or a directory of quiz directories. All or nothing.
pub fn load_dir(dir: &Path) -> Result<Vec<QuizContent>, ContentErrors> {
    let quiz_dirs: Vec<_> = if dir.join("quiz.toml").is_file() {
        vec![dir.to_path_buf()]
    } else {
        let mut dirs: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| io_error(dir, e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        dirs
    };
    let mut errors = Vec::new();
    let mut quizzes: Vec<QuizContent> = Vec::new();
    for qdir in quiz_dirs {
        if !qdir.join("quiz.toml").is_file() {
            errors.push(ContentError {
                file: qdir.display().to_string(),
                question: None,
                message: "a quiz directory needs a quiz.toml".into(),
            });
            continue;
        }
        let source = match read_quiz_dir(&qdir) {
            Ok(s) => s,
            Err(e) => {
                errors.extend(e.0);
                continue;
            }
        };
        match compile_dir(&source, &qdir) {
            Ok(content) if quizzes.iter().any(|q| q.slug == content.slug) => {
                errors.push(ContentError {
                    file: source.quiz.name.clone(),
                    question: None,
                    message: format!("slug '{}' is used by another quiz", content.slug),
                })
            }
            Ok(content) => quizzes.push(content),
            Err(e) => errors.extend(e),
        }
    }
    if quizzes.is_empty() && errors.is_empty() {
        errors.push(ContentError {
            file: dir.display().to_string(),
            question: None,
            message: "no quiz found (expected <dir>/quiz.toml or <dir>/<quiz>/quiz.toml)".into(),
        });
    }
    if errors.is_empty() {
        Ok(quizzes)
    } else {
        Err(ContentErrors(errors))
    }
}

/// The repository's root, where the tests find `content/` and `tests/qti/fixtures/`.
#[cfg(test)]
pub(crate) fn repo_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}
