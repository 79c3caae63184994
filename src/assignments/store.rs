//! SQL for assignments.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{FromRow, PgExecutor};
use uuid::Uuid;

use super::models::{Assignment, Override};
use super::rules::Adjustment;
use crate::content::Visibility;
use crate::grading::scoring::QuestionRules;
use crate::policy::{FeedbackTiming, GradingMethod, Navigation, Policy};

#[derive(Debug, Clone, FromRow)]
pub struct AssignmentRow {
    pub id: Uuid,
    pub course_id: Option<Uuid>,
    pub quiz_id: Uuid,
    pub quiz_version_id: Uuid,
    pub slug: String,
    pub version: i32,
    pub title: String,
    #[sqlx(try_from = "String")]
    pub feedback: FeedbackTiming,
    pub attempts_allowed: Option<i32>,
    pub time_limit_minutes: Option<i32>,
    #[sqlx(try_from = "String")]
    pub grading_method: GradingMethod,
    pub shuffle_questions: bool,
    pub shuffle_options: bool,
    #[sqlx(try_from = "String")]
    pub navigation: Navigation,
    pub opens_at: Option<DateTime<Utc>>,
    pub closes_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub archived_at: Option<DateTime<Utc>>,
    /// The quiz's visibility now: a practice assignment exists only while it is public.
    #[sqlx(try_from = "String")]
    pub visibility: Visibility,
    /// The questions rescored after the fact (full marks to everyone, or dropped).
    pub question_rules: Json<QuestionRules>,
}

impl AssignmentRow {
    pub fn policy(&self) -> Policy {
        Policy {
            feedback: self.feedback,
            attempts_allowed: self.attempts_allowed.map(|n| n as u32),
            time_limit_minutes: self.time_limit_minutes.map(|n| n as u32),
            grading_method: self.grading_method,
            shuffle_questions: self.shuffle_questions,
            shuffle_options: self.shuffle_options,
            navigation: self.navigation,
            opens_at: self.opens_at,
            closes_at: self.closes_at,
        }
    }

    pub fn view(&self) -> Assignment {
        Assignment {
            id: self.id,
            course_id: self.course_id,
            quiz: self.slug.clone(),
            quiz_version: self.version,
            title: self.title.clone(),
            policy: self.policy(),
            created_at: self.created_at,
            archived_at: self.archived_at,
            your_attempts: None,
        }
    }
}

/// How many attempts `user` has started at `assignment` (what the attempts limit counts).
pub async fn attempts_used(
    db: impl PgExecutor<'_>,
    assignment: Uuid,
    user: Uuid,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT count(*) FROM attempts WHERE assignment_id = $1 AND user_id = $2")
        .bind(assignment)
        .bind(user)
        .fetch_one(db)
        .await
}

/// The version number is a subquery, not a join: a statement that locks the assignment and
/// waits for a regrade (which changes `quiz_version_id`) rechecks the locked row's joins
/// against the rows it had joined before the wait, and would lose the row; the quiz joined
/// never changes.
const SELECT: &str = "SELECT a.id, a.course_id, a.quiz_id, a.quiz_version_id, q.slug,
        (SELECT v.version FROM quiz_versions v WHERE v.id = a.quiz_version_id) AS version,
        a.title, a.feedback, a.attempts_allowed, a.time_limit_minutes, a.grading_method,
        a.shuffle_questions, a.shuffle_options, a.navigation, a.opens_at, a.closes_at, a.created_at,
        a.archived_at, q.visibility, a.question_rules
   FROM assignments a
   JOIN quizzes q ON q.id = a.quiz_id";

pub struct NewAssignment<'a> {
    pub course_id: Option<Uuid>,
    pub quiz_id: Uuid,
    pub quiz_version_id: Uuid,
    pub title: &'a str,
    pub policy: &'a Policy,
    pub created_by: Option<Uuid>,
}

