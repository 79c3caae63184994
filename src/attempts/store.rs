//! SQL for attempts and responses. An answer is one statement: it checks ownership, state
//! and deadline, writes the response and its outbox event, atomically.

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::types::Json;
use sqlx::{FromRow, PgExecutor, PgPool};

use crate::policy::{FeedbackTiming, GradingMethod, Navigation};
use uuid::Uuid;

use crate::grading::scoring::{QuestionRules, Rule, Scoring};
use crate::grading::{Answer, Grade};

/// An attempt with the policy of its assignment. Its layout (seed, shuffle flags, navigation)
/// is its own, fixed at start; `deadline` changes when the rules change; `feedback` and
/// `closes_at` are the assignment's, which can change too.
#[derive(Debug, Clone, FromRow)]
pub struct AttemptRow {
    pub id: Uuid,
    pub assignment_id: Uuid,
    pub user_id: Uuid,
    pub quiz_version_id: Uuid,
    pub number: i32,
    pub locale: String,
    pub seed: Vec<u8>,
    pub started_at: DateTime<Utc>,
    pub deadline: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub finish_reason: Option<String>,
    pub score: Option<f64>,
    pub max_score: f64,
    pub course_id: Option<Uuid>,
    #[sqlx(try_from = "String")]
    pub feedback: FeedbackTiming,
    #[sqlx(try_from = "String")]
    pub grading_method: GradingMethod,
    pub shuffle_questions: bool,
    pub shuffle_options: bool,
    #[sqlx(try_from = "String")]
    pub navigation: Navigation,
    /// The assignment's close; a learner's own may be later (see `attempts::reveal_for`).
    pub closes_at: Option<DateTime<Utc>>,
    /// When a regrade last changed its grades (its learner sees a note).
    pub regraded_at: Option<DateTime<Utc>>,
    /// The grade course staff set by hand, which counts instead of `score`.
    pub override_points: Option<f64>,
    /// The keys of the questions this attempt serves, as drawn at start (layout order, before
    /// any shuffle), or as kept by a regrade to a version with other questions; `None`: every
    /// question of its version (a quiz without banks).
    pub question_set: Option<Vec<String>>,
    /// The assignment's questions rescored after the fact; changes (by a regrade).
    pub question_rules: Json<QuestionRules>,
    /// The live session this attempt was started by joining (it takes answers only through
    /// it); set at start, never changed.
    pub live_session_id: Option<Uuid>,
}

const SELECT: &str =
    "SELECT t.id, t.assignment_id, t.user_id, t.quiz_version_id, t.number, t.locale,
        t.seed, t.started_at, t.deadline, t.finished_at, t.finish_reason, t.score, t.max_score,
        a.course_id, a.feedback, a.grading_method, t.shuffle_questions, t.shuffle_options,
        t.navigation, a.closes_at, t.regraded_at, t.override_points, t.question_set,
        a.question_rules, t.live_session_id
   FROM attempts t JOIN assignments a ON a.id = t.assignment_id";

impl AttemptRow {
    /// This row with the attempt's state as it is now.
    pub fn with_status(&self, status: AttemptStatus) -> AttemptRow {
        AttemptRow {
            finished_at: status.finished_at,
            finish_reason: status.finish_reason,
            score: status.score,
            deadline: status.deadline,
            feedback: status.feedback,
            closes_at: status.closes_at,
            regraded_at: status.regraded_at,
            override_points: status.override_points,
            question_rules: status.question_rules,
            ..self.clone()
        }
    }

    pub fn sequential(&self) -> bool {
        self.navigation == Navigation::Sequential
    }
}

/// The part of an attempt that changes: once when it is finished, and whenever its
/// assignment's policy or the learner's overrides change (deadline, feedback, close time); and
/// its quiz version and the assignment's question rules, which only a regrade changes (a
/// changed version makes the cached layout stale).
#[derive(Debug, Clone)]
pub struct AttemptStatus {
    pub quiz_version_id: Uuid,
    pub regraded_at: Option<DateTime<Utc>>,
    pub override_points: Option<f64>,
    pub finished_at: Option<DateTime<Utc>>,
    pub finish_reason: Option<String>,
    pub score: Option<f64>,
    pub deadline: Option<DateTime<Utc>>,
    pub feedback: FeedbackTiming,
    pub closes_at: Option<DateTime<Utc>>,
    pub question_rules: Json<QuestionRules>,
}

