//! `/v1/courses/{id}/assignments` and `/v1/assignments/{id}`.

use actix_web::{HttpRequest, HttpResponse, web};
use uuid::Uuid;

use super::models::{Assignment, AssignmentCreate, AssignmentList, AssignmentPatch, YourAttempts};
use super::store::{self, NewAssignment};
use super::{
    assignment_not_found, recompute_deadlines, taught_assignment, validate_policy,
    visible_assignment,
};
use crate::auth::CurrentUser;
use crate::courses::{taught_active_course, visible_course};
use crate::error::{ApiError, Code, Problem};
use crate::extract::LaterJson;
use crate::pagination::{self, PageQuery};
use crate::state::AppState;
use crate::validate;

/// Places a quiz version in a course with a policy. The course's instructors and admins; a
/// private quiz only by its authors.
#[utoipa::path(post, path = "/v1/courses/{id}/assignments", tag = "assignments", security(("bearer" = [])),
    request_body = AssignmentCreate,
    params(("id" = Uuid, Path, description = "The course's id")),
    responses(
        (status = 201, description = "Created", body = Assignment),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The course is archived (`course_archived`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Unknown quiz or version, invalid title or policy", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_assignment(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    body: LaterJson<AssignmentCreate>,
) -> Result<HttpResponse, ApiError> {
    let course = taught_active_course(&state.pool, *id, &user).await?;
    let body = body.parse()?;
    validate_policy(&body.policy)?;
    if let Some(title) = &body.title {
        validate::line("title", title, 1, 200)?;
    }
    let unknown = || ApiError::new(Code::UnknownQuiz, "There is no such quiz or quiz version.");
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

/// The assignments of a course you are in (archived ones only for its instructors and admins).
#[utoipa::path(get, path = "/v1/courses/{id}/assignments", tag = "assignments", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The course's id"), PageQuery),
    responses(
        (status = 200, description = "A page of the course's assignments, oldest first", body = AssignmentList, headers(("Link" = String, description = "`<…>; rel=\"next\"`: the next page, absent on the last"))),
        (status = 400, description = "Malformed id or query, or `limit` out of range (`invalid_limit`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A cursor this list did not give (`invalid_cursor`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_assignments(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    query: web::Query<PageQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let course = visible_course(&state.pool, *id, &user).await?;
    // Archived assignments: listed to the course's staff only.
    let staff =
        user.is_admin() || course.my_role == Some(crate::courses::models::CourseRole::Instructor);
    let list = format!("assignments:{}:{staff}", course.id);
    let page = (state.cursors).page(&list, query.limit, query.cursor.as_deref())?;
    let rows = store::for_course(&state.pool, course.id, staff, page.after, page.fetch()).await?;
    let (rows, next) = (state.cursors).cut(&list, rows, page.limit, |r| (r.created_at, r.id));
    let items = rows.iter().map(|r| r.view()).collect();
    let body = AssignmentList { items, next };
    Ok(pagination::respond(&req, body.next.as_deref(), &body))
}

/// One assignment: a practice assignment (any signed-in person) or one in a course you are in.
#[utoipa::path(get, path = "/v1/assignments/{id}", tag = "assignments", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The assignment's id")),
    responses(
        (status = 200, description = "The assignment, with `your_attempts`: your attempts used and left under your overrides and accommodation", body = Assignment),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_assignment(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let row = visible_assignment(&state.pool, *id, &user).await?;
    // The caller's own rules: what "Start another attempt" depends on.
    let adjustments = store::adjustments_for(&state.pool, row.id, user.id).await?;
    let rules = super::rules::effective(&row.policy(), &adjustments);
    let used = u32::try_from(store::attempts_used(&state.pool, row.id, user.id).await?)
        .unwrap_or(u32::MAX);
    Ok(HttpResponse::Ok().json(Assignment {
        your_attempts: Some(YourAttempts {
            allowed: rules.attempts_allowed,
            used,
            remaining: rules.attempts_allowed.map(|n| n.saturating_sub(used)),
            opens_at: rules.opens_at,
            closes_at: rules.closes_at,
        }),
        ..row.view()
    }))
}

/// What you can take: every quiz's practice assignment, then the assignments of every course
/// you are in (admins: every course's), each newest first; a page at a time (see
/// `pagination`).
#[utoipa::path(get, path = "/v1/assignments", tag = "assignments", security(("bearer" = [])),
    params(PageQuery),
    responses(
        (status = 200, description = "A page of your assignments", body = AssignmentList, headers(("Link" = String, description = "`<…>; rel=\"next\"`: the next page, absent on the last"))),
        (status = 400, description = "Malformed query, or `limit` out of range (`invalid_limit`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A cursor this list did not give (`invalid_cursor`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn my_assignments(
    state: web::Data<AppState>,
    user: CurrentUser,
    query: web::Query<PageQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let list = format!("my-assignments:{}", user.id);
    let page =
        (state.cursors).page::<store::MemberKey>(&list, query.limit, query.cursor.as_deref())?;
    let rows = store::for_member(
        &state.pool,
        user.id,
        user.is_admin(),
        page.after,
        page.fetch(),
    )
    .await?;
    let (rows, next) = (state.cursors).cut(&list, rows, page.limit, |r| {
        (r.course_id.is_some(), r.created_at, r.id)
    });
    let items = rows.iter().map(|r| r.view()).collect();
    let body = AssignmentList { items, next };
    Ok(pagination::respond(&req, body.next.as_deref(), &body))
}

/// Changes an assignment (the course's instructors and admins): only the fields given change.
/// A change applies at once to attempts in progress: their deadlines are recomputed under the
/// new policy and each learner's overrides, and never made earlier unless `shorten_running`
/// is `true`; the learner's next read shows the new `time_left_seconds`. Shuffling and
/// navigation are fixed for each attempt when it starts: a change reaches attempts started
/// later, never reorders one already started. A practice assignment's policy comes from its
/// quiz's content and is not changed here.
#[utoipa::path(patch, path = "/v1/assignments/{id}", tag = "assignments", security(("bearer" = [])),
    request_body = AssignmentPatch,
    params(("id" = Uuid, Path, description = "The assignment's id")),
    responses(
        (status = 200, description = "Changed", body = Assignment),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A practice assignment (`practice_assignment`) or an archived one (`assignment_archived`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid title or policy (the problem names the field); nothing changed", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn update_assignment(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    body: LaterJson<AssignmentPatch>,
) -> Result<HttpResponse, ApiError> {
    let row = taught_assignment(&state.pool, *id, &user).await?;
    let patch = body.parse()?;
    if let Some(title) = &patch.title {
        validate::line("title", title, 1, 200)?;
    }
    let mut tx = state.pool.begin().await?;
    let row = store::lock(&mut *tx, row.id, true)
        .await?
        .ok_or_else(assignment_not_found)?;
    if row.archived_at.is_some() {
        return Err(archived());
    }
    let policy = patch.apply(row.policy());
    validate_policy(&policy)?;
    let title = patch.title.as_deref().map_or(row.title.as_str(), str::trim);
    store::update(&mut *tx, row.id, title, &policy).await?;
    let row = store::by_id(&mut *tx, row.id)
        .await?
        .ok_or_else(assignment_not_found)?;
    let now = state.clock.now();
    recompute_deadlines(
        &mut tx,
        std::slice::from_ref(&row),
        None,
        now,
        patch.shorten_running,
    )
    .await?;
    tx.commit().await?;
    Ok(HttpResponse::Ok().json(row.view()))
}

fn archived() -> ApiError {
    ApiError::new(
        Code::AssignmentArchived,
        "This assignment is archived; it no longer changes.",
    )
}

/// Closes an assignment now (the course's instructors and admins): its close time becomes now,
/// and every attempt in progress finishes with what was answered (finish reason `closed`), in
/// one transaction. A learner whose own override closes later may still start an attempt
/// until then (remove the override to stop that).
#[utoipa::path(post, path = "/v1/assignments/{id}/close", tag = "assignments", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The assignment's id")),
    responses(
        (status = 200, description = "Closed", body = Assignment),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A practice assignment (`practice_assignment`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn close_assignment(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let row = taught_assignment(&state.pool, *id, &user).await?;
    let now = state.clock.now();
    let mut tx = state.pool.begin().await?;
    store::lock(&mut *tx, row.id, true).await?;
    store::close(&mut *tx, row.id, now).await?;
    for attempt in store::unfinished(&mut *tx, row.id).await? {
        crate::attempts::store::finish_in(&mut tx, attempt, "closed", now).await?;
    }
    let row = store::by_id(&mut *tx, row.id)
        .await?
        .ok_or_else(assignment_not_found)?;
    tx.commit().await?;
    Ok(HttpResponse::Ok().json(row.view()))
}

/// Deletes an assignment that nobody has attempted (`204`); one with attempts is archived
/// instead (`200`, with `archived_at`): hidden from learners' lists, no new attempts, its
/// attempts and grades kept. The course's instructors and admins.
#[utoipa::path(delete, path = "/v1/assignments/{id}", tag = "assignments", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The assignment's id")),
    responses(
        (status = 200, description = "It had attempts: archived", body = Assignment),
        (status = 204, description = "Deleted"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A practice assignment (`practice_assignment`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_assignment(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let row = taught_assignment(&state.pool, *id, &user).await?;
    let mut tx = state.pool.begin().await?;
    // Locked, so that no attempt starts between the look for attempts and the delete.
    store::lock(&mut *tx, row.id, true).await?;
    let deleted = store::delete_or_archive(&mut *tx, row.id, state.clock.now()).await?;
    let archived = store::by_id(&mut *tx, row.id).await?;
    tx.commit().await?;
    match archived {
        Some(row) if !deleted => Ok(HttpResponse::Ok().json(row.view())),
        _ => Ok(HttpResponse::NoContent().finish()),
    }
}

/// This module's endpoints (resources, not method-guarded routes, so that a wrong method is a
/// `405`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    use super::overrides;
    use crate::telemetry::resource;
    use actix_web::middleware::from_fn;
    use web::{delete, get, patch, post, put};
    cfg.service(
        resource("/v1/courses/{id}/assignments")
            .route(get().to(list_assignments))
            .route(
                post()
                    .to(create_assignment)
                    .wrap(from_fn(crate::idempotency::guard)),
            ),
    )
    .service(resource("/v1/assignments").route(get().to(my_assignments)))
    .service(
        resource("/v1/courses/{id}/accommodations").route(get().to(overrides::list_accommodations)),
    )
    .service(
        resource("/v1/courses/{id}/accommodations/{user_id}")
            .route(put().to(overrides::put_accommodation))
            .route(delete().to(overrides::delete_accommodation)),
    )
    .service(
        resource("/v1/assignments/{id}")
            .route(get().to(get_assignment))
            .route(patch().to(update_assignment))
            .route(delete().to(delete_assignment)),
    )
    .service(resource("/v1/assignments/{id}/close").route(post().to(close_assignment)))
    .service(
        resource("/v1/assignments/{id}/overrides")
            .route(get().to(overrides::list_overrides))
            .route(post().to(overrides::bulk_overrides)),
    )
    .service(
        resource("/v1/assignments/{id}/overrides/{user_id}")
            .route(put().to(overrides::put_override))
            .route(delete().to(overrides::delete_override)),
    );
}

/// This module's part of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_assignment,
    list_assignments,
    get_assignment,
    my_assignments,
    update_assignment,
    close_assignment,
    delete_assignment,
    super::overrides::put_override,
    super::overrides::bulk_overrides,
    super::overrides::list_overrides,
    super::overrides::delete_override,
    super::overrides::put_accommodation,
    super::overrides::list_accommodations,
    super::overrides::delete_accommodation,
))]
pub struct Api;
