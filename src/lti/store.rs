//! SQL for LTI: registrations and their cached keys, quizd's own keys, the login material of
//! a launch (states, nonces, one-time codes), what a launch provisions (people, courses,
//! enrollments, resource links, Deep Linking requests), the roster, and grade passback from
//! the outbox. Every function takes an executor, so that a caller can run several in one
//! transaction; the transactions themselves are the callers'.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{FromRow, PgExecutor};
use uuid::Uuid;

use super::ags::{Delivery, TOPICS};
use super::keys::{NewKey, RETIRED_KEY_PUBLISHED_DAYS};
use super::registrations::{RegistrationCreate, RegistrationUpdate};
use crate::events::store::STATUS;
use crate::events::{AGS, DeliveryFilter};
use crate::policy::GradingMethod;

// ---------------------------------------------------------------------------------------------
// Registrations: the platforms quizd trusts.

#[derive(Debug, Clone, FromRow)]
pub struct RegistrationRow {
    pub id: Uuid,
    pub title: String,
    pub issuer: String,
    pub client_id: String,
    pub deployment_ids: Vec<String>,
    pub auth_endpoint: String,
    pub token_endpoint: String,
    pub token_audience: Option<String>,
    pub jwks_url: Option<String>,
    pub jwks: Option<Value>,
    pub jwks_cache: Option<Value>,
    pub jwks_fetched_at: Option<DateTime<Utc>>,
    pub service_hosts: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, title, issuer, client_id, deployment_ids, auth_endpoint, token_endpoint,
    token_audience, jwks_url, jwks, jwks_cache, jwks_fetched_at, service_hosts, created_at,
    updated_at";

/// A new registration, as checked by [`super::registrations::check_create`]. A second one
/// with the same issuer and client id is a unique violation, which callers turn into their
/// own conflict.
pub async fn insert_registration(
    db: impl PgExecutor<'_>,
    r: &RegistrationCreate,
) -> Result<RegistrationRow, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO lti_registrations (id, title, issuer, client_id, deployment_ids,
                auth_endpoint, token_endpoint, token_audience, jwks_url, jwks, service_hosts)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING {COLUMNS}"
    )))
    .bind(Uuid::now_v7())
    .bind(r.title.as_deref().map(str::trim).unwrap_or(&r.issuer))
    .bind(&r.issuer)
    .bind(&r.client_id)
    .bind(&r.deployment_ids)
    .bind(&r.auth_endpoint)
    .bind(&r.token_endpoint)
    .bind(&r.token_audience)
    .bind(&r.jwks_url)
    .bind(&r.jwks)
    .bind(r.service_hosts.as_deref().unwrap_or_default())
    .fetch_one(db)
    .await
}

/// Applies a checked change. A change of keys (`jwks_url` or `jwks`) drops the cached key
/// set with them, so that no key of the old set is trusted after it.
pub async fn update_registration(
    db: impl PgExecutor<'_>,
    id: Uuid,
    u: &RegistrationUpdate,
) -> Result<Option<RegistrationRow>, sqlx::Error> {
    let keys_change = u.jwks_url.is_some() || u.jwks.is_some();
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE lti_registrations SET
            title = coalesce($2, title),
            deployment_ids = coalesce($3, deployment_ids),
            auth_endpoint = coalesce($4, auth_endpoint),
            token_endpoint = coalesce($5, token_endpoint),
            token_audience = coalesce($6, token_audience),
            jwks_url = CASE WHEN $7 THEN $8 ELSE jwks_url END,
            jwks = CASE WHEN $7 THEN $9 ELSE jwks END,
            jwks_cache = CASE WHEN $7 THEN NULL ELSE jwks_cache END,
            jwks_fetched_at = CASE WHEN $7 THEN NULL ELSE jwks_fetched_at END,
            service_hosts = coalesce($10, service_hosts),
            updated_at = now()
          WHERE id = $1 RETURNING {COLUMNS}"
    )))
    .bind(id)
    .bind(u.title.as_deref().map(str::trim))
    .bind(&u.deployment_ids)
    .bind(&u.auth_endpoint)
    .bind(&u.token_endpoint)
    .bind(&u.token_audience)
    .bind(keys_change)
    .bind(&u.jwks_url)
    .bind(&u.jwks)
    .bind(&u.service_hosts)
    .fetch_optional(db)
    .await
}

