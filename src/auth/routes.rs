//! `/v1/auth/*`, `/v1/me` and the admin's role changes.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::ratelimit::{Keys, Standing};
use super::store::{self, Consumed, NewUser};
use super::tokens::{ACCESS_TTL_SECS, new_refresh_token, refresh_token_hash};
use super::{CurrentUser, Role, TokenResponse, User, password, unauthorized};
use crate::audit::{self, Action, Entry};
use crate::error::{ApiError, Code, Problem};
use crate::extract::{JsonObject, LaterJson};
use crate::state::AppState;
use crate::validate::{DisplayName, Email, Locale};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterRequest {
    #[schema(value_type = String)]
    pub email: Email,
    #[schema(value_type = String)]
    pub display_name: DisplayName,
    /// 8 to 256 characters.
    pub password: String,
    /// Preferred locale for quizzes (BCP 47), e.g. `bn`.
    #[schema(value_type = Option<String>)]
    pub locale: Option<Locale>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    pub email: String,
    pub password: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefreshRequest {
    pub refresh_token: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileUpdate {
    #[schema(value_type = Option<String>)]
    pub display_name: Option<DisplayName>,
    /// Preferred locale for quizzes (BCP 47).
    #[schema(value_type = Option<String>)]
    pub locale: Option<Locale>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleChange {
    pub role: Role,
}

/// Issues an access token and a refresh token; `family` continues a rotation chain.
async fn issue_pair(
    db: impl sqlx::PgExecutor<'_>,
    state: &AppState,
    user: Uuid,
    role: Role,
    family: Option<Uuid>,
) -> Result<TokenResponse, ApiError> {
    let (refresh_token, hash) = new_refresh_token();
    store::insert_refresh_token(db, family.unwrap_or_else(Uuid::now_v7), user, &hash).await?;
    Ok(TokenResponse {
        access_token: state.tokens.issue(user, role),
        refresh_token,
        token_type: "Bearer",
        expires_in: ACCESS_TTL_SECS,
    })
}

fn check_password_shape(password: &str) -> Result<(), ApiError> {
    let len = password.chars().count();
    if password.contains('\0') {
        return Err(ApiError::new(
            Code::InvalidField,
            "`password` contains a NUL character.",
        ));
    }
    if !(password::MIN_LEN..=password::MAX_LEN).contains(&len) {
        return Err(ApiError::new(
            Code::WeakPassword,
            format!(
                "`password` must be {} to {} characters.",
                password::MIN_LEN,
                password::MAX_LEN
            ),
        ));
    }
    Ok(())
}

/// Creates a learner account and signs it in, and mails a link that verifies its address
/// (see `POST /v1/me/email-verification`). Rate limited per client address (30 at once, then
/// 10 a minute).
#[utoipa::path(post, path = "/v1/auth/register", tag = "auth", request_body = RegisterRequest,
    responses(
        (status = 201, description = "Registered and signed in", body = TokenResponse),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The email is taken", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid email, name, password or locale", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many sign-ups from this address (`too_many_signups`); see `Retry-After`", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u32, description = "Seconds to wait"))),
    ))]
pub async fn register(
    state: web::Data<AppState>,
    body: JsonObject<RegisterRequest>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    check_password_shape(&body.password)?;
    if let Err(wait) = state
        .login_limiter
        .check_signup(&state.pool, state.trusted_proxies.client_ip(&req))
        .await?
    {
        return Err(too_many(
            Code::TooManySignups,
            "sign-ups from your address",
            wait,
        ));
    }
    let pw = body.password;
    let hash = password::off_the_workers(move || password::hash(&pw))
        .await?
        .map_err(ApiError::internal)?;
    let mut tx = state.pool.begin().await?;
    let user = store::insert_user(
        &mut *tx,
        NewUser {
            email: Some(body.email.as_str()),
            display_name: body.display_name.as_str(),
            password_hash: Some(&hash),
            role: Role::Learner,
            locale: body.locale.as_ref().map(Locale::as_str),
        },
    )
    .await
    .map_err(|e| match ApiError::from(e) {
        e if e.status == StatusCode::CONFLICT => ApiError::new(
            Code::EmailTaken,
            "An account with this email exists; sign in instead.",
        ),
        e => e,
    })?;
    let tokens = issue_pair(&mut *tx, &state, user.id, user.role(), None).await?;
    let (verification, _) =
        crate::invitations::verification_mail(&mut *tx, &state, user.id, body.email.as_str())
            .await?;
    tx.commit().await?;
    state.mailer.send(verification);
    Ok(HttpResponse::Created()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(tokens))
}

/// `429` with the seconds to wait, rounded up.
fn too_many(code: Code, what: &str, wait: std::time::Duration) -> ApiError {
    let secs = wait.as_secs() + 1;
    ApiError {
        retry_after: Some(secs as u32),
        ..ApiError::new(code, format!("Too many {what}; try again in {secs} s."))
    }
}

/// Verifies a password someone typed for `email`'s account against `stored`, within the
/// sign-in limits (`429` when they are met): a failure counts against the account and the
/// client's address, a success clears its pair's failures. `standing` is what the database
/// held for `keys` (read with the account, see `store::user_by_email_with_standing`). Sign-in
/// and erasure both use it.
pub(crate) async fn check_password(
    state: &AppState,
    keys: &Keys,
    standing: &Standing,
    given: String,
    stored: String,
) -> Result<bool, ApiError> {
    if let Err(wait) = standing.check() {
        return Err(too_many(Code::TooManyAttempts, "sign-in attempts", wait));
    }
    let ok = password::off_the_workers(move || password::verify(&given, &stored)).await?;
    state
        .login_limiter
        .record(&state.pool, keys, standing, ok)
        .await?;
    Ok(ok)
}

/// Signs in with email and password; a verified address claims its pending course
/// invitations. Failed sign-ins are limited per account and client
/// address (5, then one every 12 s), per account (100 an hour) and per client address (100,
/// then one every 2 s); successful ones are not counted.
#[utoipa::path(post, path = "/v1/auth/login", tag = "auth", request_body = LoginRequest,
    responses(
        (status = 200, description = "Signed in", body = TokenResponse),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Wrong email or password (the same answer for both)", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many failed sign-ins for this account or from this address (`too_many_attempts`); see Retry-After", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
    ))]
