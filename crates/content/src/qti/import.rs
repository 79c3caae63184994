//! Reading QTI 3.0 and 2.1 packages and documents into a quiz: each item becomes a question
//! of the `quiz.toml`/`<locale>.toml` the content compiler reads, so an import passes every
//! check a TOML quiz does. QTI 3.0's names are kebab-case with a `qti-` prefix
//! (`qti-choice-interaction`, `response-identifier`), QTI 2.1's camelCase (`choiceInteraction`,
//! `responseIdentifier`): the reader asks for 2.1's names and finds either.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Cursor, Read};

use roxmltree::{Document, Node, ParsingOptions};
use serde::Serialize;

use super::limits::*;
use super::{
    CHOICE_PREFIX, EXPLANATION, ITEM_PREFIX, ImportReport, ImportedItem, QtiError, QtiImport,
    SkippedItem, TEST_PREFIX, TRUE_FALSE_CLASS, WRONG,
};
use crate::i18n::canonical_tag;
use crate::{QuestionKind, QuizSource, SourceFile, compile};

const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";

fn refused(m: impl Into<String>) -> QtiError {
    QtiError::Refused(m.into())
}

/// One XML file of the package: its path in the zip and its text.
pub(super) struct File {
    pub(super) path: String,
    pub(super) text: String,
}

/// The XML files of a zip package, bounded (see [`super::limits`]). Other files (images,
/// stylesheets) are not read.
fn unzip(bytes: &[u8]) -> Result<Vec<File>, QtiError> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| refused(format!("not a readable zip package: {e}")))?;
    if zip.len() > MAX_ENTRIES {
        return Err(refused(format!(
            "the package has {} entries; at most {MAX_ENTRIES} are read",
            zip.len()
        )));
    }
    let mut files = Vec::new();
    let mut total = 0u64;
    for i in 0..zip.len() {
        let entry = zip
            .by_index(i)
            .map_err(|e| refused(format!("entry #{i} of the package: {e}")))?;
        let name = entry
            .name()
            .map_err(|e| refused(format!("entry #{i} of the package: {e}")))?
            .to_string();
        if entry.is_dir() || !name.to_ascii_lowercase().ends_with(".xml") {
            continue;
        }
        let (size, packed) = (entry.size(), entry.compressed_size());
        if size > MAX_FILE {
            return Err(refused(format!(
                "{name} unpacks to {size} bytes; at most {MAX_FILE} are read per file"
            )));
        }
        if size > RATIO_FLOOR && size / packed.max(1) > MAX_RATIO {
            return Err(refused(format!(
                "{name} is compressed {}×, beyond the {MAX_RATIO}× of any real XML (a zip bomb?)",
                size / packed.max(1)
            )));
        }
        // The header's size is the sender's word: read through the limit whatever it says.
        let mut data = Vec::with_capacity(size as usize);
        entry
            .take(MAX_FILE + 1)
            .read_to_end(&mut data)
            .map_err(|e| refused(format!("{name}: cannot unpack: {e}")))?;
        if data.len() as u64 > MAX_FILE {
            return Err(refused(format!(
                "{name} unpacks to more than {MAX_FILE} bytes"
            )));
        }
        total += data.len() as u64;
        if total > MAX_TOTAL {
            return Err(refused(format!(
                "the package's XML unpacks to more than {MAX_TOTAL} bytes"
            )));
        }
        let text =
            String::from_utf8(data).map_err(|_| refused(format!("{name} is not UTF-8 text")))?;
        files.push(File { path: name, text });
    }
    Ok(files)
}

/// Parses one document within the bounds: at most `moodle_xml::MAX_ATTRIBUTES` attributes
/// per element, no DTD (so no entity of any kind), at most [`MAX_NODES`] nodes and
/// [`MAX_DEPTH`] levels.
fn parse<'a>(file: &'a File) -> Result<Document<'a>, QtiError> {
    // roxmltree compares each attribute with the element's earlier ones: bounded first.
    if let Some(line) = crate::moodle_xml::too_many_attributes(&file.text) {
        return Err(refused(format!(
            "{} line {line}: an element with more than {} attributes",
            file.path,
            crate::moodle_xml::MAX_ATTRIBUTES
        )));
    }
    let options = ParsingOptions {
        allow_dtd: false,
        nodes_limit: MAX_NODES,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(&file.text, options).map_err(|e| {
        let why = match e {
            roxmltree::Error::DtdDetected => {
                "has a DOCTYPE; documents with a DTD are refused (no entity is expanded or fetched)"
                    .to_string()
            }
            roxmltree::Error::NodesLimitReached => {
                format!("has more than {MAX_NODES} XML nodes")
            }
            e => format!("is not well-formed XML: {e}"),
        };
        refused(format!("{} {why}", file.path))
    })?;
    // In document order a parent comes before its children: one pass, no recursion, so a
    // deep document cannot exhaust the stack here; the readers below recurse only within
    // this depth.
    let mut depth = vec![0u16; doc.descendants().count() + 1];
    for n in doc.descendants().filter(|n| n.is_element()) {
        let d = n.parent().map_or(0, |p| depth[p.id().get() as usize]) + 1;
        if usize::from(d) > MAX_DEPTH {
            return Err(refused(format!(
                "{} nests elements more than {MAX_DEPTH} deep",
                file.path
            )));
        }
        depth[n.id().get() as usize] = d;
    }
    Ok(doc)
}

/// The element's name as QTI 2.1 spells it: `qti-choice-interaction` → `choiceInteraction`.
fn name(n: Node) -> String {
    let local = n.tag_name().name();
    match local.strip_prefix("qti-") {
        Some(rest) => camel(rest),
        None => local.to_string(),
    }
}

