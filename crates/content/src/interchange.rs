//! Questions in and out of other systems' formats (Moodle XML, GIFT, Aiken; QTI to come):
//! what every format shares. Pure: no I/O.
//!
//! Import is two steps. A format's reader turns a document into a [`Draft`]: the questions it
//! can carry into quizd (each with where it was found), the ones it cannot (a kind quizd does
//! not have, a grading quizd cannot reproduce: [`Skipped`], by name and line, never dropped
//! silently), and [`Note`]s on what was imported but changed on the way. [`build`] then writes
//! the draft as a `quiz.toml` and compiles it with [`compile`], the very path content files
//! take: the same checks, the same messages (pointed back at the question's name and line),
//! all or nothing.
//!
//! Export writes a stored version in a format, in its source locale: Moodle XML holds one
//! text per question and GIFT has no notion of language, so translations stay in quizd (use
//! the XLIFF or PO export for them).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::format::valid_key;
use super::format::{QuizSource, SourceFile, compile};
use super::model::{QuestionKind, QuizContent, Visibility};
use crate::policy::Policy;

/// The most questions (kept or skipped) one document may hold: a large Moodle question bank
/// export has a few hundred; beyond this it is not one quiz.
pub const MAX_QUESTIONS: usize = 2_000;

/// The most answers one question may have: Moodle's form offers a few dozen at most. Options
/// get keys made unique among their question's, and a question of 200 000 would make that
/// (and every later step) the whole request's work.
pub const MAX_ANSWERS: usize = 100;

/// An exchange format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum Format {
    /// Moodle XML (`<quiz><question type=…>`).
    #[serde(rename = "moodle-xml")]
    MoodleXml,
    /// GIFT, Moodle's text format.
    #[serde(rename = "gift")]
    Gift,
    /// Aiken: single-choice questions as text (import only: it has no feedback to export).
    #[serde(rename = "aiken")]
    Aiken,
    /// A QTI 3.0 package (zip; QTI 2.1 and single item or test documents are read too): binary,
    /// read and written by `content::qti`, every locale included.
    #[serde(rename = "qti3")]
    Qti3,
    /// QTI 1.2 as Canvas and text2qti write it (import only): a zip or XML document whose root
    /// is `questestinterop`, recognised as such whatever `format` the upload names.
    #[serde(rename = "qti12")]
    Qti12,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::MoodleXml,
        Format::Gift,
        Format::Aiken,
        Format::Qti3,
        Format::Qti12,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::MoodleXml => "moodle-xml",
            Format::Gift => "gift",
            Format::Aiken => "aiken",
            Format::Qti3 => "qti3",
            Format::Qti12 => "qti12",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    pub fn extension(self) -> &'static str {
        match self {
            Format::MoodleXml => "xml",
            Format::Gift => "gift",
            Format::Aiken => "txt",
            Format::Qti3 | Format::Qti12 => "zip",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::MoodleXml => "application/xml; charset=utf-8",
            Format::Gift | Format::Aiken => "text/plain; charset=utf-8",
            Format::Qti3 | Format::Qti12 => "application/zip",
        }
    }

    /// Whether quizd writes this format.
    pub fn exports(self) -> bool {
        !matches!(self, Format::Aiken | Format::Qti12)
    }

    /// Reads a text document into a draft. Malformed input (not the format's syntax, too many
    /// questions) is an error naming the line. QTI is binary: [`read_upload`] reads it.
    pub fn read(self, text: &str) -> Result<Draft, String> {
        match self {
            Format::MoodleXml => super::moodle_xml::read(text),
            Format::Gift => super::gift::read(text),
            Format::Aiken => super::gift::read_aiken(text),
            Format::Qti3 | Format::Qti12 => Err("a QTI package is not a text document".into()),
        }
    }

    /// Writes version `version` of `content`: the source locale in Moodle XML and GIFT, every
    /// locale in a QTI 3.0 package.
    pub fn write(self, content: &QuizContent, version: i32) -> Option<Result<Vec<u8>, String>> {
        match self {
            Format::MoodleXml => Some(Ok(super::moodle_xml::write(content, version).into_bytes())),
            Format::Gift => Some(Ok(super::gift::write(content, version).into_bytes())),
            Format::Aiken | Format::Qti12 => None,
            Format::Qti3 => Some(super::qti::export_qti3(content).map_err(|e| e.to_string())),
        }
    }
}

