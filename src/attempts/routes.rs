//! Taking a quiz: start, resume, answer, finish; the lists of attempts.

use std::sync::Arc;

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use uuid::Uuid;

use super::models::{
    AnswerOutcome, AnswerRequest, AttemptList, AttemptView, NumberAnswer, SelectedAnswer,
    StartAttempt, TextAnswer,
};
use super::review::{Served, Sight};
use super::store::{self, Recorded};
use super::{
    Opened, Viewer, attempt_list, current, not_enrolled, render, settle, start, still_enrolled,
    view, visible_attempt,
};
use crate::assignments::{self, visible_assignment};
use crate::auth::CurrentUser;
use crate::content::Question;
use crate::error::{ApiError, Code, Problem};
use crate::extract::JsonObject;
use crate::grading::scoring::{QuestionRules, Scoring};
use crate::grading::{self, Answer};
use crate::pagination::{self, PageQuery};
use crate::state::AppState;

async fn start_response(
    state: &AppState,
    user: &CurrentUser,
    assignment: &assignments::store::AssignmentRow,
    req: &HttpRequest,
    body: &[u8],
) -> Result<HttpResponse, ApiError> {
    let StartAttempt { locale } = crate::extract::optional_object(body)?;
    let accept = req
        .headers()
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    let (row, created) = start(state, user, assignment, locale.as_ref(), accept, None).await?;
    let body = view(state, &row, Viewer::Learner).await?;
    let mut res = if created {
        HttpResponse::Created()
    } else {
        HttpResponse::Ok()
    };
    Ok(res
        .insert_header((header::LOCATION, format!("/v1/attempts/{}", row.id)))
        .insert_header((header::CONTENT_LANGUAGE, row.locale.clone()))
        .content_type(header::ContentType::json())
        .body(body))
}

