//! LTI 1.3: LMS platforms (Moodle, Canvas, Blackboard, D2L) launch learners and instructors
//! into quizd, place quizzes with Deep Linking 2.0, receive grades through Assignment and
//! Grade Services 2.0, and give rosters through Names and Role Provisioning Services 2.0.
//!
//! - `keys`: quizd's own RSA key pairs, the JWKS, rotation.
//! - `registrations`: the platforms quizd trusts and their keys (admin API, CLI).
//! - `claims`: pure validation of an id_token's claims (LTI 1.3 Core, Security Framework).
//! - `login`: OIDC third-party initiated login, the redirect to the platform.
//! - `launch`: the id_token the platform posts back, verified and validated.
//! - `provision`: what a valid launch makes exist (person, course, enrollment, assignment).
//! - `exchange`: the launch's one-time code traded for quizd tokens in the same browser.
//! - `cookies`, `params`: the browser cookies and secrets of that flow; its parameters.
//! - `error_page`: a launch refused inside the platform's frame, as a page for the learner.
//! - `store`: the SQL of all of these.
//! - `deep_linking`: the instructor's choice, signed back as an LtiDeepLinkingResponse.
//! - `ags`: grade passback from the outbox, with retries; the client-credentials grant.
//! - `nrps`: the roster from the platform.

pub mod ags;
pub mod claims;
pub mod cli;
pub mod cookies;
pub mod deep_linking;
pub mod error_page;
pub mod exchange;
pub mod keys;
pub mod launch;
pub mod login;
pub mod nrps;
pub mod params;
pub mod provision;
pub mod registrations;
pub mod routes;
pub mod services;
pub mod storage;
pub mod store;

use std::time::Duration;

use actix_web::HttpRequest;

use crate::courses::models::CourseRole;
use crate::state::AppState;

/// Claim names of LTI 1.3 Core and its services.
pub mod claim {
    pub const MESSAGE_TYPE: &str = "https://purl.imsglobal.org/spec/lti/claim/message_type";
    pub const VERSION: &str = "https://purl.imsglobal.org/spec/lti/claim/version";
    pub const DEPLOYMENT_ID: &str = "https://purl.imsglobal.org/spec/lti/claim/deployment_id";
    pub const TARGET_LINK_URI: &str = "https://purl.imsglobal.org/spec/lti/claim/target_link_uri";
    pub const RESOURCE_LINK: &str = "https://purl.imsglobal.org/spec/lti/claim/resource_link";
    pub const ROLES: &str = "https://purl.imsglobal.org/spec/lti/claim/roles";
    pub const CONTEXT: &str = "https://purl.imsglobal.org/spec/lti/claim/context";
    pub const CUSTOM: &str = "https://purl.imsglobal.org/spec/lti/claim/custom";
    pub const LAUNCH_PRESENTATION: &str =
        "https://purl.imsglobal.org/spec/lti/claim/launch_presentation";
    pub const AGS_ENDPOINT: &str = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint";
    pub const NRPS: &str = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice";
    pub const DL_SETTINGS: &str =
        "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings";
    pub const DL_CONTENT_ITEMS: &str = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items";
    pub const DL_DATA: &str = "https://purl.imsglobal.org/spec/lti-dl/claim/data";
    pub const DL_MSG: &str = "https://purl.imsglobal.org/spec/lti-dl/claim/msg";
}

/// OAuth 2 scopes of the services quizd uses.
pub mod scope {
    pub const SCORE: &str = "https://purl.imsglobal.org/spec/lti-ags/scope/score";
    pub const LINEITEM: &str = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem";
    pub const LINEITEM_READONLY: &str =
        "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly";
    pub const NRPS: &str =
        "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly";
}

pub const LTI_VERSION: &str = "1.3.0";
pub const RESOURCE_LINK_REQUEST: &str = "LtiResourceLinkRequest";
pub const DEEP_LINKING_REQUEST: &str = "LtiDeepLinkingRequest";
pub const DEEP_LINKING_RESPONSE: &str = "LtiDeepLinkingResponse";

/// Settings of the binary (`quizd serve`), kept on [`AppState`]; the tests leave them unset.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// quizd's public origin (`https://quiz.example.org`): the launch URL, redirect URI and
    /// Deep Linking URLs are made from it. Unset: from the request (its Host, or what a
    /// trusted proxy forwards).
    pub public_url: Option<String>,
    /// Where a launch sends the browser: `<frontend_url>#/lti/<code>`. Unset: `/`.
    pub frontend_url: Option<String>,
}

/// quizd's origin as the platform reaches it, without a trailing slash. Made from the
/// request only as far as [`crate::net::TrustedProxies`] believes it: a client cannot have
/// quizd name another host in the redirect URI it sends to the platform.
pub fn public_base(state: &AppState, req: &HttpRequest) -> String {
    if let Some(url) = &state.lti.public_url {
        return url.trim_end_matches('/').to_string();
    }
    let (scheme, host) = state.trusted_proxies.origin(req);
    format!("{scheme}://{host}")
}

/// The launch URL (also the OIDC redirect URI and the Deep Linking content item URL).
pub fn launch_url(state: &AppState, req: &HttpRequest) -> String {
    format!("{}/v1/lti/launch", public_base(state, req))
}

pub fn frontend_url(state: &AppState) -> &str {
    state.lti.frontend_url.as_deref().unwrap_or("/")
}

