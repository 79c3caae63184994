//! gettext PO for Weblate, Poedit and the gettext tools: one file per quiz version and target
//! locale, one entry per translatable text, its `msgctxt` the text id
//! ([`QuizContent::texts`]), with the same meaning as the XLIFF export ([`super::xliff`]):
//! a current translation is a plain entry, a stale one is `#, fuzzy` with the source it was
//! made from as `#| msgid` (when an earlier version still has it), a missing one has an empty
//! `msgstr`. Pure: no I/O.
//!
//! Reading is the untrusted part, and a small strict parser of our own does it rather than a
//! crate. `polib` (its parser as on GitHub, BrettDong/polib) reads from a path, passes over
//! lines it does not recognise without a word, slices and unwraps its way through malformed
//! lines (a panic on input, not an error) and reports errors without a line; an import here
//! must refuse anything ambiguous and name the entry and line. The grammar is line-oriented,
//! so one pass over the lines in O(input) time and memory reads it: no backtracking, no
//! recursion, escapes one character deep; the caller bounds the size, and [`MAX_ENTRIES`] the
//! entries.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::QuizContent;
use super::exchange::{Checker, Imported};

pub const CONTENT_TYPE: &str = "text/x-gettext-translation";
/// The most entries read from one file: a quiz has a few hundred texts.
pub const MAX_ENTRIES: usize = 20_000;

/// `text` as a PO string literal (without the quotes).
fn quote(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A comment line's text: PO comments end at the line's end.
fn comment(text: &str) -> String {
    text.replace(['\r', '\n'], " ")
}

/// The gettext spelling of a BCP 47 tag (`pt-BR` → `pt_BR`).
fn gettext_language(locale: &str) -> String {
    locale.replace('-', "_")
}

/// The PO file of `content` (as stored: stale translations included) for `locale`.
/// `previous` maps the hash of an earlier source text to that text, for the `#| msgid` of
/// stale entries.
pub fn export(
    content: &QuizContent,
    version: i32,
    locale: &str,
    previous: &BTreeMap<String, String>,
) -> String {
    let mut po = String::new();
    let _ = writeln!(
        po,
        "# The quiz '{}', version {version}: translation from {} into {locale}.\n\
         # msgctxt is the text's id; keep it. An entry marked fuzzy is a translation whose source\n\
         # text changed: review it against the new msgid and remove the fuzzy flag.",
        content.slug, content.source_locale
    );
    po.push_str("msgid \"\"\nmsgstr \"\"\n");
    for header in [
        format!("Project-Id-Version: {} {version}", content.slug),
        format!("Language: {}", gettext_language(locale)),
        "MIME-Version: 1.0".to_string(),
        "Content-Type: text/plain; charset=UTF-8".to_string(),
        "Content-Transfer-Encoding: 8bit".to_string(),
        format!("X-Source-Language: {}", content.source_locale),
    ] {
        quote(&mut po, &format!("{header}\n"));
        po.push('\n');
    }
    for u in super::exchange::units(content, locale) {
        let _ = writeln!(po, "\n#. {}", comment(&u.note));
        if u.stale {
            po.push_str(
                "#. The source text changed after this was translated: review the translation \
                 against the new source.\n#, fuzzy\n",
            );
            if let Some(old) = u.translated_from.and_then(|h| previous.get(h)) {
                po.push_str("#| msgid ");
                quote(&mut po, old);
                po.push('\n');
            }
        }
        po.push_str("msgctxt ");
        quote(&mut po, &u.id);
        po.push_str("\nmsgid ");
        quote(&mut po, u.source);
        po.push_str("\nmsgstr ");
        quote(&mut po, u.target.unwrap_or(""));
        po.push('\n');
    }
    po
}

/// What an import found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoError {
    /// Not PO syntax, not for this locale, or too many entries; names the line.
    Malformed(String),
    /// Problems with entries: `(entry, what is wrong)`, every one found; the entry is named by
    /// its `msgctxt` and line.
    Entries(Vec<(String, String)>),
}

