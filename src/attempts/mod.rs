//! Attempts: one learner taking one assignment, graded on the server as they answer.

pub mod draw;
pub mod models;
pub mod review;
pub mod routes;
pub mod shuffle;
pub mod store;

use std::collections::BTreeMap;
use std::sync::Arc;

use actix_web::http::StatusCode;
use chrono::{DateTime, Utc};
use rand::RngCore;
use sqlx::PgPool;
use uuid::Uuid;

use crate::assignments::rules::effective;
use crate::assignments::store::AssignmentRow;
use crate::auth::CurrentUser;
use crate::courses::models::CourseRole;
use crate::error::{ApiError, Code};
use crate::grading::{FinishedAttempt, assignment_grade};
use crate::policy::{FeedbackTiming, GradingMethod, Reveal, reveal};
use crate::quizzes::QuizVersion;
use crate::state::AppState;
use models::{AssignmentGrade, AttemptList, AttemptState, AttemptSummary, AttemptView};
use review::{Served, Sight, percentage};
use store::{AttemptListRow, AttemptRow, NewAttempt};

pub fn attempt_not_found() -> ApiError {
    ApiError::new(
        Code::AttemptNotFound,
        "There is no such attempt, or it is not yours.",
    )
}

/// Who is looking at an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Viewer {
    /// The learner who took it.
    Learner,
    /// The course's instructors and admins: they see everything, answer nothing.
    Staff,
}

/// An attempt as it was loaded, with its layout (order, ids, locale chain, navigation). The
/// layout is fixed when the attempt starts. What can change in `row` — `finished_at`,
/// `finish_reason`, `score`, and, when the assignment or the learner's overrides change,
/// `deadline`, `feedback` and `closes_at` — is never taken from here: resuming reads it
/// afresh ([`store::status_and_responses`]), answering checks it in its statement
/// ([`store::record_response`]), everything else reads the row ([`current`]).
pub struct Opened {
    pub row: AttemptRow,
    pub served: Served,
}

/// Opened attempts by id, so that resuming and answering need not load or lay out the attempt
/// again. What an entry is used for cannot go stale (see [`Opened`]), so entries are only
/// evicted. About
/// 1.3 KB each: the 10,000 most active attempts take some 13 MB.
///
/// An entry holds its quiz version, which would keep the version alive after the version
/// cache evicted it: up to 10,000 versions, unaccounted. So the version cache tells this one
/// what it evicts ([`AttemptCache::forget_versions`]), and an attempt is kept only while its
/// version is the cached one: versions in memory stay within the version cache's capacity
/// (plus those of requests in flight).
#[derive(Clone)]
pub struct AttemptCache(Arc<quick_cache::sync::Cache<Uuid, Arc<Opened>>>);

impl Default for AttemptCache {
    fn default() -> Self {
        Self(Arc::new(quick_cache::sync::Cache::new(10_000)))
    }
}

impl AttemptCache {
    /// Drops the attempts laid out on these versions (they are opened again when needed).
    /// A scan of the cache, run only when the version cache evicts.
    pub fn forget_versions(&self, versions: &[Uuid]) {
        self.0
            .retain(|_, o| !versions.contains(&o.served.version.id));
    }

    /// Drops these attempts (a regrade moved them to another version).
    pub fn forget(&self, attempts: &[Uuid]) {
        for id in attempts {
            self.0.remove(id);
        }
    }

    /// How many attempts are cached, and how many distinct quiz versions they hold.
    pub fn usage(&self) -> (usize, usize) {
        let versions: std::collections::HashSet<Uuid> =
            self.0.iter().map(|(_, o)| o.served.version.id).collect();
        (self.0.len(), versions.len())
    }
}

/// The attempt and its layout, from the cache or the database.
pub async fn opened(state: &AppState, id: Uuid) -> Result<Option<Arc<Opened>>, ApiError> {
    if let Some(o) = state.attempts.0.get(&id) {
        return Ok(Some(o));
    }
    let mut conn = state.quick.acquire().await?;
    let row = store::by_id(&mut *conn, id).await?;
    conn.release();
    match row {
        Some(row) => Ok(Some(open(state, row).await?)),
        None => Ok(None),
    }
}