pub async fn by_id(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<AttemptRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("{SELECT} WHERE t.id = $1")))
        .bind(id)
        .fetch_optional(db)
        .await
}

/// The learner's unfinished attempt at an assignment, if any.
pub async fn open_attempt(
    db: impl PgExecutor<'_>,
    assignment: Uuid,
    user: Uuid,
) -> Result<Option<AttemptRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{SELECT} WHERE t.assignment_id = $1 AND t.user_id = $2 AND t.finished_at IS NULL
          ORDER BY t.number DESC LIMIT 1"
    )))
    .bind(assignment)
    .bind(user)
    .fetch_optional(db)
    .await
}

pub struct NewAttempt<'a> {
    pub assignment_id: Uuid,
    pub user_id: Uuid,
    pub quiz_version_id: Uuid,
    pub locale: &'a str,
    pub seed: &'a [u8],
    pub started_at: DateTime<Utc>,
    pub deadline: Option<DateTime<Utc>>,
    pub max_score: f64,
    pub attempts_allowed: Option<u32>,
    pub shuffle_questions: bool,
    pub shuffle_options: bool,
    pub navigation: Navigation,
    /// What it serves, when its quiz has banks (see [`AttemptRow::question_set`]).
    pub question_set: Option<&'a [String]>,
    /// The live session it is started by joining, if any.
    pub live_session_id: Option<Uuid>,
}

/// Inserts the learner's next attempt, numbered after their last one, and its
/// `attempt.started` outbox event (when a consumer wants it: `crate::events`, "Who wants what") in
/// the same statement; `None` when the attempts allowed are
/// used up. Two simultaneous starts collide on the number, and one fails with a unique
/// violation.
pub async fn insert(
    db: impl PgExecutor<'_>,
    a: NewAttempt<'_>,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "WITH started AS (
            INSERT INTO attempts (id, assignment_id, user_id, quiz_version_id, number, locale, seed,
                                  started_at, deadline, max_score, shuffle_questions,
                                  shuffle_options, navigation, question_set, live_session_id)
            SELECT $1, $2, $3, $4, coalesce(max(number), 0) + 1, $5, $6, $7, $8, $9, $11, $12, $13,
                   $14, $15
              FROM attempts WHERE assignment_id = $2 AND user_id = $3
            HAVING $10::integer IS NULL OR count(*) < $10
            RETURNING id, number
         ), event AS (
            INSERT INTO outbox (topic, aggregate_id, payload)
            SELECT 'attempt.started', id,
                   jsonb_build_object('attempt_id', id, 'assignment_id', $2::uuid, 'user_id', $3::uuid,
                                      'number', number, 'locale', $5::text, 'started_at', $7::timestamptz)
              FROM started WHERE EXISTS (SELECT 1 FROM event_consumers WHERE topic = 'attempt.started')
         ), bump AS (
            INSERT INTO analytics_start_generations (assignment_id, shard, generation)
            SELECT $2, pg_backend_pid() % 64, 1 FROM started
            ON CONFLICT (assignment_id, shard) DO UPDATE
              SET generation = analytics_start_generations.generation + 1
         )
         SELECT id FROM started",
    )
    .bind(Uuid::now_v7())
    .bind(a.assignment_id)
    .bind(a.user_id)
    .bind(a.quiz_version_id)
    .bind(a.locale)
    .bind(a.seed)
    .bind(a.started_at)
    .bind(a.deadline)
    .bind(a.max_score)
    .bind(a.attempts_allowed.map(|n| n as i32))
    .bind(a.shuffle_questions)
    .bind(a.shuffle_options)
    .bind(a.navigation.as_str())
    .bind(a.question_set)
    .bind(a.live_session_id)
    .fetch_optional(db)
    .await
}

/// The question keys the learner was served in their earlier attempts of an assignment: each
/// attempt's question set, or every question of its version where it has none.
pub async fn seen_questions(
    db: impl PgExecutor<'_>,
    assignment: Uuid,
    user: Uuid,
) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT DISTINCT k.key
           FROM attempts t
           JOIN quiz_versions v ON v.id = t.quiz_version_id
           CROSS JOIN LATERAL (
               SELECT unnest(t.question_set) AS key WHERE t.question_set IS NOT NULL
               UNION ALL
               SELECT e.q ->> 'key' FROM jsonb_array_elements(v.content -> 'questions') AS e(q)
                WHERE t.question_set IS NULL
           ) k
          WHERE t.assignment_id = $1 AND t.user_id = $2",
    )
    .bind(assignment)
    .bind(user)
    .fetch_all(db)
    .await
}