pub async fn login(
    state: web::Data<AppState>,
    body: JsonObject<LoginRequest>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    if body.email.contains('\0')
        || body.password.contains('\0')
        || body.email.len() > 254
        || body.password.len() > 4 * password::MAX_LEN
    {
        return Err(ApiError::new(
            Code::InvalidField,
            "`email` or `password` is malformed.",
        ));
    }
    let keys = state
        .login_limiter
        .keys(&body.email, state.trusted_proxies.client_ip(&req));
    let (user, standing) =
        store::user_by_email_with_standing(&state.pool, body.email.trim(), &keys).await?;
    // An unknown email (or an account without a password) is verified against a decoy, so it
    // costs what a wrong password costs and counts as a failure like one.
    let stored = user
        .as_ref()
        .and_then(|u| u.password_hash.clone())
        .unwrap_or_else(|| password::decoy_hash().to_string());
    let ok = check_password(&state, &keys, &standing, body.password, stored).await?;
    let Some(user) = user.filter(|u| ok && u.password_hash.is_some()) else {
        return Err(ApiError::new(
            Code::InvalidCredentials,
            "The email or password is wrong.",
        ));
    };
    // A verified address claims the invitations made since it was verified.
    if user.email_verified_at.is_some()
        && let Some(email) = &user.email
    {
        crate::invitations::store::claim(&state.pool, user.id, email).await?;
    }
    let tokens = issue_pair(&state.pool, &state, user.id, user.role(), None).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(tokens))
}

