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
/// Invitation mails (resends included) one person may have quizd send in a day: one full CSV
/// roster. The bound, and the fixed subject, keep quizd from being a relay for whoever holds a
/// staff account.
pub const INVITATION_MAILS_PER_DAY: i64 = 5_000;

/// Counts `messages` invitation mails against `sender`'s day, in the caller's transaction (so
/// that they count only if what they announce commits); `429` with the seconds until enough
/// of the day's mail leaves the window when they do not fit. Two requests at once count each
/// other (the sender's budget is locked until the transaction ends).
pub async fn reserve_mails(
    tx: &mut sqlx::PgConnection,
    state: &AppState,
    sender: Uuid,
    messages: usize,
) -> Result<(), ApiError> {
    if messages == 0 {
        return Ok(());
    }
    let now = state.clock.now();
    let since = now - Duration::days(1);
    let (sent, oldest) = store::lock_mail_volume(&mut *tx, sender, since).await?;
    if sent + messages as i64 > INVITATION_MAILS_PER_DAY {
        let wait = oldest.map_or(86_400, |o| (o + Duration::days(1) - now).num_seconds() + 1);
        return Err(ApiError {
            retry_after: Some(wait.max(1) as u32),
            ..ApiError::new(
                Code::TooManyInvitations,
                format!(
                    "You have had {sent} invitations mailed in the last 24 hours; at most \
                     {INVITATION_MAILS_PER_DAY} a day."
                ),
            )
        });
    }
    store::record_mail_volume(&mut *tx, sender, now, messages as i32, since).await?;
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
    user: Uuid,
    email: &str,
) -> Result<(Mail, DateTime<Utc>), ApiError> {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = hex::encode(bytes);
    let now = state.clock.now();
    let expires_at = now + Duration::hours(VERIFICATION_TTL_HOURS);
    store::insert_verification(db, &token_hash(&token), user, email, now, expires_at).await?;
    let mail = Mail::with_link(
        state.public_url(),
        email,
        "Confirm your email address for quizd",
        &format!("/v1/email-verifications/{token}"),
        |link| {
            format!(
                "Someone, we hope you, gave this address to quizd. To confirm that it is yours, \
                 open this link within {VERIFICATION_TTL_HOURS} hours:\n\n{link}\n\nIf it \
                 was not you, ignore this message; nothing happens without the link.\n"
            )
        },
    );
    Ok((mail, expires_at))
}

/// The subject of an invitation, in the inviter's language where quizd speaks it: fixed, so
/// that nobody writes what quizd's mail says at a glance (a course's title is in the body).
pub fn invitation_subject(locale: Option<&str>) -> &'static str {
    match locale.and_then(|l| l.split(['-', '_']).next()) {
        Some("bn") => "quizd-এ একটি কোর্সে আপনাকে আমন্ত্রণ জানানো হয়েছে",
        Some("id") => "Anda diundang ke sebuah kursus di quizd",
        _ => "You are invited to a course on quizd",
    }
}

/// The message inviting `inv`'s address to `course`, its subject in `locale` (the inviter's).
/// The course's title (at most 200 characters, one line) is the only text staff chose, and it
/// is in the body, quoted.
pub fn invitation_mail(
    state: &AppState,
    course: &Course,
    inv: &Invitation,
    locale: Option<&str>,
) -> Mail {
    let role = match inv.role {
        CourseRole::Learner => "a learner",
        CourseRole::Instructor => "an instructor",
    };
    Mail::with_link(
        state.public_url(),
        &inv.email,
        invitation_subject(locale),
        "/",
        |link| {
            format!(
                "You are invited to the course \"{}\" on quizd, as {role}.\n\nSign up at {link} \
                 with this address ({}), or sign in if you have an account with it, and confirm \
                 the address with the link quizd mails you. The course is then yours.\n",
                course.title, inv.email
            )
        },
    )
}

/// Invites `email` (normalized here) to `course`, mailing it when the invitation is new.
pub async fn invite(
    state: &AppState,
    course: &Course,
    invited_by: Uuid,
    email: &str,
    role: CourseRole,
) -> Result<Invitation, ApiError> {
    let email = csv::normalize_email(email)
        .ok_or_else(|| ApiError::new(Code::InvalidEmail, "`email` is not an email address."))?;
    let mut tx = state.pool.begin().await?;
    let (invitation, new) = store::invite(
        &mut *tx,
        course.id,
        &email,
        role,
        invited_by,
        state.clock.now(),
    )
    .await?;
    if new {
        reserve_mails(&mut tx, state, invited_by, 1).await?;
    }
    let locale = store::preferred_locale(&mut *tx, invited_by).await?;
    tx.commit().await?;
    if new {
        let mail = invitation_mail(state, course, &invitation, locale.as_deref());
        state.mailer.send(mail);
    }
    Ok(invitation)
}

#[cfg(test)]
mod tests {
    use super::invitation_subject;

    #[test]
    fn an_invitations_subject_is_fixed_in_the_inviters_language_or_english() {
        assert_eq!(
            invitation_subject(None),
            "You are invited to a course on quizd"
        );
        assert_eq!(invitation_subject(Some("fr")), invitation_subject(None));
        assert_eq!(
            invitation_subject(Some("id")),
            "Anda diundang ke sebuah kursus di quizd"
        );
        assert_eq!(
            invitation_subject(Some("bn-BD")),
            invitation_subject(Some("bn"))
        );
    }
}
