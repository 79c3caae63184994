//! What every handler shares: the pools, the caches, the clock, the keys, the clients (of LMS
//! platforms, of the mail server) and the settings quizd was started with. A low module: domain modules import it, it imports none of their
//! handlers. `main` builds one [`Settings`] from the command line and the environment and
//! hands it to [`AppState::build`]; tests build theirs the same way.

use metrics_exporter_prometheus::PrometheusHandle;
use sqlx::PgPool;

use crate::analytics::ReportCache;
use crate::analytics::replica::Replica;
use crate::attempts::AttemptCache;
use crate::auth::ratelimit::{LoginLimiter, SIGNUP_BURST};
use crate::auth::tokens::TokenKeys;
use crate::clock::Clock;
use crate::db::quick::QuickPool;
use crate::mail::Mailer;
use crate::net::TrustedProxies;
use crate::pagination::Cursors;
use crate::quizzes::{DEFAULT_CAPACITY_BYTES, VersionCache};
use crate::{auth, lti, ops, telemetry};

/// How quizd was configured: every knob of `quizd serve` that the running service reads.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Origins whose pages may call the API from a browser (CORS); none by default.
    pub cors_origins: Vec<String>,
    /// Origins that may show the web front-end in a frame (the LMSs that launch quizd).
    pub frame_ancestors: Vec<String>,
    /// Sign-ups one client address may make at once; `0` turns the limit off.
    pub signup_burst: u32,
    /// Memory for cached quiz versions, in bytes.
    pub version_cache_bytes: u64,
    /// Who may read `/metrics`, and on which listener; closed by default.
    pub metrics_access: ops::MetricsAccess,
    /// Peers whose forwarded headers are believed; none by default.
    pub trusted_proxies: TrustedProxies,
    /// quizd's public origin (mail links, LTI URLs) and front-end for LTI; unset by default
    /// (then mail links are not sent, and LTI URLs come from each request).
    pub lti: lti::Settings,
    /// The SMTP server verification links and invitations go through (`smtp://…`); unset by
    /// default: they go to the log.
    pub smtp_url: Option<String>,
    /// The sender of quizd's mail.
    pub mail_from: String,
    /// The Learning Record Store that xAPI statements go to; unset by default (none are sent).
    pub xapi: Option<crate::events::xapi::Settings>,
    /// The hosts webhook URLs may name (`--webhook-host`); none by default (no subscription).
    pub webhook_hosts: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            cors_origins: Vec::new(),
            frame_ancestors: Vec::new(),
            signup_burst: SIGNUP_BURST,
            version_cache_bytes: DEFAULT_CAPACITY_BYTES,
            metrics_access: ops::MetricsAccess::default(),
            trusted_proxies: TrustedProxies::default(),
            lti: lti::Settings::default(),
            smtp_url: None,
            mail_from: "quizd <quizd@localhost>".to_string(),
            xapi: None,
            webhook_hosts: Vec::new(),
        }
    }
}

pub struct AppState {
    pub pool: PgPool,
    /// Connections for the hot paths (resume, answer), handed back without a round trip.
    pub quick: QuickPool,
    pub attempts: AttemptCache,
    pub quizzes: VersionCache,
    pub metrics: PrometheusHandle,
    pub tokens: TokenKeys,
    /// Signs and reads list cursors (a key derived from the signing secret).
    pub cursors: Cursors,
    pub login_limiter: LoginLimiter,
    /// The accounts known to be live (not erased), while erasures are heard.
    pub accounts: auth::erasures::LiveAccounts,
    /// The server's clock: deadlines and open/close times are judged by it.
    pub clock: Clock,
    /// A read-only replica for analytics, used while it is fresh enough
    /// (`analytics::replica`); without one, analytics read `pool`.
    pub analytics_replica: Option<Replica>,
    /// A direct connection to the primary when `pool` goes through a connection pooler in
    /// transaction pooling: the quiz change listener's LISTEN needs a session of its own.
    pub direct: Option<PgPool>,
    pub reports: ReportCache,
    /// Origins whose pages may call the API from a browser (CORS); none by default.
    pub cors_origins: Vec<String>,
    /// The `frame-ancestors` source list of the front-end's policy (`'none'` by default).
    pub frame_ancestors: String,
    /// Who may read `/metrics`, and on which listener; closed by default.
    pub metrics_access: ops::MetricsAccess,
    /// Peers whose forwarded headers are believed (client address, origin); none by default.
    pub trusted_proxies: TrustedProxies,
    /// quizd's public origin (mail links, LTI URLs) and front-end for LTI; unset by default
    /// (then mail links are not sent, and LTI URLs come from each request).
    pub lti: lti::Settings,
    /// How quizd calls LMS platforms: the HTTP client and the service-token cache.
    pub platforms: lti::PlatformClient,
    /// Where verification links and invitations go: SMTP, or the log (the default).
    pub mailer: Mailer,
    /// The Learning Record Store that xAPI statements go to; none by default.
    pub xapi: Option<crate::events::xapi::Settings>,
    /// The hosts webhook URLs may name; none by default.
    pub webhook_hosts: Vec<String>,
    /// Live sessions' fan-out to this instance's event streams.
    pub live: crate::live::hub::Hubs,
}

