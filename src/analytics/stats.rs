//! Item analysis as Moodle's quiz statistics report computes it, plus a per-locale test.
//! Pure functions over scores: no I/O. Undefined statistics are `None`, never NaN.
//!
//! Formulas (Moodle, "Quiz statistics calculations"): with n attempts, P questions, x_i the
//! score on question i, T the total score and X_{-i} = T − x_i the rest of the test:
//! mean, median, sample standard deviation; skewness k3/k2^(3/2) and kurtosis k4/k2² from the
//! k-statistics; Cronbach's alpha CIC = P/(P−1)·(1 − ΣV(x_i)/V(T)); error ratio
//! ER = √(1 − CIC); standard error SE = ER·SD; facility = mean(x_i)/max_i; discrimination =
//! r(x_i, X_{-i}); discriminative efficiency = Cov(x_i, X_{-i}) / Cov_max, where Cov_max pairs
//! both variables sorted independently; effective weight = √Cov(x_i,T) / Σ_j √Cov(x_j,T).

/// Mean of a slice; `None` when empty.
pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Median; `None` when empty.
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    Some(if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    })
}

/// Sample covariance (n − 1); `None` for fewer than two values.
pub fn covariance(a: &[f64], b: &[f64]) -> Option<f64> {
    let n = a.len();
    if n < 2 || b.len() != n {
        return None;
    }
    let (ma, mb) = (mean(a)?, mean(b)?);
    Some(
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - ma) * (y - mb))
            .sum::<f64>()
            / (n - 1) as f64,
    )
}

/// The error ratio, √(1 − alpha). Alpha can be negative; the ratio is defined only for
/// 0 ≤ alpha ≤ 1, where an alpha within rounding noise of either end counts as that end (the
/// same alpha summed in another order, from a frequency table, can be −1e-16 or 0).
fn error_ratio(alpha: Option<f64>) -> Option<f64> {
    alpha
        .filter(|a| (-EPS..=1.0 + EPS).contains(a))
        .map(|a| (1.0 - a).max(0.0).sqrt())
}

pub fn variance(a: &[f64]) -> Option<f64> {
    covariance(a, a)
}

/// A value, or `None` when it is not a finite number.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// Variances this small are zero: the scores do not vary.
const EPS: f64 = 1e-12;

/// The square roots of each question's covariance with the total, and their sum, for the
/// effective weights: they exist only when every question covaries non-negatively with the
/// total. A covariance within [`EPS`] of zero is zero (its sign is rounding).
fn effective_roots(covs: &[Option<f64>]) -> (Option<Vec<f64>>, Option<f64>) {
    let roots: Option<Vec<f64>> = covs
        .iter()
        .map(|c| {
            c.filter(|c| *c >= -EPS)
                .map(|c| if c <= EPS { 0.0 } else { c.sqrt() })
        })
        .collect();
    let sum = roots.as_ref().map(|r| r.iter().sum());
    (roots, sum)
}

/// Pearson correlation; `None` when either variable does not vary.
pub fn correlation(a: &[f64], b: &[f64]) -> Option<f64> {
    let (va, vb) = (variance(a)?, variance(b)?);
    if va <= EPS || vb <= EPS {
        return None;
    }
    finite(covariance(a, b)? / (va * vb).sqrt())
}

/// Skewness and kurtosis from the k-statistics (as Moodle reports them): those of the
/// frequency table where each value counts once.
pub fn skewness_kurtosis(v: &[f64]) -> (Option<f64>, Option<f64>) {
    let table: Vec<(f64, u64)> = v.iter().map(|x| (*x, 1)).collect();
    w_skewness_kurtosis(&table)
}

/// Covariance of two variables each sorted on its own: the largest covariance their values
/// allow (the denominator of discriminative efficiency).
pub fn max_covariance(a: &[f64], b: &[f64]) -> Option<f64> {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    covariance(&a, &b)
}

/// The test as a whole, on the percentage scale (0–100) like Moodle.
#[derive(Debug, Clone, PartialEq)]
pub struct TestStats {
    pub n: usize,
    pub mean: Option<f64>,
    pub median: Option<f64>,
    pub sd: Option<f64>,
    pub skewness: Option<f64>,
    pub kurtosis: Option<f64>,
    /// Cronbach's alpha, as a percentage.
    pub cronbach_alpha: Option<f64>,
    /// √(1 − alpha), as a percentage.
    pub error_ratio: Option<f64>,
    /// error ratio × SD, in percentage points.
    pub standard_error: Option<f64>,
    /// Ten bins of 10 points: [0,10), …, [90,100].
    pub histogram: [usize; 10],
}

#[derive(Debug, Clone, PartialEq)]
pub struct QuestionStats {
    pub n: usize,
    /// Mean score as a percentage of the question's points.
    pub facility: Option<f64>,
    /// SD of the score as a percentage of the question's points.
    pub sd: Option<f64>,
    pub intended_weight: Option<f64>,
    pub effective_weight: Option<f64>,
    /// r(x_i, X_{-i}) × 100.
    pub discrimination_index: Option<f64>,
    /// Cov(x_i, X_{-i}) / Cov_max × 100.
    pub discriminative_efficiency: Option<f64>,
}

/// One slot of a quiz with banks, over every (attempt, question) pair it served: the mark as a
/// fraction of the question's points (Moodle scales each question to its slot's mark), so a
/// slot drawing one question reports exactly Moodle's random-slot row; one drawing k pools
/// its k marks per attempt, as [`Subsets`] does for the slot's variance.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotStats {
    /// (attempt, question) pairs: the attempts, for a slot drawing one.
    pub n: usize,
    /// Mean mark, percent of the questions' points.
    pub facility: Option<f64>,
    /// SD of the mark, percent of the questions' points.
    pub sd: Option<f64>,
    /// r(mark, rest of the attempt's total) × 100 over the pairs.
    pub discrimination_index: Option<f64>,
}

/// Scores of n attempts on P questions: `scores[attempt][question]` in points.
pub struct ScoreMatrix<'a> {
    pub scores: &'a [Vec<f64>],
    /// Each question's points.
    pub max: &'a [f64],
}

