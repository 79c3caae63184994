//! Pure grading, one rule per question kind. No I/O: tested directly and by properties.

pub mod scoring;

use serde::{Deserialize, Serialize};

use crate::content::{Question, QuestionKind};

/// A learner's answer in terms of the content (option keys, never served ids).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Selected(Vec<String>),
    Number(f64),
    Text(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Grade {
    pub points: f64,
    pub max_points: f64,
    /// Full marks.
    pub correct: bool,
}

/// Why an answer cannot be graded against a question.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GradeError {
    #[error("this question takes {expected}")]
    WrongShape { expected: &'static str },
    #[error("choose exactly one option")]
    NotExactlyOne,
    #[error("an option is chosen twice")]
    Duplicate,
    #[error("an option is not one of this question's options")]
    UnknownOption,
    #[error("the number must be finite")]
    NotFinite,
    #[error("the text is empty or longer than {0} characters")]
    BadText(usize),
}

pub const MAX_TEXT_CHARS: usize = 1000;

/// Trims, collapses runs of whitespace to one space, and case-folds unless case matters.
pub fn normalize_text(s: &str, case_sensitive: bool) -> String {
    let collapsed = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if case_sensitive {
        collapsed
    } else {
        collapsed.to_lowercase()
    }
}

/// The shape of answer a kind takes, for messages.
fn expected(kind: QuestionKind) -> &'static str {
    match kind {
        QuestionKind::Single | QuestionKind::Multiple | QuestionKind::TrueFalse => {
            "`selected`: a list of option ids"
        }
        QuestionKind::Numeric => "`number`",
        QuestionKind::ShortText => "`text`",
    }
}

/// Checks that an answer fits the question, before anything is stored.
pub fn check(q: &Question, answer: &Answer) -> Result<(), GradeError> {
    let shape = || GradeError::WrongShape {
        expected: expected(q.kind),
    };
    match (q.kind, answer) {
        (
            QuestionKind::Single | QuestionKind::TrueFalse | QuestionKind::Multiple,
            Answer::Selected(keys),
        ) => {
            if q.kind != QuestionKind::Multiple && keys.len() != 1 {
                return Err(GradeError::NotExactlyOne);
            }
            for (i, k) in keys.iter().enumerate() {
                if keys[..i].contains(k) {
                    return Err(GradeError::Duplicate);
                }
                if !q.options.iter().any(|o| &o.key == k) {
                    return Err(GradeError::UnknownOption);
                }
            }
            Ok(())
        }
        (QuestionKind::Numeric, Answer::Number(x)) if x.is_finite() => Ok(()),
        (QuestionKind::Numeric, Answer::Number(_)) => Err(GradeError::NotFinite),
        (QuestionKind::ShortText, Answer::Text(t)) => {
            if t.trim().is_empty() || t.chars().count() > MAX_TEXT_CHARS {
                Err(GradeError::BadText(MAX_TEXT_CHARS))
            } else {
                Ok(())
            }
        }
        _ => Err(shape()),
    }
}