#[derive(Debug, Clone, FromRow)]
pub struct ResponseRow {
    pub question_key: String,
    pub answer: Json<Answer>,
    pub points: f64,
    pub max_points: f64,
    pub correct: bool,
    pub answered_at: DateTime<Utc>,
}

pub async fn responses(
    db: impl PgExecutor<'_>,
    attempt: Uuid,
) -> Result<Vec<ResponseRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT question_key, answer, points, max_points, correct, answered_at
           FROM responses WHERE attempt_id = $1",
    )
    .bind(attempt)
    .fetch_all(db)
    .await
}

/// A response's columns from an outer join: all there, or all null.
#[derive(FromRow)]
struct MaybeResponse {
    question_key: Option<String>,
    answer: Option<Json<Answer>>,
    points: Option<f64>,
    max_points: Option<f64>,
    correct: Option<bool>,
    answered_at: Option<DateTime<Utc>>,
}

impl MaybeResponse {
    fn into_row(self) -> Option<ResponseRow> {
        Some(ResponseRow {
            question_key: self.question_key?,
            answer: self.answer?,
            points: self.points?,
            max_points: self.max_points?,
            correct: self.correct?,
            answered_at: self.answered_at?,
        })
    }
}

#[derive(FromRow)]
struct StatusAndResponse {
    quiz_version_id: Uuid,
    regraded_at: Option<DateTime<Utc>>,
    override_points: Option<f64>,
    finished_at: Option<DateTime<Utc>>,
    finish_reason: Option<String>,
    score: Option<f64>,
    deadline: Option<DateTime<Utc>>,
    #[sqlx(try_from = "String")]
    feedback: FeedbackTiming,
    closes_at: Option<DateTime<Utc>>,
    question_rules: Json<QuestionRules>,
    #[sqlx(flatten)]
    response: MaybeResponse,
}

/// The attempt's state and its responses, in one statement (resuming: the rest of the
/// attempt never changes and is known already; what can change is read here).
pub async fn status_and_responses(
    db: impl PgExecutor<'_>,
    attempt: Uuid,
) -> Result<Option<(AttemptStatus, Vec<ResponseRow>)>, sqlx::Error> {
    let rows: Vec<StatusAndResponse> = sqlx::query_as(
        "SELECT t.quiz_version_id, t.regraded_at, t.override_points, t.finished_at,
                t.finish_reason, t.score, t.deadline, a.feedback, a.closes_at, a.question_rules,
                r.question_key, r.answer, r.points, r.max_points, r.correct, r.answered_at
           FROM attempts t JOIN assignments a ON a.id = t.assignment_id
           LEFT JOIN responses r ON r.attempt_id = t.id
          WHERE t.id = $1",
    )
    .bind(attempt)
    .fetch_all(db)
    .await?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let status = AttemptStatus {
        question_rules: first.question_rules.clone(),
        quiz_version_id: first.quiz_version_id,
        regraded_at: first.regraded_at,
        override_points: first.override_points,
        finished_at: first.finished_at,
        finish_reason: first.finish_reason.clone(),
        score: first.score,
        deadline: first.deadline,
        feedback: first.feedback,
        closes_at: first.closes_at,
    };
    let responses = rows
        .into_iter()
        .filter_map(|r| r.response.into_row())
        .collect();
    Ok(Some((status, responses)))
}

pub async fn response(
    db: impl PgExecutor<'_>,
    attempt: Uuid,
    question_key: &str,
) -> Result<Option<ResponseRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT question_key, answer, points, max_points, correct, answered_at
           FROM responses WHERE attempt_id = $1 AND question_key = $2",
    )
    .bind(attempt)
    .bind(question_key)
    .fetch_optional(db)
    .await
}

/// Free navigation: a new answer replaces the one on record, unless the assignment's feedback
/// is immediate at this moment (then the first answer stands). Decided in the statement, so a
/// feedback change reaches attempts in progress at once.
const REPLACE_UNLESS_IMMEDIATE: &str =
    "DO UPDATE SET answer = EXCLUDED.answer, points = EXCLUDED.points,
                       max_points = EXCLUDED.max_points, correct = EXCLUDED.correct,
                       answered_at = EXCLUDED.answered_at, seconds = EXCLUDED.seconds,
                       revision = responses.revision + 1
             WHERE NOT (SELECT immediate FROM t)";

