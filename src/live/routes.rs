//! Live mode's endpoints and its Server-Sent Events streams.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header;
use actix_web::web::{Bytes, Data};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use tokio::sync::{broadcast, watch};
use uuid::Uuid;

use super::hub::{Event, Slot, Tally};
use super::machine::{Phase, Progress};
use super::models::{
    CreateSession, Distribution, IdCount, JoinRequest, Joined, Leader, LearnerDistribution,
    LearnerQuestion, OpenQuestion, PhaseName, SessionView, StaffDistribution, StaffOption,
    StaffOptionCount, StaffQuestion, TallyView,
};
use super::store::{self, SessionRow};
use super::{session_not_found, snapshot, version_of};
use crate::attempts::models::AnswerRequest;
use crate::attempts::review::{Seen, Sight};
use crate::attempts::routes::{LiveTurn, answer_to};
use crate::attempts::{Opened, Viewer};
use crate::auth::CurrentUser;
use crate::error::{ApiError, Code, Problem};
use crate::extract::{JsonObject, LaterJson};
use crate::quizzes::QuizVersion;
use crate::state::AppState;

/// How often a quiet stream sends a comment, so that proxies keep it open.
const KEEPALIVE: Duration = Duration::from_secs(15);

fn events_path(id: Uuid) -> String {
    format!("/v1/live/sessions/{id}/events")
}

async fn session_view(state: &AppState, row: &SessionRow) -> Result<SessionView, ApiError> {
    let version = version_of(state, row).await?;
    let phase = match snapshot(row, &version).phase(state.clock.now()) {
        Phase::Lobby => PhaseName::Lobby,
        Phase::Open { .. } => PhaseName::Open,
        Phase::Closed { .. } => PhaseName::Closed,
        Phase::Ended => PhaseName::Ended,
    };
    Ok(SessionView {
        id: row.id,
        assignment_id: row.assignment_id,
        code: row.code.clone(),
        code_expires_at: row.code_expires_at,
        question_count: version.content.questions.len(),
        leaderboard: row.leaderboard,
        phase,
        index: row.question_index.map(|i| i as usize),
        closes_at: row.closes_at,
        ended_at: row.ended_at,
        joined: store::participant_count(&state.pool, row.id).await?,
        events: events_path(row.id),
    })
}

/// Starts a live session of an assignment: a join code for learners, the questions shown one
/// at a time by you. The course's instructors (a practice assignment: the quiz's authors).
#[utoipa::path(post, path = "/v1/assignments/{id}/live", tag = "live", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The assignment's id")),
    request_body(content = Option<CreateSession>, description = "Optional"),
    responses(
        (status = 201, description = "The session, with its code", body = SessionView),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course (or author this quiz)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The quiz draws from question banks (`live_not_supported`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_session(
    state: Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let assignment = super::runnable(&state, *id, &user).await?;
    let request: CreateSession = crate::extract::optional_object(&body)?;
    let row = super::create(&state, &user, &assignment, request.leaderboard).await?;
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, format!("/v1/live/sessions/{}", row.id)))
        .json(session_view(&state, &row).await?))
}

/// A live session as its instructor sees it.
#[utoipa::path(get, path = "/v1/live/sessions/{id}", tag = "live", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The session's id")),
    responses(
        (status = 200, description = "The session", body = SessionView),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such session, or not yours to run", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_session(
    state: Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let row = super::staff_session(&state, *id, &user).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(session_view(&state, &row).await?))
}

/// Opens the next question with a timer; answers are taken until it runs out (by the server's
/// clock) or you close it.
#[utoipa::path(post, path = "/v1/live/sessions/{id}/next", tag = "live", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The session's id")),
    request_body = OpenQuestion,
    responses(
        (status = 200, description = "The question is open", body = SessionView),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such session, or not yours to run", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A question is open (`live_question_open`), none is left (`live_no_more_questions`), or the session ended (`live_session_ended`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`seconds` out of range (`invalid_timer`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn next_question(
    state: Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    body: LaterJson<OpenQuestion>,
) -> Result<HttpResponse, ApiError> {
    let row = super::staff_session(&state, *id, &user).await?;
    let body = body.parse()?;
    let row = super::open_next(&state, &row, body.seconds).await?;
    Ok(HttpResponse::Ok().json(session_view(&state, &row).await?))
}

