//! Email verification, invitations and CSV enrollment over HTTP.

use std::collections::HashMap;

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::store::{self, Consumed};
use super::{Invitation, csv, invitation_mail, token_hash, verification_mail};
use crate::auth::CurrentUser;
use crate::courses::models::CourseRole;
use crate::courses::{taught_active_course, taught_course};
use crate::error::{ApiError, Code, Problem};
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct VerificationSent {
    /// Where the link went.
    pub email: String,
    /// Until when the link works.
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EmailVerified {
    pub user_id: Uuid,
    pub email: String,
    pub email_verified_at: DateTime<Utc>,
    /// The courses the address's pending invitations enrolled you in now.
    pub enrolled_in: Vec<Uuid>,
}

fn too_many_emails(wait_secs: i64) -> ApiError {
    let secs = wait_secs.max(1);
    ApiError {
        retry_after: Some(secs as u32),
        ..ApiError::new(
            Code::TooManyEmails,
            format!("Too many messages to this address; try again in {secs} s."),
        )
    }
}

/// Mails you a link that verifies your address (valid 48 hours, single use); sign-up sends
/// one too. At most 5 links an hour per account.
#[utoipa::path(post, path = "/v1/me/email-verification", tag = "auth", security(("bearer" = [])),
    responses(
        (status = 202, description = "The link is on its way", body = VerificationSent),
        (status = 404, description = "The account no longer exists", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Verified already (`email_already_verified`) or no address (`no_email`)", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "5 links in the last hour (`too_many_emails`); see `Retry-After`", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u32, description = "Seconds to wait"))),
    ))]
pub async fn request_verification(
    state: web::Data<AppState>,
    user: CurrentUser,
) -> Result<HttpResponse, ApiError> {
    let mut tx = state.pool.begin().await?;
    // Locked: two requests at once count each other against the limit.
    let Some((email, verified)) = store::lock_address(&mut *tx, user.id).await? else {
        return Err(ApiError::new(
            Code::UserNotFound,
            "This account no longer exists.",
        ));
    };
    let Some(email) = email else {
        return Err(ApiError::new(
            Code::NoEmail,
            "Your account has no email address to verify.",
        ));
    };
    if verified.is_some() {
        return Err(ApiError::new(
            Code::EmailAlreadyVerified,
            "Your email address is verified already.",
        ));
    }
    let now = state.clock.now();
    let (sent, oldest) =
        store::verifications_since(&mut *tx, user.id, now - Duration::hours(1)).await?;
    if sent >= super::VERIFICATIONS_PER_HOUR {
        let wait = oldest.map_or(3600, |o| (o + Duration::hours(1) - now).num_seconds() + 1);
        return Err(too_many_emails(wait));
    }
    let (mail, expires_at) = verification_mail(&mut *tx, &state, user.id, &email).await?;
    tx.commit().await?;
    state.mailer.send(mail);
    Ok(HttpResponse::Accepted().json(VerificationSent { email, expires_at }))
}

/// A token is 64 lower-case hex digits; anything else is no token.
fn plausible_token(token: &str) -> bool {
    token.len() == 64
        && token
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

const PAGE_CSP: &str = "default-src 'none'; form-action 'self'; frame-ancestors 'none'";

fn page(status: StatusCode, title: &str, body: &str) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((header::CONTENT_SECURITY_POLICY, PAGE_CSP))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width\"><title>{title}</title></head>\
             <body><main><h1>{title}</h1>{body}</main></body></html>\n"
        ))
}

/// The page the mailed link opens: one button that confirms (a `POST` to the same address), so
/// that a mail scanner that fetches links does not use the token up.
#[utoipa::path(get, path = "/v1/email-verifications/{token}", tag = "auth",
    params(("token" = String, Path, description = "The token from the mailed link")),
    responses(
        (status = 200, description = "An HTML page with a button that verifies", content_type = "text/html", body = String),
    ))]
