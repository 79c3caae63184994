//! XLIFF 2.1 (OASIS, core module only) for translators' CAT tools: one file per quiz version
//! and target locale, one `<unit>` per translatable text, named by its text id
//! ([`QuizContent::texts`]). Pure: no I/O.
//!
//! Reading is the untrusted part. `roxmltree` never resolves external entities, and a document
//! with a DTD (the carrier of every entity bomb and external entity) is refused before anything
//! is expanded; the number of nodes is bounded as well as the body's size (by the caller), and
//! the attributes of one element (`moodle_xml::MAX_ATTRIBUTES`, checked before parsing).

use std::fmt::Write;

use super::QuizContent;
use super::exchange::{Checker, Imported};

/// XLIFF 2.x's core namespace (2.1 keeps 2.0's).
pub const XLIFF_NS: &str = "urn:oasis:names:tc:xliff:document:2.0";
pub const CONTENT_TYPE: &str = "application/xliff+xml";
/// The most XML nodes read from one document: a quiz of a few hundred texts has a few
/// thousand; anything far beyond is not a quiz.
pub const MAX_NODES: u32 = 100_000;

/// A unit's translation state (XLIFF 2.1 §4.3.1.28).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitState {
    Initial,
    Translated,
    Reviewed,
    Final,
}

impl UnitState {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "initial" => Self::Initial,
            "translated" => Self::Translated,
            "reviewed" => Self::Reviewed,
            "final" => Self::Final,
            _ => return None,
        })
    }
}

fn escape(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // A parser would turn a raw CR into LF.
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
}

/// The XLIFF document of `content` (as stored: stale translations included) for `locale`.
/// A current translation is a target in state `translated`; a stale one is the old target in
/// state `initial` with `subState="quizd:stale"` and a note, for review; a missing one has no
/// target.
pub fn export(content: &QuizContent, version: i32, locale: &str) -> String {
    let mut x = String::new();
    let attr = |s: &str| {
        let mut o = String::new();
        escape(&mut o, s);
        o
    };
    let _ = write!(
        x,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<xliff xmlns=\"{XLIFF_NS}\" version=\"2.1\" \
         srcLang=\"{}\" trgLang=\"{}\">\n  <file id=\"f1\" original=\"quizzes/{}/versions/{version}\">\n",
        attr(&content.source_locale),
        attr(locale),
        attr(&content.slug),
    );
    for u in super::exchange::units(content, locale) {
        let _ = write!(
            x,
            "    <unit id=\"{}\" xml:space=\"preserve\">\n      <notes>\n",
            u.id
        );
        let _ = writeln!(
            x,
            "        <note category=\"description\">{}</note>",
            attr(&u.note)
        );
        if u.stale {
            x.push_str(
                "        <note category=\"quizd:stale\">The source text changed after this was \
                 translated: review the target against the new source.</note>\n",
            );
        }
        x.push_str("      </notes>\n");
        match (u.target, u.stale) {
            (Some(_), false) => x.push_str("      <segment state=\"translated\">\n"),
            (Some(_), true) => {
                x.push_str("      <segment state=\"initial\" subState=\"quizd:stale\">\n")
            }
            (None, _) => x.push_str("      <segment state=\"initial\">\n"),
        }
        let _ = writeln!(x, "        <source>{}</source>", attr(u.source));
        if let Some(target) = u.target {
            let _ = writeln!(x, "        <target>{}</target>", attr(target));
        }
        x.push_str("      </segment>\n    </unit>\n");
    }
    x.push_str("  </file>\n</xliff>\n");
    x
}

/// What an import found wrong, naming the unit where there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum XliffError {
    /// Not well-formed XML, a DTD, too many nodes, or not an XLIFF 2 document.
    Malformed(String),
    /// Problems with units: `(unit id, what is wrong)`, every one found.
    Units(Vec<(String, String)>),
}