/// Closes the open question now, before its timer runs out.
#[utoipa::path(post, path = "/v1/live/sessions/{id}/close", tag = "live", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The session's id")),
    responses(
        (status = 200, description = "Closed", body = SessionView),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such session, or not yours to run", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "No question is open (`live_question_closed`), or the session ended (`live_session_ended`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn close_question(
    state: Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let row = super::staff_session(&state, *id, &user).await?;
    let row = super::close(&state, &row).await?;
    Ok(HttpResponse::Ok().json(session_view(&state, &row).await?))
}

/// Ends the session: the code joins nothing more, and every participant's attempt is
/// finished and graded. Ending an ended session returns it as it is.
#[utoipa::path(post, path = "/v1/live/sessions/{id}/end", tag = "live", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The session's id")),
    responses(
        (status = 200, description = "Ended", body = SessionView),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such session, or not yours to run", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn end_session(
    state: Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let row = super::staff_session(&state, *id, &user).await?;
    let row = super::end(&state, &row).await?;
    Ok(HttpResponse::Ok().json(session_view(&state, &row).await?))
}

/// The answers to the question shown now (or last), counted by option, with the key, and
/// the leaderboard when the session has it on. The instructor's view.
#[utoipa::path(get, path = "/v1/live/sessions/{id}/distribution", tag = "live", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The session's id")),
    responses(
        (status = 200, description = "The distribution", body = StaffDistribution),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such session, or not yours to run", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "No question shown yet (`live_question_closed`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_distribution(
    state: Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let row = super::staff_session(&state, *id, &user).await?;
    let (Some(index), Some(key)) = (row.question_index, row.question_key.as_deref()) else {
        return Err(ApiError::new(
            Code::LiveQuestionClosed,
            "No question has been shown yet.",
        ));
    };
    let version = version_of(&state, &row).await?;
    let d = super::distribution(&state, row.id, key).await?;
    let leaders = if row.leaderboard {
        Some(store::leaders(&state.pool, row.id, super::LEADERS).await?)
    } else {
        None
    };
    let body = staff_distribution(&version, index as usize, key, &d, leaders.as_deref());
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(body))
}

/// An image of a question of the session's quiz version (`image.url` in the projector's
/// `question` event), to the session's staff: those who may run it, who read its key anyway.
#[utoipa::path(get, path = "/v1/live/sessions/{id}/media/{sha256}", tag = "live", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The session's id"),
        ("sha256" = String, Path, description = "The image's SHA-256, as its `url` names it"),
        ("If-None-Match" = Option<String>, Header, description = "The entity tag held: the image's hash, quoted"),
    ),
    responses(
        crate::quizzes::media::ImageResponses,
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such session, or not yours to run; no such image in its quiz (`media_not_found`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_session_media(
    state: Data<AppState>,
    user: CurrentUser,
    path: web::Path<(Uuid, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (id, sha256) = path.into_inner();
    let row = super::staff_session(&state, id, &user).await?;
    let not_found = crate::quizzes::media::media_not_found;
    if !crate::quizzes::media::plausible_hash(&sha256) {
        return Err(not_found());
    }
    let version = version_of(&state, &row).await?;
    let image = (version.content.questions.iter())
        .filter_map(|q| q.image.as_ref())
        .find(|i| i.sha256 == sha256)
        .ok_or_else(not_found)?;
    crate::quizzes::media::serve(&state, &req, image).await
}

/// Joins a live session with its code: your attempt in it (`201` new, `200` joined before).
/// Only those who may take the assignment join; limited per client address and per account.
#[utoipa::path(post, path = "/v1/live/join", tag = "live", security(("bearer" = [])),
    request_body = JoinRequest,
    responses(
        (status = 201, description = "Joined", body = Joined),
        (status = 200, description = "Joined before: the same attempt", body = Joined),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No open session has this code (`live_session_not_found`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Not open yet (`not_open`), closed (`closed`), archived, no attempts left (`attempts_exhausted`), or an unfinished attempt started another way (`live_attempt_conflict`)", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many joins from your address or account (`too_many_joins`)", body = Problem, content_type = "application/problem+json", headers(("Retry-After" = u32, description = "Seconds to wait"))),
    ))]
pub async fn join_session(
    state: Data<AppState>,
    user: CurrentUser,
    req: HttpRequest,
    body: JsonObject<JoinRequest>,
) -> Result<HttpResponse, ApiError> {
    let accept = req
        .headers()
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    let address = state.trusted_proxies.client_ip(&req);
    let (row, attempt_id, new) = super::join(&state, &user, &body.code, address, accept).await?;
    let version = version_of(&state, &row).await?;
    let joined = Joined {
        session_id: row.id,
        attempt_id,
        question_count: version.content.questions.len(),
        events: events_path(row.id),
    };
    Ok(if new {
        HttpResponse::Created().json(joined)
    } else {
        HttpResponse::Ok().json(joined)
    })
}

/// Answers the open question of a session you joined (its id as your attempt serves it):
/// graded and recorded like any answer, but only while it is open and before its timer runs
/// out; the first answer stands, and nothing of the key comes back until it closes.
#[utoipa::path(put, path = "/v1/live/sessions/{id}/responses/{question_id}", tag = "live", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The session's id"),
        ("question_id" = String, Path, description = "The question's id in your attempt"),
    ),
    request_body = AnswerRequest,
    responses(
        (status = 200, description = "Recorded (durably); no result while the question is open", body = crate::attempts::models::AnswerOutcome),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such session, or you did not join it; no such question", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Not the open question, or its timer has run out (`live_question_closed`); answered already (`answer_final`); the session ended (`live_session_ended`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The answer does not fit the question", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn live_answer(
    state: Data<AppState>,
    user: CurrentUser,
    path: web::Path<(Uuid, String)>,
    body: JsonObject<AnswerRequest>,
) -> Result<HttpResponse, ApiError> {
    let (session, question_id) = path.into_inner();
    let (row, attempt) = store::for_learner(&state.pool, session, user.id)
        .await?
        .ok_or_else(session_not_found)?;
    let version = version_of(&state, &row).await?;
    let now = state.clock.now();
    let index = row.question_index.map_or(0, |i| i as usize);
    snapshot(&row, &version)
        .accepts(index, now)
        .map_err(super::refused)?;
    let key = row.question_key.as_deref().unwrap_or_default();
    let res = answer_to(
        &state,
        &user,
        attempt,
        &question_id,
        &body,
        Some(&LiveTurn { question_key: key }),
    )
    .await?;
    super::answered(&state, session, index).await;
    Ok(res)
}

fn staff_distribution<'a>(
    version: &'a QuizVersion,
    index: usize,
    key: &str,
    d: &Distribution,
    leaders: Option<&[store::Standing]>,
) -> StaffDistribution<'a> {
    let chain = version.locale_chain(&[]);
    let q = version.content.question(key);
    let options = q
        .map(|q| {
            q.options
                .iter()
                .map(|o| StaffOptionCount {
                    key: &o.key,
                    text: text_in(&o.text, &chain),
                    correct: o.correct,
                    answers: d
                        .options
                        .iter()
                        .find(|c| c.key == o.key)
                        .map_or(0, |c| c.answers),
                })
                .collect()
        })
        .unwrap_or_default();
    StaffDistribution {
        index,
        total: d.total,
        options,
        correct: d.correct,
        wrong: d.wrong,
        leaders: leaders.map(|l| {
            l.iter()
                .map(|s| Leader {
                    display_name: s.display_name.clone(),
                    points: s.points,
                })
                .collect()
        }),
    }
}

/// A text in the first locale of `chain` that has it (owned by the version).
fn text_in<'a>(text: &'a crate::i18n::Text, chain: &[String]) -> &'a str {
    chain
        .iter()
        .find_map(|l| text.get(l).map(String::as_str))
        .or_else(|| text.values().next().map(String::as_str))
        .unwrap_or("")
}

