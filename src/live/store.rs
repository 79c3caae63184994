//! SQL for live sessions and their participants.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgExecutor};
use uuid::Uuid;

#[derive(Debug, Clone, FromRow)]
pub struct SessionRow {
    pub id: Uuid,
    pub assignment_id: Uuid,
    pub course_id: Option<Uuid>,
    /// The quiz's slug (whose authors run the sessions of its practice assignment).
    pub slug: String,
    pub quiz_version_id: Uuid,
    pub created_by: Option<Uuid>,
    pub code: String,
    pub code_expires_at: DateTime<Utc>,
    pub question_index: Option<i32>,
    pub question_key: Option<String>,
    pub opened_at: Option<DateTime<Utc>>,
    pub closes_at: Option<DateTime<Utc>>,
    pub leaderboard: bool,
    pub created_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
}

/// A [`SessionRow`]'s columns, and the tables they come from (`s` the session).
macro_rules! session_columns {
    () => {
        "s.id, s.assignment_id, a.course_id, q.slug, s.quiz_version_id, s.created_by, s.code,
         s.code_expires_at, s.question_index, s.question_key, s.opened_at, s.closes_at,
         s.leaderboard, s.created_at, s.ended_at"
    };
}
macro_rules! session_tables {
    () => {
        "live_sessions s JOIN assignments a ON a.id = s.assignment_id
         JOIN quizzes q ON q.id = a.quiz_id"
    };
}

pub struct NewSession<'a> {
    pub id: Uuid,
    pub assignment_id: Uuid,
    pub quiz_version_id: Uuid,
    pub created_by: Uuid,
    pub code: &'a str,
    pub code_expires_at: DateTime<Utc>,
    pub leaderboard: bool,
    pub now: DateTime<Utc>,
}

/// Inserts a session; `false` when its code is taken by another open session (try another).
/// A session that was never ended gives up its code once the code has expired.
pub async fn insert(db: &sqlx::PgPool, s: NewSession<'_>) -> Result<bool, sqlx::Error> {
    let mut tx = db.begin().await?;
    sqlx::query(
        "UPDATE live_sessions SET ended_at = $2
          WHERE code = $1 AND ended_at IS NULL AND code_expires_at <= $2",
    )
    .bind(s.code)
    .bind(s.now)
    .execute(&mut *tx)
    .await?;
    let inserted = sqlx::query(
        "INSERT INTO live_sessions (id, assignment_id, quiz_version_id, created_by, code,
                                    code_expires_at, leaderboard, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (code) WHERE ended_at IS NULL DO NOTHING",
    )
    .bind(s.id)
    .bind(s.assignment_id)
    .bind(s.quiz_version_id)
    .bind(s.created_by)
    .bind(s.code)
    .bind(s.code_expires_at)
    .bind(s.leaderboard)
    .bind(s.now)
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1;
    tx.commit().await?;
    Ok(inserted)
}

pub async fn by_id(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<SessionRow>, sqlx::Error> {
    sqlx::query_as(concat!(
        "SELECT ",
        session_columns!(),
        " FROM ",
        session_tables!(),
        " WHERE s.id = $1"
    ))
    .bind(id)
    .fetch_optional(db)
    .await
}

/// The open session with this code whose code has not expired: one probe of the partial
/// unique index on open codes.
pub async fn by_code(
    db: impl PgExecutor<'_>,
    code: &str,
    now: DateTime<Utc>,
) -> Result<Option<SessionRow>, sqlx::Error> {
    sqlx::query_as(concat!(
        "SELECT ",
        session_columns!(),
        " FROM ",
        session_tables!(),
        " WHERE s.code = $1 AND s.ended_at IS NULL AND s.code_expires_at > $2"
    ))
    .bind(code)
    .bind(now)
    .fetch_optional(db)
    .await
}

/// Opens question `index` (`key`), if the session still shows `previous` and is not ended
/// (two instructors' clicks at once: one wins). Returns whether it did.
#[allow(clippy::too_many_arguments)]
pub async fn open_question(
    db: impl PgExecutor<'_>,
    id: Uuid,
    previous: Option<i32>,
    index: i32,
    key: &str,
    opened_at: DateTime<Utc>,
    closes_at: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE live_sessions
            SET question_index = $3, question_key = $4, opened_at = $5, closes_at = $6
          WHERE id = $1 AND ended_at IS NULL AND question_index IS NOT DISTINCT FROM $2",
    )
    .bind(id)
    .bind(previous)
    .bind(index)
    .bind(key)
    .bind(opened_at)
    .bind(closes_at)
    .execute(db)
    .await?
    .rows_affected()
        == 1)
}

/// Closes question `index` at `at`, if it is still open then.
pub async fn close_question(
    db: impl PgExecutor<'_>,
    id: Uuid,
    index: i32,
    at: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE live_sessions SET closes_at = $3
          WHERE id = $1 AND ended_at IS NULL AND question_index = $2 AND closes_at > $3",
    )
    .bind(id)
    .bind(index)
    .bind(at)
    .execute(db)
    .await?
    .rows_affected()
        == 1)
}

/// Ends the session (its code joins nothing from now on, and an open question closes);
/// `false` if it had ended already.
pub async fn end(
    db: impl PgExecutor<'_>,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE live_sessions SET ended_at = $2,
                closes_at = CASE WHEN closes_at > $2 THEN $2 ELSE closes_at END
          WHERE id = $1 AND ended_at IS NULL",
    )
    .bind(id)
    .bind(at)
    .execute(db)
    .await?
    .rows_affected()
        == 1)
}

