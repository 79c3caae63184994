//! Webhooks: admins subscribe URLs to public topics, and quizd POSTs each event to each
//! subscription that wants it, signed as [Standard Webhooks](https://www.standardwebhooks.com/)
//! says. A subscription is the outbox consumer `webhook:<id>` (its `event_consumers` rows are
//! the outbox topics of its public ones), so dispatch, claim, backoff, park and retry are the
//! machinery every consumer shares (`crate::events`).
//!
//! - this file, pure: the public topics and their outbox topics, the body of an event (ids,
//!   points, scores, timestamps and the learner's id; never an answer or the key), the
//!   secrets and the signatures, the checks on a subscription's fields;
//! - `store`: the subscriptions and their secrets;
//! - `worker`: the loop that delivers every subscription's due events;
//! - `routes`: the admin API.

pub mod routes;
pub mod store;
pub mod worker;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use chrono::{DateTime, SecondsFormat, Utc};
use hmac::{Hmac, KeyInit, Mac};
use rand::RngCore;
use serde_json::{Map, Value, json};
use sha2::Sha256;
use uuid::Uuid;

use crate::error::{ApiError, Code};

/// The public topics, each with the outbox topic it is made from.
pub const TOPICS: [(&str, &str); 5] = [
    ("response.recorded", "response.recorded"),
    ("attempt.started", "attempt.started"),
    ("attempt.finished", "attempt.finished"),
    // A staff override and a regrade both write `attempt.regraded`.
    ("grade.changed", "attempt.regraded"),
    ("quiz.version_created", "quiz.version_created"),
];
/// The prefix of a consumer name that is a subscription.
pub const CONSUMER_PREFIX: &str = "webhook:";
/// The prefix of a secret as shown to admins (and as Standard Webhooks libraries take it).
pub const SECRET_PREFIX: &str = "whsec_";
/// Random bytes in a secret.
const SECRET_BYTES: usize = 32;
/// How long a rotated secret still signs deliveries.
pub const ROTATION_GRACE: chrono::Duration = chrono::Duration::hours(24);
/// The longest URL.
pub const MAX_URL: usize = 2048;
/// The longest description.
pub const MAX_DESCRIPTION: usize = 500;

/// The consumer name of a subscription.
pub fn consumer(subscription: Uuid) -> String {
    format!("{CONSUMER_PREFIX}{subscription}")
}

/// The outbox topic a public topic is made from.
pub fn outbox_topic(public: &str) -> Option<&'static str> {
    TOPICS.iter().find(|(p, _)| *p == public).map(|(_, o)| *o)
}

/// The public topic of an outbox topic.
pub fn public_topic(outbox: &str) -> Option<&'static str> {
    TOPICS.iter().find(|(_, o)| *o == outbox).map(|(p, _)| *p)
}

/// The fields of each outbox topic's payload that a webhook carries.
fn fields(outbox: &str) -> &'static [&'static str] {
    match outbox {
        "response.recorded" => &[
            "attempt_id",
            "user_id",
            "question_key",
            "points",
            "max_points",
            "revision",
            "answered_at",
        ],
        "attempt.started" => &[
            "attempt_id",
            "assignment_id",
            "user_id",
            "number",
            "locale",
            "started_at",
        ],
        "attempt.finished" => &[
            "attempt_id",
            "assignment_id",
            "user_id",
            "score",
            "max_score",
            "reason",
            "finished_at",
        ],
        "attempt.regraded" => &[
            "attempt_id",
            "assignment_id",
            "user_id",
            "points",
            "computed_points",
            "max_score",
            "from_points",
            "from_max_score",
            "by",
            "at",
        ],
        "quiz.version_created" => &["quiz_id", "slug", "version_id", "version", "created_at"],
        _ => &[],
    }
}

/// The body of an event as a webhook carries it, `{type, timestamp, data}`: only the fields
/// [`fields`] lists are taken from the outbox payload (an answer, or whether it was right, is
/// never sent); `None` for a topic no subscription can want.
pub fn body(outbox: &str, payload: &Value, created_at: DateTime<Utc>) -> Option<Value> {
    let public = public_topic(outbox)?;
    let mut data = Map::new();
    for f in fields(outbox) {
        if let Some(v) = payload.get(*f) {
            data.insert((*f).to_string(), v.clone());
        }
    }
    if outbox == "attempt.regraded" {
        let regrade = payload.get("regrade").and_then(Value::as_bool) == Some(true);
        data.insert(
            "kind".into(),
            json!(if regrade { "regrade" } else { "override" }),
        );
    }
    Some(json!({
        "type": public,
        "timestamp": created_at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "data": data,
    }))
}