/// One option of a choice question, as read.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftOption {
    pub text: String,
    /// The share of the question's points the option is worth in the source: 1 right, 0
    /// wrong, between for partial credit, negative for a penalty.
    pub fraction: f64,
    pub feedback: Option<String>,
}

/// A question's key as read.
#[derive(Debug, Clone, PartialEq)]
pub enum DraftAnswer {
    /// Choice: `single` when the source says only one option may be chosen.
    Choice {
        single: bool,
        options: Vec<DraftOption>,
    },
    TrueFalse {
        answer: bool,
        /// Shown for the right answer, for the wrong one.
        right_feedback: Option<String>,
        wrong_feedback: Option<String>,
    },
    Numeric {
        answer: f64,
        tolerance: f64,
    },
    ShortText {
        accepted: Vec<String>,
        case_sensitive: bool,
    },
}

/// A question a reader could carry into quizd, not yet validated.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftQuestion {
    /// Its name or title in the source, if it has one (also the first choice for its key).
    pub name: Option<String>,
    /// A key the source gives (Moodle's `idnumber`), used when it is a valid quizd key.
    pub id: Option<String>,
    /// The line it starts on.
    pub line: u32,
    pub points: Option<f64>,
    pub prompt: String,
    pub explanation: Option<String>,
    pub answer: DraftAnswer,
    /// Shown for a wrong answer (true/false, numeric, short text).
    pub wrong_feedback: Option<String>,
}

/// A question not imported, and why.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Skipped {
    /// Its name or title in the source, if any.
    pub name: Option<String>,
    /// Its kind in the source's words (`essay`, `matching`, `category`, …).
    pub kind: String,
    /// The line it starts on.
    pub line: u32,
    pub reason: String,
}

/// Something imported, but not exactly as the source had it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Note {
    /// The question's key in quizd, when the note is about one question.
    pub question: Option<String>,
    /// The line it is about; 0 for the document as a whole.
    pub line: u32,
    pub note: String,
}

/// A bank a document makes (a Moodle category that random questions draw from).
#[derive(Debug, Clone, PartialEq)]
pub struct DraftBank {
    pub key: String,
    /// Its questions, by index in [`Draft::questions`], in order.
    pub questions: Vec<usize>,
}

/// A slot drawing from a [`DraftBank`].
#[derive(Debug, Clone, PartialEq)]
pub struct DraftSlot {
    /// The bank, by index in [`Draft::banks`].
    pub bank: usize,
    pub draw: u32,
    pub tag: Option<String>,
    /// Its place: before the fixed question of index `before` in [`Draft::questions`] (or
    /// after them all).
    pub before: usize,
}

/// What a reader made of a document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Draft {
    pub questions: Vec<DraftQuestion>,
    pub skipped: Vec<Skipped>,
    /// Notes by the question's index in `questions` (or none, for the document).
    pub notes: Vec<(Option<usize>, u32, String)>,
    /// Banks and the slots that draw from them; every question in no bank is fixed.
    pub banks: Vec<DraftBank>,
    pub slots: Vec<DraftSlot>,
    /// The tags of bank questions, by index in `questions`.
    pub tags: Vec<(usize, Vec<String>)>,
}

impl Draft {
    pub fn skip(&mut self, name: Option<&str>, kind: &str, line: u32, reason: impl Into<String>) {
        self.skipped.push(Skipped {
            name: name.map(str::to_string),
            kind: kind.to_string(),
            line,
            reason: reason.into(),
        });
    }

    /// A note on the question about to be pushed (index `questions.len()`).
    pub fn note_next(&mut self, line: u32, note: impl Into<String>) {
        self.notes
            .push((Some(self.questions.len()), line, note.into()));
    }

    /// Counts a question read (kept or skipped) against [`MAX_QUESTIONS`].
    pub fn check_count(&self, line: u32) -> Result<(), String> {
        if self.questions.len() + self.skipped.len() >= MAX_QUESTIONS {
            return Err(format!(
                "line {line}: more than {MAX_QUESTIONS} questions in one document"
            ));
        }
        Ok(())
    }
}

/// The quiz an import makes: what the document does not say.
#[derive(Debug, Clone)]
pub struct Settings {
    pub slug: String,
    pub title: String,
    pub source_locale: String,
    pub visibility: Visibility,
    pub intro: Option<String>,
    pub practice: Option<Policy>,
    /// The explanation given to a question whose source has none (quizd needs one for every
    /// question); `None`: such a question refuses the import.
    pub explanation_default: Option<String>,
}