fn camel(kebab: &str) -> String {
    let mut out = String::with_capacity(kebab.len());
    let mut upper = false;
    for c in kebab.chars() {
        if c == '-' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn kebab(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// An attribute by its QTI 2.1 name, or QTI 3.0's kebab-case one.
fn attr<'a>(n: Node<'a, '_>, camel_name: &str) -> Option<&'a str> {
    n.attribute(camel_name)
        .or_else(|| n.attribute(kebab(camel_name).as_str()))
}

fn children<'a, 'i>(n: Node<'a, 'i>, want: &'a str) -> impl Iterator<Item = Node<'a, 'i>> + 'a {
    n.children()
        .filter(move |c| c.is_element() && name(*c) == want)
}

fn child<'a, 'i>(n: Node<'a, 'i>, want: &'a str) -> Option<Node<'a, 'i>> {
    children(n, want).next()
}

fn descendants<'a, 'i>(n: Node<'a, 'i>, want: &'a str) -> impl Iterator<Item = Node<'a, 'i>> + 'a {
    n.descendants()
        .filter(move |c| c.is_element() && name(*c) == want)
}

/// The `xml:lang` in force at `n`.
fn lang_at(n: Node, default: &str) -> String {
    n.ancestors()
        .find_map(|a| a.attribute((XML_NS, "lang")))
        .unwrap_or(default)
        .to_string()
}

fn is_interaction(n: Node) -> bool {
    n.is_element() && name(n).ends_with("Interaction")
}

fn is_feedback(n: Node) -> bool {
    n.is_element() && matches!(name(n).as_str(), "feedbackInline" | "feedbackBlock")
}

/// Text of `n` without the interactions and feedback inside it, and the language of its
/// first non-blank text. A quizd item's text is exact; another tool's is whitespace-collapsed
/// (its indentation is not part of the text).
struct Texts {
    exact: bool,
    default_lang: String,
}

impl Texts {
    fn of(&self, n: Node, skip_prompt: bool) -> Option<(String, String)> {
        let mut out = String::new();
        let mut lang = None;
        self.collect(n, skip_prompt, &mut out, &mut lang);
        let text = if self.exact {
            out
        } else {
            out.split_whitespace().collect::<Vec<_>>().join(" ")
        };
        if text.trim().is_empty() {
            return None;
        }
        Some((text, lang.unwrap_or_else(|| self.default_lang.clone())))
    }

    fn collect(&self, n: Node, skip_prompt: bool, out: &mut String, lang: &mut Option<String>) {
        for c in n.children() {
            if c.is_text() {
                let t = c.text().unwrap_or("");
                if lang.is_none() && !t.trim().is_empty() {
                    *lang = Some(lang_at(n, &self.default_lang));
                }
                out.push_str(t);
            } else if c.is_element() {
                if is_interaction(c) || is_feedback(c) || (skip_prompt && name(c) == "prompt") {
                    continue;
                }
                // Block elements of another tool's item separate their texts.
                if !self.exact && !out.is_empty() {
                    out.push(' ');
                }
                self.collect(c, skip_prompt, out, lang);
            }
        }
    }
}

/// A text and the language it is written in.
type LText = (String, String);

#[derive(Debug)]
struct ParsedOption {
    id: String,
    text: Option<LText>,
    correct: bool,
    feedback: Option<LText>,
}

#[derive(Debug)]
struct ParsedItem {
    identifier: String,
    file: String,
    lang: String,
    title: String,
    kind: QuestionKind,
    points: f64,
    prompt: Option<LText>,
    explanation: Option<LText>,
    wrong_feedback: Option<LText>,
    options: Vec<ParsedOption>,
    answer: Option<f64>,
    tolerance: Option<f64>,
    accepted: Vec<String>,
    case_sensitive: bool,
    notes: Vec<String>,
}

enum ItemOutcome {
    Item(Box<ParsedItem>),
    Skipped(SkippedItem),
}

fn float(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|x| x.is_finite())
}

/// The values of a `correctResponse` or `defaultValue`.
fn values(n: Option<Node>) -> Vec<String> {
    n.map(|n| {
        children(n, "value")
            .map(|v| v.text().unwrap_or("").trim().to_string())
            .collect()
    })
    .unwrap_or_default()
}

fn read_item(root: Node, file: &str, default_lang: &str) -> ItemOutcome {
    let identifier = attr(root, "identifier").unwrap_or("").to_string();
    let skip = |interaction: Option<String>, reason: String| {
        ItemOutcome::Skipped(SkippedItem {
            item: identifier.clone(),
            file: file.to_string(),
            interaction,
            reason,
        })
    };
    if identifier.is_empty() {
        return skip(None, "the item has no identifier".into());
    }
    let lang_raw = root
        .attribute((XML_NS, "lang"))
        .unwrap_or(default_lang)
        .to_string();
    let Some(lang) = canonical_tag(&lang_raw) else {
        return skip(
            None,
            format!("xml:lang '{lang_raw}' is not a BCP 47 language tag"),
        );
    };
    let ours = attr(root, "toolName") == Some("quizd");
    let texts = Texts {
        exact: ours,
        default_lang: lang.clone(),
    };
    let Some(body) = child(root, "itemBody") else {
        return skip(None, "the item has no item body".into());
    };
    let interactions: Vec<Node> = body.descendants().filter(|n| is_interaction(*n)).collect();
    let interaction = match interactions.as_slice() {
        [] => return skip(None, "the item has no interaction".into()),
        [one] => *one,
        [first, ..] => {
            let names: Vec<String> = interactions.iter().map(|n| name(*n)).collect();
            let unsupported = interactions
                .iter()
                .map(|n| name(*n))
                .find(|n| n != "choiceInteraction" && n != "textEntryInteraction");
            return skip(
                unsupported.or_else(|| Some(name(*first))),
                format!(
                    "the item has {} interactions ({}); quizd's questions have one",
                    names.len(),
                    names.join(", ")
                ),
            );
        }
    };
    let iname = name(interaction);
    if iname != "choiceInteraction" && iname != "textEntryInteraction" {
        return skip(
            Some(iname.clone()),
            format!(
                "{iname} has no quizd question kind (quizd imports choiceInteraction and textEntryInteraction)"
            ),
        );
    }
    let response_id = attr(interaction, "responseIdentifier").unwrap_or("RESPONSE");
    let Some(decl) =
        children(root, "responseDeclaration").find(|d| attr(*d, "identifier") == Some(response_id))
    else {
        return skip(None, format!("no response declaration for '{response_id}'"));
    };
    let cardinality = attr(decl, "cardinality").unwrap_or("single");
    let base_type = attr(decl, "baseType").unwrap_or("identifier");
    let correct = values(child(decl, "correctResponse"));
    let mapping = child(decl, "mapping");
    let entries: Vec<(String, f64, bool)> = mapping
        .map(|m| {
            children(m, "mapEntry")
                .filter_map(|e| {
                    let key = attr(e, "mapKey")?.to_string();
                    let value = attr(e, "mappedValue").and_then(float).unwrap_or(0.0);
                    let sensitive = attr(e, "caseSensitive").is_some_and(|v| v == "true");
                    Some((key, value, sensitive))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut notes = Vec::new();

    // Points: MAXSCORE, else the mapping's upper bound or its positive values, else 1.
    let maxscore = children(root, "outcomeDeclaration")
        .find(|o| attr(*o, "identifier") == Some("MAXSCORE"))
        .and_then(|o| {
            values(child(o, "defaultValue"))
                .first()
                .and_then(|v| float(v))
        });
    let mapped_max = mapping
        .and_then(|m| attr(m, "upperBound").and_then(float))
        .or_else(|| {
            let sum: f64 = entries.iter().map(|e| e.1).filter(|v| *v > 0.0).sum();
            (cardinality == "multiple" && sum > 0.0).then_some(sum)
        });
    let points = maxscore.or(mapped_max).unwrap_or(1.0);

    // Feedback: quizd's EXPLANATION/WRONG, or another tool's usual names for them.
    let mut explanation = None;
    let mut wrong_feedback = None;
    let mut modal: HashMap<String, LText> = HashMap::new();
    for f in children(root, "modalFeedback") {
        let id = attr(f, "identifier").unwrap_or("").to_string();
        let Some(t) = texts.of(f, false) else {
            continue;
        };
        let lower = id.to_ascii_lowercase();
        if id == EXPLANATION
            || (!ours
                && explanation.is_none()
                && matches!(
                    lower.as_str(),
                    "correct" | "feedback_correct" | "general" | "solution" | "explanation"
                ))
        {
            explanation = Some(t);
        } else if id == WRONG
            || (!ours
                && wrong_feedback.is_none()
                && matches!(lower.as_str(), "incorrect" | "wrong" | "feedback_incorrect"))
        {
            wrong_feedback = Some(t);
        } else {
            modal.insert(id, t);
        }
    }

    let mut kind;
    let mut options = Vec::new();
    let (mut answer, mut tolerance, mut accepted, mut case_sensitive) = (None, None, vec![], false);
    let body_prompt = texts.of(body, true);
    let prompt;
    if iname == "choiceInteraction" {
        let own_prompt = child(interaction, "prompt").and_then(|p| texts.of(p, false));
        prompt = match (body_prompt, own_prompt) {
            (Some(b), Some(p)) => Some((format!("{}\n\n{}", b.0, p.0), b.1)),
            (b, p) => b.or(p),
        };
        let positive: HashSet<&str> = entries
            .iter()
            .filter(|e| e.1 > 0.0)
            .map(|e| e.0.as_str())
            .collect();
        for c in descendants(interaction, "simpleChoice") {
            let id = attr(c, "identifier").unwrap_or("").to_string();
            let inline = child(c, "feedbackInline").and_then(|f| texts.of(f, false));
            options.push(ParsedOption {
                correct: if correct.is_empty() {
                    positive.contains(id.as_str())
                } else {
                    correct.contains(&id)
                },
                text: texts.of(c, false),
                feedback: modal.remove(&id).or(inline),
                id,
            });
        }
        let single = cardinality == "single" || attr(interaction, "maxChoices") == Some("1");
        let keys: Vec<String> = options
            .iter()
            .map(|o| key_of(&o.id, CHOICE_PREFIX))
            .collect();
        let tf_class = attr(interaction, "class")
            .is_some_and(|c| c.split_whitespace().any(|c| c == TRUE_FALSE_CLASS));
        let tf_keys =
            keys.len() == 2 && keys.contains(&"true".into()) && keys.contains(&"false".into());
        kind = if single {
            QuestionKind::Single
        } else {
            QuestionKind::Multiple
        };
        if single && tf_keys && (tf_class || !ours) {
            kind = QuestionKind::TrueFalse;
            answer = Some(
                if options
                    .iter()
                    .any(|o| o.correct && key_of(&o.id, CHOICE_PREFIX) == "true")
                {
                    1.0
                } else {
                    0.0
                },
            );
        }
    } else {
        prompt = body_prompt;
        match base_type {
            "float" | "integer" => {
                kind = QuestionKind::Numeric;
                answer = correct
                    .first()
                    .and_then(|v| float(v))
                    .or_else(|| entries.iter().find(|e| e.1 > 0.0).and_then(|e| float(&e.0)));
                if answer.is_none() {
                    return skip(None, "a numeric text entry without a correct value".into());
                }
                tolerance = child(root, "responseProcessing").and_then(|rp| {
                    descendants(rp, "equal")
                        .find(|e| attr(*e, "toleranceMode") == Some("absolute"))
                        .and_then(|e| attr(e, "tolerance"))
                        .and_then(|t| t.split_whitespace().next().and_then(float))
                });
            }
            "string" => {
                kind = QuestionKind::ShortText;
                if entries.is_empty() {
                    accepted = correct.clone();
                    // QTI's match is exact.
                    case_sensitive = true;
                } else {
                    for e in entries.iter().filter(|e| e.1 > 0.0) {
                        if !accepted.contains(&e.0) {
                            accepted.push(e.0.clone());
                        }
                    }
                    case_sensitive = entries.iter().any(|e| e.2);
                }
                accepted.retain(|a| !a.trim().is_empty());
                if accepted.is_empty() {
                    return skip(None, "a text entry without a correct value".into());
                }
            }
            other => {
                return skip(
                    Some(iname.clone()),
                    format!("a text entry with base type '{other}' has no quizd question kind"),
                );
            }
        }
    }
    let media: Vec<String> = body
        .descendants()
        .filter(|n| n.is_element())
        .map(|n| n.tag_name().name().to_string())
        .filter(|n| {
            matches!(
                n.as_str(),
                "img" | "object" | "audio" | "video" | "math" | "table"
            )
        })
        .collect();
    if let Some(first) = media.first() {
        notes.push(format!(
            "its body has {} element(s) quizd's plain texts cannot carry (<{first}>…), left out",
            media.len()
        ));
    }
    for id in modal.keys() {
        notes.push(format!(
            "modal feedback '{id}' has no place in quizd and was left out"
        ));
    }
    ItemOutcome::Item(Box::new(ParsedItem {
        title: attr(root, "title").unwrap_or("").to_string(),
        identifier,
        file: file.to_string(),
        lang,
        kind,
        points,
        prompt,
        explanation,
        wrong_feedback,
        options,
        answer,
        tolerance,
        accepted,
        case_sensitive,
        notes,
    }))
}

/// A quizd key from a QTI identifier: quizd's own prefix dropped, lowercased, other
/// characters as `-`, at most 64.
fn key_of(identifier: &str, prefix: &str) -> String {
    let id = identifier.strip_prefix(prefix).unwrap_or(identifier);
    let mut key: String = id
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '-' | '_') => c,
            _ => '-',
        })
        .take(64)
        .collect();
    if !key.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        key = format!("x{key}");
        key.truncate(64);
    }
    key
}

fn slug_of(identifier: &str) -> String {
    let key = key_of(identifier, TEST_PREFIX).replace('_', "-");
    let slug = key.trim_matches('-').to_string();
    if slug.is_empty() {
        "imported-quiz".into()
    } else {
        slug
    }
}

/// A test document: its language, title, intro, and its item hrefs resolved to package paths.
struct TestDoc {
    path: String,
    identifier: String,
    lang: Option<String>,
    title: String,
    intro: Option<LText>,
    items: Vec<String>,
    /// Its test parts' sections, flattened into what an attempt is served, in order.
    parts: Vec<Part>,
    /// Section shapes quizd cannot keep as they are, and what was made of them.
    notes: Vec<String>,
    ours: bool,
}

/// What a test serves, in order: an item every attempt gets, or a section that draws from its
/// items.
enum Part {
    Item(String),
    Draw(DrawSection),
}

struct DrawSection {
    identifier: String,
    select: u32,
    /// The items' paths and their references' `category` tokens.
    items: Vec<(String, Vec<String>)>,
}

/// Sections nest no deeper than the document does ([`MAX_DEPTH`]).
fn read_sections(section: Node, file: &str, parts: &mut Vec<Part>, notes: &mut Vec<String>) {
    let id = attr(section, "identifier").unwrap_or("").to_string();
    let refs = |n: Node| -> Vec<String> {
        descendants(n, "assessmentItemRef")
            .filter_map(|r| attr(r, "href"))
            .map(|h| resolve(file, h))
            .collect()
    };
    let Some(selection) = child(section, "selection") else {
        for c in section.children().filter(|c| c.is_element()) {
            match name(c).as_str() {
                "assessmentItemRef" => {
                    if let Some(h) = attr(c, "href") {
                        parts.push(Part::Item(resolve(file, h)));
                    }
                }
                "assessmentSection" => read_sections(c, file, parts, notes),
                "assessmentSectionRef" | "include" => notes.push(format!(
                    "section '{id}': a {} (a section in another file) is not read",
                    name(c)
                )),
                _ => {}
            }
        }
        return;
    };
    let select = attr(selection, "select").and_then(|s| s.trim().parse::<u32>().ok());
    let replacement = attr(selection, "withReplacement").is_some_and(|v| v.trim() == "true");
    let nested = children(section, "assessmentSection").next().is_some()
        || children(section, "assessmentSectionRef").next().is_some();
    let why = match select {
        None => Some("its selection has no valid `select`".to_string()),
        Some(_) if nested => {
            Some("it selects among sections, not items (quizd's banks draw questions)".to_string())
        }
        Some(_) if replacement => Some(
            "it draws with replacement (quizd never serves a question twice in an attempt)"
                .to_string(),
        ),
        Some(_) => None,
    };
    if let Some(why) = why {
        let items = refs(section);
        notes.push(format!(
            "section '{id}' selects from its parts, which quizd cannot keep: {why}; its {} item(s) are imported as fixed questions",
            items.len()
        ));
        parts.extend(items.into_iter().map(Part::Item));
        return;
    }
    let items = children(section, "assessmentItemRef")
        .filter_map(|r| {
            let path = resolve(file, attr(r, "href")?);
            let tokens = attr(r, "category")
                .map(|c| c.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default();
            Some((path, tokens))
        })
        .collect();
    parts.push(Part::Draw(DrawSection {
        identifier: id,
        select: select.unwrap_or(0),
        items,
    }));
}

fn resolve(base: &str, href: &str) -> String {
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for seg in href.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

fn read_test(root: Node, file: &str) -> TestDoc {
    let lang = root.attribute((XML_NS, "lang")).and_then(canonical_tag);
    let ours = attr(root, "toolName") == Some("quizd");
    let texts = Texts {
        exact: ours,
        default_lang: lang.clone().unwrap_or_else(|| "en".into()),
    };
    let mut parts = Vec::new();
    let mut notes = Vec::new();
    for part in children(root, "testPart") {
        for section in children(part, "assessmentSection") {
            read_sections(section, file, &mut parts, &mut notes);
        }
    }
    TestDoc {
        parts,
        notes,
        ours,
        path: file.to_string(),
        identifier: attr(root, "identifier").unwrap_or("").to_string(),
        title: attr(root, "title").unwrap_or("").to_string(),
        intro: descendants(root, "rubricBlock")
            .next()
            .and_then(|r| texts.of(r, false)),
        items: descendants(root, "assessmentItemRef")
            .filter_map(|r| attr(r, "href"))
            .map(|h| resolve(file, h))
            .collect(),
        lang,
    }
}

#[derive(Debug, Serialize)]
pub(super) struct QuizToml {
    pub(super) slug: String,
    pub(super) source_locale: String,
    pub(super) title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) intro: Option<String>,
    pub(super) questions: Vec<EntryToml>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) banks: Vec<BankToml>,
}

/// A `[[questions]]` entry: a fixed question or a slot.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum EntryToml {
    Question(Box<QuestionToml>),
    Slot {
        bank: String,
        draw: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        tag: Option<String>,
    },
}

#[derive(Debug, Serialize)]
pub(super) struct BankToml {
    pub(super) key: String,
    pub(super) questions: Vec<QuestionToml>,
}

#[derive(Debug, Serialize)]
pub(super) struct QuestionToml {
    pub(super) key: String,
    pub(super) kind: &'static str,
    pub(super) points: f64,
    pub(super) prompt: String,
    pub(super) explanation: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) answer: Option<toml::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tolerance: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) accepted: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) case_sensitive: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) wrong_feedback: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) options: Option<Vec<OptionToml>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tags: Option<Vec<String>>,
}