fn text_of(node: roxmltree::Node<'_, '_>) -> Result<String, String> {
    let mut out = String::new();
    for child in node.children() {
        if child.is_element() {
            return Err(format!(
                "inline markup (<{}>) is not supported: quiz texts are plain text",
                child.tag_name().name()
            ));
        }
        if let Some(t) = child.text() {
            out.push_str(t);
        }
    }
    Ok(out)
}

/// Reads an XLIFF 2.0/2.1 document for `locale` against `content` (the stored current
/// version): the units in state `translated`, `reviewed` or `final` are taken, those in state
/// `initial` left as they are; every unit's source must be the current source of its text.
/// All or nothing: any problem refuses the whole document.
pub fn import(content: &QuizContent, locale: &str, xml: &str) -> Result<Imported, XliffError> {
    // roxmltree compares each attribute of an element with the ones before it: bounded first
    // (100 000 attributes on one element took minutes).
    if let Some(line) = super::moodle_xml::too_many_attributes(xml) {
        return Err(XliffError::Malformed(format!(
            "line {line}: an element with more than {} attributes",
            super::moodle_xml::MAX_ATTRIBUTES
        )));
    }
    let options = roxmltree::ParsingOptions {
        allow_dtd: false,
        nodes_limit: MAX_NODES,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(xml, options)
        .map_err(|e| XliffError::Malformed(format!("not well-formed XLIFF: {e}")))?;
    let root = doc.root_element();
    if root.tag_name().namespace() != Some(XLIFF_NS) || root.tag_name().name() != "xliff" {
        return Err(XliffError::Malformed(format!(
            "the root element must be <xliff> in the namespace {XLIFF_NS}"
        )));
    }
    if !matches!(root.attribute("version"), Some("2.0" | "2.1")) {
        return Err(XliffError::Malformed(
            "only XLIFF 2.0 and 2.1 are read".into(),
        ));
    }
    if root.attribute("srcLang") != Some(content.source_locale.as_str()) {
        return Err(XliffError::Malformed(format!(
            "srcLang must be the quiz's source locale '{}'",
            content.source_locale
        )));
    }
    if root.attribute("trgLang") != Some(locale) {
        return Err(XliffError::Malformed(format!(
            "trgLang must be '{locale}', the locale in the path"
        )));
    }
    let mut checker = Checker::new(content);
    let mut problems: Vec<(String, String)> = Vec::new();
    let units = root
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "unit");
    for unit in units {
        let id = unit.attribute("id").unwrap_or("");
        if let Err(what) = read_unit(&mut checker, id, unit) {
            problems.push((id.to_string(), what));
        }
    }
    if problems.is_empty() {
        Ok(checker.finish())
    } else {
        Err(XliffError::Units(problems))
    }
}

