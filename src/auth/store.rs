//! SQL for people, refresh tokens and quizd's own signing key.

use chrono::{DateTime, Duration, Utc};
use sqlx::{FromRow, PgExecutor, PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::Role;
use super::ratelimit::{KNOWN_FOR, Keys, PER_ACCOUNT, PER_ADDRESS, PER_PAIR, Rule, Standing};
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

/// The columns of a [`Standing`]: the database's clock and each key's instant ($1: the
/// pair, $2: the account, $3: the address; a `NULL` key has no row).
macro_rules! standing_columns {
    () => {
        "now() AS now,
         (SELECT until FROM sign_in_limits WHERE kind = 'pair' AND key = $1) AS pair_until,
         (SELECT until FROM sign_in_limits WHERE kind = 'account' AND key = $2) AS account_until,
         (SELECT until FROM sign_in_limits WHERE kind = 'address' AND key = $3) AS address_until,
         (SELECT until FROM sign_in_limits WHERE kind = 'known' AND key = $1) AS known_until"
    };
}

type Query<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// Binds the pair's, the account's and the address's keys, in this order.
fn bind_keys<'q>(query: Query<'q>, keys: &'q Keys) -> Query<'q> {
    query
        .bind(keys.pair.as_ref().map(|k| &k[..]))
        .bind(&keys.account[..])
        .bind(keys.address.as_ref().map(|k| &k[..]))
}

fn standing_of(row: &sqlx::postgres::PgRow) -> Result<Standing, sqlx::Error> {
    use sqlx::Row;
    Ok(Standing {
        now: row.try_get("now")?,
        pair: row.try_get("pair_until")?,
        account: row.try_get("account_until")?,
        address: row.try_get("address_until")?,
        known: row.try_get("known_until")?,
    })
}

/// The account with this email, if any, and the sign-in limits' standing of `keys`: one
/// statement, so that a sign-in reads its limits in the round trip that finds the account.
pub async fn user_by_email_with_standing(
    db: impl PgExecutor<'_>,
    email: &str,
    keys: &Keys,
) -> Result<(Option<UserRow>, Standing), sqlx::Error> {
    const SQL: &str = concat!(
        "SELECT ",
        standing_columns!(),
        ", u.id, u.email, u.display_name, u.role, u.locale, u.password_hash, u.created_at,
           u.email_verified_at
          FROM (SELECT) AS one LEFT JOIN users u ON lower(u.email) = lower($4)"
    );
    let row = bind_keys(sqlx::query(SQL), keys)
        .bind(email)
        .fetch_one(db)
        .await?;
    let id: Option<Uuid> = sqlx::Row::try_get(&row, "id")?;
    let user = id.map(|_| UserRow::from_row(&row)).transpose()?;
    Ok((user, standing_of(&row)?))
}

/// The sign-in limits' standing of `keys` (for a password checked outside sign-in).
pub async fn sign_in_standing(
    db: impl PgExecutor<'_>,
    keys: &Keys,
) -> Result<Standing, sqlx::Error> {
    const SQL: &str = concat!("SELECT ", standing_columns!());
    standing_of(&bind_keys(sqlx::query(SQL), keys).fetch_one(db).await?)
}

/// Deletes up to 16 rows whose instant has passed (none of the keys in `$1`, which the same
/// statement writes): each write tidies a little, so expired rows never pile up.
macro_rules! tidy_sign_in_limits {
    () => {
        "tidy AS (
            DELETE FROM sign_in_limits
             WHERE (kind, key) IN (SELECT kind, key FROM sign_in_limits
                                    WHERE until < now() AND key <> ALL ($1)
                                    ORDER BY until LIMIT 16 FOR UPDATE SKIP LOCKED))"
    };
}