pub async fn insert(db: impl PgExecutor<'_>, a: NewAssignment<'_>) -> Result<Uuid, sqlx::Error> {
    let id = Uuid::now_v7();
    let p = a.policy;
    sqlx::query(
        "INSERT INTO assignments (id, course_id, quiz_id, quiz_version_id, title, feedback,
                attempts_allowed, time_limit_minutes, grading_method, shuffle_questions,
                shuffle_options, opens_at, closes_at, created_by, navigation)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
    )
    .bind(id)
    .bind(a.course_id)
    .bind(a.quiz_id)
    .bind(a.quiz_version_id)
    .bind(a.title)
    .bind(p.feedback.as_str())
    .bind(p.attempts_allowed.map(|n| n as i32))
    .bind(p.time_limit_minutes.map(|n| n as i32))
    .bind(p.grading_method.as_str())
    .bind(p.shuffle_questions)
    .bind(p.shuffle_options)
    .bind(p.opens_at)
    .bind(p.closes_at)
    .bind(a.created_by)
    .bind(p.navigation.as_str())
    .execute(db)
    .await?;
    Ok(id)
}

pub async fn by_id(
    db: impl PgExecutor<'_>,
    id: Uuid,
) -> Result<Option<AssignmentRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("{SELECT} WHERE a.id = $1")))
        .bind(id)
        .fetch_optional(db)
        .await
}

/// A course's assignments; the archived ones only when `archived`.
/// A page of them, oldest first, after `after` (created, id); `fetch` at most.
pub async fn for_course(
    db: impl PgExecutor<'_>,
    course: Uuid,
    archived: bool,
    after: Option<(DateTime<Utc>, Uuid)>,
    fetch: i64,
) -> Result<Vec<AssignmentRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{SELECT} WHERE a.course_id = $1 AND ($2 OR a.archived_at IS NULL)
            AND ($3::timestamptz IS NULL OR (a.created_at, a.id) > ($3, $4))
          ORDER BY a.created_at, a.id LIMIT $5"
    )))
    .bind(course)
    .bind(archived)
    .bind(after.map(|a| a.0))
    .bind(after.map(|a| a.1))
    .bind(fetch)
    .fetch_all(db)
    .await
}

/// The assignment, locked for a change of its rules (`FOR NO KEY UPDATE`): starts, which lock
/// it `FOR SHARE` while they read the rules and insert, wait for the change, and the change
/// waits for starts in flight, so every attempt gets a deadline under the rules it started
/// under and every later change reaches it. Not `FOR UPDATE`: that would also stop the foreign
/// key checks of rows that merely name the assignment (a finish's `analytics_generations`
/// row), and a finish holding its attempt while it waits for one deadlocks with a change that
/// then waits for the attempt (closing the assignment, a regrade).
pub async fn lock(
    db: impl PgExecutor<'_>,
    id: Uuid,
    exclusive: bool,
) -> Result<Option<AssignmentRow>, sqlx::Error> {
    let sql = if exclusive {
        format!("{SELECT} WHERE a.id = $1 FOR NO KEY UPDATE OF a")
    } else {
        format!("{SELECT} WHERE a.id = $1 FOR SHARE OF a")
    };
    sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .fetch_optional(db)
        .await
}

/// Every assignment of a course, locked `FOR NO KEY UPDATE` (see [`lock`]) in id order (no deadlock between two
/// course-wide changes).
pub async fn lock_course(
    db: impl PgExecutor<'_>,
    course: Uuid,
) -> Result<Vec<AssignmentRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{SELECT} WHERE a.course_id = $1 ORDER BY a.id FOR NO KEY UPDATE OF a"
    )))
    .bind(course)
    .fetch_all(db)
    .await
}

/// Writes an assignment's title and policy.
pub async fn update(
    db: impl PgExecutor<'_>,
    id: Uuid,
    title: &str,
    p: &Policy,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE assignments
            SET title = $2, feedback = $3, attempts_allowed = $4, time_limit_minutes = $5,
                grading_method = $6, shuffle_questions = $7, shuffle_options = $8,
                navigation = $9, opens_at = $10, closes_at = $11
          WHERE id = $1",
    )
    .bind(id)
    .bind(title)
    .bind(p.feedback.as_str())
    .bind(p.attempts_allowed.map(|n| n as i32))
    .bind(p.time_limit_minutes.map(|n| n as i32))
    .bind(p.grading_method.as_str())
    .bind(p.shuffle_questions)
    .bind(p.shuffle_options)
    .bind(p.navigation.as_str())
    .bind(p.opens_at)
    .bind(p.closes_at)
    .execute(db)
    .await?;
    Ok(())
}

