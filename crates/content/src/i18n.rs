//! The translatable text of the content files and the language tags that name its locales.
//! (Negotiating a reader's locales and resolving a text for them is the server's `i18n`.)

use std::collections::BTreeMap;

use fluent_langneg::LanguageIdentifier;

/// A translatable text: locale tag → text.
pub type Text = BTreeMap<String, String>;

/// The longest tag considered, in bytes. RFC 5646 §4.4.1 sizes buffers for 35 characters:
/// every tag without extensions or private-use parts fits, and no quiz locale is longer.
pub const MAX_TAG_BYTES: usize = 35;

/// Parses a BCP 47 tag and returns its canonical form, or `None` when it is not one (or is
/// longer than [`MAX_TAG_BYTES`]). Only ISO 639 language subtags (2–3 letters) are accepted.
pub fn canonical_tag(tag: &str) -> Option<String> {
    if tag.len() > MAX_TAG_BYTES {
        return None;
    }
    let primary = tag.split(['-', '_']).next()?;
    if !(2..=3).contains(&primary.len()) || !primary.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let id: LanguageIdentifier = tag.parse().ok()?;
    Some(id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_tag_accepts_language_tags_and_refuses_words() {
        assert_eq!(canonical_tag("bn").as_deref(), Some("bn"));
        assert_eq!(canonical_tag("pt-br").as_deref(), Some("pt-BR"));
        assert_eq!(canonical_tag("bengali"), None);
        assert_eq!(canonical_tag("x!"), None);
        assert_eq!(canonical_tag(""), None);
    }
}