fn frame(event: &str, data: &impl Serialize) -> Bytes {
    let json = serde_json::to_string(data).expect("an event serializes");
    Bytes::from(format!("event: {event}\ndata: {json}\n\n"))
}

/// Who a stream is for.
enum Audience {
    Staff {
        user: CurrentUser,
        version: Arc<QuizVersion>,
        tally: watch::Receiver<Tally>,
    },
    Learner {
        attempt: Arc<Opened>,
    },
}

struct Stream {
    state: Data<AppState>,
    session: SessionRow,
    question_count: usize,
    audience: Audience,
    events: broadcast::Receiver<Arc<Event>>,
    queue: VecDeque<Bytes>,
    keepalive: tokio::time::Interval,
    done: bool,
    _slot: Slot,
}

impl Stream {
    /// The frames an event makes for this stream.
    async fn render(&mut self, event: &Event) -> Result<(), ApiError> {
        // Who runs the session is decided at every step, as at every request: a stream opened
        // by someone who no longer runs it ends before it shows another question or key.
        if let (Event::Opened { .. } | Event::Closed { .. }, Audience::Staff { user, .. }) =
            (event, &self.audience)
            && !super::is_staff(&self.state, &self.session, user).await?
        {
            self.done = true;
            return Ok(());
        }
        match (event, &self.audience) {
            (Event::Ended, Audience::Learner { attempt }) => {
                let frame = frame(
                    "ended",
                    &serde_json::json!({ "attempt_id": attempt.row.id }),
                );
                self.queue.push_back(frame);
                self.done = true;
            }
            (Event::Ended, Audience::Staff { .. }) => {
                self.queue.push_back(frame(
                    "ended",
                    &serde_json::json!({ "session_id": self.session.id }),
                ));
                self.done = true;
            }
            (
                Event::Opened {
                    index,
                    key,
                    closes_at,
                },
                _,
            ) => {
                let f = self.question_frame(*index, key, *closes_at, false).await?;
                self.queue.extend(f);
            }
            (
                Event::Closed {
                    index,
                    key,
                    distribution,
                    leaders,
                },
                _,
            ) => {
                let f = self
                    .closed_frame(*index, key, distribution, leaders.as_deref())
                    .await?;
                self.queue.extend(f);
            }
        }
        Ok(())
    }