/// Deletes the assignment if nobody has attempted it; otherwise archives it (once). Returns
/// whether it was deleted.
pub async fn delete_or_archive(
    db: impl PgExecutor<'_>,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "WITH deleted AS (
            DELETE FROM assignments a
             WHERE a.id = $1 AND NOT EXISTS (SELECT 1 FROM attempts WHERE assignment_id = $1)
            RETURNING id
         ), archived AS (
            UPDATE assignments SET archived_at = coalesce(archived_at, $2)
             WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM deleted)
               AND EXISTS (SELECT 1 FROM attempts WHERE assignment_id = $1)
            RETURNING id
         )
         SELECT EXISTS (SELECT 1 FROM deleted)",
    )
    .bind(id)
    .bind(now)
    .fetch_one(db)
    .await
}

/// The overrides and the course accommodation that apply to `user` in `assignment`.
pub async fn adjustments_for(
    db: impl PgExecutor<'_>,
    assignment: Uuid,
    user: Uuid,
) -> Result<Vec<Adjustment>, sqlx::Error> {
    sqlx::query_as(
        "SELECT time_multiplier, extra_minutes, extra_attempts, opens_at, closes_at
           FROM assignment_overrides WHERE assignment_id = $1 AND user_id = $2
         UNION ALL
         SELECT c.time_multiplier, c.extra_minutes, c.extra_attempts, c.opens_at, c.closes_at
           FROM course_accommodations c JOIN assignments a ON a.course_id = c.course_id
          WHERE a.id = $1 AND c.user_id = $2",
    )
    .bind(assignment)
    .bind(user)
    .fetch_all(db)
    .await
}

/// A learner in an assignment: its rules that [`super::rules::Progress`] is judged by, and
/// what they have done there.
#[derive(Debug, FromRow)]
pub struct LearnerProgress {
    pub assignment_id: Uuid,
    pub attempts_allowed: Option<i32>,
    pub opens_at: Option<DateTime<Utc>>,
    pub closes_at: Option<DateTime<Utc>>,
    pub used: i64,
    pub running: bool,
    pub taking: bool,
}

/// `$2`: the learner; `$3`: now (an unfinished attempt past its deadline is over).
const PROGRESS: &str = "SELECT a.id AS assignment_id, a.attempts_allowed, a.opens_at, a.closes_at,
        (SELECT count(*) FROM attempts t WHERE t.assignment_id = a.id AND t.user_id = $2) AS used,
        EXISTS (SELECT 1 FROM attempts t
                 WHERE t.assignment_id = a.id AND t.user_id = $2 AND t.finished_at IS NULL
                   AND (t.deadline IS NULL OR t.deadline > $3)) AS running,
        a.archived_at IS NULL AND c.archived_at IS NULL AS taking
   FROM assignments a LEFT JOIN courses c ON c.id = a.course_id";

/// The learner's progress in one assignment.
pub async fn progress(
    db: impl PgExecutor<'_>,
    assignment: Uuid,
    user: Uuid,
    now: DateTime<Utc>,
) -> Result<Option<LearnerProgress>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!("{PROGRESS} WHERE a.id = $1")))
        .bind(assignment)
        .bind(user)
        .bind(now)
        .fetch_optional(db)
        .await
}

/// The learner's progress in every assignment of a quiz (any version) in the courses where
/// they are a learner.
pub async fn progress_in_quiz(
    db: impl PgExecutor<'_>,
    quiz: Uuid,
    user: Uuid,
    now: DateTime<Utc>,
) -> Result<Vec<LearnerProgress>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{PROGRESS} WHERE a.quiz_id = $1
            AND EXISTS (SELECT 1 FROM enrollments e WHERE e.course_id = a.course_id
                           AND e.user_id = $2 AND e.role = 'learner')"
    )))
    .bind(quiz)
    .bind(user)
    .bind(now)
    .fetch_all(db)
    .await
}

/// An attempt in progress, as a rule change sees it.
#[derive(Debug, FromRow)]
pub struct RunningAttempt {
    pub id: Uuid,
    pub assignment_id: Uuid,
    pub user_id: Uuid,
    pub started_at: DateTime<Utc>,
    pub deadline: Option<DateTime<Utc>>,
}

/// The attempts in progress at these assignments (of `user`, when given), locked `FOR UPDATE`
/// (an answer in flight holds its attempt `FOR SHARE`: the change waits for it, and answers
/// after the change see the new deadline). An attempt whose deadline has passed is over,
/// whether or not the sweep has finished it yet: no rule revives it.
pub async fn running(
    db: impl PgExecutor<'_>,
    assignments: &[Uuid],
    users: Option<&[Uuid]>,
    now: DateTime<Utc>,
) -> Result<Vec<RunningAttempt>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, assignment_id, user_id, started_at, deadline FROM attempts
          WHERE assignment_id = ANY($1) AND ($2::uuid[] IS NULL OR user_id = ANY($2))
            AND finished_at IS NULL AND (deadline IS NULL OR deadline > $3)
          ORDER BY id FOR UPDATE",
    )
    .bind(assignments)
    .bind(users)
    .bind(now)
    .fetch_all(db)
    .await
}

