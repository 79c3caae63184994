//! Live mode (#21, item 13): an instructor runs an assignment question by question on a
//! projector; learners join with a short code on their phones and answer against a timer.
//!
//! - `machine.rs`: the session's state machine, pure (phases, timers, what each step may do).
//! - `store.rs`: the SQL; the session's state is authoritative in `live_sessions`.
//! - `hub.rs`: in-process fan-out to this instance's event streams (bounded).
//! - `routes.rs`: the endpoints and the Server-Sent Events streams.
//!
//! A learner's answers go through the attempt machinery unchanged (grading,
//! `attempts::store::record_response`, the outbox): a live attempt differs only in taking
//! answers through its session, to the open question, before its timer runs out, the first
//! answer final, with no key in the reply. Its grade is the attempt's, finished when the
//! session ends.
//!
//! Several instances: each change is also sent as `NOTIFY quizd_live` ([`Notice`]); every
//! instance's [`listen`] loop hands the changes others made to its own hubs (and so to its
//! streams). A notice lost with a dropped connection is caught up by the stream's next
//! reconnect, which starts from the state in PostgreSQL.

pub mod hub;
pub mod machine;
pub mod models;
pub mod routes;
pub mod store;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use actix_web::web::Data;
use chrono::Utc;
use uuid::Uuid;

use crate::assignments::store::AssignmentRow;
use crate::auth::CurrentUser;
use crate::auth::ratelimit::Rule;
use crate::error::{ApiError, Code};
use crate::quizzes::QuizVersion;
use crate::state::AppState;
use hub::Event;
use machine::{Phase, Progress, Refusal, Snapshot};
use models::{Distribution, KeyCount};
use store::SessionRow;

/// Joins one client address may make at once (a class behind one NAT), then one a second.
pub const JOINS_PER_ADDRESS: Rule = Rule {
    burst: 400,
    every: Duration::from_millis(1000),
};
/// Joins one account may make at once (rejoining after a reload), then one every 6 s.
pub const JOINS_PER_ACCOUNT: Rule = Rule {
    burst: 10,
    every: Duration::from_secs(6),
};
/// What one instance tells the others about a session.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Notice {
    from: Uuid,
    session: Uuid,
    #[serde(flatten)]
    what: What,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum What {
    Opened {
        index: usize,
        key: String,
        closes_at: chrono::DateTime<Utc>,
    },
    Closed {
        index: usize,
    },
    Ended,
    Joined {
        joined: i64,
        name: String,
    },
    Answered {
        index: usize,
    },
}

/// Sends a notice (best effort: a lost one is caught up when a stream reconnects).
async fn notify(state: &AppState, session: Uuid, what: What) {
    let notice = Notice {
        from: state.live.instance,
        session,
        what,
    };
    let payload = serde_json::to_string(&notice).expect("a notice serializes");
    if let Err(e) = store::notify(&state.pool, &payload).await {
        tracing::warn!(error = %e, %session, "live: a notice to other instances failed");
    }
}

