//! The grade endpoints: thin handlers over `grades` and its store.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::json;
use uuid::Uuid;

use super::models::{
    AttemptGrade, GradeEventKind, GradeHistory, GradeOverride, Gradebook, GradebookFormat,
    GradebookQuery,
};
use super::store::{self, NewEvent};
use super::{DEFAULT_PAGE, MAX_PAGE};
use crate::attempts::{Viewer, attempt_not_found, visible_attempt};
use crate::audit::{Action, Entry};
use crate::auth::CurrentUser;
use crate::error::{ApiError, Code, Problem};
use crate::extract::JsonObject;
use crate::state::AppState;

/// Sets a finished attempt's grade by hand: the course's instructors and admins. The grade
/// that counts becomes `points` (the computed score is kept, `computed_points`); the change is
/// appended to the attempt's grade history with `reason`, recorded in the audit log, and, for
/// an assignment linked from an LMS, the learner's grade under the assignment's grading method
/// is sent to the LMS again (the `attempt.regraded` event, in the same transaction). The
/// attempt's own learner gets `403`; anyone who cannot see the attempt `404`.
#[utoipa::path(put, path = "/v1/attempts/{id}/grade", tag = "grades", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The attempt's id")),
    request_body = GradeOverride,
    responses(
        (status = 200, description = "The attempt's grade now", body = AttemptGrade),
        (status = 400, description = "Malformed id or body, or a NUL in `reason`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Your own attempt: its grade is set by the course's staff", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such attempt, or not one you can see (`attempt_not_found`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The attempt is in progress (`attempt_not_finished`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`points` outside 0..=max or not a number, or `reason` empty, longer than 1000 characters or not one line (`invalid_field`, naming it)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn override_grade(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    body: JsonObject<GradeOverride>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (_, viewer) = visible_attempt(&state, *id, &user).await?;
    if viewer == Viewer::Learner {
        return Err(ApiError::new(
            Code::Forbidden,
            "The grade of your own attempt is set by the course's staff.",
        ));
    }
    let GradeOverride { points, reason } = body.into_inner();
    super::check_override(points, &reason)?;
    let now = state.clock.now();
    let mut tx = state.pool.begin().await?;
    let grade = store::lock_grade(&mut *tx, *id)
        .await?
        .ok_or_else(attempt_not_found)?;
    let (Some(_), Some(from)) = (grade.finished_at, grade.effective()) else {
        return Err(super::not_finished());
    };
    if !(0.0..=grade.max_score).contains(&points) {
        return Err(super::points_out_of_range(grade.max_score));
    }
    store::set_override(&mut tx, &grade, points, user.id, now).await?;
    store::record_event(
        &mut *tx,
        NewEvent {
            attempt: grade.attempt_id,
            kind: GradeEventKind::Override,
            actor: Some(user.id),
            at: now,
            from_points: Some(from),
            to_points: points,
            max_points: grade.max_score,
            reason: reason.trim(),
        },
    )
    .await?;
    crate::audit::store::record(
        &mut *tx,
        Entry::by(user.id, Action::GradeOverridden, &req)
            .subject(grade.user_id)
            .detail(json!({"attempt_id": grade.attempt_id, "from": from, "to": points})),
    )
    .await?;
    tx.commit().await?;
    let view = store::GradeRow {
        override_points: Some(points),
        ..grade
    }
    .view();
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(view))
}

/// An attempt's grade and every change of it, oldest first (at most 1000): its finish, staff
/// overrides, regrades, each with who (absent: quizd), when, from, to and why. For the
/// attempt's learner, the course's instructors and admins; `404` to anyone else.
#[utoipa::path(get, path = "/v1/attempts/{id}/grade-history", tag = "grades", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The attempt's id")),
    responses(
        (status = 200, description = "The grade and its history", body = GradeHistory),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such attempt, or not one you can see (`attempt_not_found`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn grade_history(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    visible_attempt(&state, *id, &user).await?;
    // One snapshot: the grade and the events that led to it.
    let mut tx = state.pool.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(&mut *tx)
        .await?;
    let grade = store::grade(&mut *tx, *id)
        .await?
        .ok_or_else(attempt_not_found)?;
    let events = store::history(&mut *tx, *id).await?;
    tx.commit().await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(GradeHistory {
            grade: grade.view(),
            events,
        }))
}

/// A course's gradebook, for its instructors and admins: its learners × its assignments (not
/// archived). Each cell is the learner's grade under the assignment's grading method over the
/// effective grades of their finished attempts (a staff override counts instead of the
/// computed score), with the maximum, the attempts used and a state: `in_progress` when an
/// attempt is open, else `overridden` when a finished attempt was graded by hand, else
/// `finished`, else `not_started`.
///
/// Paginated over learners, ordered by display name then user id: `limit` learners per page
/// (1 to 200, default 50), the next page at the opaque `next` cursor, also given as
/// `Link: <…>; rel="next"`. One SQL statement per page. `?format=csv` answers the same page
/// as `text/csv`: `user_id,display_name,email`, then a column per assignment titled
/// `<title> [<assignment id>]` holding the grade in points (empty before any attempt finished).
#[utoipa::path(get, path = "/v1/courses/{id}/gradebook", tag = "grades", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The course's id"), GradebookQuery),
    responses(
        (status = 200, description = "A page of the gradebook", content(
            (Gradebook = "application/json"),
            (String = "text/csv"),
        ), headers(("Link" = String, description = "`<…>; rel=\"next\"`: the next page, absent on the last"))),
        (status = 400, description = "Malformed id or query, or a limit out of 1..=200 (`invalid_limit`)", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A cursor this endpoint did not give (`invalid_cursor`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn gradebook(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    query: web::Query<GradebookQuery>,
) -> Result<HttpResponse, ApiError> {
    let course = crate::courses::taught_course(&state.pool, *id, &user).await?;
    let q = query.into_inner();
    let limit = q.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::new(
            Code::InvalidLimit,
            format!("`limit` must be from 1 to {MAX_PAGE}."),
        ));
    }
    let after = q.cursor.as_deref().map(super::decode_cursor).transpose()?;
    let rows = store::gradebook_page(
        &state.pool,
        course.id,
        after.as_ref().map(|(name, id)| (name.as_str(), *id)),
        i64::from(limit) + 1,
    )
    .await?;
    let book = super::assemble(course.id, rows, limit as usize);
    let csv = q.format == Some(GradebookFormat::Csv);
    let mut res = HttpResponse::Ok();
    res.insert_header((header::CACHE_CONTROL, "private, no-store"));
    if let Some(next) = &book.next {
        let format = if csv { "&format=csv" } else { "" };
        res.insert_header((
            header::LINK,
            format!(
                "</v1/courses/{}/gradebook?limit={limit}&cursor={next}{format}>; rel=\"next\"",
                course.id
            ),
        ));
    }
    Ok(if csv {
        res.content_type("text/csv; charset=utf-8")
            .insert_header((
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"gradebook.csv\"",
            ))
            .body(super::to_csv(&book))
    } else {
        res.json(book)
    })
}
