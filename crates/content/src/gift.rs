//! GIFT (Moodle's text format for questions) and Aiken (single-choice questions as text),
//! read by a small strict parser of our own (no crate reads GIFT), and GIFT written. Pure:
//! no I/O.
//!
//! GIFT read: questions separated by blank lines; `// comments` (whole lines);
//! `$CATEGORY: path` (reported, not made a bank); `::title::` (the question's key when it is
//! one, else made into one); `[html]`/`[plain]`/`[markdown]`/`[moodle]`; the escapes
//! `\~ \= \# \{ \} \: \\` and `\n`. Answers: `{T}` `{F}` (`{TRUE#wrong#right}`), `{=a ~b}`
//! single choice, `{~%50%a ~%50%b ~%-50%c}` multiple choice, `{=a =b}` short answer (a
//! `=%0%*#…` gives the feedback for a wrong answer), `{#3.5:0.1}` `{#1..5}` `{#=3.5:0.1}`
//! numeric; `#` per-answer feedback, `####` general feedback (the explanation). A question
//! with text after its answers (missing word) keeps a `_____` for the gap. `{}` (essay),
//! `->` (matching), no answers (description) are reported as skipped. quizd's own extension,
//! which other tools read as the comment it is: `// points: 2` on the line above a question.
//!
//! One pass over each block, escapes one character deep, no recursion; the caller bounds the
//! size and [`super::interchange::MAX_QUESTIONS`] the questions.

use std::fmt::Write;

use super::interchange::{Draft, DraftAnswer, DraftOption, DraftQuestion, MAX_ANSWERS};
use super::model::{QuestionKind, QuizContent};

/// One character of a block and whether it was escaped (so never a GIFT mark).
#[derive(Clone, Copy)]
struct Ch {
    c: char,
    esc: bool,
}

fn scan(text: &str) -> Vec<Ch> {
    let mut out = Vec::with_capacity(text.len());
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.peek().copied() {
                Some(n @ ('~' | '=' | '#' | '{' | '}' | ':' | '\\')) => {
                    it.next();
                    out.push(Ch { c: n, esc: true });
                    continue;
                }
                Some('n') => {
                    it.next();
                    out.push(Ch { c: '\n', esc: true });
                    continue;
                }
                _ => {}
            }
        }
        out.push(Ch { c, esc: false });
    }
    out
}

fn plain(chs: &[Ch]) -> String {
    chs.iter().map(|c| c.c).collect()
}

/// The index of the first unescaped `mark` sequence in `chs` from `from`.
fn find(chs: &[Ch], from: usize, mark: &str) -> Option<usize> {
    let m: Vec<char> = mark.chars().collect();
    (from..chs.len().saturating_sub(m.len() - 1)).find(|&i| {
        m.iter()
            .enumerate()
            .all(|(j, c)| !chs[i + j].esc && chs[i + j].c == *c)
    })
}

fn trim(chs: &[Ch]) -> &[Ch] {
    let start = chs.iter().position(|c| !c.c.is_whitespace() || c.esc);
    // Empty: the end of `chs`, so that its position (see `read`'s `offset`) stays inside.
    let Some(start) = start else {
        return &chs[chs.len()..];
    };
    let end = chs
        .iter()
        .rposition(|c| !c.c.is_whitespace() || c.esc)
        .unwrap_or(start);
    &chs[start..=end]
}

fn text(chs: &[Ch], html: bool) -> String {
    let t = plain(trim(chs));
    if html {
        super::moodle_xml::html_to_text(&t)
    } else {
        t
    }
}

/// A block of lines: the line it starts on, its text, the points a `// points:` gave it.
struct Block {
    line: u32,
    text: String,
    points: Option<f64>,
}

fn blocks(input: &str) -> Result<Vec<Block>, String> {
    let input = input.strip_prefix('\u{feff}').unwrap_or(input);
    let mut out = Vec::new();
    let mut current: Option<Block> = None;
    let mut points = None;
    for (i, raw) in input.lines().enumerate() {
        let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let line = raw.trim_end_matches('\r');
        let t = line.trim();
        if let Some(comment) = t.strip_prefix("//") {
            if let Some(p) = comment.trim().strip_prefix("points:") {
                match p.trim().parse::<f64>() {
                    Ok(p) if p.is_finite() => points = Some(p),
                    _ => return Err(format!("line {n}: '// points:' needs a number")),
                }
            }
            continue;
        }
        if t.is_empty() {
            out.extend(current.take());
            continue;
        }
        match &mut current {
            Some(b) => {
                b.text.push('\n');
                b.text.push_str(line);
            }
            None => {
                current = Some(Block {
                    line: n,
                    text: line.to_string(),
                    points: points.take(),
                })
            }
        }
    }
    out.extend(current);
    Ok(out)
}

