//! Regrading: what moving an assignment to another version of its quiz changes in its attempts.
//! Pure: no I/O. The route reads the attempts and their responses (locked, when it applies the
//! plan), calls [`plan`], and shows the plan (a dry run) or writes it in the same transaction,
//! so that what a dry run shows is what applying does.
//!
//! The rules:
//! - Every response is graded again against the new version's question of the same key; the
//!   response keeps what the learner chose, only its points and correctness change. An answer
//!   that no longer fits the question (an option removed, the kind changed) scores 0.
//! - A question the new version no longer has counts for nothing: its responses score 0 and it
//!   leaves the attempt's maximum. A question the new version adds is not added to the attempts
//!   made already (finished ones never saw it; one in progress keeps the questions it was
//!   served): it is served to attempts started from now on.
//! - An attempt keeps the questions it serves (a quiz with banks: its draw): its score is the sum
//!   of its responses' new points; its maximum the new points of those questions that the new
//!   version still has. Where the version's questions differ, the store pins each attempt's
//!   served set (`attempts.question_set`) to those.
//! - The assignment's question rules (`grading::scoring`: full marks to everyone, dropped) are
//!   applied on top of the responses' grades, as the rules stand after the regrade: those of
//!   questions the new version still has, with its points, and the changes asked for. A
//!   regrade can change only the rules, on the version assigned.
//! - A staff override stands (it is someone's decision about this attempt); one above the new
//!   maximum becomes the new maximum.
//! - An attempt's grade changed when its effective grade (the override, else the score) or its
//!   maximum changed: that is what gets a grade event and is sent to the LMS again. Attempts in
//!   progress move to the new version too (their answers so far regraded), so that they finish
//!   under the corrected key; they have no grade yet.

use std::collections::HashMap;

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::content::{Question, QuizContent};
use crate::grading::scoring::{self, QuestionRules, Scoring};
use crate::grading::{Answer, grade};

/// Scores closer than this are the same score (sums of the same points in another order).
const EPS: f64 = 1e-9;

/// How one question differs between the two versions, or in how it counts (only questions
/// that differ are listed).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct QuestionChange {
    pub question_key: String,
    /// How it counted before and counts after (`graded` when removed or added).
    pub from_scoring: Scoring,
    pub to_scoring: Scoring,
    /// What grading reads changed: the correct options, the option set, the numeric answer or
    /// tolerance, the accepted texts, the kind.
    pub key_changed: bool,
    /// The question is gone from the new version: it no longer counts.
    pub removed: bool,
    /// The question is new in this version: served to attempts started from now on only.
    pub added: bool,
    /// Absent when added.
    pub from_points: Option<f64>,
    /// Absent when removed.
    pub to_points: Option<f64>,
}

/// A response whose grade changes.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ResponseChange {
    pub question_key: String,
    pub from_points: f64,
    pub to_points: f64,
    pub correct: bool,
}

/// An attempt that the regrade changes (only those are listed).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct AttemptChange {
    pub attempt_id: Uuid,
    pub user_id: Uuid,
    pub number: i32,
    pub finished: bool,
    /// The computed score before and after; absent while in progress.
    pub from_score: Option<f64>,
    pub to_score: Option<f64>,
    pub from_max: f64,
    pub to_max: f64,
    /// Staff set this attempt's grade by hand; the override stands (capped at the new maximum).
    pub overridden: bool,
    /// The grade that counts, before and after: the override, else the score.
    pub from_points: Option<f64>,
    pub to_points: Option<f64>,
    /// Whether the grade that counts (or its maximum) changes: a grade event, and the LMS is told.
    pub grade_changed: bool,
    pub responses: Vec<ResponseChange>,
}

/// A response as stored.
#[derive(Debug, Clone)]
pub struct StoredResponse {
    pub question_key: String,
    pub answer: Answer,
    pub points: f64,
    pub max_points: f64,
    pub correct: bool,
}

/// An attempt as stored, with its responses.
#[derive(Debug, Clone)]
pub struct StoredAttempt {
    pub id: Uuid,
    pub user_id: Uuid,
    pub number: i32,
    pub finished: bool,
    pub score: Option<f64>,
    pub override_points: Option<f64>,
    pub max_score: f64,
    /// The keys of the questions the attempt serves, in the old version.
    pub served: Vec<String>,
    pub responses: Vec<StoredResponse>,
}

