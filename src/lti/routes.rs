//! The admin side of LTI: registrations, quizd's keys and their JWKS, grade deliveries.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::ags::{self, DeliveryList};
use super::keys::{self, PublicKeyInfo};
use super::registrations::{
    self, Registration, RegistrationCreate, RegistrationList, RegistrationUpdate,
};
use super::store;
use crate::audit::{self, Action, Entry};
use crate::auth::{CurrentUser, Role};
use crate::error::{ApiError, Code, Problem};
use crate::events::{DeliveryFilter, Retry};
use crate::state::AppState;

fn registration_not_found() -> ApiError {
    ApiError::new(
        Code::RegistrationNotFound,
        "There is no such LTI registration.",
    )
}

/// quizd's public keys (a JSON Web Key Set): platforms verify quizd's Deep Linking responses
/// and client assertions with them. Includes recently retired keys.
#[utoipa::path(get, path = "/.well-known/jwks.json", tag = "lti",
    responses(
        (status = 200, description = "The key set", body = Object),
    ))]
pub async fn jwks(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let set = keys::jwks(&state.pool).await.map_err(ApiError::internal)?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .json(set))
}

/// The same key set under the API's prefix.
#[utoipa::path(get, path = "/v1/lti/jwks", tag = "lti",
    responses(
        (status = 200, description = "The key set", body = Object),
    ))]
pub async fn jwks_v1(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    jwks(state).await
}

/// Registers a platform (an LMS): its issuer, client id, deployments, endpoints and keys. The
/// answer says which URLs to enter in the platform. Admins.
#[utoipa::path(post, path = "/v1/lti/registrations", tag = "lti", security(("bearer" = [])),
    request_body = RegistrationCreate,
    responses(
        (status = 201, description = "Registered", body = Registration),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "This issuer and client id are registered already", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An invalid field", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_registration(
    req: HttpRequest,
    state: web::Data<AppState>,
    user: CurrentUser,
    body: crate::extract::LaterJson<RegistrationCreate>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let body = body.parse()?;
    registrations::check_create(&body)?;
    let mut tx = state.pool.begin().await?;
    let row =
        store::insert_registration(&mut *tx, &body)
            .await
            .map_err(|e| match ApiError::from(e) {
                e if e.status == StatusCode::CONFLICT => ApiError::new(
                    Code::RegistrationExists,
                    "A platform with this issuer and client id is registered already.",
                ),
                e => e,
            })?;
    audit::store::record(
        &mut *tx,
        Entry::by(user.id, Action::LtiRegistrationCreated, &req)
            .subject(row.id)
            .detail(json!({ "issuer": row.issuer, "client_id": row.client_id })),
    )
    .await?;
    tx.commit().await?;
    Ok(HttpResponse::Created().json(row.view(&super::public_base(&state, &req))))
}

