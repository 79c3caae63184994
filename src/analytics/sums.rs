//! Incremental item analysis: the count tables that migration 0014 keeps per (assignment,
//! quiz version, locale, counted set), updated by `item_sums_finish` in the transaction that
//! finishes an attempt, and their conversion into [`ScoreTable`]s. Pure: no I/O (the SQL that
//! reads them is in `store.rs`).
//!
//! Every table holds integer counts keyed by values as stored (double precision points,
//! totals and scores), so adding and removing attempts is exact: the tables after any history
//! of finishes equal the tables built at once from the same attempts
//! ([`VersionSums::from_attempts`], used when a filter needs the attempts themselves). The
//! statistics from the tables agree with the per-attempt formulas to ~1e-12 relative (only
//! the order of floating-point additions differs).

use std::collections::{BTreeMap, HashMap};

use sqlx::FromRow;

#[cfg(test)]
use super::stats::ScoreMatrix;
use super::stats::{ScoreTable, Subsets};
use super::store::AttemptScores;
use crate::content::{QuizContent, Slot};

/// Attempts with one total (and score as stored), in one locale.
#[derive(Debug, Clone, PartialEq, FromRow)]
pub struct TotalRow {
    pub locale: String,
    pub score: f64,
    pub max_score: f64,
    pub total: f64,
    pub attempts: i64,
    pub abandoned: i64,
}

/// Attempts that scored `points` on a question with `total` on the test, in one locale.
#[derive(Debug, Clone, PartialEq, FromRow)]
pub struct CellRow {
    pub locale: String,
    pub question_key: String,
    pub points: f64,
    pub total: f64,
    pub attempts: i64,
    /// Of which answered the question.
    pub answered: i64,
}

/// Attempts that chose an option, by their score.
#[derive(Debug, Clone, PartialEq, FromRow)]
pub struct OptionRow {
    pub locale: String,
    pub question_key: String,
    pub option_key: String,
    pub score: f64,
    pub max_score: f64,
    pub attempts: i64,
}

/// Answers to a question that took `seconds` (whole seconds, rounded).
#[derive(Debug, Clone, PartialEq, FromRow)]
pub struct SecondsRow {
    pub locale: String,
    pub question_key: String,
    pub seconds: f64,
    pub attempts: i64,
}

/// The tables of one quiz version over the counted attempts, merged over the scope's
/// assignments. Rows are sorted and merged (no two rows with one key, no zero counts), so two
/// sums of the same attempts compare equal.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VersionSums {
    pub totals: Vec<TotalRow>,
    pub cells: Vec<CellRow>,
    pub options: Vec<OptionRow>,
    pub seconds: Vec<SecondsRow>,
}

/// Answer times are kept to the whole second, halves up: `floor(s + 0.5)` here and in
/// migration 0014 (PostgreSQL's `round` on double precision breaks ties platform-dependently).
pub fn whole_seconds(s: f64) -> f64 {
    (s + 0.5).floor()
}

type TotalKey = (String, u64, u64, u64);
type CellKey = (String, String, u64, u64);
type OptionKey = (String, String, String, u64, u64);
type SecondsKey = (String, String, u64);

/// Counts being built, keyed by exact bit patterns.
#[derive(Default)]
struct Builder {
    totals: BTreeMap<TotalKey, (i64, i64)>,
    cells: BTreeMap<CellKey, (i64, i64)>,
    options: BTreeMap<OptionKey, i64>,
    seconds: BTreeMap<SecondsKey, i64>,
}

/// A float as a map key: -0.0 and 0.0 are one value, as in PostgreSQL.
fn bits(x: f64) -> u64 {
    (x + 0.0).to_bits()
}