pub enum Recorded {
    /// Written (or, where answers may change, overwritten); `immediate`: the assignment's
    /// feedback is immediate now; `scoring`: how the question counts in the assignment now.
    Written {
        row: ResponseRow,
        immediate: bool,
        scoring: Scoring,
    },
    /// Final answers only: a response to this question exists already.
    AlreadyAnswered { immediate: bool, scoring: Scoring },
    /// Sequential navigation: a question before this one is unanswered.
    NotInTurn,
    /// The attempt is finished, past its deadline, or not this learner's (or they left its
    /// course).
    Closed,
    /// A regrade moved the attempt to another version of its quiz: the answer was graded
    /// against a layout that is no longer the attempt's; nothing was written.
    Moved,
}

#[derive(FromRow)]
struct RecordOutcome {
    open: bool,
    moved: bool,
    immediate: bool,
    in_turn: bool,
    rule: Option<Json<Rule>>,
    #[sqlx(flatten)]
    written: MaybeResponse,
}

/// Records a graded answer in one statement: the attempt must be this learner's (and they
/// still in its course, if it has one), unfinished and before its deadline (locked `FOR SHARE`,
/// so a concurrent finish or rule change waits for it, and an answer that waited for one sees
/// it); the outbox event (when a consumer wants
/// `response.recorded`: `crate::events`) is written with it. The first answer stands under
/// immediate feedback (as the assignment says at this moment) and under sequential navigation;
/// otherwise it is replaced.
///
/// `version`: the quiz version the answer was graded against (the layout's). A regrade may
/// have moved the attempt to another since the layout was cached, here or on another instance:
/// then nothing is written ([`Recorded::Moved`]); an answer waiting on the regrade's lock
/// sees the moved row.
///
/// `sequential`: the keys of the questions before this one in the attempt's order, all of
/// which must be answered already (sequential navigation); `None` for free navigation, whose
/// statement is the one it always was.
#[allow(clippy::too_many_arguments)]
pub async fn record_response(
    db: impl PgExecutor<'_>,
    attempt: Uuid,
    user: Uuid,
    question_key: &str,
    answer: &Answer,
    grade: Grade,
    now: DateTime<Utc>,
    version: Uuid,
    sequential: Option<&[String]>,
) -> Result<Recorded, sqlx::Error> {
    let (turn, turn_from, turn_where, in_turn, on_conflict) = if sequential.is_some() {
        (
            ", turn AS (
            SELECT count(*) = cardinality($10::text[]) AS ok FROM responses
             WHERE attempt_id = $1 AND question_key = ANY($10)
         )",
            ", turn",
            "AND turn.ok",
            "coalesce((SELECT ok FROM turn), false)",
            "DO NOTHING",
        )
    } else {
        ("", "", "", "true", REPLACE_UNLESS_IMMEDIATE)
    };
    let sql = format!(
        "WITH t AS (
            SELECT t.id, t.started_at, a.feedback = 'immediate' AS immediate,
                   t.quiz_version_id = $9 AS current, a.question_rules -> $3 AS rule
              FROM attempts t JOIN assignments a ON a.id = t.assignment_id
             WHERE t.id = $1 AND t.user_id = $2 AND t.finished_at IS NULL
               AND (t.deadline IS NULL OR t.deadline > $7)
               AND (a.course_id IS NULL OR EXISTS (SELECT 1 FROM enrollments e
                                                    WHERE e.course_id = a.course_id AND e.user_id = $2))
               FOR SHARE OF t
         ){turn}, previous AS (
            SELECT max(answered_at) AS at FROM responses WHERE attempt_id = $1
         ), ins AS (
            INSERT INTO responses (attempt_id, question_key, answer, points, max_points, correct,
                                   answered_at, seconds)
            SELECT t.id, $3, $4, $5, $6, $8, $7,
                   greatest(0, extract(epoch FROM $7 - coalesce(previous.at, t.started_at)))
              FROM t, previous{turn_from} WHERE t.current {turn_where}
            ON CONFLICT (attempt_id, question_key) {on_conflict}
            RETURNING question_key, answer, points, max_points, correct, answered_at, revision
         ), event AS (
            INSERT INTO outbox (topic, aggregate_id, payload)
            SELECT 'response.recorded', $1,
                   jsonb_build_object('attempt_id', $1, 'user_id', $2, 'question_key', question_key,
                                      'points', points, 'max_points', max_points, 'correct', correct,
                                      'revision', revision, 'answered_at', answered_at)
              FROM ins WHERE EXISTS (SELECT 1 FROM event_consumers WHERE topic = 'response.recorded')
         )
         SELECT EXISTS (SELECT 1 FROM t) AS open,
                EXISTS (SELECT 1 FROM t WHERE NOT t.current) AS moved,
                coalesce((SELECT immediate FROM t), false) AS immediate, {in_turn} AS in_turn,
                (SELECT rule FROM t) AS rule, ins.question_key, ins.answer, ins.points, ins.max_points, ins.correct,
                ins.answered_at
           FROM (SELECT 1) AS one LEFT JOIN ins ON true"
    );
    let mut query = sqlx::query_as::<_, RecordOutcome>(sqlx::AssertSqlSafe(sql))
        .bind(attempt)
        .bind(user)
        .bind(question_key)
        .bind(Json(answer))
        .bind(grade.points)
        .bind(grade.max_points)
        .bind(now)
        .bind(grade.correct)
        .bind(version);
    if let Some(preceding) = sequential {
        query = query.bind(preceding);
    }
    let out = query.fetch_one(db).await?;
    Ok(if out.moved {
        Recorded::Moved
    } else if !out.open {
        Recorded::Closed
    } else if !out.in_turn {
        Recorded::NotInTurn
    } else {
        let scoring = out.rule.map_or(Scoring::Graded, |r| r.0.scoring);
        match out.written.into_row() {
            Some(row) => Recorded::Written {
                row,
                immediate: out.immediate,
                scoring,
            },
            None => Recorded::AlreadyAnswered {
                immediate: out.immediate,
                scoring,
            },
        }
    })
}

