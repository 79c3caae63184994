//! The admin API of webhooks: subscriptions (create, list, read, change, delete), their
//! secrets (shown once, at creation and at rotation), their deliveries (listed, retried).
//! Admins only.

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use super::store::{self, Change, NewWebhook, Webhook};
use crate::audit::{self, Action, Entry};
use crate::auth::{CurrentUser, Role};
use crate::error::{ApiError, Code, Problem};
use crate::events::routes::EventDeliveryQuery;
use crate::events::{self, Retry};
use crate::state::AppState;

fn not_found() -> ApiError {
    ApiError::new(
        Code::WebhookNotFound,
        "There is no such webhook subscription.",
    )
}

/// A new subscription.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookCreate {
    /// https (plain http only to a loopback host) to a host quizd is configured to call
    /// (`--webhook-host`), without a user name, password or fragment, at most 2048 bytes.
    pub url: String,
    /// Public topics: `response.recorded`, `attempt.started`, `attempt.finished`,
    /// `grade.changed` (a staff override or a regrade), `quiz.version_created`.
    pub topics: Vec<String>,
    /// At most 500 characters.
    pub description: Option<String>,
}

/// A change to a subscription; an absent field stays as it is.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookUpdate {
    pub url: Option<String>,
    pub topics: Option<Vec<String>>,
    pub description: Option<String>,
    /// `true`: nothing more is queued for it (what happens meanwhile is never sent to it) and
    /// what was queued waits; `false`: enabled again, for events from then on.
    pub disabled: Option<bool>,
}

/// A subscription with its signing secret, shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookCreated {
    #[serde(flatten)]
    pub webhook: Webhook,
    /// `whsec_` and the base64 of the HMAC key, as Standard Webhooks libraries take it. Not
    /// shown again: absent from a replay of the creation (`Idempotent-Replayed: true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookList {
    pub items: Vec<Webhook>,
}

/// A rotated secret, shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretRotated {
    /// The new secret (`whsec_…`). Not shown again.
    pub secret: String,
    /// Until then deliveries carry a signature with the previous secret too.
    pub previous_secret_expires_at: DateTime<Utc>,
}

/// A delivery of an event to a subscription, as admins see it.
#[derive(Debug, Serialize, ToSchema, sqlx::FromRow)]
pub struct WebhookDelivery {
    /// The outbox event's id.
    pub id: i64,
    /// The public topic (`type` in the body).
    pub topic: String,
    /// The attempt, or for `quiz.version_created` the quiz version, the event is about.
    #[sqlx(rename = "aggregate_id")]
    pub subject_id: Uuid,
    /// `webhook-id`: the same on every try.
    #[sqlx(skip)]
    pub webhook_id: String,
    /// `delivered`, `pending`, `failed` (will be tried again) or `parked` (retry it by hand).
    pub status: String,
    pub tries: i32,
    /// The last failure (the receiver's status and the start of its answer), or why nothing
    /// was sent.
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub next_attempt_at: Option<DateTime<Utc>>,
}

