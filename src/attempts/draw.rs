//! Which questions an attempt serves when its quiz has banks: the draw. Pure: no I/O.
//!
//! Made once, when the attempt starts, and stored with it (`attempts.question_set`), so that
//! resuming, answering, finishing and any later regrade read what was drawn rather than draw
//! again. Each slot draws with its own stream (SplitMix64 seeded from the attempt's secret seed
//! and the slot's position, [`AttemptKeys::draw_seed`]): uniformly among the slot's candidates
//! that the learner has not seen in an earlier attempt of the assignment, and, when those are
//! too few, the rest uniformly among the ones already seen. A slot's drawn questions are served
//! in bank order (then shuffled with the rest if the policy shuffles questions).

use std::collections::HashSet;

use super::shuffle::{AttemptKeys, SplitMix64};
use crate::content::{QuizContent, Slot};

/// Indices of `k` of `candidates`, in candidate order: uniformly among the unseen ones first
/// (a partial Fisher–Yates), then, for what they cannot fill, uniformly among the seen ones.
pub fn sample(
    candidates: &[&str],
    k: usize,
    seen: &HashSet<String>,
    rng: &mut SplitMix64,
) -> Vec<usize> {
    let (mut unseen, mut again): (Vec<usize>, Vec<usize>) =
        (0..candidates.len()).partition(|&i| !seen.contains(candidates[i]));
    let mut chosen = Vec::with_capacity(k);
    for pool in [&mut unseen, &mut again] {
        let want = (k - chosen.len()).min(pool.len());
        for i in 0..want {
            let j = i + rng.below((pool.len() - i) as u64) as usize;
            pool.swap(i, j);
            chosen.push(pool[i]);
        }
    }
    chosen.sort_unstable();
    chosen
}