/// The `webhook-id` of an event to a subscription: the same on every try of it, different for
/// each subscription.
pub fn message_id(subscription: Uuid, event: i64) -> String {
    format!(
        "msg_{}",
        Uuid::new_v5(&subscription, &event.to_be_bytes()).simple()
    )
}

/// A new secret: `whsec_` and the base64 of 32 random bytes.
pub fn new_secret() -> String {
    let mut bytes = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    format!("{SECRET_PREFIX}{}", B64.encode(bytes))
}

/// One `v1,<base64>` signature of `{id}.{timestamp}.{body}` with the secret's bytes; `None`
/// for a secret that is not one of quizd's.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    let key = B64.decode(secret.strip_prefix(SECRET_PREFIX)?).ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes a key of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Some(format!("v1,{}", B64.encode(mac.finalize().into_bytes())))
}

/// The `webhook-signature` header: the current secret's signature, then, during a rotation's
/// grace period, the previous secret's, separated by a space.
pub fn signature_header(secrets: &[&str], id: &str, timestamp: i64, body: &[u8]) -> String {
    secrets
        .iter()
        .filter_map(|s| sign(s, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

fn invalid(detail: impl Into<String>) -> ApiError {
    ApiError::new(Code::InvalidWebhook, detail)
}

/// Whether `host` (a URL's, lowercase) is one of `allowed`: the same name, or under a
/// `*.example.org` entry.
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    allowed.iter().any(|a| {
        let a = a.trim().to_ascii_lowercase();
        match a.strip_prefix("*.") {
            Some(parent) => host
                .strip_suffix(parent)
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            None => host == a,
        }
    })
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let ip = host.trim_start_matches('[').trim_end_matches(']');
    match ip.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host == "localhost",
    }
}

/// Whether quizd may call `url` now: https (plain http only to loopback), to a host the
/// configuration allows (`--webhook-host`). Checked when a subscription is made or changed,
/// and before each delivery (the configuration may have changed since).
pub fn callable(url: &reqwest::Url, allowed: &[String]) -> Result<(), String> {
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(url) => {}
        _ => return Err("`url` must be https (plain http only to a loopback host).".into()),
    }
    let host = url.host_str().unwrap_or_default();
    if !host_allowed(host, allowed) {
        return Err(format!(
            "`url`: quizd may not call {host} (the hosts it may call are set with --webhook-host)."
        ));
    }
    Ok(())
}