/// One `<unit>`, checked and (when its state says it is translated) taken.
fn read_unit(
    checker: &mut Checker<'_>,
    id: &str,
    unit: roxmltree::Node<'_, '_>,
) -> Result<(), String> {
    checker.known(id)?;
    let segments: Vec<_> = unit
        .children()
        .filter(|n| n.is_element() && n.tag_name().name() == "segment")
        .collect();
    let [segment] = segments.as_slice() else {
        return Err(format!("expected one <segment>, found {}", segments.len()));
    };
    let state = match segment.attribute("state").map(UnitState::parse) {
        None => UnitState::Initial,
        Some(Some(s)) => s,
        Some(None) => return Err("state must be initial, translated, reviewed or final".into()),
    };
    let child = |name: &str| {
        segment
            .children()
            .find(|n| n.is_element() && n.tag_name().name() == name)
    };
    let source = match child("source").map(text_of) {
        Some(s) => s.map_err(|e| format!("source: {e}"))?,
        None => return Err("the segment has no <source>".into()),
    };
    let target = child("target")
        .map(text_of)
        .transpose()
        .map_err(|e| format!("target: {e}"))?;
    checker.unit(id, &source, target, state != UnitState::Initial)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::compile_texts;

    #[test]
    fn an_element_with_too_many_attributes_is_refused_before_roxmltree_reads_it() {
        let content = compile_texts(
            "slug = \"t\"\ntitle = \"T\"\n[[questions]]\nkey = \"q\"\nkind = \"true_false\"\n\
             prompt = \"P\"\nexplanation = \"E\"\nanswer = true\n",
            &[],
        );
        let attrs: String = (0..100_000).map(|i| format!(" a{i}=\"\"")).collect();
        let xml = format!("<xliff{attrs}/>");
        let start = std::time::Instant::now();
        let Err(XliffError::Malformed(why)) = import(&content, "bn", &xml) else {
            panic!("accepted")
        };
        assert!(why.contains("attributes"), "{why}");
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }

    fn quiz() -> QuizContent {
        let quiz = "slug = \"t\"\ntitle = \"T & <co>\"\n[[questions]]\nkey = \"q1\"\nkind = \"single\"\n\
             prompt = \"Pick one\"\nexplanation = \"E\"\n[[questions.options]]\nkey = \"a\"\n\
             text = \"A\"\ncorrect = true\n[[questions.options]]\nkey = \"b\"\ntext = \"B\"\n";
        let bn = "title = \"টি\"\n[questions.q1]\nprompt = \"একটি বাছুন\"\n";
        compile_texts(quiz, &[("bn", bn)])
    }

    #[test]
    fn an_export_read_back_with_one_target_changed_changes_that_text_only() {
        let content = quiz();
        let xml = export(&content, 1, "bn");
        assert!(xml.contains("<source>T &amp; &lt;co&gt;</source>"));
        let edited = xml
            .replace("<target>একটি বাছুন</target>", "<target>ঠিক একটি বাছুন</target>")
            .replacen(
                "<segment state=\"initial\">\n        <source>A</source>",
                "<segment state=\"final\">\n        <source>A</source>\n        <target>ক</target>",
                1,
            );
        let imported = import(&content, "bn", &edited).unwrap();
        let out = super::super::exchange::apply(&content, "bn", "bn.xlf", &imported).unwrap();
        assert_eq!(out.questions[0].prompt["bn"], "ঠিক একটি বাছুন");
        assert_eq!(out.questions[0].options[0].text["bn"], "ক");
        assert_eq!(out.title["bn"], "টি");
        assert!(!out.questions[0].options[1].text.contains_key("bn"));
    }

    #[test]
    fn a_dtd_an_entity_bomb_and_an_external_entity_are_refused_before_expansion() {
        let content = quiz();
        let lol = "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY a \"aaaaaaaaaa\">\
                   <!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">]>\
                   <xliff xmlns=\"urn:oasis:names:tc:xliff:document:2.0\">&c;</xliff>";
        assert!(matches!(
            import(&content, "bn", lol),
            Err(XliffError::Malformed(_))
        ));
        let xxe = "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>\
                   <xliff xmlns=\"urn:oasis:names:tc:xliff:document:2.0\">&e;</xliff>";
        assert!(matches!(
            import(&content, "bn", xxe),
            Err(XliffError::Malformed(_))
        ));
    }

    #[test]
    fn unknown_units_changed_sources_and_inline_markup_are_named() {
        let content = quiz();
        let xml = export(&content, 1, "bn")
            .replace(
                "<unit id=\"q.q1.explanation\"",
                "<unit id=\"q.q9.explanation\"",
            )
            .replace("<source>Pick one</source>", "<source>Pick two</source>")
            .replace("<target>টি</target>", "<target>টি <ph id=\"1\"/></target>");
        let Err(XliffError::Units(problems)) = import(&content, "bn", &xml) else {
            panic!("refused");
        };
        let ids: Vec<&str> = problems.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(
            ids,
            ["title", "q.q1.prompt", "q.q9.explanation"],
            "{problems:?}"
        );
    }
}