/// A response's new grade, as the plan writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewResponseGrade {
    pub attempt: Uuid,
    pub question_key: String,
    pub points: f64,
    pub max_points: f64,
    pub correct: bool,
}

/// An attempt's new grade, as the plan writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAttemptGrade {
    pub attempt: Uuid,
    pub score: Option<f64>,
    pub max_score: f64,
    pub override_points: Option<f64>,
}

/// What a regrade shows and writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub questions: Vec<QuestionChange>,
    pub attempts: Vec<AttemptChange>,
    pub responses: Vec<NewResponseGrade>,
    pub grades: Vec<NewAttemptGrade>,
}

impl Plan {
    /// Whether the two versions have the same questions (by key): then an attempt that serves
    /// every question of the old one serves every question of the new one too.
    pub fn same_questions(&self) -> bool {
        !self.questions.iter().any(|q| q.added || q.removed)
    }
}

/// What grading reads of a question: its kind, its options' keys and correctness (as a set),
/// the numeric key and the accepted texts. Points are compared on their own.
fn grading_key(q: &Question) -> impl PartialEq + use<'_> {
    let mut options: Vec<(&str, bool)> = q
        .options
        .iter()
        .map(|o| (o.key.as_str(), o.correct))
        .collect();
    options.sort_unstable();
    let numeric = q.numeric.as_ref().map(|n| (n.answer, n.tolerance));
    let text = q.short_text.as_ref().map(|t| {
        let mut accepted: Vec<&str> = t.accepted.iter().map(String::as_str).collect();
        accepted.sort_unstable();
        (accepted, t.case_sensitive)
    });
    (q.kind, options, numeric, text)
}

fn by_key(content: &QuizContent) -> HashMap<&str, &Question> {
    content
        .questions
        .iter()
        .map(|q| (q.key.as_str(), q))
        .collect()
}

/// How the new version's questions differ from the old one's, and how the rules (`rules`,
/// before and after) change how they count: the old version's in its order, then those it
/// adds.
pub fn question_changes(
    old: &QuizContent,
    new: &QuizContent,
    rules: (&QuestionRules, &QuestionRules),
) -> Vec<QuestionChange> {
    let before = by_key(old);
    let after = by_key(new);
    let changed = old.questions.iter().filter_map(|o| {
        let from_scoring = rules.0.scoring(&o.key);
        let change = match after.get(o.key.as_str()) {
            None => QuestionChange {
                question_key: o.key.clone(),
                from_scoring,
                to_scoring: Scoring::Graded,
                key_changed: false,
                removed: true,
                added: false,
                from_points: Some(o.points),
                to_points: None,
            },
            Some(n) => QuestionChange {
                question_key: o.key.clone(),
                from_scoring,
                to_scoring: rules.1.scoring(&n.key),
                key_changed: grading_key(o) != grading_key(n),
                removed: false,
                added: false,
                from_points: Some(o.points),
                to_points: Some(n.points),
            },
        };
        let differs = change.removed
            || change.key_changed
            || change.to_points != Some(o.points)
            || change.from_scoring != change.to_scoring;
        differs.then_some(change)
    });
    let added = new
        .questions
        .iter()
        .filter(|q| !before.contains_key(q.key.as_str()))
        .map(|q| QuestionChange {
            question_key: q.key.clone(),
            from_scoring: Scoring::Graded,
            to_scoring: rules.1.scoring(&q.key),
            key_changed: false,
            removed: false,
            added: true,
            from_points: None,
            to_points: Some(q.points),
        });
    changed.chain(added).collect()
}

/// A response graded against the new version's question (`None`: the question is gone).
fn regrade_response(q: Option<&Question>, r: &StoredResponse) -> (f64, f64, bool) {
    match q {
        None => (0.0, r.max_points, false),
        Some(q) => match grade(q, &r.answer) {
            Ok(g) => (g.points, g.max_points, g.correct),
            Err(_) => (0.0, q.points, false),
        },
    }
}