impl ScoreMatrix<'_> {
    fn column(&self, q: usize) -> Vec<f64> {
        self.scores.iter().map(|row| row[q]).collect()
    }

    fn totals(&self) -> Vec<f64> {
        self.scores.iter().map(|row| row.iter().sum()).collect()
    }

    pub fn test_stats(&self) -> TestStats {
        let max_total: f64 = self.max.iter().sum();
        let pct: Vec<f64> = self
            .totals()
            .iter()
            .map(|t| {
                if max_total > 0.0 {
                    100.0 * t / max_total
                } else {
                    0.0
                }
            })
            .collect();
        let sd = variance(&pct).map(f64::sqrt);
        let (skewness, kurtosis) = skewness_kurtosis(&pct);
        let p = self.max.len() as f64;
        let var_total = variance(&self.totals());
        let sum_item_var: Option<f64> =
            (0..self.max.len()).map(|q| variance(&self.column(q))).sum();
        let alpha = match (var_total, sum_item_var) {
            (Some(vt), Some(vi)) if vt > EPS && p > 1.0 => finite(p / (p - 1.0) * (1.0 - vi / vt)),
            _ => None,
        };
        let error_ratio = error_ratio(alpha);
        let mut histogram = [0usize; 10];
        for x in &pct {
            histogram[((x / 10.0).floor() as usize).min(9)] += 1;
        }
        TestStats {
            n: pct.len(),
            mean: mean(&pct),
            median: median(&pct),
            sd,
            skewness,
            kurtosis,
            cronbach_alpha: alpha.map(|a| 100.0 * a),
            error_ratio: error_ratio.map(|e| 100.0 * e),
            standard_error: error_ratio.zip(sd).map(|(e, s)| e * s),
            histogram,
        }
    }

    pub fn question_stats(&self) -> Vec<QuestionStats> {
        let totals = self.totals();
        let max_total: f64 = self.max.iter().sum();
        let covs: Vec<Option<f64>> = (0..self.max.len())
            .map(|q| covariance(&self.column(q), &totals))
            .collect();
        let (roots, root_sum) = effective_roots(&covs);
        (0..self.max.len())
            .map(|q| {
                let x = self.column(q);
                let max = self.max[q];
                let rest: Vec<f64> = totals.iter().zip(&x).map(|(t, xi)| t - xi).collect();
                let discrimination = correlation(&x, &rest);
                let efficiency = match (covariance(&x, &rest), max_covariance(&x, &rest)) {
                    (Some(c), Some(cmax)) if cmax > EPS => finite(c / cmax),
                    _ => None,
                };
                QuestionStats {
                    n: x.len(),
                    facility: mean(&x).map(|m| 100.0 * m / max),
                    sd: variance(&x).map(|v| 100.0 * v.sqrt() / max),
                    intended_weight: (max_total > 0.0).then(|| 100.0 * max / max_total),
                    effective_weight: match (&roots, root_sum) {
                        (Some(r), Some(s)) if s > EPS => Some(100.0 * r[q] / s),
                        _ => None,
                    },
                    discrimination_index: discrimination.map(|d| 100.0 * d),
                    discriminative_efficiency: efficiency.map(|e| 100.0 * e),
                }
            })
            .collect()
    }
}

/// The expected fraction of the points earned by guessing (Moodle's random guess score):
/// single choice and true/false, 1/k; multiple choice with partial credit, the mean grade
/// over every subset of options; no guess for numeric and short text.
pub fn random_guess_score(kind: crate::content::QuestionKind, correct: &[bool]) -> Option<f64> {
    use crate::content::QuestionKind::*;
    let k = correct.len();
    match kind {
        Single | TrueFalse if k > 0 => Some(1.0 / k as f64),
        Multiple if (1..=16).contains(&k) => {
            let total_correct = correct.iter().filter(|c| **c).count().max(1) as f64;
            let subsets = 1u32 << k;
            let sum: f64 = (0..subsets)
                .map(|mask| {
                    let (mut r, mut w) = (0.0, 0.0);
                    for (i, c) in correct.iter().enumerate() {
                        if mask & (1 << i) != 0 {
                            if *c { r += 1.0 } else { w += 1.0 }
                        }
                    }
                    ((r - w) / total_correct).clamp(0.0, 1.0)
                })
                .sum();
            Some(sum / f64::from(subsets))
        }
        _ => Some(0.0).filter(|_| matches!(kind, Numeric | ShortText)),
    }
}

/// The chi-square test of homogeneity: do groups differ in their rate of success?
#[derive(Debug, Clone, PartialEq)]
pub struct Homogeneity {
    pub chi_square: f64,
    pub degrees_of_freedom: usize,
    pub p_value: f64,
}

/// Tests whether the share of successes differs between groups, from (successes, trials)
/// per group. `None` when the test does not apply: fewer than two groups with trials, no
/// variation at all, or an expected count below 5 (the chi-square approximation's rule).
pub fn homogeneity(groups: &[(u64, u64)]) -> Option<Homogeneity> {
    let groups: Vec<(f64, f64)> = groups
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| (*s as f64, *n as f64))
        .collect();
    if groups.len() < 2 {
        return None;
    }
    let total: f64 = groups.iter().map(|g| g.1).sum();
    let successes: f64 = groups.iter().map(|g| g.0).sum();
    let p = successes / total;
    if p <= 0.0 || p >= 1.0 {
        return None;
    }
    let mut chi = 0.0;
    for (s, n) in &groups {
        let (es, ef) = (n * p, n * (1.0 - p));
        if es < 5.0 || ef < 5.0 {
            return None;
        }
        chi += (s - es).powi(2) / es + ((n - s) - ef).powi(2) / ef;
    }
    let df = groups.len() - 1;
    Some(Homogeneity {
        chi_square: chi,
        degrees_of_freedom: df,
        p_value: chi_square_sf(chi, df as f64),
    })
}

/// P(X ≥ x) for a chi-square variable with k degrees of freedom: Q(k/2, x/2).
pub fn chi_square_sf(x: f64, k: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    upper_regularized_gamma(k / 2.0, x / 2.0)
}

fn ln_gamma(x: f64) -> f64 {
    // Lanczos approximation (g = 7, n = 9), accurate to ~1e-15 for x > 0.
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Q(a, x) = Γ(a, x)/Γ(a): a series below a + 1, a continued fraction above (Numerical Recipes).
fn upper_regularized_gamma(a: f64, x: f64) -> f64 {
    let gln = ln_gamma(a);
    if x < a + 1.0 {
        let (mut sum, mut del, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..1000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-15 {
                break;
            }
        }
        1.0 - (sum.ln() - x + a * x.ln() - gln).exp()
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..1000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-15 {
                break;
            }
        }
        ((-x + a * x.ln() - gln).exp() * h).clamp(0.0, 1.0)
    }
}

