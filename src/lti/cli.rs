//! `quizd lti …`: registrations, keys and grade deliveries from the command line, and the
//! LTI settings of `quizd serve`.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use sqlx::PgPool;
use uuid::Uuid;

use super::registrations::{self, RegistrationCreate};
use super::{Settings, ags, keys, store};

/// The LTI settings of `quizd serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeSettings {
    /// quizd's public origin as people and LMSs reach it (e.g. `https://quiz.example.org`):
    /// the links in mail (verification, invitations) and the LTI launch, redirect and Deep
    /// Linking URLs are made from it. Without it: on a loopback address, the address quizd
    /// listens on; elsewhere, mail with a link is not sent (the link is logged), and the LTI
    /// URLs come from each request (its Host, or the forwarded host and scheme from a
    /// --trusted-proxy). Mail links never come from a request.
    #[arg(long, env = "QUIZD_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Where an LTI launch sends the browser, with the one-time code: `<url>#/lti/<code>`.
    #[arg(long, env = "QUIZD_LTI_FRONTEND_URL")]
    pub lti_frontend_url: Option<String>,
}

impl ServeSettings {
    pub fn settings(&self) -> Settings {
        Settings {
            public_url: self.public_url.clone(),
            frontend_url: self.lti_frontend_url.clone(),
        }
    }
}

// Parsed once from the command line: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum LtiCommand {
    /// Register a platform (an LMS) that may launch quizd.
    Register {
        /// The platform's issuer (`iss`), e.g. https://moodle.example.edu.
        #[arg(long)]
        issuer: String,
        /// The client id the platform gave quizd.
        #[arg(long)]
        client_id: String,
        /// A deployment id quizd accepts (repeat for several).
        #[arg(long = "deployment-id", required = true)]
        deployment_ids: Vec<String>,
        /// The platform's OIDC authorization endpoint.
        #[arg(long)]
        auth_endpoint: String,
        /// The platform's OAuth 2 token endpoint.
        #[arg(long)]
        token_endpoint: String,
        /// The audience of client assertions, when it is not the token endpoint.
        #[arg(long)]
        token_audience: Option<String>,
        /// The platform's JWKS URL.
        #[arg(
            long,
            conflicts_with = "jwks_file",
            required_unless_present = "jwks_file"
        )]
        jwks_url: Option<String>,
        /// A file with the platform's keys as a JSON Web Key Set.
        #[arg(long)]
        jwks_file: Option<PathBuf>,
        /// A name for people; defaults to the issuer.
        #[arg(long)]
        title: Option<String>,
        /// A host the platform's services (grades, rosters) are on besides its endpoints'
        /// hosts, e.g. `school.instructure.com` (repeat for several).
        #[arg(long = "service-host")]
        service_hosts: Vec<String>,
    },
    /// List the registered platforms.
    List,
    /// Remove a registration.
    Remove { id: Uuid },
    /// Make a new signing key; the previous one stays published for seven days.
    RotateKey,
    /// List quizd's published keys.
    Keys,
    /// List grade deliveries (failed ones with --failed).
    Deliveries {
        #[arg(long)]
        failed: bool,
    },
    /// Try an undelivered grade again now.
    Retry { id: i64 },
}

pub async fn run(pool: &PgPool, command: LtiCommand) -> anyhow::Result<()> {
    match command {
        LtiCommand::Register {
            issuer,
            client_id,
            deployment_ids,
            auth_endpoint,
            token_endpoint,
            token_audience,
            jwks_url,
            jwks_file,
            title,
            service_hosts,
        } => {
            let jwks = match jwks_file {
                Some(path) => Some(
                    serde_json::from_str(
                        &std::fs::read_to_string(&path)
                            .with_context(|| format!("cannot read {}", path.display()))?,
                    )
                    .with_context(|| format!("{} is not JSON", path.display()))?,
                ),
                None => None,
            };
            let create = RegistrationCreate {
                title,
                issuer,
                client_id,
                deployment_ids,
                auth_endpoint,
                token_endpoint,
                token_audience,
                jwks_url,
                jwks,
                service_hosts: Some(service_hosts),
            };
            registrations::check_create(&create).map_err(|e| anyhow::anyhow!(e.detail))?;
            let row = store::insert_registration(pool, &create)
                .await
                .map_err(|e| match &e {
                    sqlx::Error::Database(d) if d.is_unique_violation() => anyhow::anyhow!(
                        "a platform with this issuer and client id is registered already"
                    ),
                    _ => anyhow::Error::from(e),
                })?;
            println!("registered {} with id {}", row.title, row.id);
            println!("enter these in the platform (with quizd's public origin in front):");
            let tool = registrations::tool_configuration("");
            println!("  login (OIDC initiation) URL: {}", tool.login_url);
            println!("  launch / redirect URL:       {}", tool.launch_url);
            println!("  Deep Linking URL:            {}", tool.deep_linking_url);
            println!("  public keys (JWKS) URL:      {}", tool.jwks_url);
            Ok(())
        }
        LtiCommand::List => {
            for r in store::registrations(pool).await? {
                println!(
                    "{}  {}  issuer={} client_id={} deployments={}",
                    r.id,
                    r.title,
                    r.issuer,
                    r.client_id,
                    r.deployment_ids.join(",")
                );
            }
            Ok(())
        }
        LtiCommand::Remove { id } => {
            anyhow::ensure!(
                store::delete_registration(pool, id).await?,
                "there is no registration {id}"
            );
            println!("removed {id}");
            Ok(())
        }
        LtiCommand::RotateKey => {
            let kid = keys::rotate(pool).await?;
            println!(
                "the signing key is now {kid}; the previous one stays published for {} days",
                keys::RETIRED_KEY_PUBLISHED_DAYS
            );
            Ok(())
        }
        LtiCommand::Keys => {
            keys::active(pool).await?;
            for k in store::published_keys(pool).await? {
                match k.retired_at {
                    None => println!("{}  created {}  signing", k.kid, k.created_at),
                    Some(r) => println!("{}  created {}  retired {}", k.kid, k.created_at, r),
                }
            }
            Ok(())
        }
        LtiCommand::Deliveries { failed } => {
            let status = failed.then_some(crate::events::DeliveryFilter::Failed);
            for d in store::deliveries(pool, status, None, 1000).await? {
                println!(
                    "{}  {}  attempt={}  tries={}  {}",
                    d.id,
                    d.status,
                    d.attempt_id,
                    d.tries,
                    d.last_error.unwrap_or_default()
                );
            }
            Ok(())
        }
        LtiCommand::Retry { id } => match ags::retry(pool, id).await? {
            crate::events::Retry::Scheduled(_) => {
                println!("delivery {id} is due now; a running quizd sends it within seconds");
                Ok(())
            }
            crate::events::Retry::AlreadyDelivered => {
                anyhow::bail!("delivery {id} was delivered already")
            }
            crate::events::Retry::NotFound => anyhow::bail!("there is no grade delivery {id}"),
        },
    }
}
