//! QTI 1.2 as Canvas (Classic Quizzes and New Quizzes exports) and text2qti write it:
//! `<questestinterop>` documents (in a zip whose manifest lists `imsqti_xmlv1p2` resources,
//! or alone) read into a [`Draft`], which `content::interchange::build` validates as it does a
//! Moodle XML document. The documents come parsed and bounded by the QTI reader
//! (`import::read`): the same size, entry, ratio, attribute, node and depth limits.
//!
//! An item's kind is its `itemmetadata` `question_type`:
//! - `multiple_choice_question`, `true_false_question`: the `response_label` a scoring
//!   `respcondition` (`setvar` SCORE > 0) matches with `varequal` is right, worth
//!   SCORE / 100 of the points (so partial credit goes through the same fraction mapping as
//!   Moodle's);
//! - `multiple_answers_question`: the labels the scoring condition requires are right (those
//!   under `not` are wrong); Canvas splits the points among the right answers and takes a
//!   share back per wrong pick, which is quizd's rule, so they map exactly;
//! - `numerical_question`: one scoring condition; `varequal` is the answer, with a margin
//!   when a `vargte`/`varlte` pair surrounds it, or a range (`vargte`/`varlte` alone) becomes
//!   its midpoint ± half its width (noted);
//! - `short_answer_question` (fill in the blank): every `varequal` of the scoring condition
//!   is accepted, case-insensitively as Canvas grades it.
//!
//! Without `question_type` (another tool's 1.2), a `response_lid` is single or multiple
//! choice by its `rcardinality`, a `response_str` with a decimal `render_fib` numeric, another
//! `response_str` short text. `points_possible` is the points (default 1). Feedback:
//! `itemfeedback` `general_fb` is the explanation, `general_incorrect_fb` the feedback for a
//! wrong answer, `<label ident>_fb` the option's; `correct_fb` has no place unless it is the
//! explanation (noted). Every other type (essay, file upload, matching, multiple dropdowns,
//! fill in multiple blanks, calculated, formula, text only…) is skipped by its title and item
//! ident. HTML in `mattext` becomes plain text as Moodle XML's does.
//!
//! A Canvas question group (a `section` whose `selection_ordering/selection` has a
//! `selection_number` N ≥ 1) is a bank of its imported items, keyed by the section's title
//! (else its ident, else `group`), and a slot drawing N of them at the group's place; its
//! `selection_extension/points_per_item` is each question's points (Canvas's). A group that
//! draws from a Canvas question bank the export does not hold (`sourcebank_ref`, no items),
//! or whose items were all skipped, draws nothing (noted); one that draws more than was
//! imported draws them all (noted).

use std::collections::HashMap;

use roxmltree::{Document, Node};

use super::QtiError;
use super::import::File;
use crate::format::valid_key;
use crate::interchange::{
    Draft, DraftAnswer, DraftBank, DraftOption, DraftQuestion, DraftSlot, MAX_ANSWERS, slugify,
};
use crate::moodle_xml::{Lines, html_to_text};

fn els<'a, 'i: 'a>(n: Node<'a, 'i>, name: &'a str) -> impl Iterator<Item = Node<'a, 'i>> + 'a {
    n.children()
        .filter(move |c| c.is_element() && c.tag_name().name() == name)
}

fn el<'a, 'i: 'a>(n: Node<'a, 'i>, name: &'a str) -> Option<Node<'a, 'i>> {
    els(n, name).next()
}

fn text(n: Node) -> String {
    n.children().filter_map(|c| c.text()).collect()
}

/// The texts of the `material`s under `n` (not those of responses inside it), as plain
/// text; and whether one had an image.
fn material(n: Node, images: &mut bool) -> Option<String> {
    let mut parts = Vec::new();
    for m in n.descendants().filter(|d| d.is_element()) {
        match m.tag_name().name() {
            "mattext" | "material_text" => {}
            "matimage" => {
                *images = true;
                continue;
            }
            _ => continue,
        }
        let inside_response = m
            .ancestors()
            .take_while(|a| *a != n)
            .any(|a| a.tag_name().name().starts_with("response_"));
        if inside_response {
            continue;
        }
        let raw = text(m);
        if raw.contains("<img") {
            *images = true;
        }
        let html = m.attribute("texttype") == Some("text/html") || raw.contains(['<', '&']);
        let t = if html {
            html_to_text(&raw)
        } else {
            raw.trim().to_string()
        };
        if !t.is_empty() {
            parts.push(t);
        }
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// The `qtimetadatafield`s of an item: label → entry.
fn metadata(item: Node) -> HashMap<String, String> {
    item.descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "qtimetadatafield")
        .filter_map(|f| {
            let label = text(el(f, "fieldlabel")?);
            let entry = el(f, "fieldentry").map(text).unwrap_or_default();
            Some((label.trim().to_string(), entry.trim().to_string()))
        })
        .collect()
}

fn float(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|x| x.is_finite())
}

