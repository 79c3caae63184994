//! Overrides of one assignment and accommodations in a whole course, per learner:
//! `/v1/assignments/{id}/overrides[/{user_id}]` and `/v1/courses/{id}/accommodations[/{user_id}]`.
//!
//! A change applies at once to the learner's attempts in progress: their deadlines are
//! recomputed in the transaction that stores the change (see [`super::rules`] for the rule).
//! A removal, like any rule change, never takes time from an attempt in progress.
//!
//! Who asks is checked before a body is read ([`LaterJson`]): someone who does not teach the
//! course gets `403`/`404` whatever they sent.

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::json;
use uuid::Uuid;

use super::models::{AdjustmentRequest, BulkOverrides, Override, OverrideList};
use super::rules::Adjustment;
use super::store::{self, AssignmentRow, Scope};
use super::{parse_adjustment, recompute_deadlines, taught_assignment};
use crate::audit::{self, Action, Entry};
use crate::auth::CurrentUser;
use crate::courses::taught_course;
use crate::error::{ApiError, Code, Problem};
use crate::extract::LaterJson;
use crate::state::AppState;

/// A change begun: the course, its transaction, the locked assignments it reaches.
type Begun = (
    Uuid,
    sqlx::Transaction<'static, sqlx::Postgres>,
    Vec<AssignmentRow>,
);

/// The course and the locked assignments a change in `scope` reaches, after checking that the
/// caller teaches the course.
async fn begin(state: &AppState, user: &CurrentUser, scope: Scope) -> Result<Begun, ApiError> {
    match scope {
        Scope::Assignment(id) => {
            let row = taught_assignment(&state.pool, id, user).await?;
            let course = row.course_id.expect("a taught assignment is in a course");
            let mut tx = state.pool.begin().await?;
            let locked = store::lock(&mut *tx, row.id, true)
                .await?
                .ok_or_else(super::assignment_not_found)?;
            Ok((course, tx, vec![locked]))
        }
        Scope::Course(id) => {
            let course = taught_course(&state.pool, id, user).await?;
            let mut tx = state.pool.begin().await?;
            let locked = store::lock_course(&mut *tx, course.id).await?;
            Ok((course.id, tx, locked))
        }
    }
}

fn scope_detail(scope: Scope) -> serde_json::Value {
    match scope {
        Scope::Assignment(id) => json!({ "assignment_id": id }),
        Scope::Course(id) => json!({ "course_id": id }),
    }
}

/// Sets the same override for `users` (all of them or, on any refusal, none) and applies it to
/// their attempts in progress, in the change [`begin`] started (so the caller was checked
/// before its body was read). `field(i)` names the `i`th user in a refusal.
#[allow(clippy::too_many_arguments)]
async fn set(
    state: &AppState,
    user: &CurrentUser,
    req: &HttpRequest,
    scope: Scope,
    begun: Begun,
    users: Vec<Uuid>,
    request: &AdjustmentRequest,
    field: impl Fn(usize) -> String,
) -> Result<Vec<Override>, ApiError> {
    let adjustment: Adjustment = parse_adjustment(request)?;
    let (course, mut tx, assignments) = begun;
    let outsiders = store::not_learners(&mut *tx, course, &users).await?;
    if let Some(i) = users.iter().position(|u| outsiders.contains(u)) {
        return Err(ApiError::new(
            Code::NotALearner,
            format!(
                "`{}` is not enrolled in this course as a learner; overrides are for its learners.",
                field(i)
            ),
        ));
    }
    let mut users = users;
    users.sort();
    users.dedup();
    let now = state.clock.now();
    let rows = store::set_overrides(&mut *tx, scope, &users, &adjustment, user.id, now).await?;
    recompute_deadlines(&mut tx, &assignments, Some(&users), now, false).await?;
    let mut entry = Entry::by(user.id, Action::OverrideSet, req).detail(json!({
        "scope": scope_detail(scope),
        "time_multiplier": adjustment.time_multiplier,
        "extra_minutes": adjustment.extra_minutes,
        "extra_attempts": adjustment.extra_attempts,
        "opens_at": adjustment.opens_at,
        "closes_at": adjustment.closes_at,
        "user_ids": users,
    }));
    if let [one] = users[..] {
        entry = entry.subject(one);
    }
    audit::store::record(&mut *tx, entry).await?;
    tx.commit().await?;
    Ok(rows)
}