#[derive(Debug, Serialize)]
pub(super) struct OptionToml {
    pub(super) key: String,
    pub(super) text: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) correct: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) feedback: Option<String>,
}

#[derive(Debug, Serialize, Default)]
pub(super) struct TranslationToml {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) intro: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) questions: BTreeMap<String, QuestionTranslationToml>,
}

#[derive(Debug, Serialize, Default)]
pub(super) struct QuestionTranslationToml {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) prompt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) explanation: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) wrong_feedback: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) options: BTreeMap<String, OptionTranslationToml>,
}

#[derive(Debug, Serialize, Default)]
pub(super) struct OptionTranslationToml {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) feedback: Option<String>,
}

pub(super) fn kind_name(kind: QuestionKind) -> &'static str {
    QuestionKind::ALL
        .iter()
        .find(|(_, k)| *k == kind)
        .map_or("single", |(n, _)| n)
}

/// The XML files of an upload: a zip package's (bounded, see [`unzip`]), or the upload itself
/// as one document.
fn load(bytes: &[u8]) -> Result<Vec<File>, QtiError> {
    if bytes.len() > MAX_INPUT {
        return Err(refused(format!(
            "the package has {} bytes; at most {MAX_INPUT} are read",
            bytes.len()
        )));
    }
    if bytes.starts_with(b"PK") {
        return unzip(bytes);
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| refused("neither a zip package nor UTF-8 XML"))?
        .to_string();
    Ok(vec![File {
        path: "document.xml".into(),
        text,
    }])
}