/// An adjustment with whom and where it applies to.
#[derive(Debug, FromRow)]
pub struct ScopedAdjustment {
    pub assignment_id: Uuid,
    pub user_id: Uuid,
    #[sqlx(flatten)]
    pub adjustment: Adjustment,
}

/// The overrides and accommodations that apply in these assignments (to `user`, when given).
pub async fn adjustments_in(
    db: impl PgExecutor<'_>,
    assignments: &[Uuid],
    users: Option<&[Uuid]>,
) -> Result<Vec<ScopedAdjustment>, sqlx::Error> {
    sqlx::query_as(
        "SELECT assignment_id, user_id, time_multiplier, extra_minutes, extra_attempts, opens_at,
                closes_at
           FROM assignment_overrides
          WHERE assignment_id = ANY($1) AND ($2::uuid[] IS NULL OR user_id = ANY($2))
         UNION ALL
         SELECT a.id, c.user_id, c.time_multiplier, c.extra_minutes, c.extra_attempts,
                c.opens_at, c.closes_at
           FROM course_accommodations c JOIN assignments a ON a.course_id = c.course_id
          WHERE a.id = ANY($1) AND ($2::uuid[] IS NULL OR c.user_id = ANY($2))",
    )
    .bind(assignments)
    .bind(users)
    .fetch_all(db)
    .await
}

/// Sets these attempts' deadlines (one statement for all of them).
pub async fn set_deadlines(
    db: impl PgExecutor<'_>,
    ids: &[Uuid],
    deadlines: &[Option<DateTime<Utc>>],
) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE attempts t SET deadline = u.deadline
           FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, deadline)
          WHERE t.id = u.id AND t.deadline IS DISTINCT FROM u.deadline",
    )
    .bind(ids)
    .bind(deadlines)
    .execute(db)
    .await?
    .rows_affected())
}

/// The attempts in progress at an assignment, locked (closing it).
pub async fn unfinished(
    db: impl PgExecutor<'_>,
    assignment: Uuid,
) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT id FROM attempts WHERE assignment_id = $1 AND finished_at IS NULL
          ORDER BY id FOR UPDATE",
    )
    .bind(assignment)
    .fetch_all(db)
    .await
}

/// Closes the assignment at `now`.
pub async fn close(
    db: impl PgExecutor<'_>,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE assignments SET closes_at = $2,
                opens_at = CASE WHEN opens_at >= $2 THEN NULL ELSE opens_at END
          WHERE id = $1",
    )
    .bind(id)
    .bind(now)
    .execute(db)
    .await?;
    Ok(())
}

/// Of these people, those not enrolled in the course as learners.
pub async fn not_learners(
    db: impl PgExecutor<'_>,
    course: Uuid,
    users: &[Uuid],
) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT u FROM unnest($2::uuid[]) AS u
          WHERE NOT EXISTS (SELECT 1 FROM enrollments e
                             WHERE e.course_id = $1 AND e.user_id = u AND e.role = 'learner')",
    )
    .bind(course)
    .bind(users)
    .fetch_all(db)
    .await
}

/// What a person can take: the practice assignment of every public quiz's current version, and the
/// assignments of every course they are in (admins: of every course).
/// The sort key of [`for_member`]: practice assignments first, then newest first.
pub type MemberKey = (bool, DateTime<Utc>, Uuid);

/// A page of them after `after` ([`MemberKey`]); `fetch` at most.
pub async fn for_member(
    db: impl PgExecutor<'_>,
    user: Uuid,
    all: bool,
    after: Option<MemberKey>,
    fetch: i64,
) -> Result<Vec<AssignmentRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{SELECT}
          WHERE ((a.course_id IS NULL AND a.quiz_version_id = q.current_version_id
                  AND q.visibility = 'public')
                 OR (a.course_id IS NOT NULL AND a.archived_at IS NULL
                     AND ($2 OR EXISTS (SELECT 1 FROM enrollments e
                                         WHERE e.course_id = a.course_id AND e.user_id = $1))))
            AND ($3::bool IS NULL OR (a.course_id IS NOT NULL) > $3
                 OR ((a.course_id IS NOT NULL) = $3 AND (a.created_at, a.id) < ($4, $5)))
          ORDER BY a.course_id IS NOT NULL, a.created_at DESC, a.id DESC LIMIT $6"
    )))
    .bind(user)
    .bind(all)
    .bind(after.map(|a| a.0))
    .bind(after.map(|a| a.1))
    .bind(after.map(|a| a.2))
    .bind(fetch)
    .fetch_all(db)
    .await
}

