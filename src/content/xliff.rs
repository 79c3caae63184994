//! XLIFF 2.1 (OASIS, core module only) for translators' CAT tools: one file per quiz version
//! and target locale, one `<unit>` per translatable text, named by its text id
//! ([`QuizContent::texts`]). Pure: no I/O.
//!
//! Reading is the untrusted part. `roxmltree` never resolves external entities, and a document
//! with a DTD (the carrier of every entity bomb and external entity) is refused before anything
//! is expanded; the number of nodes is bounded as well as the body's size (by the caller).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;

use super::QuizContent;
use super::model::source_hash;

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
    for t in content.texts() {
        let Some(source) = t.text.get(&content.source_locale) else {
            continue;
        };
        let target = t.text.get(locale);
        let stale = target.is_some() && content.is_stale(&t.id, t.text, locale);
        let _ = write!(
            x,
            "    <unit id=\"{}\" xml:space=\"preserve\">\n      <notes>\n",
            t.id
        );
        let mut note = t.role.note().to_string();
        if let Some(q) = t.question {
            note = format!("Question '{q}': {note}");
        }
        let _ = writeln!(
            x,
            "        <note category=\"description\">{}</note>",
            attr(&note)
        );
        if stale {
            x.push_str(
                "        <note category=\"quizd:stale\">The source text changed after this was \
                 translated: review the target against the new source.</note>\n",
            );
        }
        x.push_str("      </notes>\n");
        match (target, stale) {
            (Some(_), false) => x.push_str("      <segment state=\"translated\">\n"),
            (Some(_), true) => {
                x.push_str("      <segment state=\"initial\" subState=\"quizd:stale\">\n")
            }
            (None, _) => x.push_str("      <segment state=\"initial\">\n"),
        }
        let _ = writeln!(x, "        <source>{}</source>", attr(source));
        if let Some(target) = target {
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

/// The translations an import brings: text id → target, for the units whose state says they
/// are translated (`translated`, `reviewed`, `final`). Units in state `initial` are left as
/// they are. Every unit's source must be the current source of its text in `content`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub targets: BTreeMap<String, String>,
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
/// version). All or nothing: any problem refuses the whole document.
pub fn import(content: &QuizContent, locale: &str, xml: &str) -> Result<Imported, XliffError> {
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
    let texts: BTreeMap<String, &crate::i18n::Text> = content
        .texts()
        .into_iter()
        .map(|t| (t.id, t.text))
        .collect();
    let mut problems: Vec<(String, String)> = Vec::new();
    let mut seen = HashSet::new();
    let mut targets = BTreeMap::new();
    let units = root
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "unit");
    for unit in units {
        let id = unit.attribute("id").unwrap_or("").to_string();
        let mut bad = |what: String| problems.push((id.clone(), what));
        let Some(text) = texts.get(&id) else {
            bad("no such text in this quiz (unknown unit id)".into());
            continue;
        };
        if !seen.insert(id.clone()) {
            bad("the unit appears twice".into());
            continue;
        }
        let segments: Vec<_> = unit
            .children()
            .filter(|n| n.is_element() && n.tag_name().name() == "segment")
            .collect();
        let [segment] = segments.as_slice() else {
            bad(format!("expected one <segment>, found {}", segments.len()));
            continue;
        };
        let state = match segment.attribute("state").map(UnitState::parse) {
            None => UnitState::Initial,
            Some(Some(s)) => s,
            Some(None) => {
                bad("state must be initial, translated, reviewed or final".into());
                continue;
            }
        };
        let child = |name: &str| {
            segment
                .children()
                .find(|n| n.is_element() && n.tag_name().name() == name)
        };
        let source = match child("source").map(text_of) {
            Some(Ok(s)) => s,
            Some(Err(e)) => {
                bad(format!("source: {e}"));
                continue;
            }
            None => {
                bad("the segment has no <source>".into());
                continue;
            }
        };
        let current = text.get(&content.source_locale).map(String::as_str);
        if current != Some(source.as_str()) {
            bad(
                "the source no longer matches the quiz's current source text; export again and \
                 translate the new source"
                    .into(),
            );
            continue;
        }
        let target = match child("target").map(text_of) {
            Some(Ok(t)) => Some(t),
            Some(Err(e)) => {
                bad(format!("target: {e}"));
                continue;
            }
            None => None,
        };
        match (state, target) {
            (UnitState::Initial, _) => {}
            (_, None) => bad("a translated unit needs a <target>".into()),
            (_, Some(t)) if t.trim().is_empty() => bad("the target is empty".into()),
            (_, Some(t)) if t.contains('\0') => bad("the target contains a NUL".into()),
            (_, Some(t)) => {
                targets.insert(id.clone(), t);
            }
        }
    }
    if problems.is_empty() {
        Ok(Imported { targets })
    } else {
        Err(XliffError::Units(problems))
    }
}

/// `content` with the imported targets as `locale`'s translations (others kept, stale ones
/// still stale), each imported one recorded as made from the current source.
pub fn apply(
    content: &QuizContent,
    locale: &str,
    imported: &Imported,
) -> Result<QuizContent, Vec<super::ContentError>> {
    let mut texts: BTreeMap<String, String> = content
        .texts()
        .into_iter()
        .filter_map(|t| t.text.get(locale).map(|s| (t.id, s.clone())))
        .collect();
    texts.extend(imported.targets.clone());
    let mut out = super::retranslate(content, locale, &format!("{locale}.xlf"), &texts)?;
    let sources: BTreeMap<String, String> = out
        .texts()
        .into_iter()
        .filter_map(|t| Some((t.id, t.text.get(&out.source_locale)?.clone())))
        .collect();
    for id in imported.targets.keys() {
        if let Some(source) = sources.get(id) {
            out.translated_from
                .entry(id.clone())
                .or_default()
                .insert(locale.to_string(), source_hash(source));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::{QuizSource, SourceFile, compile};

    fn quiz() -> QuizContent {
        let quiz = "slug = \"t\"\ntitle = \"T & <co>\"\n[[questions]]\nkey = \"q1\"\nkind = \"single\"\n\
             prompt = \"Pick one\"\nexplanation = \"E\"\n[[questions.options]]\nkey = \"a\"\n\
             text = \"A\"\ncorrect = true\n[[questions.options]]\nkey = \"b\"\ntext = \"B\"\n";
        let bn = "title = \"টি\"\n[questions.q1]\nprompt = \"একটি বাছুন\"\n";
        compile(&QuizSource {
            quiz: SourceFile {
                name: "quiz.toml".into(),
                text: quiz.into(),
            },
            translations: vec![(
                "bn".into(),
                SourceFile {
                    name: "bn.toml".into(),
                    text: bn.into(),
                },
            )],
        })
        .unwrap()
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
        let out = apply(&content, "bn", &imported).unwrap();
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
