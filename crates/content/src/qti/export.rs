//! Writing a QTI 3.0 package (see the module documentation for its layout). Every element and
//! attribute goes through `quick-xml`'s writer; text is escaped by [`text`]/[`attr`], never
//! spliced. Pure: the package is built in memory.

use std::io::{Cursor, Write};

use quick_xml::Writer;
use quick_xml::events::attributes::Attribute;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use zip::write::SimpleFileOptions;

use super::{
    ASI_NS, ASI_XSD, BankSection, CHOICE_PREFIX, CP_NS, CP_XSD, EXPLANATION, ITEM_PREFIX, QtiError,
    TRUE_FALSE_CLASS, WRONG, XSI_NS, bank_section_id, tag_token,
};
use crate::i18n::Text;
use crate::model::{Question, QuestionKind, QuizContent, Slot};

type W = Writer<Cursor<Vec<u8>>>;
type R = Result<(), QtiError>;

fn io(e: impl std::fmt::Display) -> QtiError {
    QtiError::Refused(format!("cannot write the package: {e}"))
}

/// Escapes text for element content or an attribute value: the five markup characters, and
/// CR, LF and TAB as references, so that a parser gives back exactly the same string (it
/// would turn a raw CR into LF, and a raw LF or TAB in an attribute into a space).
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            '\n' => out.push_str("&#10;"),
            '\t' => out.push_str("&#9;"),
            c => out.push(c),
        }
    }
    out
}

fn attr<'a>(key: &'a str, value: &str) -> Attribute<'a> {
    Attribute {
        key: quick_xml::name::QName(key.as_bytes()),
        value: escape(value).into_bytes().into(),
    }
}