/// The plan for moving these attempts from `old` to `new`, the assignment's question rules
/// going from `rules.0` to `rules.1` (for `new`).
pub fn plan(
    old: &QuizContent,
    new: &QuizContent,
    attempts: &[StoredAttempt],
    rules: (&QuestionRules, &QuestionRules),
) -> Plan {
    let questions = question_changes(old, new, rules);
    let after = by_key(new);
    let mut out = Plan {
        questions,
        attempts: Vec::new(),
        responses: Vec::new(),
        grades: Vec::new(),
    };
    for a in attempts {
        let mut changed_responses = Vec::new();
        let mut rewritten = false;
        let mut graded = HashMap::with_capacity(a.responses.len());
        for r in &a.responses {
            let (points, max_points, correct) =
                regrade_response(after.get(r.question_key.as_str()).copied(), r);
            graded.insert(r.question_key.as_str(), points);
            // Shown when its grade changes; written when its maximum changes too.
            if points != r.points || correct != r.correct {
                changed_responses.push(ResponseChange {
                    question_key: r.question_key.clone(),
                    from_points: r.points,
                    to_points: points,
                    correct,
                });
            }
            if points != r.points || max_points != r.max_points || correct != r.correct {
                rewritten = true;
                out.responses.push(NewResponseGrade {
                    attempt: a.id,
                    question_key: r.question_key.clone(),
                    points,
                    max_points,
                    correct,
                });
            }
        }
        // Over the questions it serves that the new version has (a removed question's
        // response scores 0 and leaves the maximum), under the rules after the regrade.
        let served = (a.served.iter())
            .filter_map(|k| after.get(k.as_str()))
            .map(|q| (q.key.as_str(), q.points));
        let (score, max) = scoring::score(served, &graded, rules.1);
        let to_score = a.finished.then_some(score);
        let to_override = a.override_points.map(|o| o.min(max));
        let from_points = a.override_points.or(a.score);
        let to_points = if a.finished {
            to_override.or(to_score)
        } else {
            None
        };
        let same = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) => (x - y).abs() <= EPS,
            (x, y) => x.is_none() && y.is_none(),
        };
        let max_changed = (max - a.max_score).abs() > EPS;
        let grade_changed = a.finished && (max_changed || !same(from_points, to_points));
        if !rewritten && !max_changed && same(a.score, to_score) {
            continue;
        }
        out.grades.push(NewAttemptGrade {
            attempt: a.id,
            score: to_score,
            max_score: max,
            override_points: to_override,
        });
        out.attempts.push(AttemptChange {
            attempt_id: a.id,
            user_id: a.user_id,
            number: a.number,
            finished: a.finished,
            from_score: a.score,
            to_score,
            from_max: a.max_score,
            to_max: max,
            overridden: a.override_points.is_some(),
            from_points,
            to_points,
            grade_changed,
            responses: changed_responses,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::QuestionKind;
    use proptest::prelude::*;

    fn question(key: &str, kind: QuestionKind, points: f64, correct: &[&str]) -> Question {
        use crate::content::Choice;
        use crate::i18n::Text;
        let text = |s: &str| Text::from([("en".to_string(), s.to_string())]);
        Question {
            key: key.into(),
            kind,
            points,
            prompt: text("?"),
            explanation: text("because"),
            options: ["a", "b", "c"]
                .iter()
                .map(|o| Choice {
                    key: (*o).into(),
                    text: text(o),
                    correct: correct.contains(o),
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

    fn content(questions: Vec<Question>) -> QuizContent {
        QuizContent {
            slug: "q".into(),
            source_locale: "en".into(),
            locales: vec!["en".into()],
            title: crate::i18n::Text::from([("en".to_string(), "Q".to_string())]),
            intro: None,
            visibility: Default::default(),
            practice: None,
            questions,
            translated_from: Default::default(),
            keep_stale_translations: false,
            score_bands: Vec::new(),
            banks: Default::default(),
            layout: Default::default(),
            media: Default::default(),
        }
    }

    fn attempt(finished: bool, answers: &[(&str, &str, f64)]) -> StoredAttempt {
        let score = answers.iter().map(|a| a.2).sum::<f64>();
        StoredAttempt {
            id: Uuid::now_v7(),
            user_id: Uuid::now_v7(),
            number: 1,
            finished,
            score: finished.then_some(score),
            override_points: None,
            max_score: 3.0,
            served: vec!["q1".into(), "q2".into(), "q3".into()],
            responses: answers
                .iter()
                .map(|(k, o, p)| StoredResponse {
                    question_key: (*k).into(),
                    answer: Answer::Selected(vec![(*o).into()]),
                    points: *p,
                    max_points: 1.0,
                    correct: *p > 0.0,
                })
                .collect(),
        }
    }

    /// The plan with no question rules before or after.
    fn plain(old: &QuizContent, new: &QuizContent, attempts: &[StoredAttempt]) -> Plan {
        let none = QuestionRules::default();
        plan(old, new, attempts, (&none, &none))
    }

    fn old() -> QuizContent {
        content(vec![
            question("q1", QuestionKind::Single, 1.0, &["a"]),
            question("q2", QuestionKind::Single, 1.0, &["a"]),
            question("q3", QuestionKind::Single, 1.0, &["a"]),
        ])
    }

    #[test]
    fn a_corrected_key_regrades_the_responses_that_chose_either_option_and_nothing_else() {
        let new = content(vec![
            question("q1", QuestionKind::Single, 1.0, &["a"]),
            question("q2", QuestionKind::Single, 1.0, &["b"]),
            question("q3", QuestionKind::Single, 1.0, &["a"]),
        ]);
        let right = attempt(true, &[("q1", "a", 1.0), ("q2", "a", 1.0)]);
        let fixed = attempt(true, &[("q1", "a", 1.0), ("q2", "b", 0.0)]);
        let untouched = attempt(true, &[("q1", "a", 1.0), ("q3", "a", 1.0)]);
        let p = plain(&old(), &new, &[right.clone(), fixed.clone(), untouched]);
        assert_eq!(p.questions.len(), 1);
        assert!(p.questions[0].key_changed && !p.questions[0].removed);
        let changes: Vec<(Uuid, Option<f64>, Option<f64>)> = p
            .attempts
            .iter()
            .map(|a| (a.attempt_id, a.from_points, a.to_points))
            .collect();
        assert_eq!(
            changes,
            vec![
                (right.id, Some(2.0), Some(1.0)),
                (fixed.id, Some(1.0), Some(2.0))
            ]
        );
        assert!(p.attempts.iter().all(|a| a.grade_changed));
        assert_eq!(p.responses.len(), 2);
    }

    #[test]
    fn a_removed_question_scores_nothing_and_leaves_the_maximum() {
        let new = content(vec![
            question("q1", QuestionKind::Single, 1.0, &["a"]),
            question("q2", QuestionKind::Single, 1.0, &["a"]),
        ]);
        let a = attempt(true, &[("q1", "a", 1.0), ("q3", "a", 1.0)]);
        let p = plain(&old(), &new, &[a]);
        assert_eq!(p.questions[0].question_key, "q3");
        assert!(p.questions[0].removed);
        let c = &p.attempts[0];
        assert_eq!((c.to_score, c.to_max, c.from_max), (Some(1.0), 2.0, 3.0));
        assert_eq!(p.responses[0].points, 0.0);
        assert_eq!(p.responses[0].max_points, 1.0);
    }

    #[test]
    fn a_question_the_new_version_adds_is_listed_and_not_added_to_attempts_made_already() {
        let mut questions = old().questions;
        questions.push(question("q4", QuestionKind::Single, 1.0, &["a"]));
        let new = content(questions);
        let p = plain(&old(), &new, &[attempt(true, &[("q1", "a", 1.0)])]);
        assert!(!p.same_questions() && plain(&old(), &old(), &[]).same_questions());
        assert_eq!(p.questions.len(), 1);
        let q = &p.questions[0];
        assert!(q.added && q.from_points.is_none() && q.to_points == Some(1.0));
        assert!(
            p.attempts.is_empty(),
            "the maximum stays that of the questions served"
        );
    }

    #[test]
    fn an_override_stands_and_is_capped_at_a_smaller_maximum() {
        let new = content(vec![
            question("q1", QuestionKind::Single, 1.0, &["a"]),
            question("q2", QuestionKind::Single, 0.5, &["a"]),
            question("q3", QuestionKind::Single, 0.5, &["a"]),
        ]);
        let mut a = attempt(true, &[("q1", "a", 1.0)]);
        a.override_points = Some(2.5);
        let p = plain(&old(), &new, &[a]);
        let c = &p.attempts[0];
        assert_eq!(
            (c.from_points, c.to_points, c.to_max),
            (Some(2.5), Some(2.0), 2.0)
        );
        assert_eq!(p.grades[0].override_points, Some(2.0));
        assert!(c.grade_changed && c.overridden);
    }

    #[test]
    fn an_attempt_in_progress_is_regraded_but_has_no_grade_to_change() {
        let new = content(vec![
            question("q1", QuestionKind::Single, 1.0, &["b"]),
            question("q2", QuestionKind::Single, 1.0, &["a"]),
            question("q3", QuestionKind::Single, 1.0, &["a"]),
        ]);
        let p = plain(&old(), &new, &[attempt(false, &[("q1", "b", 0.0)])]);
        let c = &p.attempts[0];
        assert_eq!(
            (c.to_score, c.to_points, c.grade_changed),
            (None, None, false)
        );
        assert_eq!(p.responses[0].points, 1.0);
        assert_eq!(p.grades[0].score, None);
    }

    #[test]
    fn changed_texts_alone_change_no_grade() {
        let mut new = old();
        new.questions[0].prompt =
            crate::i18n::Text::from([("en".to_string(), "Clearer?".to_string())]);
        new.questions[1].options.reverse();
        let p = plain(&old(), &new, &[attempt(true, &[("q1", "a", 1.0)])]);
        assert!(p.questions.is_empty() && p.attempts.is_empty() && p.responses.is_empty());
    }

    #[test]
    fn rescoring_without_a_new_version_gives_full_marks_answered_or_not_and_drops_from_the_maximum()
    {
        let right = attempt(true, &[("q1", "a", 1.0), ("q2", "a", 1.0)]);
        let wrong = attempt(true, &[("q1", "b", 0.0)]);
        let open = attempt(false, &[("q1", "b", 0.0)]);
        let none = QuestionRules::default();
        let changes = std::collections::BTreeMap::from([
            ("q1".to_string(), Scoring::FullMarks),
            ("q3".to_string(), Scoring::Dropped),
        ]);
        let rules = none.changed(&old(), &changes);
        let p = plan(
            &old(),
            &old(),
            &[right.clone(), wrong.clone(), open.clone()],
            (&none, &rules),
        );
        let listed: Vec<(&str, Scoring, Scoring)> = (p.questions.iter())
            .map(|q| (q.question_key.as_str(), q.from_scoring, q.to_scoring))
            .collect();
        assert_eq!(
            listed,
            [
                ("q1", Scoring::Graded, Scoring::FullMarks),
                ("q3", Scoring::Graded, Scoring::Dropped)
            ]
        );
        assert!(
            p.same_questions() && p.responses.is_empty(),
            "responses keep the key's grade"
        );
        let scores: Vec<(Uuid, Option<f64>, f64, bool)> = (p.attempts.iter())
            .map(|a| (a.attempt_id, a.to_score, a.to_max, a.grade_changed))
            .collect();
        assert_eq!(
            scores,
            [
                (right.id, Some(2.0), 2.0, true),
                (wrong.id, Some(1.0), 2.0, true),
                (open.id, None, 2.0, false),
            ]
        );
        // Undone: graded by the key again.
        let undo = std::collections::BTreeMap::from([
            ("q1".to_string(), Scoring::Graded),
            ("q3".to_string(), Scoring::Graded),
        ]);
        assert_eq!(rules.changed(&old(), &undo), none);
    }

    #[test]
    fn a_rule_carries_over_to_a_new_version_with_its_points_unless_the_question_is_gone() {
        let changes = std::collections::BTreeMap::from([
            ("q1".to_string(), Scoring::FullMarks),
            ("q3".to_string(), Scoring::Dropped),
        ]);
        let rules = QuestionRules::default().changed(&old(), &changes);
        let new = content(vec![
            question("q1", QuestionKind::Single, 2.0, &["a"]),
            question("q2", QuestionKind::Single, 1.0, &["a"]),
        ]);
        let carried = rules.carried_to(&new);
        assert_eq!(carried.scoring("q1"), Scoring::FullMarks);
        assert_eq!(carried.scoring("q3"), Scoring::Graded);
        assert_eq!(carried.question("q1", 2.0, None), (2.0, 2.0));
    }

    proptest! {
        /// Regrading to the same content changes nothing, and applying a plan's new grades
        /// then planning again against the same new version changes nothing either.
        #[test]
        fn a_regrade_applied_once_has_nothing_left_to_change(
            old_correct in proptest::collection::vec(0usize..3, 3),
            new_correct in proptest::collection::vec(0usize..3, 3),
            new_points in proptest::collection::vec(1u8..4, 3),
            chosen in proptest::collection::vec(proptest::collection::vec(proptest::option::of(0usize..3), 3), 0..12),
            overrides in proptest::collection::vec(proptest::option::of(0u8..7), 12),
            rescored in proptest::collection::vec(0u8..3, 3),
        ) {
            let opts = ["a", "b", "c"];
            let keys = ["q1", "q2", "q3"];
            let make = |correct: &[usize], points: &[f64]| content(
                (0..3).map(|i| question(keys[i], QuestionKind::Single, points[i], &[opts[correct[i]]])).collect()
            );
            let old = make(&old_correct, &[1.0, 1.0, 1.0]);
            let new_points: Vec<f64> = new_points.iter().map(|p| f64::from(*p)).collect();
            let new = make(&new_correct, &new_points);
            let attempts: Vec<StoredAttempt> = chosen.iter().enumerate().map(|(n, picks)| {
                let responses: Vec<StoredResponse> = picks.iter().enumerate().filter_map(|(i, o)| {
                    o.map(|o| {
                        let answer = Answer::Selected(vec![opts[o].into()]);
                        let g = grade(&old.questions[i], &answer).unwrap();
                        StoredResponse { question_key: keys[i].into(), answer, points: g.points, max_points: g.max_points, correct: g.correct }
                    })
                }).collect();
                let score: f64 = responses.iter().map(|r| r.points).sum();
                StoredAttempt {
                    id: Uuid::from_u128(n as u128 + 1), user_id: Uuid::nil(), number: 1,
                    finished: n % 3 != 0, score: (n % 3 != 0).then_some(score),
                    override_points: overrides[n].filter(|_| n % 3 != 0).map(|o| f64::from(o).min(3.0)),
                    max_score: 3.0, served: keys.iter().map(|k| k.to_string()).collect(), responses,
                }
            }).collect();
            prop_assert!(plain(&old, &old, &attempts).attempts.is_empty());
            // Some questions rescored for everyone by the same regrade.
            let changes: std::collections::BTreeMap<String, Scoring> = keys.iter().zip(&rescored)
                .map(|(k, r)| (k.to_string(), [Scoring::Graded, Scoring::FullMarks, Scoring::Dropped][usize::from(*r)]))
                .collect();
            let none = QuestionRules::default();
            let rules = none.changed(&new, &changes);
            let p = plan(&old, &new, &attempts, (&none, &rules));
            // Apply the plan to the stored attempts, as the store does.
            let applied: Vec<StoredAttempt> = attempts.iter().map(|a| {
                let mut a = a.clone();
                for r in &mut a.responses {
                    if let Some(n) = p.responses.iter().find(|n| n.attempt == a.id && n.question_key == r.question_key) {
                        r.points = n.points; r.max_points = n.max_points; r.correct = n.correct;
                    }
                }
                if let Some(g) = p.grades.iter().find(|g| g.attempt == a.id) {
                    a.score = g.score; a.max_score = g.max_score; a.override_points = g.override_points;
                }
                a
            }).collect();
            prop_assert!(plan(&new, &new, &applied, (&rules, &rules)).attempts.is_empty());
            for a in &p.attempts {
                if let (Some(to), true) = (a.to_points, a.finished) {
                    prop_assert!(to >= 0.0 && to <= a.to_max + EPS);
                }
            }
        }
    }
}