/// An answer of a choice or short-answer block: `=`/`~`, its weight, text and feedback.
struct Token {
    right: bool,
    weight: Option<f64>,
    text: String,
    feedback: Option<String>,
}

/// Splits `chs` at each unescaped `=` or `~` (each starts an answer).
fn tokens(chs: &[Ch], html: bool, at: &dyn Fn(usize) -> u32) -> Result<Vec<Token>, String> {
    let starts: Vec<usize> = (0..chs.len())
        .filter(|&i| !chs[i].esc && matches!(chs[i].c, '=' | '~'))
        .collect();
    if let Some(first) = starts.first()
        && !trim(&chs[..*first]).is_empty()
    {
        return Err(format!(
            "line {}: an answer starts with '=' (right) or '~' (wrong)",
            at(0)
        ));
    }
    if starts.len() > MAX_ANSWERS {
        return Err(format!(
            "line {}: more than {MAX_ANSWERS} answers in one question",
            at(0)
        ));
    }
    let mut out = Vec::new();
    for (n, &s) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(chs.len());
        let mut body = &chs[s + 1..end];
        let mut weight = None;
        let lead = trim(body);
        if lead.first().is_some_and(|c| c.c == '%' && !c.esc) {
            let close = lead[1..].iter().position(|c| c.c == '%');
            let Some(close) = close else {
                return Err(format!("line {}: a weight is written %50%", at(s)));
            };
            let w = plain(&lead[1..=close]);
            match w.trim().parse::<f64>() {
                Ok(w) if w.is_finite() && (-100.0..=100.0).contains(&w) => weight = Some(w / 100.0),
                _ => {
                    return Err(format!(
                        "line {}: weight '%{w}%' is not a percentage",
                        at(s)
                    ));
                }
            }
            body = &lead[close + 2..];
        }
        let (answer, feedback) = match find(body, 0, "#") {
            Some(h) => (&body[..h], Some(text(&body[h + 1..], html))),
            None => (body, None),
        };
        out.push(Token {
            right: chs[s].c == '=',
            weight,
            text: text(answer, html),
            feedback: feedback.filter(|f| !f.is_empty()),
        });
    }
    Ok(out)
}

/// `a:b`, `a..b` or `a`: the answer and its tolerance.
fn numeric_spec(spec: &str) -> Option<(f64, f64)> {
    let num = |s: &str| s.trim().parse::<f64>().ok().filter(|f| f.is_finite());
    let spec = spec.trim();
    if let Some((a, b)) = spec.split_once("..") {
        let (lo, hi) = (num(a)?, num(b)?);
        return (lo <= hi).then(|| ((lo + hi) / 2.0, (hi - lo) / 2.0));
    }
    if let Some((a, t)) = spec.split_once(':') {
        return Some((num(a)?, num(t)?));
    }
    Some((num(spec)?, 0.0))
}