/// An element's start tag with its attributes.
fn start<'a>(name: &'a str, attrs: &[(&'a str, &str)]) -> BytesStart<'a> {
    let mut s = BytesStart::new(name);
    for (k, v) in attrs {
        s.push_attribute(attr(k, v));
    }
    s
}

fn open(w: &mut W, name: &str, attrs: &[(&str, &str)]) -> R {
    w.write_event(Event::Start(start(name, attrs))).map_err(io)
}

fn close(w: &mut W, name: &str) -> R {
    w.write_event(Event::End(BytesEnd::new(name))).map_err(io)
}

fn empty(w: &mut W, name: &str, attrs: &[(&str, &str)]) -> R {
    w.write_event(Event::Empty(start(name, attrs))).map_err(io)
}

fn text(w: &mut W, s: &str) -> R {
    w.write_event(Event::Text(BytesText::from_escaped(escape(s))))
        .map_err(io)
}

/// `<name attrs>text</name>`.
fn leaf(w: &mut W, name: &str, attrs: &[(&str, &str)], s: &str) -> R {
    open(w, name, attrs)?;
    text(w, s)?;
    close(w, name)
}

fn new_doc() -> Result<W, QtiError> {
    // No indentation: whitespace between elements would become part of mixed content (the
    // importer reads a quizd item's texts exactly).
    let mut w = Writer::new(Cursor::new(Vec::new()));
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
        .map_err(io)?;
    Ok(w)
}

/// The text of `t` in `locale` and the language it is written in: the translation, or the
/// source text marked with the source's language when the translation is missing.
fn in_locale<'a>(t: &'a Text, locale: &'a str, source: &'a str) -> (&'a str, &'a str) {
    match t.get(locale) {
        Some(s) => (s.as_str(), locale),
        None => (t.get(source).map(String::as_str).unwrap_or(""), source),
    }
}

/// Text content in an element that carries `xml:lang` only when it differs from the
/// document's language.
fn lang_leaf(w: &mut W, name: &str, extra: &[(&str, &str)], s: (&str, &str), doc: &str) -> R {
    let mut attrs: Vec<(&str, &str)> = extra.to_vec();
    if s.1 != doc {
        attrs.push(("xml:lang", s.1));
    }
    leaf(w, name, &attrs, s.0)
}

fn num(x: f64) -> String {
    // Rust prints the shortest decimal that reads back as the same f64, without exponent.
    format!("{x}")
}

/// `<qti-outcome-declaration>` of a float with a default value.
fn float_outcome(w: &mut W, id: &str, value: f64) -> R {
    open(
        w,
        "qti-outcome-declaration",
        &[
            ("identifier", id),
            ("cardinality", "single"),
            ("base-type", "float"),
        ],
    )?;
    open(w, "qti-default-value", &[])?;
    leaf(w, "qti-value", &[], &num(value))?;
    close(w, "qti-default-value")?;
    close(w, "qti-outcome-declaration")
}

fn base_identifier(w: &mut W, v: &str) -> R {
    leaf(w, "qti-base-value", &[("base-type", "identifier")], v)
}

fn variable(w: &mut W, id: &str) -> R {
    empty(w, "qti-variable", &[("identifier", id)])
}

/// `FEEDBACK := FEEDBACK ∪ {id}`.
fn add_feedback(w: &mut W, id: &str) -> R {
    open(w, "qti-set-outcome-value", &[("identifier", "FEEDBACK")])?;
    open(w, "qti-multiple", &[])?;
    variable(w, "FEEDBACK")?;
    base_identifier(w, id)?;
    close(w, "qti-multiple")?;
    close(w, "qti-set-outcome-value")
}

fn set_score_float(w: &mut W, value: f64) -> R {
    open(w, "qti-set-outcome-value", &[("identifier", "SCORE")])?;
    leaf(w, "qti-base-value", &[("base-type", "float")], &num(value))?;
    close(w, "qti-set-outcome-value")
}

fn choice_id(key: &str) -> String {
    format!("{CHOICE_PREFIX}{key}")
}

pub(super) fn test_id(slug: &str) -> String {
    format!("{}{slug}", super::TEST_PREFIX)
}

pub(super) fn item_id(key: &str) -> String {
    format!("{ITEM_PREFIX}{key}")
}

/// One question as a `qti-assessment-item` in `locale`.
fn item(q: &Question, content: &QuizContent, locale: &str) -> Result<Vec<u8>, QtiError> {
    let src = content.source_locale.as_str();
    let mut doc = new_doc()?;
    let w = &mut doc;
    let id = item_id(&q.key);
    let version = env!("CARGO_PKG_VERSION");
    let schema_location = format!("{ASI_NS} {ASI_XSD}");
    open(
        w,
        "qti-assessment-item",
        &[
            ("xmlns", ASI_NS),
            ("xmlns:xsi", XSI_NS),
            ("xsi:schemaLocation", &schema_location),
            ("identifier", &id),
            ("title", &q.key),
            ("adaptive", "false"),
            ("time-dependent", "false"),
            ("xml:lang", locale),
            ("tool-name", "quizd"),
            ("tool-version", version),
        ],
    )?;
    if let Some(image) = &q.image {
        let alt = image.alt.get(locale).or_else(|| image.alt.get(src));
        let note = format!(
            " quizd: this question's image is not in this package (its alt text: {}) ",
            alt.map_or("", String::as_str)
        );
        // A comment is not parsed for entities: written as it is, but never closed early.
        w.write_event(Event::Comment(BytesText::from_escaped(
            note.replace("--", "- -"),
        )))
        .map_err(io)?;
    }

    // The response and its key.
    let (cardinality, base_type) = match q.kind {
        QuestionKind::Single | QuestionKind::TrueFalse => ("single", "identifier"),
        QuestionKind::Multiple => ("multiple", "identifier"),
        QuestionKind::Numeric => ("single", "float"),
        QuestionKind::ShortText => ("single", "string"),
    };
    open(
        w,
        "qti-response-declaration",
        &[
            ("identifier", "RESPONSE"),
            ("cardinality", cardinality),
            ("base-type", base_type),
        ],
    )?;
    open(w, "qti-correct-response", &[])?;
    match q.kind {
        QuestionKind::Single | QuestionKind::Multiple | QuestionKind::TrueFalse => {
            for o in q.options.iter().filter(|o| o.correct) {
                leaf(w, "qti-value", &[], &choice_id(&o.key))?;
            }
        }
        QuestionKind::Numeric => {
            let key = q
                .numeric
                .as_ref()
                .ok_or_else(|| io("numeric key missing"))?;
            leaf(w, "qti-value", &[], &num(key.answer))?;
        }
        QuestionKind::ShortText => {
            let key = q
                .short_text
                .as_ref()
                .ok_or_else(|| io("accepted missing"))?;
            leaf(w, "qti-value", &[], key.accepted.first().map_or("", |s| s))?;
        }
    }
    close(w, "qti-correct-response")?;
    // Partial credit for `multiple` exactly as quizd grades it: each correct option chosen
    // adds points/n, each wrong one takes points/n away, bounded to [0, points].
    if q.kind == QuestionKind::Multiple {
        let n = q.options.iter().filter(|o| o.correct).count().max(1) as f64;
        let share = q.points / n;
        open(
            w,
            "qti-mapping",
            &[
                ("default-value", "0"),
                ("lower-bound", "0"),
                ("upper-bound", &num(q.points)),
            ],
        )?;
        for o in &q.options {
            let value = if o.correct { share } else { -share };
            empty(
                w,
                "qti-map-entry",
                &[
                    ("map-key", &choice_id(&o.key)),
                    ("mapped-value", &num(value)),
                ],
            )?;
        }
        close(w, "qti-mapping")?;
    }
    if q.kind == QuestionKind::ShortText {
        let key = q
            .short_text
            .as_ref()
            .ok_or_else(|| io("accepted missing"))?;
        let sensitive = if key.case_sensitive { "true" } else { "false" };
        open(
            w,
            "qti-mapping",
            &[("default-value", "0"), ("upper-bound", &num(q.points))],
        )?;
        for a in &key.accepted {
            empty(
                w,
                "qti-map-entry",
                &[
                    ("map-key", a),
                    ("mapped-value", &num(q.points)),
                    ("case-sensitive", sensitive),
                ],
            )?;
        }
        close(w, "qti-mapping")?;
    }
    close(w, "qti-response-declaration")?;
    float_outcome(w, "SCORE", 0.0)?;
    float_outcome(w, "MAXSCORE", q.points)?;
    empty(
        w,
        "qti-outcome-declaration",
        &[
            ("identifier", "FEEDBACK"),
            ("cardinality", "multiple"),
            ("base-type", "identifier"),
        ],
    )?;

    // The body: the prompt and the interaction.
    open(w, "qti-item-body", &[])?;
    let prompt = in_locale(&q.prompt, locale, src);
    if q.kind.has_options() {
        let max = match q.kind {
            QuestionKind::Multiple => "0",
            _ => "1",
        };
        let mut attrs = vec![("response-identifier", "RESPONSE"), ("max-choices", max)];
        if q.kind == QuestionKind::TrueFalse {
            attrs.push(("class", TRUE_FALSE_CLASS));
        }
        open(w, "qti-choice-interaction", &attrs)?;
        lang_leaf(w, "qti-prompt", &[], prompt, locale)?;
        for o in &q.options {
            let id = choice_id(&o.key);
            lang_leaf(
                w,
                "qti-simple-choice",
                &[("identifier", &id)],
                in_locale(&o.text, locale, src),
                locale,
            )?;
        }
        close(w, "qti-choice-interaction")?;
    } else {
        open(w, "div", &[])?;
        lang_leaf(w, "p", &[], prompt, locale)?;
        open(w, "p", &[])?;
        let length = q
            .short_text
            .as_ref()
            .and_then(|k| k.accepted.iter().map(|a| a.chars().count()).max())
            .unwrap_or(12)
            .clamp(8, 60)
            .to_string();
        empty(
            w,
            "qti-text-entry-interaction",
            &[
                ("response-identifier", "RESPONSE"),
                ("expected-length", &length),
            ],
        )?;
        close(w, "p")?;
        close(w, "div")?;
    }
    close(w, "qti-item-body")?;

    // Scoring and which feedback to show.
    open(w, "qti-response-processing", &[])?;
    match q.kind {
        QuestionKind::Multiple | QuestionKind::ShortText => {
            open(w, "qti-set-outcome-value", &[("identifier", "SCORE")])?;
            empty(w, "qti-map-response", &[("identifier", "RESPONSE")])?;
            close(w, "qti-set-outcome-value")?;
        }
        _ => {
            open(w, "qti-response-condition", &[])?;
            open(w, "qti-response-if", &[])?;
            if q.kind == QuestionKind::Numeric {
                // QTI's own construct for "right within an absolute tolerance".
                let t = q.numeric.as_ref().map_or(0.0, |k| k.tolerance);
                open(
                    w,
                    "qti-equal",
                    &[("tolerance-mode", "absolute"), ("tolerance", &num(t))],
                )?;
                variable(w, "RESPONSE")?;
                empty(w, "qti-correct", &[("identifier", "RESPONSE")])?;
                close(w, "qti-equal")?;
            } else {
                open(w, "qti-match", &[])?;
                variable(w, "RESPONSE")?;
                empty(w, "qti-correct", &[("identifier", "RESPONSE")])?;
                close(w, "qti-match")?;
            }
            open(w, "qti-set-outcome-value", &[("identifier", "SCORE")])?;
            variable(w, "MAXSCORE")?;
            close(w, "qti-set-outcome-value")?;
            close(w, "qti-response-if")?;
            open(w, "qti-response-else", &[])?;
            set_score_float(w, 0.0)?;
            close(w, "qti-response-else")?;
            close(w, "qti-response-condition")?;
        }
    }
    open(w, "qti-set-outcome-value", &[("identifier", "FEEDBACK")])?;
    open(w, "qti-multiple", &[])?;
    base_identifier(w, EXPLANATION)?;
    close(w, "qti-multiple")?;
    close(w, "qti-set-outcome-value")?;
    if q.wrong_feedback.is_some() {
        open(w, "qti-response-condition", &[])?;
        open(w, "qti-response-if", &[])?;
        open(w, "qti-lt", &[])?;
        variable(w, "SCORE")?;
        variable(w, "MAXSCORE")?;
        close(w, "qti-lt")?;
        add_feedback(w, WRONG)?;
        close(w, "qti-response-if")?;
        close(w, "qti-response-condition")?;
    }
    for o in q.options.iter().filter(|o| o.feedback.is_some()) {
        let id = choice_id(&o.key);
        open(w, "qti-response-condition", &[])?;
        open(w, "qti-response-if", &[])?;
        if q.kind == QuestionKind::Multiple {
            open(w, "qti-member", &[])?;
            base_identifier(w, &id)?;
            variable(w, "RESPONSE")?;
            close(w, "qti-member")?;
        } else {
            open(w, "qti-match", &[])?;
            variable(w, "RESPONSE")?;
            base_identifier(w, &id)?;
            close(w, "qti-match")?;
        }
        add_feedback(w, &id)?;
        close(w, "qti-response-if")?;
        close(w, "qti-response-condition")?;
    }
    close(w, "qti-response-processing")?;

    // The feedback texts.
    let modal = |w: &mut W, id: &str, t: &Text| -> R {
        open(
            w,
            "qti-modal-feedback",
            &[
                ("outcome-identifier", "FEEDBACK"),
                ("identifier", id),
                ("show-hide", "show"),
            ],
        )?;
        open(w, "qti-content-body", &[])?;
        lang_leaf(w, "p", &[], in_locale(t, locale, src), locale)?;
        close(w, "qti-content-body")?;
        close(w, "qti-modal-feedback")
    };
    modal(w, EXPLANATION, &q.explanation)?;
    if let Some(t) = &q.wrong_feedback {
        modal(w, WRONG, t)?;
    }
    for o in &q.options {
        if let Some(f) = &o.feedback {
            modal(w, &choice_id(&o.key), f)?;
        }
    }
    close(w, "qti-assessment-item")?;
    Ok(doc.into_inner().into_inner())
}

/// The assessment test of one locale: its sections ([`sections`]), the first with the intro
/// as a rubric.
fn test(content: &QuizContent, locale: &str) -> Result<Vec<u8>, QtiError> {
    let src = content.source_locale.as_str();
    let mut doc = new_doc()?;
    let w = &mut doc;
    let schema_location = format!("{ASI_NS} {ASI_XSD}");
    // The title is an attribute, which cannot carry its own language: a locale without a
    // translated title repeats the source's, and the importer takes a title equal to the
    // source's as untranslated.
    let (title, _) = in_locale(&content.title, locale, src);
    let attrs = [
        ("xmlns", ASI_NS),
        ("xmlns:xsi", XSI_NS),
        ("xsi:schemaLocation", schema_location.as_str()),
        ("identifier", &test_id(&content.slug)),
        ("title", title),
        ("xml:lang", locale),
        ("tool-name", "quizd"),
        ("tool-version", env!("CARGO_PKG_VERSION")),
    ];
    open(w, "qti-assessment-test", &attrs)?;
    float_outcome(w, "SCORE", 0.0)?;
    open(
        w,
        "qti-test-part",
        &[
            ("identifier", "part-1"),
            ("navigation-mode", "nonlinear"),
            ("submission-mode", "individual"),
        ],
    )?;
    for (n, section) in sections(content).iter().enumerate() {
        let (id, visible) = match section {
            Section::Fixed(_) if n == 0 => (format!("S_{}", content.slug), "true"),
            Section::Fixed(_) => (format!("S_{}.{}", content.slug, n + 1), "true"),
            // A bank's name is not shown to learners.
            Section::Draw { id, .. } => (id.clone(), "false"),
        };
        let section_title = match section {
            Section::Fixed(_) => title,
            Section::Draw { id, .. } => id.as_str(),
        };
        open(
            w,
            "qti-assessment-section",
            &[
                ("identifier", &id),
                ("title", section_title),
                ("visible", visible),
            ],
        )?;
        // The ASI order: a section's selection, then its rubric blocks, then its parts.
        if let Section::Draw { select, .. } = section {
            empty(
                w,
                "qti-selection",
                &[
                    ("select", &select.to_string()),
                    ("with-replacement", "false"),
                ],
            )?;
        }
        if n == 0
            && let Some(intro) = &content.intro
        {
            open(w, "qti-rubric-block", &[("view", "candidate")])?;
            open(w, "qti-content-body", &[])?;
            lang_leaf(w, "p", &[], in_locale(intro, locale, src), locale)?;
            close(w, "qti-content-body")?;
            close(w, "qti-rubric-block")?;
        }
        let (Section::Fixed(questions) | Section::Draw { questions, .. }) = section;
        for q in questions {
            let mut attrs = vec![
                ("identifier", item_id(&q.key)),
                ("href", format!("../{}", item_path(&q.key, locale))),
            ];
            if !q.tags.is_empty() {
                let tokens: Vec<String> = q.tags.iter().map(|t| tag_token(t)).collect();
                attrs.push(("category", tokens.join(" ")));
            }
            let attrs: Vec<(&str, &str)> = attrs.iter().map(|(k, v)| (*k, v.as_str())).collect();
            empty(w, "qti-assessment-item-ref", &attrs)?;
        }
        close(w, "qti-assessment-section")?;
    }
    close(w, "qti-test-part")?;
    close(w, "qti-assessment-test")?;
    Ok(doc.into_inner().into_inner())
}

/// A section of the test part.
enum Section<'a> {
    /// Questions every attempt serves, in order.
    Fixed(Vec<&'a Question>),
    /// A slot: `select` of `questions` (the slot's candidates), drawn without replacement; or,
    /// with `select` 0, a bank's questions that no slot draws.
    Draw {
        id: String,
        select: u32,
        questions: Vec<&'a Question>,
    },
}

/// The test part's sections: without banks, one with every question; with banks, one per run
/// of fixed questions and one per slot, in layout order, then per bank one for the questions
/// no slot draws (section identifiers: [`bank_section_id`]).
fn sections(content: &QuizContent) -> Vec<Section<'_>> {
    if !content.draws() {
        return vec![Section::Fixed(content.questions.iter().collect())];
    }
    let mut out: Vec<Section> = Vec::new();
    let mut drawn: Vec<&str> = Vec::new();
    for slot in &content.layout {
        match slot {
            Slot::Fixed { question } => {
                let Some(q) = content.question(question) else {
                    continue;
                };
                match out.last_mut() {
                    Some(Section::Fixed(run)) => run.push(q),
                    _ => out.push(Section::Fixed(vec![q])),
                }
            }
            Slot::Draw { bank, draw, tag } => {
                let questions = content.candidates(slot);
                drawn.extend(questions.iter().map(|q| q.key.as_str()));
                out.push(Section::Draw {
                    id: bank_section_id(bank, &BankSection::Slot(tag.clone())),
                    select: *draw,
                    questions,
                });
            }
        }
    }
    for bank in &content.banks {
        let undrawn: Vec<&Question> = (bank.questions.iter())
            .filter(|k| !drawn.contains(&k.as_str()))
            .filter_map(|k| content.question(k))
            .collect();
        if !undrawn.is_empty() {
            out.push(Section::Draw {
                id: bank_section_id(&bank.key, &BankSection::Undrawn),
                select: 0,
                questions: undrawn,
            });
        }
    }
    out
}