pub async fn registration(
    db: impl PgExecutor<'_>,
    id: Uuid,
) -> Result<Option<RegistrationRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM lti_registrations WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(db)
    .await
}

pub async fn registrations(db: impl PgExecutor<'_>) -> Result<Vec<RegistrationRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM lti_registrations ORDER BY created_at, id"
    )))
    .fetch_all(db)
    .await
}

/// The registrations of an issuer, narrowed to a client id when one is given. At most two:
/// a login only needs to know whether there is none, one, or more than one.
pub async fn registrations_for_issuer(
    db: impl PgExecutor<'_>,
    issuer: &str,
    client_id: Option<&str>,
) -> Result<Vec<RegistrationRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM lti_registrations
          WHERE issuer = $1 AND ($2::text IS NULL OR client_id = $2) ORDER BY created_at LIMIT 2"
    )))
    .bind(issuer)
    .bind(client_id)
    .fetch_all(db)
    .await
}

/// Whether there was such a registration to delete.
pub async fn delete_registration(db: impl PgExecutor<'_>, id: Uuid) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("DELETE FROM lti_registrations WHERE id = $1")
        .bind(id)
        .execute(db)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Keeps the key set just fetched from the registration's `jwks_url`, and when.
pub async fn cache_jwks(
    db: impl PgExecutor<'_>,
    registration: Uuid,
    set: &Value,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE lti_registrations SET jwks_cache = $2, jwks_fetched_at = now() WHERE id = $1",
    )
    .bind(registration)
    .bind(set)
    .execute(db)
    .await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// quizd's own keys.

/// A key as stored.
#[derive(Debug, Clone, FromRow)]
pub struct KeyRow {
    pub kid: String,
    pub private_pem: String,
    pub n: String,
    pub e: String,
    pub created_at: DateTime<Utc>,
    pub retired_at: Option<DateTime<Utc>>,
}

/// The key that signs now: the one not retired (a unique index allows one).
pub async fn active_key(db: impl PgExecutor<'_>) -> Result<Option<KeyRow>, sqlx::Error> {
    sqlx::query_as::<_, KeyRow>(
        "SELECT kid, private_pem, n, e, created_at, retired_at FROM lti_keys
              WHERE retired_at IS NULL",
    )
    .fetch_optional(db)
    .await
}

/// Adds a first signing key unless one exists. `ON CONFLICT DO NOTHING`: when two first uses
/// race, the one-active-key index lets one of them win and the other reads the winner's.
/// Whether this one was added.
pub async fn insert_first_key(db: impl PgExecutor<'_>, key: &NewKey) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO lti_keys (kid, private_pem, n, e) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING",
    )
    .bind(&key.kid)
    .bind(&key.private_pem)
    .bind(&key.n)
    .bind(&key.e)
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Retires the signing key (it stays published for a while); with [`insert_key`] in one
/// transaction, a rotation.
pub async fn retire_active_key(db: impl PgExecutor<'_>) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE lti_keys SET retired_at = now() WHERE retired_at IS NULL")
        .execute(db)
        .await?;
    Ok(())
}

/// Adds the new signing key of a rotation, after [`retire_active_key`].
pub async fn insert_key(db: impl PgExecutor<'_>, key: &NewKey) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO lti_keys (kid, private_pem, n, e) VALUES ($1, $2, $3, $4)")
        .bind(&key.kid)
        .bind(&key.private_pem)
        .bind(&key.n)
        .bind(&key.e)
        .execute(db)
        .await?;
    Ok(())
}

/// The keys in the published set: the signing key and those retired in the last
/// [`RETIRED_KEY_PUBLISHED_DAYS`], newest first.
pub async fn published_keys(db: impl PgExecutor<'_>) -> Result<Vec<KeyRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT kid, private_pem, n, e, created_at, retired_at FROM lti_keys
          WHERE retired_at IS NULL OR retired_at > now() - interval '{RETIRED_KEY_PUBLISHED_DAYS} days'
          ORDER BY created_at DESC, kid"
    )))
    .fetch_all(db)
    .await
}

// ---------------------------------------------------------------------------------------------
// Logins: the state and nonce quizd sends the platform, bound to the browser.

