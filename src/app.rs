//! Builds the HTTP application: state, routes, middleware. `main` and the tests share it.

use std::net::TcpListener;

use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::{DefaultHeaders, ErrorHandlers, from_fn};
use actix_web::{App, HttpResponse, HttpServer, web};
use metrics_exporter_prometheus::PrometheusHandle;
use sqlx::PgPool;
use tracing_actix_web::TracingLogger;
use utoipa_swagger_ui::SwaggerUi;

use crate::error::{self, ApiError};
use crate::quizzes::VersionCache;
use crate::{openapi, ops, quizzes, telemetry};

/// The largest request body accepted anywhere.
pub const BODY_LIMIT: usize = 64 * 1024;

pub struct AppState {
    pub pool: PgPool,
    pub quizzes: VersionCache,
    pub metrics: PrometheusHandle,
}

impl AppState {
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            quizzes: VersionCache::default(),
            metrics: telemetry::prometheus(),
        }
    }
}

async fn not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::from_status(
        actix_web::http::StatusCode::NOT_FOUND,
    ))
}

async fn docs_redirect() -> HttpResponse {
    HttpResponse::PermanentRedirect()
        .insert_header(("Location", "/docs/"))
        .finish()
}

pub fn app(
    state: web::Data<AppState>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .app_data(state)
        .app_data(
            web::JsonConfig::default()
                .limit(BODY_LIMIT)
                .error_handler(error::json_error),
        )
        .app_data(web::PathConfig::default().error_handler(error::path_error))
        .app_data(web::QueryConfig::default().error_handler(error::query_error))
        .app_data(web::PayloadConfig::new(BODY_LIMIT))
        .wrap(ErrorHandlers::new().default_handler(error::problem_fallback))
        .wrap(
            DefaultHeaders::new()
                .add(("X-Content-Type-Options", "nosniff"))
                .add(("X-Frame-Options", "DENY"))
                .add(("Referrer-Policy", "no-referrer")),
        )
        .wrap(from_fn(telemetry::observe))
        .wrap(TracingLogger::default())
        .configure(routes)
        .route("/docs", web::get().to(docs_redirect))
        .service(SwaggerUi::new("/docs/{_:.*}").url("/openapi.json", openapi::document()))
        .default_service(web::to(not_found))
}

/// Every endpoint. Resources (not method-guarded routes) so that a wrong method is a 405.
fn routes(cfg: &mut web::ServiceConfig) {
    use web::{get, resource};
    cfg.service(resource("/v1/quizzes").route(get().to(quizzes::routes::list_quizzes)))
        .service(resource("/v1/quizzes/{slug}").route(get().to(quizzes::routes::get_quiz)))
        .service(resource("/healthz").route(get().to(ops::healthz)))
        .service(resource("/readyz").route(get().to(ops::readyz)))
        .service(resource("/metrics").route(get().to(ops::metrics)));
}

/// Starts serving on `listener`; the returned server stops gracefully on SIGINT/SIGTERM.
pub fn serve(
    listener: TcpListener,
    state: AppState,
    workers: Option<usize>,
) -> std::io::Result<Server> {
    let state = web::Data::new(state);
    let mut server = HttpServer::new(move || app(state.clone())).shutdown_timeout(10);
    if let Some(w) = workers {
        server = server.workers(w);
    }
    Ok(server.listen(listener)?.run())
}
