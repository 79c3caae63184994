use std::collections::BTreeMap;
use std::io::{Cursor, Write};
use std::path::Path;

use proptest::prelude::*;

use super::import::{
    BankToml, EntryToml, OptionToml, OptionTranslationToml, QuestionToml, QuestionTranslationToml,
    QuizToml, TranslationToml, kind_name, to_toml,
};
use super::*;
use crate::{QuizSource, SourceFile, Visibility, compile, load_dir};

/// What a QTI round trip keeps: everything but what the package does not carry (see the
/// module documentation).
fn carried(mut c: QuizContent) -> QuizContent {
    // A title is an attribute, with no language of its own: a translated title equal to the
    // source's reads back as untranslated (`export::test`).
    let source_title = c.title.get(&c.source_locale).cloned();
    let source = c.source_locale.clone();
    c.title
        .retain(|locale, t| *locale == source || Some(&*t) != source_title.as_ref());
    c.visibility = Visibility::default();
    c.practice = None;
    c.translated_from.clear();
    c.keep_stale_translations = false;
    // Images are not in the package (each item's comment says so).
    for q in &mut c.questions {
        q.image = None;
    }
    c
}

fn seed(name: &str) -> QuizContent {
    let mut quizzes =
        load_dir(&crate::repo_root().join("content").join(name)).expect("the seed quiz loads");
    quizzes.remove(0)
}

fn round_trip(content: &QuizContent) -> QtiImport {
    let package = export_qti3(content).expect("exports");
    match import_qti(&package) {
        Ok(i) => i,
        Err(e) => panic!("the export does not import: {e}"),
    }
}

#[test]
fn the_data_parallelism_quiz_comes_back_the_same_in_english_bengali_and_indonesian() {
    let original = seed("data-parallelism");
    assert_eq!(original.locales, ["en", "bn", "id"]);
    let back = round_trip(&original);
    assert_eq!(back.content, carried(original.clone()));
    assert_eq!(back.report.format, "QTI 3.0");
    assert!(back.report.skipped.is_empty(), "{:?}", back.report.skipped);
    assert!(back.report.notes.is_empty(), "{:?}", back.report.notes);
    assert_eq!(back.report.imported.len(), original.questions.len());
    assert!(
        back.report
            .imported
            .iter()
            .all(|i| i.locales == ["en", "bn", "id"])
    );
}

#[test]
fn every_question_kind_comes_back_with_its_key_points_and_feedback() {
    let original = seed("kinds-sampler");
    let kinds: Vec<QuestionKind> = original.questions.iter().map(|q| q.kind).collect();
    for (_, k) in QuestionKind::ALL {
        assert!(kinds.contains(&k), "the sampler has every kind");
    }
    let back = round_trip(&original);
    assert_eq!(back.content, carried(original));
}

#[test]
fn no_export_drops_an_image_silently_each_says_which_question_had_one() {
    let original = seed("kinds-sampler");
    let files = package_files(&original).unwrap();
    let item = |locale: &str| {
        let (_, bytes) = (files.iter())
            .find(|(n, _)| *n == format!("items/collective-library/{locale}.xml"))
            .unwrap();
        String::from_utf8(bytes.clone()).unwrap()
    };
    assert!(item("en").contains(
        "<!-- quizd: this question's image is not in this package (its alt text: Four GPUs"
    ));
    assert!(item("id").contains("(its alt text: Empat GPU"));
    let note = "Not in this export: the images of questions 'collective-library'";
    assert!(crate::moodle_xml::write(&original, 1).contains(note));
    assert!(crate::gift::write(&original, 1).contains(&format!("// quizd: {note}")));
    let plain = seed("data-parallelism");
    assert!(!crate::gift::write(&plain, 1).contains("Not in this export"));
}

