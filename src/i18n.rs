//! Locale negotiation and per-field fallback.
//!
//! A request names the locales it wants (`?lang=`, then `Accept-Language` by q-value); the
//! quiz offers some locales; negotiation yields a chain ending in the quiz's source locale.
//! Every text is resolved along that chain field by field and reports the language it is
//! actually in, so an untranslated question inside a Bengali quiz says it is English.

use fluent_langneg::{LanguageIdentifier, NegotiationStrategy, negotiate_languages};
use serde::Serialize;
use utoipa::ToSchema;

/// The translatable text and the language tag are the content files' own.
pub use quizd_content::i18n::{MAX_TAG_BYTES, Text, canonical_tag};

/// A text resolved for a reader, with the language it is actually in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct LocalizedText {
    pub text: String,
    /// BCP 47 tag of the language `text` is in (set it as the element's `lang`).
    pub lang: String,
}

/// How much of an `Accept-Language` header is read, in bytes; the rest is ignored. Browsers
/// send well under 100 bytes (a language list someone configured by hand is a few dozen tags);
/// 512 bytes holds 16 tags with q-values. A header can be up to actix's 128 KiB request head,
/// and every byte read is work done for whoever sent it.
pub const MAX_ACCEPT_LANGUAGE_BYTES: usize = 512;

/// How many items of an `Accept-Language` header are considered, valid or not; the rest are
/// ignored. No reader ranks more than a few languages, and a quiz offers a handful.
pub const MAX_ACCEPT_LANGUAGE_TAGS: usize = 16;

/// The most requested locales a request yields: an explicit choice and the header's tags.
/// With [`MAX_TAG_BYTES`] this bounds every list of requested locales (and every memo keyed by
/// one) to a few hundred bytes, however large the request.
pub const MAX_REQUESTED: usize = 1 + MAX_ACCEPT_LANGUAGE_TAGS;

/// The items of an `Accept-Language` header that are considered: those wholly within its first
/// [`MAX_ACCEPT_LANGUAGE_BYTES`] (an item cut there is dropped, not read as a shorter tag), at
/// most [`MAX_ACCEPT_LANGUAGE_TAGS`] of them.
fn considered_items(header: &str) -> impl Iterator<Item = &str> {
    let head = if header.len() <= MAX_ACCEPT_LANGUAGE_BYTES {
        header
    } else {
        // A comma is ASCII, so cutting just before one is a character boundary.
        let window = &header.as_bytes()[..=MAX_ACCEPT_LANGUAGE_BYTES];
        window
            .iter()
            .rposition(|&b| b == b',')
            .map_or("", |end| &header[..end])
    };
    head.split(',').take(MAX_ACCEPT_LANGUAGE_TAGS)
}

/// Parses an `Accept-Language` header into tags ordered by q-value (stable for equal q),
/// dropping `q=0`, the wildcard, anything that is not a language tag, and repeats. Reads a
/// bounded prefix (see [`considered_items`]), so its cost does not grow with the header.
pub fn parse_accept_language(header: &str) -> Vec<String> {
    let mut weighted: Vec<(String, f32)> = Vec::new();
    for item in considered_items(header) {
        let mut parts = item.split(';');
        let Some(tag) = parts.next().map(str::trim) else {
            continue;
        };
        let mut q = Some(1.0f32);
        for param in parts {
            match param.split_once('=') {
                Some((name, value)) if name.trim().eq_ignore_ascii_case("q") => {
                    q = value.trim().parse().ok();
                }
                Some(_) => {}
                None => q = None,
            }
        }
        let Some(q) = q.filter(|q| *q > 0.0 && *q <= 1.0) else {
            continue;
        };
        if tag == "*" {
            continue;
        }
        let Some(tag) = canonical_tag(tag) else {
            continue;
        };
        // A repeated tag counts at its highest q. At most 16 items: a constant amount of work.
        match weighted.iter_mut().find(|(t, _)| *t == tag) {
            Some((_, seen)) => *seen = seen.max(q),
            None => weighted.push((tag, q)),
        }
    }
    weighted.sort_by(|a, b| b.1.total_cmp(&a.1));
    weighted.into_iter().map(|(tag, _)| tag).collect()
}