impl Builder {
    fn finish(self) -> VersionSums {
        let f = f64::from_bits;
        VersionSums {
            totals: self
                .totals
                .into_iter()
                .filter(|(_, (n, _))| *n != 0)
                .map(|((locale, s, m, t), (attempts, abandoned))| TotalRow {
                    locale,
                    score: f(s),
                    max_score: f(m),
                    total: f(t),
                    attempts,
                    abandoned,
                })
                .collect(),
            cells: self
                .cells
                .into_iter()
                .filter(|(_, (n, _))| *n != 0)
                .map(
                    |((locale, question_key, x, t), (attempts, answered))| CellRow {
                        locale,
                        question_key,
                        points: f(x),
                        total: f(t),
                        attempts,
                        answered,
                    },
                )
                .collect(),
            options: self
                .options
                .into_iter()
                .filter(|(_, n)| *n != 0)
                .map(
                    |((locale, question_key, option_key, s, m), attempts)| OptionRow {
                        locale,
                        question_key,
                        option_key,
                        score: f(s),
                        max_score: f(m),
                        attempts,
                    },
                )
                .collect(),
            seconds: self
                .seconds
                .into_iter()
                .filter(|(_, n)| *n != 0)
                .map(|((locale, question_key, s), attempts)| SecondsRow {
                    locale,
                    question_key,
                    seconds: f(s),
                    attempts,
                })
                .collect(),
        }
    }

    /// Adds (sign 1) or removes (sign −1) one attempt, as `item_sums_apply` does.
    /// Only the questions the attempt served count (migration 0017): an attempt with a
    /// question set is in the cells of those questions alone, and its total is over them.
    fn apply(&mut self, questions: &[&str], a: &AttemptScores, sign: i64) {
        let served: Vec<bool> = questions
            .iter()
            .map(|q| {
                a.question_set
                    .as_ref()
                    .is_none_or(|s| s.iter().any(|k| k == q))
            })
            .collect();
        let mut points = vec![None; questions.len()];
        for ((key, x), secs) in a.keys.iter().zip(&a.points).zip(&a.seconds) {
            if let Some(q) = questions.iter().position(|k| *k == key)
                && served[q]
            {
                points[q] = Some((*x, *secs));
            }
        }
        let total: f64 = points.iter().map(|p| p.map_or(0.0, |p| p.0)).sum();
        let t = self
            .totals
            .entry((
                a.locale.clone(),
                bits(a.score),
                bits(a.max_score),
                bits(total),
            ))
            .or_default();
        t.0 += sign;
        for ((q, p), _) in questions
            .iter()
            .zip(&points)
            .zip(&served)
            .filter(|(_, s)| **s)
        {
            let x = p.map_or(0.0, |p| p.0);
            let c = self
                .cells
                .entry((a.locale.clone(), q.to_string(), bits(x), bits(total)))
                .or_default();
            c.0 += sign;
            if let Some((_, secs)) = p {
                c.1 += sign;
                *self
                    .seconds
                    .entry((a.locale.clone(), q.to_string(), bits(whole_seconds(*secs))))
                    .or_default() += sign;
            }
        }
        for choice in &a.choices {
            if let Some((q, o)) = choice.split_once(':') {
                *self
                    .options
                    .entry((
                        a.locale.clone(),
                        q.to_string(),
                        o.to_string(),
                        bits(a.score),
                        bits(a.max_score),
                    ))
                    .or_default() += sign;
            }
        }
    }
}

impl VersionSums {
    /// The tables of these attempts, built at once (the from-scratch computation). `questions`:
    /// the version's question keys, in order. Attempts finished by their deadline are not
    /// known here: `abandoned` is 0.
    pub fn from_attempts(questions: &[&str], attempts: &[AttemptScores]) -> Self {
        let mut b = Builder::default();
        for a in attempts {
            b.apply(questions, a, 1);
        }
        b.finish()
    }

    /// The tables after a history of finishes (+) and replacements (−), one attempt at a time,
    /// as the finish transactions build them. For checking that the two ways agree.
    pub fn from_history(questions: &[&str], history: &[(&AttemptScores, i64)]) -> Self {
        let mut b = Builder::default();
        for (a, sign) in history {
            b.apply(questions, a, *sign);
        }
        b.finish()
    }

