//! SQL for email verifications and invitations.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgExecutor};
use uuid::Uuid;

use super::Invitation;
use crate::courses::models::CourseRole;

/// Columns of an [`InvitationRow`].
macro_rules! invitation_columns {
    () => {
        "id, course_id, email, role, invited_by, created_at, last_sent_at"
    };
}

#[derive(FromRow)]
pub struct InvitationRow {
    id: Uuid,
    course_id: Uuid,
    email: String,
    role: String,
    invited_by: Option<Uuid>,
    created_at: DateTime<Utc>,
    last_sent_at: Option<DateTime<Utc>>,
}

impl From<InvitationRow> for Invitation {
    fn from(r: InvitationRow) -> Self {
        Invitation {
            id: r.id,
            course_id: r.course_id,
            email: r.email,
            role: CourseRole::parse(&r.role).unwrap_or_default(),
            invited_by: r.invited_by,
            created_at: r.created_at,
            last_sent_at: r.last_sent_at,
        }
    }
}

pub async fn insert_verification(
    db: impl PgExecutor<'_>,
    token_hash: &[u8],
    user: Uuid,
    email: &str,
    now: DateTime<Utc>,
    expires_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO email_verifications (token_hash, user_id, email, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(token_hash)
    .bind(user)
    .bind(email)
    .bind(now)
    .bind(expires_at)
    .execute(db)
    .await?;
    Ok(())
}

/// The account's address and when it was verified, the account locked (`FOR UPDATE`) so that
/// two requests at once count each other against the limit; `None` for an erased or missing
/// account.
pub async fn lock_address(
    db: impl PgExecutor<'_>,
    user: Uuid,
) -> Result<Option<(Option<String>, Option<DateTime<Utc>>)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT email, email_verified_at FROM users WHERE id = $1 AND erased_at IS NULL FOR UPDATE",
    )
    .bind(user)
    .fetch_optional(db)
    .await
}

/// How many verification links the account was sent since `since`, and the oldest of them.
pub async fn verifications_since(
    db: impl PgExecutor<'_>,
    user: Uuid,
    since: DateTime<Utc>,
) -> Result<(i64, Option<DateTime<Utc>>), sqlx::Error> {
    sqlx::query_as(
        "SELECT count(*), min(created_at) FROM email_verifications
          WHERE user_id = $1 AND created_at > $2",
    )
    .bind(user)
    .bind(since)
    .fetch_one(db)
    .await
}

/// What became of a verification token that was presented.
pub enum Consumed {
    /// It was live and is now used: `email` of `user_id` is proven.
    Verified {
        user_id: Uuid,
        email: String,
    },
    Used,
    Expired,
    Unknown,
}

/// Uses a verification token once, if it is live at `now`.
pub async fn consume_verification(
    tx: &mut sqlx::PgConnection,
    token_hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Consumed, sqlx::Error> {
    let live: Option<(Uuid, String)> = sqlx::query_as(
        "UPDATE email_verifications SET used_at = $2
          WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2
          RETURNING user_id, email",
    )
    .bind(token_hash)
    .bind(now)
    .fetch_optional(&mut *tx)
    .await?;
    if let Some((user_id, email)) = live {
        return Ok(Consumed::Verified { user_id, email });
    }
    let seen: Option<bool> = sqlx::query_scalar(
        "SELECT used_at IS NOT NULL FROM email_verifications WHERE token_hash = $1",
    )
    .bind(token_hash)
    .fetch_optional(&mut *tx)
    .await?;
    Ok(match seen {
        Some(true) => Consumed::Used,
        Some(false) => Consumed::Expired,
        None => Consumed::Unknown,
    })
}

/// Marks the person's address verified, if it is still `email`; when it was verified (the
/// first time), or `None` when the address changed or the account is gone.
pub async fn mark_verified(
    db: impl PgExecutor<'_>,
    user: Uuid,
    email: &str,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    sqlx::query_scalar(
        "UPDATE users SET email_verified_at = coalesce(email_verified_at, $3), updated_at = now()
          WHERE id = $1 AND lower(email) = lower($2) AND erased_at IS NULL
          RETURNING email_verified_at",
    )
    .bind(user)
    .bind(email)
    .bind(now)
    .fetch_optional(db)
    .await
}

/// Turns the pending invitations of `email` (in active courses) into enrollments of `user`,
/// whose address the caller knows to be verified; the courses enrolled in. An invitation never
/// lowers a role the person already has.
pub async fn claim(
    db: impl PgExecutor<'_>,
    user: Uuid,
    email: &str,
) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "WITH claimed AS (
             DELETE FROM invitations i USING courses c
              WHERE i.email = lower(btrim($2)) AND c.id = i.course_id AND c.archived_at IS NULL
             RETURNING i.course_id, i.role)
         INSERT INTO enrollments (course_id, user_id, role)
         SELECT course_id, $1, role FROM claimed
         ON CONFLICT (course_id, user_id) DO UPDATE
            SET role = CASE WHEN EXCLUDED.role = 'instructor' THEN 'instructor'
                            ELSE enrollments.role END
         RETURNING course_id",
    )
    .bind(user)
    .bind(email)
    .fetch_all(db)
    .await
}