async fn remove(
    state: &AppState,
    user: &CurrentUser,
    req: &HttpRequest,
    scope: Scope,
    learner: Uuid,
) -> Result<HttpResponse, ApiError> {
    let (_, mut tx, assignments) = begin(state, user, scope).await?;
    if !store::remove_override(&mut *tx, scope, learner).await? {
        return Err(ApiError::new(
            Code::OverrideNotFound,
            "This learner has no override here.",
        ));
    }
    // Never shortens: what a learner was given for an attempt in progress stays.
    recompute_deadlines(
        &mut tx,
        &assignments,
        Some(&[learner]),
        state.clock.now(),
        false,
    )
    .await?;
    audit::store::record(
        &mut *tx,
        Entry::by(user.id, Action::OverrideRemoved, req)
            .subject(learner)
            .detail(json!({ "scope": scope_detail(scope) })),
    )
    .await?;
    tx.commit().await?;
    Ok(HttpResponse::NoContent().finish())
}

async fn list(
    state: &AppState,
    user: &CurrentUser,
    scope: Scope,
) -> Result<HttpResponse, ApiError> {
    match scope {
        Scope::Assignment(id) => {
            taught_assignment(&state.pool, id, user).await?;
        }
        Scope::Course(id) => {
            taught_course(&state.pool, id, user).await?;
        }
    }
    let items = store::overrides(&state.pool, scope).await?;
    Ok(HttpResponse::Ok().json(OverrideList { items }))
}

