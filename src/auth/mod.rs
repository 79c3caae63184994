//! Who is asking: accounts, passwords, tokens, roles, and the current-user extractor.

pub mod erasures;
pub mod password;
pub mod ratelimit;
pub mod routes;
pub mod store;
pub mod tokens;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, web};
use chrono::{DateTime, Utc};
use futures_util::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::error::{ApiError, Code};
use crate::state::AppState;

#[derive(sqlx::Type)]
#[sqlx(type_name = "text", rename_all = "snake_case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Learner,
    Instructor,
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Learner => "learner",
            Role::Instructor => "instructor",
            Role::Admin => "admin",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        [Role::Learner, Role::Instructor, Role::Admin]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

/// The person a valid access token names.
#[derive(Debug, Clone, Copy)]
pub struct CurrentUser {
    pub id: Uuid,
    pub role: Role,
}

impl CurrentUser {
    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }

    /// `403` unless the caller has one of these roles.
    pub fn require(&self, roles: &[Role]) -> Result<(), ApiError> {
        if roles.contains(&self.role) {
            Ok(())
        } else {
            Err(ApiError::new(
                Code::Forbidden,
                "Your role does not allow this.",
            ))
        }
    }

    pub fn require_staff(&self) -> Result<(), ApiError> {
        self.require(&[Role::Instructor, Role::Admin])
    }
}

pub fn unauthorized(detail: &str) -> ApiError {
    ApiError::new(Code::Unauthorized, detail)
}

/// The person a valid access token names, if their account is live: an erased account's
/// tokens are refused at once (see [`erasures`]).
impl FromRequest for CurrentUser {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
            return Box::pin(async { Err(ApiError::internal("no app state")) });
        };
        let token = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                // The scheme name is case-insensitive (RFC 9110 §11.1).
                let (scheme, token) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then_some(token)
            });
        let user = match token {
            None => Err(unauthorized(
                "Sign in: send `Authorization: Bearer <access token>`.",
            )),
            Some(token) => state
                .tokens
                .verify(token.trim())
                .map(|c| CurrentUser {
                    id: c.sub,
                    role: c.role,
                })
                .ok_or_else(|| unauthorized("The access token is invalid or expired.")),
        };
        Box::pin(async move {
            let user = user?;
            if !state.accounts.is_live(&state.pool, user.id).await? {
                return Err(unauthorized(
                    "The account of this access token no longer exists.",
                ));
            }
            Ok(user)
        })
    }
}

/// A person, as they and admins see themselves. Never carries the password hash.
#[derive(Debug, Serialize, ToSchema)]
pub struct User {
    pub id: Uuid,
    pub email: Option<String>,
    pub display_name: String,
    pub role: Role,
    /// Preferred locale for quizzes (BCP 47), if set.
    pub locale: Option<String>,
    pub created_at: DateTime<Utc>,
    /// When you proved you receive mail at `email` (the link of
    /// `POST /v1/me/email-verification`); absent until then. Only a verified address claims
    /// course invitations.
    pub email_verified_at: Option<DateTime<Utc>>,
}

impl From<store::UserRow> for User {
    fn from(row: store::UserRow) -> Self {
        let role = row.role();
        User {
            id: row.id,
            email: row.email,
            display_name: row.display_name,
            role,
            locale: row.locale,
            created_at: row.created_at,
            email_verified_at: row.email_verified_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TokenResponse {
    /// A JWT (HS256) to send as `Authorization: Bearer …`.
    pub access_token: String,
    /// Single use: exchange it at `/v1/auth/refresh` for a new pair.
    pub refresh_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// Seconds until the access token expires.
    pub expires_in: u64,
}