/// The attempt laid out on `version`, the one it has now: a cached layout of another version
/// (a regrade moved the attempt since, perhaps through another instance) is dropped and the
/// attempt opened again.
pub async fn laid_out_on(
    state: &AppState,
    o: Arc<Opened>,
    version: Uuid,
) -> Result<Arc<Opened>, ApiError> {
    if o.served.version.id == version {
        return Ok(o);
    }
    state.attempts.forget(&[o.row.id]);
    opened(state, o.row.id).await?.ok_or_else(attempt_not_found)
}

/// Lays out a loaded attempt and keeps it in the cache.
async fn open(state: &AppState, row: AttemptRow) -> Result<Arc<Opened>, ApiError> {
    let version = version(state, row.quiz_version_id).await?;
    let id = row.id;
    let served = Served::new(version, &row);
    let o = Arc::new(Opened { row, served });
    state.attempts.0.insert(id, o.clone());
    // The version may have been evicted meanwhile (or been too large to cache): then the
    // entry would keep an uncounted copy alive.
    if !state.quizzes.holds(&o.served.version) {
        state.attempts.0.remove(&id);
    }
    Ok(o)
}

/// The attempt, if the caller may see it: its learner, the course's instructors, admins.
/// To anyone else it does not exist. A practice attempt is closed to its learner while they
/// sit an exam of its quiz (`409 practice_during_exam`).
pub async fn visible_attempt(
    state: &AppState,
    id: Uuid,
    user: &CurrentUser,
) -> Result<(Arc<Opened>, Viewer), ApiError> {
    let o = opened(state, id).await?.ok_or_else(attempt_not_found)?;
    if o.row.user_id == user.id {
        if o.row.course_id.is_none() {
            let quiz = o.served.version.quiz_id;
            crate::assignments::practice_open_to(&state.pool, quiz, user.id, state.clock.now())
                .await?;
        }
        return Ok((o, Viewer::Learner));
    }
    if user.is_admin() {
        return Ok((o, Viewer::Staff));
    }
    if let Some(course) = o.row.course_id
        && crate::courses::store::course_for(&state.pool, course, user.id)
            .await?
            .is_some_and(|c| c.my_role == Some(CourseRole::Instructor))
    {
        return Ok((o, Viewer::Staff));
    }
    Err(attempt_not_found())
}

/// Whether the attempt's learner is still in its course (a practice attempt has none): once
/// taken out, they change it no more.
pub async fn still_enrolled(state: &AppState, row: &AttemptRow) -> Result<bool, ApiError> {
    let Some(course) = row.course_id else {
        return Ok(true);
    };
    Ok(
        crate::courses::store::course_for(&state.pool, course, row.user_id)
            .await?
            .is_some_and(|c| c.my_role.is_some()),
    )
}

pub fn not_enrolled() -> ApiError {
    ApiError::new(
        Code::NotEnrolled,
        "You are no longer enrolled in this attempt's course: it takes no answer, clearing or finish from you, and stays as it was.",
    )
}

/// The attempt as it stands now.
pub async fn current(state: &AppState, id: Uuid) -> Result<AttemptRow, ApiError> {
    store::by_id(&state.pool, id)
        .await?
        .ok_or_else(attempt_not_found)
}

pub async fn version(state: &AppState, id: Uuid) -> Result<Arc<QuizVersion>, ApiError> {
    state
        .quizzes
        .get(&state.pool, id)
        .await?
        .ok_or_else(|| ApiError::internal(format!("quiz version {id} is missing")))
}

/// Finishes the attempt if its deadline has passed by the server's clock, and returns it as
/// it now stands.
pub async fn settle(state: &AppState, row: AttemptRow) -> Result<AttemptRow, ApiError> {
    let now = state.clock.now();
    match row.deadline {
        Some(deadline) if row.finished_at.is_none() && deadline <= now => {
            store::finish(&state.pool, row.id, "deadline", now).await?;
            current(state, row.id).await
        }
        _ => Ok(row),
    }
}