/// A login as it was started.
#[derive(Debug, FromRow)]
pub struct LoginState {
    pub registration_id: Uuid,
    pub nonce: String,
    pub browser_hash: Vec<u8>,
    pub target_link_uri: String,
    pub deployment_id: Option<String>,
    pub expires_at: DateTime<Utc>,
    /// Started with `lti_storage_target`: the platform's storage frame, and the hash of the
    /// secret kept there, which proves the browser where the state cookie does not come back.
    pub storage_target: Option<String>,
    pub storage_hash: Option<Vec<u8>>,
}

/// A login being started; the state and the browser are kept as hashes only.
pub struct NewLoginState<'a> {
    pub state_hash: &'a [u8],
    pub registration_id: Uuid,
    pub nonce: &'a str,
    pub browser_hash: &'a [u8],
    pub target_link_uri: &'a str,
    pub deployment_id: Option<&'a str>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub storage_target: Option<&'a str>,
    pub storage_hash: Option<&'a [u8]>,
    /// What the platform's login initiation said, to start it again ([`LoginRestart`]).
    pub login_hint: &'a str,
    pub message_hint: Option<&'a str>,
}

pub async fn insert_login_state(
    db: impl PgExecutor<'_>,
    s: NewLoginState<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO lti_login_states (state_hash, registration_id, nonce, browser_hash,
                target_link_uri, deployment_id, created_at, expires_at, storage_target,
                storage_hash, login_hint, message_hint)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(s.state_hash)
    .bind(s.registration_id)
    .bind(s.nonce)
    .bind(s.browser_hash)
    .bind(s.target_link_uri)
    .bind(s.deployment_id)
    .bind(s.created_at)
    .bind(s.expires_at)
    .bind(s.storage_target)
    .bind(s.storage_hash)
    .bind(s.login_hint)
    .bind(s.message_hint)
    .execute(db)
    .await?;
    Ok(())
}

/// An unused login's state without using it up: the registration and the storage frame of a
/// login started with `lti_storage_target`, for the page that reads the secret back from the
/// platform's storage before the launch is posted again.
pub async fn peek_login_state(
    db: impl PgExecutor<'_>,
    state_hash: &[u8],
) -> Result<Option<LoginState>, sqlx::Error> {
    sqlx::query_as(
        "SELECT registration_id, nonce, browser_hash, target_link_uri, deployment_id, expires_at,
                storage_target, storage_hash
           FROM lti_login_states WHERE state_hash = $1 AND used_at IS NULL",
    )
    .bind(state_hash)
    .fetch_optional(db)
    .await
}

/// Takes a login's state: marks it used and returns it in one statement, so that it is used
/// up by this one read, whatever follows (a launch cannot be posted twice), and of two posts
/// at once only one gets it (the other waits for the row and then finds it used). Expired
/// states are returned too; the caller refuses them.
pub async fn take_login_state(
    db: impl PgExecutor<'_>,
    state_hash: &[u8],
) -> Result<Option<LoginState>, sqlx::Error> {
    sqlx::query_as(
        "UPDATE lti_login_states SET used_at = now() WHERE state_hash = $1 AND used_at IS NULL
         RETURNING registration_id, nonce, browser_hash, target_link_uri, deployment_id, expires_at,
                   storage_target, storage_hash",
    )
    .bind(state_hash)
    .fetch_optional(db)
    .await
}

/// What starting a login again takes: the parameters of the platform's OIDC login initiation
/// (LTI 1.3 Core §5.1.1) as it sent them for a login quizd still knows (used, expired or
/// not), with the registration's issuer and client id.
#[derive(Debug, Clone, FromRow)]
pub struct LoginRestart {
    pub issuer: String,
    pub client_id: String,
    pub login_hint: String,
    pub message_hint: Option<String>,
    pub target_link_uri: String,
    pub deployment_id: Option<String>,
}

pub async fn login_restart(
    db: impl PgExecutor<'_>,
    state_hash: &[u8],
) -> Result<Option<LoginRestart>, sqlx::Error> {
    sqlx::query_as(
        "SELECT r.issuer, r.client_id, s.login_hint, s.message_hint, s.target_link_uri,
                s.deployment_id
           FROM lti_login_states s JOIN lti_registrations r ON r.id = s.registration_id
          WHERE s.state_hash = $1 AND s.login_hint IS NOT NULL",
    )
    .bind(state_hash)
    .fetch_optional(db)
    .await
}