    async fn question_frame(
        &self,
        index: usize,
        key: &str,
        closes_at: chrono::DateTime<chrono::Utc>,
        check_answered: bool,
    ) -> Result<Option<Bytes>, ApiError> {
        let now = self.state.clock.now();
        match &self.audience {
            Audience::Staff { version, .. } => {
                let chain = version.locale_chain(&[]);
                let Some(q) = version.content.question(key) else {
                    return Ok(None);
                };
                let prompt = text_in(&q.prompt, &chain);
                let lang = chain.first().map_or("", String::as_str);
                Ok(Some(frame(
                    "question",
                    &StaffQuestion {
                        index,
                        question_count: self.question_count,
                        closes_at,
                        kind: q.kind,
                        prompt,
                        lang,
                        options: q
                            .options
                            .iter()
                            .map(|o| StaffOption {
                                key: &o.key,
                                text: text_in(&o.text, &chain),
                            })
                            .collect(),
                        image: q.image.as_ref().map(|i| {
                            let base = format!("/v1/live/sessions/{}", self.session.id);
                            crate::quizzes::models::QuestionImage::new(&base, i, &chain)
                        }),
                    },
                )))
            }
            Audience::Learner { attempt } => {
                let served = &attempt.served;
                let Some(q) = served.version.content.question(key) else {
                    return Ok(None);
                };
                let answered = check_answered
                    && crate::attempts::store::response(&self.state.pool, attempt.row.id, key)
                        .await?
                        .is_some();
                Ok(Some(frame(
                    "question",
                    &LearnerQuestion {
                        index,
                        question_count: self.question_count,
                        closes_at,
                        seconds_left: super::seconds_left(closes_at, now),
                        answered,
                        question: served.question_view(
                            attempt.row.id,
                            q,
                            &attempt.row.question_rules,
                        ),
                    },
                )))
            }
        }
    }

    async fn closed_frame(
        &self,
        index: usize,
        key: &str,
        d: &Distribution,
        leaders: Option<&[store::Standing]>,
    ) -> Result<Option<Bytes>, ApiError> {
        match &self.audience {
            Audience::Staff { version, .. } => Ok(Some(frame(
                "closed",
                &staff_distribution(version, index, key, d, leaders),
            ))),
            Audience::Learner { attempt } => {
                let served = &attempt.served;
                let Some(q) = served.version.content.question(key) else {
                    return Ok(None);
                };
                let response =
                    crate::attempts::store::response(&self.state.pool, attempt.row.id, key).await?;
                // This close reveals the question, as far as the assignment's feedback timing
                // allows it now: the rule of every read of the attempt, judged on the attempt as
                // it stands (the policy may have changed since the layout was cached).
                let row = crate::attempts::current(&self.state, attempt.row.id).await?;
                let place = served.index(q);
                let sight = Sight {
                    reveal: crate::attempts::reveal_for(&self.state, &row, Viewer::Learner).await?,
                    live: Some(Progress {
                        opened: place + 1,
                        revealed: place + 1,
                    }),
                    one_at_a_time: false,
                };
                let result = (sight.of(place, response.is_some()) == Seen::Judged)
                    .then(|| served.result(q, response.as_ref(), &row.question_rules));
                Ok(Some(frame(
                    "closed",
                    &LearnerDistribution {
                        index,
                        question_id: served.question_id(q),
                        total: d.total,
                        options: d
                            .options
                            .iter()
                            .filter_map(|c| {
                                Some(IdCount {
                                    id: served.option_id(q, &c.key)?,
                                    answers: c.answers,
                                })
                            })
                            .collect(),
                        correct: d.correct,
                        wrong: d.wrong,
                        answered: response.is_some(),
                        result,
                    },
                )))
            }
        }
    }

