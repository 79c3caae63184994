//! Instructor analytics: Moodle's item analysis per quiz version, per language, at scale.

pub mod export;
pub mod generate;
pub mod models;
pub mod replica;
pub mod routes;
pub mod stats;
pub mod store;
pub mod sums;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::i18n::resolve;
use crate::quizzes::QuizVersion;
use models::{
    AttemptCounts, HistogramBin, LocaleDifference, LocalePairDif, LocaleQuestion, LocaleReport,
    OptionReport, QuestionReport, SlotReport, TestReport, VersionReport,
};
use stats::{
    DIF_MIN_GROUP, DifInsufficient, ScoreTable, homogeneity, mantel_haenszel_tables,
    random_guess_score,
};
use store::{AttemptScores, StateCounts};
use sums::VersionSums;

/// Rebuilds the count tables of these assignments (all, with `None`) that are not maintained
/// yet (attempts finished before they existed) or whose grading method changed, each in a
/// transaction of its own, on the primary (the analytics pool may be a replica). Stops between
/// two assignments when `shutdown` says so. Returns how many were rebuilt.
pub async fn rebuild_stale_sums(
    pool: &sqlx::PgPool,
    assignments: Option<&[uuid::Uuid]>,
    shutdown: Option<&crate::background::Shutdown>,
) -> Result<usize, sqlx::Error> {
    let stale = store::stale_sums(pool, assignments).await?;
    for (done, id) in stale.iter().enumerate() {
        if shutdown.is_some_and(|s| s.is_stopping()) {
            return Ok(done);
        }
        let mut tx = pool.begin().await?;
        // Once per assignment, over all its attempts: longer than a request's statement.
        store::long_statements(&mut *tx).await?;
        store::rebuild_sums(&mut *tx, *id).await?;
        tx.commit().await?;
    }
    Ok(stale.len())
}

/// Brings every assignment's count tables up to date once, at start-up, so that the first
/// report after an upgrade does not wait for it (about 0.6 ms per finished attempt).
pub async fn backfill_sums(pool: sqlx::PgPool, shutdown: crate::background::Shutdown) {
    match rebuild_stale_sums(&pool, None, Some(&shutdown)).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(assignments = n, "item analysis tables rebuilt"),
        Err(e) => {
            tracing::warn!(error = %e, "item analysis backfill failed; reports rebuild on use")
        }
    }
}

/// The significance level of the per-locale test.
pub const LOCALE_TEST_ALPHA: f64 = 0.01;

pub const LOCALE_TEST: &str = "Chi-square test of homogeneity on full marks versus not, by locale \
    (df = locales − 1), applied when every expected count is at least 5; flagged when p < 0.01.";

pub const DIF_METHOD: &str = "Mantel–Haenszel DIF per pair of locales (Holland & Thayer 1988): \
    attempts matched on the rest score (total minus the question, in whole points); only strata \
    where both groups appear count; full marks is correct. α_MH = Σ(A·D/N)/Σ(B·C/N), MH \
    chi-square with continuity correction, MH D-DIF = −2.35 ln α_MH with the Robins–Breslow–\
    Greenland standard error. ETS class (Zwick 2012, ETS RR-12-08): A when |D| < 1 or the MH \
    chi-square has p ≥ 0.05; C when |D| ≥ 1.5 and (|D| − 1)/SE > 1.645 (significantly above 1, \
    one-sided 5%); B otherwise. Insufficient data below 30 attempts per group in the shared \
    strata. `same_language`: both groups saw the question in the same language, so a difference \
    is not a translation effect.";

/// The languages a question is served in for a locale: its prompt's, then each option's.
fn served_languages(
    question: &crate::content::Question,
    locale: &str,
    source: &str,
) -> Vec<String> {
    let chain = [locale.to_string(), source.to_string()];
    std::iter::once(&question.prompt)
        .chain(question.options.iter().map(|o| &o.text))
        .map(|t| resolve(t, &chain).lang)
        .collect()
}

