//! The normalized content of one quiz version: what the importer produces from the files,
//! what is stored (as JSON) in `quiz_versions.content`, and what grading reads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::media::Media;
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
    /// Every question of the version: the fixed ones in display order, then each bank's, bank
    /// by bank. Translations, texts, grading and analytics read them all; what an attempt
    /// serves is decided by `layout`.
    pub questions: Vec<Question>,
    /// The question banks (`[[banks]]` in the file): which questions each holds. Empty for a
    /// quiz without banks, so content stored before banks existed reads (and hashes) as it did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub banks: Vec<Bank>,
    /// What an attempt serves, in display order: fixed questions and slots that draw from a
    /// bank. Empty: every question, in order (a quiz without banks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layout: Vec<Slot>,
    /// Translations that were not made from the current source text: text id (see
    /// [`QuizContent::texts`]) → locale → the hash ([`source_hash`]) of the source text they
    /// translated. Every other translation was made from the current source (a translation is
    /// recorded against the source it was written with; the importer carries the record from
    /// version to version, see [`QuizContent::carry_translation_sources`]). A translation whose
    /// recorded source differs from the current one is stale: stored, exported for review,
    /// never served as current. Empty for content that is fully current, so content stored
    /// before this field existed reads (and hashes) as it did.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub translated_from: BTreeMap<String, BTreeMap<String, String>>,
    /// The author's choice (`keep_stale_translations = true` in quiz.toml) to go on serving a
    /// translation whose source text has changed, rather than fall back to the source, while
    /// the translators catch up. Stale translations are still reported and exported as stale.
    /// Off by default and then not stored, so content stored before it existed hashes as it did.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_stale_translations: bool,
    /// Feedback by score band (`[[score_bands]]`), by ascending `min`: a finished attempt whose
    /// percentage is at least a band's `min` (and below the next band's) gets its text, where
    /// the learner may see the score. Empty when the quiz has none, so content stored before
    /// bands existed reads (and hashes) as it did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub score_bands: Vec<ScoreBand>,
    /// The image files the questions' images name, as the importer read them from the quiz's
    /// directory, for the import to store (`media`, by hash). Never serialized, so never
    /// hashed nor stored in the content; empty for content read from the database.
    #[serde(skip)]
    pub media: Media,
}

/// A question's image: the file (by the SHA-256 of its bytes, stored once in `media`), its
/// type as its first bytes say, its alt text (translatable like every text) and its size in
/// pixels where the header says it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Image {
    pub sha256: String,
    pub content_type: String,
    pub alt: Text,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
}

/// One band of feedback by score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreBand {
    /// The lowest percentage of the maximum score (0–100) the band is for.
    pub min: u8,
    pub text: Text,
}

/// A question bank: questions an attempt draws from, never served as a whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bank {
    pub key: String,
    /// The keys of its questions (in [`QuizContent::questions`]), in authored order.
    pub questions: Vec<String>,
}

/// One place in an attempt's layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "slot")]
pub enum Slot {
    /// A fixed question, served in every attempt.
    Fixed { question: String },
    /// `draw` questions from bank `bank` (only those tagged `tag`, if given), drawn per
    /// attempt. The importer makes sure the bank holds enough, and that two slots drawing from
    /// one bank can never draw the same question (their candidates are disjoint).
    Draw {
        bank: String,
        draw: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tag: Option<String>,
    },
}

/// The hash that identifies a source text: a translation remembers the hash of the source it
/// translated, and is stale when the source's hash changes.
pub fn source_hash(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// What a translatable text is, for translators and status reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TextRole {
    Title,
    Intro,
    Prompt,
    ImageAlt,
    Explanation,
    WrongFeedback,
    CorrectOption,
    WrongOption,
    OptionFeedback,
    ScoreBand,
}

