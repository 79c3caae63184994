//! `GET /v1/audit`: the audit log, for admins.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::Action;
use super::store::{self, AuditEntry, Filter};
use crate::auth::{CurrentUser, Role};
use crate::error::{ApiError, Code, Problem};
use crate::state::AppState;

pub const MAX_LIMIT: i64 = 500;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only this action.
    pub action: Option<Action>,
    /// Only actions by this person.
    pub actor: Option<Uuid>,
    /// Only actions about this person, quiz or registration.
    pub subject: Option<Uuid>,
    /// From this time (inclusive).
    pub since: Option<DateTime<Utc>>,
    /// Up to this time (exclusive).
    pub until: Option<DateTime<Utc>>,
    /// Entries older than this id: the `next_before` of the previous page.
    pub before: Option<i64>,
    /// Entries per page, 1 to 500 (default 100).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditPage {
    /// Newest first.
    pub items: Vec<AuditEntry>,
    /// Pass as `before` for the next page; absent on the last page.
    pub next_before: Option<i64>,
}

/// The audit log, newest first, filtered. Admins only.
#[utoipa::path(get, path = "/v1/audit", tag = "audit", security(("bearer" = [])),
    params(AuditQuery),
    responses(
        (status = 200, description = "A page of the audit log", body = AuditPage),
        (status = 400, description = "Malformed query, or a limit out of range (`invalid_limit`)", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_audit(
    state: web::Data<AppState>,
    user: CurrentUser,
    query: web::Query<AuditQuery>,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let q = query.into_inner();
    let limit = q.limit.unwrap_or(100);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::new(
            Code::InvalidLimit,
            format!("`limit` must be 1 to {MAX_LIMIT}."),
        ));
    }
    let items = store::list(
        &state.pool,
        &Filter {
            action: q.action,
            actor: q.actor,
            subject: q.subject,
            since: q.since,
            until: q.until,
            before: q.before,
            limit,
        },
    )
    .await?;
    let next_before = (items.len() as i64 == limit)
        .then(|| items.last().map(|e| e.id))
        .flatten();
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(AuditPage { items, next_before }))
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(crate::telemetry::resource("/v1/audit").route(web::get().to(list_audit)));
}

/// This module's part of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(list_audit))]
pub struct Api;