/// What an import did, question by question.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Report {
    pub format: Format,
    /// The keys of the imported questions, in order.
    pub imported: Vec<String>,
    pub skipped: Vec<Skipped>,
    pub notes: Vec<Note>,
}

/// Why an import was refused; nothing was imported.
#[derive(Debug, Clone, PartialEq)]
pub enum Refused {
    /// The document cannot be read.
    Malformed(String),
    /// The questions read are refused by quizd's checks; every problem, then what was skipped.
    Content(Vec<String>),
}

/// Reads an upload in `format` and validates it as a quiz with `settings`: text formats as
/// UTF-8 through their reader and [`build`]; a QTI package through `content::qti`, which
/// compiles it itself (its titles and every locale kept), then named `settings.slug` with
/// its visibility and practice policy. Pure (CPU work: callers run it off the HTTP workers).
pub fn read_upload(
    format: Format,
    bytes: &[u8],
    settings: &Settings,
) -> Result<(QuizContent, Report), Refused> {
    if matches!(format, Format::Qti3 | Format::Qti12)
        || (format == Format::MoodleXml && super::qti::is_qti12_document(bytes))
    {
        return read_qti(bytes, settings);
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| Refused::Malformed("The body is not UTF-8.".into()))?;
    if text.contains('\0') {
        return Err(Refused::Malformed(
            "The body contains a NUL character.".into(),
        ));
    }
    let draft = format.read(text).map_err(Refused::Malformed)?;
    build(format, draft, settings)
}

fn read_qti(bytes: &[u8], settings: &Settings) -> Result<(QuizContent, Report), Refused> {
    use super::qti::{Package, QtiError, QtiImport, SkippedItem};
    let skipped = |s: Vec<SkippedItem>| -> Vec<Skipped> {
        s.into_iter()
            .map(|s| Skipped {
                name: Some(s.item),
                kind: s.interaction.unwrap_or_else(|| "item".into()),
                line: 0,
                reason: format!("{}: {}", s.file, s.reason),
            })
            .collect()
    };
    match super::qti::read(bytes) {
        Ok(Package::Qti12(draft)) => build(Format::Qti12, draft, settings),
        Ok(Package::Qti(import)) => {
            let QtiImport {
                mut content,
                report,
                ..
            } = *import;
            // The package's own slug is replaced by the one asked for, which the compiler
            // therefore did not see.
            super::check_slug(&settings.slug).map_err(|why| Refused::Content(vec![why]))?;
            content.slug = settings.slug.clone();
            content.visibility = settings.visibility;
            content.practice = settings.practice.clone();
            Ok((
                content,
                Report {
                    format: Format::Qti3,
                    imported: report.imported.into_iter().map(|i| i.key).collect(),
                    skipped: skipped(report.skipped),
                    notes: (report.notes.into_iter())
                        .map(|note| Note {
                            question: None,
                            line: 0,
                            note,
                        })
                        .collect(),
                },
            ))
        }
        Err(QtiError::Refused(why)) => Err(Refused::Malformed(why)),
        Err(QtiError::Invalid { errors, report }) => {
            let mut problems: Vec<String> = errors.iter().map(ToString::to_string).collect();
            problems.extend(skipped(report.skipped).into_iter().map(|s| {
                format!(
                    "skipped {} '{}': {}",
                    s.kind,
                    s.name.unwrap_or_default(),
                    s.reason
                )
            }));
            Err(Refused::Content(problems))
        }
    }
}

/// A quizd key made from `s`: lowercase ASCII letters and digits, other runs as one `-`, at
/// most `max` bytes; empty when nothing is left.
pub fn slugify(s: &str, max: usize) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            if out.len() >= max {
                break;
            }
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            if out.len() + 1 >= max {
                break;
            }
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// Keys handed out: `base` if it is not taken, else `base-2`, `base-3`, …. Each base
/// remembers the next suffix to try, so 2 000 questions of one name cost 2 000 steps, not
/// 2 000² lookups each.
#[derive(Default)]
struct Taken {
    keys: std::collections::HashSet<String>,
    next: std::collections::HashMap<String, usize>,
}

impl Taken {
    fn unique(&mut self, base: String) -> String {
        let mut key = base.clone();
        let n = self.next.entry(base.clone()).or_insert(2);
        while self.keys.contains(&key) {
            let suffix = format!("-{n}");
            let mut b = base.clone();
            b.truncate(64 - suffix.len());
            key = format!("{b}{suffix}");
            *n += 1;
        }
        self.keys.insert(key.clone());
        key
    }
}