/// One entry as read: the keywords' strings, where it starts, and whether it is fuzzy.
#[derive(Debug, Default)]
struct Entry {
    line: usize,
    fuzzy: bool,
    msgctxt: Option<String>,
    msgid: Option<String>,
    msgstr: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keyword {
    Msgctxt,
    Msgid,
    Msgstr,
}

/// The string literal at the start of `s` (after optional spaces), with nothing but spaces
/// after it.
fn string_literal(s: &str, line: usize) -> Result<String, String> {
    let s = s.trim_start_matches([' ', '\t']);
    let Some(rest) = s.strip_prefix('"') else {
        return Err(format!("line {line}: expected a string in double quotes"));
    };
    let mut out = String::with_capacity(rest.len());
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                if !rest[i + 1..].trim_matches([' ', '\t']).is_empty() {
                    return Err(format!("line {line}: text after the closing quote"));
                }
                return Ok(out);
            }
            '\\' => match chars.next().map(|(_, e)| e) {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some(e) => {
                    return Err(format!(
                        "line {line}: the escape \\{e} is not read (only \\n \\t \\r \\\" \\\\)"
                    ));
                }
                None => return Err(format!("line {line}: the string is not closed")),
            },
            c => out.push(c),
        }
    }
    Err(format!("line {line}: the string is not closed"))
}

/// Splits a PO file into entries, strictly: every line is a comment, a keyword with its
/// string, a continuation string or blank; keywords come in the order msgctxt, msgid, msgstr.
/// Obsolete entries (`#~`) are skipped; plural forms are refused (quiz texts have none).
fn entries(po: &str) -> Result<Vec<Entry>, String> {
    let mut out: Vec<Entry> = Vec::new();
    let mut current = Entry::default();
    // The keyword the last string belongs to, in `current`.
    let mut last: Option<Keyword> = None;
    let mut finish = |current: &mut Entry, last: &mut Option<Keyword>| -> Result<(), String> {
        let entry = std::mem::take(current);
        *last = None;
        if entry.msgid.is_none() && entry.msgctxt.is_none() && entry.msgstr.is_none() {
            // Comments alone (or nothing): not an entry.
            return Ok(());
        }
        if entry.msgid.is_none() || entry.msgstr.is_none() {
            return Err(format!(
                "line {}: an entry needs msgid and msgstr",
                entry.line
            ));
        }
        if out.len() == MAX_ENTRIES {
            return Err(format!("more than {MAX_ENTRIES} entries"));
        }
        out.push(entry);
        Ok(())
    };
    for (i, raw) in po.split('\n').enumerate() {
        let n = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let trimmed = line.trim_matches([' ', '\t']);
        if trimmed.is_empty() {
            finish(&mut current, &mut last)?;
            continue;
        }
        if let Some(c) = trimmed.strip_prefix('#') {
            if c.starts_with('~') {
                continue;
            }
            // A comment after a keyword starts the next entry.
            if last.is_some() {
                finish(&mut current, &mut last)?;
            }
            if current.line == 0 {
                current.line = n;
            }
            if let Some(flags) = c.strip_prefix(',') {
                current.fuzzy |= flags.split(',').any(|f| f.trim() == "fuzzy");
            }
            continue;
        }
        if trimmed.starts_with('"') {
            let s = string_literal(trimmed, n)?;
            let slot = match last {
                Some(Keyword::Msgctxt) => &mut current.msgctxt,
                Some(Keyword::Msgid) => &mut current.msgid,
                Some(Keyword::Msgstr) => &mut current.msgstr,
                None => return Err(format!("line {n}: a string without a keyword")),
            };
            slot.get_or_insert_with(String::new).push_str(&s);
            continue;
        }
        let (word, rest) = trimmed.split_once([' ', '\t']).unwrap_or((trimmed, ""));
        let keyword = match word {
            "msgctxt" => Keyword::Msgctxt,
            "msgid" => Keyword::Msgid,
            "msgstr" => Keyword::Msgstr,
            w if w == "msgid_plural" || w.starts_with("msgstr[") => {
                return Err(format!(
                    "line {n}: plural forms ({w}) are not used: quiz texts have none"
                ));
            }
            _ => return Err(format!("line {n}: not PO syntax")),
        };
        // msgctxt or msgid after a msgstr starts the next entry.
        if last == Some(Keyword::Msgstr) && keyword != Keyword::Msgstr {
            finish(&mut current, &mut last)?;
        }
        let in_order = match keyword {
            Keyword::Msgctxt => current.msgctxt.is_none() && current.msgid.is_none(),
            Keyword::Msgid => current.msgid.is_none(),
            Keyword::Msgstr => current.msgid.is_some() && current.msgstr.is_none(),
        };
        if !in_order {
            return Err(format!(
                "line {n}: {word} out of place (an entry is msgctxt, msgid, msgstr)"
            ));
        }
        if current.line == 0 {
            current.line = n;
        }
        let s = string_literal(rest, n)?;
        *match keyword {
            Keyword::Msgctxt => &mut current.msgctxt,
            Keyword::Msgid => &mut current.msgid,
            Keyword::Msgstr => &mut current.msgstr,
        } = Some(s);
        last = Some(keyword);
    }
    finish(&mut current, &mut last)?;
    Ok(out)
}