/// Whether the platform's nonce has been used already (a quick refusal before validation;
/// [`record_nonce`] is what makes replay impossible).
pub async fn nonce_used(
    db: impl PgExecutor<'_>,
    registration: Uuid,
    nonce: &str,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM lti_used_nonces WHERE registration_id = $1 AND nonce = $2)",
    )
    .bind(registration)
    .bind(nonce)
    .fetch_one(db)
    .await
}

/// Records a launch's nonce until `expires_at`. `ON CONFLICT DO NOTHING` on the primary key:
/// `false` when it was recorded already — a replay, or a second post of the same id_token
/// racing this one (which waits on the first's row, then finds it).
pub async fn record_nonce(
    db: impl PgExecutor<'_>,
    registration: Uuid,
    nonce: &str,
    expires_at: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let fresh = sqlx::query(
        "INSERT INTO lti_used_nonces (registration_id, nonce, expires_at) VALUES ($1, $2, $3)
         ON CONFLICT DO NOTHING",
    )
    .bind(registration)
    .bind(nonce)
    .bind(expires_at)
    .execute(db)
    .await?;
    Ok(fresh.rows_affected() == 1)
}

/// Removes logins, nonces, codes and Deep Linking requests that have expired (Deep Linking
/// requests a day later, so that a late answer is told "expired" rather than "not found").
pub async fn purge_expired(db: &sqlx::PgPool) -> Result<(), sqlx::Error> {
    for sql in [
        "DELETE FROM lti_login_states WHERE expires_at < now()",
        "DELETE FROM lti_used_nonces WHERE expires_at < now()",
        "DELETE FROM lti_launch_codes WHERE expires_at < now()",
        "DELETE FROM lti_deep_links WHERE expires_at < now() - interval '1 day'",
    ] {
        sqlx::query(sql).execute(db).await?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Provisioning: what a launch makes exist.

/// The person of a launch, made on their first launch; the key is the platform's issuer and
/// subject (`ON CONFLICT` on the partial unique index of external identities). The name
/// follows the platform when it gives one; a locale chosen in quizd is kept.
pub struct LaunchUser<'a> {
    pub display_name: &'a str,
    /// The site role of a person the launch creates; an existing person's stays as it is.
    pub role: &'a str,
    pub locale: Option<&'a str>,
    pub issuer: &'a str,
    pub subject: &'a str,
    /// Whether the launch named the person (else `display_name` is a placeholder, which does
    /// not overwrite a name).
    pub named: bool,
}

pub async fn upsert_launch_user(
    db: impl PgExecutor<'_>,
    u: LaunchUser<'_>,
) -> Result<Uuid, sqlx::Error> {
    sqlx::query_scalar(
        "INSERT INTO users (id, display_name, role, locale, ext_issuer, ext_subject)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (ext_issuer, ext_subject) WHERE ext_issuer IS NOT NULL DO UPDATE
            SET display_name = CASE WHEN $7 THEN EXCLUDED.display_name ELSE users.display_name END,
                locale = coalesce(users.locale, EXCLUDED.locale),
                updated_at = now()
         RETURNING id",
    )
    .bind(Uuid::now_v7())
    .bind(u.display_name)
    .bind(u.role)
    .bind(u.locale)
    .bind(u.issuer)
    .bind(u.subject)
    .bind(u.named)
    .fetch_one(db)
    .await
}

/// Enrolls a person in a course with a role, or sets the role of their enrollment; the
/// course's owner keeps teaching it ([`crate::owner_keeps_teaching`]). Launches and rosters.
pub async fn enroll(
    db: impl PgExecutor<'_>,
    course: Uuid,
    user: Uuid,
    role: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(concat!(
        "INSERT INTO enrollments (course_id, user_id, role) VALUES ($1, $2, $3)
                 ON CONFLICT (course_id, user_id) DO UPDATE SET role = ",
        crate::owner_keeps_teaching!()
    ))
    .bind(course)
    .bind(user)
    .bind(role)
    .execute(db)
    .await?;
    Ok(())
}

/// An LMS context (a course there), as a launch names it.
#[derive(Clone, Copy)]
pub struct ContextKey<'a> {
    pub registration_id: Uuid,
    pub deployment_id: &'a str,
    pub context_id: &'a str,
}

