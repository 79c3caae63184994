//! The claims of a launch's id_token, checked as LTI 1.3 Core and the 1EdTech Security
//! Framework require, once its signature has been verified. Pure: no I/O, no clock of its own.

use serde_json::{Map, Value};

use super::{DEEP_LINKING_REQUEST, LTI_VERSION, RESOURCE_LINK_REQUEST, claim};
use crate::error::{ApiError, Code};

/// Clock skew tolerated on `exp` and `iat`, in seconds.
pub const LEEWAY_SECS: i64 = 60;
/// An id_token issued longer ago than this is refused even if it has not expired.
pub const MAX_AGE_SECS: i64 = 60 * 60;
/// Longest identifier (sub, deployment, context and resource link ids) accepted; LTI says 255.
pub const MAX_ID_LEN: usize = 255;

/// What the launch must match: the registration, and the login that started it.
#[derive(Debug, Clone)]
pub struct Expected<'a> {
    pub issuer: &'a str,
    pub client_id: &'a str,
    pub deployment_ids: &'a [String],
    /// The nonce quizd sent with this login.
    pub nonce: &'a str,
    /// The `lti_deployment_id` of the login initiation, if it had one.
    pub login_deployment_id: Option<&'a str>,
    /// The `target_link_uri` of the login initiation.
    pub target_link_uri: &'a str,
    /// Now, in seconds since the epoch.
    pub now: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageType {
    ResourceLink,
    DeepLinking,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    pub id: String,
    pub title: Option<String>,
    pub label: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceLink {
    pub id: String,
    pub title: Option<String>,
}

/// Assignment and Grade Services as the launch grants them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ags {
    pub scopes: Vec<String>,
    pub lineitem: Option<String>,
    pub lineitems: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeepLinkingSettings {
    pub return_url: String,
    pub accept_multiple: bool,
    pub accept_lineitem: bool,
    pub data: Option<String>,
}

/// What a launch asks for, with what each kind of message must carry.
#[derive(Debug, Clone)]
pub enum Message {
    /// A quiz placed in a course (`LtiResourceLinkRequest`).
    ResourceLink {
        context: Context,
        link: ResourceLink,
    },
    /// An instructor placing quizzes (`LtiDeepLinkingRequest`), in a course when the platform
    /// says which.
    DeepLinking {
        context: Option<Context>,
        settings: DeepLinkingSettings,
    },
}

impl Message {
    pub fn kind(&self) -> MessageType {
        match self {
            Message::ResourceLink { .. } => MessageType::ResourceLink,
            Message::DeepLinking { .. } => MessageType::DeepLinking,
        }
    }

    /// The course the launch comes from, if any.
    pub fn context(&self) -> Option<&Context> {
        match self {
            Message::ResourceLink { context, .. } => Some(context),
            Message::DeepLinking { context, .. } => context.as_ref(),
        }
    }
}

/// A launch whose claims passed every check.
#[derive(Debug, Clone)]
pub struct Launch {
    pub message: Message,
    pub subject: String,
    pub deployment_id: String,
    pub nonce: String,
    pub expires_at: i64,
    pub roles: Vec<String>,
    pub name: Option<String>,
    pub locale: Option<String>,
    pub target_link_uri: Option<String>,
    pub custom: Map<String, Value>,
    pub ags: Option<Ags>,
    pub memberships_url: Option<String>,
}

fn missing(name: &str) -> ApiError {
    ApiError::new(
        Code::LtiClaimMissing,
        format!("The id_token lacks the required claim `{name}`."),
    )
}

fn invalid(name: &str, why: &str) -> ApiError {
    ApiError::new(
        Code::LtiClaimInvalid,
        format!("The id_token's claim `{name}` is invalid: {why}."),
    )
}

/// A string without NUL or other control characters, 1 to `max` characters.
fn checked_str<'a>(name: &str, v: &'a Value, max: usize) -> Result<&'a str, ApiError> {
    let s = v
        .as_str()
        .ok_or_else(|| invalid(name, "it must be a string"))?;
    if s.is_empty() {
        return Err(invalid(name, "it is empty"));
    }
    if s.chars().count() > max {
        return Err(invalid(
            name,
            &format!("it is longer than {max} characters"),
        ));
    }
    if s.chars().any(char::is_control) {
        return Err(invalid(name, "it contains control characters"));
    }
    Ok(s)
}

