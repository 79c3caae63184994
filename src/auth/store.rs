//! SQL for people, refresh tokens and quizd's own signing key.

use chrono::{DateTime, Duration, Utc};
use sqlx::{FromRow, PgExecutor, PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::Role;
use super::tokens::{REFRESH_TTL_DAYS, new_secret};

#[derive(Debug, Clone, FromRow)]
pub struct UserRow {
    pub id: Uuid,
    pub email: Option<String>,
    pub display_name: String,
    pub role: Role,
    pub locale: Option<String>,
    pub password_hash: Option<String>,
    pub created_at: DateTime<Utc>,
    pub email_verified_at: Option<DateTime<Utc>>,
}

impl UserRow {
    pub fn role(&self) -> Role {
        self.role
    }
}

const USER_COLUMNS: &str =
    "id, email, display_name, role, locale, password_hash, created_at, email_verified_at";

pub struct NewUser<'a> {
    pub email: Option<&'a str>,
    pub display_name: &'a str,
    pub password_hash: Option<&'a str>,
    pub role: Role,
    pub locale: Option<&'a str>,
}

pub async fn insert_user(
    db: impl PgExecutor<'_>,
    user: NewUser<'_>,
) -> Result<UserRow, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO users (id, email, display_name, password_hash, role, locale)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING {USER_COLUMNS}"
    )))
    .bind(Uuid::now_v7())
    .bind(user.email)
    .bind(user.display_name)
    .bind(user.password_hash)
    .bind(user.role.as_str())
    .bind(user.locale)
    .fetch_one(db)
    .await
}

pub async fn user_by_email(
    db: impl PgExecutor<'_>,
    email: &str,
) -> Result<Option<UserRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {USER_COLUMNS} FROM users WHERE lower(email) = lower($1)"
    )))
    .bind(email)
    .fetch_optional(db)
    .await
}

pub async fn user_by_id(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<UserRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {USER_COLUMNS} FROM users WHERE id = $1 AND erased_at IS NULL"
    )))
    .bind(id)
    .fetch_optional(db)
    .await
}

pub async fn set_role(
    db: impl PgExecutor<'_>,
    id: Uuid,
    role: Role,
) -> Result<Option<UserRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE users SET role = $2, updated_at = now() WHERE id = $1 RETURNING {USER_COLUMNS}"
    )))
    .bind(id)
    .bind(role.as_str())
    .fetch_optional(db)
    .await
}

pub async fn update_profile(
    db: impl PgExecutor<'_>,
    id: Uuid,
    display_name: Option<&str>,
    locale: Option<Option<&str>>,
) -> Result<Option<UserRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE users SET display_name = coalesce($2, display_name),
                          locale = CASE WHEN $3 THEN $4 ELSE locale END,
                          updated_at = now()
          WHERE id = $1 RETURNING {USER_COLUMNS}"
    )))
    .bind(id)
    .bind(display_name)
    .bind(locale.is_some())
    .bind(locale.flatten())
    .fetch_optional(db)
    .await
}

pub async fn insert_refresh_token(
    db: impl PgExecutor<'_>,
    family_id: Uuid,
    user_id: Uuid,
    hash: &[u8],
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO refresh_tokens (id, family_id, user_id, token_hash, expires_at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(Uuid::now_v7())
    .bind(family_id)
    .bind(user_id)
    .bind(hash)
    .bind(Utc::now() + Duration::days(REFRESH_TTL_DAYS))
    .execute(db)
    .await?;
    Ok(())
}

pub enum Consumed {
    /// The token was live; it is now used. Issue its successor in the same family.
    Rotated {
        user_id: Uuid,
        family_id: Uuid,
    },
    /// A used or revoked token came back: its family is now revoked.
    Reused,
    Unknown,
}

/// Uses a refresh token once. A second use of the same token, by anyone, revokes its family.
pub async fn consume_refresh_token(
    tx: &mut Transaction<'_, Postgres>,
    hash: &[u8],
) -> Result<Consumed, sqlx::Error> {
    let live: Option<(Uuid, Uuid)> = sqlx::query_as(
        "UPDATE refresh_tokens SET used_at = now()
          WHERE token_hash = $1 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > now()
          RETURNING user_id, family_id",
    )
    .bind(hash)
    .fetch_optional(&mut **tx)
    .await?;
    if let Some((user_id, family_id)) = live {
        return Ok(Consumed::Rotated { user_id, family_id });
    }
    let family: Option<(Uuid, Option<DateTime<Utc>>, DateTime<Utc>)> = sqlx::query_as(
        "SELECT family_id, used_at, expires_at FROM refresh_tokens WHERE token_hash = $1",
    )
    .bind(hash)
    .fetch_optional(&mut **tx)
    .await?;
    match family {
        Some((family_id, used_at, _)) if used_at.is_some() => {
            revoke_family(&mut **tx, family_id).await?;
            Ok(Consumed::Reused)
        }
        Some(_) | None => Ok(Consumed::Unknown),
    }
}

pub async fn revoke_family(db: impl PgExecutor<'_>, family_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE refresh_tokens SET revoked_at = now() WHERE family_id = $1 AND revoked_at IS NULL",
    )
    .bind(family_id)
    .execute(db)
    .await?;
    Ok(())
}

/// Revokes the family of a token (logout). Whether the token existed is not told.
pub async fn revoke_family_of(db: &PgPool, hash: &[u8]) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE refresh_tokens SET revoked_at = now()
          WHERE revoked_at IS NULL
            AND family_id = (SELECT family_id FROM refresh_tokens WHERE token_hash = $1)",
    )
    .bind(hash)
    .execute(db)
    .await?;
    Ok(())
}

/// The access-token signing key quizd generated for itself, made on first use.
pub async fn signing_secret(pool: &PgPool) -> Result<Vec<u8>, sqlx::Error> {
    sqlx::query(
        "INSERT INTO signing_keys (purpose, secret) VALUES ('access-token', $1)
         ON CONFLICT (purpose) DO NOTHING",
    )
    .bind(new_secret())
    .execute(pool)
    .await?;
    sqlx::query_scalar("SELECT secret FROM signing_keys WHERE purpose = 'access-token'")
        .fetch_one(pool)
        .await
}