/// What clearing a response did.
#[derive(Debug, PartialEq, Eq)]
pub enum Cleared {
    /// Deleted (or there was none to delete): the question is unanswered.
    Cleared,
    /// Immediate feedback: the answer has shown its key and stands.
    Final,
    /// The attempt is finished, past its deadline, or not this learner's.
    Closed,
}

/// Clears a response ("Clear my choice") in one statement, with the same checks as
/// [`record_response`]: the attempt must be this learner's (still in its course), unfinished
/// and before its deadline (locked `FOR SHARE`, so a finish waits for it). Under immediate feedback an answered question
/// has shown its key, so its answer stands. The `response.cleared` outbox event is written with
/// the deletion. Not a hot path: no copy in `bench/sql/`.
pub async fn clear_response(
    db: impl PgExecutor<'_>,
    attempt: Uuid,
    user: Uuid,
    question_key: &str,
    now: DateTime<Utc>,
) -> Result<Cleared, sqlx::Error> {
    let (open, immediate, answered): (bool, bool, bool) = sqlx::query_as(
        "WITH t AS (
            SELECT t.id, a.feedback = 'immediate' AS immediate
              FROM attempts t JOIN assignments a ON a.id = t.assignment_id
             WHERE t.id = $1 AND t.user_id = $2 AND t.finished_at IS NULL
               AND (t.deadline IS NULL OR t.deadline > $4)
               AND (a.course_id IS NULL OR EXISTS (SELECT 1 FROM enrollments e
                                                    WHERE e.course_id = a.course_id AND e.user_id = $2))
               FOR SHARE OF t
         ), del AS (
            DELETE FROM responses r USING t
             WHERE r.attempt_id = t.id AND r.question_key = $3 AND NOT t.immediate
            RETURNING r.question_key, r.revision
         ), event AS (
            INSERT INTO outbox (topic, aggregate_id, payload)
            SELECT 'response.cleared', $1,
                   jsonb_build_object('attempt_id', $1, 'user_id', $2, 'question_key', question_key,
                                      'revision', revision, 'cleared_at', $4::timestamptz)
              FROM del WHERE EXISTS (SELECT 1 FROM event_consumers WHERE topic = 'response.cleared')
         )
         SELECT EXISTS (SELECT 1 FROM t) AS open,
                coalesce((SELECT immediate FROM t), false) AS immediate,
                EXISTS (SELECT 1 FROM responses WHERE attempt_id = $1 AND question_key = $3) AS answered",
    )
    .bind(attempt)
    .bind(user)
    .bind(question_key)
    .bind(now)
    .fetch_one(db)
    .await?;
    Ok(if !open {
        Cleared::Closed
    } else if immediate && answered {
        Cleared::Final
    } else {
        Cleared::Cleared
    })
}

