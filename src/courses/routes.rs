//! `/v1/courses`, enrollments and the roster.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::json;
use uuid::Uuid;

use super::models::{
    Course, CourseCreate, CourseList, CourseListQuery, CourseUpdate, Enrollment, EnrollmentCreate,
    Roster,
};
use super::{store, taught_active_course, taught_course, visible_course};
use crate::audit::{Action, Entry};
use crate::auth::CurrentUser;
use crate::error::{ApiError, Code, Problem};
use crate::extract::LaterJson;
use crate::invitations::Invitation;
use crate::pagination::{self, PageQuery};
use crate::state::AppState;
use crate::validate;

/// Creates a course; you own it and teach it. Site instructors and admins (the site role
/// `instructor` means only this: may create courses and quizzes).
#[utoipa::path(post, path = "/v1/courses", tag = "courses", security(("bearer" = [])), request_body = CourseCreate,
    responses(
        (status = 201, description = "Created", body = Course,
            headers(("Location" = String, description = "The new course's path, `/v1/courses/{id}`"))),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Learners cannot create courses", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid title or code", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_course(
    state: web::Data<AppState>,
    user: CurrentUser,
    body: LaterJson<CourseCreate>,
) -> Result<HttpResponse, ApiError> {
    user.require_staff()?;
    let body = body.parse()?;
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
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, format!("/v1/courses/{}", course.id)))
        .json(course))
}

/// The courses you are in (admins: every course): the active ones, or with `archived=true`
/// the archived ones; oldest first, a page at a time (see `pagination`).
#[utoipa::path(get, path = "/v1/courses", tag = "courses", security(("bearer" = [])),
    params(CourseListQuery),
    responses(
        (status = 200, description = "A page of your courses", body = CourseList, headers(("Link" = String, description = "`<…>; rel=\"next\"`: the next page, absent on the last"))),
        (status = 400, description = "Malformed query, or `limit` out of range (`invalid_limit`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A cursor this list did not give (`invalid_cursor`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_courses(
    state: web::Data<AppState>,
    user: CurrentUser,
    query: web::Query<CourseListQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let list = format!("courses:{}:{}", user.id, query.archived);
    let page = (state.cursors).page(&list, query.limit, query.cursor.as_deref())?;
    let rows = store::courses_for(
        &state.pool,
        user.id,
        user.is_admin(),
        query.archived,
        page.after,
        page.fetch(),
    )
    .await?;
    let (items, next) = state
        .cursors
        .cut(&list, rows, page.limit, |c| (c.created_at, c.id));
    let body = CourseList { items, next };
    Ok(pagination::respond(&req, body.next.as_deref(), &body))
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

/// Enrolls a learner or co-instructor by email or id (or changes their role). An email enrolls
/// at once only the account that has verified it; any other email (no account has it, or its
/// account has not verified it yet) makes an invitation instead (`202`), mailed to it: the
/// person who verifies that address claims it (or changes the role of the pending one). The
/// course's instructors and admins, while the course is active.
#[utoipa::path(post, path = "/v1/courses/{id}/enrollments", tag = "courses", security(("bearer" = [])),
    request_body = EnrollmentCreate,
    params(("id" = Uuid, Path, description = "The course's id")),
    responses(
        (status = 201, description = "Enrolled", body = Enrollment),
        (status = 202, description = "No account has verified this email: invited (and mailed when new)", body = Invitation),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The course's owner keeps teaching it (`course_owner_stays`), or the course is archived (`course_archived`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Neither or both of email and user_id, no person with this id, or an invalid email", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "More than 5,000 invitation mails for you in 24 hours (`too_many_invitations`)", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u32, description = "Seconds to wait"))),
    ))]
pub async fn enroll(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    body: LaterJson<EnrollmentCreate>,
) -> Result<HttpResponse, ApiError> {
    let course = taught_active_course(&state.pool, *id, &user).await?;
    let body = body.parse()?;
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
    .await?;
    let enrollment = match (enrollment, &body.email) {
        (Some(e), _) => e,
        (None, Some(email)) => {
            let invitation =
                crate::invitations::invite(&state, &course, user.id, email, body.role).await?;
            return Ok(HttpResponse::Accepted().json(invitation));
        }
        (None, None) => {
            return Err(ApiError::new(
                Code::UnknownUser,
                "There is no person with this id.",
            ));
        }
    };
    // The store kept the owner teaching; say so rather than report a change that did not happen.
    if Some(enrollment.user_id) == course.owner_id && enrollment.role != body.role {
        return Err(ApiError::new(
            Code::CourseOwnerStays,
            "The course's owner keeps teaching it; their role cannot be changed.",
        ));
    }
    Ok(HttpResponse::Created().json(enrollment))
}

