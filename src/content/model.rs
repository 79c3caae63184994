//! The normalized content of one quiz version: what the importer produces from the files,
//! what is stored (as JSON) in `quiz_versions.content`, and what grading reads.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::i18n::Text;
use crate::policy::Policy;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuizContent {
    pub slug: String,
    pub source_locale: String,
    /// The source locale first, then the translations' locales in order.
    pub locales: Vec<String>,
    pub title: Text,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intro: Option<Text>,
    /// Who may see the quiz outside assignments.
    #[serde(default)]
    pub visibility: Visibility,
    /// The policy of the quiz's course-less practice assignment, if it has one (only a public
    /// quiz may: a practice attempt shows the key under immediate feedback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub practice: Option<Policy>,
    pub questions: Vec<Question>,
}

/// Who may see a quiz outside the assignments that place it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema, sqlx::Type,
)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum Visibility {
    /// In the catalogue, readable by anyone, may have a practice assignment.
    Public,
    /// Exists for learners only through assignments, from their opening time. The default:
    /// nothing is revealed unless its author says so.
    #[default]
    Private,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum QuestionKind {
    /// One correct option among several.
    Single,
    /// Several correct options; partial credit.
    Multiple,
    /// A statement that is true or false.
    TrueFalse,
    /// A number, right within a tolerance.
    Numeric,
    /// A short text compared, normalized, with the accepted answers.
    ShortText,
}

impl QuestionKind {
    pub const ALL: [(&'static str, QuestionKind); 5] = [
        ("single", QuestionKind::Single),
        ("multiple", QuestionKind::Multiple),
        ("true_false", QuestionKind::TrueFalse),
        ("numeric", QuestionKind::Numeric),
        ("short_text", QuestionKind::ShortText),
    ];

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
    }

    /// Kinds whose answer is a selection of options.
    pub fn has_options(self) -> bool {
        matches!(self, Self::Single | Self::Multiple | Self::TrueFalse)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// Stable within the quiz across versions, so analytics can follow a question.
    pub key: String,
    pub kind: QuestionKind,
    pub points: f64,
    pub prompt: Text,
    /// Why the right answer is right.
    pub explanation: Text,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<Choice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numeric: Option<NumericKey>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_text: Option<ShortTextKey>,
    /// Shown for a wrong answer to a kind without per-option feedback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrong_feedback: Option<Text>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// Stable within the question. Never shown to a learner: it may hint at correctness.
    pub key: String,
    pub text: Text,
    pub correct: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<Text>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumericKey {
    pub answer: f64,
    /// Absolute tolerance: |given − answer| ≤ tolerance is right.
    pub tolerance: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShortTextKey {
    /// Accepted answers from every locale.
    pub accepted: Vec<String>,
    pub case_sensitive: bool,
}

impl QuizContent {
    /// The hash that decides whether an import is a new version: equal content, equal hash.
    pub fn content_hash(&self) -> String {
        let bytes = serde_json::to_vec(self).expect("content serializes");
        hex::encode(Sha256::digest(&bytes))
    }

    /// Every translatable text the author wrote (generated labels excluded).
    pub fn authored_texts(&self) -> Vec<&Text> {
        let mut out = vec![&self.title];
        out.extend(self.intro.as_ref());
        for q in &self.questions {
            out.push(&q.prompt);
            out.push(&q.explanation);
            out.extend(q.wrong_feedback.as_ref());
            if q.kind != QuestionKind::TrueFalse {
                for o in &q.options {
                    out.push(&o.text);
                    out.extend(o.feedback.as_ref());
                }
            }
        }
        out
    }

    /// For each locale: how many of the authored texts exist in it, of how many.
    pub fn coverage(&self) -> Vec<(String, usize, usize)> {
        let texts = self.authored_texts();
        self.locales
            .iter()
            .map(|l| {
                let have = texts.iter().filter(|t| t.contains_key(l)).count();
                (l.clone(), have, texts.len())
            })
            .collect()
    }
}
