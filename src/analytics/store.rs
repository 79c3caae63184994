//! The SQL that feeds the statistics: one row per counted attempt, with the score vector the
//! attempt keeps since it finished. The `analytics` views expose the same data to BI tools; a
//! test checks that the API and the views agree.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgExecutor};
use uuid::Uuid;

/// Which attempts: the assignments, one version, the filters.
#[derive(Debug, Clone)]
pub struct Scope {
    pub assignments: Vec<Uuid>,
    pub version_id: Uuid,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub locale: Option<String>,
    pub all_finished: bool,
}

/// The counted attempts: finished, filtered, and (unless all) the one per learner and
/// assignment that makes the grade under the assignment's method.
const COUNTED: &str = "WITH ranked AS (
    SELECT t.id AS attempt_id, t.locale, t.score, t.max_score, a.grading_method,
           t.question_keys, t.question_points, t.question_seconds, t.choices, t.question_set,
           row_number() OVER (
               PARTITION BY t.assignment_id, t.user_id
               ORDER BY CASE a.grading_method WHEN 'highest' THEN -t.score
                                              WHEN 'latest' THEN -t.number
                                              ELSE t.number END,
                        t.number) AS rank
      FROM attempts t JOIN assignments a ON a.id = t.assignment_id
     WHERE t.assignment_id = ANY($1) AND t.quiz_version_id = $2 AND t.finished_at IS NOT NULL
       AND ($3::timestamptz IS NULL OR t.finished_at >= $3)
       AND ($4::timestamptz IS NULL OR t.finished_at < $4)
       AND ($5::text IS NULL OR t.locale = $5)
 ), counted AS (
    SELECT * FROM ranked WHERE $6 OR rank = 1 OR grading_method = 'average'
 )";

/// A counted attempt with its responses as parallel arrays, kept on the attempt when it
/// finished (unanswered questions have no entry).
#[derive(Debug, Clone, FromRow)]
pub struct AttemptScores {
    pub attempt_id: Uuid,
    pub locale: String,
    pub score: f64,
    pub max_score: f64,
    pub keys: Vec<String>,
    pub points: Vec<f64>,
    pub seconds: Vec<f64>,
    /// `question_key:option_key` for each option chosen.
    pub choices: Vec<String>,
    /// The questions the attempt served (a quiz with banks); `None`: all of its version's.
    pub question_set: Option<Vec<String>>,
}

/// Every counted attempt with its score vector: one row per attempt, no join.
pub async fn counted_scores(
    db: impl PgExecutor<'_>,
    s: &Scope,
) -> Result<Vec<AttemptScores>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{COUNTED}
         SELECT attempt_id, locale, score, max_score,
                coalesce(question_keys, '{{}}') AS keys, coalesce(question_points, '{{}}') AS points,
                coalesce(question_seconds, '{{}}') AS seconds, coalesce(choices, '{{}}') AS choices,
                question_set
           FROM counted"
    )))
    .bind(&s.assignments)
    .bind(s.version_id)
    .bind(s.from)
    .bind(s.to)
    .bind(&s.locale)
    .bind(s.all_finished)
    .fetch_all(db)
    .await
}

#[derive(Debug, Clone, FromRow)]
pub struct StateCounts {
    pub started: i64,
    pub finished: i64,
    pub abandoned: i64,
    pub in_progress: i64,
}

/// Attempts by state (started in the date range, when one is given).
pub async fn state_counts(db: impl PgExecutor<'_>, s: &Scope) -> Result<StateCounts, sqlx::Error> {
    sqlx::query_as(
        "SELECT count(*) AS started,
                count(*) FILTER (WHERE state = 'submitted') AS finished,
                count(*) FILTER (WHERE state = 'abandoned') AS abandoned,
                count(*) FILTER (WHERE state = 'in_progress') AS in_progress
           FROM analytics.attempts
          WHERE assignment_id = ANY($1) AND quiz_version_id = $2
            AND ($3::timestamptz IS NULL OR started_at >= $3)
            AND ($4::timestamptz IS NULL OR started_at < $4)
            AND ($5::text IS NULL OR locale = $5)",
    )
    .bind(&s.assignments)
    .bind(s.version_id)
    .bind(s.from)
    .bind(s.to)
    .bind(&s.locale)
    .fetch_one(db)
    .await
}