#[test]
fn a_quiz_with_banks_comes_back_with_its_banks_slots_tags_and_undrawn_questions() {
    let original = seed("collectives");
    // Bank `numbers` is drawn by tag, and its question tagged `names` by no slot.
    assert!(
        original
            .layout
            .iter()
            .any(|s| matches!(s, crate::Slot::Draw { tag: Some(_), .. }))
    );
    assert_eq!(original.locales, ["en", "bn", "id"]);
    let back = round_trip(&original);
    assert!(back.report.notes.is_empty(), "{:?}", back.report.notes);
    assert_eq!(back.content, carried(original.clone()));

    // The test: the fixed question's section, then a section per slot that selects without
    // replacement, then the bank's undrawn questions, selecting none.
    let files = package_files(&original).unwrap();
    let test = files.iter().find(|(n, _)| n == "tests/en.xml").unwrap();
    let doc = roxmltree::Document::parse(std::str::from_utf8(&test.1).unwrap()).unwrap();
    let part = doc
        .descendants()
        .find(|n| n.has_tag_name((ASI_NS, "qti-test-part")))
        .unwrap();
    let sections: Vec<(String, Option<String>, Vec<String>)> = part
        .children()
        .filter(|n| n.is_element())
        .map(|s| {
            assert!(s.has_tag_name((ASI_NS, "qti-assessment-section")));
            let selection = s
                .children()
                .find(|c| c.has_tag_name((ASI_NS, "qti-selection")));
            if let Some(sel) = selection {
                assert_eq!(sel.attribute("with-replacement"), Some("false"));
            }
            let refs = s
                .children()
                .filter(|c| c.has_tag_name((ASI_NS, "qti-assessment-item-ref")))
                .map(|r| {
                    let id = r.attribute("identifier").unwrap();
                    match r.attribute("category") {
                        Some(c) => format!("{id} [{c}]"),
                        None => id.to_string(),
                    }
                })
                .collect();
            (
                s.attribute("identifier").unwrap().to_string(),
                selection
                    .and_then(|s| s.attribute("select"))
                    .map(str::to_string),
                refs,
            )
        })
        .collect();
    let s = |id: &str, select: Option<&str>, refs: &[&str]| {
        (
            id.to_string(),
            select.map(str::to_string),
            refs.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        sections,
        [
            s("S_collectives", None, &["Q_why-collectives"]),
            s(
                "B_collectives",
                Some("2"),
                &[
                    "Q_all-reduce-result",
                    "Q_broadcast-purpose",
                    "Q_reduce-scatter",
                    "Q_all-gather",
                    "Q_ring-steps"
                ]
            ),
            s(
                "B_numbers.sizes",
                Some("1"),
                &["Q_ring-volume [sizes]", "Q_global-batch [sizes]"]
            ),
            s("B_numbers..undrawn", Some("0"), &["Q_nccl-name [names]"]),
        ]
    );
}

#[test]
fn tags_that_are_not_qti_identifiers_are_written_so_that_they_read_back() {
    for tag in ["sizes", "_x", "Größe", "two words", "1st", "a.b", "_.", ""] {
        let token = tag_token(tag);
        assert_eq!(token_tag(&token).as_deref(), Some(tag), "{tag} as {token}");
        let id = bank_section_id("bank-1", &BankSection::Slot(Some(tag.into())));
        assert_eq!(
            parse_bank_section_id(&id),
            Some(("bank-1".into(), BankSection::Slot(Some(tag.into())))),
            "{id}"
        );
    }
    assert_eq!(
        parse_bank_section_id("B_b..undrawn"),
        Some(("b".into(), BankSection::Undrawn))
    );
    assert_eq!(parse_bank_section_id("S_b"), None);
}

/// A QTI 3.0 test written by hand as another tool would: a section drawing 2 of 3 items, a
/// section that draws among sub-sections, and one that draws with replacement. The first is a
/// bank and a slot; the others cannot be kept and are reported, their items fixed.
#[test]
fn another_tools_selection_is_a_bank_and_shapes_quizd_cannot_keep_are_reported() {
    let item = |id: &str| {
        format!(
            r#"<qti-assessment-item xmlns="http://www.imsglobal.org/xsd/imsqtiasi_v3p0" identifier="{id}" title="{id}" adaptive="false" time-dependent="false" xml:lang="en">
<qti-response-declaration identifier="RESPONSE" cardinality="single" base-type="identifier"><qti-correct-response><qti-value>A</qti-value></qti-correct-response></qti-response-declaration>
<qti-item-body><qti-choice-interaction response-identifier="RESPONSE" max-choices="1"><qti-prompt>Pick {id}</qti-prompt><qti-simple-choice identifier="A">yes</qti-simple-choice><qti-simple-choice identifier="B">no</qti-simple-choice></qti-choice-interaction></qti-item-body>
<qti-modal-feedback outcome-identifier="FEEDBACK" identifier="solution" show-hide="show"><qti-content-body><p>Because.</p></qti-content-body></qti-modal-feedback>
</qti-assessment-item>"#
        )
    };
    let r = |id: &str| {
        format!(r#"<qti-assessment-item-ref identifier="{id}" href="{id}.xml" category="easy"/>"#)
    };
    let test = format!(
        r#"<qti-assessment-test xmlns="http://www.imsglobal.org/xsd/imsqtiasi_v3p0" identifier="exam" title="Exam" xml:lang="en">
<qti-test-part identifier="p" navigation-mode="linear" submission-mode="individual">
<qti-assessment-section identifier="intro" title="Intro" visible="true">{}</qti-assessment-section>
<qti-assessment-section identifier="Pool_A" title="Pool" visible="false"><qti-selection select="2" with-replacement="false"/>{}{}{}</qti-assessment-section>
<qti-assessment-section identifier="nested" title="N" visible="true"><qti-selection select="1"/>
<qti-assessment-section identifier="n1" title="n1" visible="true">{}</qti-assessment-section>
<qti-assessment-section identifier="n2" title="n2" visible="true">{}</qti-assessment-section></qti-assessment-section>
<qti-assessment-section identifier="again" title="R" visible="true"><qti-selection select="1" with-replacement="true"/>{}</qti-assessment-section>
</qti-test-part></qti-assessment-test>"#,
        r("fixed"),
        r("p1"),
        r("p2"),
        r("p3"),
        r("n1"),
        r("n2"),
        r("rep")
    );
    let names = ["fixed", "p1", "p2", "p3", "n1", "n2", "rep"];
    let items: Vec<(String, Vec<u8>)> = names
        .iter()
        .map(|n| (format!("{n}.xml"), item(n).into_bytes()))
        .collect();
    let mut files: Vec<(&str, &[u8])> = vec![("test.xml", test.as_bytes())];
    files.extend(items.iter().map(|(n, b)| (n.as_str(), b.as_slice())));
    let import = import_qti(&zip_of(&files)).unwrap();
    let c = &import.content;
    assert_eq!(c.banks.len(), 1);
    assert_eq!(c.banks[0].key, "pool_a");
    assert_eq!(c.banks[0].questions, ["p1", "p2", "p3"]);
    assert_eq!(c.question("p1").unwrap().tags, ["easy"]);
    let keys = |slot: &crate::Slot| match slot {
        crate::Slot::Fixed { question } => question.clone(),
        crate::Slot::Draw { bank, draw, .. } => format!("{bank}×{draw}"),
    };
    assert_eq!(
        c.layout.iter().map(keys).collect::<Vec<_>>(),
        ["fixed", "pool_a×2", "n1", "n2", "rep"]
    );
    let notes = import.report.notes.join("\n");
    assert!(
        notes.contains("section 'nested'") && notes.contains("among sections"),
        "{notes}"
    );
    assert!(
        notes.contains("section 'again'") && notes.contains("with replacement"),
        "{notes}"
    );
}

#[test]
fn a_second_item_with_the_same_identifier_and_language_is_reported_not_merged() {
    let item = |prompt: &str| {
        format!(
            r#"<assessmentItem xmlns="http://www.imsglobal.org/xsd/imsqti_v2p1" identifier="twin" title="Twin" adaptive="false" timeDependent="false">
  <responseDeclaration identifier="RESPONSE" cardinality="single" baseType="string"><correctResponse><value>x</value></correctResponse></responseDeclaration>
  <itemBody><p>{prompt} <textEntryInteraction responseIdentifier="RESPONSE"/></p></itemBody>
</assessmentItem>"#
        )
    };
    let (a, b) = (item("First"), item("Second"));
    let import = import_qti(&zip_of(&[("a.xml", a.as_bytes()), ("b.xml", b.as_bytes())])).unwrap();
    assert_eq!(import.content.questions.len(), 1);
    assert_eq!(import.content.questions[0].prompt["en"], "First");
    assert_eq!(import.report.skipped.len(), 1);
    assert_eq!(import.report.skipped[0].file, "b.xml");
    assert!(
        import.report.skipped[0]
            .reason
            .contains("identifier 'twin'")
    );
}

#[test]
fn a_text_left_untranslated_stays_untranslated_after_the_round_trip() {
    let quiz = "slug = \"p\"\ntitle = \"Partial\"\nintro = \"Hi\"\n[[questions]]\nkey = \"q1\"\n\
                kind = \"single\"\nprompt = \"Pick <one> & only \\\"one\\\"\"\n\
                explanation = \"Because\\nof\\ttabs\\r\\nand lines\"\n[[questions.options]]\n\
                key = \"1a\"\ntext = \"A\"\ncorrect = true\n[[questions.options]]\nkey = \"b\"\n\
                text = \"B\"\nfeedback = \"Not B\"\n";
    let bn =
        "[questions.q1]\nprompt = \"একটি বাছুন\"\n[questions.q1.options.b]\nfeedback = \"খ নয়\"\n";
    let source = QuizSource {
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
    };
    let original = compile(&source).unwrap();
    let q = &original.questions[0];
    assert!(!q.explanation.contains_key("bn") && !original.title.contains_key("bn"));
    let back = round_trip(&original);
    assert_eq!(back.content, carried(original));
}

#[test]
fn the_package_has_a_manifest_a_test_per_locale_and_an_item_per_question_and_locale() {
    let original = seed("data-parallelism");
    let package = export_qti3(&original).unwrap();
    let zip = zip::ZipArchive::new(Cursor::new(package)).unwrap();
    let names: Vec<String> = zip.file_names().map(|n| n.unwrap().to_string()).collect();
    assert!(names.contains(&"imsmanifest.xml".to_string()));
    for l in ["en", "bn", "id"] {
        assert!(names.contains(&format!("tests/{l}.xml")));
        assert!(names.contains(&format!("items/replica-contents/{l}.xml")));
    }
    assert_eq!(names.len(), 1 + 3 + 3 * original.questions.len());
    let files = package_files(&original).unwrap();
    let bn = &files
        .iter()
        .find(|(n, _)| n == "items/replica-contents/bn.xml")
        .unwrap()
        .1;
    let bn = std::str::from_utf8(bn).unwrap();
    assert!(bn.contains("xml:lang=\"bn\""));
    assert!(bn.contains("<qti-choice-interaction"));
    assert!(bn.contains("স্ট্যান্ডার্ড ডেটা সমান্তরালে"));
}

fn fixture(name: &str) -> Vec<u8> {
    zip_dir(&crate::repo_root().join("tests/qti/fixtures").join(name))
}

fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in files {
        zip.start_file(*name, options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// `handwritten-qti21/` is a QTI 2.1 package written by hand from the specification, as another
/// tool would: a choice item with inline and modal feedback and an image, a numeric text entry
/// with a tolerance, a short text mapped case-insensitively, and a hotspot quizd has no kind
/// for; `handwritten-qti30/` is the same package upgraded to QTI 3.0 by citolab-qti-convert.
#[test]
fn a_hand_written_qti_2_1_package_and_its_qti_3_0_upgrade_import_alike_and_report_the_hotspot() {
    for (name, format) in [
        ("handwritten-qti21", "QTI 2.1"),
        ("handwritten-qti30", "QTI 3.0"),
    ] {
        let import = import_qti(&fixture(name)).unwrap();
        assert_eq!(import.report.format, format);
        check_handwritten(&import);
    }
}

fn check_handwritten(import: &QtiImport) {
    let r = &import.report;
    assert_eq!(
        r.skipped,
        [SkippedItem {
            item: "hot-1".into(),
            file: "hotspot.xml".into(),
            interaction: Some("hotspotInteraction".into()),
            reason: "hotspotInteraction has no quizd question kind (quizd imports choiceInteraction and textEntryInteraction)".into(),
        }]
    );
    let c = &import.content;
    // The manifest's order, not the zip's.
    let keys: Vec<&str> = c.questions.iter().map(|q| q.key.as_str()).collect();
    assert_eq!(keys, ["choice-1", "num-1", "text-1"]);
    let choice = &c.questions[0];
    assert_eq!(choice.kind, QuestionKind::Single);
    assert_eq!(choice.prompt["en"], "Which city is the capital of France?");
    assert_eq!(
        choice.explanation["en"],
        "Paris has been the capital since 987."
    );
    let keys: Vec<(&str, bool)> = choice
        .options
        .iter()
        .map(|o| (o.key.as_str(), o.correct))
        .collect();
    assert_eq!(
        keys,
        [("choicea", false), ("choiceb", true), ("choicec", false)]
    );
    assert_eq!(choice.options[0].text["en"], "Lyon");
    assert_eq!(
        choice.options[0].feedback.as_ref().unwrap()["en"],
        "Lyon is the third city."
    );
    let num = &c.questions[1];
    assert_eq!(num.kind, QuestionKind::Numeric);
    assert_eq!(num.points, 2.0);
    let key = num.numeric.as_ref().unwrap();
    assert_eq!((key.answer, key.tolerance), (9.81, 0.005));
    assert_eq!(num.prompt["en"], "Give g in m/s² to two decimals:");
    let text = &c.questions[2];
    let key = text.short_text.as_ref().unwrap();
    assert_eq!(key.accepted, ["grey", "gray"]);
    assert!(!key.case_sensitive);
    assert_eq!(text.explanation["en"], "Black and white make grey.");
    // The numeric item has no feedback: its explanation says the answer, and the report says so.
    assert_eq!(num.explanation["en"], "9.81");
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("num-1: no explanation"))
    );
    let img =
        "choice-1: its body has 1 element(s) quizd's plain texts cannot carry (<img>…), left out";
    assert!(r.notes.iter().any(|n| n == img), "{:?}", r.notes);
}

#[test]
fn a_single_qti_3_item_without_a_package_is_a_one_question_quiz() {
    let item = r#"<?xml version="1.0" encoding="UTF-8"?>
<qti-assessment-item xmlns="http://www.imsglobal.org/xsd/imsqtiasi_v3p0" identifier="q-multi" title="Primes" adaptive="false" time-dependent="false" xml:lang="id">
  <qti-response-declaration identifier="RESPONSE" cardinality="multiple" base-type="identifier">
    <qti-correct-response><qti-value>A</qti-value><qti-value>C</qti-value></qti-correct-response>
  </qti-response-declaration>
  <qti-outcome-declaration identifier="SCORE" cardinality="single" base-type="float"/>
  <qti-item-body>
    <qti-choice-interaction response-identifier="RESPONSE" max-choices="0">
      <qti-prompt>Pilih bilangan prima</qti-prompt>
      <qti-simple-choice identifier="A">2</qti-simple-choice>
      <qti-simple-choice identifier="B">4</qti-simple-choice>
      <qti-simple-choice identifier="C">5</qti-simple-choice>
    </qti-choice-interaction>
  </qti-item-body>
  <qti-response-processing template="https://purl.imsglobal.org/spec/qti/v3p0/rptemplates/match_correct.xml"/>
  <qti-modal-feedback outcome-identifier="FEEDBACK" identifier="correct" show-hide="show"><qti-content-body><p>2 dan 5 prima.</p></qti-content-body></qti-modal-feedback>
</qti-assessment-item>"#;
    let import = import_qti(item.as_bytes()).unwrap();
    let c = &import.content;
    assert_eq!(c.source_locale, "id");
    assert_eq!(c.slug, "q-multi");
    assert_eq!(c.title["id"], "Primes");
    let q = &c.questions[0];
    assert_eq!(q.kind, QuestionKind::Multiple);
    assert_eq!(q.prompt["id"], "Pilih bilangan prima");
    assert_eq!(q.explanation["id"], "2 dan 5 prima.");
    let correct: Vec<&str> = q
        .options
        .iter()
        .filter(|o| o.correct)
        .map(|o| o.key.as_str())
        .collect();
    assert_eq!(correct, ["a", "c"]);
}

#[test]
fn an_item_that_fails_the_content_checks_is_refused_with_the_compilers_messages() {
    // A single-choice item whose key names two choices: quizd's check, not the reader's.
    let item = r#"<qti-assessment-item xmlns="http://www.imsglobal.org/xsd/imsqtiasi_v3p0" identifier="bad" title="Bad" adaptive="false" time-dependent="false">
  <qti-response-declaration identifier="RESPONSE" cardinality="single" base-type="identifier">
    <qti-correct-response><qti-value>A</qti-value><qti-value>B</qti-value></qti-correct-response>
  </qti-response-declaration>
  <qti-item-body><qti-choice-interaction response-identifier="RESPONSE" max-choices="1">
    <qti-prompt>Two keys?</qti-prompt>
    <qti-simple-choice identifier="A">a</qti-simple-choice><qti-simple-choice identifier="B">b</qti-simple-choice>
  </qti-choice-interaction></qti-item-body>
  <qti-modal-feedback outcome-identifier="FEEDBACK" identifier="EXPLANATION" show-hide="show">x</qti-modal-feedback>
</qti-assessment-item>"#;
    match import_qti(item.as_bytes()) {
        Err(QtiError::Invalid { errors, report }) => {
            assert_eq!(report.imported.len(), 1);
            assert!(
                errors[0]
                    .message
                    .contains("needs exactly one correct option, found 2"),
                "{errors:?}"
            );
        }
        other => panic!("expected the content checks to refuse it: {other:?}"),
    }
}

fn refused(bytes: &[u8]) -> String {
    match import_qti(bytes) {
        Err(QtiError::Refused(m)) => m,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

const LAUGHS: &str = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]>
<qti-assessment-item identifier="x" title="&lol9;"/>"#;

const EXTERNAL: &str = r#"<?xml version="1.0"?>
<!DOCTYPE item [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<assessmentItem xmlns="http://www.imsglobal.org/xsd/imsqti_v2p1" identifier="x" title="&secret;"/>"#;

#[test]
fn a_doctype_is_refused_before_any_entity_is_expanded_or_fetched() {
    for doc in [LAUGHS, EXTERNAL] {
        let m = refused(doc.as_bytes());
        assert!(m.contains("has a DOCTYPE"), "{m}");
        // Inside a package too.
        let m = refused(&zip_of(&[("item.xml", doc.as_bytes())]));
        assert!(m.contains("item.xml has a DOCTYPE"), "{m}");
    }
}

pub(super) fn deep_xml(depth: usize) -> Vec<u8> {
    let mut s = String::from("<assessmentItem identifier=\"x\"><itemBody>");
    s.push_str(&"<div>".repeat(depth));
    s.push_str(&"</div>".repeat(depth));
    s.push_str("</itemBody></assessmentItem>");
    s.into_bytes()
}

pub(super) fn bomb(unpacked: usize) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(unpacked > u32::MAX as usize);
    zip.start_file("item.xml", options).unwrap();
    let chunk = vec![b' '; 1 << 20];
    let mut left = unpacked;
    while left > 0 {
        let n = left.min(chunk.len());
        zip.write_all(&chunk[..n]).unwrap();
        left -= n;
    }
    zip.finish().unwrap().into_inner()
}

/// A bomb whose headers (local and central) claim `claimed` unpacked bytes.
pub(super) fn lying_bomb(unpacked: usize, claimed: u32) -> Vec<u8> {
    let mut zip = bomb(unpacked);
    for (signature, offset) in [(0x04034b50u32, 22), (0x02014b50, 24)] {
        let sig = signature.to_le_bytes();
        let at = zip.windows(4).rposition(|w| w == sig).unwrap();
        zip[at + offset..at + offset + 4].copy_from_slice(&claimed.to_le_bytes());
    }
    zip
}

pub(super) fn many_entries(n: usize) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for i in 0..n {
        zip.start_file(format!("e{i}.xml"), options).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

#[test]
fn deep_nesting_too_many_entries_and_a_zip_bomb_are_refused() {
    let m = refused(&deep_xml(150));
    assert!(m.contains("nests elements more than 100 deep"), "{m}");
    let m = refused(&many_entries(limits::MAX_ENTRIES + 1));
    assert!(m.contains("entries; at most 2000 are read"), "{m}");
    // 2 MiB of spaces deflate to a few kilobytes: far beyond any real XML's ratio.
    let m = refused(&bomb(2 << 20));
    assert!(m.contains("is compressed"), "{m}");
    // The headers say 1000 bytes: the reader stops at the limit whatever they say.
    let m = refused(&lying_bomb(8 << 20, 1000));
    assert!(m.contains("item.xml"), "{m}");
    let m = refused(&vec![b'<'; limits::MAX_INPUT + 1]);
    assert!(m.contains("at most 20971520 are read"), "{m}");
}

#[test]
fn broken_and_foreign_inputs_are_refused_with_what_is_wrong() {
    let package = export_qti3(&seed("kinds-sampler")).unwrap();
    let m = refused(&package[..package.len() / 2]);
    assert!(m.starts_with("not a readable zip package"), "{m}");
    assert!(refused(b"\xff\xfe<x/>").contains("neither a zip package nor UTF-8 XML"));
    assert!(refused(b"<questestinterop/>").contains("QTI 1.2"));
    assert!(refused(b"<html>").contains("not well-formed XML"));
    assert!(refused(b"<html/>").starts_with("no QTI assessment item found"));
}

/// Text that XML must carry exactly: markup characters, quotes, line breaks and tabs, and
/// non-Latin scripts.
fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 <>&\"'\\n\\tঅআইঈ৫éü]{0,20}"
        .prop_map(|s| format!("T{s}"))
        .prop_filter("not blank", |s| !s.trim().is_empty())
}

fn question(i: usize) -> impl Strategy<Value = (QuestionToml, QuestionTranslationToml)> {
    (
        0usize..5,
        1u32..8,
        text(),
        text(),
        proptest::collection::vec((text(), proptest::option::of(text()), any::<bool>()), 2..5),
        any::<bool>(),
        (-1000.0f64..1000.0, 0.0f64..2.0),
        // Distinct: a QTI mapping has one entry per key.
        proptest::collection::btree_set("[a-z]{1,6}", 1..4),
        proptest::option::of(text()),
        (proptest::option::of(text()), proptest::option::of(text())),
    )
        .prop_map(
            move |(kind, points, prompt, explanation, opts, truth, num, accepted, wrong, tr)| {
                let kind = QuestionKind::ALL[kind].1;
                let mut q = QuestionToml {
                    key: format!("{i}q-{i}"),
                    kind: kind_name(kind),
                    points: f64::from(points) / 2.0,
                    prompt,
                    explanation,
                    answer: None,
                    tolerance: None,
                    accepted: None,
                    case_sensitive: None,
                    wrong_feedback: None,
                    options: None,
                    tags: None,
                };
                let mut t = QuestionTranslationToml {
                    prompt: tr.0,
                    explanation: tr.1,
                    ..QuestionTranslationToml::default()
                };
                match kind {
                    QuestionKind::Single | QuestionKind::Multiple => {
                        let mut options: Vec<OptionToml> = opts
                            .into_iter()
                            .enumerate()
                            .map(|(j, (text, feedback, correct))| OptionToml {
                                key: format!("{j}o"),
                                text,
                                correct: correct && kind == QuestionKind::Multiple,
                                feedback,
                            })
                            .collect();
                        options[0].correct = true;
                        for o in &options {
                            t.options.insert(
                                o.key.clone(),
                                OptionTranslationToml {
                                    text: Some(format!("অনুবাদ {}", o.text)),
                                    feedback: o.feedback.as_ref().map(|f| format!("ফ {f}")),
                                },
                            );
                        }
                        q.options = Some(options);
                    }
                    QuestionKind::TrueFalse => {
                        q.answer = Some(toml::Value::Boolean(truth));
                        q.wrong_feedback = wrong;
                    }
                    QuestionKind::Numeric => {
                        q.answer = Some(toml::Value::Float(num.0));
                        q.tolerance = Some(num.1);
                        q.wrong_feedback = wrong;
                    }
                    QuestionKind::ShortText => {
                        q.accepted = Some(accepted.into_iter().collect());
                        q.case_sensitive = Some(truth);
                        q.wrong_feedback = wrong;
                    }
                }
                if let Some(w) = &q.wrong_feedback {
                    t.wrong_feedback = Some(format!("ভুল {w}"));
                }
                (q, t)
            },
        )
}

fn quiz() -> impl Strategy<Value = QuizSource> {
    (1usize..5)
        .prop_flat_map(|n| {
            (
                (0..n).map(question).collect::<Vec<_>>(),
                text(),
                proptest::option::of(text()),
                proptest::option::of(text()),
                (0usize..4, any::<u32>(), any::<bool>()),
                Just(n),
            )
        })
        .prop_map(|(qs, title, intro, bn_title, bank, n)| {
            let (questions, translated): (Vec<_>, Vec<_>) = qs.into_iter().unzip();
            let bn = TranslationToml {
                title: bn_title,
                intro: None,
                questions: questions
                    .iter()
                    .map(|q| q.key.clone())
                    .zip(translated)
                    .collect::<BTreeMap<_, _>>(),
            };
            // The last `bank` questions in a bank (tagged; one tag not a QTI identifier),
            // drawn by one slot among the fixed questions, by tag or not.
            let (bank, draw, tagged) = bank;
            let m = bank.min(questions.len());
            let mut fixed: Vec<EntryToml> = Vec::new();
            let mut pool = Vec::new();
            for (j, mut q) in questions.into_iter().enumerate() {
                if j + m < n {
                    fixed.push(EntryToml::Question(Box::new(q)));
                } else {
                    let tag = if pool.len() % 2 == 0 {
                        "größe x"
                    } else {
                        "small"
                    };
                    q.tags = Some(vec![tag.to_string()]);
                    pool.push(q);
                }
            }
            let mut banks = Vec::new();
            if m > 0 {
                let candidates = if tagged { m.div_ceil(2) } else { m };
                let at = draw as usize % (fixed.len() + 1);
                fixed.insert(
                    at,
                    EntryToml::Slot {
                        bank: "pool".into(),
                        draw: 1 + draw % candidates as u32,
                        tag: tagged.then(|| "größe x".to_string()),
                    },
                );
                banks.push(BankToml {
                    key: "pool".into(),
                    questions: pool,
                });
            }
            let quiz = QuizToml {
                slug: "generated".into(),
                source_locale: "en".into(),
                title,
                intro,
                questions: fixed,
                banks,
            };
            let file = |name: &str, text: String| SourceFile {
                name: name.into(),
                text,
            };
            QuizSource {
                quiz: file("quiz.toml", to_toml(&quiz).unwrap()),
                translations: vec![("bn".into(), file("bn.toml", to_toml(&bn).unwrap()))],
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_quiz_exported_and_imported_again_is_the_same_quiz(source in quiz()) {
        let original = compile(&source).expect("the generated quiz is valid");
        let back = round_trip(&original);
        prop_assert_eq!(back.content, carried(original));
    }
}

/// Measures one hostile input (`QTI_HOSTILE` = bomb, entries, deep, laughs; anything else
/// measures a clean import of the seed quiz): run under `/usr/bin/time -v` for the peak
/// memory.
#[test]
#[ignore = "a measurement, run by hand"]
fn measure_a_hostile_input() {
    let which = std::env::var("QTI_HOSTILE").unwrap_or_default();
    let input = match which.as_str() {
        // 1 GiB of spaces: about 1 MiB packed.
        "bomb" => bomb(1 << 30),
        // 64 MiB of spaces whose headers claim 1000 bytes.
        "liar" => lying_bomb(64 << 20, 1000),
        "entries" => many_entries(10_000),
        // 99,000 levels: under the node limit, so the depth bound is what refuses it.
        "deep" => deep_xml(99_000),
        // 1,000,000 levels (11 MB): the node limit refuses it while parsing.
        "deeper" => deep_xml(1_000_000),
        "laughs" => LAUGHS.as_bytes().to_vec(),
        // 25 stored (uncompressed) documents of 199,000 nodes each, 20 MB in all.
        "nodes" => {
            let doc = format!("<r>{}</r>", "<a/>".repeat(99_000));
            let files: Vec<(String, Vec<u8>)> = (0..25)
                .map(|i| (format!("d{i}.xml"), doc.clone().into_bytes()))
                .collect();
            let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored);
            for (name, bytes) in &files {
                zip.start_file(name.as_str(), options).unwrap();
                zip.write_all(bytes).unwrap();
            }
            zip.finish().unwrap().into_inner()
        }
        _ => export_qti3(&seed("data-parallelism")).unwrap(),
    };
    let started = std::time::Instant::now();
    let outcome = import_qti(&input);
    let elapsed = started.elapsed();
    let what = match &outcome {
        Ok(i) => format!("imported {} questions", i.content.questions.len()),
        Err(e) => format!("refused: {e}"),
    };
    println!(
        "QTI_HOSTILE={which}: input {} bytes, import took {elapsed:?}: {what}",
        input.len()
    );
}

/// A folder's files as a zip, paths relative to it.
fn zip_dir(dir: &Path) -> Vec<u8> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, base, out);
            } else {
                let name = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                out.push((name, std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    zip_of(&refs)
}

/// The fixtures are quizd's own QTI 3.0 exports turned into QTI 2.1 packages by an
/// independent tool, `citolab-qti-convert` (PyPI; see tests/qti/fixtures/README.md): the QTI 2.1
/// reader gets back the very quiz that was exported, in every language.
#[test]
fn packages_converted_to_qti_2_1_by_an_independent_tool_import_as_the_same_quizzes() {
    let fixtures = crate::repo_root().join("tests/qti/fixtures");
    for name in ["kinds-sampler", "data-parallelism"] {
        let package = zip_dir(&fixtures.join(format!("{name}-qti21")));
        let import = match import_qti(&package) {
            Ok(i) => i,
            Err(e) => panic!("{name}: {e}"),
        };
        assert_eq!(import.report.format, "QTI 2.1");
        assert!(import.report.skipped.is_empty() && import.report.notes.is_empty());
        assert_eq!(import.content, carried(seed(name)), "{name}");
    }
}

/// QTI 1.2 (Canvas, text2qti), read through `content::interchange` as every draft format is.
mod qti_1_2 {
    use super::*;
    use crate::interchange::{Format, Refused, Report, Settings, read_upload};

    fn settings() -> Settings {
        Settings {
            slug: "canvas".into(),
            title: "Canvas".into(),
            source_locale: "en".into(),
            visibility: Visibility::Private,
            intro: None,
            practice: None,
            explanation_default: None,
        }
    }

    fn fixtures() -> std::path::PathBuf {
        crate::repo_root().join("tests/qti/fixtures")
    }

    fn import(format: Format, bytes: &[u8]) -> (QuizContent, Report) {
        match read_upload(format, bytes, &settings()) {
            Ok(r) => r,
            Err(e) => panic!("refused: {e:?}"),
        }
    }

    fn expected(questions: &str) -> Vec<crate::Question> {
        let quiz = format!("slug = \"canvas\"\ntitle = \"Canvas\"\n{questions}");
        compile(&QuizSource {
            quiz: SourceFile {
                name: "quiz.toml".into(),
                text: quiz,
            },
            translations: Vec::new(),
        })
        .unwrap()
        .questions
    }

    /// `tests/qti/fixtures/canvas-text2qti/quiz.zip` was written by text2qti 0.8.0 from
    /// `quiz.txt` beside it: every kind quizd has, an exact, a margin and a range numeric, and
    /// an essay and a file upload, which are skipped by title and ident.
    #[test]
    fn a_package_written_by_text2qti_imports_with_its_keys_points_and_feedback() {
        let zip = std::fs::read(fixtures().join("canvas-text2qti/quiz.zip")).unwrap();
        let (content, report) = import(Format::Qti3, &zip);
        assert_eq!(report.format, Format::Qti12);
        let want = expected(
            r#"
[[questions]]
key = "shards"
kind = "single"
points = 2
prompt = "How does data parallelism split the work?"
explanation = "Each worker holds a full model copy and trains on its own shard of the batch."
[[questions.options]]
key = "by-layer"
text = "By layer"
feedback = "That is pipeline parallelism."
[[questions.options]]
key = "by-batch"
text = "By batch"
correct = true
feedback = "Yes."
[[questions.options]]
key = "by-attention-head"
text = "By attention head"

[[questions]]
key = "collectives"
kind = "multiple"
prompt = "Which collectives can synchronise gradients?"
explanation = "Both reduce the gradients across workers."
[[questions.options]]
key = "all-reduce"
text = "All-reduce"
correct = true
[[questions.options]]
key = "reduce-scatter-followed-by-all-g"
text = "Reduce-scatter followed by all-gather"
correct = true
[[questions.options]]
key = "broadcast-of-one-worker-s-gradie"
text = "Broadcast of one worker’s gradients"

[[questions]]
key = "replicas"
kind = "true_false"
prompt = "In data parallelism every worker keeps a full copy of the model."
explanation = "Plain data parallelism replicates the model; sharded variants split its state."
answer = true

[[questions]]
key = "workers"
kind = "numeric"
points = 1.5
prompt = "A batch of 512 split over 8 workers gives each how many examples?"
explanation = "512 / 8 = 64."
answer = 64
tolerance = 0

[[questions]]
key = "sqrt"
kind = "numeric"
prompt = "What is the square root of 2?"
explanation = "About 1.4142."
answer = 1.4142
tolerance = 0.0001

[[questions]]
key = "cube-root"
kind = "numeric"
prompt = "What is the cube root of 2?"
explanation = "About 1.2599."
answer = 1.2599
tolerance = 0.0001

[[questions]]
key = "allreduce-name"
kind = "short_text"
prompt = "Name the collective that sums gradients and leaves the result on every worker."
explanation = "All-reduce."
accepted = ["all-reduce", "allreduce"]
"#,
        );
        assert_eq!(content.questions, want);
        let skipped: Vec<(&str, &str)> = (report.skipped.iter())
            .map(|s| (s.kind.as_str(), s.name.as_deref().unwrap()))
            .collect();
        assert_eq!(
            skipped,
            [
                ("essay_question", "essay"),
                ("file_upload_question", "upload")
            ]
        );
        assert!(
            report.skipped[0]
                .reason
                .starts_with("item text2qti_question_a3e0df70"),
            "{:?}",
            report.skipped
        );
        let notes: Vec<&str> = report.notes.iter().map(|n| n.note.as_str()).collect();
        assert!(
            notes.iter().any(|n| n.contains("the range [1.2598, 1.26]")),
            "{notes:?}"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("'Right: the batch is sharded.'")),
            "{notes:?}"
        );
        assert!(
            notes.iter().any(|n| n.contains("'Not quite.'")),
            "{notes:?}"
        );
    }

    /// Written by hand after the shape of Canvas's Classic Quizzes export (manifest,
    /// `assessment_meta.xml`, Canvas's idents and feedback names, a question group).
    #[test]
    fn a_canvas_export_keeps_its_feedback_and_reports_what_quizd_cannot_take() {
        let zip = zip_dir(&fixtures().join("canvas-handwritten"));
        let (content, report) = import(Format::Qti12, &zip);
        let want = expected(
            r#"
[[questions]]
key = "i0a1"
kind = "single"
points = 2
prompt = "Which collective leaves the sum on every rank?"
explanation = "All-reduce = reduce + broadcast."
[[questions.options]]
key = "all-reduce"
text = "All-reduce"
correct = true
[[questions.options]]
key = "reduce"
text = "Reduce"
feedback = "Reduce leaves it on the root only."
[[questions.options]]
key = "scatter"
text = "Scatter"

[[questions]]
key = "i0a2"
kind = "true_false"
prompt = "A ring all-reduce sends 2(n−1) messages per rank."
explanation = "n−1 for reduce-scatter, n−1 for all-gather."
answer = true
wrong_feedback = "Count both phases."

[[questions]]
key = "i0a3"
kind = "numeric"
points = 2
prompt = "Bandwidth term of a ring all-reduce of 1 GB over 4 ranks, in GB sent per rank?"
explanation = "2(n−1)/n × 1 GB = 1.5 GB."
answer = 1.5
tolerance = 0.05
wrong_feedback = "Use 2(n−1)/n."

[[questions]]
key = "i0a4"
kind = "short_text"
prompt = "NVIDIA’s collective library is called ____."
explanation = "NCCL, pronounced “nickel”."
accepted = ["NCCL", "nickel"]

[[questions]]
key = "i0b1"
kind = "multiple"
prompt = "Which are collectives?"
explanation = "Send is point to point."
[[questions.options]]
key = "broadcast"
text = "Broadcast"
correct = true
[[questions.options]]
key = "gather"
text = "Gather"
correct = true
[[questions.options]]
key = "send"
text = "Send"
"#,
        );
        assert_eq!(content.questions, want);
        let skipped: Vec<(&str, &str, &str)> = (report.skipped.iter())
            .map(|s| {
                (
                    s.kind.as_str(),
                    s.name.as_deref().unwrap(),
                    s.reason.as_str(),
                )
            })
            .collect();
        assert_eq!(
            skipped,
            [
                (
                    "matching_question",
                    "Match them",
                    "item i0a5: quizd has no matching_question questions"
                ),
                (
                    "text_only_question",
                    "Intro text",
                    "item i0b2: quizd has no text_only_question questions"
                ),
            ]
        );
        let notes: Vec<&str> = report.notes.iter().map(|n| n.note.as_str()).collect();
        assert!(
            notes.iter().any(|n| n.contains("'Well done.'")),
            "{notes:?}"
        );
        // The question group "Pick one" (draw 1 of a multiple answer and a text-only item,
        // which is skipped) is a bank of what was imported and a slot at its place.
        assert_eq!(
            content.banks,
            [crate::Bank {
                key: "pick-one".into(),
                questions: vec!["i0b1".into()],
            }]
        );
        assert_eq!(
            content.layout.last(),
            Some(&crate::Slot::Draw {
                bank: "pick-one".into(),
                draw: 1,
                tag: None
            })
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("assessment_meta.xml: <quiz> is not QTI 1.2")),
            "{notes:?}"
        );
    }

    /// `tests/qti/fixtures/canvas-text2qti-groups/quiz.zip` was written by text2qti 0.8.0
    /// from `quiz.txt` beside it: a fixed question, a group drawing 2 of 3 questions at 2
    /// points each, a group drawing 1 of 2 at 1 point, and a last fixed question. Each group
    /// is a bank drawn as Canvas draws it, at its place.
    #[test]
    fn question_groups_written_by_text2qti_become_banks_drawn_as_canvas_draws_them() {
        let zip = std::fs::read(fixtures().join("canvas-text2qti-groups/quiz.zip")).unwrap();
        let (content, report) = import(Format::Qti12, &zip);
        assert_eq!(report.format, Format::Qti12);
        assert!(report.skipped.is_empty(), "{:?}", report.skipped);
        let slot = |bank: &str, draw| crate::Slot::Draw {
            bank: bank.into(),
            draw,
            tag: None,
        };
        let fixed = |key: &str| crate::Slot::Fixed {
            question: key.into(),
        };
        assert_eq!(
            content.layout,
            [
                fixed("why-collectives"),
                slot("group", 2),
                slot("group-2", 1),
                fixed("closing")
            ]
        );
        let bank = |key: &str, questions: &[&str]| crate::Bank {
            key: key.into(),
            questions: questions.iter().map(|q| q.to_string()).collect(),
        };
        assert_eq!(
            content.banks,
            [
                bank(
                    "group",
                    &["all-reduce-result", "broadcast-purpose", "ring-steps"]
                ),
                bank("group-2", &["global-batch", "nccl-name"])
            ]
        );
        let points: Vec<(&str, f64)> = (content.questions.iter())
            .map(|q| (q.key.as_str(), q.points))
            .collect();
        assert_eq!(
            points,
            [
                ("why-collectives", 1.0),
                ("closing", 1.0),
                ("all-reduce-result", 2.0),
                ("broadcast-purpose", 2.0),
                ("ring-steps", 2.0),
                ("global-batch", 1.0),
                ("nccl-name", 1.0)
            ]
        );
        // Each attempt serves 1 + 2 + 1 + 1 questions, worth at most 1 + 4 + 1 + 1.
        assert_eq!(content.served_count(), 5);
        assert_eq!(content.nominal_max_score(), 7.0);
        let ring = content.question("ring-steps").unwrap();
        assert_eq!(ring.kind, crate::QuestionKind::TrueFalse);
        assert!(!ring.true_false_answer());
    }

    /// A group that draws from a Canvas question bank the export does not hold has no items:
    /// nothing is drawn, and the report says so; a group drawing more than it holds draws all.
    #[test]
    fn a_group_without_items_or_drawing_more_than_it_holds_is_noted() {
        let item = |ident: &str| {
            format!(
                r#"<item ident="{ident}" title="{ident}"><itemmetadata><qtimetadata>
<qtimetadatafield><fieldlabel>question_type</fieldlabel><fieldentry>multiple_choice_question</fieldentry></qtimetadatafield>
</qtimetadata></itemmetadata>
<presentation><material><mattext>Pick</mattext></material>
<response_lid ident="response1" rcardinality="Single"><render_choice>
<response_label ident="1"><material><mattext>Yes</mattext></material></response_label>
<response_label ident="2"><material><mattext>No</mattext></material></response_label>
</render_choice></response_lid></presentation>
<resprocessing><outcomes><decvar maxvalue="100" minvalue="0" varname="SCORE" vartype="Decimal"/></outcomes>
<respcondition continue="No"><conditionvar><varequal respident="response1">1</varequal></conditionvar><setvar action="Set" varname="SCORE">100</setvar></respcondition>
</resprocessing>
<itemfeedback ident="general_fb"><flow_mat><material><mattext>Because.</mattext></material></flow_mat></itemfeedback>
</item>"#
            )
        };
        let doc = format!(
            r#"<questestinterop xmlns="http://www.imsglobal.org/xsd/ims_qtiasiv1p2"><assessment ident="a" title="A"><section ident="root_section">
{}
<section ident="g1" title="From a bank"><selection_ordering><selection><sourcebank_ref>b1</sourcebank_ref><selection_number>2</selection_number><selection_extension><points_per_item>1</points_per_item></selection_extension></selection></selection_ordering></section>
<section ident="g2" title="Too few"><selection_ordering><selection><selection_number>3</selection_number></selection></selection_ordering>{}{}</section>
</section></assessment></questestinterop>"#,
            item("fixed"),
            item("one"),
            item("two")
        );
        let (content, report) = import(Format::Qti12, doc.as_bytes());
        assert_eq!(
            content.layout.last(),
            Some(&crate::Slot::Draw {
                bank: "too-few".into(),
                draw: 2,
                tag: None
            })
        );
        assert_eq!(content.banks.len(), 1);
        let notes: Vec<&str> = report.notes.iter().map(|n| n.note.as_str()).collect();
        assert!(
            notes
                .iter()
                .any(|n| n.contains("'From a bank' draws from a Canvas question bank")),
            "{notes:?}"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("'Too few' draws 3 questions in the source, but only 2")),
            "{notes:?}"
        );
    }

    /// A bare QTI 1.2 document is told from Moodle XML by its root, not by what the upload
    /// says it is.
    #[test]
    fn a_bare_qti_1_2_document_sent_as_moodle_xml_is_read_as_qti_1_2() {
        let dir = fixtures().join("canvas-handwritten/g3f9a2c1d");
        let xml = std::fs::read(dir.join("g3f9a2c1d.xml")).unwrap();
        let (content, report) = import(Format::MoodleXml, &xml);
        assert_eq!(report.format, Format::Qti12);
        assert_eq!(content.questions.len(), 5);
        assert!(crate::qti::is_qti12_document(
            b"\xEF\xBB\xBF<?xml version=\"1.0\"?>\n<!-- x --><questestinterop>"
        ));
        assert!(!crate::qti::is_qti12_document(
            b"<quiz><questestinterop/></quiz>"
        ));
        assert!(!crate::qti::is_qti12_document(b"<questestinteropx/>"));
    }

    fn refusal(bytes: &[u8]) -> String {
        match read_upload(Format::Qti12, bytes, &settings()) {
            Err(Refused::Malformed(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_broken_zip_an_external_entity_and_a_billion_laughs_import_nothing() {
        let zip = std::fs::read(fixtures().join("canvas-text2qti/quiz.zip")).unwrap();
        let m = refusal(&zip[..zip.len() / 2]);
        assert!(m.starts_with("not a readable zip package"), "{m}");
        let xxe = "<?xml version=\"1.0\"?>\n<!DOCTYPE questestinterop [<!ENTITY x SYSTEM \
                   \"file:///etc/passwd\">]>\n<questestinterop><item ident=\"a\" title=\"&x;\"/>\
                   </questestinterop>";
        let laughs = LAUGHS.replace("qti-assessment-item identifier=\"x\"", "questestinterop");
        for doc in [xxe.to_string(), laughs] {
            let m = refusal(doc.as_bytes());
            assert!(m.contains("has a DOCTYPE"), "{m}");
            let m = refusal(&zip_of(&[("a/a.xml", doc.as_bytes())]));
            assert!(m.contains("a/a.xml has a DOCTYPE"), "{m}");
        }
        let m = refusal(&bomb(2 << 20));
        assert!(m.contains("is compressed"), "{m}");
    }
}
