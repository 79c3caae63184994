//! Courses: groups of learners and instructors where assignments live.

pub mod models;
pub mod routes;
pub mod store;

use sqlx::PgPool;
use uuid::Uuid;

use crate::auth::CurrentUser;
use crate::error::{ApiError, Code};
use models::{Course, CourseRole};

pub fn course_not_found() -> ApiError {
    ApiError::new(
        Code::CourseNotFound,
        "There is no such course, or you are not in it.",
    )
}

/// The course as the caller may see it: members and admins see it; to anyone else it does
/// not exist.
pub async fn visible_course(
    pool: &PgPool,
    id: Uuid,
    user: &CurrentUser,
) -> Result<Course, ApiError> {
    match store::course_for(pool, id, user.id).await? {
        Some(c) if c.my_role.is_some() || user.is_admin() => Ok(c),
        _ => Err(course_not_found()),
    }
}

/// The course, if the caller teaches it: enrolled as one of its instructors (teaching is a role
/// in a course, whatever the person's site role), or an admin. A member who does not teach it is
/// refused (`403`); anyone outside it gets `404`.
pub async fn taught_course(
    pool: &PgPool,
    id: Uuid,
    user: &CurrentUser,
) -> Result<Course, ApiError> {
    let course = visible_course(pool, id, user).await?;
    if user.is_admin() || course.my_role == Some(CourseRole::Instructor) {
        Ok(course)
    } else {
        Err(ApiError::new(
            Code::Forbidden,
            "Only the course's instructors can do this.",
        ))
    }
}

pub fn course_archived() -> ApiError {
    ApiError::new(
        Code::CourseArchived,
        "This course is archived and read-only; make it active again first (`archived: false`).",
    )
}

/// [`taught_course`], for a change: an archived course is read-only (`409 course_archived`).
pub async fn taught_active_course(
    pool: &PgPool,
    id: Uuid,
    user: &CurrentUser,
) -> Result<Course, ApiError> {
    let course = taught_course(pool, id, user).await?;
    if course.archived_at.is_some() {
        return Err(course_archived());
    }
    Ok(course)
}
