//! Moodle XML (`<quiz>` of `<question type=…>`), read and written. Pure: no I/O.
//!
//! Read: `multichoice` (single and multiple answer, fractions mapped as
//! [`super::interchange`] says), `truefalse`, `numerical` (one right answer with its
//! tolerance), `shortanswer` (the answers worth 100 %); `generalfeedback` becomes the
//! explanation, each answer's `feedback` the option's feedback (or, on a `*` answer worth 0,
//! the feedback for any wrong answer). Every other type (essay, matching, cloze, description,
//! calculated, drag and drop, …) is reported as skipped. Texts in `html` format become plain
//! text (tags dropped, entities decoded, line breaks kept).
//!
//! Categories: a `random` question draws one question from the category it is listed under
//! (the preceding `category`), and from its subcategories when its `questiontext` is `1`. A
//! category that random questions draw from becomes a bank (its key the last part of its path),
//! with its questions (and those of its subcategories that are no bank of their own, when a
//! random question includes them) and their `tags`; the random questions of one category
//! become one slot drawing as many, at the first one's place (a tag on a random question,
//! which quizd writes, makes it a slot drawing by that tag). Every other category's questions
//! are fixed questions.
//!
//! Reading is the untrusted part: `roxmltree` never resolves external entities, a document
//! with a DTD (the carrier of every entity bomb) is refused before anything is expanded, and
//! the nodes are bounded as well as the body's size (by the caller).
//!
//! Written: one `<question>` per question of the version, in its source locale, texts as
//! `plain_text`, the key as both `name` and `idnumber` (so an import gives the same keys). A
//! quiz with banks: the fixed questions under the category `$course$/top/<slug>`, each bank as
//! its subcategory `…/<slug>/<bank>` with its questions (and their tags), and each slot as that
//! many `random` questions in the bank's category, in layout order, so that Moodle draws as
//! quizd does. Not faithful in Moodle: a slot's `tag` (written as the random question's tag;
//! Moodle's legacy random question draws from the whole category), and two slots of one bank
//! by different tags, which Moodle draws from one pool.

use std::fmt::Write;

use super::interchange::{
    Draft, DraftAnswer, DraftBank, DraftOption, DraftQuestion, DraftSlot, MAX_ANSWERS,
};
use super::model::{Question, QuestionKind, QuizContent, Slot};

/// The most XML nodes read: a question is a few dozen; 2 000 questions fit well within.
pub const MAX_NODES: u32 = 400_000;

/// The combined feedback Moodle fills in by default, which says nothing of the question.
const DEFAULT_COMBINED: [&str; 3] = [
    "Your answer is correct.",
    "Your answer is partially correct.",
    "Your answer is incorrect.",
];

type Node<'a, 'i> = roxmltree::Node<'a, 'i>;