impl TextRole {
    /// A note for a translator.
    pub fn note(self) -> &'static str {
        match self {
            Self::Title => "The quiz's title.",
            Self::Intro => "The one-line introduction shown before the first question.",
            Self::Prompt => "A question's prompt.",
            Self::ImageAlt => {
                "What the question's image shows, for people who cannot see it (its alt text)."
            }
            Self::Explanation => "Why the right answer is right; shown after the answer.",
            Self::WrongFeedback => "Feedback shown for a wrong answer.",
            Self::CorrectOption => "A correct option (an answer the learner can choose).",
            Self::WrongOption => "A wrong option (a distractor: keep it plausible).",
            Self::OptionFeedback => "Feedback shown when the learner chose this wrong option.",
            Self::ScoreBand => {
                "Feedback shown with a finished attempt's score, to scores in this band (its id says the lowest percentage)."
            }
        }
    }
}

/// One translatable text with its id: `title`, `intro`, `score_band.<min>`, `q.<key>.prompt`,
/// `q.<key>.image_alt`, `q.<key>.explanation`, `q.<key>.wrong_feedback`, `q.<key>.o.<option>.text`,
/// `q.<key>.o.<option>.feedback`. Keys are `[a-z0-9_-]`, so ids are unambiguous XML NMTOKENs.
#[derive(Debug, Clone)]
pub struct TextRef<'a> {
    pub id: String,
    /// The question's key, for question texts.
    pub question: Option<&'a str>,
    pub role: TextRole,
    pub text: &'a Text,
}

/// Who may see a quiz outside the assignments that place it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// In the catalogue, readable by anyone, may have a practice assignment.
    Public,
    /// Exists for learners only through assignments, from their opening time. The default:
    /// nothing is revealed unless its author says so.
    #[default]
    Private,
}

impl Visibility {
    /// The name stored in `quizzes.visibility` (the serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Private => "private",
        }
    }
}

crate::de::from_stored_name!(Visibility, "visibility", [Public, Private]);

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
    /// A bank question's tags, which a slot may filter on. Never served.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// An image shown with the prompt. None: not stored, so content stored before images
    /// existed reads (and hashes) as it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<Image>,
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

impl Question {
    /// A true/false question's key: whether the statement is true.
    pub fn true_false_answer(&self) -> bool {
        self.options.iter().any(|o| o.correct && o.key == "true")
    }
}

impl QuizContent {
    /// The band a finished attempt's percentage (0–100, as the learner is shown it) falls in:
    /// the one with the greatest `min` at most the percentage; none below the lowest band.
    pub fn score_band(&self, percentage: f64) -> Option<&ScoreBand> {
        self.score_bands
            .iter()
            .rev()
            .find(|b| f64::from(b.min) <= percentage)
    }

    /// Whether attempts draw their questions (the quiz has banks): then each attempt stores
    /// the keys it serves.
    pub fn draws(&self) -> bool {
        !self.layout.is_empty()
    }

    pub fn question(&self, key: &str) -> Option<&Question> {
        self.questions.iter().find(|q| q.key == key)
    }

    /// The bank that holds question `key`, if any.
    pub fn bank_of(&self, key: &str) -> Option<&Bank> {
        self.banks
            .iter()
            .find(|b| b.questions.iter().any(|k| k == key))
    }

    /// The questions a slot may draw from, in bank order (empty for a fixed slot or an unknown
    /// bank).
    pub fn candidates(&self, slot: &Slot) -> Vec<&Question> {
        let Slot::Draw { bank, tag, .. } = slot else {
            return Vec::new();
        };
        let Some(bank) = self.banks.iter().find(|b| b.key == *bank) else {
            return Vec::new();
        };
        bank.questions
            .iter()
            .filter_map(|k| self.question(k))
            .filter(|q| tag.as_ref().is_none_or(|t| q.tags.contains(t)))
            .collect()
    }

