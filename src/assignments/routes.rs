//! `/v1/courses/{id}/assignments` and `/v1/assignments/{id}`.

use actix_web::{HttpResponse, web};
use uuid::Uuid;

use super::models::{Assignment, AssignmentCreate, AssignmentList};
use super::store::{self, NewAssignment};
use super::{validate_policy, visible_assignment};
use crate::app::AppState;
use crate::auth::CurrentUser;
use crate::courses::{taught_course, visible_course};
use crate::error::{ApiError, Problem};
use crate::extract::JsonObject;
use crate::validate;

/// Places a quiz version in a course with a policy. The course's instructors and admins; a
/// private quiz only by its authors.
#[utoipa::path(post, path = "/v1/courses/{id}/assignments", tag = "assignments", security(("bearer" = [])),
    request_body = AssignmentCreate,
    params(("id" = Uuid, Path, description = "The course's id")),
    responses(
        (status = 201, description = "Created", body = Assignment),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Not signed in", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Unknown quiz or version, invalid title or policy", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Database unavailable; retry", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_assignment(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    body: JsonObject<AssignmentCreate>,
) -> Result<HttpResponse, ApiError> {
    let course = taught_course(&state.pool, *id, &user).await?;
    let body = body.into_inner();
    validate_policy(&body.policy)?;
    if let Some(title) = &body.title {
        validate::line("title", title, 1, 200)?;
    }
    let unknown =
        || ApiError::unprocessable("unknown_quiz", "There is no such quiz or quiz version.");
    if !crate::quizzes::routes::plausible_slug(&body.quiz) {
        return Err(unknown());
    }
    // Placing a quiz makes the course's staff readers of its key: a private quiz is placed only
    // by its authors (and admins); to anyone else it does not exist.
    let quiz = crate::quizzes::store::access(&state.pool, &body.quiz, user.id)
        .await?
        .ok_or_else(unknown)?;
    if !crate::quizzes::access::placeable(&quiz, &user) {
        return Err(unknown());
    }
    let (quiz_id, version_id) = store::resolve_version(&state.pool, &body.quiz, body.version)
        .await?
        .ok_or_else(unknown)?;
    let version = state
        .quizzes
        .get(&state.pool, version_id)
        .await?
        .ok_or_else(unknown)?;
    let source_title = &version.content.title[&version.content.source_locale];
    let assignment_id = store::insert(
        &state.pool,
        NewAssignment {
            course_id: Some(course.id),
            quiz_id,
            quiz_version_id: version_id,
            title: body.title.as_deref().map(str::trim).unwrap_or(source_title),
            policy: &body.policy,
            created_by: Some(user.id),
        },
    )
    .await?;
    let row = store::by_id(&state.pool, assignment_id)
        .await?
        .ok_or_else(|| ApiError::internal("assignment vanished"))?;
    Ok(HttpResponse::Created().json(row.view()))
}

/// The assignments of a course you are in.
#[utoipa::path(get, path = "/v1/courses/{id}/assignments", tag = "assignments", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The course's id")),
    responses(
        (status = 200, description = "The course's assignments", body = AssignmentList),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Not signed in", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Database unavailable; retry", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_assignments(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let course = visible_course(&state.pool, *id, &user).await?;
    let items = store::for_course(&state.pool, course.id)
        .await?
        .iter()
        .map(|r| r.view())
        .collect();
    Ok(HttpResponse::Ok().json(AssignmentList { items }))
}

/// One assignment: a practice assignment (any signed-in person) or one in a course you are in.
#[utoipa::path(get, path = "/v1/assignments/{id}", tag = "assignments", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The assignment's id")),
    responses(
        (status = 200, description = "The assignment", body = Assignment),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Not signed in", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Database unavailable; retry", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_assignment(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let row = visible_assignment(&state.pool, *id, &user).await?;
    Ok(HttpResponse::Ok().json(row.view()))
}

/// What you can take: every quiz's practice assignment, then the assignments of every course
/// you are in, newest first (admins: every course's).
#[utoipa::path(get, path = "/v1/assignments", tag = "assignments", security(("bearer" = [])),
    responses(
        (status = 200, description = "Your assignments", body = AssignmentList),
        (status = 401, description = "Not signed in", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Database unavailable; retry", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn my_assignments(
    state: web::Data<AppState>,
    user: CurrentUser,
) -> Result<HttpResponse, ApiError> {
    let items = store::for_member(&state.pool, user.id, user.is_admin())
        .await?
        .iter()
        .map(|r| r.view())
        .collect();
    Ok(HttpResponse::Ok().json(AssignmentList { items }))
}