/// The keys of the questions an attempt with this seed serves, in layout order; `None` for a
/// quiz without banks (every question is served, and nothing is stored). `seen`: the keys the
/// learner was served in earlier attempts of the same assignment.
pub fn draw(content: &QuizContent, seed: &[u8], seen: &HashSet<String>) -> Option<Vec<String>> {
    if !content.draws() {
        return None;
    }
    let keys = AttemptKeys { seed };
    let mut out = Vec::with_capacity(content.served_count());
    for (i, slot) in content.layout.iter().enumerate() {
        match slot {
            Slot::Fixed { question } => out.push(question.clone()),
            Slot::Draw { draw, .. } => {
                let candidates: Vec<&str> = content
                    .candidates(slot)
                    .into_iter()
                    .map(|q| q.key.as_str())
                    .collect();
                let mut rng = SplitMix64::new(keys.draw_seed(i));
                let picked = sample(&candidates, *draw as usize, seen, &mut rng);
                out.extend(picked.into_iter().map(|c| candidates[c].to_string()));
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::content::{QuizSource, SourceFile, compile};

    /// A quiz with a fixed question, a slot drawing 2 of bank `a` (5 questions, 2 tagged `x`),
    /// a fixed one, and a slot drawing 1 tagged `x` from bank `b`.
    fn quiz() -> QuizContent {
        let q = |key: &str, tags: &str| {
            format!(
                "[[banks.questions]]\nkey = \"{key}\"\nkind = \"true_false\"\nprompt = \"P\"\n\
                 explanation = \"E\"\nanswer = true\ntags = [{tags}]\n"
            )
        };
        let fixed = |key: &str| {
            format!(
                "[[questions]]\nkey = \"{key}\"\nkind = \"true_false\"\nprompt = \"P\"\n\
                 explanation = \"E\"\nanswer = true\n"
            )
        };
        let mut text = String::from("slug = \"b\"\ntitle = \"B\"\n");
        text += &fixed("f1");
        text += "[[questions]]\nbank = \"a\"\ndraw = 2\n";
        text += &fixed("f2");
        text += "[[questions]]\nbank = \"b\"\ndraw = 1\ntag = \"x\"\n";
        text += "[[banks]]\nkey = \"a\"\n";
        for k in ["a1", "a2", "a3", "a4", "a5"] {
            text += &q(k, "");
        }
        text += "[[banks]]\nkey = \"b\"\n";
        text += &q("b1", "\"x\"");
        text += &q("b2", "");
        text += &q("b3", "\"x\", \"y\"");
        compile(&QuizSource {
            quiz: SourceFile {
                name: "quiz.toml".into(),
                text,
            },
            translations: vec![],
        })
        .unwrap()
    }

    fn seed(n: u64) -> [u8; 32] {
        let mut s = [0u8; 32];
        s[..8].copy_from_slice(&n.to_le_bytes());
        s
    }

    #[test]
    fn a_quiz_without_banks_draws_nothing_and_serves_every_question() {
        let mut c = quiz();
        c.layout.clear();
        assert_eq!(draw(&c, &seed(1), &HashSet::new()), None);
    }

    #[test]
    fn the_draw_is_pinned_for_a_seed() {
        // Pinned: a change to the algorithm changes what a seed draws (give it a new label).
        let drawn = draw(&quiz(), &seed(7), &HashSet::new()).unwrap();
        assert_eq!(drawn, ["f1", "a1", "a3", "f2", "b3"]);
    }

    proptest! {
        #[test]
        fn every_slot_is_filled_in_layout_order_without_duplicates(
            s in any::<u64>(),
            seen in proptest::collection::hash_set(
                proptest::sample::select(vec!["a1", "a2", "a3", "a4", "a5", "b1", "b2", "b3"]), 0..8),
        ) {
            let seen: HashSet<String> = seen.into_iter().map(String::from).collect();
            let c = quiz();
            let drawn = draw(&c, &seed(s), &seen).unwrap();
            prop_assert_eq!(drawn.len(), c.served_count());
            prop_assert_eq!(drawn.len(), 5);
            prop_assert_eq!(drawn[0].as_str(), "f1");
            prop_assert!(drawn[1].starts_with('a') && drawn[2].starts_with('a'));
            prop_assert!(drawn[1] < drawn[2], "bank order, no duplicate: {:?}", drawn);
            prop_assert_eq!(drawn[3].as_str(), "f2");
            prop_assert!(["b1", "b3"].contains(&drawn[4].as_str()), "the tag filter: {:?}", drawn);
            let distinct: HashSet<&String> = drawn.iter().collect();
            prop_assert_eq!(distinct.len(), drawn.len());
        }

        #[test]
        fn the_draw_is_deterministic_per_seed(s in any::<u64>()) {
            let seen = HashSet::from(["a2".to_string()]);
            prop_assert_eq!(draw(&quiz(), &seed(s), &seen), draw(&quiz(), &seed(s), &seen));
        }

        #[test]
        fn unseen_questions_are_drawn_before_seen_ones(
            n in 1usize..12,
            k in 1usize..12,
            seen_mask in any::<u16>(),
            s in any::<u64>(),
        ) {
            let k = k.min(n);
            let names: Vec<String> = (0..n).map(|i| format!("q{i}")).collect();
            let candidates: Vec<&str> = names.iter().map(String::as_str).collect();
            let seen: HashSet<String> =
                (0..n).filter(|i| seen_mask & (1 << i) != 0).map(|i| names[i].clone()).collect();
            let picked = sample(&candidates, k, &seen, &mut SplitMix64::new(s));
            prop_assert_eq!(picked.len(), k);
            prop_assert!(picked.windows(2).all(|w| w[0] < w[1]), "sorted, distinct");
            let unseen = n - seen.len();
            let picked_unseen = picked.iter().filter(|&&i| !seen.contains(&names[i])).count();
            prop_assert_eq!(picked_unseen, k.min(unseen));
        }
    }

    #[test]
    fn successive_attempts_see_the_whole_bank_before_any_question_again() {
        let c = quiz();
        for s in 0..50 {
            let mut seen = HashSet::new();
            let mut bank_a = Vec::new();
            // 2 of 5 per attempt: attempts 1 and 2 draw 4 distinct, the third the last one first.
            for attempt in 0..3u64 {
                let drawn = draw(&c, &seed(s * 10 + attempt), &seen).unwrap();
                bank_a.push([drawn[1].clone(), drawn[2].clone()]);
                seen.extend(drawn);
            }
            let first_four: HashSet<&String> = bank_a[..2].iter().flatten().collect();
            assert_eq!(first_four.len(), 4, "{bank_a:?}");
            assert!(
                bank_a[2].iter().any(|k| !first_four.contains(k)),
                "{bank_a:?}"
            );
        }
    }

    #[test]
    fn the_draw_is_uniform_over_the_bank() {
        // 2 of 5 from bank `a` over 10,000 fixed seeds: each question is expected 4,000 times.
        // Chi-square with 4 degrees of freedom; 18.47 is its 0.1% point, so a sound draw fails
        // this fixed seed list with a probability below 1/1000, and it never flakes (it is fixed).
        let c = quiz();
        let mut counts = std::collections::BTreeMap::<String, f64>::new();
        let mut pairs = std::collections::BTreeMap::<(String, String), f64>::new();
        let runs = 10_000u64;
        for s in 0..runs {
            let drawn = draw(&c, &seed(s), &HashSet::new()).unwrap();
            for k in &drawn[1..3] {
                *counts.entry(k.clone()).or_default() += 1.0;
            }
            *pairs
                .entry((drawn[1].clone(), drawn[2].clone()))
                .or_default() += 1.0;
        }
        assert_eq!(counts.len(), 5);
        let expected = runs as f64 * 2.0 / 5.0;
        let chi: f64 = counts
            .values()
            .map(|o| (o - expected).powi(2) / expected)
            .sum();
        assert!(chi < 18.47, "chi-square {chi} over {counts:?}");
        // Every one of the 10 pairs equally likely: 9 degrees of freedom, 0.1% point 27.88.
        assert_eq!(pairs.len(), 10);
        let expected = runs as f64 / 10.0;
        let chi: f64 = pairs
            .values()
            .map(|o| (o - expected).powi(2) / expected)
            .sum();
        assert!(chi < 27.88, "chi-square {chi} over {pairs:?}");
    }
}