/// The requested locales of a request, most wanted first: an explicit choice (`?lang=` or a
/// stored preference) before the `Accept-Language` header. At most [`MAX_REQUESTED`] tags of
/// at most [`MAX_TAG_BYTES`] each.
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
    let (text, lang) = resolve_ref(text, chain);
    LocalizedText {
        text: text.to_string(),
        lang: lang.to_string(),
    }
}

/// [`resolve`] without copying: the text and its language, borrowed.
pub fn resolve_ref<'a>(text: &'a Text, chain: &'a [String]) -> (&'a str, &'a str) {
    chain
        .iter()
        .find_map(|l| text.get(l).map(|t| (t.as_str(), l.as_str())))
        .or_else(|| text.iter().next().map(|(l, t)| (t.as_str(), l.as_str())))
        .unwrap_or(("", chain.first().map_or("", String::as_str)))
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

    /// `n` distinct, valid language tags (`aa`, `ab`, … then three letters), comma-separated.
    fn many_tags(n: usize) -> String {
        let letters = |i: usize| (b'a' + (i % 26) as u8) as char;
        (0..n)
            .map(|i| match i {
                0..676 => format!("{}{}", letters(i / 26), letters(i)),
                _ => format!("{}{}{}", letters(i / 676), letters(i / 26), letters(i)),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    #[test]
    fn a_header_of_ten_thousand_tags_is_read_for_its_first_sixteen() {
        let header = many_tags(10_000);
        assert!(header.len() > 30_000);
        // The cost is bounded by what is considered, whatever the header's size.
        assert_eq!(considered_items(&header).count(), MAX_ACCEPT_LANGUAGE_TAGS);
        let parsed = parse_accept_language(&header);
        assert_eq!(parsed.len(), MAX_ACCEPT_LANGUAGE_TAGS);
        assert_eq!(parsed[..3], s(&["aa", "ab", "ac"]));
        let requested = requested_locales(Some("bn"), Some(&header));
        assert_eq!(requested.len(), MAX_REQUESTED);
        assert_eq!(requested[0], "bn");
    }

    #[test]
    fn only_the_first_512_bytes_of_a_header_are_read_and_a_tag_cut_there_is_dropped() {
        // 100 wide items of garbage (6 bytes each with the separator), then a valid tag past
        // the first 512 bytes: never seen.
        let header = format!("{}, bn", ["xxxx"; 100].join(", "));
        assert!(header.len() > MAX_ACCEPT_LANGUAGE_BYTES);
        assert!(parse_accept_language(&header).is_empty());
        // A tag straddling byte 512 is dropped rather than read as its first letters.
        let pad = format!("{};q=0.1", "x".repeat(MAX_ACCEPT_LANGUAGE_BYTES - 12));
        let header = format!("{pad}, de-CH-1996");
        assert!(header.len() > MAX_ACCEPT_LANGUAGE_BYTES + 1);
        assert!(considered_items(&header).all(|item| !item.contains("de")));
        // Items wholly within the first 512 bytes still count.
        let header = format!("id, {}", "y".repeat(10_000));
        assert_eq!(parse_accept_language(&header), s(&["id"]));
    }

    #[test]
    fn a_header_without_a_comma_in_its_first_512_bytes_yields_nothing() {
        let header = format!("en-{}", "a".repeat(100_000));
        assert_eq!(considered_items(&header).count(), 1);
        assert!(parse_accept_language(&header).is_empty());
    }

    #[test]
    fn a_tag_longer_than_35_bytes_is_not_a_tag() {
        let long = format!("en-{}", ["abcdefgh"; 5].join("-"));
        assert!(long.len() > MAX_TAG_BYTES);
        assert_eq!(canonical_tag(&long), None);
        assert!(requested_locales(Some(&long), None).is_empty());
        assert_eq!(canonical_tag("zh-Hant-TW").as_deref(), Some("zh-Hant-TW"));
    }

    #[test]
    fn a_repeated_tag_counts_once_at_its_highest_q() {
        assert_eq!(
            parse_accept_language("en;q=0.1, bn;q=0.5, en, bn"),
            s(&["en", "bn"])
        );
    }

    #[test]
    fn an_explicit_choice_comes_before_the_header() {
        assert_eq!(
            requested_locales(Some("id"), Some("bn, en;q=0.5")),
            s(&["id", "bn", "en"])
        );
    }
}
