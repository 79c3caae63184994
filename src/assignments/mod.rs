//! Assignments: a quiz version placed in a course (or open for practice) with a policy.

pub mod models;
pub mod routes;
pub mod store;

use sqlx::PgPool;
use uuid::Uuid;

use crate::auth::CurrentUser;
use crate::content::Visibility;
use crate::courses::visible_course;
use crate::error::ApiError;
use crate::policy::Policy;
use store::AssignmentRow;

pub fn assignment_not_found() -> ApiError {
    ApiError::not_found(
        "assignment_not_found",
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
    let bad = |detail: &str| ApiError::unprocessable("invalid_policy", detail);
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