/// A package or document read: QTI 2.1/3.0 compiled to a quiz, or QTI 1.2 (Canvas) as a
/// draft for `content::interchange::build`.
pub enum Package {
    Qti(Box<QtiImport>),
    Qti12(crate::interchange::Draft),
}

/// Reads a QTI package (zip) or a single document, telling QTI 1.2 (`questestinterop`) from
/// QTI 2.1/3.0 by the documents themselves.
pub fn read(bytes: &[u8]) -> Result<Package, QtiError> {
    let files = load(bytes)?;
    let mut docs = Vec::new();
    let mut nodes = 0usize;
    for f in &files {
        let doc = parse(f)?;
        nodes += doc.descendants().count();
        if nodes > MAX_TOTAL_NODES {
            return Err(refused(format!(
                "the package's documents have more than {MAX_TOTAL_NODES} XML nodes together"
            )));
        }
        docs.push((f, doc));
    }
    if docs
        .iter()
        .any(|(_, d)| d.root_element().tag_name().name() == "questestinterop")
    {
        return super::v1p2::read(&docs).map(Package::Qti12);
    }
    import_docs(&docs).map(|i| Package::Qti(Box::new(i)))
}

/// Imports a QTI 3.0 or 2.1 package (zip) or a single item or test document; QTI 1.2 is
/// refused here (it has no locales nor titles to compile itself: [`read`] gives it as a draft).
pub fn import_qti(bytes: &[u8]) -> Result<QtiImport, QtiError> {
    match read(bytes)? {
        Package::Qti(import) => Ok(*import),
        Package::Qti12(_) => Err(refused(
            "the package is QTI 1.2 (questestinterop): it is read as a draft of questions",
        )),
    }
}

