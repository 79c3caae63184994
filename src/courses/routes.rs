//! `/v1/courses`, enrollments and the roster.

use actix_web::{HttpResponse, web};
use uuid::Uuid;

use super::models::{Course, CourseCreate, CourseList, Enrollment, EnrollmentCreate, Roster};
use super::{store, taught_course, visible_course};
use crate::auth::CurrentUser;
use crate::error::Code;
use crate::error::{ApiError, Problem};
use crate::extract::JsonObject;
use crate::state::AppState;
use crate::validate;

/// Creates a course; you own it and teach it. Site instructors and admins (the site role
/// `instructor` means only this: may create courses and quizzes).
#[utoipa::path(post, path = "/v1/courses", tag = "courses", security(("bearer" = [])), request_body = CourseCreate,
    responses(
        (status = 201, description = "Created", body = Course),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Learners cannot create courses", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid title or code", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_course(
    state: web::Data<AppState>,
    user: CurrentUser,
    body: JsonObject<CourseCreate>,
) -> Result<HttpResponse, ApiError> {
    user.require_staff()?;
    validate::line("title", &body.title, 1, 200)?;
    if let Some(code) = &body.code {
        validate::line("code", code, 1, 64)?;
    }
    let course = store::insert_course(
        &state.pool,
        body.title.trim(),
        body.code.as_deref().map(str::trim),
        user.id,
    )
    .await?;
    Ok(HttpResponse::Created().json(course))
}

/// The courses you are in (admins: every course).
#[utoipa::path(get, path = "/v1/courses", tag = "courses", security(("bearer" = [])),
    responses(
        (status = 200, description = "Your courses", body = CourseList),
    ))]
pub async fn list_courses(
    state: web::Data<AppState>,
    user: CurrentUser,
) -> Result<HttpResponse, ApiError> {
    let items = store::courses_for(&state.pool, user.id, user.is_admin()).await?;
    Ok(HttpResponse::Ok().json(CourseList { items }))
}

/// One course you are in.
#[utoipa::path(get, path = "/v1/courses/{id}", tag = "courses", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The course's id")),
    responses(
        (status = 200, description = "The course", body = Course),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_course(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(visible_course(&state.pool, *id, &user).await?))
}

/// Enrolls a learner or co-instructor by email or id (or changes their role). The course's
/// instructors and admins.
#[utoipa::path(post, path = "/v1/courses/{id}/enrollments", tag = "courses", security(("bearer" = [])),
    request_body = EnrollmentCreate,
    params(("id" = Uuid, Path, description = "The course's id")),
    responses(
        (status = 201, description = "Enrolled", body = Enrollment),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The course's owner keeps teaching it (`course_owner_stays`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Neither or both of email and user_id, or no such person", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn enroll(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    body: JsonObject<EnrollmentCreate>,
) -> Result<HttpResponse, ApiError> {
    let course = taught_course(&state.pool, *id, &user).await?;
    if body.email.is_some() == body.user_id.is_some() {
        return Err(ApiError::new(
            Code::InvalidEnrollment,
            "Give exactly one of `email` and `user_id`.",
        ));
    }
    if let Some(email) = &body.email {
        validate::line("email", email, 3, 254)?;
    }
    let enrollment = store::enroll(
        &state.pool,
        course.id,
        body.user_id,
        body.email.as_deref(),
        body.role,
    )
    .await?
    .ok_or_else(|| {
        ApiError::new(
            Code::UnknownUser,
            "There is no person with this email or id.",
        )
    })?;
    // The store kept the owner teaching; say so rather than report a change that did not happen.
    if Some(enrollment.user_id) == course.owner_id && enrollment.role != body.role {
        return Err(ApiError::new(
            Code::CourseOwnerStays,
            "The course's owner keeps teaching it; their role cannot be changed.",
        ));
    }
    Ok(HttpResponse::Created().json(enrollment))
}

/// The roster: everyone enrolled, instructors first. The course's instructors and admins.
#[utoipa::path(get, path = "/v1/courses/{id}/enrollments", tag = "courses", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The course's id")),
    responses(
        (status = 200, description = "The roster", body = Roster),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn roster(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let course = taught_course(&state.pool, *id, &user).await?;
    let items = store::roster(&state.pool, course.id).await?;
    Ok(HttpResponse::Ok().json(Roster { items }))
}

/// This module's endpoints (resources, not method-guarded routes, so that a wrong method is a
/// `405`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    use crate::telemetry::resource;
    use web::{get, post};
    cfg.service(
        resource("/v1/courses")
            .route(get().to(list_courses))
            .route(post().to(create_course)),
    )
    .service(resource("/v1/courses/{id}").route(get().to(get_course)))
    .service(
        resource("/v1/courses/{id}/enrollments")
            .route(get().to(roster))
            .route(post().to(enroll)),
    );
}

/// This module's part of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(create_course, list_courses, get_course, enroll, roster))]
pub struct Api;