/// One examinee in a Mantel–Haenszel analysis of one item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DifRow {
    /// In the focal group (otherwise the reference group).
    pub focal: bool,
    /// Full marks on the studied item.
    pub correct: bool,
    /// The matching stratum: the rest score (total minus the studied item), in whole points.
    pub stratum: i64,
}

/// The ETS DIF category of an item (Zwick 2012, ETS RR-12-08; Dorans & Holland 1993).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub enum EtsClass {
    /// Negligible DIF.
    A,
    /// Slight to moderate DIF.
    B,
    /// Moderate to large DIF: review the item (and its translation).
    C,
}

/// The fewest examinees each group must have in the strata where both groups appear.
pub const DIF_MIN_GROUP: usize = 30;
/// The significance level of both ETS tests.
pub const DIF_ALPHA: f64 = 0.05;
/// The one-sided 5% point of the standard normal: |D| significantly greater than 1.
const Z_ONE_SIDED_05: f64 = 1.644_853_626_951_472_2;

/// The Mantel–Haenszel statistics of one item between a reference and a focal group.
#[derive(Debug, Clone, PartialEq)]
pub struct MantelHaenszel {
    /// Strata in which both groups appear (the only ones that count).
    pub strata: usize,
    pub reference: usize,
    pub focal: usize,
    /// α_MH = Σ(A·D/N) / Σ(B·C/N): above 1, the item favours the reference group.
    pub odds_ratio: f64,
    /// (|ΣA − ΣE(A)| − ½)² / ΣVar(A), 1 df.
    pub chi_square: f64,
    pub p_value: f64,
    /// MH D-DIF = −2.35 ln α_MH (the ETS delta scale): negative, the item is harder for the focal group.
    pub d_dif: f64,
    /// 2.35 × the Robins–Breslow–Greenland standard error of ln α_MH (= Phillips & Holland 1987).
    pub d_dif_se: f64,
    pub ets_class: EtsClass,
}

/// Why an item between two groups was not analysed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DifInsufficient {
    /// A group has fewer than [`DIF_MIN_GROUP`] examinees in the shared strata.
    TooFew { reference: usize, focal: usize },
    /// Nobody (or everybody) in the shared strata answered correctly, or the odds ratio is 0 or ∞.
    NoVariation,
}

/// The ETS rule as implemented: A when |D| < 1 or the MH chi-square is not significant
/// (p ≥ 0.05); C when |D| ≥ 1.5 and |D| is significantly greater than 1 (one-sided 5%:
/// (|D| − 1)/SE(D) > 1.645); B otherwise.
pub fn ets_class(d: f64, se: f64, p_value: f64) -> EtsClass {
    if d.abs() < 1.0 || p_value >= DIF_ALPHA {
        EtsClass::A
    } else if d.abs() >= 1.5 && se > 0.0 && (d.abs() - 1.0) / se > Z_ONE_SIDED_05 {
        EtsClass::C
    } else {
        EtsClass::B
    }
}

/// The cell of a 2×2 table: [A, B, C, D] = reference right, reference wrong, focal right,
/// focal wrong.
pub fn dif_cell(focal: bool, correct: bool) -> usize {
    match (focal, correct) {
        (false, true) => 0,
        (false, false) => 1,
        (true, true) => 2,
        (true, false) => 3,
    }
}

/// Mantel–Haenszel DIF of one item (Holland & Thayer 1988) over the strata where both groups
/// appear, with the continuity-corrected MH chi-square and the ETS class.
pub fn mantel_haenszel(rows: &[DifRow]) -> Result<MantelHaenszel, DifInsufficient> {
    // Per stratum: [A, B, C, D] = reference right, reference wrong, focal right, focal wrong.
    let mut tables: std::collections::BTreeMap<i64, [f64; 4]> = Default::default();
    for r in rows {
        tables.entry(r.stratum).or_default()[dif_cell(r.focal, r.correct)] += 1.0;
    }
    mantel_haenszel_tables(tables)
}

/// [`mantel_haenszel`] from the 2×2 table of each stratum (counts, see [`dif_cell`]).
pub fn mantel_haenszel_tables(
    mut tables: std::collections::BTreeMap<i64, [f64; 4]>,
) -> Result<MantelHaenszel, DifInsufficient> {
    tables.retain(|_, [a, b, c, d]| *a + *b > 0.0 && *c + *d > 0.0);
    let reference = tables.values().map(|t| t[0] + t[1]).sum::<f64>() as usize;
    let focal = tables.values().map(|t| t[2] + t[3]).sum::<f64>() as usize;
    if reference < DIF_MIN_GROUP || focal < DIF_MIN_GROUP {
        return Err(DifInsufficient::TooFew { reference, focal });
    }
    let (mut r_sum, mut s_sum) = (0.0, 0.0);
    let (mut a_sum, mut e_sum, mut v_sum) = (0.0, 0.0, 0.0);
    let (mut pr, mut ps_qr, mut qs) = (0.0, 0.0, 0.0);
    for &[a, b, c, d] in tables.values() {
        let n = a + b + c + d;
        let (nr, nf, m1, m0) = (a + b, c + d, a + c, b + d);
        let (r, s) = (a * d / n, b * c / n);
        let (p, q) = ((a + d) / n, (b + c) / n);
        r_sum += r;
        s_sum += s;
        pr += p * r;
        ps_qr += p * s + q * r;
        qs += q * s;
        a_sum += a;
        e_sum += nr * m1 / n;
        v_sum += nr * nf * m1 * m0 / (n * n * (n - 1.0));
    }
    if r_sum <= 0.0 || s_sum <= 0.0 || v_sum <= EPS {
        return Err(DifInsufficient::NoVariation);
    }
    let odds_ratio = r_sum / s_sum;
    let chi_square = ((a_sum - e_sum).abs() - 0.5).max(0.0).powi(2) / v_sum;
    let p_value = chi_square_sf(chi_square, 1.0);
    let var_ln =
        pr / (2.0 * r_sum * r_sum) + ps_qr / (2.0 * r_sum * s_sum) + qs / (2.0 * s_sum * s_sum);
    let d_dif = -2.35 * odds_ratio.ln();
    let d_dif_se = 2.35 * var_ln.sqrt();
    Ok(MantelHaenszel {
        strata: tables.len(),
        reference,
        focal,
        odds_ratio,
        chi_square,
        p_value,
        d_dif,
        d_dif_se,
        ets_class: ets_class(d_dif, d_dif_se, p_value),
    })
}