/// Reads a GIFT document into a draft, or why it cannot be read (with its line).
pub fn read(input: &str) -> Result<Draft, String> {
    let mut draft = Draft::default();
    for mut block in blocks(input)? {
        draft.check_count(block.line)?;
        if let Some(path) = block.text.trim_start().strip_prefix("$CATEGORY:") {
            let (path, rest) = path.split_once('\n').unwrap_or((path, ""));
            draft.skip(
                Some(path.trim()),
                "category",
                block.line,
                "a category is not made a bank: GIFT does not say how many of its questions \
                 an attempt draws; its questions are imported as fixed questions",
            );
            if rest.trim().is_empty() {
                continue;
            }
            block.text = rest.to_string();
            block.line += 1;
        }
        let chs = scan(&block.text);
        let first = block.line;
        let at = |i: usize| {
            first
                + chs[..i.min(chs.len())]
                    .iter()
                    .filter(|c| c.c == '\n')
                    .count() as u32
        };
        let mut rest: &[Ch] = trim(&chs);
        // Where a sub-slice of `chs` starts in it (every slice below is one of `chs`).
        let offset =
            |part: &[Ch]| (part.as_ptr() as usize - chs.as_ptr() as usize) / size_of::<Ch>();
        let mut name = None;
        if find(rest, 0, "::") == Some(0) {
            let Some(end) = find(rest, 2, "::") else {
                return Err(format!(
                    "line {}: the title '::…' is never closed with '::'",
                    at(offset(rest))
                ));
            };
            name = Some(plain(trim(&rest[2..end]))).filter(|n| !n.is_empty());
            rest = trim(&rest[end + 2..]);
        }
        let mut html = false;
        let lead = plain(&rest[..rest.len().min(10)]);
        for marker in ["[html]", "[plain]", "[markdown]", "[moodle]"] {
            if lead.starts_with(marker) {
                html = marker == "[html]";
                rest = trim(&rest[marker.chars().count()..]);
            }
        }
        let base = offset(rest);
        let line_in = |i: usize| at(base + i);
        let Some(open) = find(rest, 0, "{") else {
            if find(rest, 0, "}").is_some() {
                return Err(format!(
                    "line {}: '}}' without '{{' (write \\}} for a brace in text)",
                    line_in(0)
                ));
            }
            draft.skip(
                name.as_deref(),
                "description",
                block.line,
                "a text without answers (a description) is not a question in quizd",
            );
            continue;
        };
        let Some(close) = find(rest, open + 1, "}") else {
            return Err(format!(
                "line {}: '{{' is never closed with '}}'",
                line_in(open)
            ));
        };
        if let Some(inner) = find(&rest[..close], open + 1, "{") {
            return Err(format!(
                "line {}: '{{' inside an answer block (write \\{{ for a brace in text)",
                line_in(inner)
            ));
        }
        let after = trim(&rest[close + 1..]);
        if find(after, 0, "{").is_some() || find(after, 0, "}").is_some() {
            return Err(format!(
                "line {}: a question has one answer block (write \\{{ \\}} for braces in text)",
                line_in(close + 1)
            ));
        }
        let before = text(&rest[..open], html);
        let prompt = if after.is_empty() {
            before
        } else {
            format!("{before} _____ {}", text(after, html))
        };
        let mut answers = &rest[open + 1..close];
        let mut explanation = None;
        if let Some(g) = find(answers, 0, "####") {
            explanation = Some(text(&answers[g + 4..], html)).filter(|e| !e.is_empty());
            answers = &answers[..g];
        }
        let answers = trim(answers);
        let ans_base = offset(answers);
        let line_a = |i: usize| at(ans_base + i);
        let mut wrong_feedback = None;
        let mut notes: Vec<String> = Vec::new();
        let skip = |draft: &mut Draft, kind: &str, why: String| {
            draft.skip(name.as_deref(), kind, block.line, why)
        };
        let head = plain(&answers[..find(answers, 0, "#").unwrap_or(answers.len())]);
        let answer = if answers.is_empty() {
            skip(&mut draft, "essay", "quizd has no essay questions".into());
            continue;
        } else if answers[0].c == '#' && !answers[0].esc {
            let body = trim(&answers[1..]);
            let specs: Vec<Token> = if body.first().is_some_and(|c| c.c == '=' && !c.esc) {
                tokens(body, false, &line_a)?
            } else {
                let (spec, fb) = match find(body, 0, "#") {
                    Some(h) => (&body[..h], Some(text(&body[h + 1..], html))),
                    None => (body, None),
                };
                vec![Token {
                    right: true,
                    weight: None,
                    text: plain(spec),
                    feedback: fb,
                }]
            };
            let mut right = Vec::new();
            let mut partial = None;
            for t in &specs {
                let w = t.weight.unwrap_or(if t.right { 1.0 } else { 0.0 });
                if w >= 1.0 - 1e-9 {
                    right.push(t);
                } else if w > 0.0 {
                    partial = Some(t);
                } else if t.text.is_empty() || t.text == "*" {
                    wrong_feedback = t.feedback.clone();
                } else {
                    notes.push(format!("answer '{}' (worth 0 %) is not kept: quizd marks every answer outside the tolerance wrong", t.text));
                }
            }
            if let Some(p) = partial {
                skip(
                    &mut draft,
                    "numerical",
                    format!(
                        "answer '{}' earns partial credit, which quizd's numeric questions do not give",
                        p.text
                    ),
                );
                continue;
            }
            let [one] = right.as_slice() else {
                skip(
                    &mut draft,
                    "numerical",
                    format!(
                        "{} right answers: a quizd numeric question has one (with a tolerance)",
                        right.len()
                    ),
                );
                continue;
            };
            let Some((answer, tolerance)) = numeric_spec(&one.text) else {
                return Err(format!(
                    "line {}: '{}' is not a number, a:tolerance or min..max",
                    line_a(0),
                    one.text
                ));
            };
            if let Some(f) = &one.feedback {
                notes.push(format!("the feedback of the right answer ('{f}') is not kept: quizd shows the explanation"));
            }
            DraftAnswer::Numeric { answer, tolerance }
        } else if matches!(head.trim(), "T" | "TRUE" | "F" | "FALSE") {
            let answer = head.trim().starts_with('T');
            let mut feedback = Vec::new();
            let mut from = find(answers, 0, "#");
            while let Some(h) = from {
                let end = find(answers, h + 1, "#").unwrap_or(answers.len());
                feedback.push(Some(text(&answers[h + 1..end], html)).filter(|f| !f.is_empty()));
                from = (end < answers.len()).then_some(end);
            }
            if feedback.len() > 2 {
                return Err(format!(
                    "line {}: a true/false answer has at most two feedbacks (#wrong#right)",
                    line_a(0)
                ));
            }
            DraftAnswer::TrueFalse {
                answer,
                wrong_feedback: feedback.first().cloned().flatten(),
                right_feedback: feedback.get(1).cloned().flatten(),
            }
        } else {
            let list = tokens(answers, html, &line_a)?;
            if list.is_empty() {
                return Err(format!(
                    "line {}: answers start with '=' (right) or '~' (wrong), or are T or F",
                    line_a(0)
                ));
            }
            if list.iter().any(|t| t.text.contains("->")) {
                skip(
                    &mut draft,
                    "matching",
                    "quizd has no matching questions".into(),
                );
                continue;
            }
            if list.iter().any(|t| !t.right) {
                let single = list.iter().all(|t| t.weight.is_none());
                DraftAnswer::Choice {
                    single,
                    options: list
                        .into_iter()
                        .map(|t| DraftOption {
                            fraction: t.weight.unwrap_or(if t.right { 1.0 } else { 0.0 }),
                            text: t.text,
                            feedback: t.feedback,
                        })
                        .collect(),
                }
            } else {
                let mut accepted = Vec::new();
                let mut partial = None;
                for t in &list {
                    let w = t.weight.unwrap_or(1.0);
                    if w >= 1.0 - 1e-9 {
                        accepted.push(t.text.clone());
                        if let Some(f) = &t.feedback {
                            notes.push(format!("the feedback of accepted answer '{}' ('{f}') is not kept: quizd shows the explanation", t.text));
                        }
                    } else if w > 0.0 {
                        partial = Some(t);
                    } else if t.text == "*" {
                        wrong_feedback = t.feedback.clone();
                    } else {
                        notes.push(format!("answer '{}' (worth 0 %) is not kept: quizd marks every answer it does not accept wrong", t.text));
                    }
                }
                if let Some(p) = partial {
                    skip(
                        &mut draft,
                        "shortanswer",
                        format!(
                            "answer '{}' earns partial credit, which quizd's short-text questions do not give",
                            p.text
                        ),
                    );
                    continue;
                }
                DraftAnswer::ShortText {
                    accepted,
                    case_sensitive: false,
                }
            }
        };
        for n in notes {
            draft.note_next(block.line, n);
        }
        draft.questions.push(DraftQuestion {
            id: None,
            name,
            line: block.line,
            points: block.points,
            prompt,
            explanation,
            answer,
            wrong_feedback,
        });
    }
    Ok(draft)
}