fn required_str<'a>(claims: &'a Value, name: &str, max: usize) -> Result<&'a str, ApiError> {
    match claims.get(name) {
        None | Some(Value::Null) => Err(missing(name)),
        Some(v) => checked_str(name, v, max),
    }
}

/// An optional display text: trimmed, control characters dropped, cut to `max` characters.
fn display_text(v: Option<&Value>, max: usize) -> Option<String> {
    let s: String = v?
        .as_str()?
        .chars()
        .filter(|c| !c.is_control())
        .take(max)
        .collect();
    let s = s.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// An optional URL claim member: http or https only.
fn url(name: &str, v: Option<&Value>) -> Result<Option<String>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let s = checked_str(name, v, 2048)?;
            let parsed = reqwest::Url::parse(s).map_err(|_| invalid(name, "not a URL"))?;
            if !matches!(parsed.scheme(), "https" | "http") {
                return Err(invalid(name, "not an http(s) URL"));
            }
            Ok(Some(s.to_string()))
        }
    }
}

fn numeric_date(claims: &Value, name: &str) -> Result<i64, ApiError> {
    match claims.get(name) {
        None | Some(Value::Null) => Err(missing(name)),
        Some(v) => v
            .as_i64()
            .or_else(|| v.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
            .ok_or_else(|| invalid(name, "it must be a number of seconds")),
    }
}

/// Checks the claims of a signature-verified id_token against what this launch must be.
pub fn validate(claims: &Value, expected: &Expected<'_>) -> Result<Launch, ApiError> {
    if !claims.is_object() {
        return Err(invalid("id_token", "its payload is not a JSON object"));
    }
    // Who issued it and for whom: the registered issuer, quizd's client id.
    let iss = required_str(claims, "iss", 2048)?;
    if iss != expected.issuer {
        return Err(ApiError::new(
            Code::LtiWrongIssuer,
            "The id_token was issued by another platform than the one this login was started with.",
        ));
    }
    let audiences: Vec<&str> = match claims.get("aud") {
        None | Some(Value::Null) => return Err(missing("aud")),
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        Some(_) => return Err(invalid("aud", "it must be a string or an array of strings")),
    };
    if !audiences.contains(&expected.client_id) {
        return Err(ApiError::new(
            Code::LtiWrongAudience,
            "The id_token is not meant for quizd: its audience lacks quizd's client id.",
        ));
    }
    match claims.get("azp").and_then(Value::as_str) {
        Some(azp) if azp != expected.client_id => {
            return Err(ApiError::new(
                Code::LtiWrongAudience,
                "The id_token's authorized party (azp) is not quizd's client id.",
            ));
        }
        None if audiences.len() > 1 => {
            return Err(ApiError::new(
                Code::LtiWrongAudience,
                "The id_token has several audiences and no authorized party (azp).",
            ));
        }
        _ => {}
    }
    // When: not expired, not issued in the future, not ancient.
    let exp = numeric_date(claims, "exp")?;
    let iat = numeric_date(claims, "iat")?;
    if expected.now > exp + LEEWAY_SECS {
        return Err(ApiError::new(
            Code::LtiTokenExpired,
            "The id_token has expired.",
        ));
    }
    if iat > expected.now + LEEWAY_SECS {
        return Err(ApiError::new(
            Code::LtiTokenNotYetValid,
            "The id_token was issued in the future; check the platform's clock.",
        ));
    }
    if expected.now - iat > MAX_AGE_SECS {
        return Err(ApiError::new(
            Code::LtiTokenExpired,
            "The id_token was issued too long ago.",
        ));
    }
    // This login's nonce, so the token cannot be replayed into another login.
    let nonce = required_str(claims, "nonce", 255)?;
    if nonce != expected.nonce {
        return Err(ApiError::new(
            Code::LtiNonceMismatch,
            "The id_token's nonce is not the one sent with this login.",
        ));
    }
    // The deployment must be registered, and the one the login named.
    let deployment_id = required_str(claims, claim::DEPLOYMENT_ID, MAX_ID_LEN)?;
    if !expected.deployment_ids.iter().any(|d| d == deployment_id) {
        return Err(ApiError::new(
            Code::LtiUnknownDeployment,
            "The id_token's deployment id is not registered with quizd for this platform.",
        ));
    }
    if expected
        .login_deployment_id
        .is_some_and(|d| d != deployment_id)
    {
        return Err(ApiError::new(
            Code::LtiUnknownDeployment,
            "The id_token's deployment id is not the one the login was started with.",
        ));
    }
    let message_type = match required_str(claims, claim::MESSAGE_TYPE, 100)? {
        RESOURCE_LINK_REQUEST => MessageType::ResourceLink,
        DEEP_LINKING_REQUEST => MessageType::DeepLinking,
        other => {
            return Err(ApiError::new(
                Code::LtiWrongMessageType,
                format!(
                    "quizd accepts LtiResourceLinkRequest and LtiDeepLinkingRequest, not `{other}`."
                ),
            ));
        }
    };
    let version = required_str(claims, claim::VERSION, 20)?;
    if version != LTI_VERSION {
        return Err(ApiError::new(
            Code::LtiWrongVersion,
            format!("quizd speaks LTI {LTI_VERSION}, not `{version}`."),
        ));
    }
    // quizd needs to know who is launching: anonymous launches are refused.
    let subject = required_str(claims, "sub", MAX_ID_LEN)?.to_string();
    let roles = match claims.get(claim::ROLES) {
        None | Some(Value::Null) => return Err(missing(claim::ROLES)),
        Some(Value::Array(items)) => items
            .iter()
            .map(|r| checked_str(claim::ROLES, r, 1000).map(str::to_string))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(invalid(claim::ROLES, "it must be an array of role URIs")),
    };
    let target_link_uri = url(claim::TARGET_LINK_URI, claims.get(claim::TARGET_LINK_URI))?;
    match &target_link_uri {
        Some(t) if t != expected.target_link_uri => {
            return Err(ApiError::new(
                Code::LtiTargetLinkMismatch,
                "The id_token's target_link_uri is not the one the login was started with.",
            ));
        }
        None if message_type == MessageType::ResourceLink => {
            return Err(missing(claim::TARGET_LINK_URI));
        }
        _ => {}
    }
    let resource_link = match claims.get(claim::RESOURCE_LINK) {
        None | Some(Value::Null) => None,
        Some(Value::Object(link)) => Some(ResourceLink {
            id: match link.get("id") {
                None | Some(Value::Null) => return Err(missing("resource_link.id")),
                Some(v) => checked_str("resource_link.id", v, MAX_ID_LEN)?.to_string(),
            },
            title: display_text(link.get("title"), 200),
        }),
        Some(_) => return Err(invalid(claim::RESOURCE_LINK, "it must be an object")),
    };
    let context = match claims.get(claim::CONTEXT) {
        None | Some(Value::Null) => None,
        Some(Value::Object(c)) => Some(Context {
            id: match c.get("id") {
                None | Some(Value::Null) => return Err(missing("context.id")),
                Some(v) => checked_str("context.id", v, MAX_ID_LEN)?.to_string(),
            },
            title: display_text(c.get("title"), 200),
            label: display_text(c.get("label"), 64),
        }),
        Some(_) => return Err(invalid(claim::CONTEXT, "it must be an object")),
    };
    let custom = match claims.get(claim::CUSTOM) {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(invalid(claim::CUSTOM, "it must be an object")),
    };
    let ags = match claims.get(claim::AGS_ENDPOINT) {
        None | Some(Value::Null) => None,
        Some(Value::Object(a)) => Some(Ags {
            scopes: a
                .get("scope")
                .and_then(Value::as_array)
                .map(|s| {
                    s.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            lineitem: url("endpoint.lineitem", a.get("lineitem"))?,
            lineitems: url("endpoint.lineitems", a.get("lineitems"))?,
        }),
        Some(_) => return Err(invalid(claim::AGS_ENDPOINT, "it must be an object")),
    };
    let memberships_url = match claims.get(claim::NRPS) {
        None | Some(Value::Null) => None,
        Some(Value::Object(n)) => url(
            "namesroleservice.context_memberships_url",
            n.get("context_memberships_url"),
        )?,
        Some(_) => return Err(invalid(claim::NRPS, "it must be an object")),
    };
    let name = display_text(claims.get("name"), 200).or_else(|| {
        let given = display_text(claims.get("given_name"), 100);
        let family = display_text(claims.get("family_name"), 100);
        match (given, family) {
            (Some(g), Some(f)) => Some(format!("{g} {f}")),
            (g, f) => g.or(f),
        }
    });
    let locale = claims
        .get(claim::LAUNCH_PRESENTATION)
        .and_then(|p| display_text(p.get("locale"), 35))
        .or_else(|| display_text(claims.get("locale"), 35));
    let message = match message_type {
        MessageType::ResourceLink => Message::ResourceLink {
            link: resource_link.ok_or_else(|| missing(claim::RESOURCE_LINK))?,
            // A quiz placed in an LMS lives in a course: quizd needs the context.
            context: context.ok_or_else(|| missing(claim::CONTEXT))?,
        },
        MessageType::DeepLinking => Message::DeepLinking {
            context,
            settings: deep_linking_settings(claims.get(claim::DL_SETTINGS))?,
        },
    };
    Ok(Launch {
        message,
        subject,
        deployment_id: deployment_id.to_string(),
        nonce: nonce.to_string(),
        expires_at: exp,
        roles,
        name,
        locale,
        target_link_uri,
        custom,
        ags,
        memberships_url,
    })
}

/// The settings of a Deep Linking request (LTI Deep Linking 2.0 §4.4.1).
fn deep_linking_settings(settings: Option<&Value>) -> Result<DeepLinkingSettings, ApiError> {
    match settings {
        None | Some(Value::Null) => Err(missing(claim::DL_SETTINGS)),
        Some(Value::Object(s)) => {
            let return_url = url("deep_link_return_url", s.get("deep_link_return_url"))?
                .ok_or_else(|| missing("deep_linking_settings.deep_link_return_url"))?;
            let accepts_links = s
                .get("accept_types")
                .and_then(Value::as_array)
                .is_some_and(|t| t.iter().any(|t| t == "ltiResourceLink"));
            if !accepts_links {
                return Err(ApiError::new(
                    Code::LtiDeepLinkingUnsupported,
                    "The platform does not accept ltiResourceLink items in this Deep Linking request.",
                ));
            }
            Ok(DeepLinkingSettings {
                return_url,
                accept_multiple: s
                    .get("accept_multiple")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                accept_lineitem: s
                    .get("accept_lineitem")
                    .and_then(Value::as_bool)
                    .unwrap_or(true),
                data: match s.get("data") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(d)) => Some(d.clone()),
                    Some(other) => Some(other.to_string()),
                },
            })
        }
        Some(_) => Err(invalid(claim::DL_SETTINGS, "it must be an object")),
    }
}

/// The quiz a resource link places: the `quiz` custom parameter, else the `quiz` query
/// parameter of the target link URI.
pub fn quiz_slug(launch: &Launch) -> Option<String> {
    if let Some(slug) = launch.custom.get("quiz").and_then(Value::as_str) {
        return Some(slug.trim().to_string());
    }
    let target = reqwest::Url::parse(launch.target_link_uri.as_deref()?).ok()?;
    target
        .query_pairs()
        .find(|(k, _)| k == "quiz")
        .map(|(_, v)| v.trim().to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: i64 = 1_800_000_000;
    const TARGET: &str = "https://quizd.example/v1/lti/launch";

    fn deployments() -> Vec<String> {
        vec!["dep-1".into(), "dep-2".into()]
    }

    fn expected(deployments: &[String]) -> Expected<'_> {
        Expected {
            issuer: "https://lms.example",
            client_id: "quizd-client",
            deployment_ids: deployments,
            nonce: "n-123",
            login_deployment_id: None,
            target_link_uri: TARGET,
            now: NOW,
        }
    }

    fn good() -> Value {
        json!({
            "iss": "https://lms.example",
            "aud": "quizd-client",
            "azp": "quizd-client",
            "sub": "user-7",
            "exp": NOW + 300,
            "iat": NOW - 5,
            "nonce": "n-123",
            "name": "Mina Rahman",
            claim::DEPLOYMENT_ID: "dep-1",
            claim::MESSAGE_TYPE: "LtiResourceLinkRequest",
            claim::VERSION: "1.3.0",
            claim::TARGET_LINK_URI: TARGET,
            claim::ROLES: ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"],
            claim::RESOURCE_LINK: {"id": "rl-1", "title": "Week 1 quiz"},
            claim::CONTEXT: {"id": "ctx-1", "title": "Parallel Programming", "label": "CS-451"},
            claim::CUSTOM: {"quiz": "data-parallelism"},
            claim::AGS_ENDPOINT: {
                "scope": ["https://purl.imsglobal.org/spec/lti-ags/scope/score"],
                "lineitem": "https://lms.example/lineitems/1"
            },
        })
    }

    fn code(claims: &Value) -> &'static str {
        let d = deployments();
        validate(claims, &expected(&d)).unwrap_err().code.as_str()
    }

    fn without(name: &str) -> Value {
        let mut c = good();
        c.as_object_mut().unwrap().remove(name);
        c
    }

    fn with(name: &str, value: Value) -> Value {
        let mut c = good();
        c[name] = value;
        c
    }

    #[test]
    fn a_good_launch_passes_with_everything_read() {
        let d = deployments();
        let launch = validate(&good(), &expected(&d)).unwrap();
        assert_eq!(launch.message.kind(), MessageType::ResourceLink);
        assert_eq!(launch.subject, "user-7");
        assert_eq!(launch.deployment_id, "dep-1");
        assert_eq!(launch.name.as_deref(), Some("Mina Rahman"));
        assert_eq!(
            launch.message.context().unwrap().label.as_deref(),
            Some("CS-451")
        );
        let Message::ResourceLink { link, .. } = &launch.message else {
            panic!("a resource link launch: {launch:?}");
        };
        assert_eq!(link.id, "rl-1");
        assert_eq!(
            launch.ags.as_ref().unwrap().lineitem.as_deref(),
            Some("https://lms.example/lineitems/1")
        );
        assert_eq!(quiz_slug(&launch).as_deref(), Some("data-parallelism"));
    }

    #[test]
    fn every_required_claim_is_required() {
        for name in [
            "iss",
            "aud",
            "exp",
            "iat",
            "nonce",
            "sub",
            claim::DEPLOYMENT_ID,
            claim::MESSAGE_TYPE,
            claim::VERSION,
            claim::ROLES,
            claim::TARGET_LINK_URI,
            claim::RESOURCE_LINK,
            claim::CONTEXT,
        ] {
            let d = deployments();
            let err = validate(&without(name), &expected(&d)).unwrap_err();
            assert_eq!(err.code, "lti_claim_missing", "{name}");
            assert!(err.detail.contains(name), "{name}: {}", err.detail);
        }
    }

    #[test]
    fn wrong_values_are_refused_with_their_own_code() {
        assert_eq!(
            code(&with("iss", json!("https://evil.example"))),
            "lti_wrong_issuer"
        );
        assert_eq!(
            code(&with("aud", json!("someone-else"))),
            "lti_wrong_audience"
        );
        assert_eq!(
            code(&with("aud", json!(["someone-else"]))),
            "lti_wrong_audience"
        );
        assert_eq!(
            code(&with("azp", json!("someone-else"))),
            "lti_wrong_audience"
        );
        let mut two = without("azp");
        two["aud"] = json!(["quizd-client", "other"]);
        assert_eq!(code(&two), "lti_wrong_audience");
        assert_eq!(code(&with("exp", json!(NOW - 61))), "lti_token_expired");
        assert_eq!(
            code(&with("iat", json!(NOW + 120))),
            "lti_token_not_yet_valid"
        );
        assert_eq!(
            code(&with("iat", json!(NOW - MAX_AGE_SECS - 1))),
            "lti_token_expired"
        );
        assert_eq!(code(&with("exp", json!("soon"))), "lti_claim_invalid");
        assert_eq!(code(&with("nonce", json!("n-other"))), "lti_nonce_mismatch");
        assert_eq!(
            code(&with(claim::DEPLOYMENT_ID, json!("dep-9"))),
            "lti_unknown_deployment"
        );
        assert_eq!(
            code(&with(
                claim::MESSAGE_TYPE,
                json!("LtiSubmissionReviewRequest")
            )),
            "lti_wrong_message_type"
        );
        assert_eq!(
            code(&with(claim::VERSION, json!("1.1"))),
            "lti_wrong_version"
        );
        assert_eq!(
            code(&with(claim::ROLES, json!("Learner"))),
            "lti_claim_invalid"
        );
        assert_eq!(
            code(&with(
                claim::TARGET_LINK_URI,
                json!("https://elsewhere.example/")
            )),
            "lti_target_link_mismatch"
        );
        assert_eq!(
            code(&with(claim::RESOURCE_LINK, json!({"title": "no id"}))),
            "lti_claim_missing"
        );
        assert_eq!(
            code(&with(claim::RESOURCE_LINK, json!({"id": ""}))),
            "lti_claim_invalid"
        );
        assert_eq!(
            code(&with(claim::CONTEXT, json!({"id": "a\u{0}b"}))),
            "lti_claim_invalid"
        );
        assert_eq!(
            code(&with("sub", json!("x".repeat(256)))),
            "lti_claim_invalid"
        );
        assert_eq!(code(&json!([1, 2])), "lti_claim_invalid");
    }

    #[test]
    fn small_clock_skew_is_tolerated() {
        let d = deployments();
        let mut c = good();
        c["exp"] = json!(NOW - 30);
        c["iat"] = json!(NOW + 30);
        assert!(validate(&c, &expected(&d)).is_ok());
    }

    #[test]
    fn the_login_deployment_must_match() {
        let d = deployments();
        let mut e = expected(&d);
        e.login_deployment_id = Some("dep-2");
        assert_eq!(
            validate(&good(), &e).unwrap_err().code,
            "lti_unknown_deployment"
        );
        e.login_deployment_id = Some("dep-1");
        assert!(validate(&good(), &e).is_ok());
    }

    #[test]
    fn a_deep_linking_request_needs_its_settings_and_resource_links() {
        let d = deployments();
        let mut c = good();
        c[claim::MESSAGE_TYPE] = json!("LtiDeepLinkingRequest");
        let obj = c.as_object_mut().unwrap();
        obj.remove(claim::RESOURCE_LINK);
        assert_eq!(
            validate(&c, &expected(&d)).unwrap_err().code,
            "lti_claim_missing"
        );
        c[claim::DL_SETTINGS] = json!({
            "deep_link_return_url": "https://lms.example/dl/return",
            "accept_types": ["link"],
        });
        assert_eq!(
            validate(&c, &expected(&d)).unwrap_err().code,
            "lti_deep_linking_unsupported"
        );
        c[claim::DL_SETTINGS]["accept_types"] = json!(["ltiResourceLink"]);
        c[claim::DL_SETTINGS]["data"] = json!("opaque-42");
        let launch = validate(&c, &expected(&d)).unwrap();
        let Message::DeepLinking { settings: dl, .. } = launch.message else {
            panic!("a deep linking launch");
        };
        assert_eq!(dl.return_url, "https://lms.example/dl/return");
        assert_eq!(dl.data.as_deref(), Some("opaque-42"));
        assert!(dl.accept_lineitem);
    }

    #[test]
    fn the_quiz_comes_from_custom_or_the_target_link() {
        let d = deployments();
        let mut c = good();
        c.as_object_mut().unwrap().remove(claim::CUSTOM);
        let target = format!("{TARGET}?quiz=kinds-sampler");
        c[claim::TARGET_LINK_URI] = json!(target);
        let mut e = expected(&d);
        e.target_link_uri = &target;
        let launch = validate(&c, &e).unwrap();
        assert_eq!(quiz_slug(&launch).as_deref(), Some("kinds-sampler"));
    }
}