/// Exchanges a refresh token for a new pair. Each refresh token works once; presenting a
/// used one again revokes every token descended from the same sign-in.
#[utoipa::path(post, path = "/v1/auth/refresh", tag = "auth", request_body = RefreshRequest,
    responses(
        (status = 200, description = "A new pair; the old refresh token is spent", body = TokenResponse),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Unknown, expired, revoked or reused refresh token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn refresh(
    state: web::Data<AppState>,
    body: JsonObject<RefreshRequest>,
) -> Result<HttpResponse, ApiError> {
    let hash = refresh_token_hash(&body.refresh_token);
    let mut tx = state.pool.begin().await?;
    match store::consume_refresh_token(&mut tx, &hash).await? {
        Consumed::Rotated { user_id, family_id } => {
            let user = store::user_by_id(&mut *tx, user_id)
                .await?
                .ok_or_else(|| unauthorized("The refresh token is invalid."))?;
            let tokens =
                issue_pair(&mut *tx, &state, user.id, user.role(), Some(family_id)).await?;
            tx.commit().await?;
            Ok(HttpResponse::Ok()
                .insert_header((header::CACHE_CONTROL, "no-store"))
                .json(tokens))
        }
        Consumed::Reused => {
            tx.commit().await?;
            Err(ApiError::new(
                Code::RefreshTokenReused,
                "This refresh token was already used; every session from that sign-in is now signed out.",
            ))
        }
        Consumed::Unknown => Err(unauthorized(
            "The refresh token is invalid, expired or revoked.",
        )),
    }
}

/// Signs out: revokes the refresh token and every token of its sign-in.
#[utoipa::path(post, path = "/v1/auth/logout", tag = "auth", request_body = RefreshRequest,
    responses(
        (status = 204, description = "Signed out (also when the token was unknown)"),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn logout(
    state: web::Data<AppState>,
    body: JsonObject<RefreshRequest>,
) -> Result<HttpResponse, ApiError> {
    store::revoke_family_of(&state.pool, &refresh_token_hash(&body.refresh_token)).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// The signed-in person.
#[utoipa::path(get, path = "/v1/me", tag = "auth", security(("bearer" = [])),
    responses(
        (status = 200, description = "You", body = User),
        (status = 404, description = "The account no longer exists", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn me(state: web::Data<AppState>, user: CurrentUser) -> Result<HttpResponse, ApiError> {
    let row = store::user_by_id(&state.pool, user.id)
        .await?
        .ok_or_else(|| ApiError::new(Code::UserNotFound, "This account no longer exists."))?;
    Ok(HttpResponse::Ok().json(User::from(row)))
}

/// Changes your display name or preferred locale.
#[utoipa::path(patch, path = "/v1/me", tag = "auth", security(("bearer" = [])), request_body = ProfileUpdate,
    responses(
        (status = 200, description = "Updated", body = User),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The account no longer exists", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid name or locale", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn update_me(
    state: web::Data<AppState>,
    user: CurrentUser,
    body: JsonObject<ProfileUpdate>,
) -> Result<HttpResponse, ApiError> {
    let row = store::update_profile(
        &state.pool,
        user.id,
        body.display_name.as_ref().map(DisplayName::as_str),
        body.locale.as_ref().map(|l| Some(l.as_str())),
    )
    .await?
    .ok_or_else(|| ApiError::new(Code::UserNotFound, "This account no longer exists."))?;
    Ok(HttpResponse::Ok().json(User::from(row)))
}

/// Changes a person's role (admins only). Takes effect at their next token refresh.
#[utoipa::path(put, path = "/v1/users/{id}/role", tag = "auth", security(("bearer" = [])), request_body = RoleChange,
    params(("id" = Uuid, Path, description = "The person's id")),
    responses(
        (status = 200, description = "The person with the new role", body = User),
        (status = 400, description = "Malformed body or id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not an admin", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such person", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn set_role(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    body: LaterJson<RoleChange>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    user.require(&[Role::Admin])?;
    let body = body.parse()?;
    let mut tx = state.pool.begin().await?;
    let row = store::set_role(&mut *tx, *id, body.role)
        .await?
        .ok_or_else(|| ApiError::new(Code::UserNotFound, "There is no such person."))?;
    audit::store::record(
        &mut *tx,
        Entry::by(user.id, Action::RoleChanged, &req)
            .subject(row.id)
            .detail(serde_json::json!({ "to": body.role })),
    )
    .await?;
    tx.commit().await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(User::from(row)))
}

/// This module's endpoints (resources, not method-guarded routes, so that a wrong method is a
/// `405`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    use crate::telemetry::resource;
    use web::{get, patch, post, put};
    cfg.service(resource("/v1/auth/register").route(post().to(register)))
        .service(resource("/v1/auth/login").route(post().to(login)))
        .service(resource("/v1/auth/refresh").route(post().to(refresh)))
        .service(resource("/v1/auth/logout").route(post().to(logout)))
        .service(
            resource("/v1/me")
                .route(get().to(me))
                .route(patch().to(update_me))
                .route(web::delete().to(crate::privacy::erase)),
        )
        .service(resource("/v1/users/{id}/role").route(put().to(set_role)));
}

/// This module's part of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(register, login, refresh, logout, me, update_me, set_role))]
pub struct Api;