    /// What a stream sends first: where the session stands (a reconnecting client catches up).
    async fn snapshot(&mut self) -> Result<(), ApiError> {
        let now = self.state.clock.now();
        let version = version_of(&self.state, &self.session).await?;
        let phase = snapshot(&self.session, &version).phase(now);
        let hello = match &self.audience {
            Audience::Staff { .. } => serde_json::json!({
                "session_id": self.session.id,
                "code": self.session.code,
                "question_count": self.question_count,
                "leaderboard": self.session.leaderboard,
            }),
            Audience::Learner { attempt } => serde_json::json!({
                "session_id": self.session.id,
                "attempt_id": attempt.row.id,
                "question_count": self.question_count,
            }),
        };
        self.queue.push_back(frame("hello", &hello));
        let key = self.session.question_key.clone().unwrap_or_default();
        match phase {
            Phase::Lobby => {}
            Phase::Open { index, closes_at } => {
                if let Some(f) = self.question_frame(index, &key, closes_at, true).await? {
                    self.queue.push_back(f);
                }
            }
            Phase::Closed { index } => {
                let d = super::distribution(&self.state, self.session.id, &key).await?;
                let leaders = if self.session.leaderboard {
                    Some(store::leaders(&self.state.pool, self.session.id, super::LEADERS).await?)
                } else {
                    None
                };
                if let Some(f) = self
                    .closed_frame(index, &key, &d, leaders.as_deref())
                    .await?
                {
                    self.queue.push_back(f);
                }
            }
            Phase::Ended => {
                self.render(&Event::Ended).await?;
            }
        }
        if let Audience::Staff { tally, .. } = &mut self.audience {
            let joined = store::participant_count(&self.state.pool, self.session.id).await?;
            let answers = match phase {
                Phase::Open { .. } => {
                    super::distribution(&self.state, self.session.id, &key)
                        .await?
                        .total
                }
                _ => 0,
            };
            let mut t = tally.borrow_and_update().clone();
            t.joined = t.joined.max(joined);
            t.answers = t.answers.max(answers);
            self.queue.push_back(tally_frame(&t));
        }
        Ok(())
    }

    /// The next frame; `None` ends the stream (the session ended, or this stream fell too far
    /// behind: its client reconnects and starts from a snapshot).
    async fn next(mut self) -> Option<(Result<Bytes, actix_web::Error>, Self)> {
        loop {
            if let Some(f) = self.queue.pop_front() {
                return Some((Ok(f), self));
            }
            if self.done {
                return None;
            }
            let tally_changed = async {
                match &mut self.audience {
                    Audience::Staff { tally, .. } => tally.changed().await.is_ok(),
                    Audience::Learner { .. } => std::future::pending().await,
                }
            };
            enum Woke {
                Event(Result<Arc<Event>, broadcast::error::RecvError>),
                Tally(bool),
                Keepalive,
            }
            let woke = tokio::select! {
                e = self.events.recv() => Woke::Event(e),
                t = tally_changed => Woke::Tally(t),
                _ = self.keepalive.tick() => Woke::Keepalive,
            };
            match woke {
                Woke::Event(Ok(event)) => {
                    if let Err(e) = self.render(&event).await {
                        tracing::warn!(error = ?e.detail, "live: a stream event failed");
                        return None;
                    }
                }
                // Lagged: a slow consumer is dropped, not buffered; closed: the session ended
                // on this instance.
                Woke::Event(Err(_)) => return None,
                Woke::Tally(true) => {
                    if let Audience::Staff { tally, .. } = &mut self.audience {
                        let t = tally.borrow_and_update().clone();
                        self.queue.push_back(tally_frame(&t));
                    }
                }
                Woke::Tally(false) => return None,
                Woke::Keepalive => return Some((Ok(Bytes::from_static(b": keepalive\n\n")), self)),
            }
        }
    }
}