fn child<'a, 'i>(node: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    node.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

/// The character data of `node` (text and CDATA), nothing of nested elements.
fn chars(node: Node<'_, '_>) -> String {
    node.children().filter_map(|c| c.text()).collect()
}

/// Decodes the HTML entities Moodle's editors write; an unknown one stays as written.
fn decode_entities(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest[..rest.len().min(12)].find(';');
        let decoded = end.and_then(|e| {
            let name = &rest[1..e];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "nbsp" => Some(' '),
                // The typographic marks editors (Canvas's, Markdown's) write by name.
                "lsquo" => Some('\u{2018}'),
                "rsquo" => Some('\u{2019}'),
                "ldquo" => Some('\u{201C}'),
                "rdquo" => Some('\u{201D}'),
                "ndash" => Some('\u{2013}'),
                "mdash" => Some('\u{2014}'),
                "hellip" => Some('\u{2026}'),
                "minus" => Some('\u{2212}'),
                "times" => Some('\u{D7}'),
                "divide" => Some('\u{F7}'),
                "plusmn" => Some('\u{B1}'),
                "deg" => Some('\u{B0}'),
                "le" => Some('\u{2264}'),
                "ge" => Some('\u{2265}'),
                "ne" => Some('\u{2260}'),
                _ => name
                    .strip_prefix("#x")
                    .or_else(|| name.strip_prefix("#X"))
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, e + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// HTML as plain text: block ends and `<br>` become line breaks, other tags go, entities are
/// decoded. One pass, no nesting kept: quiz texts are plain text.
pub fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        let Some(end) = rest[i..].find('>') else {
            out.push_str(&rest[i..]);
            rest = "";
            break;
        };
        let tag = rest[i + 1..i + end].trim().to_ascii_lowercase();
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        let closing = tag.starts_with('/');
        if name == "br"
            || (closing
                && matches!(
                    name.as_str(),
                    "p" | "div" | "li" | "tr" | "h1" | "h2" | "h3" | "h4"
                ))
        {
            out.push('\n');
        }
        rest = &rest[i + end + 1..];
    }
    out.push_str(rest);
    let text = decode_entities(&out);
    // Lines trimmed, runs of blank lines as one.
    let mut lines: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() && lines.last().is_none_or(|l| l.is_empty()) {
            continue;
        }
        lines.push(line);
    }
    lines.join("\n").trim().to_string()
}

/// The text of `<name><text>…</text></name>`-shaped child `name` of `node`, as plain text.
fn text_in(node: Node<'_, '_>, name: &str, images: &mut bool) -> Option<String> {
    let holder = child(node, name)?;
    text_of(holder, images)
}

/// The `<text>` of a text-holding element, as plain text by its `format`.
fn text_of(holder: Node<'_, '_>, images: &mut bool) -> Option<String> {
    let raw = chars(child(holder, "text")?);
    let html =
        matches!(holder.attribute("format"), Some("html") | None) && raw.contains(['<', '&']);
    if raw.contains("<img") || raw.contains("@@PLUGINFILE@@") || child(holder, "file").is_some() {
        *images = true;
    }
    let text = if html {
        html_to_text(&raw)
    } else {
        raw.trim().to_string()
    };
    Some(text)
}

fn fraction(answer: Node<'_, '_>) -> Result<f64, String> {
    let raw = answer.attribute("fraction").unwrap_or("0");
    match raw.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && (-100.0..=100.0).contains(&f) => Ok(f / 100.0),
        _ => Err(format!("fraction=\"{raw}\" is not a percentage")),
    }
}

struct Answer {
    text: String,
    fraction: f64,
    feedback: Option<String>,
    node_line: u32,
    tolerance: Option<String>,
}

/// The most attributes one element may have: Moodle writes at most three. `roxmltree`
/// compares each attribute of an element with the ones before it (duplicates are an error),
/// so one element of 100 000 attributes costs minutes; this bound is checked first.
pub const MAX_ATTRIBUTES: usize = 64;

/// The line of the first element with more than [`MAX_ATTRIBUTES`] attributes, if any. Not a
/// parser: one pass that finds where tags are (skipping comments, CDATA, processing
/// instructions and declarations, and quoted values) and counts the `=` of each tag.
pub(crate) fn too_many_attributes(xml: &str) -> Option<usize> {
    let b = xml.as_bytes();
    let mut i = 0;
    while let Some(lt) = b[i..].iter().position(|&c| c == b'<') {
        let start = i + lt;
        let rest = &xml[start..];
        let skip_to = |end: &str| rest.find(end).map_or(b.len(), |e| start + e + end.len());
        if rest.starts_with("<!--") {
            i = skip_to("-->");
        } else if rest.starts_with("<![CDATA[") {
            i = skip_to("]]>");
        } else if rest.starts_with("<?") {
            i = skip_to("?>");
        } else if rest.starts_with("<!") {
            i = skip_to(">");
        } else {
            let (mut quote, mut count, mut j) = (None, 0, start + 1);
            while j < b.len() {
                match (quote, b[j]) {
                    (None, b'>') => break,
                    (None, q @ (b'"' | b'\'')) => quote = Some(q),
                    (None, b'=') => count += 1,
                    (Some(q), c) if c == q => quote = None,
                    _ => {}
                }
                j += 1;
            }
            if count > MAX_ATTRIBUTES {
                return Some(xml[..start].matches('\n').count() + 1);
            }
            i = j;
        }
        if i >= b.len() {
            break;
        }
    }
    None
}

/// Line numbers by byte offset, computed once (`roxmltree`'s `text_pos_at` counts from the
/// start at every call: a line for each of 2 000 questions would read the document 2 000 times).
pub(crate) struct Lines(Vec<usize>);

impl Lines {
    pub(crate) fn new(text: &str) -> Self {
        Lines(text.match_indices('\n').map(|(i, _)| i).collect())
    }

    pub(crate) fn at(&self, offset: usize) -> u32 {
        u32::try_from(self.0.partition_point(|&nl| nl < offset) + 1).unwrap_or(u32::MAX)
    }
}

