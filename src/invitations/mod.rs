//! Verified email addresses and invitations: enrolling people who have no account yet.
//!
//! An address is verified by a link quizd mails to it (`POST /v1/me/email-verification`, and
//! at sign-up). Enrolling an address that no account has verified (no account has it, or its
//! account has not verified it) makes an invitation; a person claims
//! it — it becomes their enrollment — in the transaction that verifies their address, or when
//! they sign in with an address verified already. An unverified account claims nothing: an
//! address typed at sign-up proves nothing about who reads its mail.
//!
//! Mail leaves after the transaction commits ([`crate::mail`]); a lost message loses nothing,
//! since the token or invitation is in the database and can be sent again.

pub mod csv;
pub mod routes;
pub mod store;

use actix_web::HttpRequest;
use actix_web::web;
use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::courses::models::{Course, CourseRole};
use crate::error::{ApiError, Code};
use crate::mail::Mail;
use crate::state::AppState;

/// How long a verification link works.
pub const VERIFICATION_TTL_HOURS: i64 = 48;
/// Verification links one account may be sent in an hour (sign-up's included).
pub const VERIFICATIONS_PER_HOUR: i64 = 5;
/// An invitation is sent again at most this often.
pub const RESEND_INTERVAL_SECS: i64 = 60;
/// Invitations one account may have mailed in an hour: two full CSV rosters. The bound keeps
/// quizd from being a relay for whoever holds a staff account.
pub const INVITATIONS_PER_HOUR: i64 = 10_000;

/// `429` unless `inviter` may have `more` invitations mailed now.
pub async fn check_invitation_budget(
    state: &AppState,
    inviter: Uuid,
    more: usize,
) -> Result<(), ApiError> {
    if more == 0 {
        return Ok(());
    }
    let since = state.clock.now() - Duration::hours(1);
    let mailed = store::mailed_by_since(&state.pool, inviter, since).await?;
    if mailed + more as i64 > INVITATIONS_PER_HOUR {
        return Err(ApiError {
            retry_after: Some(3600),
            ..ApiError::new(
                Code::TooManyInvitations,
                format!(
                    "You have had {mailed} invitations mailed in the last hour; at most \
                     {INVITATIONS_PER_HOUR} an hour."
                ),
            )
        });
    }
    Ok(())
}

/// Registers the routes of this module.
pub fn configure(cfg: &mut web::ServiceConfig) {
    use crate::telemetry::resource;
    use web::{get, post};
    cfg.service(
        resource("/v1/me/email-verification").route(post().to(routes::request_verification)),
    )
    .service(
        resource("/v1/email-verifications/{token}")
            .route(get().to(routes::verification_page))
            .route(post().to(routes::verify)),
    )
    .service(
        // Before `/v1/courses/{id}/enrollments/{user_id}` (courses), which its path also fits.
        resource("/v1/courses/{id}/enrollments/csv")
            .app_data(web::PayloadConfig::new(csv::MAX_BYTES))
            .route(post().to(routes::enroll_csv)),
    )
    .service(resource("/v1/courses/{id}/invitations").route(get().to(routes::list_invitations)))
    .service(
        resource("/v1/courses/{id}/invitations/{invitation_id}")
            .route(web::delete().to(routes::revoke_invitation)),
    )
    .service(
        resource("/v1/courses/{id}/invitations/{invitation_id}/resend")
            .route(post().to(routes::resend_invitation)),
    );
}

/// This module's endpoints in the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    routes::request_verification,
    routes::verification_page,
    routes::verify,
    routes::enroll_csv,
    routes::list_invitations,
    routes::revoke_invitation,
    routes::resend_invitation,
))]
pub struct Api;

/// A pending invitation to a course.
#[derive(Debug, Serialize, ToSchema)]
pub struct Invitation {
    pub id: Uuid,
    pub course_id: Uuid,
    /// The invited address, trimmed and in lower case.
    pub email: String,
    /// The role the person gets when they claim it.
    pub role: CourseRole,
    pub invited_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    /// When it was last handed to the mailer.
    pub last_sent_at: Option<DateTime<Utc>>,
}

fn token_hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// A verification link for `email` of `user`, stored (hashed) in the caller's transaction, as
/// the message to send once it commits.
pub async fn verification_mail(
    db: impl sqlx::PgExecutor<'_>,
    state: &AppState,
    req: &HttpRequest,
    user: Uuid,
    email: &str,
) -> Result<(Mail, DateTime<Utc>), ApiError> {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = hex::encode(bytes);
    let now = state.clock.now();
    let expires_at = now + Duration::hours(VERIFICATION_TTL_HOURS);
    store::insert_verification(db, &token_hash(&token), user, email, now, expires_at).await?;
    let link = format!(
        "{}/v1/email-verifications/{token}",
        crate::lti::public_base(state, req)
    );
    let text = format!(
        "Someone, we hope you, gave this address to quizd. To confirm that it is yours, open \
         this link within {VERIFICATION_TTL_HOURS} hours:\n\n{link}\n\nIf it was not you, \
         ignore this message; nothing happens without the link.\n"
    );
    Ok((
        Mail {
            to: email.to_string(),
            subject: "Confirm your email address for quizd".into(),
            text,
            link,
        },
        expires_at,
    ))
}

/// The message inviting `email` to `course`.
pub fn invitation_mail(
    state: &AppState,
    req: &HttpRequest,
    course: &Course,
    inv: &Invitation,
) -> Mail {
    let base = crate::lti::public_base(state, req);
    let role = match inv.role {
        CourseRole::Learner => "a learner",
        CourseRole::Instructor => "an instructor",
    };
    let text = format!(
        "You are invited to the course \"{}\" on quizd, as {role}.\n\nSign up at {base}/ with \
         this address ({}), or sign in if you have an account with it, and confirm the address \
         with the link quizd mails you. The course is then yours.\n",
        course.title, inv.email
    );
    Mail {
        to: inv.email.clone(),
        subject: format!("You are invited to {}", course.title),
        text,
        link: format!("{base}/"),
    }
}

/// Invites `email` (normalized here) to `course`, mailing it when the invitation is new.
pub async fn invite(
    state: &AppState,
    req: &HttpRequest,
    course: &Course,
    invited_by: Uuid,
    email: &str,
    role: CourseRole,
) -> Result<Invitation, ApiError> {
    let email = csv::normalize_email(email)
        .ok_or_else(|| ApiError::new(Code::InvalidEmail, "`email` is not an email address."))?;
    check_invitation_budget(state, invited_by, 1).await?;
    let (invitation, new) = store::invite(
        &state.pool,
        course.id,
        &email,
        role,
        invited_by,
        state.clock.now(),
    )
    .await?;
    if new {
        state
            .mailer
            .send(invitation_mail(state, req, course, &invitation));
    }
    Ok(invitation)
}