/// Finishes every unfinished attempt whose deadline has passed; returns how many.
pub async fn finish_expired(pool: &PgPool, now: DateTime<Utc>) -> Result<usize, sqlx::Error> {
    let mut finished = 0;
    loop {
        let ids = store::expired(pool, now, 100).await?;
        if ids.is_empty() {
            return Ok(finished);
        }
        for id in ids {
            if store::finish(pool, id, "deadline", now).await? {
                finished += 1;
            }
        }
    }
}

/// Runs [`finish_expired`] every few seconds until quizd stops (see `crate::background`).
pub async fn sweep_deadlines(
    state: actix_web::web::Data<AppState>,
    mut shutdown: crate::background::Shutdown,
) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(5));
    while shutdown.tick(&mut tick).await {
        match finish_expired(&state.pool, state.clock.now()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(finished = n, "finished attempts past their deadline"),
            Err(e) => tracing::warn!(error = %e, "deadline sweep failed"),
        }
    }
}

/// What the feedback timing lets the viewer see of the attempt now. Under `after_close`, a
/// learner's finished attempt is judged by where they stand once the assignment's own close has
/// passed: their own close (override, accommodation) and whether they may still start or
/// continue an attempt ([`OwnClose`], read only then: before the assignment's close, no
/// learner's own close, never earlier, has passed).
pub async fn reveal_for(
    state: &AppState,
    row: &AttemptRow,
    viewer: Viewer,
) -> Result<Reveal, ApiError> {
    if viewer == Viewer::Staff {
        return Ok(Reveal::All);
    }
    let now = state.clock.now();
    let finished = row.finished_at.is_some();
    let own_close = if row.feedback == FeedbackTiming::AfterClose
        && finished
        && row.closes_at.is_none_or(|c| now >= c)
    {
        Some(crate::assignments::own_close(&state.pool, row.assignment_id, row.user_id, now).await?)
    } else {
        None
    };
    Ok(reveal(row.feedback, finished, own_close, now))
}

/// What the viewer may see of the attempt now ([`review::Sight`]): what the feedback timing
/// allows and, for a learner's live attempt, how far its session has gone.
pub async fn sight(state: &AppState, row: &AttemptRow, viewer: Viewer) -> Result<Sight, ApiError> {
    let live = match (viewer, row.live_session_id) {
        (Viewer::Learner, Some(session)) => Some(crate::live::progress(state, session).await?),
        _ => None,
    };
    Ok(Sight {
        reveal: reveal_for(state, row, viewer).await?,
        live,
        one_at_a_time: viewer == Viewer::Learner
            && row.sequential()
            && row.finished_at.is_none()
            && live.is_none(),
    })
}

/// The attempt as the viewer may see it now: the JSON of its [`AttemptView`] (a view borrows
/// its texts from the attempt's layout, which lives only as long as this call).
pub async fn view(state: &AppState, row: &AttemptRow, viewer: Viewer) -> Result<Vec<u8>, ApiError> {
    let o = opened(state, row.id).await?.ok_or_else(attempt_not_found)?;
    let o = laid_out_on(state, o, row.quiz_version_id).await?;
    let responses = store::responses(&state.pool, row.id).await?;
    let sight = sight(state, row, viewer).await?;
    Ok(
        serde_json::to_vec(&render(state, &o, row, &responses, sight))
            .expect("an attempt's view serializes"),
    )
}

/// The attempt as `sight` shows it, given its state and responses.
pub fn render<'a>(
    state: &AppState,
    o: &'a Opened,
    row: &AttemptRow,
    responses: &[store::ResponseRow],
    sight: Sight,
) -> AttemptView<'a> {
    o.served.view(row, responses, sight, state.clock.now())
}

