//! Locale negotiation and per-field fallback.
//!
//! A request names the locales it wants (`?lang=`, then `Accept-Language` by q-value); the
//! quiz offers some locales; negotiation yields a chain ending in the quiz's source locale.
//! Every text is resolved along that chain field by field and reports the language it is
//! actually in, so an untranslated question inside a Bengali quiz says it is English.

use std::collections::BTreeMap;

use fluent_langneg::{LanguageIdentifier, NegotiationStrategy, negotiate_languages};
use serde::Serialize;
use utoipa::ToSchema;

/// A translatable text: locale tag → text.
pub type Text = BTreeMap<String, String>;

/// A text resolved for a reader, with the language it is actually in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct LocalizedText {
    pub text: String,
    /// BCP 47 tag of the language `text` is in (set it as the element's `lang`).
    pub lang: String,
}

/// Parses a BCP 47 tag and returns its canonical form, or `None` when it is not one.
/// Only ISO 639 language subtags (2–3 letters) are accepted.
pub fn canonical_tag(tag: &str) -> Option<String> {
    let primary = tag.split(['-', '_']).next()?;
    if !(2..=3).contains(&primary.len()) || !primary.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let id: LanguageIdentifier = tag.parse().ok()?;
    Some(id.to_string())
}

/// Parses an `Accept-Language` header into tags ordered by q-value (stable for equal q),
/// dropping `q=0`, the wildcard and anything that is not a language tag.
pub fn parse_accept_language(header: &str) -> Vec<String> {
    let mut weighted: Vec<(String, f32)> = header
        .split(',')
        .filter_map(|item| {
            let mut parts = item.split(';');
            let tag = parts.next()?.trim();
            let mut q = 1.0f32;
            for param in parts {
                let (name, value) = param.split_once('=')?;
                if name.trim().eq_ignore_ascii_case("q") {
                    q = value.trim().parse().ok()?;
                }
            }
            if !(q > 0.0 && q <= 1.0) || tag == "*" {
                return None;
            }
            Some((canonical_tag(tag)?, q))
        })
        .collect();
    weighted.sort_by(|a, b| b.1.total_cmp(&a.1));
    weighted.into_iter().map(|(tag, _)| tag).collect()
}

/// The requested locales of a request, most wanted first: an explicit choice (`?lang=` or a
/// stored preference) before the `Accept-Language` header.
pub fn requested_locales(explicit: Option<&str>, accept_language: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = explicit.and_then(canonical_tag).into_iter().collect();
    for tag in accept_language
        .map(parse_accept_language)
        .unwrap_or_default()
    {
        if !out.contains(&tag) {
            out.push(tag);
        }
    }
    out
}

/// The locales to serve, in order: the available locales that match the request (a request
/// for `bn-BD` matches `bn`, `pt` matches `pt-BR`), always ending with the source locale.
pub fn negotiate(requested: &[String], available: &[String], source: &str) -> Vec<String> {
    let requested: Vec<LanguageIdentifier> =
        requested.iter().filter_map(|t| t.parse().ok()).collect();
    let available_ids: Vec<LanguageIdentifier> =
        available.iter().filter_map(|t| t.parse().ok()).collect();
    let source_id: Option<LanguageIdentifier> = source.parse().ok();
    let mut chain: Vec<String> = negotiate_languages(
        &requested,
        &available_ids,
        source_id.as_ref(),
        NegotiationStrategy::Filtering,
    )
    .into_iter()
    .map(|id| id.to_string())
    .collect();
    if !chain.iter().any(|l| l == source) {
        chain.push(source.to_string());
    }
    chain
}

/// Resolves one text along the chain; a text missing in every chained locale falls back to
/// whatever locale has it (content validation makes the source locale always present).
pub fn resolve(text: &Text, chain: &[String]) -> LocalizedText {
    chain
        .iter()
        .find_map(|l| text.get(l).map(|t| (l, t)))
        .or_else(|| text.iter().next())
        .map(|(lang, text)| LocalizedText {
            text: text.clone(),
            lang: lang.clone(),
        })
        .unwrap_or_else(|| LocalizedText {
            text: String::new(),
            lang: chain.first().cloned().unwrap_or_default(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn accept_language_is_ordered_by_q_value_and_drops_zero() {
        assert_eq!(
            parse_accept_language("en;q=0.3, id;q=0.9, bn, fr;q=0, *;q=0.1"),
            s(&["bn", "id", "en"])
        );
    }

    #[test]
    fn accept_language_ignores_garbage() {
        assert_eq!(parse_accept_language("!!, ;q=x, bn;q=abc, id"), s(&["id"]));
        assert!(parse_accept_language("").is_empty());
    }

    #[test]
    fn canonical_tag_accepts_language_tags_and_refuses_words() {
        assert_eq!(canonical_tag("bn").as_deref(), Some("bn"));
        assert_eq!(canonical_tag("pt-br").as_deref(), Some("pt-BR"));
        assert_eq!(canonical_tag("bengali"), None);
        assert_eq!(canonical_tag("x!"), None);
        assert_eq!(canonical_tag(""), None);
    }

    #[test]
    fn a_regional_request_matches_the_plain_language() {
        let chain = negotiate(&s(&["bn-BD"]), &s(&["en", "bn", "id"]), "en");
        assert_eq!(chain, s(&["bn", "en"]));
    }

    #[test]
    fn an_unsupported_request_falls_back_to_the_source() {
        assert_eq!(negotiate(&s(&["fr"]), &s(&["en", "bn"]), "en"), s(&["en"]));
        assert_eq!(negotiate(&[], &s(&["en", "bn"]), "en"), s(&["en"]));
    }

    #[test]
    fn resolution_walks_the_chain_field_by_field() {
        let mut t = Text::new();
        t.insert("en".into(), "Hello".into());
        let chain = s(&["bn", "en"]);
        assert_eq!(resolve(&t, &chain).lang, "en");
        t.insert("bn".into(), "হ্যালো".into());
        assert_eq!(resolve(&t, &chain).lang, "bn");
        assert_eq!(resolve(&t, &chain).text, "হ্যালো");
    }

    #[test]
    fn an_explicit_choice_comes_before_the_header() {
        assert_eq!(
            requested_locales(Some("id"), Some("bn, en;q=0.5")),
            s(&["id", "bn", "en"])
        );
    }
}