fn import_docs(docs: &[(&File, Document)]) -> Result<QtiImport, QtiError> {
    // Which documents are what; the manifest's order of resources, then the zip's.
    let mut order: Vec<String> = Vec::new();
    let mut tests: Vec<(usize, TestDoc)> = Vec::new();
    let mut item_docs: Vec<(&File, Node)> = Vec::new();
    let mut format = String::new();
    let mut unknown = Vec::new();
    for (f, doc) in docs {
        let root = doc.root_element();
        match name(root).as_str() {
            "manifest" => {
                for r in descendants(root, "resource") {
                    if let Some(href) = r.attribute("href") {
                        order.push(resolve(&f.path, href));
                    }
                }
            }
            "assessmentTest" => tests.push((tests.len(), read_test(root, &f.path))),
            "assessmentItem" => {
                if format.is_empty() {
                    format = match root.tag_name().namespace().unwrap_or("") {
                        ns if ns.contains("v3p0") => "QTI 3.0",
                        ns if ns.contains("v2p2") => "QTI 2.2",
                        ns if ns.contains("v2p1") => "QTI 2.1",
                        _ => "QTI",
                    }
                    .to_string();
                }
                item_docs.push((f, root));
            }
            other => unknown.push(format!("{} ({other})", f.path)),
        }
    }
    if item_docs.is_empty() {
        return Err(refused(if tests.is_empty() {
            "no QTI assessment item found (expected a zip package with imsmanifest.xml, or an item document)".to_string()
        } else {
            "a test without its items: send the whole package (a zip with imsmanifest.xml and the item files)".to_string()
        }));
    }
    if item_docs.len() > MAX_ITEMS {
        return Err(refused(format!(
            "the package has {} items; at most {MAX_ITEMS} are read",
            item_docs.len()
        )));
    }
    // The source language: the first test's (the manifest's first, in quizd's packages),
    // else the first item's.
    let rank = |path: &str| order.iter().position(|p| p == path).unwrap_or(usize::MAX);
    tests.sort_by_key(|(i, t)| (rank(&t.path), *i));
    let first_test = tests.first().map(|(_, t)| t);
    let default_lang = first_test
        .and_then(|t| t.lang.clone())
        .unwrap_or_else(|| "en".to_string());
    let item_rank = |path: &str| {
        first_test
            .and_then(|t| t.items.iter().position(|p| p == path))
            .unwrap_or(usize::MAX)
    };
    let mut indexed: Vec<(usize, &File, Node)> = item_docs
        .into_iter()
        .enumerate()
        .map(|(i, (f, n))| (i, f, n))
        .collect();
    indexed.sort_by_key(|(i, f, _)| (item_rank(&f.path), rank(&f.path), *i));

    let mut report = ImportReport {
        format,
        ..ImportReport::default()
    };
    for u in unknown {
        report
            .notes
            .push(format!("{u}: not a QTI item, test or manifest; not read"));
    }
    let mut items: Vec<ParsedItem> = Vec::new();
    for (_, f, root) in indexed {
        match read_item(root, &f.path, &default_lang) {
            ItemOutcome::Item(i) => items.push(*i),
            ItemOutcome::Skipped(s) => report.skipped.push(s),
        }
    }
    let Some(first) = items.first() else {
        return Err(QtiError::Invalid {
            errors: vec![crate::ContentError {
                file: "package".into(),
                question: None,
                message: "no item of the package can be imported (see the report)".into(),
            }],
            report,
        });
    };
    let source_locale = first_test
        .and_then(|t| t.lang.clone())
        .unwrap_or_else(|| first.lang.clone());
    let first_title = Some(first.title.clone());

    // Group the items by identifier: the source-language one is the question, the others
    // its translations.
    let mut groups: Vec<(String, Vec<ParsedItem>)> = Vec::new();
    for item in items {
        match groups.iter_mut().find(|(id, _)| *id == item.identifier) {
            Some((_, g)) if g.iter().any(|i| i.lang == item.lang) => {
                report.skipped.push(SkippedItem {
                    reason: format!(
                        "another item in the package has the identifier '{}' and the language {}",
                        item.identifier, item.lang
                    ),
                    item: item.identifier,
                    file: item.file,
                    interaction: None,
                })
            }
            Some((_, g)) => g.push(item),
            None => groups.push((item.identifier.clone(), vec![item])),
        }
    }
    let mut questions = Vec::new();
    // The file of each question's source-language item, which the test's references name.
    let mut question_files = Vec::new();
    let mut translations: BTreeMap<String, TranslationToml> = BTreeMap::new();
    let mut used_keys = HashSet::new();
    for (identifier, group) in groups {
        let Some(src) = group.iter().find(|i| i.lang == source_locale) else {
            report.skipped.push(SkippedItem {
                item: identifier.clone(),
                file: group[0].file.clone(),
                interaction: None,
                reason: format!("no version of the item in the source language {source_locale}"),
            });
            continue;
        };
        let mut key = key_of(&identifier, ITEM_PREFIX);
        let mut n = 2;
        while !used_keys.insert(key.clone()) {
            key = format!("{}-{n}", key_of(&identifier, ITEM_PREFIX));
            n += 1;
        }
        for note in &src.notes {
            report.notes.push(format!("{identifier}: {note}"));
        }
        let in_source = |t: &Option<LText>| {
            t.as_ref()
                .filter(|(_, l)| *l == source_locale)
                .map(|(s, _)| s.clone())
        };
        let prompt = in_source(&src.prompt).unwrap_or_else(|| src.title.clone());
        let explanation = match in_source(&src.explanation) {
            Some(e) => e,
            None => {
                let answer = match src.kind {
                    QuestionKind::Numeric => src.answer.map(|a| a.to_string()).unwrap_or_default(),
                    QuestionKind::ShortText => src.accepted.join(" / "),
                    _ => src
                        .options
                        .iter()
                        .filter(|o| o.correct)
                        .filter_map(|o| o.text.as_ref().map(|t| t.0.clone()))
                        .collect::<Vec<_>>()
                        .join(" / "),
                };
                report.notes.push(format!(
                    "{identifier}: no explanation (general feedback) in the item; the correct answer is shown as the explanation"
                ));
                answer
            }
        };
        let mut wrong_feedback = in_source(&src.wrong_feedback);
        let mut options = None;
        let mut answer = None;
        let mut tolerance = None;
        let mut accepted = None;
        let mut case_sensitive = None;
        match src.kind {
            QuestionKind::Single | QuestionKind::Multiple => {
                if wrong_feedback.take().is_some() {
                    report.notes.push(format!(
                        "{identifier}: the wrong-answer feedback was left out (quizd's choice questions give feedback per option)"
                    ));
                }
                options = Some(
                    src.options
                        .iter()
                        .map(|o| OptionToml {
                            key: key_of(&o.id, CHOICE_PREFIX),
                            text: in_source(&o.text).unwrap_or_default(),
                            correct: o.correct,
                            feedback: in_source(&o.feedback),
                        })
                        .collect(),
                );
            }
            QuestionKind::TrueFalse => {
                answer = Some(toml::Value::Boolean(src.answer == Some(1.0)));
                if src.options.iter().any(|o| o.feedback.is_some()) {
                    report.notes.push(format!(
                        "{identifier}: per-choice feedback of a true/false item was left out"
                    ));
                }
            }
            QuestionKind::Numeric => {
                answer = src.answer.map(toml::Value::Float);
                tolerance = Some(src.tolerance.unwrap_or(0.0));
            }
            QuestionKind::ShortText => {
                accepted = Some(src.accepted.clone());
                case_sensitive = Some(src.case_sensitive);
            }
        }
        let mut locales = vec![source_locale.clone()];
        for t in group.iter().filter(|i| i.lang != source_locale) {
            locales.push(t.lang.clone());
            let in_t = |x: &Option<LText>| {
                x.as_ref()
                    .filter(|(_, l)| *l == t.lang)
                    .map(|(s, _)| s.clone())
            };
            let mut qt = QuestionTranslationToml {
                prompt: in_t(&t.prompt),
                explanation: in_t(&t.explanation),
                wrong_feedback: in_t(&t.wrong_feedback).filter(|_| wrong_feedback.is_some()),
                options: BTreeMap::new(),
            };
            if matches!(src.kind, QuestionKind::Single | QuestionKind::Multiple) {
                for o in &t.options {
                    let ot = OptionTranslationToml {
                        text: in_t(&o.text),
                        feedback: in_t(&o.feedback).filter(|_| {
                            src.options
                                .iter()
                                .any(|s| s.id == o.id && s.feedback.is_some())
                        }),
                    };
                    if ot.text.is_some() || ot.feedback.is_some() {
                        qt.options.insert(key_of(&o.id, CHOICE_PREFIX), ot);
                    }
                }
            }
            if qt.prompt.is_some()
                || qt.explanation.is_some()
                || qt.wrong_feedback.is_some()
                || !qt.options.is_empty()
            {
                translations
                    .entry(t.lang.clone())
                    .or_default()
                    .questions
                    .insert(key.clone(), qt);
            }
        }
        report.imported.push(ImportedItem {
            item: identifier.clone(),
            key: key.clone(),
            kind: src.kind,
            locales,
        });
        question_files.push(src.file.clone());
        questions.push(QuestionToml {
            tags: None,
            key,
            kind: kind_name(src.kind),
            points: src.points,
            prompt,
            explanation,
            answer,
            tolerance,
            accepted,
            case_sensitive,
            wrong_feedback,
            options,
        });
    }

    // The quiz: the source test's title and intro, the other tests' as translations.
    let source_test = tests
        .iter()
        .map(|(_, t)| t)
        .find(|t| t.lang.as_deref() == Some(source_locale.as_str()));
    let title = source_test
        .map(|t| t.title.clone())
        .or_else(|| first_title.clone())
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| "Imported quiz".to_string());
    let intro = source_test
        .and_then(|t| t.intro.clone())
        .filter(|(_, l)| *l == source_locale)
        .map(|(s, _)| s);
    for (_, t) in &tests {
        let Some(lang) = t.lang.clone().filter(|l| *l != source_locale) else {
            continue;
        };
        if !translations.contains_key(&lang)
            && !report.imported.iter().any(|i| i.locales.contains(&lang))
        {
            continue;
        }
        let tr = translations.entry(lang.clone()).or_default();
        if !t.title.trim().is_empty() && t.title != title {
            tr.title = Some(t.title.clone());
        }
        if intro.is_some() {
            tr.intro = t.intro.clone().filter(|(_, l)| *l == lang).map(|(s, _)| s);
        }
    }
    let slug = slug_of(
        source_test
            .map(|t| t.identifier.as_str())
            .filter(|i| !i.is_empty())
            .unwrap_or(
                &report
                    .imported
                    .first()
                    .map(|i| i.item.clone())
                    .unwrap_or_default(),
            ),
    );
    let (questions, banks) = match source_test {
        Some(t) => lay_out(questions, &question_files, t, &rank, &mut report.notes),
        None => (
            questions
                .into_iter()
                .map(|q| EntryToml::Question(Box::new(q)))
                .collect(),
            Vec::new(),
        ),
    };
    let quiz = QuizToml {
        slug,
        source_locale: source_locale.clone(),
        title,
        intro,
        questions,
        banks,
    };
    let source = QuizSource {
        quiz: SourceFile {
            name: "quiz.toml".into(),
            text: to_toml(&quiz)?,
        },
        translations: translations
            .iter()
            .map(|(locale, t)| {
                Ok((
                    locale.clone(),
                    SourceFile {
                        name: format!("{locale}.toml"),
                        text: to_toml(t)?,
                    },
                ))
            })
            .collect::<Result<_, QtiError>>()?,
    };
    match compile(&source) {
        Ok(content) => Ok(QtiImport {
            source,
            content,
            report,
        }),
        Err(errors) => Err(QtiError::Invalid { errors, report }),
    }
}

