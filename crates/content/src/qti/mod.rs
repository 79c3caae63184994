//! IMS/1EdTech QTI: export of a quiz version as a QTI 3.0 package, and import of QTI 3.0 and
//! QTI 2.1 packages (a zip with `imsmanifest.xml`) or single item/test documents, and of QTI 1.2
//! as Canvas writes it (`v1p2.rs`: into a draft that `content::interchange` builds, like Moodle
//! XML). Which one a package is, its documents say (`import::read`). Pure: bytes in, bytes or
//! content out; the HTTP and CLI plumbing is elsewhere.
//!
//! # The package quizd writes
//! - `imsmanifest.xml` (the QTI 3.0 profile of IMS CP 1.2): one `imsqti_test_xmlv3p0`
//!   resource per locale, the source locale's first, then one `imsqti_item_xmlv3p0` resource
//!   per question and locale.
//! - `tests/<locale>.xml`: a `qti-assessment-test` with `xml:lang` = the locale, its `title` the
//!   quiz's title in that locale, and one `qti-test-part`. Without banks: one section whose
//!   `qti-rubric-block` carries the intro, and every question as a `qti-assessment-item-ref`
//!   to that locale's item. With banks, the part's sections follow the layout (the first
//!   carries the intro): each run of fixed questions is a section (`S_<slug>`,
//!   `S_<slug>.<n>`), and each slot a section `B_<bank>` (`B_<bank>.<tag>` for a slot that
//!   draws by tag), not visible, with `qti-selection select="<draw>"
//!   with-replacement="false"` over the slot's candidates, in bank order; a bank's questions
//!   that no slot can draw close the part in a section `B_<bank>..undrawn` that selects 0.
//!   A bank question's reference carries its tags as `category` (a tag that is not an
//!   identifier of `[A-Za-z_][A-Za-z0-9_-]*` is written `_.` and its UTF-8 in hex); the
//!   manifest lists a bank's items in bank order. Importing reads these back into the same
//!   banks, slots and tags ([`parse_bank_section_id`]); another tool's section that selects N
//!   of its items is a bank of its own drawn N times, and a selection quizd cannot keep (among
//!   sub-sections, with replacement, without a valid `select`) is reported in the notes, its
//!   items imported as fixed questions.
//! - `items/<key>/<locale>.xml`: one `qti-assessment-item` per question and locale. A QTI item
//!   carries one language, so **a quiz with several locales is one item file per locale**; all
//!   of a question's files have the same item `identifier` (`Q_<key>`) and differ by the
//!   root's `xml:lang`. A text not translated into the locale is written in the source
//!   language, on an element with `xml:lang` = the source locale, so an importer knows it is
//!   not a translation. (The test's `title` is an attribute and cannot be marked so: a
//!   translated title equal to the source's is read as untranslated.)
//!
//! Questions, by kind:
//! - single, multiple, true_false → `qti-choice-interaction` (`max-choices` 1, or 0 = any, for
//!   multiple); true_false has the class `quizd-true-false` and the choices `C_true`/`C_false`.
//!   Choice identifiers are `C_<option key>` (a QTI identifier may not start with a digit).
//!   single/true_false score by `qti-match` against the correct response; multiple by a
//!   `qti-mapping` that is exactly quizd's partial credit (±points/n per option, bounded to
//!   [0, points]).
//! - numeric → `qti-text-entry-interaction` with a float response; the tolerance is QTI's own
//!   construct for it, `qti-equal tolerance-mode="absolute" tolerance="t"` between the response
//!   and the correct response in the item's response processing.
//! - short_text → text entry with a string response; every accepted answer is a
//!   `qti-map-entry` worth the points (`case-sensitive` as the question says).
//!
//! Points are the `MAXSCORE` outcome's default value (and the mapping's upper bound). The
//! explanation is a `qti-modal-feedback` `EXPLANATION`, always shown after the answer; a
//! wrong-answer feedback is `WRONG`, shown when SCORE < MAXSCORE; an option's feedback is a
//! modal feedback whose identifier is the option's choice, shown when it was chosen.
//!
//! Not carried: visibility, the practice policy, and which translations are stale (an import records every translation as
//! made from the current source).
//!
//! # Reading untrusted packages
//! Bounded before anything is inflated: the package's size, its number of entries, each XML
//! file's declared and actual unpacked size (read through a limit, whatever the header says),
//! the total, and the compression ratio. Each document: no DTD (roxmltree refuses it, so no
//! entity is ever declared, expanded or fetched), a node limit and a depth limit.

mod export;
mod import;
mod v1p2;

use serde::Serialize;

pub use export::{export_qti3, files as package_files};
pub use import::{Package, import_qti, read};
pub use v1p2::is_document as is_qti12_document;

use super::{ContentError, QuestionKind, QuizContent, QuizSource};

pub const ASI_NS: &str = "http://www.imsglobal.org/xsd/imsqtiasi_v3p0";
pub const ASI_XSD: &str =
    "https://purl.imsglobal.org/spec/qti/v3p0/schema/xsd/imsqti_asiv3p0_v1p0.xsd";
pub const CP_NS: &str = "http://www.imsglobal.org/xsd/qti/qtiv3p0/imscp_v1p1";
pub const CP_XSD: &str =
    "https://purl.imsglobal.org/spec/qti/v3p0/schema/xsd/imsqtiv3p0_imscpv1p2_v1p0.xsd";
const XSI_NS: &str = "http://www.w3.org/2001/XMLSchema-instance";
pub const CONTENT_TYPE: &str = "application/zip";