/// The course of a known context, its roster URL kept as the latest launch gives it (a launch
/// without one keeps the old). `None`: the context's first launch.
pub async fn touch_context(
    db: impl PgExecutor<'_>,
    key: ContextKey<'_>,
    memberships_url: Option<&str>,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "UPDATE lti_contexts SET memberships_url = coalesce($4, memberships_url), updated_at = now()
          WHERE registration_id = $1 AND deployment_id = $2 AND context_id = $3
          RETURNING course_id",
    )
    .bind(key.registration_id)
    .bind(key.deployment_id)
    .bind(key.context_id)
    .bind(memberships_url)
    .fetch_optional(db)
    .await
}

pub async fn course_archived(db: impl PgExecutor<'_>, course: Uuid) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT archived_at IS NOT NULL FROM courses WHERE id = $1")
        .bind(course)
        .fetch_one(db)
        .await
}

/// The course made for a context on its first launch (before [`link_context`]).
pub async fn insert_course(
    db: impl PgExecutor<'_>,
    id: Uuid,
    title: &str,
    code: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO courses (id, title, code) VALUES ($1, $2, $3)")
        .bind(id)
        .bind(title)
        .bind(code)
        .execute(db)
        .await?;
    Ok(())
}

/// Links a context to the course just made for it. `ON CONFLICT DO NOTHING`: a simultaneous
/// first launch of the same context waits here on the other's row and then gets `None`; the
/// caller removes its own course ([`delete_course`]) and takes the other's
/// ([`context_course`]).
pub async fn link_context(
    db: impl PgExecutor<'_>,
    key: ContextKey<'_>,
    course: Uuid,
    memberships_url: Option<&str>,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "INSERT INTO lti_contexts (registration_id, deployment_id, context_id, course_id,
                memberships_url)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING course_id",
    )
    .bind(key.registration_id)
    .bind(key.deployment_id)
    .bind(key.context_id)
    .bind(course)
    .bind(memberships_url)
    .fetch_optional(db)
    .await
}

/// Removes the course a launch made in vain (another launch linked the context first).
pub async fn delete_course(db: impl PgExecutor<'_>, course: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM courses WHERE id = $1")
        .bind(course)
        .execute(db)
        .await?;
    Ok(())
}

/// The course of a context that is linked (read after losing the race of [`link_context`]).
pub async fn context_course(
    db: impl PgExecutor<'_>,
    key: ContextKey<'_>,
) -> Result<Uuid, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT course_id FROM lti_contexts
          WHERE registration_id = $1 AND deployment_id = $2 AND context_id = $3",
    )
    .bind(key.registration_id)
    .bind(key.deployment_id)
    .bind(key.context_id)
    .fetch_one(db)
    .await
}

/// A resource link (a placement in the LMS), as a launch names it.
#[derive(Clone, Copy)]
pub struct ResourceLinkKey<'a> {
    pub registration_id: Uuid,
    pub deployment_id: &'a str,
    pub resource_link_id: &'a str,
}

/// The grade service endpoints a launch gives for its resource link.
#[derive(Clone, Copy)]
pub struct AgsEndpoints<'a> {
    pub lineitem: Option<&'a str>,
    pub lineitems: Option<&'a str>,
    pub scopes: &'a [String],
}

/// The assignment of a known resource link. With `offered` (the launch has the AGS claim),
/// its endpoints become the launch's (a line item found or made by a delivery is kept when
/// the launch names none); without, they stay. `None`: the link's first launch.
pub async fn touch_resource_link(
    db: impl PgExecutor<'_>,
    key: ResourceLinkKey<'_>,
    offered: bool,
    ags: AgsEndpoints<'_>,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar::<_, Uuid>(
        "UPDATE lti_resource_links
                SET lineitem_url = CASE WHEN $4 THEN coalesce($5, lineitem_url) ELSE lineitem_url END,
                    lineitems_url = CASE WHEN $4 THEN $6 ELSE lineitems_url END,
                    ags_scopes = CASE WHEN $4 THEN $7 ELSE ags_scopes END,
                    updated_at = now()
              WHERE registration_id = $1 AND deployment_id = $2 AND resource_link_id = $3
              RETURNING assignment_id",
    )
    .bind(key.registration_id)
    .bind(key.deployment_id)
    .bind(key.resource_link_id)
    .bind(offered)
    .bind(ags.lineitem)
    .bind(ags.lineitems)
    .bind(ags.scopes)
    .fetch_optional(db)
    .await
}