/// Reads a Moodle XML document into a draft, or why it cannot be read.
pub fn read(xml: &str) -> Result<Draft, String> {
    if let Some(line) = too_many_attributes(xml) {
        return Err(format!(
            "line {line}: an element with more than {MAX_ATTRIBUTES} attributes"
        ));
    }
    let options = roxmltree::ParsingOptions {
        allow_dtd: false,
        nodes_limit: MAX_NODES,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(xml, options)
        .map_err(|e| format!("not well-formed XML: {e}"))?;
    let root = doc.root_element();
    if root.tag_name().name() != "quiz" {
        return Err(format!(
            "the root element must be Moodle's <quiz>, not <{}>",
            root.tag_name().name()
        ));
    }
    let lines = Lines::new(xml);
    let line_of = |n: Node<'_, '_>| lines.at(n.range().start);
    let mut draft = Draft::default();
    // The category each kept question is listed under, and what random questions draw.
    let mut category: Option<String> = None;
    let mut categories: Vec<Option<String>> = Vec::new();
    let mut question_tags: Vec<Vec<String>> = Vec::new();
    let mut draws: Vec<RandomDraw> = Vec::new();
    let mut randoms = 0usize;
    for q in root.children().filter(|n| n.is_element()) {
        let line = line_of(q);
        if q.tag_name().name() != "question" {
            return Err(format!(
                "line {line}: <{}> where Moodle XML has <question>",
                q.tag_name().name()
            ));
        }
        draft.check_count(line)?;
        let mut images = false;
        let kind = q.attribute("type").unwrap_or("");
        if kind == "category" {
            category = text_in(q, "category", &mut images).filter(|p| !p.is_empty());
            continue;
        }
        if kind == "random" {
            let Some(path) = category.clone() else {
                return Err(format!(
                    "line {line}: a random question before any category: it draws from none"
                ));
            };
            randoms += 1;
            if randoms > super::interchange::MAX_QUESTIONS {
                return Err(format!(
                    "line {line}: more than {} random questions in one document",
                    super::interchange::MAX_QUESTIONS
                ));
            }
            let subcategories =
                text_in(q, "questiontext", &mut images).is_some_and(|t| t.trim() == "1");
            let mut tags = tags_of(q);
            if tags.len() > 1 {
                draft.notes.push((
                    None,
                    line,
                    format!(
                        "a random question with several tags ({}): it draws by the first only",
                        tags.join(", ")
                    ),
                ));
            }
            tags.truncate(1);
            draws.push(RandomDraw {
                category: path,
                subcategories,
                tag: tags.pop(),
                before: draft.questions.len(),
            });
            continue;
        }
        let name = text_in(q, "name", &mut images).filter(|n| !n.is_empty());
        if !matches!(
            kind,
            "multichoice" | "truefalse" | "numerical" | "shortanswer"
        ) {
            let kind = if kind.is_empty() { "(no type)" } else { kind };
            draft.skip(
                name.as_deref(),
                kind,
                line,
                format!("quizd has no {kind} questions"),
            );
            continue;
        }
        let prompt = text_in(q, "questiontext", &mut images).unwrap_or_default();
        let explanation = text_in(q, "generalfeedback", &mut images).filter(|e| !e.is_empty());
        let points = match child(q, "defaultgrade").map(chars) {
            Some(g) => match g.trim().parse::<f64>() {
                Ok(p) if p.is_finite() => Some(p),
                _ => {
                    return Err(format!(
                        "line {line}: defaultgrade '{}' is not a number",
                        g.trim()
                    ));
                }
            },
            None => None,
        };
        let id = child(q, "idnumber")
            .map(chars)
            .map(|s| s.trim().to_string());
        let mut answers = Vec::new();
        for a in q
            .children()
            .filter(|c| c.is_element() && c.tag_name().name() == "answer")
        {
            let node_line = line_of(a);
            if answers.len() == MAX_ANSWERS {
                return Err(format!(
                    "line {node_line}: more than {MAX_ANSWERS} answers in one question"
                ));
            }
            let mut text = chars(child(a, "text").unwrap_or(a)).trim().to_string();
            if matches!(a.attribute("format"), Some("html")) && text.contains(['<', '&']) {
                text = html_to_text(&text);
            }
            if text.contains("<img") {
                images = true;
            }
            answers.push(Answer {
                text,
                fraction: fraction(a).map_err(|e| format!("line {node_line}: {e}"))?,
                feedback: child(a, "feedback")
                    .and_then(|f| text_of(f, &mut images))
                    .filter(|f| !f.is_empty()),
                node_line,
                tolerance: child(a, "tolerance").map(chars),
            });
        }
        let mut notes = Vec::new();
        let mut wrong_feedback = None;
        let answer = match kind {
            "multichoice" => {
                let single = child(q, "single")
                    .map(chars)
                    .is_none_or(|s| matches!(s.trim(), "true" | "1"));
                for which in [
                    "correctfeedback",
                    "partiallycorrectfeedback",
                    "incorrectfeedback",
                ] {
                    if let Some(t) = text_in(q, which, &mut images)
                        && !t.is_empty()
                        && !DEFAULT_COMBINED.contains(&t.as_str())
                    {
                        notes.push(format!("the {which} ('{t}') is not imported: quizd gives feedback per option and an explanation"));
                    }
                }
                DraftAnswer::Choice {
                    single,
                    options: answers
                        .into_iter()
                        .map(|a| DraftOption {
                            text: a.text,
                            fraction: a.fraction,
                            feedback: a.feedback,
                        })
                        .collect(),
                }
            }
            "truefalse" => {
                let find = |t: &str| answers.iter().find(|a| a.text.eq_ignore_ascii_case(t));
                let (Some(t), Some(f)) = (find("true"), find("false")) else {
                    draft.skip(
                        name.as_deref(),
                        kind,
                        line,
                        "a truefalse question needs a 'true' and a 'false' answer",
                    );
                    continue;
                };
                let answer = t.fraction >= 1.0 - 1e-9;
                if answer == (f.fraction >= 1.0 - 1e-9) {
                    draft.skip(
                        name.as_deref(),
                        kind,
                        line,
                        "exactly one of 'true' and 'false' must be worth 100 %",
                    );
                    continue;
                }
                let (right, wrong) = if answer { (t, f) } else { (f, t) };
                DraftAnswer::TrueFalse {
                    answer,
                    right_feedback: right.feedback.clone(),
                    wrong_feedback: wrong.feedback.clone(),
                }
            }
            _ => {
                // numerical, shortanswer: the answers worth 100 % are right; a `*` worth 0
                // carries the feedback for any wrong answer; partial credit cannot be kept.
                let mut right = Vec::new();
                let mut partial = None;
                for a in &answers {
                    if a.fraction >= 1.0 - 1e-9 {
                        right.push(a);
                        if let Some(f) = &a.feedback {
                            notes.push(format!("the feedback of right answer '{}' ('{f}') is not kept: quizd shows the explanation", a.text));
                        }
                    } else if a.fraction > 0.0 {
                        partial = Some(a);
                    } else if a.text == "*" {
                        wrong_feedback = a.feedback.clone();
                    } else {
                        notes.push(format!(
                            "answer '{}' (line {}, worth {} %) is not kept: quizd marks every answer it does not accept wrong",
                            a.text,
                            a.node_line,
                            a.fraction * 100.0
                        ));
                    }
                }
                if let Some(p) = partial {
                    draft.skip(
                        name.as_deref(),
                        kind,
                        line,
                        format!("answer '{}' is worth {} %: quizd has no partial credit for {kind} questions", p.text, p.fraction * 100.0),
                    );
                    continue;
                }
                if kind == "numerical" {
                    let [one] = right.as_slice() else {
                        draft.skip(name.as_deref(), kind, line, format!("{} answers are worth 100 %: a quizd numeric question has one answer (with a tolerance)", right.len()));
                        continue;
                    };
                    let Ok(answer) = one.text.parse::<f64>() else {
                        draft.skip(
                            name.as_deref(),
                            kind,
                            line,
                            format!("the answer '{}' is not a number", one.text),
                        );
                        continue;
                    };
                    let tolerance = match one.tolerance.as_deref().map(str::trim) {
                        None | Some("") => 0.0,
                        Some(t) => match t.parse::<f64>() {
                            Ok(t) => t,
                            Err(_) => {
                                draft.skip(
                                    name.as_deref(),
                                    kind,
                                    line,
                                    format!("the tolerance '{t}' is not a number"),
                                );
                                continue;
                            }
                        },
                    };
                    if child(q, "units").is_some_and(|u| u.children().any(|c| c.is_element())) {
                        notes
                            .push("its units are not imported: quizd takes the bare number".into());
                    }
                    DraftAnswer::Numeric { answer, tolerance }
                } else {
                    if let Some(w) = right.iter().find(|a| a.text.contains('*')) {
                        draft.skip(
                            name.as_deref(),
                            kind,
                            line,
                            format!(
                                "the answer '{}' has a wildcard (*), which quizd does not match",
                                w.text
                            ),
                        );
                        continue;
                    }
                    let case_sensitive = child(q, "usecase")
                        .map(chars)
                        .is_some_and(|u| u.trim() == "1");
                    DraftAnswer::ShortText {
                        accepted: right.iter().map(|a| a.text.clone()).collect(),
                        case_sensitive,
                    }
                }
            }
        };
        if images {
            notes.push(
                "an image or attached file is not imported (quiz texts are plain text)".into(),
            );
        }
        for n in notes {
            draft.note_next(line, n);
        }
        categories.push(category.clone());
        question_tags.push(tags_of(q));
        draft.questions.push(DraftQuestion {
            name,
            id,
            line,
            points,
            prompt,
            explanation,
            answer,
            wrong_feedback,
        });
    }
    banks_from(&mut draft, &categories, question_tags, draws);
    Ok(draft)
}

/// One `random` question: it draws one question from `category` (and its subcategories).
struct RandomDraw {
    category: String,
    subcategories: bool,
    tag: Option<String>,
    before: usize,
}

/// A question's `<tags><tag><text>…`, as Moodle writes them.
fn tags_of(q: Node<'_, '_>) -> Vec<String> {
    child(q, "tags")
        .map(|t| {
            t.children()
                .filter(|c| c.is_element() && c.tag_name().name() == "tag")
                .filter_map(|c| child(c, "text").map(chars))
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Makes a bank of each category random questions draw from (with its subcategories' questions
/// when a random question says so and they are no bank of their own), and a slot of the random
/// questions of one category and tag, at the first one's place. Every other question stays
/// fixed (its tags are not kept: only bank questions have tags).
fn banks_from(
    draft: &mut Draft,
    categories: &[Option<String>],
    tags: Vec<Vec<String>>,
    draws: Vec<RandomDraw>,
) {
    let mut paths: Vec<&str> = Vec::new();
    for d in &draws {
        if !paths.contains(&d.category.as_str()) {
            paths.push(&d.category);
        }
    }
    let mut taken: Vec<String> = Vec::new();
    for path in &paths {
        let with_subcategories = draws.iter().any(|d| d.category == *path && d.subcategories);
        let inside = |c: &str| {
            c == *path
                || (with_subcategories
                    && c.strip_prefix(*path).is_some_and(|r| r.starts_with('/'))
                    && !paths.contains(&c))
        };
        let questions: Vec<usize> = (categories.iter().enumerate())
            .filter(|(_, c)| c.as_deref().is_some_and(inside))
            .map(|(i, _)| i)
            .collect();
        let last = path.rsplit('/').next().unwrap_or(path);
        let mut key = Some(super::interchange::slugify(last, 48))
            .filter(|k| !k.is_empty())
            .unwrap_or_else(|| format!("bank-{}", draft.banks.len() + 1));
        let base = key.clone();
        let mut n = 2;
        while taken.contains(&key) {
            key = format!("{base}-{n}");
            n += 1;
        }
        taken.push(key.clone());
        draft.banks.push(DraftBank { key, questions });
    }
    for d in &draws {
        let bank = paths.iter().position(|p| *p == d.category).unwrap_or(0);
        match (draft.slots.iter_mut()).find(|s| s.bank == bank && s.tag == d.tag) {
            Some(slot) => slot.draw += 1,
            None => draft.slots.push(DraftSlot {
                bank,
                draw: 1,
                tag: d.tag.clone(),
                before: d.before,
            }),
        }
    }
    let mut fixed_tagged = 0;
    for (i, t) in tags.into_iter().enumerate() {
        if t.is_empty() {
            continue;
        }
        if draft.banks.iter().any(|b| b.questions.contains(&i)) {
            draft.tags.push((i, t));
        } else {
            fixed_tagged += 1;
        }
    }
    if fixed_tagged > 0 {
        draft.notes.push((
            None,
            0,
            format!(
                "the tags of {fixed_tagged} question(s) no random question draws from are not \
                 kept: in quizd only bank questions have tags"
            ),
        ));
    }
}

/// `s` as XML character data (quick-xml's escaping of the five markup characters).
pub fn escape(s: &str) -> String {
    quick_xml::escape::escape(s).into_owned()
}

fn text_element(out: &mut String, indent: &str, name: &str, text: &str) {
    let _ = writeln!(
        out,
        "{indent}<{name} format=\"plain_text\">\n{indent}  <text>{}</text>\n{indent}</{name}>",
        escape(text)
    );
}

/// A fraction as Moodle writes it (percent, at most 7 decimals).
fn moodle_fraction(f: f64) -> String {
    let p = format!("{:.7}", f * 100.0);
    let p = p.trim_end_matches('0').trim_end_matches('.');
    if p == "-0" { "0".into() } else { p.to_string() }
}

fn answer(
    out: &mut String,
    fraction: f64,
    text: &str,
    feedback: Option<&str>,
    tolerance: Option<f64>,
) {
    let _ = writeln!(
        out,
        "    <answer fraction=\"{}\" format=\"plain_text\">\n      <text>{}</text>",
        moodle_fraction(fraction),
        escape(text)
    );
    if let Some(t) = tolerance {
        let _ = writeln!(out, "      <tolerance>{t}</tolerance>");
    }
    text_element(out, "      ", "feedback", feedback.unwrap_or(""));
    out.push_str("    </answer>\n");
}

/// Version `version` of `content` as Moodle XML, in its source locale.
pub fn write(content: &QuizContent, version: i32) -> String {
    let sl = content.source_locale.as_str();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<!-- quizd: quiz '{}', version {version}, locale {sl}. Translations are not in Moodle XML \
         (one text per question): use quizd's XLIFF or PO export for them. -->",
        escape(&content.slug).replace("--", "- -")
    );
    if let Some(note) = content.images_not_exported() {
        let _ = writeln!(out, "<!-- quizd: {} -->", note.replace("--", "- -"));
    }
    out.push_str("<quiz>\n");
    // A quiz with banks: its fixed questions in one category, each bank in a subcategory
    // with its questions, and a slot as that many `random` questions drawing from it.
    let fixed = format!("$course$/top/{}", content.slug);
    let mut category: Option<String> = None;
    let mut in_category = |out: &mut String, path: &str| {
        if category.as_deref() != Some(path) {
            let _ = writeln!(
                out,
                "  <question type=\"category\">\n    <category>\n      <text>{}</text>\n    </category>\n  </question>",
                escape(path)
            );
            category = Some(path.to_string());
        }
    };
    let by_key = |k: &str| content.questions.iter().find(|q| q.key == k);
    let layout: Vec<Slot> = if content.layout.is_empty() {
        (content.questions.iter())
            .map(|q| Slot::Fixed {
                question: q.key.clone(),
            })
            .collect()
    } else {
        content.layout.clone()
    };
    let mut written: Vec<&str> = Vec::new();
    for slot in &layout {
        match slot {
            Slot::Fixed { question } => {
                if !content.banks.is_empty() {
                    in_category(&mut out, &fixed);
                }
                if let Some(q) = by_key(question) {
                    write_question(&mut out, q, sl);
                }
            }
            Slot::Draw { bank, draw, tag } => {
                in_category(&mut out, &format!("{fixed}/{bank}"));
                if !written.contains(&bank.as_str()) {
                    written.push(bank);
                    let keys = content.banks.iter().find(|b| b.key == *bank);
                    for q in keys
                        .iter()
                        .flat_map(|b| &b.questions)
                        .filter_map(|k| by_key(k))
                    {
                        write_question(&mut out, q, sl);
                    }
                }
                for _ in 0..*draw {
                    random(&mut out, bank, tag.as_deref());
                }
            }
        }
    }
    out.push_str("</quiz>\n");
    out
}

/// A Moodle `random` question: one question drawn from the category it is listed in (not its
/// subcategories: `questiontext` 0). A slot's tag rides on it as a tag, which quizd reads back;
/// Moodle's legacy random question has no tag filter and draws from the whole category.
fn random(out: &mut String, bank: &str, tag: Option<&str>) {
    let _ = writeln!(
        out,
        "  <question type=\"random\">\n    <name>\n      <text>Random ({})</text>\n    </name>\n    <questiontext format=\"html\">\n      <text>0</text>\n    </questiontext>\n    <generalfeedback format=\"html\">\n      <text></text>\n    </generalfeedback>\n    <defaultgrade>1</defaultgrade>\n    <penalty>0</penalty>\n    <hidden>0</hidden>",
        escape(bank)
    );
    if let Some(t) = tag {
        tags_element(out, &[t.to_string()]);
    }
    out.push_str("  </question>\n");
}

fn tags_element(out: &mut String, tags: &[String]) {
    out.push_str("    <tags>\n");
    for t in tags {
        let _ = writeln!(
            out,
            "      <tag>\n        <text>{}</text>\n      </tag>",
            escape(t)
        );
    }
    out.push_str("    </tags>\n");
}

/// One question in locale `sl`, with its tags (only bank questions have any).
fn write_question(out: &mut String, q: &Question, sl: &str) {
    let get = |t: &crate::i18n::Text| t.get(sl).cloned().unwrap_or_default();
    let kind = match q.kind {
        QuestionKind::Single | QuestionKind::Multiple => "multichoice",
        QuestionKind::TrueFalse => "truefalse",
        QuestionKind::Numeric => "numerical",
        QuestionKind::ShortText => "shortanswer",
    };
    let _ = writeln!(out, "  <question type=\"{kind}\">");
    let _ = writeln!(
        out,
        "    <name>\n      <text>{}</text>\n    </name>",
        escape(&q.key)
    );
    text_element(out, "    ", "questiontext", &get(&q.prompt));
    text_element(out, "    ", "generalfeedback", &get(&q.explanation));
    let _ = writeln!(out, "    <defaultgrade>{}</defaultgrade>", q.points);
    out.push_str("    <penalty>0</penalty>\n    <hidden>0</hidden>\n");
    let _ = writeln!(out, "    <idnumber>{}</idnumber>", escape(&q.key));
    let wrong = q.wrong_feedback.as_ref().map(get);
    match q.kind {
        QuestionKind::Single | QuestionKind::Multiple => {
            let single = q.kind == QuestionKind::Single;
            let _ = writeln!(out, "    <single>{single}</single>");
            out.push_str("    <shuffleanswers>false</shuffleanswers>\n    <answernumbering>abc</answernumbering>\n");
            let k = q.options.iter().filter(|o| o.correct).count().max(1) as f64;
            for o in &q.options {
                let f = match (o.correct, single) {
                    (true, true) => 1.0,
                    (false, true) => 0.0,
                    (true, false) => 1.0 / k,
                    (false, false) => -1.0 / k,
                };
                answer(
                    out,
                    f,
                    &get(&o.text),
                    o.feedback.as_ref().map(get).as_deref(),
                    None,
                );
            }
        }
        QuestionKind::TrueFalse => {
            let right = q.true_false_answer();
            for value in [true, false] {
                let f = if value == right { 1.0 } else { 0.0 };
                let fb = if value == right {
                    None
                } else {
                    wrong.as_deref()
                };
                answer(out, f, if value { "true" } else { "false" }, fb, None);
            }
        }
        QuestionKind::Numeric => {
            if let Some(n) = &q.numeric {
                answer(out, 1.0, &n.answer.to_string(), None, Some(n.tolerance));
            }
            if let Some(w) = &wrong {
                answer(out, 0.0, "*", Some(w), Some(0.0));
            }
        }
        QuestionKind::ShortText => {
            if let Some(st) = &q.short_text {
                let _ = writeln!(
                    out,
                    "    <usecase>{}</usecase>",
                    u8::from(st.case_sensitive)
                );
                for a in &st.accepted {
                    answer(out, 1.0, a, None, None);
                }
            }
            if let Some(w) = &wrong {
                answer(out, 0.0, "*", Some(w), None);
            }
        }
    }
    if !q.tags.is_empty() {
        tags_element(out, &q.tags);
    }
    out.push_str("  </question>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_plain_text_with_its_line_breaks_and_entities() {
        assert_eq!(
            html_to_text("<p>Two &amp; <b>two</b></p><p>make&nbsp;&#52;?<br/>Sure</p>"),
            "Two & two\nmake 4?\nSure"
        );
        assert_eq!(html_to_text("a &bogus; < b"), "a &bogus; < b");
    }

    #[test]
    fn a_document_with_a_doctype_is_refused_before_any_entity_is_expanded() {
        let bomb = "<?xml version=\"1.0\"?><!DOCTYPE quiz [<!ENTITY a \"aaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;\">]><quiz>&b;</quiz>";
        let e = read(bomb).unwrap_err();
        assert!(e.contains("DTD"), "{e}");
    }

    #[test]
    fn an_element_with_too_many_attributes_is_refused_before_parsing_and_quoted_marks_do_not_count()
    {
        let attrs: String = (0..=MAX_ATTRIBUTES)
            .map(|i| format!(" a{i}=\"\""))
            .collect();
        let e = read(&format!("<quiz>\n<question{attrs}/></quiz>")).unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        let quoted = format!(
            "<quiz a=\"{}\"><!-- {} --><![CDATA[{}]]></quiz>",
            "=".repeat(100),
            "x=1 ".repeat(100),
            "<a b=1>".repeat(100)
        );
        assert_eq!(too_many_attributes(&quoted), None);
    }

    #[test]
    fn an_essay_is_skipped_by_name_and_line_and_a_category_alone_makes_no_bank() {
        let xml = "<quiz>\n<question type=\"category\"><category><text>$course$/top/A</text></category></question>\n<question type=\"essay\"><name><text>Tell me</text></name></question>\n</quiz>";
        let d = read(xml).unwrap();
        assert!(d.questions.is_empty() && d.banks.is_empty());
        assert_eq!(d.skipped.len(), 1);
        assert_eq!(d.skipped[0].kind, "essay");
        assert_eq!(d.skipped[0].name.as_deref(), Some("Tell me"));
        assert_eq!(d.skipped[0].line, 3);
    }

    fn tf(name: &str, tag: Option<&str>) -> String {
        let tags = tag.map_or(String::new(), |t| {
            format!("<tags><tag><text>{t}</text></tag></tags>")
        });
        format!(
            "<question type=\"truefalse\"><name><text>{name}</text></name><questiontext><text>{name}?</text></questiontext>\
             <generalfeedback><text>Because.</text></generalfeedback><answer fraction=\"100\"><text>true</text></answer>\
             <answer fraction=\"0\"><text>false</text></answer>{tags}</question>\n"
        )
    }

    fn category(path: &str) -> String {
        format!("<question type=\"category\"><category><text>{path}</text></category></question>\n")
    }

    fn random(subcategories: bool) -> String {
        format!(
            "<question type=\"random\"><name><text>Random</text></name><questiontext><text>{}</text></questiontext></question>\n",
            u8::from(subcategories)
        )
    }

    fn build(xml: &str) -> QuizContent {
        let settings = crate::interchange::Settings {
            slug: "banks".into(),
            title: "Banks".into(),
            source_locale: "en".into(),
            visibility: crate::Visibility::Private,
            intro: None,
            practice: None,
            explanation_default: None,
        };
        let draft = read(xml).unwrap();
        crate::interchange::build(
            super::super::interchange::Format::MoodleXml,
            draft,
            &settings,
        )
        .unwrap()
        .0
    }

    /// Two random questions listed in category `pool` make it a bank drawn twice; the one in
    /// `wide`, including subcategories, takes in `wide/sub`'s questions; `plain` has no random
    /// question: its questions are fixed, in place.
    #[test]
    fn random_questions_make_their_category_a_bank_and_a_slot_drawing_as_many() {
        let xml = [
            "<quiz>\n".to_string(),
            category("$course$/top/plain"),
            tf("first", Some("ignored")),
            category("$course$/top/pool"),
            tf("p1", Some("easy")),
            tf("p2", None),
            tf("p3", None),
            random(false),
            random(false),
            category("$course$/top/plain"),
            tf("middle", None),
            category("$course$/top/wide"),
            tf("w1", None),
            random(true),
            category("$course$/top/wide/sub"),
            tf("w2", None),
            "</quiz>\n".to_string(),
        ]
        .concat();
        let c = build(&xml);
        let banks: Vec<(&str, Vec<&str>)> = (c.banks.iter())
            .map(|b| {
                (
                    b.key.as_str(),
                    b.questions.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            banks,
            [("pool", vec!["p1", "p2", "p3"]), ("wide", vec!["w1", "w2"])]
        );
        let draw = |bank: &str, draw| Slot::Draw {
            bank: bank.into(),
            draw,
            tag: None,
        };
        let fixed = |k: &str| Slot::Fixed { question: k.into() };
        assert_eq!(
            c.layout,
            [
                fixed("first"),
                draw("pool", 2),
                fixed("middle"),
                draw("wide", 1)
            ]
        );
        assert_eq!(
            c.questions.iter().find(|q| q.key == "p1").unwrap().tags,
            ["easy"]
        );
        assert!(
            c.questions
                .iter()
                .find(|q| q.key == "first")
                .unwrap()
                .tags
                .is_empty()
        );
    }

    /// The collectives seed (fixed questions, two banks, a slot drawing by tag) exported as
    /// Moodle XML reads back as the same banks, slots and counts, tags included.
    #[test]
    fn a_quiz_with_banks_exported_and_imported_again_has_the_same_banks_and_slots() {
        let dir = crate::repo_root().join("content/collectives");
        let seed = crate::load_dir(&dir).unwrap().remove(0);
        assert!(!seed.banks.is_empty());
        let xml = write(&seed, 1);
        let back = build(&xml);
        assert_eq!(back.banks, seed.banks);
        assert_eq!(back.layout, seed.layout);
        let keys = |c: &QuizContent| -> Vec<(String, Vec<String>)> {
            c.questions
                .iter()
                .map(|q| (q.key.clone(), q.tags.clone()))
                .collect()
        };
        assert_eq!(keys(&back), keys(&seed));
    }
}