/// Counts one failed sign-in against its pair, account and address: each key's instant moves
/// `every` past max(instant, now), in one statement.
pub async fn count_sign_in_failure(
    db: impl PgExecutor<'_>,
    keys: &Keys,
) -> Result<(), sqlx::Error> {
    const SQL: &str = concat!(
        "WITH ",
        tidy_sign_in_limits!(),
        "
        INSERT INTO sign_in_limits AS l (kind, key, until)
        SELECT k.kind::sign_in_limit, k.key, now() + k.every * interval '1 second'
          FROM (VALUES ('pair', $2::bytea, $5::float8), ('account', $3, $6), ('address', $4, $7))
               AS k (kind, key, every)
         WHERE k.key IS NOT NULL
        ON CONFLICT (kind, key) DO UPDATE
           SET until = greatest(l.until, now()) + (excluded.until - now())"
    );
    let all: Vec<&[u8]> = [
        keys.pair.as_ref(),
        Some(&keys.account),
        keys.address.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(|k| &k[..])
    .collect();
    bind_keys(sqlx::query(SQL).bind(all), keys)
        .bind(PER_PAIR.every.as_secs_f64())
        .bind(PER_ACCOUNT.every.as_secs_f64())
        .bind(PER_ADDRESS.every.as_secs_f64())
        .execute(db)
        .await?;
    Ok(())
}

/// Counts a sign-up against its address's key if `rule` allows one more now, in one statement
/// (the upsert's condition is judged on the locked row, so sign-ups at once through several
/// instances are counted one by one). `None`: counted; `Some((until, now))`: refused, with the
/// key's instant and the database's clock.
pub async fn count_sign_up(
    db: impl PgExecutor<'_>,
    key: &[u8; 16],
    rule: Rule,
) -> Result<Option<(DateTime<Utc>, DateTime<Utc>)>, sqlx::Error> {
    count_limited(db, "signup", key, rule).await
}

/// [`count_sign_up`] for a key of any counting `kind` (`signup`, `live_join_address`,
/// `live_join_account`).
pub async fn count_limited(
    db: impl PgExecutor<'_>,
    kind: &str,
    key: &[u8; 16],
    rule: Rule,
) -> Result<Option<(DateTime<Utc>, DateTime<Utc>)>, sqlx::Error> {
    const SQL: &str = concat!(
        "WITH ",
        tidy_sign_in_limits!(),
        ",
        held AS (SELECT until FROM sign_in_limits WHERE kind = $5::sign_in_limit AND key = $2),
        counted AS (
            INSERT INTO sign_in_limits AS l (kind, key, until)
            VALUES ($5::sign_in_limit, $2, now() + $3 * interval '1 second')
            ON CONFLICT (kind, key) DO UPDATE
               SET until = greatest(l.until, now()) + $3 * interval '1 second'
             WHERE l.until <= now() + $4 * interval '1 second'
            RETURNING until)
        SELECT (SELECT until FROM held), now() FROM (SELECT) AS one
         WHERE NOT EXISTS (SELECT FROM counted)"
    );
    sqlx::query_as(SQL)
        .bind(vec![&key[..]])
        .bind(&key[..])
        .bind(rule.every.as_secs_f64())
        .bind(rule.tolerance().as_secs_f64())
        .bind(kind)
        .fetch_optional(db)
        .await
        .map(|refused: Option<(Option<DateTime<Utc>>, DateTime<Utc>)>| {
            refused.map(|(until, now)| (until.unwrap_or(now), now))
        })
}

/// A sign-in succeeded: its pair's failures go and the pair is known for [`KNOWN_FOR`].
pub async fn remember_sign_in(db: impl PgExecutor<'_>, pair: &[u8; 16]) -> Result<(), sqlx::Error> {
    const SQL: &str = concat!(
        "WITH ",
        tidy_sign_in_limits!(),
        ",
        cleared AS (DELETE FROM sign_in_limits WHERE kind = 'pair' AND key = $2)
        INSERT INTO sign_in_limits (kind, key, until)
        VALUES ('known', $2, now() + $3 * interval '1 second')
        ON CONFLICT (kind, key) DO UPDATE SET until = excluded.until"
    );
    sqlx::query(SQL)
        .bind(vec![&pair[..]])
        .bind(&pair[..])
        .bind(KNOWN_FOR.as_secs_f64())
        .execute(db)
        .await?;
    Ok(())
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

/// Whether the account exists and is not erased: a primary-key lookup, made for each
/// authenticated request that [`super::erasures::LiveAccounts`] cannot answer from memory.
pub async fn account_is_live(db: impl PgExecutor<'_>, id: Uuid) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar::<_, bool>("SELECT erased_at IS NULL FROM users WHERE id = $1")
        .bind(id)
        .fetch_optional(db)
        .await
        .map(|live| live.unwrap_or(false))
}

/// Tells every instance, when the caller's transaction commits, that `id` was erased.
pub async fn announce_erasure(db: impl PgExecutor<'_>, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_notify($1, $2::text)")
        .bind(super::erasures::CHANNEL)
        .bind(id)
        .execute(db)
        .await?;
    Ok(())
}

/// Changes a live account's name or locale; `None` for an erased or missing one.
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
          WHERE id = $1 AND erased_at IS NULL RETURNING {USER_COLUMNS}"
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
