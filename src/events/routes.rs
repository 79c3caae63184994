//! The admin side of learning events out: xAPI deliveries, listed and retried.

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use utoipa::IntoParams;

use super::{DeliveryFilter, EventDelivery, EventDeliveryList, Retry, XAPI, store};
use crate::auth::{CurrentUser, Role};
use crate::error::{ApiError, Code, Problem};
use crate::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct EventDeliveryQuery {
    /// `failed` (failed or parked), `pending`, `delivered`; all when absent.
    pub status: Option<DeliveryFilter>,
    /// At most this many (default 100, at most 1000).
    pub limit: Option<i64>,
}

/// Deliveries of events to the Learning Record Store (xAPI statements), newest first, with
/// the last error of each. Admins.
#[utoipa::path(get, path = "/v1/xapi/deliveries", tag = "events", security(("bearer" = [])),
    params(EventDeliveryQuery),
    responses(
        (status = 200, description = "The deliveries", body = EventDeliveryList),
        (status = 400, description = "Malformed query", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_xapi_deliveries(
    state: web::Data<AppState>,
    user: CurrentUser,
    query: web::Query<EventDeliveryQuery>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let limit = query.limit.unwrap_or(100).clamp(1, 1000);
    let items = store::deliveries(&state.pool, XAPI, query.status, limit).await?;
    Ok(HttpResponse::Ok().json(EventDeliveryList { items }))
}

/// Tries an undelivered event's statements again now (its count of tries starts afresh).
/// Admins.
#[utoipa::path(post, path = "/v1/xapi/deliveries/{id}/retry", tag = "events", security(("bearer" = [])),
    params(("id" = i64, Path, description = "The delivery's (outbox event's) id")),
    responses(
        (status = 202, description = "Scheduled now", body = EventDelivery),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such delivery", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Delivered already", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn retry_xapi_delivery(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<i64>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let pool = &state.pool;
    let retried = super::retry(
        pool,
        XAPI,
        *id,
        || store::delivery::<EventDelivery>(pool, XAPI, *id),
        |d| d.status == "delivered",
    )
    .await?;
    match retried {
        Retry::Scheduled(d) => Ok(HttpResponse::Accepted().json(d)),
        Retry::AlreadyDelivered => Err(ApiError::new(
            Code::DeliveryDone,
            "These statements have been delivered already.",
        )),
        Retry::NotFound => Err(ApiError::new(
            Code::DeliveryNotFound,
            "There is no such xAPI delivery.",
        )),
    }
}

/// The learning-events endpoints (resources, so that a wrong method is a 405).
pub fn configure(cfg: &mut web::ServiceConfig) {
    use crate::telemetry::resource;
    use web::{get, post};
    cfg.service(resource("/v1/xapi/deliveries").route(get().to(list_xapi_deliveries)))
        .service(resource("/v1/xapi/deliveries/{id}/retry").route(post().to(retry_xapi_delivery)));
}

#[derive(utoipa::OpenApi)]
#[openapi(
    paths(list_xapi_deliveries, retry_xapi_delivery),
    components(schemas(DeliveryFilter))
)]
pub struct Api;