/// `x` to twelve decimals: a margin computed as `1.4142 − 1.4141` is `0.0001`, not
/// `0.00009999999999998899`.
fn tidy(x: f64) -> f64 {
    format!("{x:.12}").parse().unwrap_or(x)
}

/// A `respcondition` that gives points: its SCORE, the values it requires (`varequal`, not
/// under `not`) and excludes, and its numeric bounds.
struct Scoring {
    score: f64,
    equal: Vec<String>,
    not: Vec<String>,
    low: Option<f64>,
    high: Option<f64>,
}

fn scorings(item: Node) -> Vec<Scoring> {
    let Some(rp) = el(item, "resprocessing") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for c in els(rp, "respcondition") {
        let score: f64 = els(c, "setvar")
            .filter(|s| s.attribute("varname").is_none_or(|v| v == "SCORE"))
            .filter_map(|s| float(&text(s)))
            .sum();
        if score <= 0.0 {
            continue;
        }
        let Some(cv) = el(c, "conditionvar") else {
            continue;
        };
        let mut s = Scoring {
            score,
            equal: Vec::new(),
            not: Vec::new(),
            low: None,
            high: None,
        };
        for v in cv.descendants().filter(|d| d.is_element()) {
            let negated = v
                .ancestors()
                .take_while(|a| *a != cv)
                .any(|a| a.tag_name().name() == "not");
            let value = text(v).trim().to_string();
            match (v.tag_name().name(), negated) {
                ("varequal", false) => s.equal.push(value),
                ("varequal", true) => s.not.push(value),
                ("vargte" | "vargt", false) => s.low = float(&value),
                ("varlte" | "varlt", false) => s.high = float(&value),
                _ => {}
            }
        }
        out.push(s);
    }
    out
}

/// What the presentation offers: the choices (ident, text), and the kind of response.
fn labels(presentation: Node, images: &mut bool) -> Vec<(String, String)> {
    presentation
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "response_lid")
        .flat_map(|r| r.descendants())
        .filter(|n| n.is_element() && n.tag_name().name() == "response_label")
        .map(|l| {
            (
                l.attribute("ident").unwrap_or("").to_string(),
                material(l, images).unwrap_or_default(),
            )
        })
        .collect()
}

/// Canvas's type for an item of another tool's QTI 1.2, from its presentation.
fn inferred_type(presentation: Node) -> Option<&'static str> {
    let first = presentation.descendants().find(|n| {
        n.is_element()
            && matches!(
                n.tag_name().name(),
                "response_lid" | "response_str" | "response_num" | "response_xy" | "response_grp"
            )
    })?;
    match first.tag_name().name() {
        "response_lid" => Some(if first.attribute("rcardinality") == Some("Multiple") {
            "multiple_answers_question"
        } else {
            "multiple_choice_question"
        }),
        "response_num" => Some("numerical_question"),
        "response_str" => {
            let fib = first
                .descendants()
                .find(|n| n.tag_name().name() == "render_fib");
            let numeric = fib
                .and_then(|f| f.attribute("fibtype"))
                .is_some_and(|t| matches!(t, "Decimal" | "Integer"));
            Some(if numeric {
                "numerical_question"
            } else {
                "short_answer_question"
            })
        }
        _ => None,
    }
}