fn item_path(key: &str, locale: &str) -> String {
    format!("items/{key}/{locale}.xml")
}

fn test_path(locale: &str) -> String {
    format!("tests/{locale}.xml")
}

fn manifest(content: &QuizContent) -> Result<Vec<u8>, QtiError> {
    let mut doc = new_doc()?;
    let w = &mut doc;
    let schema_location = format!("{CP_NS} {CP_XSD}");
    open(
        w,
        "manifest",
        &[
            ("xmlns", CP_NS),
            ("xmlns:xsi", XSI_NS),
            ("xsi:schemaLocation", &schema_location),
            ("identifier", &format!("M_{}", content.slug)),
        ],
    )?;
    open(w, "metadata", &[])?;
    leaf(w, "schema", &[], "QTI Package")?;
    leaf(w, "schemaversion", &[], "3.0.0")?;
    close(w, "metadata")?;
    empty(w, "organizations", &[])?;
    open(w, "resources", &[])?;
    // The source locale's test first: an importer takes the first test's language as the
    // quiz's source language.
    for locale in &content.locales {
        let path = test_path(locale);
        open(
            w,
            "resource",
            &[
                ("identifier", &format!("RT_{locale}")),
                ("type", "imsqti_test_xmlv3p0"),
                ("href", &path),
            ],
        )?;
        empty(w, "file", &[("href", &path)])?;
        for q in &content.questions {
            empty(
                w,
                "dependency",
                &[("identifierref", &format!("R_{}_{locale}", q.key))],
            )?;
        }
        close(w, "resource")?;
    }
    for q in &content.questions {
        for locale in &content.locales {
            let path = item_path(&q.key, locale);
            open(
                w,
                "resource",
                &[
                    ("identifier", &format!("R_{}_{locale}", q.key)),
                    ("type", "imsqti_item_xmlv3p0"),
                    ("href", &path),
                ],
            )?;
            empty(w, "file", &[("href", &path)])?;
            close(w, "resource")?;
        }
    }
    close(w, "resources")?;
    close(w, "manifest")?;
    Ok(doc.into_inner().into_inner())
}

/// The files of the package, in the order they are zipped: the manifest, each locale's test,
/// each question's item in each locale.
pub fn files(content: &QuizContent) -> Result<Vec<(String, Vec<u8>)>, QtiError> {
    let mut out = vec![("imsmanifest.xml".to_string(), manifest(content)?)];
    for locale in &content.locales {
        out.push((test_path(locale), test(content, locale)?));
    }
    for q in &content.questions {
        for locale in &content.locales {
            out.push((item_path(&q.key, locale), item(q, content, locale)?));
        }
    }
    Ok(out)
}

/// The QTI 3.0 package of `content` as a zip.
pub fn export_qti3(content: &QuizContent) -> Result<Vec<u8>, QtiError> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        // A fixed time, so the same content gives the same bytes.
        .last_modified_time(zip::DateTime::default());
    for (name, bytes) in files(content)? {
        zip.start_file(name, options).map_err(io)?;
        zip.write_all(&bytes).map_err(io)?;
    }
    Ok(zip.finish().map_err(io)?.into_inner())
}