/// Starts an attempt (or returns the learner's unfinished one: a double start is harmless).
/// Returns the attempt and whether it is new. `live`: the live session the learner is joining
/// (the attempt takes answers only through it); an unfinished attempt started the other way
/// (by joining, or not) is not resumed but refused (`409 live_attempt_conflict`).
pub async fn start(
    state: &AppState,
    user: &CurrentUser,
    assignment: &AssignmentRow,
    requested_locale: Option<&crate::validate::Locale>,
    accept_language: Option<&str>,
    live: Option<Uuid>,
) -> Result<(AttemptRow, bool), ApiError> {
    let now = state.clock.now();
    let conflict = |code: Code, detail: &str| ApiError::new(code, detail);
    // The statements of a start run on one connection of the quick pool.
    let mut conn = state.quick.acquire().await?;
    if let Some(open) = store::open_attempt(&mut *conn, assignment.id, user.id).await? {
        let open = settle(state, open).await?;
        if open.finished_at.is_none() {
            conn.release();
            if open.live_session_id != live {
                return Err(conflict(
                    Code::LiveAttemptConflict,
                    if open.live_session_id.is_some() {
                        "Your unfinished attempt at this assignment belongs to a live session; answer it there, or finish it first."
                    } else {
                        "You have an unfinished attempt at this assignment; finish it before you join a live session of it."
                    },
                ));
            }
            return Ok((open, false));
        }
    }
    if assignment.archived_at.is_some() {
        return Err(conflict(
            Code::AssignmentArchived,
            "This assignment was archived; it takes no new attempts.",
        ));
    }
    if let Some(course) = assignment.course_id
        && crate::courses::store::is_archived(&mut *conn, course).await?
    {
        return Err(conflict(
            Code::CourseArchived,
            "This course is archived; it takes no new attempts.",
        ));
    }
    let version = version(state, assignment.quiz_version_id).await?;
    let preference = match requested_locale {
        Some(l) => Some(l.as_str().to_string()),
        None => crate::auth::store::user_by_id(&mut *conn, user.id)
            .await?
            .and_then(|u| u.locale),
    };
    conn.release();
    let requested = crate::i18n::requested_locales(preference.as_deref(), accept_language);
    let locale = version.locale_chain(&requested).remove(0);
    // The rules are read and the attempt inserted under a share lock on the assignment: a
    // change of the rules (which locks it for update) waits for this start and then reaches
    // the new attempt, or this start waits for the change and reads its result.
    let mut tx = state.pool.begin().await?;
    let assignment = crate::assignments::store::lock(&mut *tx, assignment.id, false)
        .await?
        .ok_or_else(crate::assignments::assignment_not_found)?;
    // A regrade may have moved the assignment to another version since it was read.
    let (version, locale) = if assignment.quiz_version_id == version.id {
        (version, locale)
    } else {
        let version = self::version(state, assignment.quiz_version_id).await?;
        let locale = version.locale_chain(&requested).remove(0);
        (version, locale)
    };
    let adjustments =
        crate::assignments::store::adjustments_for(&mut *tx, assignment.id, user.id).await?;
    let policy = assignment.policy();
    let rules = effective(&policy, &adjustments);
    if rules.opens_at.is_some_and(|o| now < o) {
        return Err(conflict(Code::NotOpen, "This assignment is not open yet."));
    }
    if rules.closes_at.is_some_and(|c| now >= c) {
        return Err(conflict(Code::Closed, "This assignment is closed."));
    }
    let deadline = rules.deadline(now);
    let mut seed = [0u8; 32];
    rand::rng().fill_bytes(&mut seed);
    // A quiz with banks: the draw, from this seed, preferring what the learner has not seen
    // in an earlier attempt of this assignment (read under the share lock, after any earlier
    // attempt of theirs was inserted: two starts at once collide on the number below).
    let question_set = if version.content.draws() {
        let seen = store::seen_questions(&mut *tx, assignment.id, user.id).await?;
        draw::draw(&version.content, &seed, &seen.into_iter().collect())
    } else {
        None
    };
    // Its maximum: what its questions are worth under the assignment's rules (a dropped
    // question counts for nothing).
    let served: Vec<(&str, f64)> = match &question_set {
        Some(keys) => keys
            .iter()
            .filter_map(|k| version.content.question(k))
            .map(|q| (q.key.as_str(), q.points))
            .collect(),
        None => (version.content.questions.iter())
            .map(|q| (q.key.as_str(), q.points))
            .collect(),
    };
    let (_, max_score) =
        crate::grading::scoring::score(served, &Default::default(), &assignment.question_rules);
    let inserted = store::insert(
        &mut *tx,
        NewAttempt {
            assignment_id: assignment.id,
            user_id: user.id,
            quiz_version_id: assignment.quiz_version_id,
            locale: &locale,
            seed: &seed,
            started_at: now,
            deadline,
            max_score,
            attempts_allowed: rules.attempts_allowed,
            shuffle_questions: policy.shuffle_questions,
            shuffle_options: policy.shuffle_options,
            navigation: policy.navigation,
            question_set: question_set.as_deref(),
            live_session_id: live,
        },
    )
    .await
    .map_err(|e| match ApiError::from(e) {
        e if e.status == StatusCode::CONFLICT => conflict(
            Code::AttemptStartConflict,
            "Another attempt was started at the same moment; retry.",
        ),
        e => e,
    })?;
    let id = inserted.ok_or_else(|| {
        conflict(
            Code::AttemptsExhausted,
            "You have used all the attempts this assignment allows.",
        )
    })?;
    let row = store::by_id(&mut *tx, id)
        .await?
        .ok_or_else(attempt_not_found)?;
    tx.commit().await?;
    open(state, row.clone()).await?;
    Ok((row, true))
}