/// A simulated two-group test for checking DIF: Rasch items, the focal group `shift` logits
/// less able, and item `dif_item` `dif` logits harder for the focal group only. Rows are
/// attempts, columns items (0 or 1). Deterministic for a seed.
pub fn simulate_dif(
    seed: u64,
    per_group: usize,
    items: usize,
    shift: f64,
    dif_item: usize,
    dif: f64,
) -> (Vec<Vec<f64>>, Vec<bool>) {
    let mut rng = crate::attempts::shuffle::SplitMix64::new(seed);
    let mut unit = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let (mut scores, mut focal) = (Vec::new(), Vec::new());
    for g in [false, true] {
        for _ in 0..per_group {
            let (u, v) = (unit().max(f64::MIN_POSITIVE), unit());
            let normal = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
            let ability = normal - if g { shift } else { 0.0 };
            let row = (0..items)
                .map(|i| {
                    let mut b = -1.5 + 3.0 * i as f64 / (items - 1).max(1) as f64;
                    if g && i == dif_item {
                        b += dif;
                    }
                    f64::from(u8::from(unit() < 1.0 / (1.0 + (b - ability).exp())))
                })
                .collect();
            scores.push(row);
            focal.push(g);
        }
    }
    (scores, focal)
}

/// The rows of a Mantel–Haenszel analysis of item `q` from a score matrix: correct is full
/// marks, the stratum the rest score rounded to whole points.
pub fn dif_rows(scores: &[Vec<f64>], max: &[f64], q: usize, focal: &[bool]) -> Vec<DifRow> {
    scores
        .iter()
        .zip(focal)
        .map(|(row, &focal)| {
            let rest: f64 = row
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != q)
                .map(|(_, x)| x)
                .sum();
            DifRow {
                focal,
                correct: row[q] >= max[q] - 1e-9,
                stratum: rest.round() as i64,
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The same statistics from frequency tables: (value, count) pairs instead of one value per
// attempt. Incremental item analysis keeps such tables (`analytics::sums`), so a report costs
// the number of distinct values, not the number of attempts. The formulas are the ones above
// (two-pass: deviations from the mean), each value weighted by its count; only the order of
// the floating-point additions differs, so results agree with [`ScoreMatrix`] to ~1e-12
// relative (checked by the property tests below).

/// The number of values in a frequency table.
pub fn w_count(v: &[(f64, u64)]) -> u64 {
    v.iter().map(|(_, c)| c).sum()
}

/// Mean of a frequency table; `None` when empty.
pub fn w_mean(v: &[(f64, u64)]) -> Option<f64> {
    let n = w_count(v);
    (n > 0).then(|| v.iter().map(|(x, c)| x * *c as f64).sum::<f64>() / n as f64)
}

/// Median of a frequency table; `None` when empty.
pub fn w_median(v: &[(f64, u64)]) -> Option<f64> {
    let n = w_count(v);
    if n == 0 {
        return None;
    }
    let mut s: Vec<(f64, u64)> = v.iter().filter(|(_, c)| *c > 0).copied().collect();
    s.sort_by(|a, b| a.0.total_cmp(&b.0));
    // The value at 0-based position k.
    let at = |k: u64| {
        let mut seen = 0;
        for (x, c) in &s {
            seen += c;
            if k < seen {
                return *x;
            }
        }
        s[s.len() - 1].0
    };
    let m = n / 2;
    Some(if n % 2 == 1 {
        at(m)
    } else {
        (at(m - 1) + at(m)) / 2.0
    })
}

/// Sample covariance (n − 1) of pairs with counts; `None` for fewer than two.
pub fn w_covariance(v: &[(f64, f64, u64)]) -> Option<f64> {
    let n: u64 = v.iter().map(|(_, _, c)| c).sum();
    if n < 2 {
        return None;
    }
    let nf = n as f64;
    let ma = v.iter().map(|(a, _, c)| a * *c as f64).sum::<f64>() / nf;
    let mb = v.iter().map(|(_, b, c)| b * *c as f64).sum::<f64>() / nf;
    Some(
        v.iter()
            .map(|(a, b, c)| (a - ma) * (b - mb) * *c as f64)
            .sum::<f64>()
            / (nf - 1.0),
    )
}

/// Sample variance of a frequency table; `None` for fewer than two values.
pub fn w_variance(v: &[(f64, u64)]) -> Option<f64> {
    let pairs: Vec<(f64, f64, u64)> = v.iter().map(|(x, c)| (*x, *x, *c)).collect();
    w_covariance(&pairs)
}

/// [`skewness_kurtosis`] of a frequency table.
pub fn w_skewness_kurtosis(v: &[(f64, u64)]) -> (Option<f64>, Option<f64>) {
    let n = w_count(v) as f64;
    let Some(m) = w_mean(v) else {
        return (None, None);
    };
    let moment = |p: i32| {
        v.iter()
            .map(|(x, c)| (x - m).powi(p) * *c as f64)
            .sum::<f64>()
            / n
    };
    let (m2, m3, m4) = (moment(2), moment(3), moment(4));
    if m2 <= EPS {
        return (None, None);
    }
    let k2 = n * m2 / (n - 1.0);
    let skew = (n >= 3.0)
        .then(|| n * n * m3 / ((n - 1.0) * (n - 2.0)) / k2.powf(1.5))
        .and_then(finite);
    let kurt = (n >= 4.0)
        .then(|| {
            n * n * ((n + 1.0) * m4 - 3.0 * (n - 1.0) * m2 * m2)
                / ((n - 1.0) * (n - 2.0) * (n - 3.0))
                / (k2 * k2)
        })
        .and_then(finite);
    (skew, kurt)
}

/// [`max_covariance`] of two frequency tables with the same number of values: each sorted on
/// its own, paired in order.
pub fn w_max_covariance(a: &[(f64, u64)], b: &[(f64, u64)]) -> Option<f64> {
    let sorted = |v: &[(f64, u64)]| {
        let mut v: Vec<(f64, u64)> = v.iter().filter(|(_, c)| *c > 0).copied().collect();
        v.sort_by(|x, y| x.0.total_cmp(&y.0));
        v
    };
    let (a, b) = (sorted(a), sorted(b));
    if w_count(&a) != w_count(&b) {
        return None;
    }
    let mut pairs = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    let (mut left_a, mut left_b) = (a.first().map_or(0, |x| x.1), b.first().map_or(0, |x| x.1));
    while i < a.len() && j < b.len() {
        let k = left_a.min(left_b);
        pairs.push((a[i].0, b[j].0, k));
        left_a -= k;
        left_b -= k;
        if left_a == 0 {
            i += 1;
            left_a = a.get(i).map_or(0, |x| x.1);
        }
        if left_b == 0 {
            j += 1;
            left_b = b.get(j).map_or(0, |x| x.1);
        }
    }
    w_covariance(&pairs)
}

/// Scores as frequency tables: per question, how many attempts scored x on it with total T;
/// and how many attempts had each total. What [`ScoreMatrix`] holds, without one row per attempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoreTable {
    /// Each question's points.
    pub max: Vec<f64>,
    /// (total, attempts).
    pub totals: Vec<(f64, u64)>,
    /// Per question: (points on it, total, attempts). Every attempt is in the cells of every
    /// question it served (an unanswered question scores 0): of every question, without banks.
    pub cells: Vec<Vec<(f64, f64, u64)>>,
    /// For a quiz with banks, where attempts serve different questions; `None` otherwise.
    pub subsets: Option<Subsets>,
}

/// The test statistics of attempts that served different questions, after Moodle's quiz
/// statistics report for random questions (`mod/quiz/report/statistics`, which computes them
/// with core_question's `question/classes/statistics/questions/calculator.php`): the items of
/// the test are its slots, not its questions. Moodle's CIC is P/(P−1)·(1 − ΣV(slot)/V(T)),
/// P the number of slots and V(slot) the variance of the slot's mark over all attempts,
/// whichever question each attempt drew into it (`sumofmarkvariance`). Here a slot drawing k
/// questions counts as k slots (as k Moodle random slots on one category would), each with the
/// variance of one drawn question's mark pooled over the (attempt, question) pairs it drew:
/// for k = 1 exactly Moodle's slot variance, for k > 1 the same under exchangeable positions
/// (quizd serves a slot's questions in bank order, so "the j-th question of the slot" is no
/// stable item of its own). Per question (a bank's included), as for Moodle's sub-questions:
/// n, facility and SD over the attempts that saw it. Where quizd differs from Moodle:
/// discrimination and efficiency use the rest score (total − the question) for every
/// question, where Moodle's sub-question rows correlate with the whole total; effective
/// weights stay per question (Moodle gives them per slot only); a bank's questions may carry
/// different points (Moodle scales each to its slot's mark), so an attempt's percentage is of
/// its own `max_score`, and a question's intended weight is of the nominal maximum.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Subsets {
    /// (100 × total / the attempt's max_score, attempts).
    pub percent: Vec<(f64, u64)>,
    /// The nominal maximum ([`crate::content::QuizContent::nominal_max_score`]).
    pub max_total: f64,
    /// The slots: the questions a slot serves one of (indices into `cells`), and how many it
    /// serves (1 for a fixed question).
    pub items: Vec<(Vec<usize>, usize)>,
}

impl ScoreTable {
    /// The table of a score matrix (totals summed in question order, as [`ScoreMatrix`] does).
    pub fn from_matrix(m: &ScoreMatrix<'_>) -> Self {
        use std::collections::BTreeMap;
        let mut totals: BTreeMap<u64, u64> = BTreeMap::new();
        let mut cells: Vec<BTreeMap<(u64, u64), u64>> = vec![BTreeMap::new(); m.max.len()];
        for row in m.scores {
            let t: f64 = row.iter().sum();
            *totals.entry(t.to_bits()).or_default() += 1;
            for (q, x) in row.iter().enumerate() {
                *cells[q].entry((x.to_bits(), t.to_bits())).or_default() += 1;
            }
        }
        Self {
            max: m.max.to_vec(),
            subsets: None,
            totals: totals
                .into_iter()
                .map(|(t, c)| (f64::from_bits(t), c))
                .collect(),
            cells: cells
                .into_iter()
                .map(|q| {
                    q.into_iter()
                        .map(|((x, t), c)| (f64::from_bits(x), f64::from_bits(t), c))
                        .collect()
                })
                .collect(),
        }
    }

    /// Question q's scores: (x, attempts).
    fn column(&self, q: usize) -> Vec<(f64, u64)> {
        self.cells[q].iter().map(|(x, _, c)| (*x, *c)).collect()
    }

    /// Question q's rest scores (total − x): (rest, attempts).
    fn rest(&self, q: usize) -> Vec<(f64, u64)> {
        self.cells[q].iter().map(|(x, t, c)| (t - x, *c)).collect()
    }

    /// The nominal maximum of a test: the sum of the questions' points without banks.
    fn max_total(&self) -> f64 {
        match &self.subsets {
            Some(s) => s.max_total,
            None => self.max.iter().sum(),
        }
    }

    /// [`ScoreMatrix::test_stats`] from the table (and, with banks, as [`Subsets`] says).
    pub fn test_stats(&self) -> TestStats {
        let max_total = self.max_total();
        let pct: Vec<(f64, u64)> = match &self.subsets {
            Some(s) => s.percent.clone(),
            None => self
                .totals
                .iter()
                .map(|(t, c)| {
                    let p = if max_total > 0.0 {
                        100.0 * t / max_total
                    } else {
                        0.0
                    };
                    (p, *c)
                })
                .collect(),
        };
        let sd = w_variance(&pct).map(f64::sqrt);
        let (skewness, kurtosis) = w_skewness_kurtosis(&pct);
        let var_total = w_variance(&self.totals);
        let (p, sum_item_var): (f64, Option<f64>) = match &self.subsets {
            None => (
                self.max.len() as f64,
                (0..self.max.len())
                    .map(|q| w_variance(&self.column(q)))
                    .sum(),
            ),
            Some(s) => (
                s.items.iter().map(|(_, k)| *k as f64).sum(),
                s.items
                    .iter()
                    .map(|(qs, k)| {
                        let pooled: Vec<(f64, u64)> =
                            qs.iter().flat_map(|&q| self.column(q)).collect();
                        w_variance(&pooled).map(|v| *k as f64 * v)
                    })
                    .sum(),
            ),
        };
        let alpha = match (var_total, sum_item_var) {
            (Some(vt), Some(vi)) if vt > EPS && p > 1.0 => finite(p / (p - 1.0) * (1.0 - vi / vt)),
            _ => None,
        };
        let error_ratio = error_ratio(alpha);
        let mut histogram = [0usize; 10];
        for (x, c) in &pct {
            histogram[((x / 10.0).floor() as usize).min(9)] += *c as usize;
        }
        TestStats {
            n: w_count(&pct) as usize,
            mean: w_mean(&pct),
            median: w_median(&pct),
            sd,
            skewness,
            kurtosis,
            cronbach_alpha: alpha.map(|a| 100.0 * a),
            error_ratio: error_ratio.map(|e| 100.0 * e),
            standard_error: error_ratio.zip(sd).map(|(e, s)| e * s),
            histogram,
        }
    }

    /// Each slot's statistics ([`SlotStats`]), in layout order; none without banks.
    pub fn slot_stats(&self) -> Vec<SlotStats> {
        let Some(subsets) = &self.subsets else {
            return Vec::new();
        };
        (subsets.items.iter())
            .map(|(questions, _)| {
                // (fraction of its points, rest score, attempts)
                let pairs: Vec<(f64, f64, u64)> = (questions.iter())
                    .filter(|&&q| self.max[q] > 0.0)
                    .flat_map(|&q| {
                        (self.cells[q].iter()).map(move |(x, t, c)| (x / self.max[q], t - x, *c))
                    })
                    .collect();
                let mark: Vec<(f64, u64)> = pairs.iter().map(|(f, _, c)| (*f, *c)).collect();
                let rest: Vec<(f64, u64)> = pairs.iter().map(|(_, r, c)| (*r, *c)).collect();
                let (vm, vr) = (w_variance(&mark), w_variance(&rest));
                SlotStats {
                    n: w_count(&mark) as usize,
                    facility: w_mean(&mark).map(|m| 100.0 * m),
                    sd: vm.map(|v| 100.0 * v.sqrt()),
                    discrimination_index: match (vm, vr, w_covariance(&pairs)) {
                        (Some(a), Some(b), Some(c)) if a > EPS && b > EPS => {
                            finite(c / (a * b).sqrt()).map(|d| 100.0 * d)
                        }
                        _ => None,
                    },
                }
            })
            .collect()
    }

    /// [`ScoreMatrix::question_stats`] from the table: each question's over the attempts
    /// that served it.
    pub fn question_stats(&self) -> Vec<QuestionStats> {
        let max_total = self.max_total();
        let covs: Vec<Option<f64>> = self.cells.iter().map(|q| w_covariance(q)).collect();
        let (roots, root_sum) = effective_roots(&covs);
        (0..self.max.len())
            .map(|q| {
                let x = self.column(q);
                let rest = self.rest(q);
                let max = self.max[q];
                let pairs: Vec<(f64, f64, u64)> = self.cells[q]
                    .iter()
                    .map(|(x, t, c)| (*x, t - x, *c))
                    .collect();
                let (vx, vr) = (w_variance(&x), w_variance(&rest));
                let discrimination = match (vx, vr, w_covariance(&pairs)) {
                    (Some(va), Some(vb), Some(c)) if va > EPS && vb > EPS => {
                        finite(c / (va * vb).sqrt())
                    }
                    _ => None,
                };
                let efficiency = match (w_covariance(&pairs), w_max_covariance(&x, &rest)) {
                    (Some(c), Some(cmax)) if cmax > EPS => finite(c / cmax),
                    _ => None,
                };
                QuestionStats {
                    n: w_count(&x) as usize,
                    facility: w_mean(&x).map(|m| 100.0 * m / max),
                    sd: vx.map(|v| 100.0 * v.sqrt() / max),
                    intended_weight: (max_total > 0.0).then(|| 100.0 * max / max_total),
                    effective_weight: match (&roots, root_sum) {
                        (Some(r), Some(s)) if s > EPS => Some(100.0 * r[q] / s),
                        _ => None,
                    },
                    discrimination_index: discrimination.map(|d| 100.0 * d),
                    discriminative_efficiency: efficiency.map(|e| 100.0 * e),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::content::QuestionKind;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9 * b.abs().max(1.0))
    }

    #[test]
    fn basic_statistics_match_hand_computation() {
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&v), Some(5.0));
        assert_eq!(median(&v), Some(4.5));
        assert!(close(variance(&v), 32.0 / 7.0));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(mean(&[]), None);
        assert_eq!(variance(&[1.0]), None);
    }

    #[test]
    fn skewness_and_kurtosis_are_the_k_statistic_estimates() {
        // Values checked against scipy.stats.skew(bias=False) and kurtosis(bias=False).
        let v = [1.0, 2.0, 3.0, 4.0, 10.0];
        let (s, k) = skewness_kurtosis(&v);
        assert!(close(s, 1.697_056_274_847_714_3), "{s:?}");
        assert!(close(k, 3.152), "{k:?}");
        assert_eq!(skewness_kurtosis(&[5.0, 5.0, 5.0, 5.0]), (None, None));
    }

    #[test]
    fn chi_square_tail_probabilities_are_right() {
        // Reference values: scipy.stats.chi2.sf.
        assert!((chi_square_sf(3.841_458_820_694_124, 1.0) - 0.05).abs() < 1e-9);
        assert!((chi_square_sf(9.210_340_371_976_182, 2.0) - 0.01).abs() < 1e-9);
        assert!((chi_square_sf(1.0, 3.0) - 0.801_251_956_901_209_4).abs() < 1e-9);
        assert!((chi_square_sf(50.0, 4.0) - 3.610_865_404_890_647e-10).abs() < 1e-15);
    }

    #[test]
    fn one_attempt_or_no_variance_gives_none_never_nan() {
        let one = [vec![1.0, 0.0]];
        let m = ScoreMatrix {
            scores: &one,
            max: &[1.0, 1.0],
        };
        let t = m.test_stats();
        assert_eq!(t.mean, Some(50.0));
        assert_eq!((t.sd, t.cronbach_alpha, t.skewness), (None, None, None));
        let q = &m.question_stats()[0];
        assert_eq!(
            (q.facility, q.sd, q.discrimination_index),
            (Some(100.0), None, None)
        );
        let same = [vec![1.0, 1.0], vec![1.0, 1.0], vec![1.0, 1.0]];
        let m = ScoreMatrix {
            scores: &same,
            max: &[1.0, 1.0],
        };
        let t = m.test_stats();
        assert_eq!(
            (t.sd, t.cronbach_alpha, t.error_ratio),
            (Some(0.0), None, None)
        );
        assert_eq!(t.histogram[9], 3);
        assert!(
            m.question_stats()
                .iter()
                .all(|q| q.discrimination_index.is_none() && q.effective_weight.is_none())
        );
    }

    #[test]
    fn a_perfectly_consistent_test_has_alpha_one_hundred() {
        let rows = [
            vec![0.0, 0.0],
            vec![1.0, 1.0],
            vec![1.0, 1.0],
            vec![0.0, 0.0],
        ];
        let m = ScoreMatrix {
            scores: &rows,
            max: &[1.0, 1.0],
        };
        assert!(close(m.test_stats().cronbach_alpha, 100.0));
        let q = m.question_stats();
        assert!(close(q[0].discrimination_index, 100.0));
        assert!(close(q[0].discriminative_efficiency, 100.0));
        assert!(close(q[0].effective_weight, 50.0));
    }

    #[test]
    fn random_guess_scores_follow_the_kind() {
        assert_eq!(
            random_guess_score(QuestionKind::Single, &[true, false, false, false]),
            Some(0.25)
        );
        assert_eq!(
            random_guess_score(QuestionKind::TrueFalse, &[true, false]),
            Some(0.5)
        );
        // Two right of four: subsets score (r − w)/2 clamped; the mean over 16 subsets is 3/16.
        assert_eq!(
            random_guess_score(QuestionKind::Multiple, &[true, true, false, false]),
            Some(3.0 / 16.0)
        );
        assert_eq!(random_guess_score(QuestionKind::Numeric, &[]), Some(0.0));
    }

    #[test]
    fn homogeneity_flags_a_real_difference_and_not_noise() {
        let differ = homogeneity(&[(90, 100), (40, 100)]).unwrap();
        assert!(differ.p_value < 1e-10);
        let same = homogeneity(&[(50, 100), (52, 100), (49, 100)]).unwrap();
        assert!(same.p_value > 0.5);
        assert_eq!(same.degrees_of_freedom, 2);
        assert!(
            homogeneity(&[(1, 3), (2, 3)]).is_none(),
            "expected counts below 5"
        );
        assert!(homogeneity(&[(10, 10), (20, 20)]).is_none(), "no variation");
    }

    #[test]
    fn mantel_haenszel_matches_a_hand_computed_two_stratum_table() {
        // Stratum 0: ref 10 right 10 wrong, focal 5 right 15 wrong; stratum 1: ref 30/10, focal 20/20.
        let mut rows = Vec::new();
        for (stratum, cells) in [(0, [10, 10, 5, 15]), (1, [30, 10, 20, 20])] {
            for (i, n) in cells.iter().enumerate() {
                for _ in 0..*n {
                    rows.push(DifRow {
                        focal: i >= 2,
                        correct: i % 2 == 0,
                        stratum,
                    });
                }
            }
        }
        // A lone reference examinee in a stratum without focal ones does not count.
        rows.push(DifRow {
            focal: false,
            correct: true,
            stratum: 7,
        });
        let mh = mantel_haenszel(&rows).unwrap();
        // R = 10·15/40 + 30·20/80 = 11.25; S = 10·5/40 + 10·20/80 = 3.75.
        assert!((mh.odds_ratio - 3.0).abs() < 1e-12);
        assert!((mh.d_dif + 2.35 * 3f64.ln()).abs() < 1e-12);
        // ΣA = 40, ΣE = 20·15/40 + 40·50/80 = 32.5, ΣVar = 20·20·15·25/(40²·39) + 40·40·50·30/(80²·79).
        let var = 20.0 * 20.0 * 15.0 * 25.0 / (1600.0 * 39.0)
            + 40.0 * 40.0 * 50.0 * 30.0 / (6400.0 * 79.0);
        assert!((mh.chi_square - 7.0f64.powi(2) / var).abs() < 1e-9);
        assert_eq!((mh.strata, mh.reference, mh.focal), (2, 60, 60));
    }

    #[test]
    fn the_ets_rule_needs_size_and_significance() {
        assert_eq!(ets_class(-0.9, 0.1, 1e-6), EtsClass::A);
        assert_eq!(ets_class(-2.0, 0.1, 0.2), EtsClass::A, "not significant");
        assert_eq!(ets_class(-1.2, 0.1, 1e-6), EtsClass::B);
        assert_eq!(
            ets_class(1.6, 0.5, 1e-6),
            EtsClass::B,
            "not significantly above 1"
        );
        assert_eq!(ets_class(1.6, 0.1, 1e-6), EtsClass::C);
        assert_eq!(ets_class(-2.4, 0.2, 1e-9), EtsClass::C);
    }

    #[test]
    fn too_few_examinees_or_no_variation_is_insufficient() {
        let (scores, focal) = simulate_dif(3, 20, 6, 0.0, 0, 0.0);
        let rows = dif_rows(&scores, &[1.0; 6], 2, &focal);
        assert!(matches!(
            mantel_haenszel(&rows),
            Err(DifInsufficient::TooFew { .. })
        ));
        let all_right: Vec<DifRow> = (0..200)
            .map(|i| DifRow {
                focal: i % 2 == 0,
                correct: true,
                stratum: i % 3,
            })
            .collect();
        assert_eq!(
            mantel_haenszel(&all_right),
            Err(DifInsufficient::NoVariation)
        );
    }

    #[test]
    fn a_planted_dif_item_is_c_and_the_others_a_although_the_groups_differ_in_ability() {
        let items = 10;
        let (scores, focal) = simulate_dif(42, 1500, items, 0.8, 4, 1.2);
        let max = vec![1.0; items];
        // The groups really differ: a plain comparison of facility would flag every item.
        let mean = |g: bool| {
            let rows: Vec<f64> = scores
                .iter()
                .zip(&focal)
                .filter(|(_, f)| **f == g)
                .map(|(r, _)| r.iter().sum())
                .collect();
            super::mean(&rows).unwrap()
        };
        assert!(mean(false) - mean(true) > 1.0);
        for q in 0..items {
            let mh = mantel_haenszel(&dif_rows(&scores, &max, q, &focal)).unwrap();
            let expected = if q == 4 { EtsClass::C } else { EtsClass::A };
            assert_eq!(mh.ets_class, expected, "item {q}: {mh:?}");
            if q == 4 {
                assert!(mh.d_dif < -1.5, "harder for the focal group: {mh:?}");
            }
        }
    }

    proptest! {
        #[test]
        fn statistics_are_finite_or_none_and_bounded(
            rows in proptest::collection::vec(proptest::collection::vec(0u8..=2, 3), 1..40)
        ) {
            let scores: Vec<Vec<f64>> = rows.iter().map(|r| r.iter().map(|x| f64::from(*x) / 2.0).collect()).collect();
            let m = ScoreMatrix { scores: &scores, max: &[1.0, 1.0, 1.0] };
            let t = m.test_stats();
            for v in [t.mean, t.median, t.sd, t.skewness, t.kurtosis, t.cronbach_alpha, t.error_ratio, t.standard_error].into_iter().flatten() {
                prop_assert!(v.is_finite());
            }
            prop_assert!(t.mean.unwrap() >= 0.0 && t.mean.unwrap() <= 100.0);
            prop_assert_eq!(t.histogram.iter().sum::<usize>(), scores.len());
            for q in m.question_stats() {
                let f = q.facility.unwrap();
                prop_assert!((0.0..=100.0).contains(&f));
                if let Some(d) = q.discrimination_index { prop_assert!((-100.0 - 1e-9..=100.0 + 1e-9).contains(&d)); }
                if let Some(e) = q.discriminative_efficiency { prop_assert!(e <= 100.0 + 1e-9); }
            }
        }


        #[test]
        fn swapping_the_groups_inverts_the_odds_ratio_and_keeps_the_chi_square(
            cells in proptest::collection::vec((0u8..4, any::<bool>(), any::<bool>()), 80..300)
        ) {
            let rows: Vec<DifRow> = cells.iter().map(|(s, f, c)| DifRow { focal: *f, correct: *c, stratum: i64::from(*s) }).collect();
            let swapped: Vec<DifRow> = rows.iter().map(|r| DifRow { focal: !r.focal, ..*r }).collect();
            match (mantel_haenszel(&rows), mantel_haenszel(&swapped)) {
                (Ok(a), Ok(b)) => {
                    prop_assert!((a.odds_ratio * b.odds_ratio - 1.0).abs() < 1e-9);
                    prop_assert!((a.chi_square - b.chi_square).abs() < 1e-9);
                    prop_assert!((a.d_dif + b.d_dif).abs() < 1e-9);
                    prop_assert!(a.p_value >= 0.0 && a.p_value <= 1.0 && a.d_dif_se.is_finite());
                    prop_assert_eq!(a.ets_class, b.ets_class);
                }
                (Err(_), Err(_)) => {}
                (a, b) => prop_assert!(false, "{a:?} vs {b:?}"),
            }
        }

        #[test]
        fn question_order_does_not_change_the_test_statistics(
            rows in proptest::collection::vec(proptest::collection::vec(0u8..=1, 4), 2..30)
        ) {
            let scores: Vec<Vec<f64>> = rows.iter().map(|r| r.iter().map(|x| f64::from(*x)).collect()).collect();
            let reversed: Vec<Vec<f64>> = scores.iter().map(|r| r.iter().rev().copied().collect()).collect();
            let a = ScoreMatrix { scores: &scores, max: &[1.0; 4] }.test_stats();
            let b = ScoreMatrix { scores: &reversed, max: &[1.0; 4] }.test_stats();
            prop_assert_eq!(a.histogram, b.histogram);
            match (a.cronbach_alpha, b.cronbach_alpha) {
                (Some(x), Some(y)) => prop_assert!((x - y).abs() < 1e-9),
                (x, y) => prop_assert_eq!(x, y),
            }
        }

        #[test]
        fn the_frequency_table_gives_the_statistics_of_the_score_matrix(
            rows in proptest::collection::vec(proptest::collection::vec(0u8..=4, 5), 0..60),
            points in proptest::collection::vec(1u8..=4, 5),
        ) {
            // Points on a grid of quarters of each question's points, so totals repeat.
            let max: Vec<f64> = points.iter().map(|p| f64::from(*p)).collect();
            let scores: Vec<Vec<f64>> = rows
                .iter()
                .map(|r| r.iter().zip(&max).map(|(x, m)| f64::from(*x) / 4.0 * m).collect())
                .collect();
            let matrix = ScoreMatrix { scores: &scores, max: &max };
            let table = ScoreTable::from_matrix(&matrix);
            // Within 1e-6 of zero both are rounding noise: a statistic whose true value is 0 (a
            // covariance, or its square root in the effective weight) comes out as ±tiny, and
            // summed in another order as another tiny (seen: 9.6e-8 against 1.7e-7).
            let near = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) => {
                    (a - b).abs() <= 1e-9 * a.abs().max(1.0) || (a.abs() < 1e-6 && b.abs() < 1e-6)
                }
                (a, b) => a == b,
            };
            let (a, b) = (matrix.test_stats(), table.test_stats());
            prop_assert_eq!(a.n, b.n);
            prop_assert_eq!(a.histogram, b.histogram);
            prop_assert_eq!(a.median, b.median, "the median is exact");
            for (x, y) in [(a.mean, b.mean), (a.sd, b.sd), (a.skewness, b.skewness), (a.kurtosis, b.kurtosis),
                           (a.cronbach_alpha, b.cronbach_alpha), (a.error_ratio, b.error_ratio),
                           (a.standard_error, b.standard_error)] {
                prop_assert!(near(x, y), "{:?} vs {:?}", x, y);
            }
            for (a, b) in matrix.question_stats().into_iter().zip(table.question_stats()) {
                prop_assert_eq!(a.n, b.n);
                for (x, y) in [(a.facility, b.facility), (a.sd, b.sd), (a.intended_weight, b.intended_weight),
                               (a.effective_weight, b.effective_weight),
                               (a.discrimination_index, b.discrimination_index),
                               (a.discriminative_efficiency, b.discriminative_efficiency)] {
                    prop_assert!(near(x, y), "{:?} vs {:?}", x, y);
                }
            }
        }

        #[test]
        fn frequency_tables_give_the_median_and_sorted_covariance_of_the_values(
            pairs in proptest::collection::vec((0u8..6, 0u8..9), 0..50)
        ) {
            let a: Vec<f64> = pairs.iter().map(|p| f64::from(p.0) / 2.0).collect();
            let b: Vec<f64> = pairs.iter().map(|p| f64::from(p.1)).collect();
            let tally = |v: &[f64]| {
                let mut t: Vec<(f64, u64)> = Vec::new();
                for x in v {
                    match t.iter_mut().find(|(y, _)| y == x) {
                        Some(e) => e.1 += 1,
                        None => t.push((*x, 1)),
                    }
                }
                t
            };
            prop_assert_eq!(median(&a), w_median(&tally(&a)));
            match (max_covariance(&a, &b), w_max_covariance(&tally(&a), &tally(&b))) {
                (Some(x), Some(y)) => prop_assert!((x - y).abs() <= 1e-9 * x.abs().max(1.0)),
                (x, y) => prop_assert_eq!(x, y),
            }
        }
    }
}
