//! The worst questions documents an import can be sent, read as `POST /v1/quizzes/import`
//! reads them (the reader, then the content compiler), one case per process so that its peak
//! memory is its own: each case is built in memory at the body limit (1 MiB), then read.
//! Prints the case, the outcome, the time, and the process's peak resident memory.
//!
//! `for c in deep-xml laughs-xml attributes-xml questions-xml open-gift escapes-gift
//!   options-gift questions-gift randoms-xml banks-xml answers-qti12 items-qti12; do
//!   cargo run -q --example exchange_worst -- $c; done`

use std::time::Instant;

use quizd::content::Visibility;
use quizd::content::interchange::{Format, Settings};
use quizd::quizzes::authoring::AUTHORING_BODY_LIMIT;

/// The process's peak resident memory so far (VmHWM), in MiB.
fn peak_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// `unit` repeated between `head` and `tail` up to the body limit.
fn fill(head: &str, unit: &str, tail: &str) -> String {
    let n = (AUTHORING_BODY_LIMIT - head.len() - tail.len()) / unit.len();
    format!("{head}{}{tail}", unit.repeat(n))
}

/// A valid Moodle true/false question.
const TF: &str = "<question type=\"truefalse\"><name><text>q</text></name><questiontext><text>T?</text></questiontext><generalfeedback><text>E</text></generalfeedback><answer fraction=\"100\"><text>true</text></answer><answer fraction=\"0\"><text>false</text></answer></question>";