    /// The questions every attempt serves whatever it draws (all of them, without banks).
    pub fn fixed_questions(&self) -> Vec<&Question> {
        if !self.draws() {
            return self.questions.iter().collect();
        }
        self.layout
            .iter()
            .filter_map(|s| match s {
                Slot::Fixed { question } => self.question(question),
                Slot::Draw { .. } => None,
            })
            .collect()
    }

    /// How many questions an attempt serves.
    pub fn served_count(&self) -> usize {
        if !self.draws() {
            return self.questions.len();
        }
        self.layout
            .iter()
            .map(|s| match s {
                Slot::Fixed { .. } => 1,
                Slot::Draw { draw, .. } => *draw as usize,
            })
            .sum()
    }

    /// The most an attempt can score: every question without banks; with banks, the fixed
    /// questions and, per slot, its `draw` highest-scoring candidates (exact when a bank's
    /// questions carry equal points, as they usually do). What an LMS line item is created
    /// with; each attempt's own `max_score` is the sum over the questions it serves.
    pub fn nominal_max_score(&self) -> f64 {
        if !self.draws() {
            return self.questions.iter().map(|q| q.points).sum();
        }
        self.layout
            .iter()
            .map(|s| match s {
                Slot::Fixed { question } => self.question(question).map_or(0.0, |q| q.points),
                Slot::Draw { draw, .. } => {
                    let mut points: Vec<f64> =
                        self.candidates(s).iter().map(|q| q.points).collect();
                    points.sort_by(|a, b| b.total_cmp(a));
                    points.iter().take(*draw as usize).sum()
                }
            })
            .sum()
    }

    /// What a question exchange export (Moodle XML, GIFT, QTI) says of the images it leaves
    /// out, so none is dropped silently: the questions that have one, by key. `None` when no
    /// question has an image.
    pub fn images_not_exported(&self) -> Option<String> {
        let keys: Vec<String> = (self.questions.iter())
            .filter(|q| q.image.is_some())
            .map(|q| format!("'{}'", q.key))
            .collect();
        (!keys.is_empty()).then(|| {
            format!(
                "Not in this export: the images of questions {} (quizd serves them with the quiz; their alt texts are in the XLIFF and PO exports).",
                keys.join(", ")
            )
        })
    }

    /// The hash that decides whether an import is a new version: equal content, equal hash.
    pub fn content_hash(&self) -> String {
        let bytes = serde_json::to_vec(self).expect("content serializes");
        hex::encode(Sha256::digest(&bytes))
    }

    /// Every translatable text the author wrote (generated labels excluded).
    pub fn authored_texts(&self) -> Vec<&Text> {
        self.texts().into_iter().map(|t| t.text).collect()
    }