/// Invites `email` (normalized) to the course, or changes the role of its pending invitation;
/// the invitation and whether it is new.
pub async fn invite(
    db: impl PgExecutor<'_>,
    course: Uuid,
    email: &str,
    role: CourseRole,
    invited_by: Uuid,
    now: DateTime<Utc>,
) -> Result<(Invitation, bool), sqlx::Error> {
    #[derive(FromRow)]
    struct Row {
        #[sqlx(flatten)]
        invitation: InvitationRow,
        inserted: bool,
    }
    let row: Row = sqlx::query_as(concat!(
        "INSERT INTO invitations (id, course_id, email, role, invited_by, created_at, last_sent_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6)
         ON CONFLICT (course_id, email) DO UPDATE SET role = EXCLUDED.role
         RETURNING ",
        invitation_columns!(),
        ", (xmax = 0) AS inserted"
    ))
    .bind(Uuid::now_v7())
    .bind(course)
    .bind(email)
    .bind(role.as_str())
    .bind(invited_by)
    .bind(now)
    .fetch_one(db)
    .await?;
    Ok((row.invitation.into(), row.inserted))
}

/// A course's pending invitations in the order they were made, `limit` after `after`.
pub async fn list(
    db: impl PgExecutor<'_>,
    course: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<Invitation>, sqlx::Error> {
    let rows: Vec<InvitationRow> = sqlx::query_as(concat!(
        "SELECT ",
        invitation_columns!(),
        " FROM invitations WHERE course_id = $1 AND ($2::uuid IS NULL OR id > $2)
         ORDER BY id LIMIT $3"
    ))
    .bind(course)
    .bind(after)
    .bind(limit)
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// Revokes a pending invitation; whether there was one.
pub async fn revoke(
    db: impl PgExecutor<'_>,
    course: Uuid,
    invitation: Uuid,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("DELETE FROM invitations WHERE course_id = $1 AND id = $2")
        .bind(course)
        .bind(invitation)
        .execute(db)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// The invitation, stamped as sent at `now` unless it was sent after `not_after` (the resend
/// limit). `Ok(None)`: no such invitation; `Err(last)`: sent too recently, at `last`.
pub async fn mark_resent(
    db: impl PgExecutor<'_>,
    course: Uuid,
    invitation: Uuid,
    now: DateTime<Utc>,
    not_after: DateTime<Utc>,
) -> Result<Option<Result<Invitation, DateTime<Utc>>>, sqlx::Error> {
    #[derive(FromRow)]
    struct Row {
        #[sqlx(flatten)]
        invitation: InvitationRow,
        resent: bool,
    }
    let row: Option<Row> = sqlx::query_as(concat!(
        "WITH old AS (SELECT id, last_sent_at FROM invitations
                       WHERE course_id = $1 AND id = $2 FOR UPDATE),
              upd AS (UPDATE invitations i SET last_sent_at = $3 FROM old
                       WHERE i.id = old.id
                         AND (old.last_sent_at IS NULL OR old.last_sent_at <= $4)
                      RETURNING i.id)
         SELECT ",
        invitation_columns!(),
        ", EXISTS (SELECT 1 FROM upd) AS resent FROM invitations WHERE course_id = $1 AND id = $2"
    ))
    .bind(course)
    .bind(invitation)
    .bind(now)
    .bind(not_after)
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| {
        if r.resent {
            Ok(r.invitation.into())
        } else {
            Err(r.invitation.last_sent_at.unwrap_or(now))
        }
    }))
}

/// An account that has one of a roster's addresses.
#[derive(Debug, Clone, Copy, FromRow)]
pub struct Account {
    pub id: Uuid,
    /// Whether its owner proved the address is theirs: only then does the address enroll it.
    pub verified: bool,
    /// Whether it is enrolled in the course already.
    pub enrolled: bool,
}

/// The accounts (not erased) with these normalized addresses, by address, with whether each
/// is enrolled in `course`.
pub async fn accounts_by_email(
    db: impl PgExecutor<'_>,
    course: Uuid,
    emails: &[String],
) -> Result<Vec<(String, Account)>, sqlx::Error> {
    #[derive(FromRow)]
    struct Row {
        email: String,
        #[sqlx(flatten)]
        account: Account,
    }
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT lower(u.email) AS email, u.id, u.email_verified_at IS NOT NULL AS verified,
                EXISTS (SELECT 1 FROM enrollments e
                         WHERE e.course_id = $1 AND e.user_id = u.id) AS enrolled
           FROM users u WHERE lower(u.email) = ANY($2) AND u.erased_at IS NULL",
    )
    .bind(course)
    .bind(emails)
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.email, r.account)).collect())
}

