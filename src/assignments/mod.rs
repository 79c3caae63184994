//! Assignments: a quiz version placed in a course (or open for practice) with a policy.

pub mod models;
pub mod overrides;
pub mod routes;
pub mod rules;
pub mod store;

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::auth::CurrentUser;
use crate::content::Visibility;
use crate::courses::visible_course;
use crate::error::{ApiError, Code};
use crate::policy::{OwnClose, Policy};
use models::AdjustmentRequest;
use rules::{Adjustment, Effective, Progress, adjusted_deadline, effective};
use store::{AssignmentRow, LearnerProgress};

pub fn assignment_not_found() -> ApiError {
    ApiError::new(
        Code::AssignmentNotFound,
        "There is no such assignment, or it is not in your courses.",
    )
}

/// The assignment, if the caller may see it: practice assignments of public quizzes are open to
/// every signed-in person (a practice assignment of a quiz that is no longer public exists for
/// nobody), course assignments to the course's members and admins.
pub async fn visible_assignment(
    pool: &PgPool,
    id: Uuid,
    user: &CurrentUser,
) -> Result<AssignmentRow, ApiError> {
    let row = store::by_id(pool, id)
        .await?
        .ok_or_else(assignment_not_found)?;
    match row.course_id {
        Some(course) => {
            visible_course(pool, course, user).await.map_err(|e| {
                if e.status.as_u16() == 404 {
                    assignment_not_found()
                } else {
                    e
                }
            })?;
        }
        None if row.visibility != Visibility::Public => return Err(assignment_not_found()),
        None => {}
    }
    Ok(row)
}

impl LearnerProgress {
    /// The learner's rules here, under `adjustments` (theirs), and their progress.
    fn judged(&self, adjustments: &[Adjustment]) -> (Effective, Progress) {
        let policy = Policy {
            attempts_allowed: self.attempts_allowed.map(|n| n as u32),
            opens_at: self.opens_at,
            closes_at: self.closes_at,
            ..Policy::default()
        };
        let progress = Progress {
            used: u32::try_from(self.used).unwrap_or(u32::MAX),
            running: self.running,
            taking: self.taking,
        };
        (effective(&policy, adjustments), progress)
    }
}

/// Where `user` stands in the assignment for `after_close` (see [`OwnClose`]).
pub async fn own_close(
    pool: &PgPool,
    assignment: Uuid,
    user: Uuid,
    now: DateTime<Utc>,
) -> Result<OwnClose, ApiError> {
    let progress = store::progress(pool, assignment, user, now)
        .await?
        .ok_or_else(assignment_not_found)?;
    let adjustments = store::adjustments_for(pool, assignment, user).await?;
    let (rules, progress) = progress.judged(&adjustments);
    Ok(OwnClose {
        closes_at: rules.closes_at,
        may_go_on: rules.may_go_on(progress, now),
    })
}

/// Whether `user` sits an exam of `quiz` now: an assignment of any of its versions, in a course
/// where they are a learner, that they sit ([`Effective::sitting`]). The quiz's practice is
/// closed to them meanwhile: it would show the key of the questions they are answering. (A
/// question bank belongs to one quiz, so no other quiz's practice serves its questions.)
pub async fn sitting_exam_of(
    pool: &PgPool,
    quiz: Uuid,
    user: Uuid,
    now: DateTime<Utc>,
) -> Result<bool, ApiError> {
    let rows = store::progress_in_quiz(pool, quiz, user, now).await?;
    if rows.is_empty() {
        return Ok(false);
    }
    let ids: Vec<Uuid> = rows.iter().map(|r| r.assignment_id).collect();
    let mut adjustments: HashMap<Uuid, Vec<Adjustment>> = HashMap::new();
    for s in store::adjustments_in(pool, &ids, Some(&[user])).await? {
        adjustments
            .entry(s.assignment_id)
            .or_default()
            .push(s.adjustment);
    }
    Ok(rows.iter().any(|r| {
        let theirs = adjustments
            .get(&r.assignment_id)
            .map_or(&[][..], Vec::as_slice);
        let (rules, progress) = r.judged(theirs);
        rules.sitting(progress, now)
    }))
}

/// Refuses `user` the practice of `quiz` while they sit an exam of it.
pub async fn practice_open_to(
    pool: &PgPool,
    quiz: Uuid,
    user: Uuid,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    if sitting_exam_of(pool, quiz, user, now).await? {
        return Err(ApiError::new(
            Code::PracticeDuringExam,
            "You are sitting an exam of this quiz (an attempt in progress, or an assignment open to you with an attempt left): its practice is closed to you until the exam is over for you.",
        ));
    }
    Ok(())
}