/// The roster: everyone enrolled, instructors first, then by name, a page at a time (see
/// `pagination`). The course's instructors and admins.
#[utoipa::path(get, path = "/v1/courses/{id}/enrollments", tag = "courses", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The course's id"), PageQuery),
    responses(
        (status = 200, description = "A page of the roster", body = Roster, headers(("Link" = String, description = "`<…>; rel=\"next\"`: the next page, absent on the last"))),
        (status = 400, description = "Malformed id or query, or `limit` out of range (`invalid_limit`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A cursor this list did not give (`invalid_cursor`)", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn roster(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    query: web::Query<PageQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let course = taught_course(&state.pool, *id, &user).await?;
    let list = format!("roster:{}", course.id);
    let page =
        (state.cursors).page::<store::RosterKey>(&list, query.limit, query.cursor.as_deref())?;
    let rows = store::roster(&state.pool, course.id, page.after.as_ref(), page.fetch()).await?;
    let (items, next) = state.cursors.cut(&list, rows, page.limit, |e| {
        (
            e.role != super::models::CourseRole::Instructor,
            e.display_name.clone(),
            e.user_id,
        )
    });
    let body = Roster { items, next };
    Ok(pagination::respond(&req, body.next.as_deref(), &body))
}

/// Changes a course's title or code, or archives it (`archived: true`: read-only, no new
/// enrollments, invitations, assignments or attempts; listed with `?archived=true`) and makes
/// it active again (`archived: false`, which may come with other changes). An archived course
/// takes no other change. The course's instructors and admins.
#[utoipa::path(patch, path = "/v1/courses/{id}", tag = "courses", security(("bearer" = [])),
    request_body = CourseUpdate,
    params(("id" = Uuid, Path, description = "The course's id")),
    responses(
        (status = 200, description = "The course as changed", body = Course),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The course is archived (`course_archived`): only `archived` changes it", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid title or code", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn update_course(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    body: LaterJson<CourseUpdate>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let course = taught_course(&state.pool, *id, &user).await?;
    let body = body.parse()?;
    if let Some(title) = &body.title {
        validate::line("title", title, 1, 200)?;
    }
    if let Some(Some(code)) = &body.code {
        validate::line("code", code, 1, 64)?;
    }
    // An archived course takes `archived` alone: `true` (it stays as it is) or `false`, which
    // may come with other changes.
    let only_archiving = body.title.is_none() && body.code.is_none();
    if course.archived_at.is_some()
        && !(body.archived == Some(false) || (body.archived.is_some() && only_archiving))
    {
        return Err(super::course_archived());
    }
    let archived_at = match body.archived {
        // Archiving again keeps the first time.
        Some(true) => Some(course.archived_at.or(Some(state.clock.now()))),
        Some(false) => Some(None),
        None => None,
    };
    let was_archived = course.archived_at.is_some();
    let mut tx = state.pool.begin().await?;
    let course = store::update_course(
        &mut *tx,
        course.id,
        user.id,
        body.title.as_deref().map(str::trim),
        body.code.as_ref().map(|c| c.as_deref().map(str::trim)),
        archived_at,
    )
    .await?
    .ok_or_else(super::course_not_found)?;
    let action = match (was_archived, course.archived_at.is_some()) {
        (false, true) => Some(Action::CourseArchived),
        (true, false) => Some(Action::CourseRestored),
        _ => None,
    };
    if let Some(action) = action {
        let entry = Entry::by(user.id, action, &req).detail(json!({"course_id": course.id}));
        crate::audit::store::record(&mut *tx, entry).await?;
    }
    tx.commit().await?;
    Ok(HttpResponse::Ok().json(course))
}

/// Ends a person's enrollment; their attempts stay for the record (and in the course's
/// results). The course's owner cannot be unenrolled. The course's instructors and admins,
/// while the course is active.
#[utoipa::path(delete, path = "/v1/courses/{id}/enrollments/{user_id}", tag = "courses", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The course's id"),
        ("user_id" = Uuid, Path, description = "The person's id"),
    ),
    responses(
        (status = 204, description = "Unenrolled"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or that person is not enrolled (`enrollment_not_found`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The course's owner stays (`course_owner_stays`), or the course is archived (`course_archived`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn unenroll(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(Uuid, Uuid)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (course, person) = path.into_inner();
    let course = taught_active_course(&state.pool, course, &user).await?;
    if course.owner_id == Some(person) {
        return Err(ApiError::new(
            Code::CourseOwnerStays,
            "The course's owner keeps teaching it; they cannot be unenrolled.",
        ));
    }
    let mut tx = state.pool.begin().await?;
    let Some(role) = store::unenroll(&mut *tx, course.id, person).await? else {
        return Err(ApiError::new(
            Code::EnrollmentNotFound,
            "This person is not enrolled in this course.",
        ));
    };
    let entry = Entry::by(user.id, Action::EnrollmentRemoved, &req)
        .subject(person)
        .detail(json!({"course_id": course.id, "role": role}));
    crate::audit::store::record(&mut *tx, entry).await?;
    tx.commit().await?;
    Ok(HttpResponse::NoContent().finish())
}

/// This module's endpoints (resources, not method-guarded routes, so that a wrong method is a
/// `405`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    use crate::telemetry::resource;
    use web::{delete, get, patch, post};
    let idempotent = || actix_web::middleware::from_fn(crate::idempotency::guard);
    cfg.service(
        resource("/v1/courses")
            .route(get().to(list_courses))
            .route(post().to(create_course).wrap(idempotent())),
    )
    .service(
        resource("/v1/courses/{id}")
            .route(get().to(get_course))
            .route(patch().to(update_course)),
    )
    .service(
        resource("/v1/courses/{id}/enrollments")
            .route(get().to(roster))
            .route(post().to(enroll).wrap(idempotent())),
    )
    .service(resource("/v1/courses/{id}/enrollments/{user_id}").route(delete().to(unenroll)));
}

/// This module's part of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_course,
    list_courses,
    get_course,
    update_course,
    enroll,
    roster,
    unenroll
))]
pub struct Api;