pub async fn verification_page(token: web::Path<String>) -> HttpResponse {
    if !plausible_token(&token) {
        return page(
            StatusCode::OK,
            "This link is not a quizd verification link",
            "<p>Copy the whole link from the message, or ask for a new one.</p>",
        );
    }
    page(
        StatusCode::OK,
        "Confirm your email address",
        &format!(
            "<form method=\"post\" action=\"/v1/email-verifications/{}\">\
             <button type=\"submit\">Confirm my address</button></form>",
            token.as_str()
        ),
    )
}

/// Whether the client is a browser that posted the page's form (it prefers HTML).
fn wants_html(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"))
}

/// Verifies the address a token was mailed to (the token works once, 48 hours) and, in the
/// same transaction, claims that address's pending invitations: their courses enroll you. No
/// sign-in needed: the token is the proof. A browser (`Accept: text/html`) gets a page.
#[utoipa::path(post, path = "/v1/email-verifications/{token}", tag = "auth",
    params(("token" = String, Path, description = "The token from the mailed link")),
    responses(
        (status = 200, description = "Verified; the courses enrolled in now", body = EmailVerified),
        (status = 404, description = "No such token (`verification_not_found`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Used already (`verification_used`)", body = Problem, content_type = "application/problem+json"),
        (status = 410, description = "Expired, or the account's address changed since (`verification_expired`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn verify(
    state: web::Data<AppState>,
    token: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let result = verify_token(&state, &token).await;
    if wants_html(&req) {
        return Ok(match result {
            Ok(v) => page(
                StatusCode::OK,
                "Your email address is confirmed",
                &format!(
                    "<p>Thank you. {} course invitation(s) are now yours. \
                     <a href=\"/\">Go to quizd</a>.</p>",
                    v.enrolled_in.len()
                ),
            ),
            // A page, not a problem: the app turns any error status without a problem body
            // into a generic problem, and a person reads this one.
            Err(e) if e.status.is_client_error() => page(
                StatusCode::OK,
                "This link does not work",
                "<p>It was used already, has expired, or is incomplete. \
                 Sign in to quizd and ask for a new one.</p>",
            ),
            Err(e) => return Err(e),
        });
    }
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(result?))
}

async fn verify_token(state: &AppState, token: &str) -> Result<EmailVerified, ApiError> {
    let not_found = || {
        ApiError::new(
            Code::VerificationNotFound,
            "There is no such verification link.",
        )
    };
    let expired = || {
        ApiError::new(
            Code::VerificationExpired,
            "This verification link has expired; ask for a new one.",
        )
    };
    if !plausible_token(token) {
        return Err(not_found());
    }
    let now = state.clock.now();
    let mut tx = state.pool.begin().await?;
    let (user_id, email) =
        match store::consume_verification(&mut tx, &token_hash(token), now).await? {
            Consumed::Verified { user_id, email } => (user_id, email),
            Consumed::Used => {
                return Err(ApiError::new(
                    Code::VerificationUsed,
                    "This verification link was used already.",
                ));
            }
            Consumed::Expired => return Err(expired()),
            Consumed::Unknown => return Err(not_found()),
        };
    let Some(verified_at) = store::mark_verified(&mut *tx, user_id, &email, now).await? else {
        return Err(expired());
    };
    let enrolled_in = store::claim(&mut *tx, user_id, &email).await?;
    tx.commit().await?;
    Ok(EmailVerified {
        user_id,
        email,
        email_verified_at: verified_at,
        enrolled_in,
    })
}

/// What became of one CSV row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RowOutcome {
    /// The address has an account, now enrolled.
    Enrolled,
    /// No account has the address: an invitation was made and mailed.
    Invited,
    /// The account was enrolled already (its role unchanged).
    AlreadyEnrolled,
    /// An invitation of the address was pending already (not mailed again).
    AlreadyInvited,
    /// Nothing done; `reason` says why.
    Invalid,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RowResult {
    /// The row's line in the file (the header is line 1).
    pub line: u64,
    pub result: RowOutcome,
    /// The address (normalized when valid).
    pub email: Option<String>,
    pub role: Option<CourseRole>,
    pub user_id: Option<Uuid>,
    pub invitation_id: Option<Uuid>,
    /// Why an `invalid` row was not enrolled.
    pub reason: Option<String>,
}