/// Reads Aiken: a one-line question, options `A.` or `A)`, then `ANSWER: A`; blank lines
/// between questions. Single choice only, no feedback.
pub fn read_aiken(input: &str) -> Result<Draft, String> {
    let input = input.strip_prefix('\u{feff}').unwrap_or(input);
    let mut draft = Draft::default();
    // The question being read: its line, its text, its options by letter.
    type Reading = (u32, String, Vec<(char, String)>);
    let mut current: Option<Reading> = None;
    let mut last = 0;
    for (i, raw) in input.lines().enumerate() {
        let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
        last = n;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let mut chars = line.chars();
        let option = match (chars.next(), chars.next(), chars.next()) {
            (Some(l @ 'A'..='Z'), Some('.' | ')'), Some(' ' | '\t')) => {
                Some((l, line[2..].trim().to_string()))
            }
            _ => None,
        };
        if let Some(answer) = line.strip_prefix("ANSWER:") {
            let Some((qline, prompt, options)) = current.take() else {
                return Err(format!("line {n}: ANSWER without a question"));
            };
            let letter = answer.trim();
            if !options.iter().any(|(l, _)| l.to_string() == letter) {
                return Err(format!(
                    "line {n}: ANSWER '{letter}' is not one of the question's options"
                ));
            }
            if options.len() < 2 {
                return Err(format!(
                    "line {n}: the question at line {qline} has fewer than 2 options"
                ));
            }
            draft.check_count(qline)?;
            draft.questions.push(DraftQuestion {
                name: None,
                id: None,
                line: qline,
                points: None,
                prompt,
                explanation: None,
                answer: DraftAnswer::Choice {
                    single: true,
                    options: options
                        .into_iter()
                        .map(|(l, text)| DraftOption {
                            fraction: if l.to_string() == letter { 1.0 } else { 0.0 },
                            text,
                            feedback: None,
                        })
                        .collect(),
                },
                wrong_feedback: None,
            });
        } else if let Some((l, text)) = option {
            let Some((_, _, options)) = &mut current else {
                return Err(format!("line {n}: option {l} before its question"));
            };
            if options.iter().any(|(k, _)| *k == l) {
                return Err(format!("line {n}: option {l} twice"));
            }
            options.push((l, text));
        } else {
            match &current {
                Some((qline, _, options)) if !options.is_empty() => {
                    return Err(format!(
                        "line {n}: the question at line {qline} ends without 'ANSWER: <letter>'"
                    ));
                }
                Some(_) => {
                    return Err(format!(
                        "line {n}: an Aiken question is one line, then its options (A. …)"
                    ));
                }
                None => current = Some((n, line.to_string(), Vec::new())),
            }
        }
    }
    if let Some((qline, _, _)) = current {
        return Err(format!(
            "line {last}: the question at line {qline} ends without 'ANSWER: <letter>'"
        ));
    }
    Ok(draft)
}