/// Reads the `questestinterop` documents among `docs` (others are noted, the manifest
/// ignored) into a draft.
pub(super) fn read(docs: &[(&File, Document)]) -> Result<Draft, QtiError> {
    let mut draft = Draft::default();
    let mut assessments = 0;
    for (file, doc) in docs {
        let root = doc.root_element();
        match root.tag_name().name() {
            "questestinterop" => {}
            "manifest" => continue,
            other => {
                draft.notes.push((
                    None,
                    0,
                    format!("{}: <{other}> is not QTI 1.2; not read", file.path),
                ));
                continue;
            }
        }
        assessments += 1;
        let lines = Lines::new(&file.text);
        let mut groups: Vec<(Node, Group)> = Vec::new();
        for item in root
            .descendants()
            .filter(|n| n.is_element() && n.tag_name().name() == "item")
        {
            let line = lines.at(item.range().start);
            draft
                .check_count(line)
                .map_err(|e| QtiError::Refused(format!("{}: {e}", file.path)))?;
            let section = item
                .ancestors()
                .find(|a| a.is_element() && a.tag_name().name() == "section");
            let group = section.and_then(|s| group_of(s).map(|g| (s, g)));
            let before = draft.questions.len();
            read_item(item, line, &mut draft)
                .map_err(|e| QtiError::Refused(format!("{}: {e}", file.path)))?;
            let Some((section, group)) = group else {
                continue;
            };
            let at = match groups.iter().position(|(s, _)| *s == section) {
                Some(at) => at,
                None => {
                    groups.push((section, group));
                    groups.len() - 1
                }
            };
            let g = &mut groups[at].1;
            g.before.get_or_insert(before);
            if draft.questions.len() > before {
                if let Some(points) = g.points {
                    let q = &mut draft.questions[before];
                    if q.points.is_some_and(|p| (p - points).abs() > 1e-9) {
                        draft.notes.push((
                            Some(before),
                            line,
                            format!(
                                "worth {} in the question group's {points} points per question (Canvas's points)",
                                q.points.unwrap_or(1.0)
                            ),
                        ));
                    }
                    q.points = Some(points);
                }
                g.questions.push(before);
            }
        }
        // Groups with no item of their own (drawn from a Canvas question bank that the export
        // does not hold) and ones whose every item was skipped.
        for section in root
            .descendants()
            .filter(|n| n.is_element() && n.tag_name().name() == "section")
        {
            if let Some(g) = group_of(section)
                && !groups.iter().any(|(s, _)| *s == section)
            {
                groups.push((section, g));
            }
        }
        for (section, g) in groups {
            let line = lines.at(section.range().start);
            let title = section.attribute("title").unwrap_or_default();
            let label = format!("{}: question group '{title}'", file.path);
            if section.ancestors().skip(1).any(|a| {
                a.is_element() && a.tag_name().name() == "section" && group_of(a).is_some()
            }) {
                draft.notes.push((
                    None,
                    line,
                    format!("{label} is inside another question group; it is a bank of its own"),
                ));
            }
            if g.questions.is_empty() {
                let why = if g.sourcebank {
                    "draws from a Canvas question bank that the export does not hold"
                } else {
                    "has no question quizd imports"
                };
                draft.notes.push((
                    None,
                    line,
                    format!("{label} {why}: nothing is drawn from it"),
                ));
                continue;
            }
            let mut draw = g.draw;
            if draw as usize > g.questions.len() {
                draft.notes.push((
                    None,
                    line,
                    format!(
                        "{label} draws {draw} questions in the source, but only {} of its questions were imported: it draws them all",
                        g.questions.len()
                    ),
                ));
                draw = g.questions.len() as u32;
            }
            let base = [title, section.attribute("ident").unwrap_or_default()]
                .into_iter()
                .map(|t| slugify(t, 48))
                .find(|k| valid_key(k))
                .unwrap_or_else(|| "group".into());
            let mut key = base.clone();
            let mut n = 2;
            while draft.banks.iter().any(|b| b.key == key) {
                key = format!("{base}-{n}");
                n += 1;
            }
            draft.banks.push(DraftBank {
                key,
                questions: g.questions,
            });
            draft.slots.push(DraftSlot {
                bank: draft.banks.len() - 1,
                draw,
                tag: None,
                before: g.before.unwrap_or(draft.questions.len()),
            });
        }
    }
    // Slots in document order: `build` places them by `before`.
    draft.slots.sort_by_key(|s| s.before);
    if assessments > 1 {
        draft.notes.push((
            None,
            0,
            format!("{assessments} QTI 1.2 documents: their questions are one quiz, in order"),
        ));
    }
    Ok(draft)
}

/// A Canvas question group: a section that draws `selection_number` of its items, each
/// worth `points_per_item`.
struct Group {
    draw: u32,
    points: Option<f64>,
    /// Whether it names a Canvas question bank (`sourcebank_ref`) to draw from.
    sourcebank: bool,
    /// Its imported questions, by index in the draft.
    questions: Vec<usize>,
    /// The draft's question count when its first item was read: where its slot goes.
    before: Option<usize>,
}