const ITEM_PREFIX: &str = "Q_";
const CHOICE_PREFIX: &str = "C_";
const TEST_PREFIX: &str = "T_";
const EXPLANATION: &str = "EXPLANATION";
const WRONG: &str = "WRONG";
const TRUE_FALSE_CLASS: &str = "quizd-true-false";

const BANK_PREFIX: &str = "B_";
const UNDRAWN: &str = ".undrawn";

/// What a section quizd writes for a bank is: a slot (with its tag, if any), or the bank's
/// questions that no slot draws.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum BankSection {
    Slot(Option<String>),
    Undrawn,
}

/// The identifier of a bank's section: `B_<bank>` for a slot without tag, `B_<bank>.<tag>`
/// for a slot with one (the tag as [`tag_token`] writes it), `B_<bank>..undrawn` for the
/// questions no slot draws. Bank keys have no `.`, and a tag token never starts with one, so
/// [`parse_bank_section_id`] reads each back.
pub(super) fn bank_section_id(bank: &str, what: &BankSection) -> String {
    match what {
        BankSection::Slot(None) => format!("{BANK_PREFIX}{bank}"),
        BankSection::Slot(Some(tag)) => format!("{BANK_PREFIX}{bank}.{}", tag_token(tag)),
        BankSection::Undrawn => format!("{BANK_PREFIX}{bank}.{UNDRAWN}"),
    }
}

/// The bank and what the section is, from an identifier [`bank_section_id`] wrote.
pub(super) fn parse_bank_section_id(id: &str) -> Option<(String, BankSection)> {
    let rest = id.strip_prefix(BANK_PREFIX)?;
    let (bank, what) = match rest.split_once('.') {
        None => (rest, BankSection::Slot(None)),
        Some((bank, UNDRAWN)) => (bank, BankSection::Undrawn),
        Some((bank, token)) => (bank, BankSection::Slot(Some(token_tag(token)?))),
    };
    super::format::valid_key(bank).then(|| (bank.to_string(), what))
}

/// A tag as a QTI identifier (an item reference's `category` is a list of them): as it is
/// when it is one of `[A-Za-z_][A-Za-z0-9_-]*`, else `_.` and its UTF-8 in hex.
pub(super) fn tag_token(tag: &str) -> String {
    let plain = tag.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        tag.to_string()
    } else {
        format!("_.{}", hex::encode(tag.as_bytes()))
    }
}

/// The tag a [`tag_token`] stands for; `None` for a token it cannot have written.
pub(super) fn token_tag(token: &str) -> Option<String> {
    match token.strip_prefix("_.") {
        Some(h) => String::from_utf8(hex::decode(h).ok()?).ok(),
        None => (!token.is_empty() && !token.contains('.')).then(|| token.to_string()),
    }
}

/// Bounds on what an import reads (see the module documentation).
pub mod limits {
    /// The package or document as sent.
    pub const MAX_INPUT: usize = 20 << 20;
    /// Entries in the zip's central directory.
    pub const MAX_ENTRIES: usize = 2_000;
    /// One XML file, unpacked.
    pub const MAX_FILE: u64 = 4 << 20;
    /// All XML files together, unpacked.
    pub const MAX_TOTAL: u64 = 64 << 20;
    /// Unpacked ÷ packed size of an entry larger than [`RATIO_FLOOR`] bytes. Deflated XML
    /// compresses 5–20×; a zip bomb, thousands of times.
    pub const MAX_RATIO: u64 = 200;
    pub const RATIO_FLOOR: u64 = 64 << 10;
    /// Nodes of one document (roxmltree's own limit).
    pub const MAX_NODES: u32 = 200_000;
    /// Nodes of all the documents of a package together: every document is held parsed at
    /// once, and a node costs about 100 bytes, so this bounds the parsed trees to ~100 MB.
    pub const MAX_TOTAL_NODES: usize = 1_000_000;
    /// Element nesting of one document.
    pub const MAX_DEPTH: usize = 100;
    /// Items in one package.
    pub const MAX_ITEMS: usize = 5_000;
}

#[derive(Debug, Clone)]
pub enum QtiError {
    /// Not a package or document quizd can read, or over a bound: nothing was imported.
    Refused(String),
    /// Read, but the quiz it makes does not pass the content checks (all of them, as for a
    /// TOML quiz); nothing was imported.
    Invalid {
        errors: Vec<ContentError>,
        report: ImportReport,
    },
}

impl std::fmt::Display for QtiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused(m) => write!(f, "{m}"),
            Self::Invalid { errors, .. } => {
                write!(f, "{}", super::ContentErrors(errors.clone()))
            }
        }
    }
}

impl std::error::Error for QtiError {}

/// What an import did, item by item.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ImportReport {
    /// `QTI 3.0`, `QTI 2.1` or `QTI 2.2` (the namespace of the first item read).
    pub format: String,
    pub imported: Vec<ImportedItem>,
    /// Items not imported, each with why (an interaction quizd has no kind for is named).
    pub skipped: Vec<SkippedItem>,
    /// What was imported differently from the package, or left out of an imported item.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportedItem {
    /// The item's `identifier`.
    pub item: String,
    /// The question's key in quizd.
    pub key: String,
    pub kind: QuestionKind,
    /// The locales it was found in, source first.
    pub locales: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkippedItem {
    pub item: String,
    pub file: String,
    /// The interaction that quizd cannot import (`hotspotInteraction`, …), if that is why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interaction: Option<String>,
    pub reason: String,
}

/// An import: the quiz's files as the content compiler reads them (so a caller may show or
/// store them), the content they compile to, and the report.
#[derive(Debug, Clone)]
pub struct QtiImport {
    pub source: QuizSource,
    pub content: QuizContent,
    pub report: ImportReport,
}

#[cfg(test)]
mod tests;