/// Mantel–Haenszel DIF of question `q` for every pair of locales, from the question's cells:
/// the stratum is the rest score (total − points) rounded to whole points, correct is full marks.
fn pair_difs(
    version: &QuizVersion,
    sums: &VersionSums,
    max: &[f64],
    q: usize,
    locales: &[&str],
) -> Vec<LocalePairDif> {
    let source = version.content.source_locale.as_str();
    let question = &version.content.questions[q];
    // The source locale first (the reference group wherever it is in a pair), then the rest.
    let mut locales: Vec<&str> = locales.to_vec();
    locales.sort_by_key(|l| (*l != source, *l));
    let cells: Vec<&sums::CellRow> = sums
        .cells
        .iter()
        .filter(|c| c.question_key == question.key && c.attempts > 0)
        .collect();
    let mut out = Vec::new();
    for (i, reference) in locales.iter().enumerate() {
        for focal in &locales[i + 1..] {
            let mut tables: BTreeMap<i64, [f64; 4]> = BTreeMap::new();
            for c in &cells {
                let is_focal = c.locale == *focal;
                if !is_focal && c.locale != *reference {
                    continue;
                }
                let stratum = (c.total - c.points).round() as i64;
                let correct = c.points >= max[q] - 1e-9;
                tables.entry(stratum).or_default()[stats::dif_cell(is_focal, correct)] +=
                    c.attempts as f64;
            }
            let reference_languages = served_languages(question, reference, source);
            let focal_languages = served_languages(question, focal, source);
            let mut pair = LocalePairDif {
                reference: reference.to_string(),
                focal: focal.to_string(),
                same_language: reference_languages == focal_languages,
                reference_languages,
                focal_languages,
                reference_attempts: 0,
                focal_attempts: 0,
                strata: 0,
                odds_ratio: None,
                chi_square: None,
                p_value: None,
                d_dif: None,
                d_dif_se: None,
                ets_class: None,
                note: None,
            };
            match mantel_haenszel_tables(tables) {
                Ok(mh) => {
                    pair.reference_attempts = mh.reference;
                    pair.focal_attempts = mh.focal;
                    pair.strata = mh.strata;
                    pair.odds_ratio = Some(mh.odds_ratio);
                    pair.chi_square = Some(mh.chi_square);
                    pair.p_value = Some(mh.p_value);
                    pair.d_dif = Some(mh.d_dif);
                    pair.d_dif_se = Some(mh.d_dif_se);
                    pair.ets_class = Some(mh.ets_class);
                }
                Err(DifInsufficient::TooFew { reference, focal }) => {
                    pair.reference_attempts = reference;
                    pair.focal_attempts = focal;
                    pair.note = Some(format!(
                        "insufficient data: fewer than {DIF_MIN_GROUP} attempts of a group in \
                         the rest-score strata both groups share"
                    ));
                }
                Err(DifInsufficient::NoVariation) => {
                    pair.note = Some(
                        "insufficient data: no variation (all right or all wrong) in the shared strata"
                            .into(),
                    );
                }
            }
            out.push(pair);
        }
    }
    out
}

/// The statistics of one quiz version over the counted attempts, from scratch: the attempts
/// are tallied into count tables first, then [`version_report`] does the rest. Pure.
pub fn version_report_from_attempts(
    version: &QuizVersion,
    counted: &[AttemptScores],
    counts: StateCounts,
    chain: &[String],
    page: (usize, usize),
) -> VersionReport {
    let keys: Vec<&str> = version
        .content
        .questions
        .iter()
        .map(|q| q.key.as_str())
        .collect();
    let sums = VersionSums::from_attempts(&keys, counted);
    version_report(version, &sums, counts, chain, page)
}

/// The slots of a quiz with banks, with their statistics from `table` (see [`SlotStats`]).
fn slot_reports(content: &crate::content::QuizContent, table: &ScoreTable) -> Vec<SlotReport> {
    use crate::content::Slot;
    (content.layout.iter().zip(table.slot_stats()).enumerate())
        .map(|(i, (slot, s))| {
            let (bank, tag, draw, questions) = match slot {
                Slot::Fixed { question } => (None, None, 1, vec![question.clone()]),
                Slot::Draw { bank, draw, tag } => (
                    Some(bank.clone()),
                    tag.clone(),
                    *draw as usize,
                    (content.candidates(slot).iter())
                        .map(|q| q.key.clone())
                        .collect(),
                ),
            };
            SlotReport {
                position: i + 1,
                bank,
                tag,
                draw,
                questions,
                attempts: s.n,
                facility: s.facility,
                standard_deviation: s.sd,
                discrimination_index: s.discrimination_index,
            }
        })
        .collect()
}