/// The group a section is, if it draws (`selection_ordering/selection/selection_number` ≥ 1).
fn group_of(section: Node) -> Option<Group> {
    let selection = el(el(section, "selection_ordering")?, "selection")?;
    let draw = text(el(selection, "selection_number")?)
        .trim()
        .parse::<u32>()
        .ok()?;
    let extension = el(selection, "selection_extension");
    let points = extension
        .and_then(|e| el(e, "points_per_item"))
        .and_then(|p| text(p).trim().parse::<f64>().ok())
        .filter(|p| p.is_finite() && *p > 0.0);
    let sourcebank = selection
        .descendants()
        .any(|n| n.is_element() && n.tag_name().name() == "sourcebank_ref");
    (draw >= 1).then_some(Group {
        draw,
        points,
        sourcebank,
        questions: Vec::new(),
        before: None,
    })
}

fn read_item(item: Node, line: u32, draft: &mut Draft) -> Result<(), String> {
    let ident = item.attribute("ident").unwrap_or("").to_string();
    let title = item
        .attribute("title")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let name = title.clone().or_else(|| Some(ident.clone()));
    let meta = metadata(item);
    let presentation = el(item, "presentation");
    let question_type = meta
        .get("question_type")
        .cloned()
        .or_else(|| presentation.and_then(inferred_type).map(str::to_string))
        .unwrap_or_else(|| "(no type)".into());
    let skip = |draft: &mut Draft, reason: String| {
        draft.skip(
            name.as_deref(),
            &question_type,
            line,
            format!("item {ident}: {reason}"),
        );
    };
    let kinds = [
        "multiple_choice_question",
        "true_false_question",
        "multiple_answers_question",
        "numerical_question",
        "short_answer_question",
    ];
    if !kinds.contains(&question_type.as_str()) {
        skip(draft, format!("quizd has no {question_type} questions"));
        return Ok(());
    }
    let Some(presentation) = presentation else {
        skip(draft, "the item has no presentation".into());
        return Ok(());
    };
    let mut images = false;
    let prompt = material(presentation, &mut images).unwrap_or_default();
    let points = match meta.get("points_possible") {
        Some(p) => Some(
            float(p)
                .ok_or_else(|| format!("line {line}: points_possible '{p}' is not a number"))?,
        ),
        None => None,
    };
    let mut feedback: HashMap<String, String> = HashMap::new();
    for f in els(item, "itemfeedback") {
        if let (Some(id), Some(t)) = (f.attribute("ident"), material(f, &mut images)) {
            feedback.insert(id.to_string(), t);
        }
    }
    let explanation = feedback.remove("general_fb");
    let wrong_feedback = feedback.remove("general_incorrect_fb");
    let right_feedback = feedback.remove("correct_fb");
    let scoring = scorings(item);
    let mut notes = Vec::new();
    let answer = match question_type.as_str() {
        "multiple_choice_question" | "true_false_question" | "multiple_answers_question" => {
            let choices = labels(presentation, &mut images);
            if choices.len() > MAX_ANSWERS {
                return Err(format!(
                    "line {line}: more than {MAX_ANSWERS} answers in one question"
                ));
            }
            let multiple = question_type == "multiple_answers_question";
            let right: Vec<&str> = (scoring.iter())
                .flat_map(|s| s.equal.iter().map(String::as_str))
                .collect();
            if right.len() > MAX_ANSWERS {
                return Err(format!(
                    "line {line}: more than {MAX_ANSWERS} right answers in one question"
                ));
            }
            let k = right.len().max(1) as f64;
            let options: Vec<DraftOption> = choices
                .iter()
                .map(|(id, text)| DraftOption {
                    text: text.clone(),
                    fraction: if multiple {
                        if right.contains(&id.as_str()) {
                            1.0 / k
                        } else {
                            -1.0 / k
                        }
                    } else {
                        (scoring.iter())
                            .filter(|s| s.equal.contains(id))
                            .map(|s| s.score / 100.0)
                            .fold(0.0, f64::max)
                    },
                    feedback: feedback.remove(&format!("{id}_fb")),
                })
                .collect();
            let truth = |want: &str| options.iter().find(|o| o.text.eq_ignore_ascii_case(want));
            match (question_type.as_str(), truth("true"), truth("false")) {
                ("true_false_question", Some(t), Some(f)) if options.len() == 2 => {
                    let answer = t.fraction >= 1.0 - 1e-9;
                    if answer == (f.fraction >= 1.0 - 1e-9) {
                        skip(
                            draft,
                            "exactly one of 'true' and 'false' must be worth the points".into(),
                        );
                        return Ok(());
                    }
                    let (right, wrong) = if answer { (t, f) } else { (f, t) };
                    DraftAnswer::TrueFalse {
                        answer,
                        right_feedback: right_feedback.clone().or(right.feedback.clone()),
                        wrong_feedback: wrong.feedback.clone(),
                    }
                }
                (qt, ..) => {
                    if qt == "true_false_question" {
                        notes.push(
                            "its answers are not 'True' and 'False': imported as a single choice"
                                .to_string(),
                        );
                    }
                    if let Some(r) = &right_feedback
                        && Some(r) != explanation.as_ref()
                    {
                        notes.push(format!(
                            "the feedback for a right answer ('{r}') is not kept: quizd shows \
                             the explanation then"
                        ));
                    }
                    DraftAnswer::Choice {
                        single: !multiple,
                        options,
                    }
                }
            }
        }
        "numerical_question" => {
            let [one] = scoring.as_slice() else {
                skip(
                    draft,
                    format!(
                        "{} answers give points: a quizd numeric question has one answer (with a \
                         tolerance)",
                        scoring.len()
                    ),
                );
                return Ok(());
            };
            let exact = one.equal.first().and_then(|e| float(e));
            let (answer, tolerance) = match (exact, one.low, one.high) {
                (Some(a), Some(lo), Some(hi)) => (a, tidy((a - lo).max(hi - a))),
                (Some(a), _, _) => (a, 0.0),
                (None, Some(lo), Some(hi)) if lo <= hi => {
                    notes.push(format!(
                        "the range [{lo}, {hi}] is imported as its midpoint with a tolerance of \
                         half its width"
                    ));
                    (tidy((lo + hi) / 2.0), tidy((hi - lo) / 2.0))
                }
                _ => {
                    skip(
                        draft,
                        "the answer is neither a number nor a closed range".into(),
                    );
                    return Ok(());
                }
            };
            DraftAnswer::Numeric { answer, tolerance }
        }
        _ => {
            let mut accepted: Vec<String> = Vec::new();
            for a in scoring.iter().flat_map(|s| s.equal.iter()) {
                if !a.is_empty() && !accepted.contains(a) {
                    // Bounded before the list grows: `contains` is linear.
                    if accepted.len() == MAX_ANSWERS {
                        return Err(format!(
                            "line {line}: more than {MAX_ANSWERS} answers in one question"
                        ));
                    }
                    accepted.push(a.clone());
                }
            }
            if accepted.is_empty() {
                skip(draft, "no answer is accepted".into());
                return Ok(());
            }
            DraftAnswer::ShortText {
                accepted,
                case_sensitive: false,
            }
        }
    };
    if !matches!(
        answer,
        DraftAnswer::Choice { .. } | DraftAnswer::TrueFalse { .. }
    ) && let Some(r) = &right_feedback
        && Some(r) != explanation.as_ref()
    {
        notes.push(format!(
            "the feedback for a right answer ('{r}') is not kept: quizd shows the explanation then"
        ));
    }
    let mut left: Vec<&String> = feedback.keys().collect();
    left.sort();
    for id in left {
        notes.push(format!(
            "item feedback '{id}' has no place in quizd and was left out"
        ));
    }
    if images {
        notes.push("an image is not imported (quiz texts are plain text)".into());
    }
    for n in notes {
        draft.note_next(line, n);
    }
    draft.questions.push(DraftQuestion {
        name: title,
        id: Some(ident).filter(|i| !i.is_empty()),
        line,
        points,
        prompt,
        explanation,
        answer,
        wrong_feedback,
    });
    Ok(())
}

/// Whether an XML document's root is `questestinterop` (QTI 1.2), looking past a byte order
/// mark, the XML declaration, comments and processing instructions: how an XML upload says
/// it is QTI 1.2 rather than Moodle XML.
pub fn is_document(bytes: &[u8]) -> bool {
    let mut rest = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    loop {
        rest = rest.trim_ascii_start();
        let end = if rest.starts_with(b"<?") {
            b"?>".as_slice()
        } else if rest.starts_with(b"<!--") {
            b"-->".as_slice()
        } else {
            return rest.starts_with(b"<questestinterop")
                && rest
                    .get(16)
                    .is_some_and(|c| c.is_ascii_whitespace() || matches!(c, b'>' | b'/'));
        };
        match rest.windows(end.len()).position(|w| w == end) {
            Some(i) => rest = &rest[i + end.len()..],
            None => return false,
        }
    }
}