/// Links a resource link to the assignment just placed for it. `ON CONFLICT DO NOTHING`:
/// `false` when a simultaneous first launch linked it first (this one waited on its row);
/// the caller removes its own assignment ([`delete_assignment`]) and takes the other's.
pub async fn link_resource(
    db: impl PgExecutor<'_>,
    key: ResourceLinkKey<'_>,
    assignment: Uuid,
    ags: AgsEndpoints<'_>,
) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query(
        "INSERT INTO lti_resource_links (registration_id, deployment_id, resource_link_id,
                assignment_id, lineitem_url, lineitems_url, ags_scopes)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
    )
    .bind(key.registration_id)
    .bind(key.deployment_id)
    .bind(key.resource_link_id)
    .bind(assignment)
    .bind(ags.lineitem)
    .bind(ags.lineitems)
    .bind(ags.scopes)
    .execute(db)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Removes the assignment a launch placed in vain (another launch linked the resource first).
pub async fn delete_assignment(
    db: impl PgExecutor<'_>,
    assignment: Uuid,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM assignments WHERE id = $1")
        .bind(assignment)
        .execute(db)
        .await?;
    Ok(())
}

/// A quiz version's title in its source locale (the title a placement defaults to).
pub async fn quiz_source_title(
    db: impl PgExecutor<'_>,
    version: Uuid,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT content -> 'title' ->> (content ->> 'source_locale') FROM quiz_versions WHERE id = $1",
    )
    .bind(version)
    .fetch_one(db)
    .await
}

// ---------------------------------------------------------------------------------------------
// Deep Linking requests: an instructor's pending choice.

/// A Deep Linking request being opened by a launch.
pub struct NewDeepLink<'a> {
    pub id: Uuid,
    pub registration_id: Uuid,
    pub deployment_id: &'a str,
    pub user_id: Uuid,
    pub return_url: &'a str,
    pub data: Option<&'a str>,
    pub accept_multiple: bool,
    pub accept_lineitem: bool,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