fn summary(r: &AttemptListRow) -> AttemptSummary {
    AttemptSummary {
        id: r.id,
        assignment_id: r.assignment_id,
        course_id: r.course_id,
        quiz: r.slug.clone(),
        quiz_version: r.version,
        user_id: r.user_id,
        display_name: r.display_name.clone(),
        number: r.number,
        locale: r.locale.clone(),
        state: if r.finished_at.is_some() {
            AttemptState::Finished
        } else {
            AttemptState::InProgress
        },
        started_at: r.started_at,
        deadline: r.deadline,
        finished_at: r.finished_at,
        score: r.score,
        override_points: r.override_points,
        max_score: r.max_score,
        percentage: r
            .override_points
            .or(r.score)
            .map(|s| percentage(s, r.max_score)),
    }
}

/// A page of attempts (`rows`), with each (assignment, learner)'s grade under the
/// assignment's method from all their attempts (`all`: those of the pairs on the page).
pub fn attempt_list(
    rows: &[AttemptListRow],
    all: &[AttemptListRow],
    next: Option<String>,
) -> AttemptList {
    let mut groups: BTreeMap<(Uuid, Uuid), (GradingMethod, Vec<FinishedAttempt>)> = BTreeMap::new();
    for r in all {
        let method = r.grading_method;
        let entry = groups
            .entry((r.assignment_id, r.user_id))
            .or_insert_with(|| (method, Vec::new()));
        if let Some(score) = r.override_points.or(r.score) {
            entry.1.push(FinishedAttempt {
                number: r.number,
                fraction: if r.max_score > 0.0 {
                    score / r.max_score
                } else {
                    0.0
                },
            });
        }
    }
    AttemptList {
        items: rows.iter().map(summary).collect(),
        grades: groups
            .into_iter()
            .map(
                |((assignment_id, user_id), (method, finished))| AssignmentGrade {
                    assignment_id,
                    user_id,
                    grading_method: method,
                    percentage: assignment_grade(method, &finished).map(|f| percentage(f, 1.0)),
                    finished_attempts: finished.len(),
                },
            )
            .collect(),
        next,
    }
}

/// The (assignment, learner) pairs of a page of attempts.
pub fn pairs(rows: &[AttemptListRow]) -> Vec<(Uuid, Uuid)> {
    let set: std::collections::BTreeSet<(Uuid, Uuid)> =
        rows.iter().map(|r| (r.assignment_id, r.user_id)).collect();
    set.into_iter().collect()
}