/// Sets (replaces) one learner's override of an assignment: a time multiplier, extra minutes,
/// extra attempts, own open and close times. The learner must be enrolled in the course as a
/// learner. Applies at once to their attempt in progress (its deadline moves in the same
/// transaction). The most generous applicable rule wins: deadline = start + time limit × the
/// largest multiplier + the most extra minutes, bounded by the latest close; attempts = allowed
/// + the most extra attempts; window = earliest open to latest close (the assignment's own
/// policy counts as a rule). The course's instructors and admins.
#[utoipa::path(put, path = "/v1/assignments/{id}/overrides/{user_id}", tag = "assignments", security(("bearer" = [])),
    request_body = AdjustmentRequest,
    params(
        ("id" = Uuid, Path, description = "The assignment's id"),
        ("user_id" = Uuid, Path, description = "The learner's id"),
    ),
    responses(
        (status = 200, description = "Set, and applied to the learner's attempt in progress", body = Override),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A practice assignment (`practice_assignment`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An invalid value (`invalid_override`) or someone not enrolled as a learner (`not_a_learner`); the problem names the field, nothing changed", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn put_override(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(Uuid, Uuid)>,
    body: LaterJson<AdjustmentRequest>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (id, learner) = path.into_inner();
    let scope = Scope::Assignment(id);
    let begun = begin(&state, &user, scope).await?;
    let body = body.parse()?;
    let rows = set(
        &state,
        &user,
        &req,
        scope,
        begun,
        vec![learner],
        &body,
        |_| "user_id".into(),
    )
    .await?;
    one(rows)
}

fn one(rows: Vec<Override>) -> Result<HttpResponse, ApiError> {
    let row = rows
        .into_iter()
        .next()
        .ok_or_else(|| ApiError::internal("an override set vanished"))?;
    Ok(HttpResponse::Ok().json(row))
}

/// Sets the same override for many learners of an assignment at once: all of them, or none
/// when any is refused (the problem names the row, `user_ids[i]`). The course's instructors
/// and admins.
#[utoipa::path(post, path = "/v1/assignments/{id}/overrides", tag = "assignments", security(("bearer" = [])),
    request_body = BulkOverrides,
    params(("id" = Uuid, Path, description = "The assignment's id")),
    responses(
        (status = 200, description = "Set for every learner named", body = OverrideList),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A practice assignment (`practice_assignment`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An invalid value (`invalid_override`), no or too many learners, or someone not enrolled as a learner (`not_a_learner`); the problem names the field, nothing changed", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn bulk_overrides(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    body: LaterJson<BulkOverrides>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let scope = Scope::Assignment(*id);
    let begun = begin(&state, &user, scope).await?;
    let body = body.parse()?;
    if body.user_ids.is_empty() || body.user_ids.len() > 1000 {
        return Err(ApiError::new(
            Code::InvalidOverride,
            "`user_ids` must name 1 to 1000 learners.",
        ));
    }
    let items = set(
        &state,
        &user,
        &req,
        scope,
        begun,
        body.user_ids,
        &body.adjustment,
        |i| format!("user_ids[{i}]"),
    )
    .await?;
    Ok(HttpResponse::Ok().json(OverrideList { items }))
}

/// The overrides of an assignment. The course's instructors and admins.
#[utoipa::path(get, path = "/v1/assignments/{id}/overrides", tag = "assignments", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The assignment's id")),
    responses(
        (status = 200, description = "The overrides", body = OverrideList),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A practice assignment (`practice_assignment`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_overrides(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    list(&state, &user, Scope::Assignment(*id)).await
}

/// Removes a learner's override of an assignment. An attempt in progress keeps the deadline it
/// has. The course's instructors and admins.
#[utoipa::path(delete, path = "/v1/assignments/{id}/overrides/{user_id}", tag = "assignments", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The assignment's id"),
        ("user_id" = Uuid, Path, description = "The learner's id"),
    ),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or no override for this learner (`override_not_found`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A practice assignment (`practice_assignment`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_override(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(Uuid, Uuid)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (id, learner) = path.into_inner();
    remove(&state, &user, &req, Scope::Assignment(id), learner).await
}

/// Sets (replaces) one learner's accommodation in a course: it applies to every assignment of
/// the course, alongside each assignment's own override (the most generous applicable rule
/// wins, see `PUT /v1/assignments/{id}/overrides/{user_id}`), at once to attempts in progress.
/// The course's instructors and admins.
#[utoipa::path(put, path = "/v1/courses/{id}/accommodations/{user_id}", tag = "courses", security(("bearer" = [])),
    request_body = AdjustmentRequest,
    params(
        ("id" = Uuid, Path, description = "The course's id"),
        ("user_id" = Uuid, Path, description = "The learner's id"),
    ),
    responses(
        (status = 200, description = "Set, and applied to the learner's attempts in progress", body = Override),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An invalid value (`invalid_override`) or someone not enrolled as a learner (`not_a_learner`); the problem names the field, nothing changed", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn put_accommodation(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(Uuid, Uuid)>,
    body: LaterJson<AdjustmentRequest>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (id, learner) = path.into_inner();
    let scope = Scope::Course(id);
    let begun = begin(&state, &user, scope).await?;
    let body = body.parse()?;
    let rows = set(
        &state,
        &user,
        &req,
        scope,
        begun,
        vec![learner],
        &body,
        |_| "user_id".into(),
    )
    .await?;
    one(rows)
}

/// The accommodations in a course. The course's instructors and admins.
#[utoipa::path(get, path = "/v1/courses/{id}/accommodations", tag = "courses", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The course's id")),
    responses(
        (status = 200, description = "The accommodations", body = OverrideList),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_accommodations(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    list(&state, &user, Scope::Course(*id)).await
}

/// Removes a learner's accommodation in a course. Attempts in progress keep the deadlines they
/// have. The course's instructors and admins.
#[utoipa::path(delete, path = "/v1/courses/{id}/accommodations/{user_id}", tag = "courses", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The course's id"),
        ("user_id" = Uuid, Path, description = "The learner's id"),
    ),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or no accommodation for this learner (`override_not_found`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_accommodation(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(Uuid, Uuid)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (id, learner) = path.into_inner();
    remove(&state, &user, &req, Scope::Course(id), learner).await
}