/// Finishes an attempt: locks it (waiting for answers in flight), scores what was answered,
/// writes the `attempt.finished` event and appends the `finished` grade event. Returns `false`
/// if it was finished already.
pub async fn finish(
    db: &PgPool,
    attempt: Uuid,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let mut tx = db.begin().await?;
    let finished = finish_in(&mut tx, attempt, reason, now).await?;
    tx.commit().await?;
    Ok(finished)
}

/// [`finish`] inside the caller's transaction.
pub async fn finish_in(
    tx: &mut sqlx::PgConnection,
    attempt: Uuid,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let open: Option<(Uuid, Uuid, Option<DateTime<Utc>>)> = sqlx::query_as(
        "SELECT assignment_id, user_id, deadline FROM attempts
          WHERE id = $1 AND finished_at IS NULL FOR UPDATE",
    )
    .bind(attempt)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((assignment_id, user_id, deadline)) = open else {
        return Ok(false);
    };
    // An attempt that ran out of time ends at its deadline, whenever it is noticed.
    let finished_at = match (reason, deadline) {
        ("deadline", Some(d)) if d < now => d,
        _ => now,
    };
    // The responses are final now: keep them as vectors on the attempt for analytics. The
    // score is `grading::scoring::score` under the assignment's rules: the responses' points
    // but those of rescored questions, and full marks on each such question it serves.
    let (score, max_score): (f64, f64) = sqlx::query_as(
        "WITH rules AS (
            SELECT a.question_rules AS rules
              FROM attempts t JOIN assignments a ON a.id = t.assignment_id WHERE t.id = $1
         )
         UPDATE attempts t
            SET finished_at = $2, finish_reason = $3,
                score = coalesce(s.score, 0) + coalesce(
                    (SELECT sum((rule.value ->> 'points')::float8)
                       FROM rules, jsonb_each(rules.rules) AS rule
                      WHERE rule.value ->> 'scoring' = 'full_marks'
                        AND (t.question_set IS NULL OR rule.key = ANY(t.question_set))), 0),
                question_keys = coalesce(s.keys, '{}'), question_points = coalesce(s.points, '{}'),
                question_seconds = coalesce(s.seconds, '{}'), choices = coalesce(s.choices, '{}')
           FROM (SELECT sum(points) FILTER (WHERE NOT (SELECT rules FROM rules) ? question_key)
                            AS score,
                        array_agg(question_key ORDER BY question_key) AS keys,
                        array_agg(points ORDER BY question_key) AS points,
                        array_agg(seconds ORDER BY question_key) AS seconds,
                        (SELECT array_agg(r.question_key || ':' || o.key)
                           FROM responses r,
                                jsonb_array_elements_text(CASE WHEN r.answer ? 'selected'
                                                               THEN r.answer -> 'selected'
                                                               ELSE '[]' END) AS o(key)
                          WHERE r.attempt_id = $1) AS choices
                   FROM responses WHERE attempt_id = $1) s
          WHERE t.id = $1
          RETURNING t.score, t.max_score",
    )
    .bind(attempt)
    .bind(finished_at)
    .bind(reason)
    .fetch_one(&mut *tx)
    .await?;
    crate::grades::store::record_event(
        &mut *tx,
        crate::grades::store::NewEvent {
            attempt,
            kind: crate::grades::models::GradeEventKind::Finished,
            actor: None,
            at: finished_at,
            from_points: None,
            to_points: score,
            max_points: max_score,
            reason,
        },
    )
    .await?;
    sqlx::query(
        "INSERT INTO analytics_generations (assignment_id, generation) VALUES ($1, 1)
         ON CONFLICT (assignment_id) DO UPDATE SET generation = analytics_generations.generation + 1",
    )
    .bind(assignment_id)
    .execute(&mut *tx)
    .await?;
    // After the generation bump: its row lock orders this against an analytics rebuild.
    crate::analytics::store::record_finished(&mut *tx, &[attempt]).await?;
    sqlx::query(
        "INSERT INTO outbox (topic, aggregate_id, payload) VALUES ('attempt.finished', $1, $2)",
    )
    .bind(attempt)
    .bind(json!({
        "attempt_id": attempt,
        "assignment_id": assignment_id,
        "user_id": user_id,
        "score": score,
        "max_score": max_score,
        "reason": reason,
        "finished_at": finished_at,
    }))
    .execute(&mut *tx)
    .await?;
    Ok(true)
}