/// The quiz's `[[questions]]` and `[[banks]]` from the source test's parts: each section that
/// draws (`qti-selection`) from items is a bank and a slot drawing `select` of them; every
/// other item a fixed question, in the test's order (items the test does not name last).
/// quizd's own sections ([`super::parse_bank_section_id`]) give back its banks, tags and
/// slots; another tool's section is a bank of its own, keyed by its identifier.
fn lay_out(
    questions: Vec<QuestionToml>,
    files: &[String],
    test: &TestDoc,
    rank: &dyn Fn(&str) -> usize,
    notes: &mut Vec<String>,
) -> (Vec<EntryToml>, Vec<BankToml>) {
    notes.extend(test.notes.iter().cloned());
    let index_of = |path: &str| files.iter().position(|f| f == path);
    // Where each question goes: `None` fixed, else the bank's index; and its tags.
    let mut bank_of: Vec<Option<usize>> = vec![None; questions.len()];
    let mut placed = vec![false; questions.len()];
    let mut tags: Vec<Vec<String>> = vec![Vec::new(); questions.len()];
    let mut bank_keys: Vec<String> = Vec::new();
    // The layout: a fixed question by index, or a slot (bank index, draw, tag).
    enum Laid {
        Fixed(usize),
        Slot(usize, u32, Option<String>),
    }
    let mut layout = Vec::new();
    for part in &test.parts {
        match part {
            Part::Item(path) => {
                if let Some(i) = index_of(path).filter(|i| !placed[*i]) {
                    placed[i] = true;
                    layout.push(Laid::Fixed(i));
                }
            }
            Part::Draw(d) => {
                let ours = test
                    .ours
                    .then(|| super::parse_bank_section_id(&d.identifier))
                    .flatten();
                let (key, what) = match ours {
                    Some((key, what)) => (key, what),
                    None => {
                        let base = key_of(&d.identifier, "");
                        let mut key = base.clone();
                        let mut n = 2;
                        while bank_keys.contains(&key) {
                            key = format!("{base}-{n}");
                            n += 1;
                        }
                        (key, super::BankSection::Slot(None))
                    }
                };
                let b = match bank_keys.iter().position(|k| *k == key) {
                    Some(b) => b,
                    None => {
                        bank_keys.push(key.clone());
                        bank_keys.len() - 1
                    }
                };
                for (path, tokens) in &d.items {
                    let Some(i) = index_of(path) else {
                        continue;
                    };
                    if placed[i] && bank_of[i] != Some(b) {
                        notes.push(format!(
                            "section '{}': item {path} is already placed earlier in the test; it stays there",
                            d.identifier
                        ));
                        continue;
                    }
                    placed[i] = true;
                    bank_of[i] = Some(b);
                    for t in tokens {
                        let tag = if test.ours {
                            super::token_tag(t)
                        } else {
                            Some(t.clone())
                        };
                        if let Some(tag) = tag.filter(|t| !tags[i].contains(t)) {
                            tags[i].push(tag);
                        }
                    }
                }
                match (what, d.select) {
                    (super::BankSection::Slot(tag), n) if n > 0 => {
                        layout.push(Laid::Slot(b, n, tag));
                    }
                    (super::BankSection::Undrawn, _) => {}
                    _ => notes.push(format!(
                        "section '{}' selects none of its items: they are a bank no attempt draws from",
                        d.identifier
                    )),
                }
            }
        }
    }
    // Items the test does not name: fixed, after the rest.
    for (i, p) in placed.iter_mut().enumerate() {
        if !*p {
            *p = true;
            layout.push(Laid::Fixed(i));
        }
    }
    // A bank's questions in package order (quizd's manifest lists them in bank order), and
    // the banks in the order of their first question.
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); bank_keys.len()];
    for (i, b) in bank_of.iter().enumerate() {
        if let Some(b) = b {
            members[*b].push(i);
        }
    }
    for m in &mut members {
        m.sort_by_key(|i| (rank(&files[*i]), *i));
    }
    let mut bank_order: Vec<usize> = (0..bank_keys.len()).collect();
    bank_order.sort_by_key(|b| members[*b].first().map(|i| (rank(&files[*i]), *i)));
    let mut slots: Vec<Option<QuestionToml>> = questions.into_iter().map(Some).collect();
    let mut entries = Vec::new();
    for laid in layout {
        match laid {
            Laid::Fixed(i) => {
                if let Some(q) = slots[i].take() {
                    entries.push(EntryToml::Question(Box::new(q)));
                }
            }
            Laid::Slot(b, draw, tag) => entries.push(EntryToml::Slot {
                bank: bank_keys[b].clone(),
                draw,
                tag,
            }),
        }
    }
    let banks = bank_order
        .into_iter()
        .map(|b| BankToml {
            key: bank_keys[b].clone(),
            questions: members[b]
                .iter()
                .filter_map(|i| {
                    let mut q = slots[*i].take()?;
                    q.tags = Some(std::mem::take(&mut tags[*i])).filter(|t| !t.is_empty());
                    Some(q)
                })
                .collect(),
        })
        .collect();
    (entries, banks)
}

/// TOML text of one of the import's file shapes.
pub(super) fn to_toml<T: Serialize>(v: &T) -> Result<String, QtiError> {
    toml::to_string(v).map_err(|e| refused(format!("cannot write the quiz's TOML: {e}")))
}