/// On the primary: the assignments' analytics generation, which changes whenever an attempt
/// in them starts or finishes (finishes and rebuilds bump `analytics_generations`, starts one
/// of the assignment's `analytics_start_generations` rows, one per backend modulo 64:
/// migrations 0021 and 0027), and the primary's WAL insert position (past every commit it has
/// made visible), read together (see `replica`).
pub async fn generation_and_lsn(
    db: impl PgExecutor<'_>,
    assignments: &[Uuid],
) -> Result<(i64, String), sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT (SELECT coalesce(sum(generation), 0) FROM analytics_generations
                  WHERE assignment_id = ANY($1))::bigint
              + (SELECT coalesce(sum(generation), 0) FROM analytics_start_generations
                  WHERE assignment_id = ANY($1))::bigint,
                {COMMITTED_LSN}"
    )))
    .bind(assignments)
    .fetch_one(db)
    .await
}

/// On the primary: the WAL position past every commit it has made visible. Under
/// `synchronous_commit` (quizd's setting: an answer is acknowledged once flushed) a commit is
/// visible only once flushed, so the flush position is enough; the insert position would also
/// count WAL of transactions still running, which a replica cannot have until they flush, and
/// under load there always are some. With `synchronous_commit=off` a visible commit may not be
/// flushed yet: then the insert position.
const COMMITTED_LSN: &str = "(CASE current_setting('synchronous_commit') WHEN 'off'
        THEN pg_current_wal_insert_lsn() ELSE pg_current_wal_flush_lsn() END)::text";

/// On the primary: its committed WAL position ([`COMMITTED_LSN`]).
pub async fn primary_lsn(db: impl PgExecutor<'_>) -> Result<String, sqlx::Error> {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT {COMMITTED_LSN}")))
        .fetch_one(db)
        .await
}

/// On the analytics database: whether it has replayed the WAL up to `lsn` (a server that is
/// not in recovery is a primary, as fresh as itself).
pub async fn replayed_past(db: impl PgExecutor<'_>, lsn: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, NOT pg_is_in_recovery())",
    )
    .bind(lsn)
    .fetch_one(db)
    .await
}

#[derive(Debug, Clone, FromRow)]
pub struct ScopedAssignment {
    pub id: Uuid,
    pub quiz_version_id: Uuid,
    pub version: i32,
}

/// A quiz's assignments that the caller may analyse: every one for admins (practice
/// included), else those in courses they teach; optionally one course's only.
pub async fn quiz_assignments(
    db: impl PgExecutor<'_>,
    quiz_id: Uuid,
    user: Uuid,
    admin: bool,
    course: Option<Uuid>,
) -> Result<Vec<ScopedAssignment>, sqlx::Error> {
    sqlx::query_as(
        "SELECT a.id, a.quiz_version_id, v.version
           FROM assignments a JOIN quiz_versions v ON v.id = a.quiz_version_id
          WHERE a.quiz_id = $1
            AND ($4::uuid IS NULL OR a.course_id = $4)
            AND ($3 OR EXISTS (SELECT 1 FROM enrollments e
                                WHERE e.course_id = a.course_id AND e.user_id = $2
                                  AND e.role = 'instructor'))
          ORDER BY v.version, a.created_at",
    )
    .bind(quiz_id)
    .bind(user)
    .bind(admin)
    .bind(course)
    .fetch_all(db)
    .await
}

/// Counts attempts that have just finished in the incremental tables (migration 0014), inside
/// the finishing transaction and after it bumped the assignment's generation (that row lock
/// orders finishes against a rebuild).
pub async fn record_finished(
    db: impl PgExecutor<'_>,
    attempts: &[Uuid],
) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT item_sums_finish($1)")
        .bind(attempts)
        .execute(db)
        .await?;
    Ok(())
}

