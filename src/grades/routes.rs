//! The grade endpoints: thin handlers over `grades` and its store.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::json;
use uuid::Uuid;

use super::models::{
    AttemptGrade, GradeEventKind, GradeHistory, GradeOverride, Gradebook, GradebookFormat,
    GradebookQuery, RegradeReport, RegradeRequest,
};
use super::store::{self, NewEvent};
use crate::attempts::{Viewer, attempt_not_found, visible_attempt};
use crate::audit::{Action, Entry};
use crate::auth::CurrentUser;
use crate::error::{ApiError, Code, Problem};
use crate::extract::LaterJson;
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
    body: LaterJson<GradeOverride>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (_, viewer) = visible_attempt(&state, *id, &user).await?;
    if viewer == Viewer::Learner {
        return Err(ApiError::new(
            Code::Forbidden,
            "The grade of your own attempt is set by the course's staff.",
        ));
    }
    let GradeOverride { points, reason } = body.parse()?;
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
        (status = 409, description = "Your practice attempt, while you sit an exam of its quiz (`practice_during_exam`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn grade_history(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    visible_attempt(&state, *id, &user).await?;
    // One snapshot: the grade and the events that led to it.
    let mut tx = state.pool.begin().await?;
    crate::db::store::snapshot(&mut *tx).await?;
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
/// `finished`, else `not_started`. A learner removed from the course stays, marked
/// `enrolled: false`, with their attempts as they were (an erased account does not: its
/// attempts stay only as nameless statistics); one enrolled again is listed once.
///
/// Paginated over learners, ordered by display name then user id: `limit` learners per page
/// (1 to 200, default 50), the next page at the opaque `next` cursor, also given as
/// `Link: <…>; rel="next"`. One SQL statement per page. `?format=csv` answers the same page
/// as `text/csv`: `user_id,display_name,email,enrolled`, then a column per assignment titled
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
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let course = crate::courses::taught_course(&state.pool, *id, &user).await?;
    let q = query.into_inner();
    let list = format!("gradebook:{}", course.id);
    let page = (state.cursors).page::<(String, Uuid)>(&list, q.limit, q.cursor.as_deref())?;
    let rows = store::gradebook_page(
        &state.pool,
        course.id,
        page.after.as_ref().map(|(name, id)| (name.as_str(), *id)),
        page.fetch(),
    )
    .await?;
    let book = super::assemble(course.id, rows, page.limit, |l| {
        state.cursors.encode(&list, &(&l.display_name, l.user_id))
    });
    let csv = q.format == Some(GradebookFormat::Csv);
    let mut res = HttpResponse::Ok();
    res.insert_header((header::CACHE_CONTROL, "private, no-store"));
    if let Some(next) = &book.next {
        res.insert_header((header::LINK, crate::pagination::link(&req, next)));
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

/// Moves an assignment to another version of its quiz and grades every attempt again against
/// its key (the course's instructors and admins; for a private quiz, only its authors and
/// admins may, as only they may place it). `dry_run` (the default) answers what would change
/// and changes nothing; `dry_run: false` changes it in one transaction, and answers the same
/// report: every response graded again (the learner's choice kept), every attempt's score and
/// maximum computed again (a staff override stands, capped at the new maximum), every attempt
/// in progress moved to the new version with its answers so far (every attempt keeps the
/// questions it serves: a question the new version adds is for attempts started from now on), a `regrade` event in the
/// history of every grade that changed, the LMS told of each (`attempt.regraded`), an audit
/// entry; item analysis is rebuilt right after (a report meanwhile waits for the rebuild).
/// The rules are in `grades::regrade`.
///
/// `questions` rescores questions for the whole assignment without a new version (with
/// `to_version` or without it): `full_marks` gives every attempt that serves the question its
/// full points, answered or not; `dropped` takes it out of every score and maximum; `graded`
/// undoes either. The rules hold for attempts in progress and attempts started later too, and
/// carry over to later regrades (`grading::scoring`); responses keep the key's grade, so item
/// analysis still shows how the question performed.
///
/// Two regrades of one assignment do not run at once: the second waits for the first, then
/// finds the version assigned already (`422 regrade_same_version`), or, if the first moved it
/// to yet another version, answers `409 regrade_conflict`. A learner answering or
/// finishing meanwhile waits for the regrade, and lands under the new key.
#[utoipa::path(post, path = "/v1/assignments/{id}/regrade", tag = "grades", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The assignment's id")),
    request_body = RegradeRequest,
    responses(
        (status = 200, description = "What the regrade changes (`dry_run`) or changed", body = RegradeReport),
        (status = 400, description = "Malformed id or body, or a NUL in `reason`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses (`assignment_not_found`); no such version of its quiz, or not one you may place (`version_not_found`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A practice assignment (`practice_assignment`), an archived one (`assignment_archived`), or another regrade of it ran at the same moment (`regrade_conflict`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The version is the one assigned and no question is rescored (`regrade_same_version`); `questions` names a question the version does not have (`unknown_question`); neither `to_version` nor `questions`, more than 1,000 questions, or `reason` empty, too long or not one line (`invalid_field`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn regrade(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    body: LaterJson<RegradeRequest>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    use super::regrade::{StoredAttempt, StoredResponse, plan};
    use crate::assignments::store as assignments;
    let row = crate::assignments::taught_assignment(&state.pool, *id, &user).await?;
    let body = body.parse()?;
    let changes = body.questions.unwrap_or_default();
    if changes.len() > super::MAX_RESCORED {
        return Err(ApiError::new(
            Code::InvalidField,
            format!(
                "`questions` names at most {} questions.",
                super::MAX_RESCORED
            ),
        )
        .with_status(StatusCode::UNPROCESSABLE_ENTITY));
    }
    if body.to_version.is_none() && changes.is_empty() {
        return Err(ApiError::new(
            Code::InvalidField,
            "Name a version to move to (`to_version`), questions to rescore (`questions`), or both.",
        )
        .with_status(StatusCode::UNPROCESSABLE_ENTITY));
    }
    let reason = match (&body.reason, body.to_version) {
        (Some(r), _) => {
            crate::validate::line("reason", r, 1, super::MAX_REASON)?;
            r.trim().to_string()
        }
        (None, Some(n)) => format!("Regraded to version {n}."),
        (None, None) => "Questions rescored for everyone.".to_string(),
    };
    let no_version = || {
        ApiError::new(
            Code::VersionNotFound,
            "The assignment's quiz has no such version, or not one you may place.",
        )
    };
    let to_id = match body.to_version {
        // Moving to a version places it: its key becomes readable by the course's staff.
        Some(n) => {
            let quiz = crate::quizzes::store::access(&state.pool, &row.slug, user.id)
                .await?
                .ok_or_else(no_version)?;
            if !crate::quizzes::access::placeable(&quiz, &user) {
                return Err(no_version());
            }
            assignments::resolve_version(&state.pool, &row.slug, Some(n))
                .await?
                .ok_or_else(no_version)?
                .1
        }
        None => row.quiz_version_id,
    };
    let to = crate::attempts::version(&state, to_id).await?;
    if let Some(key) = changes.keys().find(|k| to.content.question(k).is_none()) {
        return Err(ApiError::new(
            Code::UnknownQuestion,
            format!(
                "Version {} of the quiz has no question `{key}`.",
                to.version
            ),
        ));
    }
    // Every version read is loaded before the transaction: loading one may need a connection
    // of its own, and the transaction's locks keep finishes waiting on theirs.
    let mut versions = std::collections::HashMap::from([(to.id, to.clone())]);
    for v in store::attempt_versions(&state.pool, row.id, row.quiz_version_id).await? {
        versions.insert(v, crate::attempts::version(&state, v).await?);
    }
    let raced = || {
        ApiError::new(
            Code::RegradeConflict,
            "Another regrade of this assignment ran at the same moment; read it and retry.",
        )
    };
    let apply = !body.dry_run;
    let mut tx = state.pool.begin().await?;
    let locked = if apply {
        assignments::lock(&mut *tx, row.id, true).await?
    } else {
        // One snapshot: the attempts and the responses agree.
        crate::db::store::snapshot(&mut *tx).await?;
        assignments::by_id(&mut *tx, row.id).await?
    }
    .ok_or_else(crate::assignments::assignment_not_found)?;
    if locked.archived_at.is_some() {
        return Err(ApiError::new(
            Code::AssignmentArchived,
            "This assignment is archived; its grades no longer change.",
        ));
    }
    if body.to_version.is_none() && locked.quiz_version_id != to_id {
        return Err(raced());
    }
    if locked.quiz_version_id == to_id && changes.is_empty() {
        return Err(ApiError::new(
            Code::RegradeSameVersion,
            format!("The assignment uses version {} already.", to.version),
        ));
    }
    let from = versions.get(&locked.quiz_version_id).ok_or_else(raced)?;
    let rows = store::regrade_attempts(&mut *tx, row.id, apply).await?;
    let mut responses: std::collections::HashMap<Uuid, Vec<StoredResponse>> =
        std::collections::HashMap::new();
    for r in store::regrade_responses(&mut *tx, row.id).await? {
        responses
            .entry(r.attempt_id)
            .or_default()
            .push(StoredResponse {
                question_key: r.question_key,
                answer: r.answer.0,
                points: r.points,
                max_points: r.max_points,
                correct: r.correct,
            });
    }
    let mut attempts = Vec::with_capacity(rows.len());
    for a in &rows {
        // An attempt serves every question of the version it was laid out on.
        let own = versions.get(&a.quiz_version_id).ok_or_else(raced)?;
        attempts.push(StoredAttempt {
            id: a.id,
            user_id: a.user_id,
            number: a.number,
            finished: a.finished,
            score: a.score,
            override_points: a.override_points,
            max_score: a.max_score,
            served: a.question_set.clone().unwrap_or_else(|| {
                own.content
                    .questions
                    .iter()
                    .map(|q| q.key.clone())
                    .collect()
            }),
            responses: responses.remove(&a.id).unwrap_or_default(),
        });
    }
    let rules = (locked.question_rules.0.carried_to(&to.content)).changed(&to.content, &changes);
    let plan = plan(
        &from.content,
        &to.content,
        &attempts,
        (&locked.question_rules, &rules),
    );
    let grades_changed = plan.attempts.iter().filter(|a| a.grade_changed).count();
    if apply {
        let now = state.clock.now();
        let keys = |v: &crate::quizzes::QuizVersion| -> Vec<String> {
            v.content.questions.iter().map(|q| q.key.clone()).collect()
        };
        let moves = store::Move {
            old_keys: keys(from),
            new_keys: keys(&to),
            same_questions: plan.same_questions(),
            rules,
        };
        store::apply_regrade(&mut tx, row.id, to_id, &moves, &plan, user.id, now, &reason).await?;
        crate::audit::store::record(
            &mut *tx,
            Entry::by(user.id, Action::AssignmentRegraded, &req).detail(json!({
                "assignment_id": row.id,
                "from_version": from.version,
                "to_version": to.version,
                "questions": changes,
                "attempts_changed": plan.attempts.len(),
                "grades_changed": grades_changed,
            })),
        )
        .await?;
        // The scores changed and the attempts moved: the count tables are built again, after
        // the commit (about 0.6 ms an attempt: not while learners wait on the locks).
        crate::analytics::store::forget_sums(&mut *tx, row.id).await?;
    }
    tx.commit().await?;
    if apply {
        let (pool, id) = (state.pool.clone(), row.id);
        actix_web::rt::spawn(async move {
            if let Err(e) = crate::analytics::rebuild_stale_sums(&pool, Some(&[id]), None).await {
                tracing::warn!(error = %e, assignment = %id, "item analysis rebuild after a regrade failed; the next report rebuilds");
            }
        });
        // Laid out on the old version; opened again (on any instance, the attempt's statements
        // notice the version changed).
        state
            .attempts
            .forget(&rows.iter().map(|a| a.id).collect::<Vec<_>>());
    }
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(RegradeReport {
            assignment_id: row.id,
            from_version: from.version,
            to_version: to.version,
            dry_run: !apply,
            questions: plan.questions,
            attempts_total: rows.len(),
            attempts: plan.attempts,
            grades_changed,
        }))
}