/// The header entry's fields that matter: the charset must be UTF-8 and the language, when
/// given, the path's locale.
fn check_header(header: &str, locale: &str) -> Result<(), String> {
    for field in header.lines() {
        let Some((name, value)) = field.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-type" => {
                let charset = value
                    .split(';')
                    .filter_map(|p| p.trim().strip_prefix("charset="))
                    .next();
                if charset.is_some_and(|c| !c.eq_ignore_ascii_case("utf-8")) {
                    return Err("the header's charset must be UTF-8".into());
                }
            }
            "language" if !value.is_empty() && value.replace('_', "-") != locale => {
                return Err(format!(
                    "the header's Language is '{value}', not '{locale}', the locale in the path"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Reads a PO file for `locale` against `content` (the stored current version): entries with
/// a non-empty `msgstr` and no `fuzzy` flag are taken; fuzzy and empty ones are left as they
/// are; every entry's `msgid` must be the current source of the text its `msgctxt` names.
/// All or nothing: any problem refuses the whole file.
pub fn import(content: &QuizContent, locale: &str, po: &str) -> Result<Imported, PoError> {
    let entries = entries(po).map_err(PoError::Malformed)?;
    let mut checker = Checker::new(content);
    let mut problems: Vec<(String, String)> = Vec::new();
    for entry in entries {
        let (Some(msgid), Some(msgstr)) = (entry.msgid, entry.msgstr) else {
            unreachable!("entries() keeps only entries with msgid and msgstr");
        };
        let Some(id) = entry.msgctxt else {
            if msgid.is_empty() {
                check_header(&msgstr, locale)
                    .map_err(|e| PoError::Malformed(format!("line {}: {e}", entry.line)))?;
            } else {
                problems.push((
                    format!("line {}", entry.line),
                    "an entry without msgctxt (the text id, as exported)".into(),
                ));
            }
            continue;
        };
        let translated = !entry.fuzzy && !msgstr.is_empty();
        let checked = checker
            .known(&id)
            .and_then(|()| checker.unit(&id, &msgid, Some(msgstr), translated));
        if let Err(what) = checked {
            problems.push((format!("'{id}' (line {})", entry.line), what));
        }
    }
    if problems.is_empty() {
        Ok(checker.finish())
    } else {
        Err(PoError::Entries(problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::apply;
    use crate::format::compile_texts;
    use crate::model::source_hash;

    fn quiz(prompt: &str) -> QuizContent {
        let quiz = format!(
            "slug = \"t\"\ntitle = \"T \\\"quoted\\\" \\\\ back\\nslash\"\n[[questions]]\n\
             key = \"q1\"\nkind = \"single\"\nprompt = \"{prompt}\"\nexplanation = \"E\"\n\
             [[questions.options]]\nkey = \"a\"\ntext = \"A\"\ncorrect = true\n\
             [[questions.options]]\nkey = \"b\"\ntext = \"B\"\n"
        );
        let bn = "title = \"টি\"\n[questions.q1]\nprompt = \"একটি বাছুন\"\n";
        compile_texts(&quiz, &[("bn", bn)])
    }

    #[test]
    fn an_export_read_back_with_one_translation_changed_and_one_added_changes_those_only() {
        let content = quiz("Pick one");
        let po = export(&content, 1, "bn", &BTreeMap::new());
        assert!(
            po.contains("msgid \"T \\\"quoted\\\" \\\\ back\\nslash\""),
            "{po}"
        );
        assert!(po.contains("msgctxt \"q.q1.o.a.text\"\nmsgid \"A\"\nmsgstr \"\"\n"));
        let edited = po
            .replace("msgstr \"একটি বাছুন\"", "msgstr \"ঠিক একটি বাছুন\"")
            .replace(
                "msgctxt \"q.q1.o.a.text\"\nmsgid \"A\"\nmsgstr \"\"",
                "msgctxt \"q.q1.o.a.text\"\nmsgid \"A\"\nmsgstr \"\"\n\"ক\"",
            );
        let imported = import(&content, "bn", &edited).unwrap();
        let out = apply(&content, "bn", "bn.po", &imported).unwrap();
        assert_eq!(out.questions[0].prompt["bn"], "ঠিক একটি বাছুন");
        assert_eq!(out.questions[0].options[0].text["bn"], "ক");
        assert_eq!(out.title["bn"], "টি");
        assert!(!out.questions[0].options[1].text.contains_key("bn"));
        // The export itself changes no text.
        let same = import(&content, "bn", &po).unwrap();
        let same = apply(&content, "bn", "bn.po", &same).unwrap();
        assert_eq!(
            (same.title, same.questions),
            (content.title, content.questions)
        );
    }

    #[test]
    fn a_stale_translation_is_fuzzy_with_its_old_source_and_stays_unimported_while_fuzzy() {
        let mut content = quiz("Pick exactly one");
        content.carry_translation_sources(&quiz("Pick one"));
        let previous = BTreeMap::from([(source_hash("Pick one"), "Pick one".to_string())]);
        let po = export(&content, 2, "bn", &previous);
        assert!(
            po.contains(
                "#, fuzzy\n#| msgid \"Pick one\"\nmsgctxt \"q.q1.prompt\"\n\
                 msgid \"Pick exactly one\"\nmsgstr \"একটি বাছুন\"\n"
            ),
            "{po}"
        );
        let imported = import(&content, "bn", &po).unwrap();
        assert!(!imported.targets.contains_key("q.q1.prompt"));
        // Reviewed: the flag removed, the translation is current again.
        let reviewed = po.replace("#, fuzzy\n", "");
        let imported = import(&content, "bn", &reviewed).unwrap();
        let out = apply(&content, "bn", "bn.po", &imported).unwrap();
        let prompt = &out.questions[0].prompt;
        assert!(!out.is_stale("q.q1.prompt", prompt, "bn"));
    }

    #[test]
    fn unknown_ids_changed_sources_and_missing_contexts_are_named_with_their_lines() {
        let content = quiz("Pick one");
        let po = export(&content, 1, "bn", &BTreeMap::new())
            .replace(
                "msgctxt \"q.q1.explanation\"",
                "msgctxt \"q.q9.explanation\"",
            )
            .replace("msgid \"Pick one\"", "msgid \"Pick two\"")
            .replace("msgctxt \"q.q1.o.b.text\"\n", "");
        let Err(PoError::Entries(problems)) = import(&content, "bn", &po) else {
            panic!("refused");
        };
        let named: Vec<&str> = problems.iter().map(|(e, _)| e.as_str()).collect();
        let line = |needle: &str| po[..po.find(needle).unwrap()].matches('\n').count() + 1;
        assert_eq!(
            named,
            [
                format!(
                    "'q.q1.prompt' (line {})",
                    line("#. Question 'q1': A question's")
                ),
                format!(
                    "'q.q9.explanation' (line {})",
                    line("#. Question 'q1': Why")
                ),
                format!("line {}", line("#. Question 'q1': A wrong option")),
            ],
            "{problems:?}"
        );
    }

    #[test]
    fn bad_syntax_is_refused_naming_the_line() {
        let content = quiz("Pick one");
        for (po, line) in [
            ("msgid \"a\"\nmsgstr \"b\n", 2),
            ("msgid \"a\"\nmsgstr \"\\x41\"\n", 2),
            ("msgid \"a\"\nmsgid_plural \"as\"\n", 2),
            ("\n\nmsgstr \"b\"\n", 3),
            ("\"dangling\"\n", 1),
            ("msgid \"a\" x\nmsgstr \"\"\n", 1),
            ("msgctxt \"title\"\nmsgstr \"\"\n", 2),
            ("msgid \"\"\nmsgstr \"Language: id\\n\"\n", 1),
        ] {
            let Err(PoError::Malformed(why)) = import(&content, "bn", po) else {
                panic!("{po:?} read");
            };
            assert!(why.starts_with(&format!("line {line}:")), "{po:?}: {why}");
        }
    }

    #[test]
    fn the_worst_inputs_of_a_mebibyte_are_read_in_one_pass() {
        let content = quiz("Pick one");
        let mib = 1 << 20;
        // One line of a mebibyte of escapes; many tiny entries; many continuation lines.
        let escapes = format!("msgid \"\"\nmsgstr \"{}\"\n", "\\\\".repeat(mib / 2));
        let many = "msgctxt \"x\"\nmsgid \"\"\nmsgstr \"\"\n".repeat(mib / 32);
        let lines = format!("msgid \"\"\nmsgstr \"\"\n{}", "\"\\n\"\n".repeat(mib / 5));
        for (name, po, read) in [
            ("escapes", escapes, true),
            ("entries", many, false),
            ("lines", lines, true),
        ] {
            let started = std::time::Instant::now();
            let result = import(&content, "bn", &po);
            // A figure for docs/content-authors.md, not an assertion.
            eprintln!("{name}: {} bytes in {:?}", po.len(), started.elapsed());
            assert_eq!(result.is_ok(), read, "{name}: {result:?}");
        }
    }
}
