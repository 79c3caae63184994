//! Operations endpoints: liveness, readiness, metrics.

use actix_web::{HttpResponse, web};
use serde::Serialize;
use utoipa::ToSchema;

use crate::app::AppState;
use crate::db;
use crate::error::{ApiError, Problem};

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
    match db::migrations_applied(&state.pool).await {
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

/// Prometheus metrics: requests by route and status, latency histogram, pool use.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain")))]
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
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