/// Marks an assignment's count tables stale, in the caller's transaction, when its attempts
/// changed wholesale (a regrade moves them all to another version): the rebuild then runs
/// after that transaction, not inside its locks ([`super::rebuild_stale_sums`], or the next
/// report); the new generation drops the reports cached meanwhile.
pub async fn forget_sums(db: impl PgExecutor<'_>, assignment: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query(
        "WITH gone AS (DELETE FROM item_sums_state WHERE assignment_id = $1)
         INSERT INTO analytics_generations (assignment_id, generation) VALUES ($1, 1)
         ON CONFLICT (assignment_id)
         DO UPDATE SET generation = analytics_generations.generation + 1",
    )
    .bind(assignment)
    .execute(db)
    .await?;
    Ok(())
}

/// These assignments (all, with `None`) whose tables are not maintained yet (attempts finished
/// before migration 0014) or follow another grading method than the assignment's now.
pub async fn stale_sums(
    db: impl PgExecutor<'_>,
    assignments: Option<&[Uuid]>,
) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT a.id FROM assignments a
           LEFT JOIN item_sums_state s ON s.assignment_id = a.id
          WHERE ($1::uuid[] IS NULL OR a.id = ANY($1))
            AND s.grading_method IS DISTINCT FROM a.grading_method
          ORDER BY a.id",
    )
    .bind(assignments)
    .fetch_all(db)
    .await
}

/// Rebuilds one assignment's tables from its finished attempts (idempotent, race-free: see
/// `item_sums_rebuild` in migration 0014). Run it in a transaction of its own.
/// Lets the statements of this transaction run up to 600 s (a rebuild, over all the attempts
/// of an assignment, runs longer than a request's statement may).
pub async fn long_statements(db: impl PgExecutor<'_>) -> Result<(), sqlx::Error> {
    sqlx::query("SET LOCAL statement_timeout = '600s'")
        .execute(db)
        .await?;
    Ok(())
}

pub async fn rebuild_sums(db: impl PgExecutor<'_>, assignment: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT item_sums_rebuild($1)")
        .bind(assignment)
        .execute(db)
        .await?;
    Ok(())
}

/// The filter of the tables: the scope's assignments, version, set and locale.
const SUMS_WHERE: &str = "WHERE assignment_id = ANY($1) AND quiz_version_id = $2 AND graded = $3
            AND ($4::text IS NULL OR locale = $4)";