    /// Merges rows with one key (from several assignments) and drops zero counts.
    pub fn normalized(self) -> Self {
        let mut b = Builder::default();
        for r in self.totals {
            let e = b
                .totals
                .entry((r.locale, bits(r.score), bits(r.max_score), bits(r.total)))
                .or_default();
            e.0 += r.attempts;
            e.1 += r.abandoned;
        }
        for r in self.cells {
            let e = b
                .cells
                .entry((r.locale, r.question_key, bits(r.points), bits(r.total)))
                .or_default();
            e.0 += r.attempts;
            e.1 += r.answered;
        }
        for r in self.options {
            *b.options
                .entry((
                    r.locale,
                    r.question_key,
                    r.option_key,
                    bits(r.score),
                    bits(r.max_score),
                ))
                .or_default() += r.attempts;
        }
        for r in self.seconds {
            *b.seconds
                .entry((r.locale, r.question_key, bits(r.seconds)))
                .or_default() += r.attempts;
        }
        b.finish()
    }

    /// The locales with counted attempts, in order.
    pub fn locales(&self) -> Vec<&str> {
        let mut l: Vec<&str> = self.totals.iter().map(|t| t.locale.as_str()).collect();
        l.sort_unstable();
        l.dedup();
        l
    }

    /// Counted attempts (in one locale, or all).
    pub fn attempts(&self, locale: Option<&str>) -> u64 {
        self.totals
            .iter()
            .filter(|t| locale.is_none_or(|l| t.locale == l))
            .map(|t| t.attempts.max(0) as u64)
            .sum()
    }

    /// The score table of one locale's attempts, or of all: questions in `questions` order.
    pub fn score_table(&self, questions: &[(&str, f64)], locale: Option<&str>) -> ScoreTable {
        let index: HashMap<&str, usize> = questions
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (*k, i))
            .collect();
        let mut cells = vec![Vec::new(); questions.len()];
        for c in self
            .cells
            .iter()
            .filter(|c| locale.is_none_or(|l| c.locale == l) && c.attempts > 0)
        {
            if let Some(&q) = index.get(c.question_key.as_str()) {
                cells[q].push((c.points, c.total, c.attempts as u64));
            }
        }
        ScoreTable {
            subsets: None,
            max: questions.iter().map(|(_, m)| *m).collect(),
            totals: self
                .totals
                .iter()
                .filter(|t| locale.is_none_or(|l| t.locale == l) && t.attempts > 0)
                .map(|t| (t.total, t.attempts as u64))
                .collect(),
            cells,
        }
    }
}