/// `s` with GIFT's marks escaped and line breaks as `\n`.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '~' | '=' | '#' | '{' | '}' | ':' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

fn weight(f: f64) -> String {
    let p = format!("{:.5}", f * 100.0);
    p.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Version `version` of `content` as GIFT, in its source locale.
pub fn write(content: &QuizContent, version: i32) -> String {
    let sl = content.source_locale.as_str();
    let get = |t: &crate::i18n::Text| escape(t.get(sl).map(String::as_str).unwrap_or(""));
    let mut out = format!(
        "// quizd: quiz '{}', version {version}, locale {sl}. GIFT has no languages: translations\n\
         // are in quizd's XLIFF and PO exports. Not in GIFT: case-sensitive short answers, the\n\
         // feedback for a wrong numeric answer.\n",
        content.slug
    );
    if let Some(note) = content.images_not_exported() {
        let _ = writeln!(out, "// quizd: {note}");
    }
    let mut category: Option<&str> = None;
    for q in &content.questions {
        out.push('\n');
        let bank = content.bank_of(&q.key).map(|b| b.key.as_str());
        if bank.is_some() && bank != category {
            let _ = writeln!(
                out,
                "$CATEGORY: $course$/top/{}/{}\n",
                content.slug,
                bank.unwrap_or_default()
            );
            category = bank;
        }
        if q.points != 1.0 {
            let _ = writeln!(out, "// points: {}", q.points);
        }
        let _ = writeln!(out, "::{}::{}{{", escape(&q.key), get(&q.prompt));
        let wrong = q.wrong_feedback.as_ref().map(get).filter(|w| !w.is_empty());
        let feedback = |f: &Option<crate::i18n::Text>| match f.as_ref().map(get) {
            Some(f) if !f.is_empty() => format!("#{f}"),
            _ => String::new(),
        };
        match q.kind {
            QuestionKind::Single => {
                for o in &q.options {
                    let mark = if o.correct { '=' } else { '~' };
                    let _ = writeln!(out, "{mark}{}{}", get(&o.text), feedback(&o.feedback));
                }
            }
            QuestionKind::Multiple => {
                let k = q.options.iter().filter(|o| o.correct).count().max(1) as f64;
                for o in &q.options {
                    let w = if o.correct { 1.0 / k } else { -1.0 / k };
                    let _ = writeln!(
                        out,
                        "~%{}%{}{}",
                        weight(w),
                        get(&o.text),
                        feedback(&o.feedback)
                    );
                }
            }
            QuestionKind::TrueFalse => {
                let right = q.true_false_answer();
                let _ = write!(out, "{}", if right { "TRUE" } else { "FALSE" });
                if let Some(w) = &wrong {
                    let _ = write!(out, "#{w}");
                }
                out.push('\n');
            }
            QuestionKind::Numeric => {
                if let Some(n) = &q.numeric {
                    let _ = writeln!(out, "#{}:{}", n.answer, n.tolerance);
                }
            }
            QuestionKind::ShortText => {
                if let Some(st) = &q.short_text {
                    for a in &st.accepted {
                        let _ = writeln!(out, "={}", escape(a));
                    }
                }
                if let Some(w) = &wrong {
                    let _ = writeln!(out, "=%0%*#{w}");
                }
            }
        }
        let _ = writeln!(out, "####{}\n}}", get(&q.explanation));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gift_examples_read_as_their_kinds() {
        let d = read(
            "// a comment\n$CATEGORY: $course$/top/Geo\n\n::Capital::What is the capital of France?{=Paris#Yes ~London#No, England ####Paris is.}\n\n\
             ::tf::The sun is a star.{T#It is a star.####Stars shine.}\n\n\
             Two plus two is {#4:0####Arithmetic.}\n\n\
             Which are prime?{~%50%2 ~%50%3 ~%-100%4}\n\n\
             Name a colour of the French flag.{=blue =white =red =%0%*#Look again}\n\n\
             Write about your day.{}\n\n\
             Match.{=a -> 1 =b -> 2}\n",
        )
        .unwrap();
        let kinds: Vec<&str> = d.skipped.iter().map(|s| s.kind.as_str()).collect();
        assert_eq!(kinds, ["category", "essay", "matching"]);
        assert_eq!(d.skipped[1].line, 14);
        assert_eq!(d.questions.len(), 5);
        let q = &d.questions[0];
        assert_eq!(q.name.as_deref(), Some("Capital"));
        assert_eq!(q.explanation.as_deref(), Some("Paris is."));
        let DraftAnswer::Choice {
            single: true,
            options,
        } = &q.answer
        else {
            panic!("{q:?}")
        };
        assert_eq!(options[1].feedback.as_deref(), Some("No, England"));
        assert!(matches!(
            d.questions[1].answer,
            DraftAnswer::TrueFalse { answer: true, .. }
        ));
        assert_eq!(d.questions[1].wrong_feedback, None);
        assert_eq!(d.questions[2].prompt, "Two plus two is");
        assert!(matches!(
            d.questions[2].answer,
            DraftAnswer::Numeric {
                answer: 4.0,
                tolerance: 0.0
            }
        ));
        assert!(matches!(
            &d.questions[3].answer,
            DraftAnswer::Choice { single: false, .. }
        ));
        assert_eq!(d.questions[4].wrong_feedback.as_deref(), Some("Look again"));
    }

    #[test]
    fn escapes_are_text_and_unbalanced_braces_are_refused_with_their_line() {
        let d = read("Is 1\\=1 \\{really\\}?{T}\n").unwrap();
        assert_eq!(d.questions[0].prompt, "Is 1=1 {really}?");
        let e = read("Fine.{T}\n\nBroken {=a ~b\n").unwrap_err();
        assert!(e.starts_with("line 3:"), "{e}");
        let e = read("A } alone\n").unwrap_err();
        assert!(e.starts_with("line 1:"), "{e}");
    }

    #[test]
    fn aiken_reads_single_choice_and_names_the_line_of_a_mistake() {
        let d = read_aiken("What is 2+2?\nA. 3\nB) 4\nANSWER: B\n\nNext?\nA. x\nB. y\nANSWER: A\n")
            .unwrap();
        assert_eq!(d.questions.len(), 2);
        assert_eq!(d.questions[1].line, 6);
        let e = read_aiken("Q?\nA. x\nB. y\nANSWER: C\n").unwrap_err();
        assert!(e.starts_with("line 4:"), "{e}");
    }
}