/// The count tables of a scope (no date filter), merged over its assignments, with the
/// attempt counts by state; all read in one snapshot so that they agree with each other.
pub async fn read_sums(
    conn: &mut sqlx::PgConnection,
    s: &Scope,
) -> Result<(super::sums::VersionSums, StateCounts), sqlx::Error> {
    use super::sums::{CellRow, OptionRow, SecondsRow, TotalRow, VersionSums};
    let graded = !s.all_finished;
    let mut tx = sqlx::Connection::begin(&mut *conn).await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(&mut *tx)
        .await?;
    let totals: Vec<TotalRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT locale, score, max_score, total, sum(attempts)::bigint AS attempts,
                sum(abandoned)::bigint AS abandoned
           FROM item_totals {SUMS_WHERE}
          GROUP BY locale, score, max_score, total HAVING sum(attempts) <> 0
          ORDER BY locale, score, max_score, total"
    )))
    .bind(&s.assignments)
    .bind(s.version_id)
    .bind(graded)
    .bind(&s.locale)
    .fetch_all(&mut *tx)
    .await?;
    let cells: Vec<CellRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT locale, question_key, points, total, sum(attempts)::bigint AS attempts,
                sum(answered)::bigint AS answered
           FROM item_cells {SUMS_WHERE}
          GROUP BY locale, question_key, points, total HAVING sum(attempts) <> 0
          ORDER BY locale, question_key, points, total"
    )))
    .bind(&s.assignments)
    .bind(s.version_id)
    .bind(graded)
    .bind(&s.locale)
    .fetch_all(&mut *tx)
    .await?;
    let options: Vec<OptionRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT locale, question_key, option_key, score, max_score,
                sum(attempts)::bigint AS attempts
           FROM item_options {SUMS_WHERE}
          GROUP BY locale, question_key, option_key, score, max_score HAVING sum(attempts) <> 0
          ORDER BY locale, question_key, option_key, score, max_score"
    )))
    .bind(&s.assignments)
    .bind(s.version_id)
    .bind(graded)
    .bind(&s.locale)
    .fetch_all(&mut *tx)
    .await?;
    let seconds: Vec<SecondsRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT locale, question_key, seconds, sum(attempts)::bigint AS attempts
           FROM item_seconds {SUMS_WHERE}
          GROUP BY locale, question_key, seconds HAVING sum(attempts) <> 0
          ORDER BY locale, question_key, seconds"
    )))
    .bind(&s.assignments)
    .bind(s.version_id)
    .bind(graded)
    .bind(&s.locale)
    .fetch_all(&mut *tx)
    .await?;
    // By state: finished ones from the every-attempt set, those in progress from a partial index.
    let (finished, abandoned, in_progress): (i64, i64, i64) = sqlx::query_as(
        "SELECT coalesce(sum(attempts - abandoned), 0)::bigint,
                coalesce(sum(abandoned), 0)::bigint,
                (SELECT count(*) FROM attempts
                  WHERE assignment_id = ANY($1) AND quiz_version_id = $2 AND finished_at IS NULL
                    AND ($3::text IS NULL OR locale = $3))
           FROM item_totals
          WHERE assignment_id = ANY($1) AND quiz_version_id = $2 AND NOT graded
            AND ($3::text IS NULL OR locale = $3)",
    )
    .bind(&s.assignments)
    .bind(s.version_id)
    .bind(&s.locale)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok((
        VersionSums {
            totals,
            cells,
            options,
            seconds,
        },
        StateCounts {
            started: finished + abandoned + in_progress,
            finished,
            abandoned,
            in_progress,
        },
    ))
}

/// The rows of `responses.csv` (every column text; `$1` the assignment).
pub const RESPONSES_CSV: &str =
    "SELECT a.attempt_id::text, a.user_id::text, a.number::text, a.locale, a.state,
        r.question_key, r.points::text, r.max_points::text, r.correct::text, r.answered_at::text,
        r.seconds::text, array_to_string(r.selected_options, ' '), r.number::text, r.text
   FROM analytics.responses r JOIN analytics.attempts a ON a.attempt_id = r.attempt_id
  WHERE a.assignment_id = $1
  ORDER BY a.attempt_id, r.question_key";

/// The rows of `results.csv` (every column text; `$1` the assignment).
pub const RESULTS_CSV: &str = "SELECT a.user_id::text, u.display_name, u.email, count(*)::text, count(a.finished_at)::text,
        (CASE min(a.grading_method)
           WHEN 'highest' THEN max(a.percentage)
           WHEN 'average' THEN avg(a.percentage)
           WHEN 'latest' THEN (array_agg(a.percentage ORDER BY a.number DESC) FILTER (WHERE a.finished_at IS NOT NULL))[1]
           ELSE (array_agg(a.percentage ORDER BY a.number) FILTER (WHERE a.finished_at IS NOT NULL))[1]
         END)::text,
        min(a.grading_method), max(a.finished_at)::text
   FROM analytics.attempts a JOIN users u ON u.id = a.user_id
  WHERE a.assignment_id = $1
  GROUP BY a.user_id, u.display_name, u.email
  ORDER BY u.display_name, a.user_id";

/// The rows of a CSV export (`RESPONSES_CSV` or `RESULTS_CSV`), streamed.
pub fn csv_rows<'a>(
    pool: &'a sqlx::PgPool,
    sql: &'static str,
    assignment: Uuid,
) -> futures_util::stream::BoxStream<'a, Result<sqlx::postgres::PgRow, sqlx::Error>> {
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(assignment)
        .fetch(pool)
}
