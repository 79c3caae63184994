//! What the translation exchange formats (XLIFF 2.1 in [`super::xliff`], gettext PO in
//! [`super::po`]) have in common: the list of units a translator sees, the checks an imported
//! unit must pass, and how the imported translations become new content. Each format only
//! writes and reads its own syntax. Pure: no I/O.

use std::collections::{BTreeMap, HashSet};

use super::QuizContent;
use super::model::source_hash;
use crate::i18n::Text;

/// One translatable text as a translator sees it, for one target locale.
#[derive(Debug, Clone)]
pub struct Unit<'a> {
    /// The text id ([`QuizContent::texts`]): XLIFF's unit id, PO's `msgctxt`.
    pub id: String,
    /// What the text is (a question's prompt, a wrong option…), for the translator.
    pub note: String,
    pub source: &'a str,
    /// The stored translation, current or stale.
    pub target: Option<&'a str>,
    /// The translation was made from another source text than `source`: it needs review.
    pub stale: bool,
    /// For a stale translation, the hash ([`source_hash`]) of the source it was made from.
    pub translated_from: Option<&'a str>,
}

/// Every text of `content` (as stored: stale translations included) that has a source, with
/// its translation into `locale`, in display order.
pub fn units<'a>(content: &'a QuizContent, locale: &str) -> Vec<Unit<'a>> {
    content
        .texts()
        .into_iter()
        .filter_map(|t| {
            let source = t.text.get(&content.source_locale)?;
            let target = t.text.get(locale).map(String::as_str);
            let stale = target.is_some() && content.is_stale(&t.id, t.text, locale);
            let note = match t.question {
                Some(q) => format!("Question '{q}': {}", t.role.note()),
                None => t.role.note().to_string(),
            };
            let translated_from = stale
                .then(|| content.translated_from.get(&t.id)?.get(locale))
                .flatten()
                .map(String::as_str);
            Some(Unit {
                id: t.id,
                note,
                source,
                target,
                stale,
                translated_from,
            })
        })
        .collect()
}

/// The translations an import brings: text id → translation, for the units marked as
/// translated. Units not marked so are left as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub targets: BTreeMap<String, String>,
}

/// Checks imported units one by one against the current content, whatever their format.
pub struct Checker<'a> {
    content: &'a QuizContent,
    texts: BTreeMap<String, &'a Text>,
    seen: HashSet<String>,
    targets: BTreeMap<String, String>,
}

impl<'a> Checker<'a> {
    pub fn new(content: &'a QuizContent) -> Self {
        Checker {
            content,
            texts: content
                .texts()
                .into_iter()
                .map(|t| (t.id, t.text))
                .collect(),
            seen: HashSet::new(),
            targets: BTreeMap::new(),
        }
    }

    /// Whether `id` names a text of the quiz, first seen now.
    pub fn known(&mut self, id: &str) -> Result<(), String> {
        if !self.texts.contains_key(id) {
            return Err("no such text in this quiz (unknown id)".into());
        }
        if !self.seen.insert(id.to_string()) {
            return Err("the text appears twice".into());
        }
        Ok(())
    }

    /// One unit of text `id` (already [`Checker::known`]): its `source` must be the current
    /// source; when `translated`, its `target` becomes the translation.
    pub fn unit(
        &mut self,
        id: &str,
        source: &str,
        target: Option<String>,
        translated: bool,
    ) -> Result<(), String> {
        let current = self.texts[id]
            .get(&self.content.source_locale)
            .map(String::as_str);
        if current != Some(source) {
            return Err(
                "the source no longer matches the quiz's current source text; export again and \
                 translate the new source"
                    .into(),
            );
        }
        if !translated {
            return Ok(());
        }
        match target {
            None => Err("a translated unit needs a target".into()),
            Some(t) if t.trim().is_empty() => Err("the target is empty".into()),
            Some(t) if t.contains('\0') => Err("the target contains a NUL".into()),
            Some(t) => {
                self.targets.insert(id.to_string(), t);
                Ok(())
            }
        }
    }

    pub fn finish(self) -> Imported {
        Imported {
            targets: self.targets,
        }
    }
}

/// `content` with the imported targets as `locale`'s translations (others kept, stale ones
/// still stale), each imported one recorded as made from the current source, validated as a
/// `<locale>.toml` is (naming `file` in messages).
pub fn apply(
    content: &QuizContent,
    locale: &str,
    file: &str,
    imported: &Imported,
) -> Result<QuizContent, Vec<super::ContentError>> {
    let mut texts: BTreeMap<String, String> = content
        .texts()
        .into_iter()
        .filter_map(|t| t.text.get(locale).map(|s| (t.id, s.clone())))
        .collect();
    texts.extend(imported.targets.clone());
    let mut out = super::retranslate(content, locale, file, &texts)?;
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
