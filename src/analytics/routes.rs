//! `GET /v1/assignments/{id}/analytics` and `GET /v1/quizzes/{slug}/analytics`.

use std::collections::BTreeMap;
use std::sync::Arc;

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use uuid::Uuid;

use super::models::{AnalyticsQuery, AnalyticsReport, CountedAttempts, VersionReport};
use super::store::{self, Scope, ScopedAssignment};
use super::{version_report, version_report_from_attempts};
use crate::assignments::visible_assignment;
use crate::auth::{CurrentUser, Role};
use crate::error::{ApiError, Code, Problem};
use crate::state::AppState;
use actix_web::http::StatusCode;

pub const DEFAULT_LIMIT: u32 = 100;
pub const MAX_LIMIT: u32 = 500;
pub const MAX_OFFSET: u32 = 10_000;

/// The assignments of an assignment's analytics: its course's instructors and admins
/// (practice assignments: admins).
pub async fn assignment_scope(
    state: &AppState,
    id: Uuid,
    user: &CurrentUser,
) -> Result<(String, Vec<ScopedAssignment>), ApiError> {
    let a = visible_assignment(&state.pool, id, user).await?;
    match a.course_id {
        Some(course) => {
            crate::courses::taught_course(&state.pool, course, user).await?;
        }
        None => user.require(&[Role::Admin])?,
    }
    Ok((
        a.slug.clone(),
        vec![ScopedAssignment {
            id: a.id,
            quiz_version_id: a.quiz_version_id,
            version: a.version,
        }],
    ))
}

/// The assignments of a quiz's analytics that the caller may see.
pub async fn quiz_scope(
    state: &AppState,
    slug: &str,
    user: &CurrentUser,
    course: Option<Uuid>,
) -> Result<Vec<ScopedAssignment>, ApiError> {
    let not_found = crate::quizzes::access::quiz_not_found;
    if !crate::quizzes::routes::plausible_slug(slug) {
        return Err(not_found());
    }
    let quiz = crate::quizzes::store::access(&state.pool, slug, user.id)
        .await?
        .ok_or_else(not_found)?;
    let scope =
        store::quiz_assignments(&state.pool, quiz.quiz_id, user.id, user.is_admin(), course)
            .await?;
    // Teaching is a role in a course: whoever teaches an assignment of the quiz sees its
    // analytics there, whatever their site role. To anyone who teaches none, a private quiz
    // they do not author does not exist, and a learner is refused by role.
    if scope.is_empty() {
        if !crate::quizzes::access::placeable(&quiz, user) {
            return Err(not_found());
        }
        user.require_staff()?;
    }
    Ok(scope)
}

/// Checks the query and returns the page (offset, limit).
fn validate(q: &AnalyticsQuery) -> Result<(usize, usize), ApiError> {
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(ApiError::new(
            Code::InvalidQuery,
            format!("`limit` must be 1 to {MAX_LIMIT}."),
        ));
    }
    if q.offset.is_some_and(|o| o > MAX_OFFSET) {
        return Err(ApiError::new(
            Code::InvalidQuery,
            format!("`offset` must be at most {MAX_OFFSET}."),
        ));
    }
    if let (Some(from), Some(to)) = (q.from, q.to)
        && from >= to
    {
        return Err(
            ApiError::new(Code::InvalidQuery, "`from` must be before `to`.")
                .with_status(StatusCode::UNPROCESSABLE_ENTITY),
        );
    }
    Ok((q.offset.unwrap_or(0) as usize, limit as usize))
}

/// An empty filter (`?locale=`) is no filter.
fn non_empty(s: &Option<String>) -> Option<String> {
    s.clone().filter(|s| !s.is_empty())
}

/// Whether the kept count tables answer this scope. They hold every finished attempt and the
/// grade-making ones per learner over all locales: a date range needs the attempts themselves,
/// and so does a locale filter on graded attempts (the grade-making attempt is then chosen
/// among that locale's attempts only).
fn incremental(scope: &Scope) -> bool {
    scope.from.is_none() && scope.to.is_none() && (scope.all_finished || scope.locale.is_none())
}