/// The statistics of one quiz version from its count tables (kept incrementally, or built
/// from the attempts). Costs the number of distinct values in the tables, not the number of
/// attempts. Pure.
pub fn version_report(
    version: &QuizVersion,
    sums: &VersionSums,
    counts: StateCounts,
    chain: &[String],
    page: (usize, usize),
) -> VersionReport {
    let questions = &version.content.questions;
    let max: Vec<f64> = questions.iter().map(|q| q.points).collect();
    let keyed: Vec<(&str, f64)> = questions
        .iter()
        .map(|q| (q.key.as_str(), q.points))
        .collect();
    let with_subsets = |mut t: ScoreTable, locale: Option<&str>| {
        t.subsets = sums.subsets(&version.content, locale);
        t
    };
    let table = with_subsets(sums.score_table(&keyed, None), None);
    let test = table.test_stats();
    let qstats = table.question_stats();
    let slots = slot_reports(&version.content, &table);
    let counted = sums.attempts(None) as usize;

    let mut answered: HashMap<&str, usize> = HashMap::new();
    for c in &sums.cells {
        *answered.entry(c.question_key.as_str()).or_default() += c.answered.max(0) as usize;
    }
    let mut seconds: HashMap<&str, Vec<(f64, u64)>> = HashMap::new();
    for s in sums.seconds.iter().filter(|s| s.attempts > 0) {
        seconds
            .entry(s.question_key.as_str())
            .or_default()
            .push((s.seconds, s.attempts as u64));
    }
    // Distractor analysis: per (question, option), the totals (percent) of those who chose it.
    let mut chosen: HashMap<(&str, &str), Vec<(f64, u64)>> = HashMap::new();
    for o in sums.options.iter().filter(|o| o.attempts > 0) {
        let total = if o.max_score > 0.0 {
            100.0 * o.score / o.max_score
        } else {
            0.0
        };
        chosen
            .entry((o.question_key.as_str(), o.option_key.as_str()))
            .or_default()
            .push((total, o.attempts as u64));
    }

    let (offset, limit) = page;
    let question_reports = questions
        .iter()
        .enumerate()
        .skip(offset)
        .take(limit)
        .map(|(i, q)| {
            let s = &qstats[i];
            let correct: Vec<bool> = q.options.iter().map(|o| o.correct).collect();
            QuestionReport {
                key: q.key.clone(),
                position: i + 1,
                kind: q.kind,
                prompt: resolve(&q.prompt, chain),
                max_points: q.points,
                attempts: s.n,
                responses: answered.get(q.key.as_str()).copied().unwrap_or(0),
                facility: s.facility,
                standard_deviation: s.sd,
                random_guess_score: random_guess_score(q.kind, &correct).map(|g| 100.0 * g),
                intended_weight: s.intended_weight,
                effective_weight: s.effective_weight,
                discrimination_index: s.discrimination_index,
                discriminative_efficiency: s.discriminative_efficiency,
                median_seconds: seconds.get(q.key.as_str()).and_then(|v| stats::w_median(v)),
                options: q
                    .options
                    .iter()
                    .map(|o| {
                        let totals = chosen.get(&(q.key.as_str(), o.key.as_str()));
                        OptionReport {
                            key: o.key.clone(),
                            text: resolve(&o.text, chain),
                            correct: o.correct,
                            count: totals.map_or(0, |t| stats::w_count(t) as usize),
                            mean_total: totals.and_then(|t| stats::w_mean(t)),
                        }
                    })
                    .collect(),
            }
        })
        .collect();

    // Per locale: the same statistics over each locale's attempts.
    let locale_names = sums.locales();
    let locale_tables: Vec<(&str, ScoreTable)> = locale_names
        .iter()
        .map(|l| (*l, with_subsets(sums.score_table(&keyed, Some(l)), Some(l))))
        .collect();
    let locales: Vec<LocaleReport> = locale_tables
        .iter()
        .map(|(locale, m)| LocaleReport {
            locale: locale.to_string(),
            attempts: stats::w_count(&m.totals) as usize,
            mean: m.test_stats().mean,
            questions: m
                .question_stats()
                .into_iter()
                .zip(questions)
                .map(|(s, q)| LocaleQuestion {
                    key: q.key.clone(),
                    attempts: s.n,
                    facility: s.facility,
                    discrimination_index: s.discrimination_index,
                })
                .collect(),
        })
        .collect();
    let locale_differences = questions
        .iter()
        .enumerate()
        .map(|(q, question)| {
            let groups: Vec<(u64, u64)> = locale_tables
                .iter()
                .map(|(_, m)| {
                    let full = m.cells[q]
                        .iter()
                        .filter(|(x, _, _)| *x >= max[q] - 1e-9)
                        .map(|(_, _, c)| c)
                        .sum();
                    // Trials: the attempts that served the question.
                    (full, m.cells[q].iter().map(|(_, _, c)| c).sum())
                })
                .collect();
            let mantel_haenszel = pair_difs(version, sums, &max, q, &locale_names);
            match homogeneity(&groups) {
                Some(h) => LocaleDifference {
                    key: question.key.clone(),
                    chi_square: Some(h.chi_square),
                    degrees_of_freedom: Some(h.degrees_of_freedom),
                    p_value: Some(h.p_value),
                    flagged: h.p_value < LOCALE_TEST_ALPHA,
                    note: None,
                    mantel_haenszel,
                },
                None => LocaleDifference {
                    key: question.key.clone(),
                    chi_square: None,
                    degrees_of_freedom: None,
                    p_value: None,
                    flagged: false,
                    note: Some(if groups.iter().filter(|g| g.1 > 0).count() < 2 {
                        "fewer than two locales".into()
                    } else {
                        "too few attempts (an expected count below 5) or no variation".into()
                    }),
                    mantel_haenszel,
                },
            }
        })
        .collect();

    VersionReport {
        quiz_version: version.version,
        counts: AttemptCounts {
            started: counts.started,
            finished: counts.finished,
            abandoned: counts.abandoned,
            in_progress: counts.in_progress,
            counted,
        },
        test: TestReport {
            mean: test.mean,
            median: test.median,
            standard_deviation: test.sd,
            skewness: test.skewness,
            kurtosis: test.kurtosis,
            cronbach_alpha: test.cronbach_alpha,
            error_ratio: test.error_ratio,
            standard_error: test.standard_error,
            histogram: test
                .histogram
                .iter()
                .enumerate()
                .map(|(i, c)| HistogramBin {
                    from: 10.0 * i as f64,
                    to: 10.0 * (i + 1) as f64,
                    count: *c,
                })
                .collect(),
        },
        questions: question_reports,
        total_questions: questions.len(),
        slots,
        offset,
        limit,
        locales,
        locale_differences,
        locale_test: LOCALE_TEST.into(),
        dif_method: DIF_METHOD.into(),
    }
}

/// Computed reports, keyed by everything that decides them, including the scope's
/// generation: an attempt starting or finishing makes a new key, so nothing stale is served.
/// At most [`Self::MAX_ENTRIES`], the most used kept (quick_cache, as every in-memory cache
/// of quizd; a stale key is simply never asked for again and ages out).
pub struct ReportCache(quick_cache::sync::Cache<String, Arc<VersionReport>>);

impl Default for ReportCache {
    fn default() -> Self {
        Self(quick_cache::sync::Cache::new(Self::MAX_ENTRIES))
    }
}

impl ReportCache {
    const MAX_ENTRIES: usize = 256;

    pub fn get(&self, key: &str) -> Option<Arc<VersionReport>> {
        self.0.get(key)
    }

    pub fn put(&self, key: String, report: Arc<VersionReport>) {
        self.0.insert(key, report);
    }
}
