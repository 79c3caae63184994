//! Builds the HTTP application: state, routes, middleware. `main` and the tests share it.

use std::net::TcpListener;

use actix_cors::Cors;
use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::{DefaultHeaders, ErrorHandlers, from_fn};
use actix_web::{App, HttpResponse, HttpServer, web};
use metrics_exporter_prometheus::PrometheusHandle;
use sqlx::PgPool;
use tracing_actix_web::TracingLogger;
use utoipa_swagger_ui::SwaggerUi;

use crate::analytics::ReportCache;
use crate::attempts::AttemptCache;
use crate::auth::ratelimit::LoginLimiter;
use crate::auth::tokens::TokenKeys;
use crate::clock::Clock;
use crate::db::quick::QuickPool;
use crate::error::{self, ApiError};
use crate::net::TrustedProxies;
use crate::quizzes::VersionCache;
use crate::{
    analytics, assignments, attempts, audit, auth, courses, lti, openapi, ops, privacy, quizzes,
    telemetry,
};

/// The largest request body accepted anywhere.
pub const BODY_LIMIT: usize = 64 * 1024;

pub struct AppState {
    pub pool: PgPool,
    /// Connections for the hot paths (resume, answer), handed back without a round trip.
    pub quick: QuickPool,
    pub attempts: AttemptCache,
    pub quizzes: VersionCache,
    pub metrics: PrometheusHandle,
    pub tokens: TokenKeys,
    pub login_limiter: LoginLimiter,
    /// The server's clock: deadlines and open/close times are judged by it.
    pub clock: Clock,
    /// Where analytics read: a read-only replica when one is configured, else `pool`.
    pub analytics_pool: PgPool,
    pub reports: ReportCache,
    /// Origins whose pages may call the API from a browser (CORS); none by default.
    pub cors_origins: Vec<String>,
    /// Who may read `/metrics`, and on which listener; closed by default.
    pub metrics_access: ops::MetricsAccess,
    /// Peers whose forwarded headers are believed (client address, origin); none by default.
    pub trusted_proxies: TrustedProxies,
    /// quizd's public origin and front-end for LTI; unset by default (from each request).
    pub lti: lti::Settings,
    /// Where verification links and invitations go: SMTP, or the log (the default).
    pub mailer: crate::mail::Mailer,
}

impl AppState {
    pub fn new(pool: PgPool, signing_secret: &[u8]) -> Self {
        let quick = QuickPool::new(
            (*pool.connect_options()).clone(),
            pool.options().get_max_connections(),
            pool.options().get_acquire_timeout(),
        );
        let attempts = AttemptCache::default();
        let quizzes = VersionCache::default();
        let forget = attempts.clone();
        quizzes.on_evict(move |versions| forget.forget_versions(versions));
        Self {
            pool: pool.clone(),
            quick,
            attempts,
            quizzes,
            metrics: telemetry::prometheus(),
            tokens: TokenKeys::new(signing_secret),
            login_limiter: LoginLimiter::default(),
            clock: Clock::System,
            analytics_pool: pool.clone(),
            reports: ReportCache::default(),
            cors_origins: Vec::new(),
            metrics_access: ops::MetricsAccess::default(),
            trusted_proxies: TrustedProxies::default(),
            lti: lti::Settings::default(),
            mailer: crate::mail::Mailer::log_only(),
        }
    }

    /// The state with the configured signing secret (at least 32 bytes), or else the one quizd
    /// generated and keeps in its database.
    pub async fn load(pool: PgPool, configured_secret: Option<&str>) -> anyhow::Result<Self> {
        let secret = match configured_secret {
            Some(s) if s.len() >= 32 => s.as_bytes().to_vec(),
            Some(_) => anyhow::bail!("QUIZD_JWT_SECRET must be at least 32 characters"),
            None => auth::store::signing_secret(&pool).await?,
        };
        Ok(Self::new(pool, &secret))
    }
}

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
            ])
            .expose_headers([
                "x-request-id",
                "retry-after",
                "content-language",
                "location",
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
                .add(("Referrer-Policy", "no-referrer")),
        )
        .wrap(from_fn(deny_framing))
        .wrap(from_fn(telemetry::observe))
        .wrap(TracingLogger::<telemetry::RequestSpan>::new())
        .configure(routes)
        .configure(crate::lti::routes::configure)
        // Invitations first: its `/enrollments/csv` also fits courses' `/enrollments/{user_id}`.
        .configure(crate::invitations::configure)
        .configure(courses::routes::configure)
        .route("/docs", web::get().to(docs_redirect))
        .service(SwaggerUi::new("/docs/{_:.*}").url("/openapi.json", openapi::document()))
        .default_service(web::to(not_found))
}

