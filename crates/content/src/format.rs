//! The content file format (documented in `content/README.md`) and its validation.
//! A quiz is `quiz.toml` in its source language plus one `<locale>.toml` per translation.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use super::media::{self, Media, MediaFile};
use super::model::{
    Bank, Choice, Image, NumericKey, QuestionKind, QuizContent, ScoreBand, ShortTextKey, Slot,
    Visibility,
};
use super::{ContentError, Question};
use crate::i18n::{Text, canonical_tag};
use crate::policy::Policy;

/// One file's name (for messages) and text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
}

/// The files of one quiz: `quiz.toml` and its translations keyed by locale tag as written.
#[derive(Debug, Clone)]
pub struct QuizSource {
    pub quiz: SourceFile,
    pub translations: Vec<(String, SourceFile)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QuizFile {
    slug: String,
    source_locale: Option<String>,
    title: String,
    intro: Option<String>,
    #[serde(default)]
    visibility: Visibility,
    practice: Option<Policy>,
    /// Serve a translation whose source text changed since (see
    /// [`QuizContent::keep_stale_translations`]).
    #[serde(default)]
    keep_stale_translations: bool,
    #[serde(default)]
    questions: Vec<EntryFile>,
    #[serde(default)]
    banks: Vec<BankFile>,
    #[serde(default)]
    score_bands: Vec<ScoreBandFile>,
}

/// One `[[score_bands]]` table: feedback for finished attempts scoring at least `min` %.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScoreBandFile {
    min: i64,
    text: String,
}

/// Checks the bands (each `min` a whole percentage in 0..=100, in ascending order, each once,
/// with a text) and compiles them.
fn compile_score_bands(
    bands: Vec<ScoreBandFile>,
    sl: &str,
    errs: &mut Errors<'_>,
) -> Vec<ScoreBand> {
    let mut out: Vec<ScoreBand> = Vec::new();
    for (i, b) in bands.into_iter().enumerate() {
        let label = format!("score band #{} (min = {})", i + 1, b.min);
        let bn = Some(label.as_str());
        let Some(min) = u8::try_from(b.min).ok().filter(|m| *m <= 100) else {
            errs.add(bn, "min must be a whole percentage from 0 to 100");
            continue;
        };
        if b.text.trim().is_empty() {
            errs.add(bn, "the band has no text");
        }
        match out.last() {
            Some(prev) if prev.min == min => {
                errs.add(bn, format!("another band has min = {min}: each min once"));
                continue;
            }
            Some(prev) if prev.min > min => {
                errs.add(
                    bn,
                    format!(
                        "bands go by ascending min: this one comes after min = {}",
                        prev.min
                    ),
                );
                continue;
            }
            _ => {}
        }
        out.push(ScoreBand {
            min,
            text: text_in(sl, &b.text),
        });
    }
    out
}

/// One `[[questions]]` entry: a fixed question, or a slot (`bank`, `draw`, optional `tag`)
/// that draws from a bank in each attempt.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryFile {
    key: Option<String>,
    kind: Option<String>,
    points: Option<f64>,
    prompt: Option<String>,
    explanation: Option<String>,
    options: Option<Vec<OptionFile>>,
    answer: Option<toml::Value>,
    tolerance: Option<f64>,
    accepted: Option<Vec<String>>,
    case_sensitive: Option<bool>,
    wrong_feedback: Option<String>,
    tags: Option<Vec<String>>,
    image: Option<String>,
    image_alt: Option<String>,
    bank: Option<String>,
    draw: Option<i64>,
    tag: Option<String>,
}

enum Entry {
    Question(Box<QuestionFile>),
    Slot(Slot),
}

impl EntryFile {
    /// The entry as a question or a slot; `None` (with the problems in `errs`) when it is
    /// neither.
    fn into_slot_or_question(self, label: &str, errs: &mut Errors<'_>) -> Option<Entry> {
        if self.bank.is_some() || self.draw.is_some() || self.tag.is_some() {
            let slot = format!("slot {label}");
            let sn = Some(slot.as_str());
            for (field, present) in [
                ("key", self.key.is_some()),
                ("kind", self.kind.is_some()),
                ("points", self.points.is_some()),
                ("prompt", self.prompt.is_some()),
                ("explanation", self.explanation.is_some()),
                ("options", self.options.is_some()),
                ("answer", self.answer.is_some()),
                ("tolerance", self.tolerance.is_some()),
                ("accepted", self.accepted.is_some()),
                ("case_sensitive", self.case_sensitive.is_some()),
                ("wrong_feedback", self.wrong_feedback.is_some()),
                ("tags", self.tags.is_some()),
                ("image", self.image.is_some()),
                ("image_alt", self.image_alt.is_some()),
            ] {
                if present {
                    errs.add(
                        sn,
                        format!("a slot drawing from a bank has no `{field}` (its bank's questions have)"),
                    );
                }
            }
            let Some(bank) = self.bank else {
                errs.add(sn, "a slot needs the `bank` it draws from");
                return None;
            };
            let draw = match self.draw {
                Some(d) if d >= 1 => u32::try_from(d).unwrap_or(u32::MAX),
                Some(d) => {
                    errs.add(sn, format!("draw = {d}: a slot draws at least 1 question"));
                    return None;
                }
                None => {
                    errs.add(sn, "a slot needs `draw`, how many questions it draws (≥ 1)");
                    return None;
                }
            };
            return Some(Entry::Slot(Slot::Draw {
                bank,
                draw,
                tag: self.tag,
            }));
        }
        let mut missing = |field: &str, v: Option<String>| {
            if v.is_none() {
                errs.add(Some(label), format!("missing field `{field}`"));
            }
            v
        };
        let (key, kind, prompt, explanation) = (
            missing("key", self.key),
            missing("kind", self.kind),
            missing("prompt", self.prompt),
            missing("explanation", self.explanation),
        );
        Some(Entry::Question(Box::new(QuestionFile {
            key: key?,
            kind: kind?,
            points: self.points,
            prompt: prompt?,
            explanation: explanation?,
            options: self.options,
            answer: self.answer,
            tolerance: self.tolerance,
            accepted: self.accepted,
            case_sensitive: self.case_sensitive,
            wrong_feedback: self.wrong_feedback,
            tags: self.tags,
            image: self.image,
            image_alt: self.image_alt,
        })))
    }
}

