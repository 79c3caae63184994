//! A person's own data: everything quizd holds about them (`GET /v1/me/export`) and erasure
//! (`DELETE /v1/me`).
//!
//! Erasure removes what identifies the person — email, name, password hash, LMS identity,
//! preferred locale, sign-in sessions, enrollments, co-authorships, pending LMS hand-offs — and
//! keeps a nameless row under the same opaque id so that the attempts they made still count in
//! the statistics of the assignments they took (an item analysis must not change because a
//! learner left). Courses and quizzes they created stay, owned by that nameless row, so that
//! admins manage them. The audit log and the grade events (who changed a grade) keep the opaque
//! id; the erasure's own audit entry keeps nothing else (no address). The pending invitations
//! of the address and the links mailed to it go too. The access tokens already issued stop at
//! once, on every instance (`auth::erasures`); no new one can be had.
//!
//! An export shows the person's own data: where someone else acted on them (staff overriding
//! a grade, setting an override), that person appears by site role and display name only,
//! never by id or client address.

pub mod store;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::audit::{self, Entry, store::AuditEntryAboutYou};
use crate::auth::{CurrentUser, password};
use crate::error::{ApiError, Code, Problem};
use crate::extract::JsonObject;
use crate::state::AppState;
use store::{ExportedAttempt, ExportedAuthorship, ExportedEnrollment, ExportedPerson};

/// Everything quizd holds about you.
#[derive(Debug, Serialize, ToSchema)]
pub struct Export {
    pub exported_at: DateTime<Utc>,
    pub person: ExportedPerson,
    pub enrollments: Vec<ExportedEnrollment>,
    pub authored_quizzes: Vec<ExportedAuthorship>,
    pub attempts: Vec<ExportedAttempt>,
    /// Security-relevant actions you took or that concern you.
    pub audit: Vec<AuditEntryAboutYou>,
}

fn account_gone() -> ApiError {
    ApiError::new(Code::UserNotFound, "This account no longer exists.")
}

/// Everything quizd holds about you, as JSON: your account, courses, the quizzes you author,
/// your attempts with your answers, and the audit entries about you.
#[utoipa::path(get, path = "/v1/me/export", tag = "auth", security(("bearer" = [])),
    responses(
        (status = 200, description = "Your data", body = Export),
        (status = 404, description = "The account no longer exists", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn export(
    state: web::Data<AppState>,
    user: CurrentUser,
) -> Result<HttpResponse, ApiError> {
    // One snapshot: a repeatable-read transaction sees every table as of one moment.
    let mut tx = state.pool.begin().await?;
    crate::db::store::snapshot(&mut *tx).await?;
    let person = store::person(&mut *tx, user.id)
        .await?
        .ok_or_else(account_gone)?;
    let export = Export {
        exported_at: state.clock.now(),
        person,
        enrollments: store::enrollments(&mut *tx, user.id).await?,
        authored_quizzes: store::authorships(&mut *tx, user.id).await?,
        attempts: store::attempts(&mut *tx, user.id).await?,
        audit: audit::store::about(&mut *tx, user.id).await?,
    };
    tx.commit().await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .insert_header((
            header::CONTENT_DISPOSITION,
            "attachment; filename=\"quizd-export.json\"",
        ))
        .json(export))
}

/// Confirms an erasure.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EraseRequest {
    /// Your password, if your account has one (accounts made by an LMS have none).
    pub password: Option<String>,
}

/// Erases your account: your email, name, password, LMS identity, sessions, enrollments,
/// co-authorships and your address's pending invitations go at once, and your access tokens
/// stop working. Your attempts stay, without anything that names you, so that the
/// statistics of the quizzes you took stay right. Accounts with a password confirm with it
/// (rate limited like a sign-in).
#[utoipa::path(delete, path = "/v1/me", tag = "auth", security(("bearer" = [])),
    request_body = EraseRequest,
    responses(
        (status = 204, description = "Erased"),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Not signed in, or the wrong password (`invalid_credentials`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The account no longer exists", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many wrong passwords; see Retry-After", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
    ))]
pub async fn erase(
    state: web::Data<AppState>,
    user: CurrentUser,
    body: JsonObject<EraseRequest>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let row = crate::auth::store::user_by_id(&state.pool, user.id)
        .await?
        .ok_or_else(account_gone)?;
    if let Some(stored) = row.password_hash.clone() {
        let given = body.into_inner().password.unwrap_or_default();
        if given.contains('\0') || given.len() > 4 * password::MAX_LEN {
            return Err(ApiError::new(
                Code::InvalidField,
                "`password` is malformed.",
            ));
        }
        let email = row.email.clone().unwrap_or_default();
        let keys = state
            .login_limiter
            .keys(&email, state.trusted_proxies.client_ip(&req));
        let standing = crate::auth::store::sign_in_standing(&state.pool, &keys).await?;
        if !crate::auth::routes::check_password(&state, &keys, &standing, given, stored).await? {
            return Err(ApiError::new(
                Code::InvalidCredentials,
                "The password is wrong.",
            ));
        }
    }
    let mut tx = state.pool.begin().await?;
    if !store::erase(&mut tx, user.id).await? {
        return Err(account_gone());
    }
    audit::store::record(&mut *tx, Entry::erasure(user.id)).await?;
    tx.commit().await?;
    // This instance at once; the others when the notification reaches them.
    state.accounts.forget(user.id);
    Ok(HttpResponse::NoContent().finish())
}

/// `GET /v1/me/export`; `DELETE /v1/me` shares its resource with the account's other methods
/// and is registered by `auth::routes::configure`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(crate::telemetry::resource("/v1/me/export").route(web::get().to(export)));
}

/// This module's part of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(export, erase))]
pub struct Api;