/// Grades an answer. Scores lie in `0..=points`.
pub fn grade(q: &Question, answer: &Answer) -> Result<Grade, GradeError> {
    check(q, answer)?;
    let max = q.points;
    let fraction = match (q.kind, answer) {
        (QuestionKind::Single | QuestionKind::TrueFalse, Answer::Selected(keys)) => {
            let correct = q.options.iter().any(|o| o.correct && o.key == keys[0]);
            if correct { 1.0 } else { 0.0 }
        }
        (QuestionKind::Multiple, Answer::Selected(keys)) => {
            let total_correct = q.options.iter().filter(|o| o.correct).count();
            let (right, wrong) = keys.iter().fold((0usize, 0usize), |(r, w), k| {
                if q.options.iter().any(|o| o.correct && &o.key == k) {
                    (r + 1, w)
                } else {
                    (r, w + 1)
                }
            });
            ((right as f64 - wrong as f64) / total_correct.max(1) as f64).clamp(0.0, 1.0)
        }
        (QuestionKind::Numeric, Answer::Number(x)) => {
            let key = q.numeric.as_ref().expect("numeric questions have a key");
            // Allow for decimal fractions that binary floating point cannot represent.
            let slack = 1e-9 * key.answer.abs().max(1.0);
            if (x - key.answer).abs() <= key.tolerance + slack {
                1.0
            } else {
                0.0
            }
        }
        (QuestionKind::ShortText, Answer::Text(t)) => {
            let key = q
                .short_text
                .as_ref()
                .expect("short text questions have a key");
            let given = normalize_text(t, key.case_sensitive);
            let hit = key
                .accepted
                .iter()
                .any(|a| normalize_text(a, key.case_sensitive) == given);
            if hit { 1.0 } else { 0.0 }
        }
        _ => unreachable!("check() accepted the shape"),
    };
    Ok(Grade {
        points: max * fraction,
        max_points: max,
        correct: fraction >= 1.0,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::content::Choice;
    use crate::content::model::{NumericKey, ShortTextKey};

    fn text(s: &str) -> BTreeMap<String, String> {
        BTreeMap::from([("en".to_string(), s.to_string())])
    }

    fn choice_question(kind: QuestionKind, correct: &[bool], points: f64) -> Question {
        Question {
            key: "q".into(),
            kind,
            points,
            prompt: text("?"),
            explanation: text("because"),
            options: correct
                .iter()
                .enumerate()
                .map(|(i, c)| Choice {
                    key: format!("o{i}"),
                    text: text(&format!("option {i}")),
                    correct: *c,
                    feedback: None,
                })
                .collect(),
            numeric: None,
            short_text: None,
            wrong_feedback: None,
            tags: Vec::new(),
            image: None,
        }
    }

    fn sel(keys: &[&str]) -> Answer {
        Answer::Selected(keys.iter().map(|k| k.to_string()).collect())
    }

    #[test]
    fn single_choice_is_all_or_nothing() {
        let q = choice_question(QuestionKind::Single, &[false, true, false], 2.0);
        assert_eq!(
            grade(&q, &sel(&["o1"])).unwrap(),
            Grade {
                points: 2.0,
                max_points: 2.0,
                correct: true
            }
        );
        assert_eq!(grade(&q, &sel(&["o0"])).unwrap().points, 0.0);
        assert_eq!(
            grade(&q, &sel(&["o0", "o1"])),
            Err(GradeError::NotExactlyOne)
        );
        assert_eq!(grade(&q, &sel(&[])), Err(GradeError::NotExactlyOne));
        assert_eq!(grade(&q, &sel(&["zz"])), Err(GradeError::UnknownOption));
        assert!(matches!(
            grade(&q, &Answer::Number(1.0)),
            Err(GradeError::WrongShape { .. })
        ));
    }

    #[test]
    fn multiple_choice_gives_partial_credit_and_penalizes_wrong_picks() {
        let q = choice_question(QuestionKind::Multiple, &[true, true, false, false], 2.0);
        assert_eq!(grade(&q, &sel(&["o0", "o1"])).unwrap().points, 2.0);
        assert_eq!(grade(&q, &sel(&["o0"])).unwrap().points, 1.0);
        assert_eq!(grade(&q, &sel(&["o0", "o1", "o2"])).unwrap().points, 1.0);
        assert_eq!(grade(&q, &sel(&["o0", "o2", "o3"])).unwrap().points, 0.0);
        assert_eq!(grade(&q, &sel(&[])).unwrap().points, 0.0);
        assert!(!grade(&q, &sel(&["o0"])).unwrap().correct);
        assert_eq!(grade(&q, &sel(&["o0", "o0"])), Err(GradeError::Duplicate));
    }

    #[test]
    fn numeric_answers_are_right_within_the_tolerance() {
        let mut q = choice_question(QuestionKind::Numeric, &[], 1.0);
        q.numeric = Some(NumericKey {
            answer: 0.3,
            tolerance: 0.0,
        });
        assert!(grade(&q, &Answer::Number(0.1 + 0.2)).unwrap().correct);
        assert!(!grade(&q, &Answer::Number(0.31)).unwrap().correct);
        q.numeric = Some(NumericKey {
            answer: 64.0,
            tolerance: 0.5,
        });
        assert!(grade(&q, &Answer::Number(64.5)).unwrap().correct);
        assert!(!grade(&q, &Answer::Number(64.6)).unwrap().correct);
        assert_eq!(
            grade(&q, &Answer::Number(f64::NAN)),
            Err(GradeError::NotFinite)
        );
    }

    #[test]
    fn short_text_is_compared_normalized() {
        let mut q = choice_question(QuestionKind::ShortText, &[], 1.0);
        q.short_text = Some(ShortTextKey {
            accepted: vec!["All-Reduce".into(), "all reduce".into()],
            case_sensitive: false,
        });
        for given in ["all-reduce", "  ALL-REDUCE ", "all   reduce", "All\tReduce"] {
            assert!(
                grade(&q, &Answer::Text(given.into())).unwrap().correct,
                "{given}"
            );
        }
        assert!(
            !grade(&q, &Answer::Text("allgather".into()))
                .unwrap()
                .correct
        );
        assert_eq!(
            grade(&q, &Answer::Text("   ".into())),
            Err(GradeError::BadText(MAX_TEXT_CHARS))
        );
        q.short_text.as_mut().unwrap().case_sensitive = true;
        assert!(
            !grade(&q, &Answer::Text("all-reduce".into()))
                .unwrap()
                .correct
        );
        assert!(
            grade(&q, &Answer::Text(" All-Reduce".into()))
                .unwrap()
                .correct
        );
    }

    fn multiple_strategy() -> impl Strategy<Value = (Vec<bool>, Vec<bool>, f64)> {
        (2usize..8)
            .prop_flat_map(|n| {
                (
                    proptest::collection::vec(any::<bool>(), n),
                    proptest::collection::vec(any::<bool>(), n),
                    0.5f64..10.0,
                )
            })
            .prop_filter("at least one correct option", |(c, _, _)| {
                c.iter().any(|x| *x)
            })
    }

    proptest! {
        #[test]
        fn scores_stay_within_zero_and_the_points((correct, picked, points) in multiple_strategy()) {
            let q = choice_question(QuestionKind::Multiple, &correct, points);
            let keys: Vec<String> = picked.iter().enumerate().filter(|(_, p)| **p).map(|(i, _)| format!("o{i}")).collect();
            let g = grade(&q, &Answer::Selected(keys)).unwrap();
            prop_assert!(g.points >= 0.0 && g.points <= points);
            prop_assert_eq!(g.correct, picked == correct);
        }

        #[test]
        fn grades_do_not_depend_on_option_or_selection_order(
            (correct, picked, points) in multiple_strategy(),
            rotation in 0usize..8,
        ) {
            let q = choice_question(QuestionKind::Multiple, &correct, points);
            let keys: Vec<String> = picked.iter().enumerate().filter(|(_, p)| **p).map(|(i, _)| format!("o{i}")).collect();
            let mut reordered = q.clone();
            let n = reordered.options.len();
            reordered.options.rotate_left(rotation % n);
            let mut reversed = keys.clone();
            reversed.reverse();
            let a = grade(&q, &Answer::Selected(keys)).unwrap();
            let b = grade(&reordered, &Answer::Selected(reversed)).unwrap();
            prop_assert_eq!(a, b);
        }

        #[test]
        fn adding_a_wrong_pick_never_raises_the_score((correct, picked, points) in multiple_strategy()) {
            let q = choice_question(QuestionKind::Multiple, &correct, points);
            let keys: Vec<String> = picked.iter().enumerate().filter(|(_, p)| **p).map(|(i, _)| format!("o{i}")).collect();
            let base = grade(&q, &Answer::Selected(keys.clone())).unwrap().points;
            if let Some(wrong) = correct.iter().enumerate().find(|(i, c)| !**c && !picked[*i]).map(|(i, _)| format!("o{i}")) {
                let mut more = keys;
                more.push(wrong);
                prop_assert!(grade(&q, &Answer::Selected(more)).unwrap().points <= base);
            }
        }

        #[test]
        fn single_choice_scores_full_exactly_for_the_correct_option(n in 2usize..8, right in 0usize..8, pick in 0usize..8) {
            let (right, pick) = (right % n, pick % n);
            let correct: Vec<bool> = (0..n).map(|i| i == right).collect();
            let q = choice_question(QuestionKind::Single, &correct, 1.0);
            let g = grade(&q, &Answer::Selected(vec![format!("o{pick}")])).unwrap();
            prop_assert_eq!(g.correct, pick == right);
            prop_assert_eq!(g.points, if pick == right { 1.0 } else { 0.0 });
        }

        #[test]
        fn text_normalization_is_idempotent(s in "\\PC{0,40}") {
            let once = normalize_text(&s, false);
            prop_assert_eq!(normalize_text(&once, false), once.clone());
        }
    }
}

/// One finished attempt's place and score, for the assignment grade.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FinishedAttempt {
    pub number: i32,
    /// Score as a fraction of the maximum, 0..=1.
    pub fraction: f64,
}

/// The learner's grade for an assignment (a fraction, 0..=1) under its grading method, over
/// the finished attempts; `None` before any attempt is finished.
pub fn assignment_grade(
    method: crate::policy::GradingMethod,
    attempts: &[FinishedAttempt],
) -> Option<f64> {
    use crate::policy::GradingMethod::*;
    if attempts.is_empty() {
        return None;
    }
    let by_number = |pick_last: bool| {
        attempts
            .iter()
            .max_by_key(|a| if pick_last { a.number } else { -a.number })
            .map(|a| a.fraction)
    };
    match method {
        Highest => attempts.iter().map(|a| a.fraction).reduce(f64::max),
        Latest => by_number(true),
        First => by_number(false),
        Average => Some(attempts.iter().map(|a| a.fraction).sum::<f64>() / attempts.len() as f64),
    }
}

#[cfg(test)]
mod grade_method_tests {
    use super::*;
    use crate::policy::GradingMethod;

    #[test]
    fn each_grading_method_picks_its_attempt() {
        let a = |number, fraction| FinishedAttempt { number, fraction };
        let attempts = [a(2, 0.9), a(1, 0.5), a(3, 0.4)];
        assert_eq!(
            assignment_grade(GradingMethod::Highest, &attempts),
            Some(0.9)
        );
        assert_eq!(
            assignment_grade(GradingMethod::Latest, &attempts),
            Some(0.4)
        );
        assert_eq!(assignment_grade(GradingMethod::First, &attempts), Some(0.5));
        assert!((assignment_grade(GradingMethod::Average, &attempts).unwrap() - 0.6).abs() < 1e-12);
        assert_eq!(assignment_grade(GradingMethod::Highest, &[]), None);
    }
}