pub async fn insert_deep_link(
    db: impl PgExecutor<'_>,
    d: NewDeepLink<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO lti_deep_links (id, registration_id, deployment_id, user_id,
                        return_url, data, accept_multiple, accept_lineitem, created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(d.id)
    .bind(d.registration_id)
    .bind(d.deployment_id)
    .bind(d.user_id)
    .bind(d.return_url)
    .bind(d.data)
    .bind(d.accept_multiple)
    .bind(d.accept_lineitem)
    .bind(d.created_at)
    .bind(d.expires_at)
    .execute(db)
    .await?;
    Ok(())
}

#[derive(FromRow)]
pub struct DeepLinkRow {
    pub registration_id: Uuid,
    pub deployment_id: String,
    pub user_id: Uuid,
    pub return_url: String,
    pub data: Option<String>,
    pub accept_multiple: bool,
    pub accept_lineitem: bool,
    pub expires_at: DateTime<Utc>,
    pub used_at: Option<DateTime<Utc>>,
    /// The hash of the response quizd signed, once answered.
    pub response_hash: Option<Vec<u8>>,
}

pub async fn deep_link(
    db: impl PgExecutor<'_>,
    id: Uuid,
) -> Result<Option<DeepLinkRow>, sqlx::Error> {
    sqlx::query_as::<_, DeepLinkRow>(
        "SELECT registration_id, deployment_id, user_id, return_url, data, accept_multiple,
                accept_lineitem, expires_at, used_at, response_hash
           FROM lti_deep_links WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(db)
    .await
}

/// Marks a Deep Linking request answered with the response quizd signed (kept as its hash);
/// `false` when it was already (`used_at IS NULL` in the statement: of two answers at once,
/// one wins).
pub async fn use_deep_link(
    db: impl PgExecutor<'_>,
    id: Uuid,
    response_hash: &[u8],
) -> Result<bool, sqlx::Error> {
    let used = sqlx::query(
        "UPDATE lti_deep_links SET used_at = now(), response_hash = $2
          WHERE id = $1 AND used_at IS NULL",
    )
    .bind(id)
    .bind(response_hash)
    .execute(db)
    .await?;
    Ok(used.rows_affected() == 1)
}

// ---------------------------------------------------------------------------------------------
// Launch codes: the one-time code a launch hands the browser.

/// A launch's code being issued; the code and the browser's secret are kept as hashes only.
pub struct NewLaunchCode<'a> {
    pub code_hash: &'a [u8],
    pub user_id: Uuid,
    pub destination: &'a str,
    pub course_id: Option<Uuid>,
    pub assignment_id: Option<Uuid>,
    pub deep_link_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub browser_hash: &'a [u8],
}

pub async fn insert_launch_code(
    db: impl PgExecutor<'_>,
    c: NewLaunchCode<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO lti_launch_codes (code_hash, user_id, destination, course_id, assignment_id,
                deep_link_id, created_at, expires_at, browser_hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(c.code_hash)
    .bind(c.user_id)
    .bind(c.destination)
    .bind(c.course_id)
    .bind(c.assignment_id)
    .bind(c.deep_link_id)
    .bind(c.created_at)
    .bind(c.expires_at)
    .bind(c.browser_hash)
    .execute(db)
    .await?;
    Ok(())
}

/// A launch's code as it was issued.
#[derive(FromRow)]
pub struct LaunchCode {
    pub user_id: Uuid,
    pub destination: String,
    pub course_id: Option<Uuid>,
    pub assignment_id: Option<Uuid>,
    pub deep_link_id: Option<Uuid>,
    pub expires_at: DateTime<Utc>,
    pub browser_hash: Vec<u8>,
}

/// Takes a launch's code: `DELETE … RETURNING`, so that it is used up by this one try,
/// whatever follows, and of two tries at once only one gets it. Expired codes are returned
/// too; the caller refuses them.
pub async fn take_launch_code(
    db: impl PgExecutor<'_>,
    code_hash: &[u8],
) -> Result<Option<LaunchCode>, sqlx::Error> {
    sqlx::query_as(
        "DELETE FROM lti_launch_codes WHERE code_hash = $1
         RETURNING user_id, destination, course_id, assignment_id, deep_link_id, expires_at,
                   browser_hash",
    )
    .bind(code_hash)
    .fetch_optional(db)
    .await
}

// ---------------------------------------------------------------------------------------------
// Rosters (NRPS).

/// The registration and roster URL of a course that came from an LMS context.
pub async fn course_context(
    db: impl PgExecutor<'_>,
    course: Uuid,
) -> Result<Option<(Uuid, Option<String>)>, sqlx::Error> {
    sqlx::query_as("SELECT registration_id, memberships_url FROM lti_contexts WHERE course_id = $1")
        .bind(course)
        .fetch_optional(db)
        .await
}

/// A member of a platform's roster, made a person on first sight (`ON CONFLICT` on the
/// partial unique index of external identities), a site learner; the name follows the
/// platform when it gives one (`named`). Their id and name in quizd.
pub async fn upsert_roster_user(
    db: impl PgExecutor<'_>,
    display_name: &str,
    issuer: &str,
    subject: &str,
    named: bool,
) -> Result<(Uuid, String), sqlx::Error> {
    sqlx::query_as(
        "INSERT INTO users (id, display_name, role, ext_issuer, ext_subject)
             VALUES ($1, $2, 'learner', $3, $4)
             ON CONFLICT (ext_issuer, ext_subject) WHERE ext_issuer IS NOT NULL DO UPDATE
                SET display_name = CASE WHEN $5 THEN EXCLUDED.display_name ELSE users.display_name END
             RETURNING id, display_name",
    )
    .bind(Uuid::now_v7())
    .bind(display_name)
    .bind(issuer)
    .bind(subject)
    .bind(named)
    .fetch_one(db)
    .await
}

/// How many attempts a person started and finished at an assignment.
pub async fn attempt_counts(
    db: impl PgExecutor<'_>,
    assignment: Uuid,
    user: Uuid,
) -> Result<(i64, i64), sqlx::Error> {
    sqlx::query_as(
        "SELECT count(*), count(finished_at) FROM attempts
                      WHERE assignment_id = $1 AND user_id = $2",
    )
    .bind(assignment)
    .bind(user)
    .fetch_one(db)
    .await
}

// ---------------------------------------------------------------------------------------------
// Grade passback: the outbox events of LTI-linked assignments.

/// Where an attempt's grade goes: the learner, the assignment, its resource link and
/// platform.
#[derive(Debug, FromRow)]
pub struct Target {
    pub user_id: Uuid,
    pub assignment_id: Uuid,
    pub slug: String,
    pub title: String,
    #[sqlx(try_from = "String")]
    pub grading_method: GradingMethod,
    pub registration_id: Uuid,
    pub deployment_id: String,
    pub resource_link_id: String,
    pub lineitem_url: Option<String>,
    pub lineitems_url: Option<String>,
    pub ags_scopes: Vec<String>,
    pub ext_issuer: Option<String>,
    pub ext_subject: Option<String>,
}

/// `None`: the attempt, or its assignment's LMS link, no longer exists.
pub async fn delivery_target(
    db: impl PgExecutor<'_>,
    attempt: Uuid,
) -> Result<Option<Target>, sqlx::Error> {
    sqlx::query_as(
        "SELECT t.user_id, t.assignment_id, q.slug, a.title, a.grading_method, l.registration_id,
                l.deployment_id, l.resource_link_id, l.lineitem_url, l.lineitems_url, l.ags_scopes,
                u.ext_issuer, u.ext_subject
           FROM attempts t
           JOIN assignments a ON a.id = t.assignment_id
           JOIN quizzes q ON q.id = a.quiz_id
           JOIN lti_resource_links l ON l.assignment_id = t.assignment_id
           JOIN users u ON u.id = t.user_id
          WHERE t.id = $1",
    )
    .bind(attempt)
    .fetch_optional(db)
    .await
}

/// A learner's finished attempts at an assignment: number, points that count, maximum.
pub async fn finished_grades(
    db: impl PgExecutor<'_>,
    assignment: Uuid,
    user: Uuid,
) -> Result<Vec<(i32, f64, f64)>, sqlx::Error> {
    sqlx::query_as(
        // The effective grade: a staff override counts instead of the computed score.
        "SELECT number, coalesce(override_points, score), max_score FROM attempts
          WHERE assignment_id = $1 AND user_id = $2 AND finished_at IS NOT NULL",
    )
    .bind(assignment)
    .bind(user)
    .fetch_all(db)
    .await
}

/// Keeps the line item a delivery found or made in the platform's container.
pub async fn set_lineitem_url(
    db: impl PgExecutor<'_>,
    key: ResourceLinkKey<'_>,
    lineitem: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE lti_resource_links SET lineitem_url = $4, updated_at = now()
                          WHERE registration_id = $1 AND deployment_id = $2 AND resource_link_id = $3",
    )
    .bind(key.registration_id)
    .bind(key.deployment_id)
    .bind(key.resource_link_id)
    .bind(lineitem)
    .execute(db)
    .await?;
    Ok(())
}

/// Grade deliveries as admins see them: every event of an LTI-linked attempt, with its
/// delivery to the LMS (none yet: not dispatched, so pending).
fn delivery_select() -> String {
    format!(
        "SELECT o.id, o.topic, o.aggregate_id AS attempt_id, t.assignment_id, t.user_id,
                l.registration_id, {STATUS}
           FROM outbox o
           JOIN attempts t ON t.id = o.aggregate_id
           JOIN lti_resource_links l ON l.assignment_id = t.assignment_id
           LEFT JOIN deliveries d ON d.consumer = '{AGS}' AND d.event_id = o.id
          WHERE o.topic = ANY($1) AND (o.dispatched_at IS NULL OR d.event_id IS NOT NULL)"
    )
}

/// Grade deliveries, newest first: `failed` (failed or parked), `pending`, `delivered`, or all.
pub async fn deliveries(
    db: impl PgExecutor<'_>,
    status: Option<DeliveryFilter>,
    registration: Option<Uuid>,
    limit: i64,
) -> Result<Vec<Delivery>, sqlx::Error> {
    let filter = DeliveryFilter::sql(status);
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{} AND {filter} AND ($2::uuid IS NULL OR l.registration_id = $2)
          ORDER BY o.id DESC LIMIT $3",
        delivery_select()
    )))
    .bind(&TOPICS[..])
    .bind(registration)
    .bind(limit)
    .fetch_all(db)
    .await
}

pub async fn delivery(db: impl PgExecutor<'_>, id: i64) -> Result<Option<Delivery>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{} AND o.id = $2",
        delivery_select()
    )))
    .bind(&TOPICS[..])
    .bind(id)
    .fetch_optional(db)
    .await
}
