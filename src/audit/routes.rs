//! `GET /v1/audit`: the audit log, for admins.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::Action;
use super::store::{self, AuditEntry, Filter};
use crate::auth::{CurrentUser, Role};
use crate::error::{ApiError, Problem};
use crate::state::AppState;

pub const MAX_LIMIT: u32 = 500;

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
    /// The older form of `cursor`: entries older than this id, the `next_before` of the
    /// previous page.
    pub before: Option<i64>,
    /// The `next` of the previous page; absent for the first page.
    pub cursor: Option<String>,
    /// Entries per page, 1 to 500 (default 100).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditPage {
    /// Newest first.
    pub items: Vec<AuditEntry>,
    /// The cursor of the next page (pass it as `cursor`); absent on the last page.
    pub next: Option<String>,
    /// The older form of `next` (pass it as `before`); absent on the last page.
    pub next_before: Option<i64>,
}

/// The audit log, newest first, filtered. Admins only.
#[utoipa::path(get, path = "/v1/audit", tag = "audit", security(("bearer" = [])),
    params(AuditQuery),
    responses(
        (status = 200, description = "A page of the audit log", body = AuditPage, headers(("Link" = String, description = "`<…>; rel=\"next\"`: the next page, absent on the last"))),
        (status = 422, description = "A cursor this list did not give (`invalid_cursor`)", body = Problem, content_type = "application/problem+json"),
        (status = 400, description = "Malformed query, or a limit out of range (`invalid_limit`)", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_audit(
    state: web::Data<AppState>,
    user: CurrentUser,
    query: web::Query<AuditQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let q = query.into_inner();
    let list = format!("audit:{}", user.id);
    let page = (state.cursors).page_within::<i64>(
        &list,
        q.limit,
        q.cursor.as_deref(),
        (100, MAX_LIMIT),
    )?;
    let rows = store::list(
        &state.pool,
        &Filter {
            action: q.action,
            actor: q.actor,
            subject: q.subject,
            since: q.since,
            until: q.until,
            before: page.after.or(q.before),
            limit: page.fetch(),
        },
    )
    .await?;
    let (items, next) = (state.cursors).cut(&list, rows, page.limit, |e| e.id);
    let next_before = next.as_ref().and(items.last()).map(|e| e.id);
    let body = AuditPage {
        items,
        next,
        next_before,
    };
    let mut res = crate::pagination::respond(&req, body.next.as_deref(), &body);
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("private, no-store"),
    );
    Ok(res)
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(crate::telemetry::resource("/v1/audit").route(web::get().to(list_audit)));
}

/// This module's part of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(list_audit))]
pub struct Api;