/// The rules a policy must satisfy to be stored.
pub fn validate_policy(p: &Policy) -> Result<(), ApiError> {
    let bad = |detail: &str| ApiError::new(Code::InvalidPolicy, detail);
    if p.attempts_allowed == Some(0) {
        return Err(bad(
            "`attempts_allowed` must be at least 1 (omit it for unlimited).",
        ));
    }
    if p.attempts_allowed.is_some_and(|n| n > 1000) {
        return Err(bad(
            "`attempts_allowed` must be at most 1000 (omit it for unlimited).",
        ));
    }
    if p.time_limit_minutes
        .is_some_and(|m| m == 0 || m > 7 * 24 * 60)
    {
        return Err(bad(
            "`time_limit_minutes` must be 1 to 10080 (omit it for untimed).",
        ));
    }
    if let (Some(open), Some(close)) = (p.opens_at, p.closes_at)
        && open >= close
    {
        return Err(bad("`opens_at` must be before `closes_at`."));
    }
    Ok(())
}

/// The assignment, if the caller teaches its course (`403` for its other members, `404` for
/// everyone else). A practice assignment's policy comes from its quiz's content: nobody changes
/// it here (`409 practice_assignment` for admins, `403` for others).
pub async fn taught_assignment(
    pool: &PgPool,
    id: Uuid,
    user: &CurrentUser,
) -> Result<AssignmentRow, ApiError> {
    let row = visible_assignment(pool, id, user).await?;
    match row.course_id {
        Some(course) => {
            crate::courses::taught_course(pool, course, user).await?;
        }
        None if user.is_admin() => {
            return Err(ApiError::new(
                Code::PracticeAssignment,
                "A practice assignment takes its policy from its quiz's content; change the content instead.",
            ));
        }
        None => {
            return Err(ApiError::new(
                Code::Forbidden,
                "Only the course's instructors can do this.",
            ));
        }
    }
    Ok(row)
}

/// An override as requested, checked: each refusal names its field, and nothing is stored.
pub fn parse_adjustment(r: &AdjustmentRequest) -> Result<Adjustment, ApiError> {
    let bad = |detail: &str| ApiError::new(Code::InvalidOverride, detail);
    if r.time_multiplier.is_some_and(|m| !(m > 0.0 && m <= 10.0)) {
        return Err(bad("`time_multiplier` must be more than 0 and at most 10."));
    }
    if r.extra_minutes.is_some_and(|m| !(0..=10080).contains(&m)) {
        return Err(bad("`extra_minutes` must be 0 to 10080."));
    }
    if r.extra_attempts.is_some_and(|n| !(0..=1000).contains(&n)) {
        return Err(bad("`extra_attempts` must be 0 to 1000."));
    }
    if let (Some(open), Some(close)) = (r.opens_at, r.closes_at)
        && open >= close
    {
        return Err(bad("`opens_at` must be before `closes_at`."));
    }
    let a = Adjustment {
        time_multiplier: r.time_multiplier,
        extra_minutes: r.extra_minutes,
        extra_attempts: r.extra_attempts,
        opens_at: r.opens_at,
        closes_at: r.closes_at,
    };
    if a == Adjustment::default() {
        return Err(bad(
            "Give at least one of `time_multiplier`, `extra_minutes`, `extra_attempts`, `opens_at`, `closes_at`.",
        ));
    }
    Ok(a)
}

/// Recomputes the deadlines of the attempts in progress at `assignments` (of `users`, when
/// given) under their current policies and overrides, inside the caller's transaction, which
/// holds these assignments locked ([`store::lock`]). A deadline moves earlier only when
/// `shorten`. Returns how many attempts changed.
pub async fn recompute_deadlines(
    tx: &mut PgConnection,
    assignments: &[AssignmentRow],
    users: Option<&[Uuid]>,
    now: DateTime<Utc>,
    shorten: bool,
) -> Result<u64, ApiError> {
    let ids: Vec<Uuid> = assignments.iter().map(|a| a.id).collect();
    let running = store::running(&mut *tx, &ids, users, now).await?;
    if running.is_empty() {
        return Ok(0);
    }
    let mut adjustments: HashMap<(Uuid, Uuid), Vec<Adjustment>> = HashMap::new();
    for s in store::adjustments_in(&mut *tx, &ids, users).await? {
        adjustments
            .entry((s.assignment_id, s.user_id))
            .or_default()
            .push(s.adjustment);
    }
    let policies: HashMap<Uuid, crate::policy::Policy> =
        assignments.iter().map(|a| (a.id, a.policy())).collect();
    let (mut changed, mut deadlines) = (Vec::new(), Vec::new());
    for t in running {
        let rules = adjustments
            .get(&(t.assignment_id, t.user_id))
            .map_or(&[][..], Vec::as_slice);
        let computed = effective(&policies[&t.assignment_id], rules).deadline(t.started_at);
        let deadline = adjusted_deadline(t.deadline, computed, shorten);
        if deadline != t.deadline {
            changed.push(t.id);
            deadlines.push(deadline);
        }
    }
    if changed.is_empty() {
        return Ok(0);
    }
    Ok(store::set_deadlines(&mut *tx, &changed, &deadlines).await?)
}