#[derive(Debug, Default, Serialize, ToSchema)]
pub struct CsvSummary {
    pub enrolled: usize,
    pub invited: usize,
    pub already_enrolled: usize,
    pub already_invited: usize,
    pub invalid: usize,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CsvEnrollmentReport {
    pub summary: CsvSummary,
    /// One result per row, in file order.
    pub rows: Vec<RowResult>,
}

/// Enrolls a roster from CSV: a header `email,role`, then one person a row (`role` is
/// `learner`, the default when empty, or `instructor`). At most 1 MiB and 5,000 rows, and
/// 5,000 invitation mails (resends included) for one account in 24 hours. An
/// address an account has verified enrolls that account (an enrolled person keeps their
/// role); any other is invited and mailed (an unverified account claims the invitation when
/// it verifies the address; one enrolled already is reported `already_enrolled`). Each row gets its result; a bad row (its line and reason reported) does
/// not stop the others. The course's instructors and admins, while the course is active.
#[utoipa::path(post, path = "/v1/courses/{id}/enrollments/csv", tag = "courses", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The course's id")),
    request_body(content = String, content_type = "text/csv", description = "`email,role` and a row per person; at most 1 MiB and 5,000 rows"),
    responses(
        (status = 200, description = "Each row's result", body = CsvEnrollmentReport),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The course is archived (`course_archived`)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "More than 1 MiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not `text/csv`", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "No `email,role` header (`invalid_csv_header`) or more than 5,000 rows (`too_many_rows`); nothing was enrolled", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "More than 5,000 invitation mails for you in 24 hours (`too_many_invitations`); nothing was enrolled", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u32, description = "Seconds to wait"))),
    ))]