/// Builds the report over these assignments, one entry per quiz version, from the cache when
/// nothing has started or finished since.
pub async fn build_report(
    state: &AppState,
    quiz: String,
    assignments: Vec<ScopedAssignment>,
    q: &AnalyticsQuery,
) -> Result<AnalyticsReport, ApiError> {
    let page = validate(q)?;
    let counted = q.attempts.unwrap_or_default();
    let mut by_version: BTreeMap<(i32, Uuid), Vec<Uuid>> = BTreeMap::new();
    for a in &assignments {
        if q.version.is_none_or(|v| v == a.version) {
            by_version
                .entry((a.version, a.quiz_version_id))
                .or_default()
                .push(a.id);
        }
    }
    let replica = state.analytics_replica.as_ref();
    let mut versions = Vec::new();
    for ((_, version_id), ids) in by_version {
        let scope = Scope {
            assignments: ids,
            version_id,
            from: q.from,
            to: q.to,
            locale: non_empty(&q.locale),
            all_finished: counted == CountedAttempts::All,
        };
        // The generation and the position the report must be as fresh as, on the primary.
        let (generation, lsn) = store::generation_and_lsn(&state.pool, &scope.assignments).await?;
        let key = format!(
            "{version_id}|{:?}|{:?}|{:?}|{:?}|{}|{:?}|{:?}|{generation}",
            scope.assignments, scope.from, scope.to, scope.locale, scope.all_finished, page, q.lang
        );
        if let Some(hit) = state.reports.get(&key) {
            versions.push(hit);
            continue;
        }
        let version = crate::attempts::version(state, version_id).await?;
        let chain = version.locale_chain(&non_empty(&q.lang).into_iter().collect::<Vec<_>>());
        let report = if incremental(&scope) {
            // Stale tables of the scope's assignments are rebuilt first (after an upgrade,
            // `quizd serve` has usually done so already at start).
            // A rebuild writes on the primary (this request's, or another instance's that it
            // found done), and the report must see it: the position is taken again after it.
            super::rebuild_stale_sums(&state.pool, Some(&scope.assignments), None).await?;
            let lsn = store::primary_lsn(&state.pool).await?;
            let db = super::replica::pool_for(&state.pool, replica, &lsn).await;
            let mut conn = db.acquire().await?;
            let (sums, counts) = store::read_sums(&mut conn, &scope).await?;
            drop(conn);
            web::block(move || version_report(&version, &sums, counts, &chain, page)).await
        } else {
            let db = &super::replica::pool_for(&state.pool, replica, &lsn).await;
            // Two independent reads on separate connections, in parallel.
            let (scores, counts) = futures_util::try_join!(
                store::counted_scores(db, &scope),
                store::state_counts(db, &scope),
            )?;
            web::block(move || {
                version_report_from_attempts(&version, &scores, counts, &chain, page)
            })
            .await
        }
        .map_err(|e| ApiError::internal(format!("analytics report: {e}")))?;
        let report = Arc::new(report);
        state.reports.put(key, report.clone());
        versions.push(report);
    }
    Ok(AnalyticsReport {
        quiz,
        attempts: counted,
        assignments: assignments.iter().map(|a| a.id).collect(),
        versions: versions.iter().map(|v| VersionReport::clone(v)).collect(),
    })
}

/// Item analysis of one assignment. The course's instructors and admins.
///
/// Computed from count tables that the transaction finishing each attempt keeps up to date,
/// so it is fresh after every finished attempt and costs the number of distinct scores, not
/// of attempts. A date range (`from`, `to`), or `locale` with graded attempts, is computed
/// from the attempts themselves (one row per attempt).
#[utoipa::path(get, path = "/v1/assignments/{id}/analytics", tag = "analytics", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The assignment's id"), AnalyticsQuery, ("If-None-Match" = Option<String>, Header, description = "Entity tags of the copies the client holds; the first 64 are compared")),
    responses(
        (status = 200, description = "The statistics, per quiz version", body = AnalyticsReport,
            headers(("ETag" = String, description = "A strong entity tag of this report"))),
        (status = 304, description = "Not modified: the client's copy (`If-None-Match`) is current; no body", headers(("ETag" = String, description = "The current entity tag"))),
        (status = 400, description = "Malformed id or query", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`from` is not before `to`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn assignment_analytics(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    query: web::Query<AnalyticsQuery>,
) -> Result<HttpResponse, ApiError> {
    let (quiz, scope) = assignment_scope(&state, *id, &user).await?;
    let report = build_report(&state, quiz, scope, &query).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-cache"))
        .json(report))
}

/// Item analysis of a quiz over every assignment you may see (admins: all, practice
/// included), per quiz version.
///
/// Computed from count tables kept as attempts finish, like the assignment's report; a date
/// range, or `locale` with graded attempts, is computed from the attempts themselves.
#[utoipa::path(get, path = "/v1/quizzes/{slug}/analytics", tag = "analytics", security(("bearer" = [])),
    params(("slug" = String, Path, description = "The quiz's slug"), AnalyticsQuery, ("If-None-Match" = Option<String>, Header, description = "Entity tags of the copies the client holds; the first 64 are compared")),
    responses(
        (status = 200, description = "The statistics, per quiz version", body = AnalyticsReport,
            headers(("ETag" = String, description = "A strong entity tag of this report"))),
        (status = 304, description = "Not modified: the client's copy (`If-None-Match`) is current; no body", headers(("ETag" = String, description = "The current entity tag"))),
        (status = 400, description = "Malformed query", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`from` is not before `to`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Learners have no analytics", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn quiz_analytics(
    state: web::Data<AppState>,
    user: CurrentUser,
    slug: web::Path<String>,
    query: web::Query<AnalyticsQuery>,
) -> Result<HttpResponse, ApiError> {
    let scope = quiz_scope(&state, &slug, &user, query.course).await?;
    let report = build_report(&state, slug.into_inner(), scope, &query).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-cache"))
        .json(report))
}

/// This module's endpoints (resources, not method-guarded routes, so that a wrong method is a
/// `405`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    use super::export;
    use crate::telemetry::resource;
    use web::get;
    let revalidated = || actix_web::middleware::from_fn(crate::conditional::revalidate);
    cfg.service(
        resource("/v1/assignments/{id}/analytics")
            .wrap(revalidated())
            .route(get().to(assignment_analytics)),
    )
    .service(
        resource("/v1/assignments/{id}/analytics/responses.csv")
            .route(get().to(export::responses_csv)),
    )
    .service(
        resource("/v1/assignments/{id}/analytics/results.csv").route(get().to(export::results_csv)),
    )
    .service(
        resource("/v1/quizzes/{slug}/analytics")
            .wrap(revalidated())
            .route(get().to(quiz_analytics)),
    );
}

/// This module's part of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    assignment_analytics,
    quiz_analytics,
    super::export::responses_csv,
    super::export::results_csv,
))]
pub struct Api;