    /// Every translatable text the author wrote, with its id and role, in display order.
    pub fn texts(&self) -> Vec<TextRef<'_>> {
        let top = |id: &str, role, text| TextRef {
            id: id.to_string(),
            question: None,
            role,
            text,
        };
        let mut out = vec![top("title", TextRole::Title, &self.title)];
        if let Some(intro) = &self.intro {
            out.push(top("intro", TextRole::Intro, intro));
        }
        for b in &self.score_bands {
            let id = format!("score_band.{}", b.min);
            out.push(top(&id, TextRole::ScoreBand, &b.text));
        }
        for q in &self.questions {
            let k = q.key.as_str();
            let of = |field: &str, role, text| TextRef {
                id: format!("q.{k}.{field}"),
                question: Some(k),
                role,
                text,
            };
            out.push(of("prompt", TextRole::Prompt, &q.prompt));
            if let Some(image) = &q.image {
                out.push(of("image_alt", TextRole::ImageAlt, &image.alt));
            }
            out.push(of("explanation", TextRole::Explanation, &q.explanation));
            if let Some(w) = &q.wrong_feedback {
                out.push(of("wrong_feedback", TextRole::WrongFeedback, w));
            }
            if q.kind != QuestionKind::TrueFalse {
                for o in &q.options {
                    let role = if o.correct {
                        TextRole::CorrectOption
                    } else {
                        TextRole::WrongOption
                    };
                    out.push(of(&format!("o.{}.text", o.key), role, &o.text));
                    if let Some(f) = &o.feedback {
                        let id = format!("o.{}.feedback", o.key);
                        out.push(of(&id, TextRole::OptionFeedback, f));
                    }
                }
            }
        }
        out
    }

    /// Calls `f` with each translatable text's id and the text, mutably.
    pub fn for_each_text_mut(&mut self, mut f: impl FnMut(&str, &mut Text)) {
        f("title", &mut self.title);
        if let Some(intro) = &mut self.intro {
            f("intro", intro);
        }
        for b in &mut self.score_bands {
            f(&format!("score_band.{}", b.min), &mut b.text);
        }
        for q in &mut self.questions {
            let k = q.key.clone();
            f(&format!("q.{k}.prompt"), &mut q.prompt);
            if let Some(image) = &mut q.image {
                f(&format!("q.{k}.image_alt"), &mut image.alt);
            }
            f(&format!("q.{k}.explanation"), &mut q.explanation);
            if let Some(w) = &mut q.wrong_feedback {
                f(&format!("q.{k}.wrong_feedback"), w);
            }
            if q.kind != QuestionKind::TrueFalse {
                for o in &mut q.options {
                    f(&format!("q.{k}.o.{}.text", o.key), &mut o.text);
                    if let Some(fb) = &mut o.feedback {
                        f(&format!("q.{k}.o.{}.feedback", o.key), fb);
                    }
                }
            }
        }
    }

    /// Whether the translation of text `id` into `locale` was made from another source text
    /// than the current one.
    pub fn is_stale(&self, id: &str, text: &Text, locale: &str) -> bool {
        let Some(recorded) = self.translated_from.get(id).and_then(|m| m.get(locale)) else {
            return false;
        };
        text.get(&self.source_locale)
            .is_none_or(|source| source_hash(source) != *recorded)
    }

    /// Records, for this content about to become a new version after `previous`, which source
    /// each translation was made from: a translation unchanged since `previous` keeps the
    /// source it had there; a new or changed one was made from the current source. Only
    /// translations whose source is not the current one are recorded (see `translated_from`).
    /// Records already present (an import that names the source it translated) are kept.
    pub fn carry_translation_sources(&mut self, previous: &QuizContent) {
        let before: BTreeMap<String, &Text> = previous
            .texts()
            .into_iter()
            .map(|t| (t.id, t.text))
            .collect();
        let source_locale = self.source_locale.clone();
        let mut records = std::mem::take(&mut self.translated_from);
        self.for_each_text_mut(|id, text| {
            let Some(source) = text.get(&source_locale) else {
                return;
            };
            let current = source_hash(source);
            for (locale, translation) in text.iter().filter(|(l, _)| **l != source_locale) {
                let kept = records.get(id).and_then(|m| m.get(locale)).cloned();
                let carried = kept.or_else(|| {
                    let old = before.get(id)?;
                    (old.get(locale)? == translation).then(|| {
                        previous
                            .translated_from
                            .get(id)
                            .and_then(|m| m.get(locale))
                            .cloned()
                            .or_else(|| old.get(&previous.source_locale).map(|s| source_hash(s)))
                    })?
                });
                match carried {
                    Some(h) if h != current => {
                        records
                            .entry(id.to_string())
                            .or_default()
                            .insert(locale.clone(), h);
                    }
                    _ => {
                        if let Some(m) = records.get_mut(id) {
                            m.remove(locale);
                        }
                    }
                }
            }
        });
        records.retain(|_, m| !m.is_empty());
        self.translated_from = records;
    }

    /// The content as served: stale translations left out, so each such text falls back (and
    /// says so by its `lang`), and coverage counts only current translations — unless the
    /// author keeps stale translations, which are then served (and counted) as they are.
    pub fn served(mut self) -> QuizContent {
        let records = std::mem::take(&mut self.translated_from);
        if records.is_empty() || self.keep_stale_translations {
            return self;
        }
        let source_locale = self.source_locale.clone();
        self.for_each_text_mut(|id, text| {
            let Some(by_locale) = records.get(id) else {
                return;
            };
            let current = text.get(&source_locale).map(|s| source_hash(s));
            text.retain(|locale, _| {
                by_locale
                    .get(locale)
                    .is_none_or(|h| Some(h) == current.as_ref())
            });
        });
        self
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::compile_texts;

    fn quiz(prompt: &str, bn_prompt: Option<&str>) -> QuizContent {
        let quiz = format!(
            "slug = \"t\"\ntitle = \"T\"\n[[questions]]\nkey = \"q1\"\nkind = \"single\"\n\
             prompt = \"{prompt}\"\nexplanation = \"E\"\n[[questions.options]]\nkey = \"a\"\n\
             text = \"A\"\ncorrect = true\n[[questions.options]]\nkey = \"b\"\ntext = \"B\"\n"
        );
        let mut bn = "title = \"টি\"\n[questions.q1.options.a]\ntext = \"ক\"\n".to_string();
        if let Some(p) = bn_prompt {
            bn.push_str(&format!("[questions.q1]\nprompt = \"{p}\"\n"));
        }
        compile_texts(&quiz, &[("bn", &bn)])
    }

    #[test]
    fn a_translation_left_alone_while_its_source_changes_becomes_stale_and_is_not_served() {
        let v1 = quiz("Pick one", Some("একটি বাছুন"));
        let mut v2 = quiz("Pick exactly one", Some("একটি বাছুন"));
        v2.carry_translation_sources(&v1);
        let prompt = &v2.questions[0].prompt;
        assert!(v2.is_stale("q.q1.prompt", prompt, "bn"));
        assert_eq!(
            v2.translated_from["q.q1.prompt"]["bn"],
            source_hash("Pick one")
        );
        assert!(
            !v2.is_stale("title", &v2.title, "bn"),
            "an unchanged source stays current"
        );
        let served = v2.clone().served();
        assert!(!served.questions[0].prompt.contains_key("bn"));
        assert!(served.questions[0].options[0].text.contains_key("bn"));
        assert_eq!(served.coverage()[1].1 + 1, v2.coverage()[1].1);

        // Imported again unchanged: the same content, so the same hash (no new version).
        let mut again = quiz("Pick exactly one", Some("একটি বাছুন"));
        again.carry_translation_sources(&v2);
        assert_eq!(again.content_hash(), v2.content_hash());
        // The translator updates it: current again, nothing recorded.
        let mut v3 = quiz("Pick exactly one", Some("ঠিক একটি বাছুন"));
        v3.carry_translation_sources(&v2);
        assert!(v3.translated_from.is_empty());
        // The source changed back: the old translation is current again.
        let mut back = quiz("Pick one", Some("একটি বাছুন"));
        back.carry_translation_sources(&v2);
        assert!(back.translated_from.is_empty());
    }

    #[test]
    fn content_without_records_is_fully_current_and_hashes_as_before() {
        let v1 = quiz("Pick one", Some("একটি বাছুন"));
        let json = serde_json::to_string(&v1).unwrap();
        assert!(!json.contains("translated_from"));
        let mut same = v1.clone();
        same.carry_translation_sources(&v1);
        assert_eq!(same, v1);
        assert_eq!(v1.clone().served(), v1);
    }

    #[test]
    fn text_ids_name_every_authored_text_once() {
        let v = quiz("P", None);
        let ids: Vec<String> = v.texts().into_iter().map(|t| t.id).collect();
        assert_eq!(
            ids,
            [
                "title",
                "q.q1.prompt",
                "q.q1.explanation",
                "q.q1.o.a.text",
                "q.q1.o.b.text"
            ]
        );
    }
}