/// The session and the learner's attempt in it, if they joined it (one statement: answering).
pub async fn for_learner(
    db: impl PgExecutor<'_>,
    session: Uuid,
    user: Uuid,
) -> Result<Option<(SessionRow, Uuid)>, sqlx::Error> {
    #[derive(FromRow)]
    struct Row {
        #[sqlx(flatten)]
        session: SessionRow,
        attempt_id: Uuid,
    }
    let row: Option<Row> = sqlx::query_as(concat!(
        "SELECT ",
        session_columns!(),
        ", p.attempt_id FROM ",
        session_tables!(),
        " JOIN live_participants p ON p.session_id = s.id
          WHERE p.session_id = $1 AND p.user_id = $2"
    ))
    .bind(session)
    .bind(user)
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| (r.session, r.attempt_id)))
}

/// The learner's attempt in the session, if they joined it.
pub async fn participant(
    db: impl PgExecutor<'_>,
    session: Uuid,
    user: Uuid,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT attempt_id FROM live_participants WHERE session_id = $1 AND user_id = $2",
    )
    .bind(session)
    .bind(user)
    .fetch_optional(db)
    .await
}

/// Records the learner's attempt in the session; the attempt already recorded for them if
/// they joined before (two joins at once).
pub async fn add_participant(
    db: impl PgExecutor<'_>,
    session: Uuid,
    user: Uuid,
    attempt: Uuid,
) -> Result<Uuid, sqlx::Error> {
    sqlx::query_scalar(
        "WITH ins AS (
            INSERT INTO live_participants (session_id, user_id, attempt_id) VALUES ($1, $2, $3)
            ON CONFLICT (session_id, user_id) DO NOTHING
            RETURNING attempt_id
         )
         SELECT attempt_id FROM ins
         UNION ALL
         SELECT attempt_id FROM live_participants WHERE session_id = $1 AND user_id = $2
         LIMIT 1",
    )
    .bind(session)
    .bind(user)
    .bind(attempt)
    .fetch_one(db)
    .await
}

/// The display name of a person (for the projector's list of who joined).
pub async fn display_name(db: impl PgExecutor<'_>, user: Uuid) -> Result<String, sqlx::Error> {
    sqlx::query_scalar("SELECT display_name FROM users WHERE id = $1")
        .bind(user)
        .fetch_one(db)
        .await
}

/// How many joined.
pub async fn participant_count(db: impl PgExecutor<'_>, session: Uuid) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT count(*) FROM live_participants WHERE session_id = $1")
        .bind(session)
        .fetch_one(db)
        .await
}

/// The participants' unfinished attempts (finished when the session ends).
pub async fn unfinished_attempts(
    db: impl PgExecutor<'_>,
    session: Uuid,
) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT t.id FROM live_participants p JOIN attempts t ON t.id = p.attempt_id
          WHERE p.session_id = $1 AND t.finished_at IS NULL ORDER BY t.id",
    )
    .bind(session)
    .fetch_all(db)
    .await
}

/// The answers to one question of the session, counted: per chosen option key (`option`
/// set), or, for a question answered by number or text, per correctness (`option` NULL).
#[derive(Debug, Clone, FromRow)]
pub struct Tally {
    pub option: Option<String>,
    pub correct: Option<bool>,
    pub answers: i64,
}

pub async fn distribution(
    db: impl PgExecutor<'_>,
    session: Uuid,
    question_key: &str,
) -> Result<Vec<Tally>, sqlx::Error> {
    sqlx::query_as(
        "WITH r AS (
            SELECT r.answer, r.correct
              FROM live_participants p JOIN responses r ON r.attempt_id = p.attempt_id
             WHERE p.session_id = $1 AND r.question_key = $2
         )
         SELECT o.key AS option, NULL::boolean AS correct, count(*) AS answers
           FROM r, jsonb_array_elements_text(r.answer -> 'selected') AS o(key)
          WHERE r.answer ? 'selected'
          GROUP BY o.key
         UNION ALL
         SELECT NULL, r.correct, count(*) FROM r WHERE NOT r.answer ? 'selected' GROUP BY r.correct
         UNION ALL
         SELECT NULL, NULL, count(*) FROM r",
    )
    .bind(session)
    .bind(question_key)
    .fetch_all(db)
    .await
}

/// The leaderboard: the participants with the most points in the session, best first.
#[derive(Debug, Clone, FromRow)]
pub struct Standing {
    pub display_name: String,
    pub points: f64,
}

pub async fn leaders(
    db: impl PgExecutor<'_>,
    session: Uuid,
    limit: i64,
) -> Result<Vec<Standing>, sqlx::Error> {
    sqlx::query_as(
        "SELECT u.display_name, coalesce(sum(r.points), 0)::float8 AS points
           FROM live_participants p
           JOIN users u ON u.id = p.user_id
           LEFT JOIN responses r ON r.attempt_id = p.attempt_id
          WHERE p.session_id = $1
          GROUP BY p.user_id, u.display_name
          ORDER BY points DESC, u.display_name, p.user_id
          LIMIT $2",
    )
    .bind(session)
    .bind(limit)
    .fetch_all(db)
    .await
}

/// Tells the other instances what changed in a session (`live::listen` on each).
pub async fn notify(db: impl PgExecutor<'_>, payload: &str) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_notify('quizd_live', $1)")
        .bind(payload)
        .execute(db)
        .await?;
    Ok(())
}
