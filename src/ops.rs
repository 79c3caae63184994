//! Operations endpoints: liveness, readiness, metrics.
//!
//! `/metrics` tells anyone who reads it the traffic by route, the error rates and the pools'
//! use, so it is closed unless configured: with a token (`--metrics-token`) it wants
//! `Authorization: Bearer <token>`; with a listener of its own (`--metrics-bind`, e.g. an
//! address only the scraper reaches) it is served there and not on the API's listener. With
//! neither it answers `404` like any path that does not exist.

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::middleware::ErrorHandlers;
use actix_web::{App, HttpRequest, HttpResponse, web};
use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::db;
use crate::error::{self, ApiError, Code, Problem};
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
pub struct Status {
    /// `ok` (process up) or `ready` (database reachable, migrations applied).
    pub status: &'static str,
}

/// The process is up.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "The process is up", body = Status)))]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(Status { status: "ok" })
}

/// The database is reachable and every migration of this build is applied.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses(
        (status = 200, description = "Ready to serve", body = Status),
        (status = 503, description = "Database unreachable or not migrated", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    match db::store::migrations_applied(&state.pool).await {
        Ok(true) => Ok(HttpResponse::Ok().json(Status { status: "ready" })),
        Ok(false) => Err(ApiError::unavailable(
            "The database schema is older than this build; run `quizd migrate`.",
        )),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            Err(ApiError::unavailable("The database is unreachable."))
        }
    }
}

/// Where `/metrics` is served, as configured.
#[derive(Debug, Clone, Default)]
pub struct MetricsAccess {
    /// Required as `Authorization: Bearer <token>` wherever metrics are served.
    pub token: Option<String>,
    /// Metrics have a listener of their own, so the API's listener does not serve them.
    pub separate_listener: bool,
}

/// Which listener a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listener {
    Api,
    Metrics,
}

/// Equal without telling, by the time taken, how much of a guess was right: both sides are
/// hashed first, so neither their contents nor their lengths shape the comparison.
fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (Sha256::digest(a.as_bytes()), Sha256::digest(b.as_bytes()));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// Whether this request may read the metrics on this listener.
fn admit(access: &MetricsAccess, listener: Listener, req: &HttpRequest) -> Result<(), ApiError> {
    let served_here = match listener {
        Listener::Metrics => true,
        Listener::Api => !access.separate_listener && access.token.is_some(),
    };
    if !served_here {
        return Err(ApiError::from_status(StatusCode::NOT_FOUND));
    }
    let Some(token) = &access.token else {
        return Ok(());
    };
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match presented {
        Some(p) if same_secret(p.trim(), token) => Ok(()),
        _ => Err(ApiError::new(
            Code::MetricsTokenRequired,
            "Reading the metrics needs `Authorization: Bearer <the metrics token>`.",
        )),
    }
}

/// Prometheus metrics: requests by route and status, latency histogram, pool use. Closed
/// unless configured (see the module).
#[utoipa::path(get, path = "/metrics", tag = "operations", security((), ("metrics_token" = [])),
    responses(
        (status = 200, description = "Prometheus text format", body = String, content_type = "text/plain"),
        (status = 401, description = "A metrics token is configured and this is not it", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Metrics are not served on this listener (not configured, or on their own listener)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn metrics(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    admit(&state.metrics_access, Listener::Api, &req)?;
    Ok(render(&state))
}

/// `/metrics` on the metrics listener.
async fn metrics_on_own_listener(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    admit(&state.metrics_access, Listener::Metrics, &req)?;
    Ok(render(&state))
}

async fn not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::from_status(StatusCode::NOT_FOUND))
}

/// The metrics listener's application: `/metrics` and nothing else.
pub fn metrics_app(
    state: web::Data<AppState>,
) -> App<
    impl actix_web::dev::ServiceFactory<
        actix_web::dev::ServiceRequest,
        Config = (),
        Response = actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .app_data(state)
        .wrap(ErrorHandlers::new().default_handler(error::problem_fallback))
        .route("/metrics", web::get().to(metrics_on_own_listener))
        .default_service(web::to(not_found))
}

fn render(state: &AppState) -> HttpResponse {
    let pool = &state.pool;
    let idle = pool.num_idle() as f64;
    let size = pool.size() as f64;
    ::metrics::gauge!("quizd_db_pool_connections", "pool" => "main", "state" => "idle").set(idle);
    ::metrics::gauge!("quizd_db_pool_connections", "pool" => "main", "state" => "in_use")
        .set(size - idle);
    ::metrics::gauge!("quizd_db_pool_max_connections", "pool" => "main")
        .set(pool.options().get_max_connections() as f64);
    let quick = &state.quick;
    ::metrics::gauge!("quizd_db_pool_connections", "pool" => "quick", "state" => "idle")
        .set(quick.num_idle() as f64);
    ::metrics::gauge!("quizd_db_pool_connections", "pool" => "quick", "state" => "in_use")
        .set(quick.num_leased() as f64);
    ::metrics::gauge!("quizd_db_pool_max_connections", "pool" => "quick").set(quick.size() as f64);
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(state.metrics.render())
}

/// `/healthz`, `/readyz`, `/metrics`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    use crate::telemetry::resource;
    cfg.service(resource("/healthz").route(web::get().to(healthz)))
        .service(resource("/readyz").route(web::get().to(readyz)))
        .service(resource("/metrics").route(web::get().to(metrics)));
}

/// This module's part of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(healthz, readyz, metrics))]
pub struct Api;