impl VersionSums {
    /// What the test statistics of a quiz with banks need beyond the score table (see
    /// [`Subsets`]); `None` for a quiz without banks. `questions`: the version's, in order.
    pub fn subsets(&self, content: &QuizContent, locale: Option<&str>) -> Option<Subsets> {
        if !content.draws() {
            return None;
        }
        let index = |key: &str| content.questions.iter().position(|q| q.key == key);
        let items = content
            .layout
            .iter()
            .map(|slot| match slot {
                Slot::Fixed { question } => (index(question).into_iter().collect(), 1),
                Slot::Draw { draw, .. } => (
                    content
                        .candidates(slot)
                        .iter()
                        .filter_map(|q| index(&q.key))
                        .collect(),
                    *draw as usize,
                ),
            })
            .collect();
        Some(Subsets {
            percent: self
                .totals
                .iter()
                .filter(|t| locale.is_none_or(|l| t.locale == l) && t.attempts > 0)
                .map(|t| {
                    let p = if t.max_score > 0.0 {
                        100.0 * t.total / t.max_score
                    } else {
                        0.0
                    };
                    (p, t.attempts as u64)
                })
                .collect(),
            max_total: content.nominal_max_score(),
            items,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use uuid::Uuid;

    use super::*;

    const QUESTIONS: [&str; 4] = ["q1", "q2", "q3", "q4"];

    /// An attempt from (locale, per question: None unanswered or (quarter points, seconds, option)).
    fn attempt(locale: u8, answers: &[Option<(u8, u16, u8)>]) -> AttemptScores {
        let mut a = AttemptScores {
            attempt_id: Uuid::nil(),
            locale: ["en", "bn", "id"][usize::from(locale % 3)].into(),
            score: 0.0,
            max_score: 4.0,
            keys: vec![],
            points: vec![],
            seconds: vec![],
            choices: vec![],
            question_set: None,
        };
        for (q, answer) in QUESTIONS.iter().zip(answers) {
            if let Some((x, secs, option)) = answer {
                let x = f64::from(*x) / 4.0;
                a.keys.push(q.to_string());
                a.points.push(x);
                a.seconds.push(f64::from(*secs) / 10.0);
                a.choices.push(format!("{q}:o{option}"));
                a.score += x;
            }
        }
        a
    }

    fn attempts() -> impl Strategy<Value = Vec<AttemptScores>> {
        proptest::collection::vec(
            (
                0u8..3,
                proptest::collection::vec(proptest::option::of((0u8..=4, 0u16..600, 0u8..4)), 4),
            )
                .prop_map(|(l, a)| attempt(l, &a)),
            0..40,
        )
    }

    /// Attempts that served only some questions (a quiz with banks): each either serves all
    /// (no question set) or the questions its mask says, and answered only those.
    fn subset_attempts() -> impl Strategy<Value = Vec<AttemptScores>> {
        proptest::collection::vec(
            (
                0u8..3,
                proptest::collection::vec(proptest::option::of((0u8..=4, 0u16..600, 0u8..4)), 4),
                proptest::option::of(0u8..16),
            )
                .prop_map(|(l, answers, mask)| {
                    let served = |q: usize| mask.is_none_or(|m| m & (1 << q) != 0);
                    let answers: Vec<_> = answers
                        .iter()
                        .enumerate()
                        .map(|(q, a)| a.filter(|_| served(q)))
                        .collect();
                    let mut a = attempt(l, &answers);
                    a.question_set = mask.map(|_| {
                        (0..4)
                            .filter(|&q| served(q))
                            .map(|q| QUESTIONS[q].to_string())
                            .collect()
                    });
                    a
                }),
            0..40,
        )
    }

    /// A score table with rows of one key merged (the sums keep locales apart).
    #[allow(clippy::type_complexity)]
    fn collapse(t: &ScoreTable) -> (BTreeMap<u64, u64>, Vec<BTreeMap<(u64, u64), u64>>) {
        let mut totals = BTreeMap::new();
        for (x, c) in &t.totals {
            *totals.entry(x.to_bits()).or_default() += c;
        }
        let cells = t
            .cells
            .iter()
            .map(|q| {
                let mut m = BTreeMap::new();
                for (x, y, c) in q {
                    *m.entry((x.to_bits(), y.to_bits())).or_default() += c;
                }
                m
            })
            .collect();
        (totals, cells)
    }

    proptest! {
        #[test]
        fn finishing_and_replacing_attempts_one_by_one_keeps_the_tables_built_at_once(
            kept in attempts(),
            replaced in attempts(),
            order in any::<u64>(),
        ) {
            // Every replaced attempt is added, later removed, interleaved with the kept ones.
            let mut history: Vec<(&AttemptScores, i64)> = kept.iter().map(|a| (a, 1)).collect();
            for (i, a) in replaced.iter().enumerate() {
                let at = (order as usize).wrapping_add(i * 7) % (history.len() + 1);
                history.insert(at, (a, 1));
                history.push((a, -1));
            }
            let incremental = VersionSums::from_history(&QUESTIONS, &history);
            let at_once = VersionSums::from_attempts(&QUESTIONS, &kept);
            prop_assert_eq!(&incremental, &at_once);
            // Split over two assignments and merged, as a report over both reads them.
            let (one, two) = kept.split_at(kept.len() / 2);
            let a = VersionSums::from_attempts(&QUESTIONS, one);
            let b = VersionSums::from_attempts(&QUESTIONS, two);
            let merged = VersionSums {
                totals: [a.totals, b.totals].concat(),
                cells: [a.cells, b.cells].concat(),
                options: [a.options, b.options].concat(),
                seconds: [a.seconds, b.seconds].concat(),
            }
            .normalized();
            prop_assert_eq!(&merged, &at_once);
            prop_assert_eq!(at_once.attempts(None), kept.len() as u64);
        }

        #[test]
        fn with_question_sets_finishing_one_by_one_keeps_the_tables_built_at_once(
            kept in subset_attempts(),
            replaced in subset_attempts(),
        ) {
            let mut history: Vec<(&AttemptScores, i64)> = kept.iter().map(|a| (a, 1)).collect();
            for a in &replaced {
                history.insert(history.len() / 2, (a, 1));
                history.push((a, -1));
            }
            prop_assert_eq!(
                VersionSums::from_history(&QUESTIONS, &history),
                VersionSums::from_attempts(&QUESTIONS, &kept)
            );
        }

        #[test]
        fn with_question_sets_each_question_is_counted_over_the_attempts_that_served_it(
            kept in subset_attempts(),
        ) {
            let sums = VersionSums::from_attempts(&QUESTIONS, &kept);
            let max: Vec<(&str, f64)> = QUESTIONS.iter().map(|q| (*q, 1.0)).collect();
            let served = |a: &AttemptScores, q: &str| {
                a.question_set.as_ref().is_none_or(|s| s.iter().any(|k| k == q))
            };
            let points = |a: &AttemptScores, q: &str| {
                a.keys.iter().position(|k| k == q).map_or(0.0, |i| a.points[i])
            };
            for locale in [None, Some("en"), Some("bn"), Some("id")] {
                let mine: Vec<&AttemptScores> =
                    kept.iter().filter(|a| locale.is_none_or(|l| a.locale == l)).collect();
                let total = |a: &AttemptScores| -> f64 {
                    QUESTIONS.iter().filter(|q| served(a, q)).map(|q| points(a, q)).sum()
                };
                // The per-attempt matrix, each question's column over the attempts it served.
                let mut totals = BTreeMap::new();
                for a in &mine {
                    *totals.entry(bits(total(a))).or_insert(0u64) += 1;
                }
                let cells: Vec<BTreeMap<(u64, u64), u64>> = QUESTIONS
                    .iter()
                    .map(|q| {
                        let mut m = BTreeMap::new();
                        for a in mine.iter().filter(|a| served(a, q)) {
                            *m.entry((bits(points(a, q)), bits(total(a)))).or_default() += 1;
                        }
                        m
                    })
                    .collect();
                let table = sums.score_table(&max, locale);
                prop_assert_eq!(collapse(&table), (totals, cells));
                for (q, key) in QUESTIONS.iter().enumerate() {
                    let n = mine.iter().filter(|a| served(a, key)).count();
                    prop_assert_eq!(table.question_stats()[q].n, n);
                }
            }
        }

        #[test]
        fn the_score_table_of_the_sums_is_the_score_matrix_of_the_attempts(kept in attempts()) {
            let sums = VersionSums::from_attempts(&QUESTIONS, &kept);
            let max: Vec<(&str, f64)> = QUESTIONS.iter().map(|q| (*q, 1.0)).collect();
            for locale in [None, Some("en"), Some("bn"), Some("id")] {
                let rows: Vec<Vec<f64>> = kept
                    .iter()
                    .filter(|a| locale.is_none_or(|l| a.locale == l))
                    .map(|a| {
                        QUESTIONS
                            .iter()
                            .map(|q| a.keys.iter().position(|k| k == q).map_or(0.0, |i| a.points[i]))
                            .collect()
                    })
                    .collect();
                let matrix = ScoreMatrix { scores: &rows, max: &[1.0; 4] };
                let expected = ScoreTable::from_matrix(&matrix);
                let table = sums.score_table(&max, locale);
                prop_assert_eq!(&table.max, &expected.max);
                prop_assert_eq!(collapse(&table), collapse(&expected));
            }
        }
    }
}