impl WebhookDelivery {
    fn shown(mut self, subscription: Uuid) -> Self {
        self.webhook_id = super::message_id(subscription, self.id);
        if let Some(public) = super::public_topic(&self.topic) {
            self.topic = public.to_string();
        }
        self
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookDeliveryList {
    pub items: Vec<WebhookDelivery>,
}

/// Subscribes a URL to topics. The answer carries the signing secret, shown this once (a
/// replay of the request with its `Idempotency-Key` answers the subscription without it).
/// Admins.
#[utoipa::path(post, path = "/v1/webhooks", tag = "events", security(("bearer" = [])),
    request_body = WebhookCreate,
    responses(
        (status = 201, description = "Subscribed", body = WebhookCreated),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A refused URL, topic or description", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_webhook(
    req: HttpRequest,
    state: web::Data<AppState>,
    user: CurrentUser,
    body: crate::extract::LaterJson<WebhookCreate>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let body = body.parse()?;
    let url = super::check_url(&body.url, &state.webhook_hosts)?;
    let topics = super::check_topics(&body.topics)?;
    let description = body.description.as_deref().unwrap_or_default();
    super::check_description(description)?;
    let secret = super::new_secret();
    let id = Uuid::now_v7();
    let mut tx = state.pool.begin().await?;
    let webhook = store::insert(
        &mut tx,
        NewWebhook {
            id,
            url: url.as_str(),
            topics: &topics,
            description,
            created_by: user.id,
            secret: &secret,
        },
    )
    .await?;
    events::store::set_topics_from_now(
        &mut *tx,
        &super::consumer(id),
        &super::outbox_topics(&topics),
    )
    .await?;
    audit::store::record(
        &mut *tx,
        Entry::by(user.id, Action::WebhookCreated, &req)
            .subject(id)
            .detail(json!({ "url": webhook.url, "topics": webhook.topics })),
    )
    .await?;
    tx.commit().await?;
    // A replay of this creation answers the subscription without its secret.
    let replay = serde_json::to_vec(&webhook).map_err(ApiError::internal)?;
    let mut res = HttpResponse::Created().json(WebhookCreated {
        webhook,
        secret: Some(secret),
    });
    res.extensions_mut()
        .insert(crate::idempotency::ReplayBody(replay.into()));
    Ok(res)
}

/// Every subscription (never their secrets). Admins.
#[utoipa::path(get, path = "/v1/webhooks", tag = "events", security(("bearer" = [])),
    responses(
        (status = 200, description = "The subscriptions", body = WebhookList),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_webhooks(
    state: web::Data<AppState>,
    user: CurrentUser,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let items = store::list(&state.pool).await?;
    Ok(HttpResponse::Ok().json(WebhookList { items }))
}

/// One subscription (never its secret). Admins.
#[utoipa::path(get, path = "/v1/webhooks/{id}", tag = "events", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The subscription's id")),
    responses(
        (status = 200, description = "The subscription", body = Webhook),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such subscription", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_webhook(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let webhook = store::get(&state.pool, *id).await?.ok_or_else(not_found)?;
    Ok(HttpResponse::Ok().json(webhook))
}

/// Changes a subscription's URL, topics or description, or disables or enables it. Events
/// already queued keep going to it (to the new URL); new topics take events from now on.
/// Admins.
#[utoipa::path(patch, path = "/v1/webhooks/{id}", tag = "events", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The subscription's id")),
    request_body = WebhookUpdate,
    responses(
        (status = 200, description = "Changed", body = Webhook),
        (status = 400, description = "Malformed id or body", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such subscription", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A refused URL, topic or description", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn update_webhook(
    req: HttpRequest,
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    body: crate::extract::LaterJson<WebhookUpdate>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let body = body.parse()?;
    let url = body
        .url
        .as_deref()
        .map(|u| super::check_url(u, &state.webhook_hosts))
        .transpose()?;
    let topics = body
        .topics
        .as_deref()
        .map(super::check_topics)
        .transpose()?;
    if let Some(d) = &body.description {
        super::check_description(d)?;
    }
    let mut tx = state.pool.begin().await?;
    let webhook = store::update(
        &mut tx,
        *id,
        Change {
            url: url.as_ref().map(|u| u.as_str()),
            topics: topics.as_deref(),
            description: body.description.as_deref(),
            disabled: body.disabled,
        },
    )
    .await?
    .ok_or_else(not_found)?;
    // Disabled: nothing more is queued for it; enabled: its topics, as they are now.
    let wanted = if webhook.disabled_at.is_some() {
        Vec::new()
    } else {
        super::outbox_topics(&webhook.topics)
    };
    events::store::set_topics_from_now(&mut *tx, &super::consumer(*id), &wanted).await?;
    audit::store::record(
        &mut *tx,
        Entry::by(user.id, Action::WebhookUpdated, &req)
            .subject(*id)
            .detail(json!({
                "url": webhook.url,
                "topics": webhook.topics,
                "disabled": webhook.disabled_at.is_some(),
            })),
    )
    .await?;
    tx.commit().await?;
    Ok(HttpResponse::Ok().json(webhook))
}

/// Deletes a subscription, its secret and its deliveries (delivered or not). Admins.
#[utoipa::path(delete, path = "/v1/webhooks/{id}", tag = "events", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The subscription's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such subscription", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_webhook(
    req: HttpRequest,
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let mut tx = state.pool.begin().await?;
    if !store::delete(&mut *tx, *id).await? {
        return Err(not_found());
    }
    events::store::forget_consumer(&mut tx, &super::consumer(*id)).await?;
    audit::store::record(
        &mut *tx,
        Entry::by(user.id, Action::WebhookDeleted, &req).subject(*id),
    )
    .await?;
    tx.commit().await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Gives a subscription a new signing secret, shown this once. For 24 hours deliveries carry
/// a signature with the previous secret too (`webhook-signature` holds both), so the receiver
/// can change its secret meanwhile. Admins.
#[utoipa::path(post, path = "/v1/webhooks/{id}/rotate-secret", tag = "events", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The subscription's id")),
    responses(
        (status = 200, description = "The new secret", body = SecretRotated),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such subscription", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn rotate_secret(
    req: HttpRequest,
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let secret = super::new_secret();
    let mut tx = state.pool.begin().await?;
    let expires = store::rotate(&mut *tx, *id, &secret, super::ROTATION_GRACE.num_seconds())
        .await?
        .ok_or_else(not_found)?;
    audit::store::record(
        &mut *tx,
        Entry::by(user.id, Action::WebhookSecretRotated, &req).subject(*id),
    )
    .await?;
    tx.commit().await?;
    Ok(HttpResponse::Ok().json(SecretRotated {
        secret,
        previous_secret_expires_at: expires,
    }))
}

/// A subscription's deliveries, newest first, with the last error of each. Admins.
#[utoipa::path(get, path = "/v1/webhooks/{id}/deliveries", tag = "events", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The subscription's id"), EventDeliveryQuery),
    responses(
        (status = 200, description = "The deliveries", body = WebhookDeliveryList),
        (status = 400, description = "Malformed id or query", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such subscription", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_webhook_deliveries(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    query: web::Query<EventDeliveryQuery>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    store::get(&state.pool, *id).await?.ok_or_else(not_found)?;
    let limit = query.limit.unwrap_or(100).clamp(1, 1000);
    let items: Vec<WebhookDelivery> =
        events::store::deliveries(&state.pool, &super::consumer(*id), query.status, limit).await?;
    let items = items.into_iter().map(|d| d.shown(*id)).collect();
    Ok(HttpResponse::Ok().json(WebhookDeliveryList { items }))
}

/// Tries an undelivered (failed or parked) event again now; its count of tries starts afresh.
/// Admins.
#[utoipa::path(post, path = "/v1/webhooks/{id}/deliveries/{event_id}/retry", tag = "events", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The subscription's id"),
        ("event_id" = i64, Path, description = "The delivery's (outbox event's) id"),
    ),
    responses(
        (status = 202, description = "Scheduled now", body = WebhookDelivery),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such subscription or delivery", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Delivered already", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn retry_webhook_delivery(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(Uuid, i64)>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let (id, event) = *path;
    store::get(&state.pool, id).await?.ok_or_else(not_found)?;
    let pool = &state.pool;
    let consumer = super::consumer(id);
    let retried = events::retry(
        pool,
        &consumer,
        event,
        || events::store::delivery::<WebhookDelivery>(pool, &consumer, event),
        |d| d.status == "delivered",
    )
    .await?;
    match retried {
        Retry::Scheduled(d) => Ok(HttpResponse::Accepted().json(d.shown(id))),
        Retry::AlreadyDelivered => Err(ApiError::new(
            Code::DeliveryDone,
            "This event has been delivered to this webhook already.",
        )),
        Retry::NotFound => Err(ApiError::new(
            Code::DeliveryNotFound,
            "This webhook has no such delivery.",
        )),
    }
}

/// The webhook endpoints (resources, so that a wrong method is a 405).
pub fn configure(cfg: &mut web::ServiceConfig) {
    use crate::telemetry::resource;
    use actix_web::middleware::from_fn;
    use web::{delete, get, patch, post};
    cfg.service(
        resource("/v1/webhooks")
            .route(get().to(list_webhooks))
            .route(
                post()
                    .to(create_webhook)
                    .wrap(from_fn(crate::idempotency::guard)),
            ),
    )
    .service(
        resource("/v1/webhooks/{id}")
            .route(get().to(get_webhook))
            .route(patch().to(update_webhook))
            .route(delete().to(delete_webhook)),
    )
    .service(resource("/v1/webhooks/{id}/rotate-secret").route(post().to(rotate_secret)))
    .service(resource("/v1/webhooks/{id}/deliveries").route(get().to(list_webhook_deliveries)))
    .service(
        resource("/v1/webhooks/{id}/deliveries/{event_id}/retry")
            .route(post().to(retry_webhook_delivery)),
    );
}

#[derive(utoipa::OpenApi)]
#[openapi(paths(
    create_webhook,
    list_webhooks,
    get_webhook,
    update_webhook,
    delete_webhook,
    rotate_secret,
    list_webhook_deliveries,
    retry_webhook_delivery
))]
pub struct Api;