pub async fn enroll_csv(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let is_csv = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/csv"));
    // Who asks first: whoever may not enroll hears nothing about the body.
    let course = taught_active_course(&state.pool, *id, &user).await?;
    if !is_csv {
        return Err(ApiError::new(
            Code::UnsupportedMediaType,
            "Send the roster as text/csv.",
        ));
    }
    let parsed = csv::parse(&body).map_err(|refused| match refused {
        csv::Refused::Header => ApiError::new(
            Code::InvalidCsvHeader,
            "The first line must be the header `email,role`.",
        ),
        csv::Refused::TooManyRows => ApiError::new(
            Code::TooManyRows,
            format!("At most {} rows in one file.", csv::MAX_ROWS),
        ),
    })?;
    let good: Vec<&csv::Row> = parsed.iter().filter_map(|r| r.as_ref().ok()).collect();
    let emails: Vec<String> = good.iter().map(|r| r.email.clone()).collect();
    let mut tx = state.pool.begin().await?;
    let accounts: HashMap<String, store::Account> =
        store::accounts_by_email(&mut *tx, course.id, &emails)
            .await?
            .into_iter()
            .collect();
    // An address enrolls only the account that verified it, as in `POST …/enrollments`; an
    // unverified account is invited like an address with no account (and claims the
    // invitation when it verifies), unless it is enrolled already: enrolled people keep
    // their role, so nothing would change.
    let row_account = |r: &csv::Row| accounts.get(&r.email).copied();
    let (known, unknown): (Vec<&csv::Row>, Vec<&csv::Row>) = good
        .iter()
        .filter(|r| row_account(r).is_none_or(|a| a.verified || !a.enrolled))
        .partition(|r| row_account(r).is_some_and(|a| a.verified));
    let users: Vec<Uuid> = known.iter().map(|r| accounts[&r.email].id).collect();
    let roles: Vec<&str> = known.iter().map(|r| r.role.as_str()).collect();
    let enrolled: std::collections::HashSet<Uuid> =
        store::enroll_new(&mut *tx, course.id, &users, &roles)
            .await?
            .into_iter()
            .collect();
    let invite_emails: Vec<String> = unknown.iter().map(|r| r.email.clone()).collect();
    let invite_roles: Vec<&str> = unknown.iter().map(|r| r.role.as_str()).collect();
    let invitations: HashMap<String, (Invitation, bool)> = store::invite_many(
        &mut tx,
        course.id,
        &invite_emails,
        &invite_roles,
        user.id,
        state.clock.now(),
    )
    .await?
    .into_iter()
    .map(|(inv, new)| (inv.email.clone(), (inv, new)))
    .collect();
    // Nothing is enrolled or invited unless every new invitation may be mailed.
    let mailed = invitations.values().filter(|(_, new)| *new).count();
    super::reserve_mails(&mut tx, &state, user.id, mailed).await?;
    let locale = store::preferred_locale(&mut *tx, user.id).await?;
    tx.commit().await?;

    let mut summary = CsvSummary::default();
    let mut rows = Vec::with_capacity(parsed.len());
    for row in &parsed {
        let result = match row {
            Err(bad) => RowResult {
                line: bad.line,
                result: RowOutcome::Invalid,
                email: bad.email.clone(),
                role: None,
                user_id: None,
                invitation_id: None,
                reason: Some(bad.reason.clone()),
            },
            Ok(good) => {
                let account = accounts.get(&good.email).copied();
                // An invited row names no account, whether or not an unverified one has the
                // address: the report tells nobody which addresses have accounts.
                let user_id = account.filter(|a| a.verified || a.enrolled).map(|a| a.id);
                let (outcome, invitation_id) = match user_id {
                    Some(u) if enrolled.contains(&u) => (RowOutcome::Enrolled, None),
                    Some(_) => (RowOutcome::AlreadyEnrolled, None),
                    None => match invitations.get(&good.email) {
                        Some((inv, true)) => {
                            state.mailer.send(invitation_mail(
                                &state,
                                &course,
                                inv,
                                locale.as_deref(),
                            ));
                            (RowOutcome::Invited, Some(inv.id))
                        }
                        Some((inv, false)) => (RowOutcome::AlreadyInvited, Some(inv.id)),
                        // Claimed between the two statements: as good as enrolled.
                        None => (RowOutcome::Enrolled, None),
                    },
                };
                RowResult {
                    line: good.line,
                    result: outcome,
                    email: Some(good.email.clone()),
                    role: Some(good.role),
                    user_id,
                    invitation_id,
                    reason: None,
                }
            }
        };
        match result.result {
            RowOutcome::Enrolled => summary.enrolled += 1,
            RowOutcome::Invited => summary.invited += 1,
            RowOutcome::AlreadyEnrolled => summary.already_enrolled += 1,
            RowOutcome::AlreadyInvited => summary.already_invited += 1,
            RowOutcome::Invalid => summary.invalid += 1,
        }
        rows.push(result);
    }
    Ok(HttpResponse::Ok().json(CsvEnrollmentReport { summary, rows }))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct InvitationPage {
    /// At most this many (1 to 1,000; default 200).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// The `next` of the previous page; absent for the first page.
    pub cursor: Option<String>,
    /// The older form of `cursor`: the `next_after` of the previous page.
    pub after: Option<Uuid>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InvitationList {
    pub items: Vec<Invitation>,
    /// The cursor of the next page (pass it as `cursor`); absent on the last page.
    pub next: Option<String>,
    /// The older form of `next` (pass it as `after`); absent on the last page.
    pub next_after: Option<Uuid>,
}

/// The course's pending invitations, oldest first, a page at a time (at most 1,000). The
/// course's instructors and admins.
#[utoipa::path(get, path = "/v1/courses/{id}/invitations", tag = "courses", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The course's id"), InvitationPage),
    responses(
        (status = 200, description = "A page of pending invitations, oldest first", body = InvitationList, headers(("Link" = String, description = "`<…>; rel=\"next\"`: the next page, absent on the last"))),
        (status = 422, description = "A cursor this list did not give (`invalid_cursor`)", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course, or you are not in it", body = Problem, content_type = "application/problem+json"),
        (status = 400, description = "Malformed id or query, or `limit` out of range (`invalid_limit`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_invitations(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    query: web::Query<InvitationPage>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let course = taught_course(&state.pool, *id, &user).await?;
    let list = format!("invitations:{}", course.id);
    let page = (state.cursors).page_within::<Uuid>(
        &list,
        query.limit,
        query.cursor.as_deref(),
        (200, 1000),
    )?;
    let after = page.after.or(query.after);
    let rows = store::list(&state.pool, course.id, after, page.fetch()).await?;
    let (items, next) = (state.cursors).cut(&list, rows, page.limit, |i| i.id);
    let next_after = next.as_ref().and(items.last()).map(|i| i.id);
    let body = InvitationList {
        items,
        next,
        next_after,
    };
    Ok(crate::pagination::respond(
        &req,
        body.next.as_deref(),
        &body,
    ))
}

fn invitation_not_found() -> ApiError {
    ApiError::new(
        Code::InvitationNotFound,
        "There is no such pending invitation in this course.",
    )
}

/// Revokes a pending invitation: the address can no longer claim it. The course's instructors
/// and admins, while the course is active.
#[utoipa::path(delete, path = "/v1/courses/{id}/invitations/{invitation_id}", tag = "courses", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The course's id"),
        ("invitation_id" = Uuid, Path, description = "The invitation's id"),
    ),
    responses(
        (status = 204, description = "Revoked"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course or invitation (`invitation_not_found`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The course is archived (`course_archived`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn revoke_invitation(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(Uuid, Uuid)>,
) -> Result<HttpResponse, ApiError> {
    let (course, invitation) = path.into_inner();
    let course = taught_active_course(&state.pool, course, &user).await?;
    if store::revoke(&state.pool, course.id, invitation).await? {
        Ok(HttpResponse::NoContent().finish())
    } else {
        Err(invitation_not_found())
    }
}

/// Mails a pending invitation again (at most once a minute; it counts against your 5,000
/// invitation mails a day). The course's instructors and admins, while the course is active.
#[utoipa::path(post, path = "/v1/courses/{id}/invitations/{invitation_id}/resend", tag = "courses", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The course's id"),
        ("invitation_id" = Uuid, Path, description = "The invitation's id"),
    ),
    responses(
        (status = 202, description = "On its way again", body = Invitation),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course or invitation (`invitation_not_found`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The course is archived (`course_archived`)", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Sent less than a minute ago (`too_many_emails`), or more than 5,000 invitation mails for you in 24 hours (`too_many_invitations`); see `Retry-After`", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u32, description = "Seconds to wait"))),
    ))]
pub async fn resend_invitation(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(Uuid, Uuid)>,
) -> Result<HttpResponse, ApiError> {
    let (course, invitation) = path.into_inner();
    let course = taught_active_course(&state.pool, course, &user).await?;
    let now = state.clock.now();
    let interval = Duration::seconds(super::RESEND_INTERVAL_SECS);
    let mut tx = state.pool.begin().await?;
    match store::mark_resent(&mut *tx, course.id, invitation, now, now - interval).await? {
        None => Err(invitation_not_found()),
        Some(Err(last)) => Err(too_many_emails((last + interval - now).num_seconds() + 1)),
        Some(Ok(inv)) => {
            // A resend is a mail of the one who asks for it.
            super::reserve_mails(&mut tx, &state, user.id, 1).await?;
            let locale = store::preferred_locale(&mut *tx, user.id).await?;
            tx.commit().await?;
            let mail = invitation_mail(&state, &course, &inv, locale.as_deref());
            state.mailer.send(mail);
            Ok(HttpResponse::Accepted().json(inv))
        }
    }
}