fn close(a: f64, b: f64) -> bool {
    // Moodle writes thirds as 33.33333 (%): five decimals.
    (a - b).abs() < 1e-4
}

fn percent(f: f64) -> String {
    let p = format!("{:.5}", f * 100.0);
    p.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A choice question's options as quizd keeps them: which are right, and whether it is a
/// single- or multiple-choice question; or why it cannot be one.
///
/// quizd scores a multiple-choice answer (right picks − wrong picks) / right options, at
/// least 0: each right option is worth an equal share, and each wrong pick takes one share
/// back. So a source's fractions map exactly when the right options share the points equally
/// (1/k each, k right options) and each wrong option is −1/k. Equal shares with another
/// penalty (0, −100 %) import, graded by quizd's rule, with a note; unequal shares cannot be
/// reproduced and the question is skipped. A single-choice question needs exactly one option
/// worth 100 % and the others at most 0 (a penalty becomes 0, with a note).
fn choice_kind(
    single: bool,
    options: &[DraftOption],
    notes: &mut Vec<String>,
) -> Result<QuestionKind, String> {
    let right: Vec<&DraftOption> = options.iter().filter(|o| o.fraction > 0.0).collect();
    if right.is_empty() {
        return Err("no option is worth any points".into());
    }
    if single {
        if let Some(o) = right.iter().find(|o| !close(o.fraction, 1.0)) {
            return Err(format!(
                "option '{}' is worth {} %: quizd's single choice has one fully right option and \
                 no partial credit",
                o.text,
                percent(o.fraction)
            ));
        }
        if right.len() > 1 {
            return Err(format!(
                "{} options are each fully right: quizd's single choice has exactly one",
                right.len()
            ));
        }
        let penalties: Vec<&DraftOption> = options.iter().filter(|o| o.fraction < 0.0).collect();
        if !penalties.is_empty() {
            notes.push(format!(
                "{} wrong option(s) took points off in the source ({} %); quizd scores a wrong \
                 answer 0",
                penalties.len(),
                percent(penalties[0].fraction)
            ));
        }
        return Ok(QuestionKind::Single);
    }
    let share = 1.0 / right.len() as f64;
    if let Some(o) = right.iter().find(|o| !close(o.fraction, share)) {
        return Err(format!(
            "the right options are not worth equal shares (option '{}' is worth {} %, an equal \
             share is {} %): quizd gives each right option the same share",
            o.text,
            percent(o.fraction),
            percent(share)
        ));
    }
    let wrong: Vec<&DraftOption> = options.iter().filter(|o| o.fraction <= 0.0).collect();
    if let Some(o) = wrong.iter().find(|o| !close(o.fraction, -share)) {
        notes.push(format!(
            "graded by quizd's rule: each wrong option picked takes back one right option's \
             share (−{} %); in the source option '{}' was worth {} %",
            percent(share),
            o.text,
            percent(o.fraction)
        ));
    }
    Ok(QuestionKind::Multiple)
}

fn text_value(s: &str) -> toml::Value {
    toml::Value::String(s.to_string())
}

/// Validates `draft` as quiz `settings.slug` through the content compiler: the content and
/// the report, or every problem (nothing imported).
pub fn build(
    format: Format,
    draft: Draft,
    settings: &Settings,
) -> Result<(QuizContent, Report), Refused> {
    let Draft {
        questions,
        mut skipped,
        notes: draft_notes,
        banks,
        slots,
        tags,
    } = draft;
    let bank_of = |i: usize| banks.iter().position(|b| b.questions.contains(&i));
    let mut taken = Taken::default();
    let mut notes: Vec<Note> = Vec::new();
    let mut kept = Vec::new();
    // Key → where the question came from, for the compiler's messages.
    let mut origin: Vec<(String, String)> = Vec::new();
    let mut keys = Vec::new();
    for (i, q) in questions.into_iter().enumerate() {
        let where_ = match &q.name {
            Some(n) => format!("question '{n}' (line {})", q.line),
            None => format!("the question at line {}", q.line),
        };
        let kind_name_for_skip = match &q.answer {
            DraftAnswer::Choice { .. } => "multichoice",
            DraftAnswer::TrueFalse { .. } => "truefalse",
            DraftAnswer::Numeric { .. } => "numerical",
            DraftAnswer::ShortText { .. } => "shortanswer",
        };
        let mut q_notes: Vec<String> = draft_notes
            .iter()
            .filter(|(n, _, _)| *n == Some(i))
            .map(|(_, _, s)| s.clone())
            .collect();
        let mut t = toml::Table::new();
        let kind = match &q.answer {
            DraftAnswer::Choice { single, options } => {
                match choice_kind(*single, options, &mut q_notes) {
                    Ok(k) => k,
                    Err(reason) => {
                        skipped.push(Skipped {
                            name: q.name.clone(),
                            kind: kind_name_for_skip.into(),
                            line: q.line,
                            reason,
                        });
                        continue;
                    }
                }
            }
            DraftAnswer::TrueFalse { .. } => QuestionKind::TrueFalse,
            DraftAnswer::Numeric { .. } => QuestionKind::Numeric,
            DraftAnswer::ShortText { .. } => QuestionKind::ShortText,
        };
        let base =
            q.id.as_deref()
                .filter(|k| valid_key(k))
                .map(str::to_string)
                .or_else(|| {
                    q.name
                        .as_deref()
                        .filter(|n| valid_key(n))
                        .map(str::to_string)
                })
                .or_else(|| {
                    q.name
                        .as_deref()
                        .map(|n| slugify(n, 48))
                        .filter(|s| !s.is_empty())
                })
                .unwrap_or_else(|| format!("q{}", i + 1));
        let key = taken.unique(base);
        let kind_name = QuestionKind::ALL
            .iter()
            .find(|(_, k)| *k == kind)
            .map(|(n, _)| *n)
            .expect("every kind has a name");
        t.insert("key".into(), text_value(&key));
        t.insert("kind".into(), text_value(kind_name));
        if let Some(p) = q.points {
            t.insert("points".into(), toml::Value::Float(p));
        }
        t.insert("prompt".into(), text_value(&q.prompt));
        let explanation = match q.explanation.as_deref().filter(|e| !e.trim().is_empty()) {
            Some(e) => e.to_string(),
            None => match &settings.explanation_default {
                Some(d) => {
                    q_notes.push(
                        "the source has no explanation (general feedback): given the default"
                            .into(),
                    );
                    d.clone()
                }
                None => String::new(),
            },
        };
        t.insert("explanation".into(), text_value(&explanation));
        let mut wrong_feedback = q.wrong_feedback.clone();
        match &q.answer {
            DraftAnswer::Choice { options, .. } => {
                let mut option_keys = Taken::default();
                let list = options
                    .iter()
                    .enumerate()
                    .map(|(n, o)| {
                        let base = Some(slugify(&o.text, 32))
                            .filter(|s| valid_key(s))
                            .unwrap_or_else(|| format!("o{}", n + 1));
                        let mut ot = toml::Table::new();
                        ot.insert("key".into(), text_value(&option_keys.unique(base)));
                        ot.insert("text".into(), text_value(&o.text));
                        if o.fraction > 0.0 {
                            ot.insert("correct".into(), toml::Value::Boolean(true));
                        }
                        if let Some(f) = o.feedback.as_deref().filter(|f| !f.trim().is_empty()) {
                            ot.insert("feedback".into(), text_value(f));
                        }
                        toml::Value::Table(ot)
                    })
                    .collect();
                t.insert("options".into(), toml::Value::Array(list));
            }
            DraftAnswer::TrueFalse {
                answer,
                right_feedback,
                wrong_feedback: wrong,
            } => {
                t.insert("answer".into(), toml::Value::Boolean(*answer));
                if wrong_feedback.is_none() {
                    wrong_feedback = wrong.clone().filter(|f| !f.trim().is_empty());
                }
                if let Some(r) = right_feedback.as_deref().filter(|f| !f.trim().is_empty())
                    && r.trim() != explanation.trim()
                {
                    q_notes.push(format!(
                        "the feedback for the right answer ('{r}') is not kept: quizd shows the \
                         explanation then"
                    ));
                }
            }
            DraftAnswer::Numeric { answer, tolerance } => {
                t.insert("answer".into(), toml::Value::Float(*answer));
                t.insert("tolerance".into(), toml::Value::Float(*tolerance));
            }
            DraftAnswer::ShortText {
                accepted,
                case_sensitive,
            } => {
                t.insert(
                    "accepted".into(),
                    toml::Value::Array(accepted.iter().map(|a| text_value(a)).collect()),
                );
                if *case_sensitive {
                    t.insert("case_sensitive".into(), toml::Value::Boolean(true));
                }
            }
        }
        if let Some(w) = wrong_feedback.filter(|w| !w.trim().is_empty()) {
            if kind.has_options() && kind != QuestionKind::TrueFalse {
                q_notes.push(format!(
                    "the feedback for a wrong answer ('{w}') is not kept: quizd gives feedback per option"
                ));
            } else {
                t.insert("wrong_feedback".into(), text_value(&w));
            }
        }
        for n in q_notes {
            notes.push(Note {
                question: Some(key.clone()),
                line: q.line,
                note: n,
            });
        }
        if bank_of(i).is_some()
            && let Some((_, tags)) = tags.iter().find(|(n, _)| *n == i)
            && !tags.is_empty()
        {
            let list = tags.iter().map(|t| text_value(t)).collect();
            t.insert("tags".into(), toml::Value::Array(list));
        }
        origin.push((key.clone(), where_));
        keys.push(key);
        kept.push((i, t));
    }
    // Fixed questions and slots in document order; bank questions in their banks.
    let mut entries = Vec::new();
    let mut bank_entries: Vec<Vec<toml::Value>> = vec![Vec::new(); banks.len()];
    let slot_entry = |slot: &DraftSlot| {
        let mut t = toml::Table::new();
        t.insert("bank".into(), text_value(&banks[slot.bank].key));
        t.insert("draw".into(), toml::Value::Integer(i64::from(slot.draw)));
        if let Some(tag) = &slot.tag {
            t.insert("tag".into(), text_value(tag));
        }
        toml::Value::Table(t)
    };
    let mut placed = 0;
    for (i, t) in kept {
        while let Some(slot) = slots.get(placed).filter(|s| s.before <= i) {
            entries.push(slot_entry(slot));
            placed += 1;
        }
        match bank_of(i) {
            Some(b) => bank_entries[b].push(toml::Value::Table(t)),
            None => entries.push(toml::Value::Table(t)),
        }
    }
    entries.extend(slots[placed..].iter().map(slot_entry));
    for (n, line, note) in &draft_notes {
        if n.is_none() {
            notes.push(Note {
                question: None,
                line: *line,
                note: note.clone(),
            });
        }
    }
    skipped.sort_by_key(|s| s.line);
    notes.sort_by_key(|n| n.line);

    let mut quiz = toml::Table::new();
    quiz.insert("slug".into(), text_value(&settings.slug));
    quiz.insert("source_locale".into(), text_value(&settings.source_locale));
    quiz.insert("title".into(), text_value(&settings.title));
    if let Some(intro) = &settings.intro {
        quiz.insert("intro".into(), text_value(intro));
    }
    let visibility = match settings.visibility {
        Visibility::Public => "public",
        Visibility::Private => "private",
    };
    quiz.insert("visibility".into(), text_value(visibility));
    if let Some(p) = &settings.practice {
        let value = toml::Value::try_from(p).map_err(|e| Refused::Malformed(e.to_string()))?;
        quiz.insert("practice".into(), value);
    }
    quiz.insert("questions".into(), toml::Value::Array(entries));
    if !banks.is_empty() {
        let list = (banks.iter().zip(bank_entries))
            .map(|(b, questions)| {
                let mut t = toml::Table::new();
                t.insert("key".into(), text_value(&b.key));
                t.insert("questions".into(), toml::Value::Array(questions));
                toml::Value::Table(t)
            })
            .collect();
        quiz.insert("banks".into(), toml::Value::Array(list));
    }
    let text = toml::to_string(&quiz).map_err(|e| Refused::Malformed(e.to_string()))?;
    let source = QuizSource {
        quiz: SourceFile {
            name: format!("the {} document", format.name()),
            text,
        },
        translations: Vec::new(),
    };
    match compile(&source) {
        Ok(content) => Ok((
            content,
            Report {
                format,
                imported: keys,
                skipped,
                notes,
            },
        )),
        Err(errors) => {
            let mut problems: Vec<String> = errors
                .into_iter()
                .map(|e| {
                    let at = e.question.as_deref().and_then(|k| {
                        origin
                            .iter()
                            .find(|(key, _)| key == k)
                            .map(|(_, w)| w.clone())
                    });
                    match (at, e.question) {
                        (Some(at), _) => format!("{at}: {}", e.message),
                        (None, Some(q)) => format!("{q}: {}", e.message),
                        (None, None) => e.message,
                    }
                })
                .collect();
            if problems.iter().any(|p| p.contains("explanation is empty")) {
                problems.push(
                    "every quizd question needs an explanation (Moodle's general feedback, GIFT's \
                     ####): add them, or give a default (`explanation_default=` in the API, \
                     `--explanation-default` on the command line)"
                        .into(),
                );
            }
            for s in &skipped {
                problems.push(format!(
                    "skipped {} '{}' (line {}): {}",
                    s.kind,
                    s.name.as_deref().unwrap_or("-"),
                    s.line,
                    s.reason
                ));
            }
            Err(Refused::Content(problems))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(text: &str, fraction: f64) -> DraftOption {
        DraftOption {
            text: text.into(),
            fraction,
            feedback: None,
        }
    }

    #[test]
    fn equal_shares_with_matching_penalties_map_exactly_and_others_are_noted_or_refused() {
        let mut notes = Vec::new();
        let exact = [option("a", 0.5), option("b", 0.5), option("c", -0.5)];
        assert_eq!(
            choice_kind(false, &exact, &mut notes),
            Ok(QuestionKind::Multiple)
        );
        assert!(notes.is_empty());
        let no_penalty = [
            option("a", 0.33333),
            option("b", 0.33333),
            option("c", 0.33333),
            option("d", 0.0),
        ];
        assert_eq!(
            choice_kind(false, &no_penalty, &mut notes),
            Ok(QuestionKind::Multiple)
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
        let unequal = [option("a", 0.7), option("b", 0.3)];
        assert!(choice_kind(false, &unequal, &mut notes).is_err());
        let partial_single = [option("a", 1.0), option("b", 0.5)];
        assert!(choice_kind(true, &partial_single, &mut notes).is_err());
        assert_eq!(
            choice_kind(true, &[option("a", 1.0), option("b", -0.25)], &mut notes),
            Ok(QuestionKind::Single)
        );
    }

    mod round_trip {
        use proptest::prelude::*;

        use super::super::*;
        use crate::model::Question;

        /// Texts with every mark GIFT and XML escape, and line breaks; no leading or trailing
        /// space (both formats trim), no `->` (GIFT's matching), no leading `%` or `[`, no `*`
        /// (a short answer's wildcard).
        fn text() -> impl Strategy<Value = String> {
            "[A-Za-z0-9][A-Za-z0-9 ,.?!'&<\"~=#{}:/()\\\n-]{0,16}[A-Za-z0-9.?]"
        }

        fn question() -> impl Strategy<Value = toml::Table> {
            let common = (
                "[a-z][a-z0-9-]{0,8}",
                text(),
                text(),
                1u32..20,
                proptest::option::of(text()),
            );
            let options =
                prop::collection::vec((text(), any::<bool>(), proptest::option::of(text())), 2..5);
            (
                common,
                0usize..5,
                options,
                any::<bool>(),
                -1e6..1e6f64,
                0.0..100.0f64,
            )
                .prop_map(
                    |(
                        (key, prompt, explanation, halves, wrong),
                        kind,
                        options,
                        flag,
                        number,
                        tolerance,
                    )| {
                        let mut t = toml::Table::new();
                        t.insert("key".into(), key.into());
                        t.insert("prompt".into(), prompt.into());
                        t.insert("explanation".into(), explanation.into());
                        t.insert("points".into(), (f64::from(halves) / 2.0).into());
                        let kinds = ["single", "multiple", "true_false", "numeric", "short_text"];
                        t.insert("kind".into(), kinds[kind].into());
                        match kinds[kind] {
                            "single" | "multiple" => {
                                let single = kinds[kind] == "single";
                                let list: Vec<toml::Value> = options
                                    .iter()
                                    .enumerate()
                                    .map(|(i, (text, correct, feedback))| {
                                        let mut o = toml::Table::new();
                                        o.insert("key".into(), format!("o{i}").into());
                                        o.insert("text".into(), text.clone().into());
                                        let correct =
                                            if single { i == 0 } else { *correct || i == 0 };
                                        o.insert("correct".into(), correct.into());
                                        if let Some(f) = feedback {
                                            o.insert("feedback".into(), f.clone().into());
                                        }
                                        toml::Value::Table(o)
                                    })
                                    .collect();
                                t.insert("options".into(), list.into());
                                return t;
                            }
                            "true_false" => {
                                t.insert("answer".into(), flag.into());
                            }
                            "numeric" => {
                                t.insert("answer".into(), number.into());
                                t.insert("tolerance".into(), tolerance.into());
                            }
                            _ => {
                                let accepted: Vec<toml::Value> =
                                    options.iter().map(|(a, _, _)| a.clone().into()).collect();
                                t.insert("accepted".into(), accepted.into());
                                t.insert("case_sensitive".into(), flag.into());
                            }
                        }
                        if let Some(w) = wrong {
                            t.insert("wrong_feedback".into(), w.into());
                        }
                        t
                    },
                )
        }

        /// A quiz with a Bengali translation of every prompt.
        fn quiz() -> impl Strategy<Value = QuizContent> {
            prop::collection::vec(question(), 1..6).prop_map(|questions| {
                let mut quiz = toml::Table::new();
                quiz.insert("slug".into(), "round-trip".into());
                quiz.insert("title".into(), "Round & trip".into());
                let mut bn = toml::Table::new();
                let mut entries = Vec::new();
                for (i, mut q) in questions.into_iter().enumerate() {
                    let key = format!("{}-{i}", q["key"].as_str().unwrap());
                    q.insert("key".into(), key.clone().into());
                    let mut t = toml::Table::new();
                    t.insert("prompt".into(), format!("প্রশ্ন {i}").into());
                    bn.insert(key, toml::Value::Table(t));
                    entries.push(toml::Value::Table(q));
                }
                quiz.insert("questions".into(), entries.into());
                let mut translation = toml::Table::new();
                translation.insert("questions".into(), toml::Value::Table(bn));
                let file = |name: &str, t: &toml::Table| SourceFile {
                    name: name.into(),
                    text: toml::to_string(t).unwrap(),
                };
                compile(&QuizSource {
                    quiz: file("quiz.toml", &quiz),
                    translations: vec![("bn".into(), file("bn.toml", &translation))],
                })
                .unwrap()
            })
        }

        /// What an export and an import carry of a question: all but option keys and
        /// translations; through GIFT, not case sensitivity nor a numeric question's wrong
        /// feedback (GIFT cannot say them).
        fn carried(q: &Question, sl: &str, gift: bool) -> Question {
            let only = |t: &crate::i18n::Text| {
                t.iter()
                    .filter(|(l, _)| *l == sl)
                    .map(|(l, s)| (l.clone(), s.clone()))
                    .collect()
            };
            let mut q = q.clone();
            // No exchange format carries images (each export says so).
            q.image = None;
            q.prompt = only(&q.prompt);
            q.explanation = only(&q.explanation);
            q.wrong_feedback = q.wrong_feedback.as_ref().map(only);
            if q.kind != QuestionKind::TrueFalse {
                for (i, o) in q.options.iter_mut().enumerate() {
                    o.key = format!("#{i}");
                    o.text = only(&o.text);
                    o.feedback = o.feedback.as_ref().map(only);
                }
            }
            if gift {
                if let Some(st) = &mut q.short_text {
                    st.case_sensitive = false;
                }
                if q.kind == QuestionKind::Numeric {
                    q.wrong_feedback = None;
                }
            }
            q
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]

            #[test]
            fn an_export_imported_again_is_the_same_quiz_in_its_source_locale(content in quiz()) {
                let sl = content.source_locale.clone();
                prop_assert_eq!(&content.locales, &vec![sl.clone(), "bn".to_string()]);
                for format in [Format::MoodleXml, Format::Gift] {
                    let text = String::from_utf8(format.write(&content, 3).unwrap().unwrap()).unwrap();
                    let draft = format.read(&text).unwrap();
                    let settings = Settings {
                        slug: content.slug.clone(),
                        title: content.title[&sl].clone(),
                        source_locale: sl.clone(),
                        visibility: content.visibility,
                        intro: None,
                        practice: None,
                        explanation_default: None,
                    };
                    let (back, report) = build(format, draft, &settings).unwrap();
                    prop_assert!(report.skipped.is_empty(), "{:?}", report.skipped);
                    prop_assert_eq!(&back.locales, &vec![sl.clone()]);
                    prop_assert_eq!(&back.title, &content.title.iter().filter(|(l, _)| **l == sl).map(|(l, s)| (l.clone(), s.clone())).collect::<crate::i18n::Text>());
                    let gift = format == Format::Gift;
                    let want: Vec<Question> = content.questions.iter().map(|q| carried(q, &sl, gift)).collect();
                    let got: Vec<Question> = back.questions.iter().map(|q| carried(q, &sl, gift)).collect();
                    prop_assert_eq!(got, want, "{:?}:\n{}", format, text);
                }
            }
        }
    }

    #[test]
    fn slugify_keeps_ascii_words_and_bounds_the_length() {
        assert_eq!(slugify("  Capital of France? ", 64), "capital-of-france");
        assert_eq!(slugify("বাংলা", 64), "");
        assert_eq!(slugify("abcdef ghij", 8), "abcdef-g");
    }
}