/// The registered platforms. Admins.
#[utoipa::path(get, path = "/v1/lti/registrations", tag = "lti", security(("bearer" = [])),
    responses(
        (status = 200, description = "The registrations", body = RegistrationList),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_registrations(
    req: HttpRequest,
    state: web::Data<AppState>,
    user: CurrentUser,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let base = super::public_base(&state, &req);
    let items = store::registrations(&state.pool)
        .await?
        .into_iter()
        .map(|r| r.view(&base))
        .collect();
    Ok(HttpResponse::Ok().json(RegistrationList { items }))
}

/// One registered platform. Admins.
#[utoipa::path(get, path = "/v1/lti/registrations/{id}", tag = "lti", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The registration's id")),
    responses(
        (status = 200, description = "The registration", body = Registration),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such registration", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_registration(
    req: HttpRequest,
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let row = store::registration(&state.pool, *id)
        .await?
        .ok_or_else(registration_not_found)?;
    Ok(HttpResponse::Ok().json(row.view(&super::public_base(&state, &req))))
}

/// Changes a registration: deployments, endpoints, keys (a key change drops the cached keys).
/// Admins.
#[utoipa::path(patch, path = "/v1/lti/registrations/{id}", tag = "lti", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The registration's id")),
    request_body = RegistrationUpdate,
    responses(
        (status = 200, description = "Changed", body = Registration),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such registration", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An invalid field", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn update_registration(
    req: HttpRequest,
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    body: crate::extract::LaterJson<RegistrationUpdate>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let body = body.parse()?;
    let row = registrations::update(&state.pool, *id, &body)
        .await?
        .ok_or_else(registration_not_found)?;
    // Recorded after the change (the update checks and writes on the pool itself): should the
    // record fail, the admin gets the error rather than a silent success.
    audit::store::record(
        &state.pool,
        Entry::by(user.id, Action::LtiRegistrationUpdated, &req).subject(row.id),
    )
    .await?;
    Ok(HttpResponse::Ok().json(row.view(&super::public_base(&state, &req))))
}

/// Removes a registration: its platform can no longer launch quizd. Courses and assignments
/// made by its launches stay. Admins.
#[utoipa::path(delete, path = "/v1/lti/registrations/{id}", tag = "lti", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The registration's id")),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such registration", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_registration(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let mut tx = state.pool.begin().await?;
    if !store::delete_registration(&mut *tx, *id).await? {
        return Err(registration_not_found());
    }
    audit::store::record(
        &mut *tx,
        Entry::by(user.id, Action::LtiRegistrationDeleted, &req).subject(*id),
    )
    .await?;
    tx.commit().await?;
    Ok(HttpResponse::NoContent().finish())
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeyList {
    /// The published keys, newest first; the one without `retired_at` signs.
    pub items: Vec<PublicKeyInfo>,
}

/// quizd's published signing keys. Admins.
#[utoipa::path(get, path = "/v1/lti/keys", tag = "lti", security(("bearer" = [])),
    responses(
        (status = 200, description = "The keys", body = KeyList),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_keys(
    state: web::Data<AppState>,
    user: CurrentUser,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    keys::active(&state.pool)
        .await
        .map_err(ApiError::internal)?;
    let items = store::published_keys(&state.pool)
        .await?
        .into_iter()
        .map(|k| PublicKeyInfo {
            kid: k.kid,
            created_at: k.created_at,
            retired_at: k.retired_at,
        })
        .collect();
    Ok(HttpResponse::Ok().json(KeyList { items }))
}

/// Rotates quizd's signing key: a new key signs from now on; the previous one stays published
/// for seven days. Admins.
#[utoipa::path(post, path = "/v1/lti/keys/rotate", tag = "lti", security(("bearer" = [])),
    responses(
        (status = 201, description = "The new key", body = PublicKeyInfo),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn rotate_key(
    state: web::Data<AppState>,
    user: CurrentUser,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let kid = keys::rotate(&state.pool)
        .await
        .map_err(ApiError::internal)?;
    let key = keys::active(&state.pool)
        .await
        .map_err(ApiError::internal)?;
    debug_assert_eq!(key.kid, kid);
    Ok(HttpResponse::Created().json(PublicKeyInfo {
        kid: key.kid,
        created_at: key.created_at,
        retired_at: None,
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeliveryQuery {
    /// `failed` (failed or parked), `pending`, `delivered`; all when absent.
    pub status: Option<DeliveryFilter>,
    /// Only this platform's.
    pub registration: Option<Uuid>,
    /// At most this many (default 100, at most 1000).
    pub limit: Option<i64>,
}

/// Grade deliveries to LMSs (grade passback), newest first, with the last error of each.
/// Admins.
#[utoipa::path(get, path = "/v1/lti/deliveries", tag = "lti", security(("bearer" = [])),
    params(DeliveryQuery),
    responses(
        (status = 200, description = "The deliveries", body = DeliveryList),
        (status = 400, description = "Malformed query", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_deliveries(
    state: web::Data<AppState>,
    user: CurrentUser,
    query: web::Query<DeliveryQuery>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let limit = query.limit.unwrap_or(100).clamp(1, 1000);
    let items = store::deliveries(&state.pool, query.status, query.registration, limit).await?;
    Ok(HttpResponse::Ok().json(DeliveryList { items }))
}

/// Tries an undelivered grade again now (its count of tries starts afresh). Admins.
#[utoipa::path(post, path = "/v1/lti/deliveries/{id}/retry", tag = "lti", security(("bearer" = [])),
    params(("id" = i64, Path, description = "The delivery's (outbox event's) id")),
    responses(
        (status = 202, description = "Scheduled now", body = ags::Delivery),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such delivery", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Delivered already", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn retry_delivery(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<i64>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    match ags::retry(&state.pool, *id).await? {
        Retry::Scheduled(d) => Ok(HttpResponse::Accepted().json(d)),
        Retry::AlreadyDelivered => Err(ApiError::new(
            Code::DeliveryDone,
            "This grade has been delivered already.",
        )),
        Retry::NotFound => Err(ApiError::new(
            Code::DeliveryNotFound,
            "There is no such grade delivery.",
        )),
    }
}

/// The LTI endpoints (resources, so that a wrong method is a 405).
pub fn configure(cfg: &mut web::ServiceConfig) {
    use crate::telemetry::resource;
    use web::{delete, get, patch, post};
    cfg.service(resource("/.well-known/jwks.json").route(get().to(jwks)))
        .service(resource("/v1/lti/jwks").route(get().to(jwks_v1)))
        .service(
            resource("/v1/lti/login")
                .route(get().to(super::login::login_get))
                .route(post().to(super::login::login_post)),
        )
        .service(resource("/v1/lti/launch").route(post().to(super::launch::launch)))
        .service(resource("/v1/lti/exchange").route(post().to(super::exchange::exchange)))
        .service(resource("/v1/lti/deep-link").route(post().to(super::deep_linking::respond)))
        .service(
            resource("/v1/lti/deep-link/{id}").route(get().to(super::deep_linking::get_request)),
        )
        .service(
            resource("/v1/lti/deep-link/{id}/return")
                .route(post().to(super::deep_linking::return_to_platform)),
        )
        .service(
            resource("/v1/lti/registrations")
                .route(get().to(list_registrations))
                .route(
                    post()
                        .to(create_registration)
                        .wrap(actix_web::middleware::from_fn(crate::idempotency::guard)),
                ),
        )
        .service(
            resource("/v1/lti/registrations/{id}")
                .route(get().to(get_registration))
                .route(patch().to(update_registration))
                .route(delete().to(delete_registration)),
        )
        .service(resource("/v1/lti/keys").route(get().to(list_keys)))
        .service(resource("/v1/lti/keys/rotate").route(post().to(rotate_key)))
        .service(resource("/v1/lti/deliveries").route(get().to(list_deliveries)))
        .service(resource("/v1/lti/deliveries/{id}/retry").route(post().to(retry_delivery)))
        .service(resource("/v1/lti/courses/{id}/roster").route(get().to(super::nrps::roster)));
}

/// This module's part of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(
        jwks,
        jwks_v1,
        super::login::login_get,
        super::login::login_post,
        super::launch::launch,
        super::exchange::exchange,
        super::deep_linking::respond,
        super::deep_linking::get_request,
        super::deep_linking::return_to_platform,
        super::nrps::roster,
        create_registration,
        list_registrations,
        get_registration,
        update_registration,
        delete_registration,
        list_keys,
        rotate_key,
        list_deliveries,
        retry_delivery,
    ),
    components(schemas(DeliveryFilter))
)]
pub struct Api;