fn main() {
    let case = std::env::args().nth(1).unwrap_or_else(|| "deep-xml".into());
    let (format, text) = match case.as_str() {
        // 150 000 nested elements.
        "deep-xml" => {
            let n = (AUTHORING_BODY_LIMIT - 20) / 7;
            (
                Format::MoodleXml,
                format!("<quiz>{}{}</quiz>", "<a>".repeat(n), "</a>".repeat(n)),
            )
        }
        // A billion laughs: ten levels of ten, then the rest of the megabyte in references.
        "laughs-xml" => {
            let mut dtd =
                String::from("<?xml version=\"1.0\"?><!DOCTYPE quiz [<!ENTITY l0 \"lol\">");
            for i in 1..10 {
                dtd.push_str(&format!(
                    "<!ENTITY l{i} \"{}\">",
                    format!("&l{};", i - 1).repeat(10)
                ));
            }
            dtd.push_str("]><quiz>");
            (Format::MoodleXml, fill(&dtd, "&l9;", "</quiz>"))
        }
        // One element with 100 000 attributes.
        "attributes-xml" => (Format::MoodleXml, {
            let n = (AUTHORING_BODY_LIMIT - 40) / 11;
            let attrs: String = (0..n).map(|i| format!(" a{i:06}=\"\"")).collect();
            format!("<quiz><question{attrs}/></quiz>")
        }),
        // As many valid questions as fit, more than the 2 000 allowed.
        "questions-xml" => (
            Format::MoodleXml,
            fill(
                "<quiz>",
                "<question type=\"truefalse\"><name><text>q</text></name><questiontext><text>T?</text></questiontext><generalfeedback><text>E</text></generalfeedback><answer fraction=\"100\"><text>true</text></answer><answer fraction=\"0\"><text>false</text></answer></question>",
                "</quiz>",
            ),
        ),
        // An answer block that never closes.
        "open-gift" => (Format::Gift, fill("::q::Open ", "{", "")),
        // One question whose text is nothing but escapes.
        "escapes-gift" => (
            Format::Gift,
            fill("::q::", "\\{\\}\\~\\=\\#\\:", "{T####E}"),
        ),
        // One question with 200 000 options.
        "options-gift" => (Format::Gift, fill("::q::Many{=a", " ~b", "####E}")),
        // 2 000 questions, each valid, at the question limit (the compiler's whole cost).
        "questions-gift" => (
            Format::Gift,
            (0..2000)
                .map(|i| {
                    format!(
                        "::q{i}::Is {i} even?{{{}####Parity.}}\n\n",
                        if i % 2 == 0 { "T" } else { "F" }
                    )
                })
                .collect(),
        ),
        // One category with one question, then random questions to the limit (2 000).
        "randoms-xml" => (
            Format::MoodleXml,
            fill(
                &format!(
                    "<quiz><question type=\"category\"><category><text>$course$/top/a</text></category></question>{}",
                    TF
                ),
                "<question type=\"random\"><questiontext><text>1</text></questiontext></question>",
                "</quiz>",
            ),
        ),
        // As many categories as fit, each a bank of one question drawn by one random question
        // (with subcategories): every bank, slot and subcategory check at its largest.
        "banks-xml" => {
            let unit = |i: usize| {
                format!(
                    "<question type=\"category\"><category><text>$course$/top/c{i}</text></category></question>{}<question type=\"random\"><questiontext><text>1</text></questiontext></question>",
                    TF.replace("<text>q</text>", &format!("<text>q{i}</text>"))
                )
            };
            let mut text = String::from("<quiz>");
            let mut i = 0;
            while text.len() + unit(i).len() + 7 <= AUTHORING_BODY_LIMIT && i < 1999 {
                text.push_str(&unit(i));
                i += 1;
            }
            text.push_str("</quiz>");
            (Format::MoodleXml, text)
        }
        // A Canvas short answer accepting as many distinct answers as fit in one condition.
        "answers-qti12" => (Format::Qti12, {
            let head = "<questestinterop><item ident=\"i\"><itemmetadata><qtimetadata><qtimetadatafield><fieldlabel>question_type</fieldlabel><fieldentry>short_answer_question</fieldentry></qtimetadatafield></qtimetadata></itemmetadata><presentation><material><mattext>Q</mattext></material></presentation><resprocessing><respcondition><conditionvar>";
            let tail = "</conditionvar><setvar>100</setvar></respcondition></resprocessing></item></questestinterop>";
            let n = (AUTHORING_BODY_LIMIT - head.len() - tail.len()) / 29;
            let answers: String = (0..n)
                .map(|i| format!("<varequal>a{i:06}</varequal>"))
                .collect();
            format!("{head}{answers}{tail}")
        }),
        // As many Canvas true/false items as fit, more than the 2 000 allowed.
        "items-qti12" => (
            Format::Qti12,
            fill(
                "<questestinterop>",
                "<item ident=\"i\"><itemmetadata><qtimetadata><qtimetadatafield><fieldlabel>question_type</fieldlabel><fieldentry>true_false_question</fieldentry></qtimetadatafield></qtimetadata></itemmetadata><presentation><material><mattext>Q</mattext></material><response_lid><render_choice><response_label ident=\"t\"><material><mattext>True</mattext></material></response_label><response_label ident=\"f\"><material><mattext>False</mattext></material></response_label></render_choice></response_lid></presentation><resprocessing><respcondition><conditionvar><varequal>t</varequal></conditionvar><setvar>100</setvar></respcondition></resprocessing><itemfeedback ident=\"general_fb\"><material><mattext>E</mattext></material></itemfeedback></item>",
                "</questestinterop>",
            ),
        ),
        other => panic!("unknown case {other}"),
    };
    assert!(text.len() <= AUTHORING_BODY_LIMIT);
    let settings = Settings {
        slug: "worst".into(),
        title: "Worst".into(),
        source_locale: "en".into(),
        visibility: Visibility::Private,
        intro: None,
        practice: None,
        explanation_default: None,
    };
    let before = peak_mib();
    let start = Instant::now();
    let outcome = match quizd::content::interchange::read_upload(format, text.as_bytes(), &settings)
    {
        Ok((content, report)) => format!(
            "imported {} questions, skipped {}",
            content.questions.len(),
            report.skipped.len()
        ),
        Err(e) => {
            let detail = quizd::quizzes::interchange::problem(e).detail;
            format!(
                "refused: {}",
                detail
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(100)
                    .collect::<String>()
            )
        }
    };
    let elapsed = start.elapsed();
    println!(
        "{case}: {} bytes, {:.1} ms, peak {:.1} MiB (input built: {:.1} MiB) — {outcome}",
        text.len(),
        elapsed.as_secs_f64() * 1000.0,
        peak_mib(),
        before
    );
}