/// A subscription's URL: https (plain http only to loopback) to a host the configuration
/// allows, no user name or password, no fragment, at most [`MAX_URL`] bytes.
pub fn check_url(url: &str, allowed: &[String]) -> Result<reqwest::Url, ApiError> {
    if url.len() > MAX_URL {
        return Err(invalid(format!("`url` is longer than {MAX_URL} bytes.")));
    }
    let parsed =
        reqwest::Url::parse(url).map_err(|e| invalid(format!("`url` is not a URL: {e}.")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid(
            "`url` must be https (plain http only to a loopback host).",
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(invalid("`url` has no host."));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(invalid(
            "`url` must not carry a user name or password; the signature authenticates quizd.",
        ));
    }
    if parsed.fragment().is_some() {
        return Err(invalid("`url` must not have a fragment."));
    }
    callable(&parsed, allowed).map_err(invalid)?;
    Ok(parsed)
}

/// The public topics asked for, without repeats, each one quizd has, at least one.
pub fn check_topics(topics: &[String]) -> Result<Vec<String>, ApiError> {
    if topics.is_empty() {
        return Err(invalid("`topics` must name at least one topic."));
    }
    let mut out: Vec<String> = Vec::new();
    for t in topics {
        if outbox_topic(t).is_none() {
            let known: Vec<&str> = TOPICS.iter().map(|(p, _)| *p).collect();
            let shown: String = t.chars().take(64).collect();
            return Err(invalid(format!(
                "`topics`: {shown:?} is not a topic; the topics are {}.",
                known.join(", ")
            )));
        }
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    Ok(out)
}

/// A description: one line of at most [`MAX_DESCRIPTION`] characters.
pub fn check_description(description: &str) -> Result<(), ApiError> {
    if description.chars().any(char::is_control) {
        return Err(invalid("`description` contains control characters."));
    }
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(invalid(format!(
            "`description` is longer than {MAX_DESCRIPTION} characters."
        )));
    }
    Ok(())
}

/// The outbox topics of these public ones.
pub fn outbox_topics(public: &[String]) -> Vec<&'static str> {
    public.iter().filter_map(|t| outbox_topic(t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_is_the_standard_webhooks_example() {
        // The example of the Standard Webhooks specification (its reference libraries' tests).
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            sign(secret, id, 1614265330, body).unwrap(),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn both_secrets_sign_during_a_rotation_and_a_foreign_secret_signs_nothing() {
        let (a, b) = (new_secret(), new_secret());
        assert!(a.starts_with(SECRET_PREFIX) && a.len() > 40);
        assert_ne!(a, b);
        let header = signature_header(&[&a, &b], "msg_1", 7, b"{}");
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0], sign(&a, "msg_1", 7, b"{}").unwrap());
        assert_eq!(parts[1], sign(&b, "msg_1", 7, b"{}").unwrap());
        assert_eq!(sign("not-ours", "msg_1", 7, b"{}"), None);
    }

    #[test]
    fn a_message_id_is_stable_per_event_and_subscription() {
        let (s, t) = (Uuid::from_u128(1), Uuid::from_u128(2));
        assert_eq!(message_id(s, 7), message_id(s, 7));
        assert_ne!(message_id(s, 7), message_id(s, 8));
        assert_ne!(message_id(s, 7), message_id(t, 7));
    }

    #[test]
    fn a_body_carries_ids_points_and_times_but_not_whether_an_answer_was_right() {
        let at: DateTime<Utc> = "2030-01-02T03:04:05Z".parse().unwrap();
        let payload = json!({"attempt_id": "a", "user_id": "u", "question_key": "q",
            "points": 1.0, "max_points": 2.0, "correct": false, "answer": {"choice": ["x"]},
            "revision": 1, "answered_at": "t"});
        let b = body("response.recorded", &payload, at).unwrap();
        assert_eq!(b["type"], "response.recorded");
        assert_eq!(b["timestamp"], "2030-01-02T03:04:05.000Z");
        assert_eq!(b["data"]["points"], 1.0);
        assert!(b["data"].get("correct").is_none());
        assert!(b["data"].get("answer").is_none());
        let regrade = json!({"attempt_id": "a", "points": 3.0, "regrade": true});
        let b = body("attempt.regraded", &regrade, at).unwrap();
        assert_eq!(b["type"], "grade.changed");
        assert_eq!(b["data"]["kind"], "regrade");
        let b = body("attempt.regraded", &json!({"points": 1.0}), at).unwrap();
        assert_eq!(b["data"]["kind"], "override");
        assert_eq!(body("something.else", &payload, at), None);
    }

    #[test]
    fn a_url_is_https_or_loopback_http_to_an_allowed_host_with_no_credentials() {
        let allowed = [
            "hooks.example".to_string(),
            "127.0.0.1".into(),
            "*.corp.example".into(),
        ];
        let check = |u: &str| check_url(u, &allowed);
        assert!(check("https://hooks.example/quizd?x=1").is_ok());
        assert!(check("https://HOOKS.example/quizd").is_ok());
        assert!(check("http://127.0.0.1:9000/hook").is_ok());
        assert!(check("https://a.corp.example/").is_ok());
        for bad in [
            "http://hooks.example/",
            "https://corp.example/",
            "https://evilcorp.example/",
            "https://a.corp.example.evil/",
            "https://169.254.169.254/latest/meta-data",
            "http://localhost/",
            "ftp://hooks.example/",
            "javascript:alert(1)",
            "https://user:pw@hooks.example/",
            "https://user@hooks.example/",
            "https://hooks.example/#frag",
            "not a url",
            "file:///etc/passwd",
        ] {
            assert!(check(bad).is_err(), "{bad}");
        }
        assert!(check(&format!("https://hooks.example/{}", "a".repeat(MAX_URL))).is_err());
        assert!(check_url("https://hooks.example/", &[]).is_err());
    }

    #[test]
    fn topics_are_known_and_deduplicated() {
        let t = |v: &[&str]| check_topics(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            t(&["grade.changed", "grade.changed"]).unwrap(),
            ["grade.changed"]
        );
        assert!(t(&[]).is_err());
        assert!(t(&["attempt.regraded"]).is_err());
        assert_eq!(
            outbox_topics(&["grade.changed".into()]),
            ["attempt.regraded"]
        );
    }
}
