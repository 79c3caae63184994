//! The analytics report. Percentages are on a 0–100 scale, like Moodle's report; a statistic
//! that is undefined for the data (one attempt, no variance) is `null`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::content::QuestionKind;
use crate::i18n::LocalizedText;

/// Which finished attempts the statistics are over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum CountedAttempts {
    /// The attempt that makes each learner's grade (every attempt under `average`).
    #[default]
    Graded,
    /// Every finished attempt.
    All,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AnalyticsQuery {
    /// Attempts finished at or after this time.
    pub from: Option<DateTime<Utc>>,
    /// Attempts finished before this time.
    pub to: Option<DateTime<Utc>>,
    /// Only this course's assignments (quiz analytics).
    pub course: Option<Uuid>,
    /// Only attempts taken in this locale.
    pub locale: Option<String>,
    /// Only this quiz version.
    pub version: Option<i32>,
    /// `graded` (default) or `all`.
    pub attempts: Option<CountedAttempts>,
    /// Questions to skip (pagination of the question list).
    #[param(minimum = 0, maximum = 10000)]
    pub offset: Option<u32>,
    /// Questions per page (default 100, at most 500).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<u32>,
    /// Language for the question and option texts (default: the quiz's source locale).
    pub lang: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AnalyticsReport {
    pub quiz: String,
    pub attempts: CountedAttempts,
    /// The assignments the statistics cover.
    pub assignments: Vec<Uuid>,
    /// One report per quiz version (questions differ between versions).
    pub versions: Vec<VersionReport>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AttemptCounts {
    pub started: i64,
    /// Finished by the learner.
    pub finished: i64,
    /// Finished by the deadline without being submitted.
    pub abandoned: i64,
    pub in_progress: i64,
    /// The finished attempts the statistics are computed over.
    pub counted: usize,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HistogramBin {
    /// Lower bound, in percent (inclusive).
    pub from: f64,
    /// Upper bound, in percent (exclusive, but 100 is in the last bin).
    pub to: f64,
    pub count: usize,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TestReport {
    /// Mean score, in percent.
    pub mean: Option<f64>,
    pub median: Option<f64>,
    pub standard_deviation: Option<f64>,
    pub skewness: Option<f64>,
    pub kurtosis: Option<f64>,
    /// Cronbach's alpha (coefficient of internal consistency), in percent.
    pub cronbach_alpha: Option<f64>,
    /// √(1 − alpha), in percent.
    pub error_ratio: Option<f64>,
    /// Error ratio × standard deviation, in percentage points.
    pub standard_error: Option<f64>,
    pub histogram: Vec<HistogramBin>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OptionReport {
    /// The option's stable key (staff see the key).
    pub key: String,
    pub text: LocalizedText,
    pub correct: bool,
    /// Counted attempts that chose it.
    pub count: usize,
    /// Mean total score (percent) of the attempts that chose it.
    pub mean_total: Option<f64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct QuestionReport {
    pub key: String,
    /// 1-based position in the quiz version.
    pub position: usize,
    pub kind: QuestionKind,
    pub prompt: LocalizedText,
    pub max_points: f64,
    /// Counted attempts (unanswered questions score 0).
    pub attempts: usize,
    /// Counted attempts that answered it.
    pub responses: usize,
    /// Mean score as a percentage of its points.
    pub facility: Option<f64>,
    pub standard_deviation: Option<f64>,
    /// Expected score of a random answer, in percent.
    pub random_guess_score: Option<f64>,
    pub intended_weight: Option<f64>,
    pub effective_weight: Option<f64>,
    /// Correlation of the question's score with the rest of the test, × 100.
    pub discrimination_index: Option<f64>,
    pub discriminative_efficiency: Option<f64>,
    /// Median seconds from the start (or the previous answer) to this answer, over answer
    /// times kept to the whole second (halves up).
    pub median_seconds: Option<f64>,
    pub options: Vec<OptionReport>,
}

/// One place in the layout of a quiz with banks, over every (attempt, question) pair it
/// served (Moodle reports random slots beside their questions). A mark is a fraction of its
/// question's points, so the bank's questions count alike.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SlotReport {
    /// 1-based position in the layout.
    pub position: usize,
    /// The bank it draws from; absent for a fixed question.
    pub bank: Option<String>,
    /// The tag its draw is limited to, if any.
    pub tag: Option<String>,
    /// How many questions it serves each attempt.
    pub draw: usize,
    /// The keys of the questions it can serve.
    pub questions: Vec<String>,
    /// (attempt, question) pairs counted: the attempts, for a slot drawing one.
    pub attempts: usize,
    /// Mean mark, percent of the questions' points.
    pub facility: Option<f64>,
    pub standard_deviation: Option<f64>,
    /// Correlation of the mark with the rest of the attempt's total, × 100.
    pub discrimination_index: Option<f64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LocaleQuestion {
    pub key: String,
    pub attempts: usize,
    pub facility: Option<f64>,
    pub discrimination_index: Option<f64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LocaleReport {
    pub locale: String,
    /// Counted attempts taken in this locale.
    pub attempts: usize,
    pub mean: Option<f64>,
    pub questions: Vec<LocaleQuestion>,
}

/// Whether a question's facility differs between locales by more than chance.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LocaleDifference {
    pub key: String,
    /// Chi-square statistic of the test of homogeneity (full marks vs not, by locale).
    pub chi_square: Option<f64>,
    pub degrees_of_freedom: Option<usize>,
    pub p_value: Option<f64>,
    /// p < 0.01: the facility differs between locales beyond chance; check the translation.
    pub flagged: bool,
    /// Why the test was not applied, when it was not.
    pub note: Option<String>,
    /// Mantel–Haenszel DIF for every pair of locales (the source locale, when in the pair, as
    /// the reference group), matched on the rest score: unlike `chi_square`, a group that is
    /// simply stronger does not make the question look biased.
    pub mantel_haenszel: Vec<LocalePairDif>,
}

/// Differential item functioning of one question between two locales' attempts.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LocalePairDif {
    /// The reference group's locale.
    pub reference: String,
    /// The focal group's locale.
    pub focal: String,
    /// Both groups saw this question (prompt and options) in the same language(s), e.g. both
    /// in the English fallback: a difference here is not a translation effect.
    pub same_language: bool,
    /// The language(s) each group saw the question in, as served (prompt first, then options).
    pub reference_languages: Vec<String>,
    pub focal_languages: Vec<String>,
    /// Attempts of each group in the strata where both groups appear.
    pub reference_attempts: usize,
    pub focal_attempts: usize,
    /// Rest-score strata where both groups appear (the only ones that count).
    pub strata: usize,
    /// α_MH: above 1, the question favours the reference group at equal rest score.
    pub odds_ratio: Option<f64>,
    /// MH chi-square with continuity correction (1 df).
    pub chi_square: Option<f64>,
    pub p_value: Option<f64>,
    /// MH D-DIF = −2.35 ln α_MH; negative: harder for the focal group at equal rest score.
    pub d_dif: Option<f64>,
    /// Standard error of MH D-DIF (Robins–Breslow–Greenland).
    pub d_dif_se: Option<f64>,
    /// ETS class A (negligible), B (moderate), C (large); `null` with insufficient data.
    pub ets_class: Option<crate::analytics::stats::EtsClass>,
    /// `insufficient data: …` when the statistics were not computed.
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VersionReport {
    pub quiz_version: i32,
    pub counts: AttemptCounts,
    pub test: TestReport,
    /// The question list, paginated.
    pub questions: Vec<QuestionReport>,
    pub total_questions: usize,
    /// Per slot of a quiz with banks, in layout order (empty without banks).
    pub slots: Vec<SlotReport>,
    pub offset: usize,
    pub limit: usize,
    pub locales: Vec<LocaleReport>,
    pub locale_differences: Vec<LocaleDifference>,
    /// The test behind `locale_differences`.
    pub locale_test: String,
    /// The method behind `locale_differences[].mantel_haenszel`.
    pub dif_method: String,
}
