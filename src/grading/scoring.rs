//! How each question counts in an assignment's scores, as its staff decided after the exam: a
//! question can be given full marks to everyone, or dropped from scoring, without a new
//! version of the quiz. Pure: the rules are a value of the assignment (`question_rules`, read
//! with it), applied here on top of the responses' own grades, which stay as the key graded
//! them (item analysis still shows how the question really performed).
//!
//! The rules:
//! - `full_marks`: every attempt that serves the question scores its full points on it,
//!   answered or not, whatever was answered (Canvas's "give everyone full credit").
//! - `dropped`: the question counts for nothing: it scores 0 and leaves the attempt's maximum
//!   (Moodle's way of dropping one: its mark set to 0). Learners still see it.
//! - `graded` (no rule): the response's grade, 0 when unanswered.
//!
//! A rule holds the question's points in the assignment's version, so that a finish, in SQL,
//! can give full marks to a question left unanswered (`attempts::store::finish_in` computes
//! the same sum as [`score`]); a regrade to another version carries each rule over with that
//! version's points ([`QuestionRules::carried_to`]).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::content::QuizContent;

/// How a question counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scoring {
    /// As the key grades the answer.
    #[default]
    Graded,
    /// Full points to every attempt that serves it.
    FullMarks,
    /// Counts for nothing: 0 points of 0.
    Dropped,
}

/// A question that does not count as graded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub scoring: Scoring,
    /// The question's points in the assignment's version.
    pub points: f64,
}

/// An assignment's rules by question key: only questions that are not `graded`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct QuestionRules(BTreeMap<String, Rule>);

impl QuestionRules {
    pub fn scoring(&self, key: &str) -> Scoring {
        self.0.get(key).map_or(Scoring::Graded, |r| r.scoring)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The rules of one question worth `points` (none when it is `graded`).
    pub fn of(key: &str, points: f64, scoring: Scoring) -> Self {
        Self::default().changed_one(key, points, scoring)
    }

    fn changed_one(mut self, key: &str, points: f64, scoring: Scoring) -> Self {
        if scoring == Scoring::Graded {
            self.0.remove(key);
        } else {
            self.0.insert(key.to_string(), Rule { scoring, points });
        }
        self
    }

    /// The rules for `content`, another version of the quiz: those of questions it still has,
    /// with its points.
    pub fn carried_to(&self, content: &QuizContent) -> Self {
        Self(
            self.0
                .iter()
                .filter_map(|(key, r)| {
                    let q = content.question(key)?;
                    Some((
                        key.clone(),
                        Rule {
                            points: q.points,
                            ..*r
                        },
                    ))
                })
                .collect(),
        )
    }

    /// These rules with the changes made: `graded` removes a question's rule. Every key must be
    /// a question of `content` (checked by the caller).
    pub fn changed(&self, content: &QuizContent, changes: &BTreeMap<String, Scoring>) -> Self {
        changes.iter().fold(self.clone(), |rules, (key, &scoring)| {
            let points = content.question(key).map_or(0.0, |q| q.points);
            rules.changed_one(key, points, scoring)
        })
    }

    /// What a question worth `points` scores under these rules, given its response's points
    /// (`None`: unanswered), and what it is worth: `(points, max_points)`.
    pub fn question(&self, key: &str, points: f64, response: Option<f64>) -> (f64, f64) {
        match self.scoring(key) {
            Scoring::Graded => (response.unwrap_or(0.0), points),
            Scoring::FullMarks => (points, points),
            Scoring::Dropped => (0.0, 0.0),
        }
    }
}

/// An attempt's score and maximum under `rules`: over the questions it serves (key and points
/// in its version), with its responses' points by key.
pub fn score<'a>(
    served: impl IntoIterator<Item = (&'a str, f64)>,
    responses: &HashMap<&str, f64>,
    rules: &QuestionRules,
) -> (f64, f64) {
    served
        .into_iter()
        .map(|(key, points)| rules.question(key, points, responses.get(key).copied()))
        .fold((0.0, 0.0), |(s, m), (p, x)| (s + p, m + x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rules(pairs: &[(&str, Scoring, f64)]) -> QuestionRules {
        QuestionRules(
            pairs
                .iter()
                .map(|&(k, scoring, points)| (k.to_string(), Rule { scoring, points }))
                .collect(),
        )
    }

    #[test]
    fn full_marks_count_an_unanswered_question_in_full_and_a_dropped_one_leaves_the_maximum() {
        let r = rules(&[
            ("q2", Scoring::FullMarks, 2.0),
            ("q3", Scoring::Dropped, 1.0),
        ]);
        let responses = HashMap::from([("q1", 1.0), ("q3", 1.0)]);
        let served = [("q1", 1.0), ("q2", 2.0), ("q3", 1.0)];
        assert_eq!(score(served, &responses, &r), (3.0, 3.0));
        assert_eq!(
            score(served, &responses, &QuestionRules::default()),
            (2.0, 4.0)
        );
    }

    #[test]
    fn the_rules_json_is_a_map_of_key_to_scoring_and_points() {
        let r = rules(&[("q2", Scoring::FullMarks, 2.0)]);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"q2": {"scoring": "full_marks", "points": 2.0}})
        );
        assert_eq!(serde_json::from_value::<QuestionRules>(json).unwrap(), r);
    }

    fn scoring() -> impl Strategy<Value = Scoring> {
        prop_oneof![
            Just(Scoring::Graded),
            Just(Scoring::FullMarks),
            Just(Scoring::Dropped)
        ]
    }

    proptest! {
        /// Whatever the rules, a score stays between 0 and its maximum, full marks never lower
        /// a score and dropping never raises the maximum; with no rules it is the responses'
        /// sum over the maximum of every served question.
        #[test]
        fn a_score_under_rules_stays_within_its_maximum_and_moves_the_way_each_rule_says(
            questions in prop::collection::vec((0u8..4, scoring(), prop::option::of(0u8..=4)), 1..12),
        ) {
            let keys: Vec<String> = (0..questions.len()).map(|i| format!("q{i}")).collect();
            let served: Vec<(&str, f64)> = keys
                .iter()
                .zip(&questions)
                .map(|(k, &(p, _, _))| (k.as_str(), f64::from(p)))
                .collect();
            // A response scores at most its question's points.
            let responses: HashMap<&str, f64> = keys
                .iter()
                .zip(&questions)
                .filter_map(|(k, &(p, _, r))| r.map(|r| (k.as_str(), f64::from(r.min(p)))))
                .collect();
            let r = QuestionRules(
                keys.iter()
                    .zip(&questions)
                    .filter(|(_, (_, s, _))| *s != Scoring::Graded)
                    .map(|(k, &(p, scoring, _))| (k.clone(), Rule { scoring, points: f64::from(p) }))
                    .collect(),
            );
            let (s, m) = score(served.iter().copied(), &responses, &r);
            let (s0, m0) = score(served.iter().copied(), &responses, &QuestionRules::default());
            prop_assert!(0.0 <= s && s <= m, "{s} of {m}");
            prop_assert!(m <= m0);
            prop_assert_eq!(s0, responses.values().sum::<f64>());
            prop_assert_eq!(m0, served.iter().map(|(_, p)| p).sum::<f64>());
            let only_full = QuestionRules(
                r.0.iter().filter(|(_, x)| x.scoring == Scoring::FullMarks)
                    .map(|(k, x)| (k.clone(), *x)).collect(),
            );
            let (sf, mf) = score(served.iter().copied(), &responses, &only_full);
            prop_assert!(sf >= s0 && mf == m0);
        }
    }
}
