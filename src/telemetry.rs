//! Logs (structured, with a request id) and Prometheus metrics.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::OnceLock;
use std::time::Instant;

use actix_web::HttpMessage;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{HeaderName, HeaderValue};
use metrics::{Counter, Histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tracing::Span;
use tracing::field::Empty;
use tracing_actix_web::{RequestId, RootSpanBuilder};
use tracing_subscriber::EnvFilter;

/// Logs go to stderr; `RUST_LOG` filters them, `QUIZD_LOG_FORMAT=json` makes them JSON lines.
pub fn init_logging() {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,actix_server=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let json = std::env::var("QUIZD_LOG_FORMAT").is_ok_and(|f| f == "json");
    let _ = if json {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.try_init()
    };
}

/// The span every request's logs carry: its id, method and path, and (at the end) its status.
/// Few fields on purpose: each is formatted for every request.
pub struct RequestSpan;

impl RootSpanBuilder for RequestSpan {
    fn on_request_start(req: &ServiceRequest) -> Span {
        let id = req.extensions().get::<RequestId>().copied();
        tracing::info_span!(
            "request",
            request_id = id.map(tracing::field::display),
            method = %req.method(),
            path = req.path(),
            status = Empty,
        )
    }

    fn on_request_end<B: MessageBody>(
        span: Span,
        outcome: &Result<ServiceResponse<B>, actix_web::Error>,
    ) {
        let status = match outcome {
            Ok(res) => res.status(),
            Err(e) => e.as_response_error().status_code(),
        };
        span.record("status", status.as_u16());
    }
}

const LATENCY_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The process-wide Prometheus recorder (installed on first use).
pub fn prometheus() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full("quizd_http_request_duration_seconds".into()),
                    &LATENCY_BUCKETS,
                )
                .expect("buckets are not empty")
                .build_recorder();
            let handle = recorder.handle();
            let _ = metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}

/// The route pattern a resource serves, kept with the resource so that metrics can label a
/// request without matching its path against every route again.
#[derive(Clone, Copy)]
struct RoutePattern(&'static str);

/// `web::resource(path)`, labelled for the metrics: register every resource with it.
pub fn resource(path: &'static str) -> actix_web::Resource {
    actix_web::web::resource(path).app_data(RoutePattern(path))
}

/// A request method as a metrics label: the standard ones, else `OTHER` (a client can send any
/// token as a method, and each would be a new series).
fn method_label(method: &Method) -> &'static str {
    const KNOWN: [Method; 9] = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::OPTIONS,
        Method::CONNECT,
        Method::TRACE,
    ];
    KNOWN
        .iter()
        .find(|m| *m == method)
        .map_or("OTHER", |m| m.as_str())
}

/// Method, route and status.
type RequestLabels = (&'static str, Cow<'static, str>, u16);

/// Counts requests by route and status, times them, and returns the request id.
pub async fn observe<B: MessageBody>(
    req: ServiceRequest,
    next: actix_web::middleware::Next<B>,
) -> Result<ServiceResponse<B>, actix_web::Error> {
    let started = Instant::now();
    let method = method_label(req.method());
    let mut res = next.call(req).await?;
    let route: Cow<'static, str> = match res.request().app_data::<RoutePattern>() {
        Some(r) => Cow::Borrowed(r.0),
        // Services that are not resources (Swagger UI), and requests nothing matched.
        None => res
            .request()
            .match_pattern()
            .map_or(Cow::Borrowed("unmatched"), Cow::Owned),
    };
    let status = res.status().as_u16();
    let elapsed = started.elapsed().as_secs_f64();
    // The registry's handles, looked up once per label set and thread.
    thread_local! {
        static HANDLES: RefCell<HashMap<RequestLabels, (Counter, Histogram)>> = RefCell::default();
    }
    HANDLES.with_borrow_mut(|handles| {
        let (requests, latency) =
            handles
                .entry((method, route, status))
                .or_insert_with_key(|(method, route, status)| {
                    (
                        metrics::counter!("quizd_http_requests_total", "method" => *method,
                        "route" => route.clone(), "status" => status.to_string()),
                        metrics::histogram!("quizd_http_request_duration_seconds",
                        "method" => *method, "route" => route.clone()),
                    )
                });
        requests.increment(1);
        latency.record(elapsed);
    });
    let id = res.request().extensions().get::<RequestId>().copied();
    if let Some(id) = id
        && let Ok(value) = HeaderValue::from_str(&id.to_string())
    {
        res.headers_mut()
            .insert(HeaderName::from_static("x-request-id"), value);
    }
    Ok(res)
}

/// Drains the recorder's histogram buckets every few seconds. Without it every latency sample
/// is kept until `/metrics` is scraped, and memory grows with traffic when nobody scrapes.
pub async fn metrics_upkeep(handle: PrometheusHandle, mut shutdown: crate::background::Shutdown) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(5));
    while shutdown.tick(&mut tick).await {
        handle.run_upkeep();
    }
}