/// A `[[banks]]` table: a key and its questions (each as a fixed question is written, with
/// optional `tags`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BankFile {
    key: String,
    #[serde(default)]
    questions: Vec<QuestionFile>,
}

/// Refuses slots that cannot be filled in every attempt: an unknown bank, more drawn than the
/// bank (or its tag filter) holds, and two slots of one bank that could draw one question
/// (their candidates must be disjoint, so each slot draws on its own and an attempt never
/// serves a question twice).
fn check_slots(layout: &[Slot], banks: &[Bank], questions: &[Question], errs: &mut Errors<'_>) {
    let mut taken: Vec<(&str, &str, usize)> = Vec::new();
    for (i, slot) in layout.iter().enumerate() {
        let Slot::Draw { bank, draw, tag } = slot else {
            continue;
        };
        let label = format!("slot #{} (bank '{bank}')", i + 1);
        let sn = Some(label.as_str());
        let Some(b) = banks.iter().find(|b| b.key == *bank) else {
            let known: Vec<&str> = banks.iter().map(|b| b.key.as_str()).collect();
            errs.add(
                sn,
                format!(
                    "unknown bank '{bank}' (the quiz's banks: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            );
            continue;
        };
        let candidates: Vec<&str> = b
            .questions
            .iter()
            .filter(|k| {
                questions
                    .iter()
                    .find(|q| q.key == **k)
                    .is_some_and(|q| tag.as_ref().is_none_or(|t| q.tags.contains(t)))
            })
            .map(String::as_str)
            .collect();
        if *draw as usize > candidates.len() {
            match tag {
                Some(t) => errs.add(
                    sn,
                    format!(
                        "draws {draw} questions tagged '{t}', but bank '{bank}' holds {} so tagged",
                        candidates.len()
                    ),
                ),
                None => errs.add(
                    sn,
                    format!(
                        "draws {draw} questions, but bank '{bank}' holds {}",
                        candidates.len()
                    ),
                ),
            }
        }
        for k in &candidates {
            if let Some((_, _, other)) = taken.iter().find(|(b2, k2, _)| *b2 == bank && k2 == k) {
                errs.add(
                    sn,
                    format!(
                        "can draw question '{k}', which slot #{} draws from too: slots of one bank need disjoint tags",
                        other + 1
                    ),
                );
                break;
            }
        }
        taken.extend(candidates.iter().map(|k| (bank.as_str(), *k, i)));
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QuestionFile {
    key: String,
    kind: String,
    points: Option<f64>,
    prompt: String,
    explanation: String,
    options: Option<Vec<OptionFile>>,
    answer: Option<toml::Value>,
    tolerance: Option<f64>,
    accepted: Option<Vec<String>>,
    case_sensitive: Option<bool>,
    wrong_feedback: Option<String>,
    tags: Option<Vec<String>>,
    /// A file in the quiz's directory, e.g. `media/ring.png`.
    image: Option<String>,
    image_alt: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionFile {
    key: String,
    text: String,
    #[serde(default)]
    correct: bool,
    feedback: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TranslationFile {
    title: Option<String>,
    intro: Option<String>,
    /// By the band's `min`: `[score_bands.80]`.
    #[serde(default)]
    score_bands: BTreeMap<String, ScoreBandTranslation>,
    #[serde(default)]
    questions: BTreeMap<String, QuestionTranslation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScoreBandTranslation {
    text: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QuestionTranslation {
    prompt: Option<String>,
    image_alt: Option<String>,
    explanation: Option<String>,
    wrong_feedback: Option<String>,
    accepted: Option<Vec<String>>,
    #[serde(default)]
    options: BTreeMap<String, OptionTranslation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionTranslation {
    text: Option<String>,
    feedback: Option<String>,
}

/// Labels for generated true/false options, in the locales quizd knows.
const TRUE_FALSE_LABELS: [(&str, &str, &str); 3] = [
    ("en", "True", "False"),
    ("bn", "সত্য", "মিথ্যা"),
    ("id", "Benar", "Salah"),
];

pub(super) fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 64
        && key.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Shown in messages so a bad file can be found and fixed.
struct Errors<'a> {
    file: &'a str,
    list: Vec<ContentError>,
}

impl Errors<'_> {
    fn add(&mut self, question: Option<&str>, message: impl Into<String>) {
        self.list.push(ContentError {
            file: self.file.to_string(),
            question: question.map(str::to_string),
            message: message.into(),
        });
    }
}

fn text_in(locale: &str, s: &str) -> Text {
    BTreeMap::from([(locale.to_string(), s.to_string())])
}

/// Compiles a quiz's files into its normalized content, or every problem found.
/// Compiles a quiz from `quiz.toml` text and `(locale, <locale>.toml text)` pairs, for tests.
#[cfg(test)]
pub fn compile_texts(quiz: &str, translations: &[(&str, &str)]) -> QuizContent {
    compile(&QuizSource {
        quiz: SourceFile {
            name: "quiz.toml".into(),
            text: quiz.into(),
        },
        translations: translations
            .iter()
            .map(|(locale, text)| {
                let file = SourceFile {
                    name: format!("{locale}.toml"),
                    text: (*text).into(),
                };
                (locale.to_string(), file)
            })
            .collect(),
    })
    .unwrap()
}

/// Slugs that name an endpoint under `/v1/quizzes/`, not a quiz.
pub const RESERVED_SLUGS: [&str; 1] = ["import"];

/// A quiz's slug: lowercase letters, digits and `-`, and not an endpoint's name.
pub fn check_slug(slug: &str) -> Result<(), String> {
    if !valid_key(slug) || slug.contains('_') {
        return Err(format!(
            "slug '{slug}' must be lowercase letters, digits and '-'"
        ));
    }
    if RESERVED_SLUGS.contains(&slug) {
        return Err(format!(
            "slug '{slug}' is reserved: /v1/quizzes/{slug} is an endpoint"
        ));
    }
    Ok(())
}

/// Compiles a quiz that has no directory (a body sent over the API, a converted import): a
/// question's `image` is refused, since there is no file to read it from.
pub fn compile(source: &QuizSource) -> Result<QuizContent, Vec<ContentError>> {
    compile_with(source, None)
}

/// Compiles a quiz read from its directory `dir`, whose questions' images are files in it.
pub fn compile_dir(source: &QuizSource, dir: &Path) -> Result<QuizContent, Vec<ContentError>> {
    compile_with(source, Some(dir))
}

/// The images a quiz's questions carry, read from its directory as they come, once each, and
/// counted against the quiz's limit.
struct MediaReader<'a> {
    dir: Option<&'a Path>,
    files: Vec<MediaFile>,
    /// The files read so far by the path written, so that a file many questions show is read
    /// (and hashed) once.
    read: BTreeMap<String, MediaFile>,
    total: u64,
}

impl MediaReader<'_> {
    /// The image of a question with `image` and `image_alt` as written, or its problems.
    fn image(
        &mut self,
        path: Option<String>,
        alt: Option<String>,
        qn: Option<&str>,
        sl: &str,
        errs: &mut Errors<'_>,
    ) -> Option<Image> {
        let Some(path) = path else {
            if alt.is_some() {
                errs.add(qn, "`image_alt` without an `image`");
            }
            return None;
        };
        let alt = match alt {
            Some(a) if !a.trim().is_empty() => a,
            Some(_) => {
                errs.add(qn, "image_alt is empty");
                return None;
            }
            None => {
                errs.add(
                    qn,
                    format!("image '{path}' needs `image_alt`: what it shows, for people who cannot see it"),
                );
                return None;
            }
        };
        let Some(dir) = self.dir else {
            errs.add(
                qn,
                format!("image '{path}': images come with content files (a quiz directory), not in a body"),
            );
            return None;
        };
        let file = match self.read.get(&path) {
            Some(f) => f.clone(),
            None => match media::read_image(dir, &path) {
                Ok(f) => {
                    self.read.insert(path.clone(), f.clone());
                    f
                }
                Err(why) => {
                    errs.add(qn, why);
                    return None;
                }
            },
        };
        if !self.files.iter().any(|f| f.sha256 == file.sha256) {
            self.total += file.bytes.len() as u64;
            if self.total > media::MAX_QUIZ_MEDIA_BYTES {
                errs.add(
                    qn,
                    format!(
                        "image '{path}' takes the quiz's images to {} bytes; a quiz's images may have at most 10 MiB ({} bytes) together",
                        self.total,
                        media::MAX_QUIZ_MEDIA_BYTES
                    ),
                );
                return None;
            }
            self.files.push(file.clone());
        }
        let dims = file.kind.dimensions(&file.bytes);
        Some(Image {
            sha256: file.sha256,
            content_type: file.kind.content_type().to_string(),
            alt: text_in(sl, &alt),
            width: dims.map(|d| d.0),
            height: dims.map(|d| d.1),
        })
    }
}

fn compile_with(source: &QuizSource, dir: Option<&Path>) -> Result<QuizContent, Vec<ContentError>> {
    let mut media = MediaReader {
        dir,
        files: Vec::new(),
        read: BTreeMap::new(),
        total: 0,
    };
    let mut errs = Errors {
        file: &source.quiz.name,
        list: Vec::new(),
    };
    let file: QuizFile = match toml::from_str(&source.quiz.text) {
        Ok(f) => f,
        Err(e) => {
            errs.add(None, format!("malformed TOML: {}", e.to_string().trim()));
            return Err(errs.list);
        }
    };
    if let Err(why) = check_slug(&file.slug) {
        errs.add(None, why);
    }
    let source_locale = match file.source_locale.as_deref() {
        None => "en".to_string(),
        Some(tag) => match canonical_tag(tag) {
            Some(c) if c == tag => c,
            _ => {
                errs.add(
                    None,
                    format!("source_locale '{tag}' is not a canonical BCP 47 language tag"),
                );
                "en".to_string()
            }
        },
    };
    let sl = source_locale.as_str();
    if file.title.trim().is_empty() {
        errs.add(None, "title is empty");
    }
    if file.questions.is_empty() {
        errs.add(None, "the quiz has no questions");
    }
    if file.practice.is_some() && file.visibility != Visibility::Public {
        errs.add(
            None,
            "[practice] needs visibility = \"public\": a practice attempt shows the answer key, \
             which a private quiz keeps for its assignments",
        );
    }

    let mut questions = Vec::new();
    let mut seen = HashSet::new();
    let mut layout = Vec::new();
    // Checks a question's key and compiles it.
    let mut add_question =
        |q: QuestionFile, label: &str, errs: &mut Errors<'_>, questions: &mut Vec<Question>| {
            let qn = Some(label);
            if !valid_key(&q.key) {
                errs.add(qn, "key must be 1-64 lowercase letters, digits, '-' or '_'");
            } else if !seen.insert(q.key.clone()) {
                errs.add(qn, "duplicate question key");
            }
            if let Some(question) = compile_question(q, qn, sl, errs, &mut media) {
                questions.push(question);
            }
        };
    let mut fixed_keys = Vec::new();
    for (i, entry) in file.questions.into_iter().enumerate() {
        let label = match entry.key.as_deref() {
            Some(k) if !k.is_empty() => k.to_string(),
            _ => format!("#{}", i + 1),
        };
        match entry.into_slot_or_question(&label, &mut errs) {
            Some(Entry::Question(q)) => {
                fixed_keys.push(q.key.clone());
                layout.push(Slot::Fixed {
                    question: q.key.clone(),
                });
                add_question(*q, &label, &mut errs, &mut questions);
            }
            Some(Entry::Slot(slot)) => layout.push(slot),
            None => {}
        }
    }
    let mut banks = Vec::new();
    for bank in file.banks {
        let bn = format!("bank '{}'", bank.key);
        if !valid_key(&bank.key) {
            errs.add(
                Some(&bn),
                "key must be 1-64 lowercase letters, digits, '-' or '_'",
            );
        } else if banks.iter().any(|b: &Bank| b.key == bank.key) {
            errs.add(Some(&bn), "duplicate bank key");
        }
        if bank.questions.is_empty() {
            errs.add(Some(&bn), "the bank has no questions");
        }
        let mut keys = Vec::new();
        for (i, q) in bank.questions.into_iter().enumerate() {
            let label = if q.key.is_empty() {
                format!("#{} of bank '{}'", i + 1, bank.key)
            } else {
                q.key.clone()
            };
            if fixed_keys.contains(&q.key) {
                errs.add(
                    Some(&label),
                    format!(
                        "is both a fixed question and a question of bank '{}': a key names one question",
                        bank.key
                    ),
                );
                continue;
            }
            keys.push(q.key.clone());
            add_question(q, &label, &mut errs, &mut questions);
        }
        banks.push(Bank {
            key: bank.key,
            questions: keys,
        });
    }
    for question in &questions {
        if fixed_keys.contains(&question.key) && !question.tags.is_empty() {
            errs.add(
                Some(&question.key),
                "`tags` apply to bank questions only (a slot filters a bank by tag)",
            );
        }
    }
    check_slots(&layout, &banks, &questions, &mut errs);
    // Without banks the layout is every question in order: stored as none, so content without
    // banks is stored (and hashed) exactly as before.
    if banks.is_empty() && layout.iter().all(|s| matches!(s, Slot::Fixed { .. })) {
        layout.clear();
    }

    let score_bands = compile_score_bands(file.score_bands, sl, &mut errs);
    let mut content = QuizContent {
        score_bands,
        slug: file.slug,
        source_locale: source_locale.clone(),
        locales: vec![source_locale.clone()],
        title: text_in(sl, &file.title),
        intro: file.intro.map(|i| text_in(sl, &i)),
        visibility: file.visibility,
        practice: file.practice,
        questions,
        banks,
        layout,
        translated_from: BTreeMap::new(),
        keep_stale_translations: file.keep_stale_translations,
        media: Media(media.files),
    };
    let mut list = errs.list;
    let mut translations: Vec<&(String, SourceFile)> = source.translations.iter().collect();
    translations.sort_by(|a, b| a.0.cmp(&b.0));
    for (locale, file) in translations {
        list.extend(apply_translation(&mut content, locale, file));
    }
    if list.is_empty() {
        Ok(content)
    } else {
        Err(list)
    }
}

/// Compiles one question (fixed or in a bank), adding its problems to `errs`.
fn compile_question(
    q: QuestionFile,
    qn: Option<&str>,
    sl: &str,
    errs: &mut Errors<'_>,
    media: &mut MediaReader<'_>,
) -> Option<Question> {
    let Some(kind) = QuestionKind::parse(&q.kind) else {
        let known: Vec<&str> = QuestionKind::ALL.iter().map(|(n, _)| *n).collect();
        errs.add(
            qn,
            format!(
                "unknown kind '{}' (expected one of: {})",
                q.kind,
                known.join(", ")
            ),
        );
        return None;
    };
    let points = q.points.unwrap_or(1.0);
    if !(points.is_finite() && points > 0.0) {
        errs.add(qn, "points must be a positive number");
    }
    if q.prompt.trim().is_empty() {
        errs.add(qn, "prompt is empty");
    }
    if q.explanation.trim().is_empty() {
        errs.add(qn, "explanation is empty");
    }
    let not_for = |field: &str| format!("field `{field}` does not apply to kind '{}'", q.kind);
    let mut options = Vec::new();
    let mut numeric = None;
    let mut short_text = None;
    match kind {
        QuestionKind::Single | QuestionKind::Multiple => {
            let given = q.options.unwrap_or_default();
            if given.len() < 2 {
                errs.add(qn, "a choice question needs at least 2 options");
            }
            let mut keys = HashSet::new();
            for o in given {
                if !valid_key(&o.key) {
                    errs.add(
                        qn,
                        format!(
                            "option key '{}' must be 1-64 lowercase letters, digits, '-' or '_'",
                            o.key
                        ),
                    );
                } else if !keys.insert(o.key.clone()) {
                    errs.add(qn, format!("duplicate option key '{}'", o.key));
                }
                if o.text.trim().is_empty() {
                    errs.add(qn, format!("option '{}' has no text", o.key));
                }
                options.push(Choice {
                    key: o.key,
                    text: text_in(sl, &o.text),
                    correct: o.correct,
                    feedback: o.feedback.map(|f| text_in(sl, &f)),
                });
            }
            let correct = options.iter().filter(|o| o.correct).count();
            if kind == QuestionKind::Single && correct != 1 {
                errs.add(
                    qn,
                    format!(
                        "a single-choice question needs exactly one correct option, found {correct}"
                    ),
                );
            }
            if kind == QuestionKind::Multiple && correct == 0 {
                errs.add(qn, "a multiple-choice question needs a correct option");
            }
            for (field, present) in [
                ("answer", q.answer.is_some()),
                ("tolerance", q.tolerance.is_some()),
                ("accepted", q.accepted.is_some()),
                ("case_sensitive", q.case_sensitive.is_some()),
            ] {
                if present {
                    errs.add(qn, not_for(field));
                }
            }
            if q.wrong_feedback.is_some() {
                errs.add(
                    qn,
                    "choice questions give feedback per option (`feedback`), not `wrong_feedback`",
                );
            }
        }
        QuestionKind::TrueFalse => {
            let answer = match q.answer {
                Some(toml::Value::Boolean(b)) => b,
                _ => {
                    errs.add(qn, "a true_false question needs `answer = true` or `false`");
                    false
                }
            };
            for (field, present) in [
                ("options", q.options.is_some()),
                ("tolerance", q.tolerance.is_some()),
                ("accepted", q.accepted.is_some()),
                ("case_sensitive", q.case_sensitive.is_some()),
            ] {
                if present {
                    errs.add(qn, not_for(field));
                }
            }
            for (key, truth) in [("true", true), ("false", false)] {
                let text = TRUE_FALSE_LABELS
                    .iter()
                    .map(|(l, t, f)| (l.to_string(), if truth { *t } else { *f }.to_string()))
                    .collect();
                options.push(Choice {
                    key: key.to_string(),
                    text,
                    correct: truth == answer,
                    feedback: None,
                });
            }
        }
        QuestionKind::Numeric => {
            let answer = match q.answer {
                Some(toml::Value::Float(f)) if f.is_finite() => f,
                Some(toml::Value::Integer(i)) => i as f64,
                _ => {
                    errs.add(qn, "a numeric question needs a number `answer`");
                    0.0
                }
            };
            let tolerance = q.tolerance.unwrap_or(0.0);
            if !(tolerance.is_finite() && tolerance >= 0.0) {
                errs.add(qn, "tolerance must be a number ≥ 0");
            }
            for (field, present) in [
                ("options", q.options.is_some()),
                ("accepted", q.accepted.is_some()),
                ("case_sensitive", q.case_sensitive.is_some()),
            ] {
                if present {
                    errs.add(qn, not_for(field));
                }
            }
            numeric = Some(NumericKey { answer, tolerance });
        }
        QuestionKind::ShortText => {
            let accepted = q.accepted.unwrap_or_default();
            if accepted.is_empty() || accepted.iter().any(|a| a.trim().is_empty()) {
                errs.add(
                    qn,
                    "a short_text question needs `accepted` answers, none of them empty",
                );
            }
            for (field, present) in [
                ("options", q.options.is_some()),
                ("answer", q.answer.is_some()),
                ("tolerance", q.tolerance.is_some()),
            ] {
                if present {
                    errs.add(qn, not_for(field));
                }
            }
            short_text = Some(ShortTextKey {
                accepted,
                case_sensitive: q.case_sensitive.unwrap_or(false),
            });
        }
    }
    let image = media.image(q.image, q.image_alt, qn, sl, errs);
    Some(Question {
        image,
        key: q.key,
        kind,
        points,
        prompt: text_in(sl, &q.prompt),
        explanation: text_in(sl, &q.explanation),
        options,
        numeric,
        short_text,
        wrong_feedback: q.wrong_feedback.map(|f| text_in(sl, &f)),
        tags: q.tags.unwrap_or_default(),
    })
}

fn apply_translation(
    content: &mut QuizContent,
    locale: &str,
    file: &SourceFile,
) -> Vec<ContentError> {
    let mut errs = Errors {
        file: &file.name,
        list: Vec::new(),
    };
    match canonical_tag(locale) {
        Some(c) if c == locale => {}
        Some(c) => {
            errs.add(
                None,
                format!("'{locale}' is not a canonical locale tag; name the file {c}.toml"),
            );
            return errs.list;
        }
        None => {
            errs.add(
                None,
                format!("'{locale}' is not a valid BCP 47 locale tag (e.g. bn, id, pt-BR)"),
            );
            return errs.list;
        }
    }
    if locale == content.source_locale {
        errs.add(
            None,
            "this translation is for the quiz's source locale; edit quiz.toml instead",
        );
        return errs.list;
    }
    let t: TranslationFile = match toml::from_str(&file.text) {
        Ok(t) => t,
        Err(e) => {
            errs.add(None, format!("malformed TOML: {}", e.to_string().trim()));
            return errs.list;
        }
    };
    apply_translation_file(content, locale, t, errs)
}

/// Replaces the translation of `locale` in `content` with `texts` (text id → translated
/// text; ids as in [`QuizContent::texts`]), validated exactly as a `<locale>.toml` is: the
/// same checks, the same messages (naming `name` as the file). Records of which source a kept
/// translation was made from stay. Pure.
pub fn retranslate(
    content: &QuizContent,
    locale: &str,
    name: &str,
    texts: &BTreeMap<String, String>,
) -> Result<QuizContent, Vec<ContentError>> {
    let mut errs = Errors {
        file: name,
        list: Vec::new(),
    };
    if canonical_tag(locale).as_deref() != Some(locale) || locale == content.source_locale {
        errs.add(
            None,
            format!("'{locale}' is not a translation locale of this quiz (a canonical BCP 47 tag other than its source)"),
        );
        return Err(errs.list);
    }
    let mut t = TranslationFile {
        title: None,
        intro: None,
        score_bands: BTreeMap::new(),
        questions: BTreeMap::new(),
    };
    for (id, text) in texts {
        let value = Some(text.clone());
        let parts: Vec<&str> = id.split('.').collect();
        match parts.as_slice() {
            ["title"] => t.title = value,
            ["intro"] => t.intro = value,
            ["score_band", min] => {
                t.score_bands
                    .insert(min.to_string(), ScoreBandTranslation { text: value });
            }
            ["q", key, field] | ["q", key, "o", _, field] => {
                let q = t
                    .questions
                    .entry(key.to_string())
                    .or_insert(QuestionTranslation {
                        prompt: None,
                        image_alt: None,
                        explanation: None,
                        wrong_feedback: None,
                        accepted: None,
                        options: BTreeMap::new(),
                    });
                if let ["q", _, "o", option, _] = parts.as_slice() {
                    let o = q
                        .options
                        .entry(option.to_string())
                        .or_insert(OptionTranslation {
                            text: None,
                            feedback: None,
                        });
                    match *field {
                        "text" => o.text = value,
                        "feedback" => o.feedback = value,
                        _ => errs.add(Some(key), format!("unknown text '{id}'")),
                    }
                } else {
                    match *field {
                        "prompt" => q.prompt = value,
                        "image_alt" => q.image_alt = value,
                        "explanation" => q.explanation = value,
                        "wrong_feedback" => q.wrong_feedback = value,
                        _ => errs.add(Some(key), format!("unknown text '{id}'")),
                    }
                }
            }
            _ => errs.add(None, format!("unknown text '{id}'")),
        }
    }
    let mut out = content.clone();
    // What stays translated is given again in `texts`; the rest of the locale goes.
    out.for_each_text_mut(|_, text| {
        text.remove(locale);
    });
    out.locales.retain(|l| l != locale);
    let list = apply_translation_file(&mut out, locale, t, errs);
    if !list.is_empty() {
        return Err(list);
    }
    // The source first, then the translations by tag, as `compile` orders them.
    out.locales[1..].sort();
    Ok(out)
}

fn apply_translation_file(
    content: &mut QuizContent,
    locale: &str,
    t: TranslationFile,
    mut errs: Errors<'_>,
) -> Vec<ContentError> {
    let put = |errs: &mut Errors,
               q: Option<&str>,
               what: &str,
               target: Option<&mut Text>,
               value: Option<String>| {
        let Some(value) = value else { return };
        match target {
            _ if value.trim().is_empty() => errs.add(q, format!("{what} is empty")),
            Some(map) => {
                map.insert(locale.to_string(), value);
            }
            None => errs.add(q, format!("{what} is translated but the source has none")),
        }
    };
    put(&mut errs, None, "title", Some(&mut content.title), t.title);
    put(&mut errs, None, "intro", content.intro.as_mut(), t.intro);
    for (min, bt) in t.score_bands {
        let label = format!("score band {min}");
        let Some(band) = (content.score_bands.iter_mut()).find(|b| b.min.to_string() == min) else {
            errs.add(
                Some(&label),
                "translation for a score band whose min is not one of quiz.toml's",
            );
            continue;
        };
        put(
            &mut errs,
            Some(&label),
            "text",
            Some(&mut band.text),
            bt.text,
        );
    }
    for (key, qt) in t.questions {
        let Some(q) = content.questions.iter_mut().find(|q| q.key == key) else {
            errs.add(
                Some(&key),
                "translation for a question key that does not exist in quiz.toml",
            );
            continue;
        };
        let qn = Some(key.as_str());
        put(&mut errs, qn, "prompt", Some(&mut q.prompt), qt.prompt);
        put(
            &mut errs,
            qn,
            "image_alt",
            q.image.as_mut().map(|i| &mut i.alt),
            qt.image_alt,
        );
        put(
            &mut errs,
            qn,
            "explanation",
            Some(&mut q.explanation),
            qt.explanation,
        );
        put(
            &mut errs,
            qn,
            "wrong_feedback",
            q.wrong_feedback.as_mut(),
            qt.wrong_feedback,
        );
        if let Some(extra) = qt.accepted {
            match q.short_text.as_mut() {
                Some(st) if extra.iter().all(|a| !a.trim().is_empty()) => {
                    for a in extra {
                        if !st.accepted.contains(&a) {
                            st.accepted.push(a);
                        }
                    }
                }
                Some(_) => errs.add(qn, "an accepted answer is empty"),
                None => errs.add(qn, "`accepted` applies only to short_text questions"),
            }
        }
        for (okey, ot) in qt.options {
            let option = q
                .options
                .iter_mut()
                .find(|o| o.key == okey && q.kind != QuestionKind::TrueFalse);
            let Some(option) = option else {
                errs.add(
                    qn,
                    format!("translation for option '{okey}', which does not exist in quiz.toml"),
                );
                continue;
            };
            let what = format!("option '{okey}'");
            put(
                &mut errs,
                qn,
                &format!("{what} text"),
                Some(&mut option.text),
                ot.text,
            );
            put(
                &mut errs,
                qn,
                &format!("{what} feedback"),
                option.feedback.as_mut(),
                ot.feedback,
            );
        }
    }
    if errs.list.is_empty() {
        content.locales.push(locale.to_string());
    }
    errs.list
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    const QUIZ: &str = "slug = \"t\"\ntitle = \"T\"\n[[questions]]\nkey = \"q1\"\n\
                        kind = \"true_false\"\nprompt = \"P\"\nexplanation = \"E\"\nanswer = true\n";

    fn bands(toml: &str) -> Result<QuizContent, Vec<String>> {
        compile(&QuizSource {
            quiz: SourceFile {
                name: "quiz.toml".into(),
                text: format!("{QUIZ}{toml}"),
            },
            translations: Vec::new(),
        })
        .map_err(|errors| errors.iter().map(ToString::to_string).collect())
    }

    fn band(min: i64, text: &str) -> String {
        format!("[[score_bands]]\nmin = {min}\ntext = \"{text}\"\n")
    }

    #[test]
    fn score_bands_in_ascending_order_compile_and_each_score_finds_its_band() {
        let c = bands(&[band(0, "Review"), band(50, "Good"), band(80, "Great")].concat()).unwrap();
        let text = |p: f64| c.score_band(p).map(|b| b.text["en"].as_str());
        assert_eq!(text(0.0), Some("Review"));
        assert_eq!(text(49.99), Some("Review"));
        assert_eq!(text(50.0), Some("Good"));
        assert_eq!(text(79.99), Some("Good"));
        assert_eq!(text(80.0), Some("Great"));
        assert_eq!(text(100.0), Some("Great"));
        // Without a band at 0, a low score has none.
        let c = bands(&band(60, "Pass")).unwrap();
        assert_eq!(c.score_band(59.5), None);
        // No bands: nothing stored, so the content hashes as before bands existed.
        let none = bands("").unwrap();
        assert!(
            !serde_json::to_string(&none)
                .unwrap()
                .contains("score_bands")
        );
    }

    #[test]
    fn bands_out_of_range_repeated_unsorted_or_empty_are_refused_naming_the_band() {
        let errors = bands(
            &[
                band(-1, "Below"),
                band(101, "Above"),
                band(50, "Half"),
                band(50, "Again"),
                band(40, "Back"),
                band(90, " "),
            ]
            .concat(),
        )
        .unwrap_err();
        let expected = [
            "score band #1 (min = -1)': min must be a whole percentage from 0 to 100",
            "score band #2 (min = 101)': min must be a whole percentage from 0 to 100",
            "score band #4 (min = 50)': another band has min = 50: each min once",
            "score band #5 (min = 40)': bands go by ascending min: this one comes after min = 50",
            "score band #6 (min = 90)': the band has no text",
        ];
        for e in expected {
            assert!(
                errors.iter().any(|x| x.contains(e)),
                "{e} not in {errors:?}"
            );
        }
        assert_eq!(errors.len(), expected.len(), "{errors:?}");
        assert!(bands("[[score_bands]]\nmin = 10\ntext = \"x\"\ncolor = \"red\"\n").is_err());
        assert!(bands("[[score_bands]]\nmin = 12.5\ntext = \"x\"\n").is_err());
    }

    /// A quiz directory holding `quiz.toml` (one single-choice question, plus `extra` lines
    /// on it), `id.toml` and the given files.
    fn image_quiz(extra: &str, id: &str, files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let quiz = format!(
            "slug = \"pics\"\ntitle = \"Pics\"\n[[questions]]\nkey = \"ring\"\nkind = \"single\"\n\
             prompt = \"Which topology?\"\nexplanation = \"A ring.\"\n{extra}\
             [[questions.options]]\nkey = \"ring\"\ntext = \"Ring\"\ncorrect = true\n\
             [[questions.options]]\nkey = \"tree\"\ntext = \"Tree\"\n"
        );
        std::fs::write(dir.path().join("quiz.toml"), quiz).unwrap();
        std::fs::write(dir.path().join("id.toml"), id).unwrap();
        for (name, bytes) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        dir
    }

    fn compiled(dir: &tempfile::TempDir) -> Result<QuizContent, Vec<String>> {
        let source = crate::read_quiz_dir(dir.path()).unwrap();
        compile_dir(&source, dir.path())
            .map_err(|errors| errors.iter().map(ToString::to_string).collect())
    }

    /// The header of a PNG of `w`×`h` (enough for quizd: it reads the type and the size).
    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 2, 0, 0, 0]);
        b
    }

    const WITH_IMAGE: &str = "image = \"media/ring.png\"\nimage_alt = \"Four GPUs in a ring\"\n";

    #[test]
    fn a_question_image_is_read_by_hash_with_its_size_and_its_alt_text_is_translatable() {
        let dir = image_quiz(
            WITH_IMAGE,
            "[questions.ring]\nimage_alt = \"Empat GPU dalam cincin\"\n",
            &[("media/ring.png", &png(320, 200))],
        );
        let c = compiled(&dir).unwrap();
        let image = c.questions[0].image.as_ref().unwrap();
        assert_eq!(
            image.sha256,
            hex::encode(sha2::Sha256::digest(png(320, 200)))
        );
        assert_eq!(image.content_type, "image/png");
        assert_eq!((image.width, image.height), (Some(320), Some(200)));
        assert_eq!(image.alt["en"], "Four GPUs in a ring");
        assert_eq!(image.alt["id"], "Empat GPU dalam cincin");
        assert_eq!(c.media.0.len(), 1);
        assert_eq!(&c.media.0[0].bytes[..], &png(320, 200)[..]);
        // A text like the others: its id, its role, counted in the coverage.
        let alt = c
            .texts()
            .into_iter()
            .find(|t| t.id == "q.ring.image_alt")
            .unwrap();
        assert_eq!(alt.role, crate::model::TextRole::ImageAlt);
        assert_eq!(c.coverage()[1], ("id".to_string(), 1, 6));
        // The bytes travel with the content, never in it: not stored, not hashed.
        let json = serde_json::to_string(&c).unwrap();
        assert!(!json.contains("media") && json.contains(&image.sha256));
        let mut again = c.clone();
        again.media = Default::default();
        assert_eq!(again.content_hash(), c.content_hash());
        // Translated through XLIFF or PO as through id.toml.
        let texts = BTreeMap::from([("q.ring.image_alt".to_string(), "Cincin".to_string())]);
        let retranslated = retranslate(&again, "id", "id.xlf", &texts).unwrap();
        assert_eq!(
            retranslated.questions[0].image.as_ref().unwrap().alt["id"],
            "Cincin"
        );
        // A quiz sent as a body has no directory to read an image from.
        let body = QuizSource {
            quiz: SourceFile {
                name: "quiz.toml".into(),
                text: std::fs::read_to_string(dir.path().join("quiz.toml")).unwrap(),
            },
            translations: Vec::new(),
        };
        let errors = compile(&body).unwrap_err();
        assert!(
            errors[0].message.contains("images come with content files"),
            "{errors:?}"
        );
    }

    #[test]
    fn images_missing_outside_the_quiz_without_alt_svg_mislabelled_or_too_large_are_refused() {
        let refused = |extra: &str, id: &str, files: &[(&str, &[u8])]| {
            compiled(&image_quiz(extra, id, files))
                .unwrap_err()
                .join("\n")
        };
        let image = |path: &str| format!("image = \"{path}\"\nimage_alt = \"A diagram\"\n");
        let ok = png(2, 2);
        // The quiz.toml lines, id.toml, the files, and what the refusal says.
        type Case<'a> = (String, &'a str, Vec<(&'a str, Vec<u8>)>, &'a str);
        let cases: [Case<'_>; 9] = [
            (
                image("media/none.png"),
                "",
                vec![],
                "image 'media/none.png' does not exist",
            ),
            (
                image("../ring.png"),
                "",
                vec![],
                "must be a relative path inside the quiz's directory (no '..', not absolute)",
            ),
            (image("/etc/hostname"), "", vec![], "no '..', not absolute"),
            (
                "image = \"media/ring.png\"\n".into(),
                "",
                vec![("media/ring.png", ok.clone())],
                "image 'media/ring.png' needs `image_alt`",
            ),
            (
                "image_alt = \"A diagram\"\n".into(),
                "",
                vec![],
                "`image_alt` without an `image`",
            ),
            (
                image("media/ring.svg"),
                "",
                vec![(
                    "media/ring.svg",
                    b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>"
                        .to_vec(),
                )],
                "is not a PNG, JPEG, GIF or WebP image by its content (SVG and other types are refused",
            ),
            (
                image("media/ring.png"),
                "",
                vec![(
                    "media/ring.png",
                    b"BM\x36\0\0\0 a bitmap named .png".to_vec(),
                )],
                "image 'media/ring.png' is not a PNG, JPEG, GIF or WebP image by its content",
            ),
            (
                image("media/ring.png"),
                "",
                vec![("media/ring.png", [ok.clone(), vec![0; 2 << 20]].concat())],
                "an image may have at most 2 MiB",
            ),
            (
                image("media/ring.png"),
                "[questions.ring]\nimage_alt = \" \"\n",
                vec![("media/ring.png", ok.clone())],
                "id.toml: question 'ring': image_alt is empty",
            ),
        ];
        for (extra, id, files, expected) in cases {
            let files: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (*n, &b[..])).collect();
            let errors = refused(&extra, id, &files);
            assert!(errors.contains(expected), "{expected:?} not in {errors}");
            assert!(errors.contains("question 'ring'"), "{errors}");
        }
        // A symbolic link out of the quiz's directory is refused where it leads.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.png"), &ok).unwrap();
        let dir = image_quiz(&image("media/link.png"), "", &[]);
        std::fs::create_dir(dir.path().join("media")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.png"),
            dir.path().join("media/link.png"),
        )
        .unwrap();
        let errors = compiled(&dir).unwrap_err().join("\n");
        assert!(
            errors.contains("leads outside the quiz's directory"),
            "{errors}"
        );
    }

    #[test]
    fn a_quizs_images_may_have_ten_mib_together_each_file_counted_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut quiz = String::from("slug = \"pics\"\ntitle = \"Pics\"\n");
        let file = |i: u8| [png(1, 1), vec![i; (2 << 20) - 64]].concat();
        std::fs::create_dir(dir.path().join("media")).unwrap();
        for i in 0..6u8 {
            std::fs::write(dir.path().join(format!("media/{i}.png")), file(i)).unwrap();
            // Question 6 uses the first file again: it counts once.
            for (key, n) in [(format!("q{i}"), i), (format!("again{i}"), 0)] {
                if key.starts_with("again") && i > 0 {
                    continue;
                }
                quiz.push_str(&format!(
                    "[[questions]]\nkey = \"{key}\"\nkind = \"true_false\"\nprompt = \"P\"\n\
                     explanation = \"E\"\nanswer = true\nimage = \"media/{n}.png\"\nimage_alt = \"A\"\n"
                ));
            }
        }
        std::fs::write(dir.path().join("quiz.toml"), &quiz).unwrap();
        let source = crate::read_quiz_dir(dir.path()).unwrap();
        let errors: Vec<String> = compile_dir(&source, dir.path())
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        // Five distinct files fit (10 MiB less 175 bytes); the sixth does not.
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("question 'q5'"), "{errors:?}");
        assert!(
            errors[0].contains("a quiz's images may have at most 10 MiB"),
            "{errors:?}"
        );
    }

    #[test]
    fn content_without_images_stores_and_hashes_exactly_as_before() {
        // The seed quiz, as every deployment has stored it since before images existed: its
        // JSON has no image field and its hash is the one its stored versions carry.
        let dir = crate::repo_root().join("content/data-parallelism");
        let c = crate::load_dir(&dir).unwrap().remove(0);
        let json = serde_json::to_string(&c).unwrap();
        assert!(!json.contains("\"image\"") && !json.contains("\"media\""));
        let read: QuizContent = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&read).unwrap(), json);
        assert_eq!(c.content_hash(), DATA_PARALLELISM_HASH);
    }

    /// The content hash of `content/data-parallelism` as quizd stored it before images (read
    /// from `quiz_versions.content_hash` after `quizd import` by the build of `main` before
    /// this change).
    const DATA_PARALLELISM_HASH: &str =
        "5599bcd5fea97820aaa87b6660cdd1af1b8996cd5c3af6481096843e718430ac";

    #[test]
    fn a_band_is_translated_by_its_min_and_an_unknown_min_is_refused() {
        let quiz = SourceFile {
            name: "quiz.toml".into(),
            text: format!("{QUIZ}{}{}", band(0, "Review"), band(80, "Great")),
        };
        let bn = |text: &str| SourceFile {
            name: "bn.toml".into(),
            text: text.into(),
        };
        let c = compile(&QuizSource {
            quiz: quiz.clone(),
            translations: vec![("bn".into(), bn("[score_bands.80]\ntext = \"দারুণ\"\n"))],
        })
        .unwrap();
        assert_eq!(c.score_bands[1].text["bn"], "দারুণ");
        assert!(!c.score_bands[0].text.contains_key("bn"));
        let ids: Vec<String> = c.texts().into_iter().map(|t| t.id).collect();
        assert_eq!(ids[1..3], ["score_band.0", "score_band.80"]);
        let errors = compile(&QuizSource {
            quiz,
            translations: vec![("bn".into(), bn("[score_bands.70]\ntext = \"x\"\n"))],
        })
        .unwrap_err();
        assert!(
            errors[0].to_string().contains("score band 70"),
            "{errors:?}"
        );
    }
}
