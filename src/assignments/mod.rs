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
use crate::policy::Policy;
use models::AdjustmentRequest;
use rules::{Adjustment, adjusted_deadline, effective};
use store::AssignmentRow;

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