/// Starts an attempt at an assignment (or returns your unfinished one, with `200`).
#[utoipa::path(post, path = "/v1/assignments/{id}/attempts", tag = "attempts", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The assignment's id"),
        ("Accept-Language" = Option<String>, Header, description = "Used when neither the body nor your profile names a locale"),
    ),
    request_body(content = Option<StartAttempt>, description = "Optional"),
    responses(
        (status = 201, description = "Started", body = AttemptView),
        (status = 200, description = "Your unfinished attempt, resumed", body = AttemptView),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Not open yet (`not_open`), closed (`closed`), archived (`assignment_archived`, or its course: `course_archived`), or no attempts left (`attempts_exhausted`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid locale", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn start_assignment_attempt(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let assignment = visible_assignment(&state.pool, *id, &user).await?;
    start_response(&state, &user, &assignment, &req, &body).await
}

/// Starts a practice attempt at a public quiz's current version (any signed-in learner), if its
/// content offers practice. Not while you sit an exam of the quiz: an attempt in progress at
/// one of its assignments in your courses, or one open to you with an attempt left (its
/// practice would show the key of its questions); your practice attempts of it are closed to
/// you meanwhile too.
#[utoipa::path(post, path = "/v1/quizzes/{slug}/attempts", tag = "attempts", security(("bearer" = [])),
    params(
        ("slug" = String, Path, description = "The quiz's slug"),
        ("Accept-Language" = Option<String>, Header, description = "Used when neither the body nor your profile names a locale"),
    ),
    request_body(content = Option<StartAttempt>, description = "Optional"),
    responses(
        (status = 201, description = "Started", body = AttemptView),
        (status = 200, description = "Your unfinished practice attempt, resumed", body = AttemptView),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz (or a private one), or no practice offered (`practice_not_offered`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "No attempts left (`attempts_exhausted`), or you are sitting an exam of this quiz (`practice_during_exam`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid locale", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn start_practice_attempt(
    state: web::Data<AppState>,
    user: CurrentUser,
    slug: web::Path<String>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let not_found = || ApiError::new(Code::QuizNotFound, "There is no quiz with this slug.");
    if !crate::quizzes::routes::plausible_slug(&slug) {
        return Err(not_found());
    }
    let version = state
        .quizzes
        .current(&state.pool, &slug)
        .await?
        .ok_or_else(not_found)?;
    // Only a public quiz whose content asks for practice has a practice assignment; a private
    // quiz does not exist outside its assignments.
    let practice = version.practice_assignment_id.ok_or_else(|| {
        if version.content.visibility == crate::content::Visibility::Public {
            ApiError::new(
                Code::PracticeNotOffered,
                "This quiz offers no open practice; take it through an assignment.",
            )
        } else {
            not_found()
        }
    })?;
    assignments::practice_open_to(&state.pool, version.quiz_id, user.id, state.clock.now()).await?;
    let assignment = assignments::store::by_id(&state.pool, practice)
        .await?
        .ok_or_else(not_found)?;
    start_response(&state, &user, &assignment, &req, &body).await
}

/// Your attempt (or, for the course's instructors and admins, anyone's): the same order, the
/// answers so far, the feedback earned, the time left. Resumes on any device.
#[utoipa::path(get, path = "/v1/attempts/{id}", tag = "attempts", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The attempt's id")),
    responses(
        (status = 200, description = "The attempt", body = AttemptView),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such attempt, or not yours", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Your practice attempt, while you sit an exam of its quiz (`practice_during_exam`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_attempt(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let (opened, row, responses, sight) = as_it_stands(&state, *id, &user).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(render(&state, &opened, &row, &responses, sight)))
}

/// The attempt as it stands now, laid out on its version, with its responses and what the
/// caller may see of it, if the caller may see it at all (what its view is rendered from).
async fn as_it_stands(
    state: &AppState,
    id: Uuid,
    user: &CurrentUser,
) -> Result<
    (
        Arc<Opened>,
        store::AttemptRow,
        Vec<store::ResponseRow>,
        Sight,
    ),
    ApiError,
> {
    let (opened, viewer) = visible_attempt(state, id, user).await?;
    let mut conn = state.quick.acquire().await?;
    let (status, responses) = store::status_and_responses(&mut *conn, opened.row.id)
        .await?
        .ok_or_else(super::attempt_not_found)?;
    conn.release();
    let opened = super::laid_out_on(state, opened, status.quiz_version_id).await?;
    // Finishing does not change the responses: they stay as read.
    let row = settle(state, opened.row.with_status(status)).await?;
    let sight = super::sight(state, &row, viewer).await?;
    Ok((opened, row, responses, sight))
}

/// An image of a question of this attempt (`image.url` in its view), to whoever may see the
/// attempt, and only while its view shows that question to them: a question the attempt did
/// not draw, one a sequential attempt has not reached, or one its live session has not opened,
/// is as unknown as a made-up hash.
#[utoipa::path(get, path = "/v1/attempts/{id}/media/{sha256}", tag = "attempts", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The attempt's id"),
        ("sha256" = String, Path, description = "The image's SHA-256, as its `url` names it"),
        ("If-None-Match" = Option<String>, Header, description = "The entity tag held: the image's hash, quoted"),
    ),
    responses(
        crate::quizzes::media::ImageResponses,
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such attempt, or not yours (`attempt_not_found`); no such image among the questions it shows you (`media_not_found`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Your practice attempt, while you sit an exam of its quiz (`practice_during_exam`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_attempt_media(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(Uuid, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (id, sha256) = path.into_inner();
    let (opened, row, responses, sight) = as_it_stands(&state, id, &user).await?;
    let not_found = crate::quizzes::media::media_not_found;
    if !crate::quizzes::media::plausible_hash(&sha256) {
        return Err(not_found());
    }
    let view = render(&state, &opened, &row, &responses, sight);
    let image = (view.questions.iter())
        .filter_map(|shown| opened.served.question_by_id(&shown.id.to_string()))
        .filter_map(|q| q.image.as_ref())
        .find(|i| i.sha256 == sha256)
        .ok_or_else(not_found)?;
    crate::quizzes::media::serve(&state, &req, image).await
}

fn only_the_learner() -> ApiError {
    ApiError::new(
        Code::Forbidden,
        "Only the learner who took this attempt can change it.",
    )
}

/// The answer in content terms (option keys), checked against the question.
fn content_answer(served: &Served, q: &Question, body: &AnswerRequest) -> Result<Answer, ApiError> {
    let answer = match body {
        AnswerRequest::Selected(SelectedAnswer { selected }) => {
            if selected.len() > 64 {
                return Err(ApiError::new(
                    Code::InvalidAnswer,
                    "Too many options selected.",
                ));
            }
            let mut keys = Vec::with_capacity(selected.len());
            for id in selected {
                let key = served.option_key(q, id).ok_or_else(|| {
                    ApiError::new(
                        Code::UnknownOption,
                        "An option id is not one of this question's options.",
                    )
                })?;
                keys.push(key.to_string());
            }
            keys.sort();
            Answer::Selected(keys)
        }
        AnswerRequest::Number(NumberAnswer { number }) => Answer::Number(*number),
        AnswerRequest::Text(TextAnswer { text }) => {
            if text.contains('\0') {
                return Err(ApiError::new(
                    Code::InvalidAnswer,
                    "`text` contains a NUL character.",
                ));
            }
            if text.chars().count() > grading::MAX_TEXT_CHARS {
                return Err(ApiError::new(Code::InvalidAnswer, "`text` is too long."));
            }
            Answer::Text(text.clone())
        }
    };
    grading::check(q, &answer).map_err(|e| {
        ApiError::new(Code::InvalidAnswer, format!("{e}."))
            .with_status(StatusCode::UNPROCESSABLE_ENTITY)
    })?;
    Ok(answer)
}

/// Answers one question. Graded on the server at once. Under immediate feedback the result
/// comes back with it and the first answer is final: the same answer again returns the same
/// result, a different one is `409 answer_final`. Under other policies answers may change
/// until the attempt is finished, and nothing about correctness is returned. Under sequential
/// navigation only the current question (the first unanswered in the attempt's order) takes an
/// answer, and it is final: an earlier or a later one is `409 not_current_question` (the same
/// answer to the question just answered returns its result again, so a retry is safe).
#[utoipa::path(put, path = "/v1/attempts/{id}/responses/{question_id}", tag = "attempts", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The attempt's id"),
        ("question_id" = String, Path, description = "The question's id in this attempt"),
    ),
    request_body = AnswerRequest,
    responses(
        (status = 200, description = "Recorded (durably) and graded", body = AnswerOutcome),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not your attempt to answer (course staff: `forbidden`), or you are no longer enrolled in its course (`not_enrolled`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such attempt or question", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Finished (`attempt_finished`), past the deadline (`deadline_passed`), answered already (`answer_final`, with `recorded`), not the current question under sequential navigation (`not_current_question`), a live session's attempt (`live_only`), or your practice attempt while you sit an exam of its quiz (`practice_during_exam`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The answer does not fit the question", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn answer(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(Uuid, String)>,
    body: JsonObject<AnswerRequest>,
) -> Result<HttpResponse, ApiError> {
    let (attempt_id, question_id) = path.into_inner();
    answer_to(&state, &user, attempt_id, &question_id, &body, None).await
}

/// What a live session takes now: an answer to its open question only (its content key), the
/// first answer final, and nothing of the key in the reply (it is shown when the question
/// closes). The session's timer is checked by `live` before.
pub struct LiveTurn<'a> {
    pub question_key: &'a str,
}

/// Answers a question of an attempt: grading, `record_response` and its outbox event, the
/// same for every attempt; `live`: the attempt is a live session's, answered through it.
pub async fn answer_to(
    state: &AppState,
    user: &CurrentUser,
    attempt_id: Uuid,
    question_id: &str,
    body: &AnswerRequest,
    live: Option<&LiveTurn<'_>>,
) -> Result<HttpResponse, ApiError> {
    if let Some(done) = answer_once(state, user, attempt_id, question_id, body, live).await? {
        return Ok(done);
    }
    // A regrade moved the attempt to a corrected version after its layout was cached: lay it
    // out again and grade the answer under the new key (the question keeps its id).
    state.attempts.forget(&[attempt_id]);
    answer_once(state, user, attempt_id, question_id, body, live)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                Code::AttemptRegraded,
                "The attempt was moved to a corrected version of its quiz while this answer was on its way; read the attempt again and answer.",
            )
        })
}

/// [`answer`], once: `None` when a regrade moved the attempt (nothing was written).
async fn answer_once(
    state: &AppState,
    user: &CurrentUser,
    attempt_id: Uuid,
    question_id: &str,
    body: &AnswerRequest,
    live: Option<&LiveTurn<'_>>,
) -> Result<Option<HttpResponse>, ApiError> {
    let (opened, viewer) = visible_attempt(state, attempt_id, user).await?;
    if viewer != Viewer::Learner {
        return Err(only_the_learner());
    }
    if opened.row.live_session_id.is_some() && live.is_none() {
        return Err(ApiError::new(
            Code::LiveOnly,
            "This attempt belongs to a live session: answer the open question through the session.",
        ));
    }
    let now = state.clock.now();
    // Past the deadline as it was when the attempt was opened: the deadline may have moved
    // since (an override, a changed policy), so look at the attempt as it is now.
    if opened.row.deadline.is_some_and(|d| d <= now) {
        let row = settle(state, current(state, attempt_id).await?).await?;
        if row.finished_at.is_some() {
            return Err(closed(&row));
        }
    }
    let served = &opened.served;
    let graded = served
        .question_by_id(question_id)
        .ok_or_else(|| {
            ApiError::new(
                Code::QuestionNotFound,
                "This attempt has no question with this id.",
            )
        })
        .and_then(|q| {
            if live.is_some_and(|l| l.question_key != q.key) {
                return Err(crate::live::question_closed());
            }
            let answer = content_answer(served, q, body)?;
            let grade = grading::grade(q, &answer).map_err(|e| {
                ApiError::new(Code::InvalidAnswer, format!("{e}."))
                    .with_status(StatusCode::UNPROCESSABLE_ENTITY)
            })?;
            Ok((q, answer, grade))
        });
    let (q, answer, grade) = match graded {
        Ok(graded) => graded,
        // A finished attempt takes no answer at all, whatever is wrong with this one.
        Err(e) => {
            let row = current(state, attempt_id).await?;
            return Err(if row.finished_at.is_some() {
                closed(&row)
            } else {
                e
            });
        }
    };
    // Scored by this question's rule in the assignment as the statement read it.
    let outcome = |r: &store::ResponseRow, immediate: bool, scoring: Scoring| AnswerOutcome {
        question_id: question_id.to_string(),
        response: served.response_view(q, r),
        result: (immediate && live.is_none()).then(|| {
            let rules = QuestionRules::of(&q.key, q.points, scoring);
            served.result(q, Some(r), &rules)
        }),
    };
    let sequential = opened.row.sequential();
    // Live: the first answer stands (the statement's sequential form, with nothing before).
    let before = match live {
        Some(_) => Some(Vec::new()),
        None => sequential.then(|| served.keys_before(q)),
    };
    // One statement: it checks that the attempt is open and this learner's (and, under
    // sequential navigation, that this is the current question), and writes.
    let mut conn = state.quick.acquire().await?;
    let recorded = store::record_response(
        &mut *conn,
        attempt_id,
        user.id,
        &q.key,
        &answer,
        grade,
        now,
        served.version.id,
        before.as_deref(),
    )
    .await?;
    conn.release();
    match recorded {
        Recorded::Written {
            row,
            immediate,
            scoring,
        } => Ok(Some(
            HttpResponse::Ok().json(outcome(&row, immediate, scoring)),
        )),
        Recorded::AlreadyAnswered { immediate, scoring } => {
            let recorded = store::response(&state.pool, attempt_id, &q.key)
                .await?
                .ok_or_else(|| ApiError::internal("a recorded response vanished"))?;
            if recorded.answer.0 == answer {
                return Ok(Some(
                    HttpResponse::Ok().json(outcome(&recorded, immediate, scoring)),
                ));
            }
            if sequential && live.is_none() {
                return Err(not_current_question());
            }
            Err(ApiError {
                recorded: serde_json::to_value(outcome(&recorded, immediate, scoring)).ok(),
                ..ApiError::new(
                    Code::AnswerFinal,
                    if live.is_some() {
                        "This question was answered already; in a live session the first answer stands."
                    } else {
                        "This question was answered already and, under immediate feedback, the first answer stands."
                    },
                )
            })
        }
        Recorded::NotInTurn => Err(not_current_question()),
        Recorded::Closed => Err(refusal(state, attempt_id).await?),
        Recorded::Moved => Ok(None),
    }
}

/// Clears your answer to one question ("Clear my choice"): the question is unanswered again.
/// Only while the attempt is open and before its deadline, and only where the answer is not
/// final: under immediate feedback an answered question has shown its key (`409
/// answer_final`), under sequential navigation every answer is final, and so is every answer
/// in a live session (`409 live_session_running`). Clearing an unanswered question changes
/// nothing. Writes the `response.cleared` event with the
/// deletion when a consumer wants it.
#[utoipa::path(delete, path = "/v1/attempts/{id}/responses/{question_id}", tag = "attempts", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The attempt's id"),
        ("question_id" = String, Path, description = "The question's id in this attempt"),
    ),
    responses(
        (status = 204, description = "Cleared: the question is unanswered"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not your attempt (course staff: `forbidden`), or you are no longer enrolled in its course (`not_enrolled`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such attempt or question", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Finished (`attempt_finished`), past the deadline (`deadline_passed`), the answer is final (`answer_final`: immediate feedback showed its key, or sequential navigation), a live session's attempt while the session runs (`live_session_running`), or your practice attempt while you sit an exam of its quiz (`practice_during_exam`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn clear_answer(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(Uuid, String)>,
) -> Result<HttpResponse, ApiError> {
    let (attempt_id, question_id) = path.into_inner();
    let (opened, viewer) = visible_attempt(&state, attempt_id, &user).await?;
    if viewer != Viewer::Learner {
        return Err(only_the_learner());
    }
    let now = state.clock.now();
    if opened.row.deadline.is_some_and(|d| d <= now) {
        let row = settle(&state, current(&state, attempt_id).await?).await?;
        if row.finished_at.is_some() {
            return Err(closed(&row));
        }
    }
    let q = opened.served.question_by_id(&question_id).ok_or_else(|| {
        ApiError::new(
            Code::QuestionNotFound,
            "This attempt has no question with this id.",
        )
    })?;
    let final_answer = || {
        ApiError::new(
            Code::AnswerFinal,
            "This answer is final: under immediate feedback it has shown its key, and under sequential navigation every answer stands.",
        )
    };
    // Every answer stands under sequential navigation, and in a live session (which alone
    // finishes its attempts).
    if opened.row.sequential() || opened.row.live_session_id.is_some() {
        let row = current(&state, attempt_id).await?;
        return Err(match row.finished_at {
            Some(_) => closed(&row),
            None if row.live_session_id.is_some() => crate::live::session_running(),
            None => final_answer(),
        });
    }
    let mut conn = state.quick.acquire().await?;
    let cleared = store::clear_response(&mut *conn, attempt_id, user.id, &q.key, now).await?;
    conn.release();
    match cleared {
        store::Cleared::Cleared => Ok(HttpResponse::NoContent().finish()),
        store::Cleared::Final => Err(final_answer()),
        store::Cleared::Closed => Err(refusal(&state, attempt_id).await?),
    }
}

/// Why the answer's or the clearing's statement found the attempt closed to its learner: they
/// were taken out of its course, or it is finished (perhaps just now, at its deadline).
async fn refusal(state: &AppState, attempt_id: Uuid) -> Result<ApiError, ApiError> {
    let row = current(state, attempt_id).await?;
    if !still_enrolled(state, &row).await? {
        return Ok(not_enrolled());
    }
    Ok(closed(&settle(state, row).await?))
}

/// Sequential navigation takes an answer only to the current question.
fn not_current_question() -> ApiError {
    ApiError::new(
        Code::NotCurrentQuestion,
        "Under sequential navigation only the current question (the first unanswered) takes an answer; answered questions are final.",
    )
}

/// Why a finished attempt takes no more answers.
fn closed(row: &store::AttemptRow) -> ApiError {
    if row.finish_reason.as_deref() == Some("deadline") {
        ApiError::new(
            Code::DeadlinePassed,
            "The deadline has passed: the answer was not recorded and the attempt is finished with what was answered.",
        )
    } else {
        ApiError::new(
            Code::AttemptFinished,
            "This attempt is finished; answers are closed.",
        )
    }
}

/// Finishes your attempt and returns the result, with as much review as the policy allows.
/// Finishing a finished attempt returns it as it is. A live session's attempt is finished by
/// the session's end, not by its learner. Once you are taken out of its course, the attempt
/// stays as it was (its deadline, if it has one, still finishes it).
#[utoipa::path(post, path = "/v1/attempts/{id}/finish", tag = "attempts", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The attempt's id")),
    responses(
        (status = 200, description = "Finished", body = AttemptView),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not your attempt to finish (course staff: `forbidden`), or you are no longer enrolled in its course (`not_enrolled`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such attempt, or not yours", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A live session's attempt while the session runs (`live_session_running`), or your practice attempt while you sit an exam of its quiz (`practice_during_exam`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn finish(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let (opened, viewer) = visible_attempt(&state, *id, &user).await?;
    if viewer != Viewer::Learner {
        return Err(only_the_learner());
    }
    let row = current(&state, opened.row.id).await?;
    if !still_enrolled(&state, &row).await? {
        return Err(not_enrolled());
    }
    let row = settle(&state, row).await?;
    if row.finished_at.is_none() {
        // A live attempt's questions are the session's to open: its end finishes it.
        if row.live_session_id.is_some() {
            return Err(crate::live::session_running());
        }
        store::finish(&state.pool, row.id, "submitted", state.clock.now()).await?;
    }
    let row = current(&state, row.id).await?;
    Ok(HttpResponse::Ok()
        .content_type(header::ContentType::json())
        .body(view(&state, &row, Viewer::Learner).await?))
}

/// Your attempts, newest first, a page at a time (see `pagination`), with your grade for
/// each assignment on the page.
#[utoipa::path(get, path = "/v1/me/attempts", tag = "attempts", security(("bearer" = [])),
    params(PageQuery),
    responses(
        (status = 200, description = "A page of your attempts, and grades", body = AttemptList, headers(("Link" = String, description = "`<…>; rel=\"next\"`: the next page, absent on the last"))),
        (status = 400, description = "Malformed query, or `limit` out of range (`invalid_limit`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A cursor this list did not give (`invalid_cursor`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn my_attempts(
    state: web::Data<AppState>,
    user: CurrentUser,
    query: web::Query<PageQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let list = format!("my-attempts:{}", user.id);
    let page = (state.cursors).page(&list, query.limit, query.cursor.as_deref())?;
    let rows = store::for_user(&state.pool, user.id, page.after, page.fetch()).await?;
    let (rows, next) = (state.cursors).cut(&list, rows, page.limit, |r| (r.started_at, r.id));
    let all = store::of_pairs(&state.pool, &super::pairs(&rows)).await?;
    let body = attempt_list(&rows, &all, next);
    Ok(pagination::respond(&req, body.next.as_deref(), &body))
}

/// Every attempt at an assignment, with each learner's grade. The course's instructors and
/// admins (practice assignments: admins).
#[utoipa::path(get, path = "/v1/assignments/{id}/attempts", tag = "attempts", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The assignment's id"), PageQuery),
    responses(
        (status = 200, description = "A page of the attempts (by learner, then number), and grades", body = AttemptList, headers(("Link" = String, description = "`<…>; rel=\"next\"`: the next page, absent on the last"))),
        (status = 400, description = "Malformed id or query, or `limit` out of range (`invalid_limit`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A cursor this list did not give (`invalid_cursor`)", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn assignment_attempts(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    query: web::Query<PageQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let assignment = visible_assignment(&state.pool, *id, &user).await?;
    match assignment.course_id {
        Some(course) => {
            crate::courses::taught_course(&state.pool, course, &user).await?;
        }
        None => user.require(&[crate::auth::Role::Admin])?,
    }
    let list = format!("attempts:{}", assignment.id);
    let page = (state.cursors).page::<store::AssignmentKey>(
        &list,
        query.limit,
        query.cursor.as_deref(),
    )?;
    let rows = store::for_assignment(
        &state.pool,
        assignment.id,
        page.after.as_ref(),
        page.fetch(),
    )
    .await?;
    let (rows, next) = (state.cursors).cut(&list, rows, page.limit, |r| {
        (r.display_name.clone(), r.user_id, r.number)
    });
    let all = store::of_pairs(&state.pool, &super::pairs(&rows)).await?;
    let body = attempt_list(&rows, &all, next);
    Ok(pagination::respond(&req, body.next.as_deref(), &body))
}

/// This module's endpoints (resources, not method-guarded routes, so that a wrong method is a
/// `405`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    use crate::telemetry::resource;
    use web::{delete, get, post, put};
    cfg.service(
        resource("/v1/assignments/{id}/attempts")
            .route(get().to(assignment_attempts))
            .route(post().to(start_assignment_attempt)),
    )
    .service(resource("/v1/quizzes/{slug}/attempts").route(post().to(start_practice_attempt)))
    .service(resource("/v1/attempts/{id}").route(get().to(get_attempt)))
    .service(resource("/v1/attempts/{id}/media/{sha256}").route(get().to(get_attempt_media)))
    .service(
        resource("/v1/attempts/{id}/responses/{question_id}")
            .route(put().to(answer))
            .route(delete().to(clear_answer)),
    )
    .service(resource("/v1/attempts/{id}/finish").route(post().to(finish)))
    .service(resource("/v1/me/attempts").route(get().to(my_attempts)));
}

/// This module's part of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    start_assignment_attempt,
    start_practice_attempt,
    get_attempt,
    get_attempt_media,
    answer,
    clear_answer,
    finish,
    my_attempts,
    assignment_attempts,
))]
pub struct Api;