/// Hands the changes other instances make to this one's streams, until quizd stops;
/// reconnects after a lost connection.
pub async fn listen(state: Data<AppState>, mut shutdown: crate::background::Shutdown) {
    let run = async {
        loop {
            if let Ok(mut listener) =
                sqlx::postgres::PgListener::connect_with(state.session_pool()).await
                && listener.listen("quizd_live").await.is_ok()
            {
                while let Ok(Some(n)) = listener.try_recv().await {
                    match serde_json::from_str::<Notice>(n.payload()) {
                        Ok(notice) if notice.from != state.live.instance => {
                            if let Err(e) = apply(&state, notice).await {
                                tracing::warn!(error = ?e.detail, "live: applying a notice failed");
                            }
                        }
                        Ok(_) => {}
                        Err(e) => tracing::warn!(error = %e, "live: an unreadable notice"),
                    }
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    };
    tokio::select! {
        _ = run => {}
        _ = shutdown.stopping() => {}
    }
}

/// Another instance's change, to this instance's streams of the session (if it has any).
async fn apply(state: &AppState, notice: Notice) -> Result<(), ApiError> {
    let Some(hub) = state.live.existing(notice.session) else {
        return Ok(());
    };
    match notice.what {
        What::Opened {
            index,
            key,
            closes_at,
        } => {
            hub.opened(index);
            hub.send(Event::Opened {
                index,
                key,
                closes_at,
            });
        }
        What::Closed { index } => {
            if let Some(row) = store::by_id(&state.pool, notice.session).await? {
                announce_close_here(state, &row, index).await?;
            }
        }
        What::Ended => {
            hub.send(Event::Ended);
            state.live.remove(notice.session);
        }
        What::Joined { joined, name } => hub.joined(joined, Some(name)),
        What::Answered { index } => hub.answered(index),
    }
    Ok(())
}

/// Names on the leaderboard.
pub const LEADERS: i64 = 10;

pub fn session_not_found() -> ApiError {
    ApiError::new(
        Code::LiveSessionNotFound,
        "No open live session has this code, or the session is not yours to see.",
    )
}

pub fn question_closed() -> ApiError {
    ApiError::new(
        Code::LiveQuestionClosed,
        "This question is not open: the session shows another, or its timer has run out. The answer was not recorded.",
    )
}

/// A live attempt is finished by its session's end, and its answers stand.
pub fn session_running() -> ApiError {
    ApiError::new(
        Code::LiveSessionRunning,
        "This attempt belongs to a live session that is still running: the session finishes it when it ends, and every answer in it stands.",
    )
}

pub(crate) fn refused(r: Refusal) -> ApiError {
    match r {
        Refusal::Ended => ApiError::new(Code::LiveSessionEnded, "The live session has ended."),
        Refusal::QuestionOpen => ApiError::new(
            Code::LiveQuestionOpen,
            "A question is open; close it (or let its timer run out) first.",
        ),
        Refusal::NoMoreQuestions => ApiError::new(
            Code::LiveNoMoreQuestions,
            "Every question has been shown; end the session.",
        ),
        Refusal::InvalidTimer => ApiError::new(
            Code::InvalidTimer,
            format!(
                "`seconds` must be {} to {}.",
                machine::MIN_SECONDS,
                machine::MAX_SECONDS
            ),
        ),
        Refusal::NothingOpen => {
            ApiError::new(Code::LiveQuestionClosed, "No question is open to close.")
        }
        Refusal::QuestionClosed => question_closed(),
    }
}

/// The session's state for the machine.
pub fn snapshot(row: &SessionRow, version: &QuizVersion) -> Snapshot {
    Snapshot {
        question_count: version.content.questions.len(),
        index: row.question_index.map(|i| i as usize),
        closes_at: row.closes_at,
        ended: row.ended_at.is_some(),
    }
}

/// Whether `user` may run live sessions of an assignment now: of one in `course`, its
/// instructors (by their role in it today) and admins; of a practice assignment (no course),
/// the authors of its quiz `slug` and admins.
async fn may_run(
    state: &AppState,
    course: Option<Uuid>,
    slug: &str,
    user: &CurrentUser,
) -> Result<bool, ApiError> {
    if user.is_admin() {
        return Ok(true);
    }
    Ok(match course {
        Some(course) => crate::courses::store::course_for(&state.pool, course, user.id)
            .await?
            .is_some_and(|c| c.my_role == Some(crate::courses::models::CourseRole::Instructor)),
        None => crate::quizzes::store::access(&state.pool, slug, user.id)
            .await?
            .is_some_and(|q| q.is_author),
    })
}

/// The assignment, if the caller may run live sessions of it ([`may_run`]).
pub async fn runnable(
    state: &AppState,
    id: Uuid,
    user: &CurrentUser,
) -> Result<AssignmentRow, ApiError> {
    let a = crate::assignments::visible_assignment(&state.pool, id, user).await?;
    if may_run(state, a.course_id, &a.slug, user).await? {
        return Ok(a);
    }
    Err(ApiError::new(
        Code::Forbidden,
        if a.course_id.is_some() {
            "Only the course's instructors can do this."
        } else {
            "Only the quiz's authors run live sessions of its practice assignment."
        },
    ))
}

/// Whether `user` runs this session, decided at every request by [`may_run`]: who started it
/// counts for nothing, so an instructor removed from the course no longer runs (nor reads the
/// key through) the session they started.
pub async fn is_staff(
    state: &AppState,
    row: &SessionRow,
    user: &CurrentUser,
) -> Result<bool, ApiError> {
    may_run(state, row.course_id, &row.slug, user).await
}

/// How far the session has gone now ([`machine::Snapshot::progress`]): what its learners'
/// attempts show. A session deleted meanwhile (its attempts are then no longer live) has
/// shown nothing.
pub async fn progress(state: &AppState, session: Uuid) -> Result<Progress, ApiError> {
    let Some(row) = store::by_id(&state.pool, session).await? else {
        return Ok(Progress {
            opened: 0,
            revealed: 0,
        });
    };
    let version = version_of(state, &row).await?;
    Ok(snapshot(&row, &version).progress(state.clock.now()))
}

/// The session, if the caller runs it (`404` for everyone else).
pub async fn staff_session(
    state: &AppState,
    id: Uuid,
    user: &CurrentUser,
) -> Result<SessionRow, ApiError> {
    let row = store::by_id(&state.pool, id)
        .await?
        .ok_or_else(session_not_found)?;
    if is_staff(state, &row, user).await? {
        Ok(row)
    } else {
        Err(session_not_found())
    }
}

pub async fn version_of(state: &AppState, row: &SessionRow) -> Result<Arc<QuizVersion>, ApiError> {
    crate::attempts::version(state, row.quiz_version_id).await
}

/// Creates a session of the assignment with a fresh code.
pub async fn create(
    state: &AppState,
    user: &CurrentUser,
    assignment: &AssignmentRow,
    leaderboard: bool,
) -> Result<SessionRow, ApiError> {
    let version = crate::attempts::version(state, assignment.quiz_version_id).await?;
    if version.content.draws() {
        return Err(ApiError::new(
            Code::LiveNotSupported,
            "Live mode shows every learner the same questions; this quiz draws from question banks.",
        ));
    }
    let now = state.clock.now();
    let id = Uuid::now_v7();
    for _ in 0..8 {
        let code = machine::new_code(&mut rand::rng());
        let inserted = store::insert(
            &state.pool,
            store::NewSession {
                id,
                assignment_id: assignment.id,
                quiz_version_id: version.id,
                created_by: user.id,
                code: &code,
                code_expires_at: now + chrono::Duration::hours(machine::CODE_HOURS),
                leaderboard,
                now,
            },
        )
        .await?;
        if inserted {
            return store::by_id(&state.pool, id)
                .await?
                .ok_or_else(|| ApiError::internal("a live session vanished"));
        }
    }
    Err(ApiError::internal("no free live-session code in 8 tries"))
}

/// Opens the session's next question for `seconds`, and closes it when the timer runs out.
pub async fn open_next(
    state: &Data<AppState>,
    row: &SessionRow,
    seconds: u32,
) -> Result<SessionRow, ApiError> {
    let version = version_of(state, row).await?;
    let now = state.clock.now();
    let opening = snapshot(row, &version)
        .open_next(now, seconds)
        .map_err(refused)?;
    let key = &version.content.questions[opening.index].key;
    let opened = store::open_question(
        &state.pool,
        row.id,
        row.question_index,
        opening.index as i32,
        key,
        opening.opened_at,
        opening.closes_at,
    )
    .await?;
    if !opened {
        // Another step won (two clicks at once, or the session ended): say what it is now.
        let now_row = store::by_id(&state.pool, row.id)
            .await?
            .ok_or_else(session_not_found)?;
        return Err(refused(
            snapshot(&now_row, &version)
                .open_next(now, seconds)
                .err()
                .unwrap_or(Refusal::QuestionOpen),
        ));
    }
    let hub = state.live.hub(row.id);
    hub.opened(opening.index);
    hub.send(Event::Opened {
        index: opening.index,
        key: key.clone(),
        closes_at: opening.closes_at,
    });
    notify(
        state,
        row.id,
        What::Opened {
            index: opening.index,
            key: key.clone(),
            closes_at: opening.closes_at,
        },
    )
    .await;
    // The timer: announce the close when it runs out (by the server's clock; a question
    // closed early or a session ended meanwhile is announced once, by whoever is first).
    let (timer_state, session, index) = (state.clone(), row.id, opening.index);
    let wait = (opening.closes_at - now).to_std().unwrap_or_default() + Duration::from_millis(20);
    actix_web::rt::spawn(async move {
        tokio::time::sleep(wait).await;
        if let Err(e) = announce_close_if_due(&timer_state, session, index).await {
            tracing::warn!(error = ?e.detail, %session, "live: announcing a close failed");
        }
    });
    store::by_id(&state.pool, row.id)
        .await?
        .ok_or_else(session_not_found)
}

/// Announces the close of question `index` if it is closed by now and not announced yet.
async fn announce_close_if_due(
    state: &AppState,
    session: Uuid,
    index: usize,
) -> Result<(), ApiError> {
    let Some(row) = store::by_id(&state.pool, session).await? else {
        return Ok(());
    };
    let version = version_of(state, &row).await?;
    if row.ended_at.is_none()
        && snapshot(&row, &version).phase(state.clock.now()) == (Phase::Closed { index })
    {
        announce_close(state, &row, index).await?;
    }
    Ok(())
}

/// Tells the streams that question `index` closed, with its distribution (once), here and on
/// the other instances.
async fn announce_close(state: &AppState, row: &SessionRow, index: usize) -> Result<(), ApiError> {
    if announce_close_here(state, row, index).await? {
        notify(state, row.id, What::Closed { index }).await;
    }
    Ok(())
}

/// [`announce_close`] to this instance's streams; `false` if it was announced already.
async fn announce_close_here(
    state: &AppState,
    row: &SessionRow,
    index: usize,
) -> Result<bool, ApiError> {
    let Some(key) = row.question_key.clone() else {
        return Ok(false);
    };
    let hub = state.live.hub(row.id);
    if !hub.claim_close(index) {
        return Ok(false);
    }
    let distribution = distribution(state, row.id, &key).await?;
    let leaders = if row.leaderboard {
        Some(store::leaders(&state.pool, row.id, LEADERS).await?)
    } else {
        None
    };
    hub.send(Event::Closed {
        index,
        key,
        distribution,
        leaders,
    });
    Ok(true)
}

/// Closes the open question now.
pub async fn close(state: &AppState, row: &SessionRow) -> Result<SessionRow, ApiError> {
    let version = version_of(state, row).await?;
    let now = state.clock.now();
    let at = snapshot(row, &version).close(now).map_err(refused)?;
    let index = row.question_index.unwrap_or(0);
    if !store::close_question(&state.pool, row.id, index, at).await? {
        return Err(refused(Refusal::NothingOpen));
    }
    let row = store::by_id(&state.pool, row.id)
        .await?
        .ok_or_else(session_not_found)?;
    announce_close(state, &row, index as usize).await?;
    Ok(row)
}

/// Ends the session: its code joins nothing more, an open question closes, and every
/// participant's attempt is finished (graded, its outbox events written, as any finish).
pub async fn end(state: &AppState, row: &SessionRow) -> Result<SessionRow, ApiError> {
    let now = state.clock.now();
    let was_open = row.ended_at.is_none() && row.closes_at.is_some_and(|c| c > now);
    store::end(&state.pool, row.id, now).await?;
    for attempt in store::unfinished_attempts(&state.pool, row.id).await? {
        crate::attempts::store::finish(&state.pool, attempt, "submitted", now).await?;
    }
    let ended = store::by_id(&state.pool, row.id)
        .await?
        .ok_or_else(session_not_found)?;
    if let (true, Some(index)) = (was_open, ended.question_index) {
        announce_close(state, &ended, index as usize).await?;
    }
    if let Some(hub) = state.live.existing(row.id) {
        hub.send(Event::Ended);
    }
    state.live.remove(row.id);
    notify(state, row.id, What::Ended).await;
    Ok(ended)
}

/// The answers to a question of the session, counted.
pub async fn distribution(
    state: &AppState,
    session: Uuid,
    key: &str,
) -> Result<Distribution, ApiError> {
    let mut d = Distribution::default();
    for t in store::distribution(&state.pool, session, key).await? {
        match (t.option, t.correct) {
            (Some(key), _) => d.options.push(KeyCount {
                key,
                answers: t.answers,
            }),
            (None, Some(true)) => d.correct = t.answers,
            (None, Some(false)) => d.wrong = t.answers,
            (None, None) => d.total = t.answers,
        }
    }
    Ok(d)
}

/// Checks a join against the limits per client address and per account (`429`).
async fn check_join_limits(
    state: &AppState,
    user: &CurrentUser,
    address: Option<IpAddr>,
) -> Result<(), ApiError> {
    let limiter = &state.login_limiter;
    let mut keys = vec![(
        "live_join_account",
        limiter.key(&[b"live-join-account", user.id.as_bytes()]),
        JOINS_PER_ACCOUNT,
    )];
    if let Some(ip) = address {
        keys.insert(
            0,
            (
                "live_join_address",
                limiter.key(&[b"live-join-address", ip.to_string().as_bytes()]),
                JOINS_PER_ADDRESS,
            ),
        );
    }
    for (kind, key, rule) in keys {
        if let Some((until, now)) =
            crate::auth::store::count_limited(&state.pool, kind, &key, rule).await?
        {
            let wait =
                (until - now - chrono::Duration::from_std(rule.tolerance()).unwrap_or_default())
                    .to_std()
                    .unwrap_or(Duration::from_secs(1));
            let secs = wait.as_secs() + 1;
            return Err(ApiError {
                retry_after: Some(secs as u32),
                ..ApiError::new(
                    Code::TooManyJoins,
                    format!("Too many joins from your address or account; try again in {secs} s."),
                )
            });
        }
    }
    Ok(())
}

/// Joins the learner to the open session with this code: their attempt in it (a new one, or
/// the one they joined with before), under the assignment's rules like any start.
pub async fn join(
    state: &AppState,
    user: &CurrentUser,
    code: &str,
    address: Option<IpAddr>,
    accept_language: Option<&str>,
) -> Result<(SessionRow, Uuid, bool), ApiError> {
    check_join_limits(state, user, address).await?;
    let code = machine::normalize_code(code).ok_or_else(session_not_found)?;
    let row = store::by_code(&state.pool, &code, state.clock.now())
        .await?
        .ok_or_else(session_not_found)?;
    if let Some(attempt) = store::participant(&state.pool, row.id, user.id).await? {
        return Ok((row, attempt, false));
    }
    // Only those who may take the assignment join; to anyone else the code joins nothing.
    let assignment = crate::assignments::visible_assignment(&state.pool, row.assignment_id, user)
        .await
        .map_err(|e| {
            if e.status.as_u16() == 404 {
                session_not_found()
            } else {
                e
            }
        })?;
    let (attempt, _) = crate::attempts::start(
        state,
        user,
        &assignment,
        None,
        accept_language,
        Some(row.id),
    )
    .await?;
    let attempt = store::add_participant(&state.pool, row.id, user.id, attempt.id).await?;
    let joined = store::participant_count(&state.pool, row.id).await?;
    let name = store::display_name(&state.pool, user.id).await?;
    state.live.hub(row.id).joined(joined, Some(name.clone()));
    notify(state, row.id, What::Joined { joined, name }).await;
    Ok((row, attempt, true))
}

/// An answer to question `index` was recorded: the staff's count, here and elsewhere.
pub async fn answered(state: &AppState, session: Uuid, index: usize) {
    if let Some(hub) = state.live.existing(session) {
        hub.answered(index);
    }
    notify(state, session, What::Answered { index }).await;
}

/// Now, by the server's clock (for the streams' countdowns).
pub fn seconds_left(closes_at: chrono::DateTime<Utc>, now: chrono::DateTime<Utc>) -> i64 {
    ((closes_at - now).num_milliseconds().max(0) + 999) / 1000
}