/// Enrolls these people with these roles where they are not enrolled yet; the ones enrolled now.
pub async fn enroll_new(
    db: impl PgExecutor<'_>,
    course: Uuid,
    users: &[Uuid],
    roles: &[&str],
) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "INSERT INTO enrollments (course_id, user_id, role)
         SELECT $1, u, r FROM unnest($2::uuid[], $3::text[]) AS t(u, r)
         ON CONFLICT (course_id, user_id) DO NOTHING
         RETURNING user_id",
    )
    .bind(course)
    .bind(users)
    .bind(roles)
    .fetch_all(db)
    .await
}

/// Invites these addresses where no invitation is pending; then every pending invitation of
/// these addresses in the course, each with whether it was made now.
pub async fn invite_many(
    db: &mut sqlx::PgConnection,
    course: Uuid,
    emails: &[String],
    roles: &[&str],
    invited_by: Uuid,
    now: DateTime<Utc>,
) -> Result<Vec<(Invitation, bool)>, sqlx::Error> {
    let ids: Vec<Uuid> = emails.iter().map(|_| Uuid::now_v7()).collect();
    let made: std::collections::HashSet<Uuid> = sqlx::query_scalar::<_, Uuid>(
        "INSERT INTO invitations (id, course_id, email, role, invited_by, created_at, last_sent_at)
         SELECT i, $1, e, r, $5, $6, $6 FROM unnest($2::uuid[], $3::text[], $4::text[]) AS t(i, e, r)
         ON CONFLICT (course_id, email) DO NOTHING
         RETURNING id",
    )
    .bind(course)
    .bind(&ids)
    .bind(emails)
    .bind(roles)
    .bind(invited_by)
    .bind(now)
    .fetch_all(&mut *db)
    .await?
    .into_iter()
    .collect();
    let rows: Vec<InvitationRow> = sqlx::query_as(concat!(
        "SELECT ",
        invitation_columns!(),
        " FROM invitations WHERE course_id = $1 AND email = ANY($2)"
    ))
    .bind(course)
    .bind(emails)
    .fetch_all(&mut *db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let new = made.contains(&r.id);
            (r.into(), new)
        })
        .collect())
}

/// Locks `sender`'s mail budget until the transaction ends (an advisory lock: two requests
/// at once count each other), then how many messages they had sent since `since` and when the
/// oldest of those went.
pub async fn lock_mail_volume(
    tx: &mut sqlx::PgConnection,
    sender: Uuid,
    since: DateTime<Utc>,
) -> Result<(i64, Option<DateTime<Utc>>), sqlx::Error> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('mail_volume:' || $1::text, 0))")
        .bind(sender)
        .execute(&mut *tx)
        .await?;
    sqlx::query_as(
        "SELECT coalesce(sum(messages), 0)::bigint, min(sent_at) FROM mail_volume
          WHERE sender_id = $1 AND sent_at > $2",
    )
    .bind(sender)
    .bind(since)
    .fetch_one(&mut *tx)
    .await
}

/// Counts `messages` sent by `sender` at `now`, and forgets what they sent before `since`.
pub async fn record_mail_volume(
    tx: &mut sqlx::PgConnection,
    sender: Uuid,
    now: DateTime<Utc>,
    messages: i32,
    since: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM mail_volume WHERE sender_id = $1 AND sent_at <= $2")
        .bind(sender)
        .bind(since)
        .execute(&mut *tx)
        .await?;
    sqlx::query("INSERT INTO mail_volume (sender_id, sent_at, messages) VALUES ($1, $2, $3)")
        .bind(sender)
        .bind(now)
        .bind(messages)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// The locale a person prefers, if they chose one (the language of the mail they have sent).
pub async fn preferred_locale(
    db: impl PgExecutor<'_>,
    user: Uuid,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar::<_, Option<String>>("SELECT locale FROM users WHERE id = $1")
        .bind(user)
        .fetch_optional(db)
        .await
        .map(Option::flatten)
}

/// Erasure: the pending invitations of `email` (in every course), the verification links sent
/// to it, and the count of mail `person` sent.
pub async fn forget(
    tx: &mut sqlx::PgConnection,
    person: Uuid,
    email: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM invitations WHERE email = lower(btrim($1))")
        .bind(email)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM email_verifications WHERE user_id = $1 OR lower(email) = lower($2)")
        .bind(person)
        .bind(email)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM mail_volume WHERE sender_id = $1")
        .bind(person)
        .execute(&mut *tx)
        .await?;
    Ok(())
}