/// The quiz and version id for a slug and an optional version number (default: current).
pub async fn resolve_version(
    db: impl PgExecutor<'_>,
    slug: &str,
    version: Option<i32>,
) -> Result<Option<(Uuid, Uuid)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT q.id, v.id FROM quizzes q JOIN quiz_versions v ON v.quiz_id = q.id
          WHERE q.slug = $1 AND (v.version = $2 OR ($2 IS NULL AND v.id = q.current_version_id))",
    )
    .bind(slug)
    .bind(version)
    .fetch_optional(db)
    .await
}

/// Where an override applies: one assignment, or every assignment of a course.
#[derive(Debug, Clone, Copy)]
pub enum Scope {
    Assignment(Uuid),
    Course(Uuid),
}

const OVERRIDE_COLUMNS: &str = "o.user_id, u.display_name, o.time_multiplier, o.extra_minutes,
        o.extra_attempts, o.opens_at, o.closes_at, o.updated_at";

impl Scope {
    fn table(self) -> (&'static str, &'static str, Uuid) {
        match self {
            Scope::Assignment(id) => ("assignment_overrides", "assignment_id", id),
            Scope::Course(id) => ("course_accommodations", "course_id", id),
        }
    }
}

/// Sets (replaces) the override of each of `users`.
pub async fn set_overrides(
    db: impl PgExecutor<'_>,
    scope: Scope,
    users: &[Uuid],
    a: &Adjustment,
    by: Uuid,
    now: DateTime<Utc>,
) -> Result<Vec<Override>, sqlx::Error> {
    let (table, key, id) = scope.table();
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "WITH o AS (
            INSERT INTO {table} AS o ({key}, user_id, time_multiplier, extra_minutes,
                                      extra_attempts, opens_at, closes_at, created_by, updated_at)
            SELECT $1, u, $3, $4, $5, $6, $7, $8, $9 FROM unnest($2::uuid[]) AS u
            ON CONFLICT ({key}, user_id) DO UPDATE
              SET time_multiplier = EXCLUDED.time_multiplier,
                  extra_minutes = EXCLUDED.extra_minutes,
                  extra_attempts = EXCLUDED.extra_attempts, opens_at = EXCLUDED.opens_at,
                  closes_at = EXCLUDED.closes_at, created_by = EXCLUDED.created_by,
                  updated_at = EXCLUDED.updated_at
            RETURNING *
         )
         SELECT {OVERRIDE_COLUMNS} FROM o JOIN users u ON u.id = o.user_id
          ORDER BY u.display_name, u.id"
    )))
    .bind(id)
    .bind(users)
    .bind(a.time_multiplier)
    .bind(a.extra_minutes)
    .bind(a.extra_attempts)
    .bind(a.opens_at)
    .bind(a.closes_at)
    .bind(by)
    .bind(now)
    .fetch_all(db)
    .await
}

pub async fn overrides(
    db: impl PgExecutor<'_>,
    scope: Scope,
) -> Result<Vec<Override>, sqlx::Error> {
    let (table, key, id) = scope.table();
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {OVERRIDE_COLUMNS} FROM {table} o JOIN users u ON u.id = o.user_id
          WHERE o.{key} = $1 ORDER BY u.display_name, u.id"
    )))
    .bind(id)
    .fetch_all(db)
    .await
}

/// Removes one learner's override; whether there was one.
pub async fn remove_override(
    db: impl PgExecutor<'_>,
    scope: Scope,
    user: Uuid,
) -> Result<bool, sqlx::Error> {
    let (table, key, id) = scope.table();
    Ok(sqlx::query(sqlx::AssertSqlSafe(format!(
        "DELETE FROM {table} WHERE {key} = $1 AND user_id = $2"
    )))
    .bind(id)
    .bind(user)
    .execute(db)
    .await?
    .rows_affected()
        > 0)
}