/// Text or an attribute value inside the HTML pages of the LTI flow, escaped.
pub(crate) fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&#39;")
}

/// How quizd calls platforms (JWKS, token endpoints, AGS, NRPS): one HTTP client and the cache
/// of service access tokens. Built once with the [`AppState`] and kept there (the launch takes
/// it from the state, the grade worker from `Background`); clones share the client's
/// connections and the cache.
#[derive(Clone)]
pub struct PlatformClient {
    http: reqwest::Client,
    tokens: services::TokenCache,
}

impl PlatformClient {
    /// Short timeouts, no redirects, HTTPS with the web's roots; an empty token cache.
    pub fn new() -> Self {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(15))
            .redirect(reqwest::redirect::Policy::none())
            // Platform calls are few; unpooled connections never outlive the runtime (an
            // actix worker's, a test's) that opened them.
            .pool_max_idle_per_host(0)
            .user_agent(concat!("quizd/", env!("CARGO_PKG_VERSION"), " (LTI 1.3)"))
            .build()
            .expect("the HTTP client builds");
        Self {
            http,
            tokens: services::TokenCache::default(),
        }
    }

    /// The HTTP client.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The service access tokens, until shortly before they expire.
    pub fn tokens(&self) -> &services::TokenCache {
        &self.tokens
    }
}

impl Default for PlatformClient {
    fn default() -> Self {
        Self::new()
    }
}

/// The largest body quizd reads from a platform (JWKS, token, roster page).
pub const MAX_PLATFORM_BODY: usize = 4 * 1024 * 1024;

/// Reads a platform's response body, refusing one larger than [`MAX_PLATFORM_BODY`].
pub async fn read_body(mut res: reqwest::Response) -> anyhow::Result<Vec<u8>> {
    if res
        .content_length()
        .is_some_and(|n| n > MAX_PLATFORM_BODY as u64)
    {
        anyhow::bail!("the response is larger than {MAX_PLATFORM_BODY} bytes");
    }
    let mut body = Vec::new();
    while let Some(chunk) = res.chunk().await? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_PLATFORM_BODY {
            anyhow::bail!("the response is larger than {MAX_PLATFORM_BODY} bytes");
        }
    }
    Ok(body)
}

const MEMBERSHIP: &str = "http://purl.imsglobal.org/vocab/lis/v2/membership";

/// The course role LTI roles give, or `None` when none of them is a role in a course.
/// Context roles of teaching (Instructor and its sub-roles such as TeachingAssistant,
/// Administrator, ContentDeveloper) make an instructor; Learner (and its sub-roles), a
/// learner. Institution and system roles say nothing about this course and grant nothing
/// here: an LMS administrator is not a quizd administrator. The short names of LTI 1.1
/// (`Instructor`, `Learner`) are accepted as context roles, as LTI 1.3 Core allows.
pub fn course_role(roles: &[String]) -> Option<CourseRole> {
    let mut learner = false;
    for role in roles {
        let role = role.trim();
        let context_role = match role.strip_prefix(MEMBERSHIP) {
            // `…/membership#Instructor` or a sub-role `…/membership/Instructor#TeachingAssistant`
            Some(rest) => rest
                .strip_prefix('#')
                .or_else(|| rest.strip_prefix('/').and_then(|r| r.split('#').next())),
            None if !role.contains(':') => Some(role),
            None => None,
        };
        match context_role {
            Some("Instructor" | "Administrator" | "ContentDeveloper" | "TeachingAssistant") => {
                return Some(CourseRole::Instructor);
            }
            Some("Learner") => learner = true,
            _ => {}
        }
    }
    learner.then_some(CourseRole::Learner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles(r: &[&str]) -> Vec<String> {
        r.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_pages_escape_what_they_embed() {
        assert_eq!(html_escape("a\"<b>&'"), "a&quot;&lt;b&gt;&amp;&#39;");
    }

    #[test]
    fn teaching_context_roles_make_an_instructor() {
        for r in [
            "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
            "http://purl.imsglobal.org/vocab/lis/v2/membership#Administrator",
            "http://purl.imsglobal.org/vocab/lis/v2/membership#ContentDeveloper",
            "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant",
            "Instructor",
        ] {
            assert_eq!(
                course_role(&roles(&[r])),
                Some(CourseRole::Instructor),
                "{r}"
            );
        }
        // Teaching wins over learning when a person has both.
        assert_eq!(
            course_role(&roles(&[
                "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner",
                "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
            ])),
            Some(CourseRole::Instructor)
        );
    }

    #[test]
    fn learner_roles_make_a_learner() {
        for r in [
            "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner",
            "http://purl.imsglobal.org/vocab/lis/v2/membership/Learner#Learner",
            "Learner",
        ] {
            assert_eq!(course_role(&roles(&[r])), Some(CourseRole::Learner), "{r}");
        }
    }

    #[test]
    fn institution_and_system_roles_grant_nothing_in_a_course() {
        assert_eq!(
            course_role(&roles(&[
                "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator",
                "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator",
                "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Faculty",
                "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor",
            ])),
            None
        );
        assert_eq!(course_role(&[]), None);
        // A look-alike URI is not a membership role.
        assert_eq!(
            course_role(&roles(&[
                "http://evil.example/vocab/lis/v2/membership#Instructor"
            ])),
            None
        );
        assert_eq!(
            course_role(&roles(&[
                "http://purl.imsglobal.org/vocab/lis/v2/membershipX#Instructor"
            ])),
            None
        );
    }
}