/// Every endpoint. Resources (not method-guarded routes) so that a wrong method is a 405.
fn routes(cfg: &mut web::ServiceConfig) {
    use crate::telemetry::resource;
    use web::{get, patch, post, put};
    let authoring_limit = web::PayloadConfig::new(quizzes::authoring::AUTHORING_BODY_LIMIT);
    cfg.service(
        resource("/v1/quizzes")
            .app_data(authoring_limit.clone())
            .route(get().to(quizzes::routes::list_quizzes))
            .route(post().to(quizzes::authoring::create_quiz)),
    )
    .service(
        resource("/v1/quizzes/{slug}")
            .app_data(authoring_limit)
            .route(get().to(quizzes::routes::get_quiz))
            .route(put().to(quizzes::authoring::update_quiz)),
    )
    .service(
        resource("/v1/quizzes/{slug}/versions/{version}")
            .route(get().to(quizzes::authoring::get_version)),
    )
    .service(
        resource("/v1/quizzes/{slug}/authors").route(get().to(quizzes::authoring::list_authors)),
    )
    .service(
        resource("/v1/quizzes/{slug}/versions/{version}/translations/{locale}.xlf")
            .app_data(web::PayloadConfig::new(
                quizzes::authoring::AUTHORING_BODY_LIMIT,
            ))
            .route(get().to(quizzes::translations::export_xliff))
            .route(put().to(quizzes::translations::import_xliff)),
    )
    .service(
        resource("/v1/quizzes/{slug}/translations")
            .route(get().to(quizzes::translations::translation_status)),
    )
    .service(
        resource("/v1/quizzes/{slug}/authors/{user_id}")
            .route(put().to(quizzes::authoring::add_author))
            .route(web::delete().to(quizzes::authoring::remove_author)),
    )
    .service(resource("/v1/auth/register").route(post().to(auth::routes::register)))
    .service(resource("/v1/auth/login").route(post().to(auth::routes::login)))
    .service(resource("/v1/auth/refresh").route(post().to(auth::routes::refresh)))
    .service(resource("/v1/auth/logout").route(post().to(auth::routes::logout)))
    .service(
        resource("/v1/me")
            .route(get().to(auth::routes::me))
            .route(patch().to(auth::routes::update_me))
            .route(web::delete().to(privacy::erase)),
    )
    .service(resource("/v1/me/export").route(get().to(privacy::export)))
    .service(resource("/v1/audit").route(get().to(audit::routes::list_audit)))
    .service(resource("/v1/users/{id}/role").route(put().to(auth::routes::set_role)))
    .service(
        resource("/v1/courses")
            .route(get().to(courses::routes::list_courses))
            .route(post().to(courses::routes::create_course)),
    )
    .service(
        resource("/v1/courses/{id}")
            .route(get().to(courses::routes::get_course))
            .route(patch().to(courses::routes::update_course)),
    )
    .service(
        resource("/v1/courses/{id}/enrollments")
            .route(get().to(courses::routes::roster))
            .route(post().to(courses::routes::enroll)),
    )
    .service(
        resource("/v1/courses/{id}/assignments")
            .route(get().to(assignments::routes::list_assignments))
            .route(post().to(assignments::routes::create_assignment)),
    )
    .service(resource("/v1/assignments").route(get().to(assignments::routes::my_assignments)))
    .service(
        resource("/v1/courses/{id}/accommodations")
            .route(get().to(assignments::overrides::list_accommodations)),
    )
    .service(
        resource("/v1/courses/{id}/accommodations/{user_id}")
            .route(put().to(assignments::overrides::put_accommodation))
            .route(web::delete().to(assignments::overrides::delete_accommodation)),
    )
    .service(
        resource("/v1/assignments/{id}")
            .route(get().to(assignments::routes::get_assignment))
            .route(patch().to(assignments::routes::update_assignment))
            .route(web::delete().to(assignments::routes::delete_assignment)),
    )
    .service(
        resource("/v1/assignments/{id}/close")
            .route(post().to(assignments::routes::close_assignment)),
    )
    .service(
        resource("/v1/assignments/{id}/overrides")
            .route(get().to(assignments::overrides::list_overrides))
            .route(post().to(assignments::overrides::bulk_overrides)),
    )
    .service(
        resource("/v1/assignments/{id}/overrides/{user_id}")
            .route(put().to(assignments::overrides::put_override))
            .route(web::delete().to(assignments::overrides::delete_override)),
    )
    .service(
        resource("/v1/assignments/{id}/attempts")
            .route(get().to(attempts::routes::assignment_attempts))
            .route(post().to(attempts::routes::start_assignment_attempt)),
    )
    .service(
        resource("/v1/quizzes/{slug}/attempts")
            .route(post().to(attempts::routes::start_practice_attempt)),
    )
    .service(resource("/v1/attempts/{id}").route(get().to(attempts::routes::get_attempt)))
    .service(
        resource("/v1/attempts/{id}/responses/{question_id}")
            .route(put().to(attempts::routes::answer)),
    )
    .service(resource("/v1/attempts/{id}/finish").route(post().to(attempts::routes::finish)))
    .service(resource("/v1/me/attempts").route(get().to(attempts::routes::my_attempts)))
    .service(
        resource("/v1/assignments/{id}/analytics")
            .route(get().to(analytics::routes::assignment_analytics)),
    )
    .service(
        resource("/v1/assignments/{id}/analytics/responses.csv")
            .route(get().to(analytics::export::responses_csv)),
    )
    .service(
        resource("/v1/assignments/{id}/analytics/results.csv")
            .route(get().to(analytics::export::results_csv)),
    )
    .service(
        resource("/v1/quizzes/{slug}/analytics").route(get().to(analytics::routes::quiz_analytics)),
    )
    .service(resource("/healthz").route(get().to(ops::healthz)))
    .service(resource("/readyz").route(get().to(ops::readyz)))
    .service(resource("/metrics").route(get().to(ops::metrics)));
    crate::web::configure(cfg);
}

/// Starts serving on `listener`; the returned server stops gracefully on SIGINT/SIGTERM.
pub fn serve(
    listener: TcpListener,
    state: web::Data<AppState>,
    workers: Option<usize>,
) -> std::io::Result<Server> {
    quizzes::spawn_change_listener(state.clone());
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