fn tally_frame(t: &Tally) -> Bytes {
    frame(
        "tally",
        &TallyView {
            joined: t.joined,
            recent: t.recent.iter().map(String::as_str).collect(),
            index: t.index,
            answers: t.answers,
        },
    )
}

/// The session's events as Server-Sent Events (`text/event-stream`). For its instructor:
/// `hello`, `question` (no key), `tally` (joins and answers, live), `closed` (the distribution
/// with the key, and the leaderboard if on), `ended`. For a learner who joined: `hello`,
/// `question` (in their locale, their option ids, no key), `closed` (the distribution by
/// their option ids, and their result as the feedback timing allows), `ended`. A stream starts
/// with where the session stands; a stream that falls behind is closed (reconnect).
#[utoipa::path(get, path = "/v1/live/sessions/{id}/events", tag = "live", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The session's id")),
    responses(
        (status = 200, description = "The event stream", body = String, content_type = "text/event-stream"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such session, or you neither run nor joined it", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many streams open for you or this session (`too_many_streams`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn session_events(
    state: Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let session = store::by_id(&state.pool, *id)
        .await?
        .ok_or_else(session_not_found)?;
    let version = version_of(&state, &session).await?;
    let audience = if super::is_staff(&state, &session, &user).await? {
        None
    } else {
        let attempt = store::participant(&state.pool, session.id, user.id)
            .await?
            .ok_or_else(session_not_found)?;
        let attempt = crate::attempts::opened(&state, attempt)
            .await?
            .ok_or_else(session_not_found)?;
        Some(attempt)
    };
    let staff = audience.is_none();
    let (slot, hub) = state.live.slot(session.id, user.id, staff).ok_or_else(|| {
        ApiError::new(
            Code::TooManyStreams,
            "Too many event streams are open for you or for this session; close one first.",
        )
    })?;
    // Subscribed before the snapshot is read: nothing that happens after it is missed.
    let events = hub.events.subscribe();
    let audience = match audience {
        None => Audience::Staff {
            user,
            version: version.clone(),
            tally: hub.tally.subscribe(),
        },
        Some(attempt) => Audience::Learner { attempt },
    };
    let mut keepalive = tokio::time::interval(KEEPALIVE);
    keepalive.reset();
    let mut stream = Stream {
        state: state.clone(),
        question_count: version.content.questions.len(),
        session,
        audience,
        events,
        queue: VecDeque::new(),
        keepalive,
        done: false,
        _slot: slot,
    };
    stream.snapshot().await?;
    let body = futures_util::stream::unfold(stream, Stream::next);
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header(("X-Accel-Buffering", "no"))
        .content_type("text/event-stream")
        .streaming(body))
}

/// This module's endpoints.
pub fn configure(cfg: &mut web::ServiceConfig) {
    use crate::telemetry::resource;
    use web::{get, post, put};
    // A retried start makes one session, not two (and so one code).
    cfg.service(
        resource("/v1/assignments/{id}/live").route(
            post()
                .to(create_session)
                .wrap(actix_web::middleware::from_fn(crate::idempotency::guard)),
        ),
    )
    .service(resource("/v1/live/join").route(post().to(join_session)))
    .service(resource("/v1/live/sessions/{id}").route(get().to(get_session)))
    .service(resource("/v1/live/sessions/{id}/next").route(post().to(next_question)))
    .service(resource("/v1/live/sessions/{id}/close").route(post().to(close_question)))
    .service(resource("/v1/live/sessions/{id}/end").route(post().to(end_session)))
    .service(resource("/v1/live/sessions/{id}/distribution").route(get().to(get_distribution)))
    .service(resource("/v1/live/sessions/{id}/events").route(get().to(session_events)))
    .service(resource("/v1/live/sessions/{id}/media/{sha256}").route(get().to(get_session_media)))
    .service(
        resource("/v1/live/sessions/{id}/responses/{question_id}").route(put().to(live_answer)),
    );
}

/// This module's part of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_session,
    get_session,
    next_question,
    close_question,
    end_session,
    get_distribution,
    get_session_media,
    join_session,
    live_answer,
    session_events,
))]
pub struct Api;
