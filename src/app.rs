//! Builds the HTTP application: state, routes, middleware. `main` and the tests share it.

use std::net::TcpListener;

use actix_cors::Cors;
use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::{DefaultHeaders, ErrorHandlers, from_fn};
use actix_web::{App, HttpResponse, HttpServer, web};
use tracing_actix_web::TracingLogger;
use utoipa_swagger_ui::SwaggerUi;

use crate::error::{self, ApiError};
use crate::state::AppState;
use crate::{
    analytics, assignments, attempts, audit, auth, courses, frontend, lti, openapi, ops, privacy,
    quizzes, telemetry,
};

/// The largest request body accepted anywhere.
pub const BODY_LIMIT: usize = 64 * 1024;

/// `X-Frame-Options: DENY` on every response whose own Content-Security-Policy does not say
/// who may frame it (the web front-end's does, for the LMSs allowed to embed it).
async fn deny_framing<B: MessageBody>(
    req: ServiceRequest,
    next: actix_web::middleware::Next<B>,
) -> Result<ServiceResponse<B>, actix_web::Error> {
    let mut res = next.call(req).await?;
    let framed_by_policy = res
        .headers()
        .get(header::CONTENT_SECURITY_POLICY)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("frame-ancestors"));
    if !framed_by_policy {
        res.headers_mut().insert(
            header::X_FRAME_OPTIONS,
            header::HeaderValue::from_static("DENY"),
        );
    }
    Ok(res)
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
    // Cross-origin browsers get CORS headers only for configured origins; other origins get
    // none (the request still runs, so same-origin pages, which send Origin too, work).
    let cors = state.cors_origins.iter().fold(
        Cors::default()
            .block_on_origin_mismatch(false)
            .allowed_methods(["GET", "POST", "PUT", "PATCH", "DELETE"])
            .allowed_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::ACCEPT,
                header::ACCEPT_LANGUAGE,
                header::HeaderName::from_static(crate::idempotency::HEADER),
            ])
            .expose_headers([
                "x-request-id",
                "retry-after",
                "content-language",
                "location",
                "link",
                crate::idempotency::REPLAYED,
            ])
            .max_age(600),
        |cors, origin| cors.allowed_origin(origin),
    );
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
        .wrap(cors)
        .wrap(
            DefaultHeaders::new()
                .add(("X-Content-Type-Options", "nosniff"))
                .add(("Referrer-Policy", "no-referrer"))
                // What does not say how it may be cached is not cached: API answers name people
                // and attempts. Cacheable resources say so themselves (and carry an ETag).
                .add((header::CACHE_CONTROL, "no-store")),
        )
        .wrap(from_fn(deny_framing))
        .wrap(from_fn(telemetry::observe))
        .wrap(TracingLogger::<telemetry::RequestSpan>::new())
        .configure(routes)
        .route("/docs", web::get().to(docs_redirect))
        .service(SwaggerUi::new("/docs/{_:.*}").url("/openapi.json", openapi::document()))
        .default_service(web::to(not_found))
}

/// Every module's endpoints; each module owns its route table (`configure`) and its part of the
/// OpenAPI document (`Api`, composed in [`openapi::document`]).
fn routes(cfg: &mut web::ServiceConfig) {
    cfg.configure(quizzes::routes::configure)
        .configure(auth::routes::configure)
        .configure(privacy::configure)
        .configure(audit::routes::configure)
        // Invitations first: its `/enrollments/csv` also fits `/enrollments/{user_id}`.
        .configure(crate::invitations::configure)
        .configure(courses::routes::configure)
        .configure(assignments::routes::configure)
        .configure(attempts::routes::configure)
        .configure(crate::live::routes::configure)
        .configure(crate::grades::configure)
        .configure(analytics::routes::configure)
        .configure(lti::routes::configure)
        .configure(crate::events::routes::configure)
        .configure(crate::events::webhooks::routes::configure)
        .configure(ops::configure)
        .configure(frontend::configure);
}

/// Starts serving on `listener`; the returned server stops gracefully on SIGINT/SIGTERM.
pub fn serve(
    listener: TcpListener,
    state: web::Data<AppState>,
    workers: Option<usize>,
) -> std::io::Result<Server> {
    let mut server = HttpServer::new(move || app(state.clone())).shutdown_timeout(10);
    if let Some(w) = workers {
        server = server.workers(w);
    }
    Ok(server.listen(listener)?.run())
}

/// Serves `/metrics` alone on `listener` (`--metrics-bind`), with one worker.
pub fn serve_metrics(listener: TcpListener, state: web::Data<AppState>) -> std::io::Result<Server> {
    Ok(HttpServer::new(move || ops::metrics_app(state.clone()))
        .workers(1)
        .shutdown_timeout(10)
        .listen(listener)?
        .run())
}