/// Unfinished attempts whose deadline has passed.
pub async fn expired(
    db: impl PgExecutor<'_>,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT id FROM attempts WHERE finished_at IS NULL AND deadline <= $1
          ORDER BY deadline LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(db)
    .await
}

/// An attempt in a list, with who took it.
#[derive(Debug, Clone, FromRow)]
pub struct AttemptListRow {
    pub id: Uuid,
    pub assignment_id: Uuid,
    pub course_id: Option<Uuid>,
    pub slug: String,
    pub version: i32,
    pub user_id: Uuid,
    pub display_name: String,
    pub number: i32,
    pub locale: String,
    pub started_at: DateTime<Utc>,
    pub deadline: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub score: Option<f64>,
    pub override_points: Option<f64>,
    pub max_score: f64,
    #[sqlx(try_from = "String")]
    pub grading_method: GradingMethod,
}

const LIST_SELECT: &str = "SELECT t.id, t.assignment_id, a.course_id, q.slug, v.version, t.user_id,
        u.display_name, t.number, t.locale, t.started_at, t.deadline, t.finished_at, t.score,
        t.override_points, t.max_score, a.grading_method
   FROM attempts t
   JOIN assignments a ON a.id = t.assignment_id
   JOIN quiz_versions v ON v.id = t.quiz_version_id
   JOIN quizzes q ON q.id = v.quiz_id
   JOIN users u ON u.id = t.user_id";

/// A page of the learner's attempts, newest first, after `after` (started, id); `fetch` at
/// most.
pub async fn for_user(
    db: impl PgExecutor<'_>,
    user: Uuid,
    after: Option<(DateTime<Utc>, Uuid)>,
    fetch: i64,
) -> Result<Vec<AttemptListRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{LIST_SELECT} WHERE t.user_id = $1
            AND ($2::timestamptz IS NULL OR (t.started_at, t.id) < ($2, $3))
          ORDER BY t.started_at DESC, t.id DESC LIMIT $4"
    )))
    .bind(user)
    .bind(after.map(|a| a.0))
    .bind(after.map(|a| a.1))
    .bind(fetch)
    .fetch_all(db)
    .await
}

/// The sort key of [`for_assignment`]: by learner (name, id), then attempt number.
pub type AssignmentKey = (String, Uuid, i32);

/// A page of the assignment's attempts after `after` ([`AssignmentKey`]); `fetch` at most.
pub async fn for_assignment(
    db: impl PgExecutor<'_>,
    assignment: Uuid,
    after: Option<&AssignmentKey>,
    fetch: i64,
) -> Result<Vec<AttemptListRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{LIST_SELECT} WHERE t.assignment_id = $1
            AND ($2::text IS NULL OR (u.display_name, t.user_id, t.number) > ($2, $3, $4))
          ORDER BY u.display_name, t.user_id, t.number LIMIT $5"
    )))
    .bind(assignment)
    .bind(after.map(|a| a.0.as_str()))
    .bind(after.map(|a| a.1))
    .bind(after.map(|a| a.2))
    .bind(fetch)
    .fetch_all(db)
    .await
}

/// Every attempt of these (assignment, learner) pairs: what their grades are computed from,
/// whichever page their attempts are listed on.
pub async fn of_pairs(
    db: impl PgExecutor<'_>,
    pairs: &[(Uuid, Uuid)],
) -> Result<Vec<AttemptListRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{LIST_SELECT} WHERE (t.assignment_id, t.user_id) IN
             (SELECT * FROM unnest($1::uuid[], $2::uuid[]))
          ORDER BY t.assignment_id, t.user_id, t.number"
    )))
    .bind(pairs.iter().map(|p| p.0).collect::<Vec<_>>())
    .bind(pairs.iter().map(|p| p.1).collect::<Vec<_>>())
    .fetch_all(db)
    .await
}