impl AppState {
    /// quizd's public origin (`--public-url`), if one is configured: the links in mail are
    /// made from it, never from a request.
    pub fn public_url(&self) -> Option<&str> {
        self.lti.public_url.as_deref()
    }

    /// The state with default settings; analytics read `pool`.
    pub fn new(pool: PgPool, signing_secret: &[u8]) -> Self {
        Self::with_settings(
            pool,
            None,
            signing_secret,
            Mailer::log_only(),
            Settings::default(),
        )
    }

    fn with_settings(
        pool: PgPool,
        analytics_replica: Option<PgPool>,
        signing_secret: &[u8],
        mailer: Mailer,
        settings: Settings,
    ) -> Self {
        let quick = QuickPool::new(
            (*pool.connect_options()).clone(),
            pool.options().get_max_connections(),
            pool.options().get_acquire_timeout(),
        );
        let attempts = AttemptCache::default();
        let quizzes = VersionCache::default();
        quizzes.set_capacity(settings.version_cache_bytes);
        let forget = attempts.clone();
        quizzes.on_evict(move |versions| forget.forget_versions(versions));
        Self {
            pool,
            quick,
            attempts,
            quizzes,
            metrics: telemetry::prometheus(),
            tokens: TokenKeys::new(signing_secret),
            cursors: Cursors::new(signing_secret),
            login_limiter: LoginLimiter::new(signing_secret, settings.signup_burst),
            accounts: Default::default(),
            clock: Clock::System,
            analytics_replica: analytics_replica.map(Replica::new),
            direct: None,
            reports: ReportCache::default(),
            cors_origins: settings.cors_origins,
            frame_ancestors: crate::frontend::frame_ancestors(&settings.frame_ancestors),
            metrics_access: settings.metrics_access,
            trusted_proxies: settings.trusted_proxies,
            lti: settings.lti,
            platforms: lti::PlatformClient::new(),
            mailer,
            xapi: settings.xapi,
            webhook_hosts: settings.webhook_hosts,
            live: Default::default(),
        }
    }

    /// The same state with `direct` (`db::Database::direct`) for what needs a session.
    pub fn with_direct(self, direct: Option<PgPool>) -> Self {
        Self { direct, ..self }
    }

    /// The pool to open a session on (LISTEN): the direct one, else the main one.
    pub fn session_pool(&self) -> &PgPool {
        self.direct.as_ref().unwrap_or(&self.pool)
    }

    /// The state quizd serves with: the configured signing secret (at least 32 bytes), or else
    /// the one quizd generated and keeps in its database; analytics on the replica
    /// `analytics_pool` when one is configured (while it is fresh enough).
    pub async fn build(
        pool: PgPool,
        analytics_pool: Option<PgPool>,
        configured_secret: Option<&str>,
        settings: Settings,
    ) -> anyhow::Result<Self> {
        let secret = match configured_secret {
            Some(s) if s.len() >= 32 => s.as_bytes().to_vec(),
            Some(_) => anyhow::bail!("QUIZD_JWT_SECRET must be at least 32 characters"),
            None => auth::store::signing_secret(&pool).await?,
        };
        let mailer = match &settings.smtp_url {
            Some(url) => Mailer::smtp(url, &settings.mail_from)?,
            None => Mailer::log_only(),
        };
        Ok(Self::with_settings(
            pool,
            analytics_pool,
            &secret,
            mailer,
            settings,
        ))
    }
}
