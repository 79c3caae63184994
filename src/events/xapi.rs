//! xAPI 1.0.3 statements to a Learning Record Store, from the outbox: `initialized` when an
//! attempt starts, `answered` for each recorded response, `completed` when it finishes (and
//! `passed` or `failed` where a pass mark applies; quizd's assignments have none yet, so today
//! a finish is `completed` with its score). The learner is an account on quizd's public origin
//! named by their user id (never their address, unless `--xapi-actor-email`); the quiz and the
//! question are activities named in every locale of the quiz version; the attempt is the
//! `registration`; the course groups them.
//!
//! Statement ids are UUID v5 of quizd's namespace and (origin, event, verb), so a retry, or a
//! second delivery of an event, sends the same ids, and an LRS that has them already keeps
//! one copy (Ralph drops equivalent ones; a `409` means "there already": each statement is
//! then PUT by its id, where `204` or `409` both mean it is stored).

use std::collections::HashMap;
use std::time::Duration as StdDuration;

use actix_web::web::Data;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use super::store::{self, AttemptFacts, Claimed};
use super::{Outcome, XAPI};
use crate::content::{QuestionKind, QuizContent};
use crate::state::AppState;

/// The topics the xAPI consumer takes.
pub const TOPICS: [&str; 3] = ["attempt.started", "response.recorded", "attempt.finished"];
/// The xAPI version quizd speaks (`X-Experience-API-Version`).
pub const VERSION: &str = "1.0.3";
/// quizd's namespace for statement ids (UUID v5).
pub const NAMESPACE: Uuid = Uuid::from_u128(0x6f1c_2a4e_9b7d_4c3a_8e21_5d0f_a9b8_c7e6);
/// Events per claim (each one or two statements), sent as one batch.
const BATCH: i64 = 50;
/// How much of an LRS's error answer is kept.
const ERROR_BYTES: usize = 2048;

const VERB: &str = "http://adlnet.gov/expapi/verbs/";
const ASSESSMENT: &str = "http://adlnet.gov/expapi/activities/assessment";
const INTERACTION: &str = "http://adlnet.gov/expapi/activities/cmi.interaction";
const COURSE: &str = "http://adlnet.gov/expapi/activities/course";

/// How quizd signs in to the LRS.
#[derive(Debug, Clone)]
pub enum Auth {
    Basic { username: String, password: String },
    Bearer(String),
}

/// Where statements go and who they say the learner is.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The LRS's xAPI base, ending in `/` (`statements` is resolved against it).
    pub endpoint: reqwest::Url,
    pub auth: Auth,
    /// quizd's public origin: the learner's account `homePage` and the activities' ids.
    pub homepage: String,
    /// Identify the learner by `mbox` (their address) where they have one.
    pub actor_email: bool,
}

impl Settings {
    /// Checks the flags: an https endpoint (plain http only on loopback), one way to sign in,
    /// and quizd's public origin.
    pub fn new(
        endpoint: &str,
        username: Option<String>,
        password: Option<String>,
        token: Option<String>,
        homepage: Option<&str>,
        actor_email: bool,
    ) -> Result<Self, String> {
        let mut url = reqwest::Url::parse(endpoint)
            .map_err(|e| format!("--xapi-endpoint is not an absolute URL: {e}"))?;
        if !crate::lti::registrations::scheme_allowed(&url) {
            return Err("--xapi-endpoint must be https (plain http only on loopback)".into());
        }
        if !url.path().ends_with('/') {
            url.set_path(&format!("{}/", url.path()));
        }
        let auth = match (username, password, token) {
            (Some(username), Some(password), None) => Auth::Basic { username, password },
            (None, None, Some(token)) => Auth::Bearer(token),
            _ => {
                return Err(
                    "--xapi-endpoint needs either --xapi-username and --xapi-password, or \
                     --xapi-token"
                        .into(),
                );
            }
        };
        let homepage = homepage
            .ok_or("--xapi-endpoint needs --public-url (the learners' account home page)")?
            .trim_end_matches('/')
            .to_string();
        Ok(Self {
            endpoint: url,
            auth,
            homepage,
            actor_email,
        })
    }
}

/// What the statements of an event say besides the event itself.
pub struct Context<'a> {
    pub homepage: &'a str,
    pub attempt: &'a AttemptFacts,
    /// The attempt's quiz version (as served); `None` if it could not be read.
    pub content: Option<&'a QuizContent>,
    pub actor_email: bool,
    /// The fraction of the maximum that passes, where the assignment has one.
    pub pass_mark: Option<f64>,
}

/// A statement's deterministic id: the same event and verb give the same id, every time.
pub fn statement_id(homepage: &str, event: i64, verb: &str) -> Uuid {
    Uuid::new_v5(
        &NAMESPACE,
        format!("{homepage}/events/{event}/{XAPI}/{verb}").as_bytes(),
    )
}

/// The statements an event makes (none for a topic xAPI does not report).
pub fn statements(event: &Claimed, cx: &Context<'_>) -> Vec<Value> {
    let p = &event.payload.0;
    let at = |field: &str| {
        p.get(field)
            .and_then(|v| serde_json::from_value::<DateTime<Utc>>(v.clone()).ok())
            .unwrap_or(event.created_at)
    };
    let statement = |verb: &str, object: Value, result: Option<Value>, at: DateTime<Utc>| {
        let mut s = json!({
            "id": statement_id(cx.homepage, event.id, verb),
            "actor": actor(cx),
            "verb": {"id": format!("{VERB}{verb}"), "display": {"en-US": verb}},
            "object": object,
            "context": context(cx, verb == "answered"),
            "timestamp": at.to_rfc3339_opts(SecondsFormat::Millis, true),
        });
        if let Some(r) = result {
            s["result"] = r;
        }
        s
    };
    match event.topic.as_str() {
        "attempt.started" => vec![statement(
            "initialized",
            quiz_activity(cx),
            None,
            at("started_at"),
        )],
        "response.recorded" => {
            let key = p.get("question_key").and_then(Value::as_str).unwrap_or("");
            let mut result = score(
                p.get("points").and_then(Value::as_f64),
                p.get("max_points").and_then(Value::as_f64),
            );
            if let Some(correct) = p.get("correct").and_then(Value::as_bool) {
                result["success"] = json!(correct);
            }
            vec![statement(
                "answered",
                question_activity(cx, key),
                Some(result),
                at("answered_at"),
            )]
        }
        "attempt.finished" => {
            let raw = p.get("score").and_then(Value::as_f64);
            let max = p.get("max_score").and_then(Value::as_f64);
            let finished = at("finished_at");
            let mut result = score(raw, max);
            result["completion"] = json!(true);
            let secs = (finished - cx.attempt.started_at).num_milliseconds().max(0) as f64 / 1e3;
            result["duration"] = json!(format!("PT{secs:.2}S"));
            let verdict = match (cx.pass_mark, raw, max) {
                (Some(mark), Some(raw), Some(max)) if max > 0.0 => Some(raw / max >= mark),
                _ => None,
            };
            let Some(passed) = verdict else {
                return vec![statement(
                    "completed",
                    quiz_activity(cx),
                    Some(result),
                    finished,
                )];
            };
            result["success"] = json!(passed);
            let verb = if passed { "passed" } else { "failed" };
            vec![
                statement(
                    "completed",
                    quiz_activity(cx),
                    Some(result.clone()),
                    finished,
                ),
                statement(verb, quiz_activity(cx), Some(result), finished),
            ]
        }
        _ => Vec::new(),
    }
}

fn actor(cx: &Context<'_>) -> Value {
    match (&cx.attempt.email, cx.actor_email) {
        (Some(email), true) => json!({"objectType": "Agent", "mbox": format!("mailto:{email}")}),
        _ => json!({
            "objectType": "Agent",
            "account": {"homePage": cx.homepage, "name": cx.attempt.user_id.to_string()},
        }),
    }
}

/// `result.score`: raw, its range, and scaled where the maximum is above zero.
fn score(raw: Option<f64>, max: Option<f64>) -> Value {
    let mut score = Map::new();
    if let (Some(raw), Some(max)) = (raw, max) {
        score.insert("raw".into(), json!(raw));
        score.insert("min".into(), json!(raw.min(0.0)));
        score.insert("max".into(), json!(max.max(raw)));
        if max > 0.0 {
            let scaled = ((raw / max).clamp(-1.0, 1.0) * 1e4).round() / 1e4;
            score.insert("scaled".into(), json!(scaled));
        }
    }
    json!({"score": score})
}

fn quiz_id(cx: &Context<'_>) -> String {
    format!("{}/quizzes/{}", cx.homepage, cx.attempt.slug)
}

fn quiz_activity(cx: &Context<'_>) -> Value {
    let mut definition = json!({"type": ASSESSMENT});
    if let Some(c) = cx.content {
        definition["name"] = json!(c.title);
        if let Some(intro) = &c.intro {
            definition["description"] = json!(intro);
        }
    }
    json!({"objectType": "Activity", "id": quiz_id(cx), "definition": definition})
}

fn question_activity(cx: &Context<'_>, key: &str) -> Value {
    let mut definition = json!({"type": INTERACTION});
    if let Some(q) = cx
        .content
        .and_then(|c| c.questions.iter().find(|q| q.key == key))
    {
        definition["name"] = json!(q.prompt);
        definition["interactionType"] = json!(match q.kind {
            QuestionKind::Single | QuestionKind::Multiple => "choice",
            QuestionKind::TrueFalse => "true-false",
            QuestionKind::Numeric => "numeric",
            QuestionKind::ShortText => "fill-in",
        });
    }
    json!({
        "objectType": "Activity",
        "id": format!("{}/questions/{key}", quiz_id(cx)),
        "definition": definition,
    })
}

fn context(cx: &Context<'_>, in_quiz: bool) -> Value {
    let mut activities = Map::new();
    if in_quiz {
        activities.insert("parent".into(), json!([quiz_activity(cx)]));
    }
    if let (Some(id), Some(title)) = (cx.attempt.course_id, &cx.attempt.course_title) {
        activities.insert(
            "grouping".into(),
            json!([{
                "objectType": "Activity",
                "id": format!("{}/courses/{id}", cx.homepage),
                "definition": {"type": COURSE, "name": {"und": title}},
            }]),
        );
    }
    let mut context = json!({
        "registration": cx.attempt.id,
        "platform": "quizd",
        "language": cx.attempt.locale,
    });
    if !activities.is_empty() {
        context["contextActivities"] = Value::Object(activities);
    }
    context
}

/// Sends the due statements, one batch per claim; returns how many events were delivered.
pub async fn deliver_due(
    state: &AppState,
    settings: &Settings,
    client: &reqwest::Client,
) -> Result<usize, sqlx::Error> {
    let pool = &state.pool;
    let claimed = super::claim(pool, XAPI, BATCH).await?;
    if claimed.is_empty() {
        return Ok(0);
    }
    let mut ids: Vec<Uuid> = claimed.iter().map(|e| e.aggregate_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let facts: HashMap<Uuid, AttemptFacts> = store::attempt_facts(pool, &ids)
        .await?
        .into_iter()
        .map(|f| (f.id, f))
        .collect();
    let mut versions = HashMap::new();
    for f in facts.values() {
        if let std::collections::hash_map::Entry::Vacant(v) = versions.entry(f.quiz_version_id) {
            v.insert(state.quizzes.get(pool, f.quiz_version_id).await?);
        }
    }
    let mut batch = Vec::new();
    let mut outcomes: Vec<Option<Outcome>> = Vec::with_capacity(claimed.len());
    for event in &claimed {
        let Some(attempt) = facts.get(&event.aggregate_id) else {
            outcomes.push(Some(Outcome::Delivered(Some(
                "skipped: the attempt no longer exists".into(),
            ))));
            continue;
        };
        let version = versions
            .get(&attempt.quiz_version_id)
            .and_then(Option::as_ref);
        let cx = Context {
            homepage: &settings.homepage,
            attempt,
            content: version.map(|v| &v.content),
            actor_email: settings.actor_email,
            pass_mark: None,
        };
        batch.extend(statements(event, &cx));
        outcomes.push(None);
    }
    let sent = if batch.is_empty() {
        Outcome::Delivered(None)
    } else {
        match send(client, settings, &batch).await {
            Ok(()) => Outcome::Delivered(None),
            Err(e) => Outcome::Failed(e),
        }
    };
    let mut delivered = 0;
    for (event, outcome) in claimed.iter().zip(outcomes) {
        let outcome = outcome.unwrap_or_else(|| sent.clone());
        match &outcome {
            Outcome::Delivered(None) => delivered += 1,
            Outcome::Delivered(Some(note)) => {
                tracing::info!(event = event.id, note = %note, "xAPI statement skipped")
            }
            Outcome::Failed(e) => {
                tracing::warn!(event = event.id, tries = event.tries, error = %e, "xAPI delivery failed")
            }
        }
        super::record(pool, XAPI, event, &outcome).await?;
    }
    Ok(delivered)
}

fn request(
    client: &reqwest::Client,
    settings: &Settings,
    method: reqwest::Method,
    url: reqwest::Url,
    body: &Value,
) -> reqwest::RequestBuilder {
    let req = client
        .request(method, url)
        .header("X-Experience-API-Version", VERSION)
        .json(body);
    match &settings.auth {
        Auth::Basic { username, password } => req.basic_auth(username, Some(password)),
        Auth::Bearer(token) => req.bearer_auth(token),
    }
}

/// POSTs the statements as one batch; on `409` (one of them is stored already), PUTs each
/// by its id, where `204` (stored now) and `409` (there already) both mean done.
async fn send(
    client: &reqwest::Client,
    settings: &Settings,
    statements: &[Value],
) -> Result<(), String> {
    let url = settings
        .endpoint
        .join("statements")
        .map_err(|e| e.to_string())?;
    let body = Value::Array(statements.to_vec());
    let res = request(client, settings, reqwest::Method::POST, url.clone(), &body)
        .send()
        .await
        .map_err(|e| format!("the LRS could not be reached: {e}"))?;
    match res.status().as_u16() {
        200 | 204 => return Ok(()),
        409 => {}
        _ => return Err(failure(res).await),
    }
    for s in statements {
        let mut one = url.clone();
        one.query_pairs_mut()
            .append_pair("statementId", s["id"].as_str().unwrap_or_default());
        let res = request(client, settings, reqwest::Method::PUT, one, s)
            .send()
            .await
            .map_err(|e| format!("the LRS could not be reached: {e}"))?;
        if !matches!(res.status().as_u16(), 204 | 409) {
            return Err(failure(res).await);
        }
    }
    Ok(())
}

/// The LRS's answer as an error: its status and the start of its body (read no further).
async fn failure(mut res: reqwest::Response) -> String {
    let status = res.status();
    let mut body = Vec::new();
    while body.len() < ERROR_BYTES {
        match res.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(ERROR_BYTES);
    format!(
        "the LRS answered {status}: {}",
        String::from_utf8_lossy(&body).trim()
    )
}

/// The HTTP client for an LRS: bounded waits, no redirects (a redirect could lead anywhere).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(StdDuration::from_secs(5))
        .timeout(StdDuration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client with these settings builds")
}

/// Makes xAPI the consumer of its topics when configured, and of none otherwise (so events
/// stop being queued for an LRS no instance sends to).
pub async fn register(pool: &PgPool, enabled: bool) -> Result<(), sqlx::Error> {
    store::set_topics(pool, XAPI, if enabled { &TOPICS[..] } else { &[] }).await
}

/// Sends statements every `every` until quizd stops (and purges old delivered events every
/// minute). Does nothing without xAPI settings.
pub async fn deliver_statements(
    state: Data<AppState>,
    every: StdDuration,
    mut shutdown: crate::background::Shutdown,
) {
    let Some(settings) = state.xapi.clone() else {
        return;
    };
    let client = client();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut registered = false;
    let mut last_purge = std::time::Instant::now();
    while shutdown.tick(&mut tick).await {
        if !registered {
            match register(&state.pool, true).await {
                Ok(()) => registered = true,
                Err(e) => {
                    tracing::warn!(error = %e, "registering the xAPI consumer failed");
                    continue;
                }
            }
        }
        if let Err(e) = deliver_due(&state, &settings, &client).await {
            tracing::warn!(error = %e, "xAPI delivery failed to read the outbox");
        }
        super::purge_now_and_then(&state.pool, &mut last_purge).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> AttemptFacts {
        AttemptFacts {
            id: Uuid::from_u128(1),
            user_id: Uuid::from_u128(2),
            email: Some("ada@example.org".into()),
            quiz_version_id: Uuid::from_u128(3),
            locale: "bn".into(),
            started_at: "2030-01-02T03:00:00Z".parse().unwrap(),
            slug: "data-parallelism".into(),
            course_id: None,
            course_title: None,
        }
    }

    fn finished(id: i64) -> Claimed {
        Claimed {
            id,
            topic: "attempt.finished".into(),
            aggregate_id: Uuid::from_u128(1),
            payload: sqlx::types::Json(json!({
                "score": 6.0, "max_score": 8.0, "finished_at": "2030-01-02T03:01:30.5+00:00",
            })),
            created_at: "2030-01-02T03:02:00Z".parse().unwrap(),
            tries: 1,
        }
    }

    fn cx<'a>(attempt: &'a AttemptFacts, pass_mark: Option<f64>, email: bool) -> Context<'a> {
        Context {
            homepage: "https://quiz.example.org",
            attempt,
            content: None,
            actor_email: email,
            pass_mark,
        }
    }

    #[test]
    fn a_finish_is_completed_only_without_a_pass_mark_and_passed_or_failed_with_one() {
        let f = facts();
        let only = statements(&finished(7), &cx(&f, None, false));
        assert_eq!(only.len(), 1);
        assert_eq!(only[0]["verb"]["id"], format!("{VERB}completed"));
        assert_eq!(only[0]["result"]["score"]["scaled"], 0.75);
        assert_eq!(only[0]["result"]["duration"], "PT90.50S");
        assert_eq!(only[0]["timestamp"], "2030-01-02T03:01:30.500Z");
        let passed = statements(&finished(7), &cx(&f, Some(0.7), false));
        assert_eq!(passed[1]["verb"]["id"], format!("{VERB}passed"));
        assert_eq!(passed[1]["result"]["success"], true);
        let failed = statements(&finished(7), &cx(&f, Some(0.8), false));
        assert_eq!(failed[1]["verb"]["id"], format!("{VERB}failed"));
        assert_eq!(failed[0]["result"]["success"], false);
        assert_ne!(failed[0]["id"], failed[1]["id"]);
    }

    #[test]
    fn statement_ids_are_the_same_for_the_same_event_and_differ_between_events() {
        let f = facts();
        let a = statements(&finished(7), &cx(&f, None, false));
        let b = statements(&finished(7), &cx(&f, None, false));
        let c = statements(&finished(8), &cx(&f, None, false));
        assert_eq!(a, b);
        assert_ne!(a[0]["id"], c[0]["id"]);
        assert_eq!(
            a[0]["id"],
            json!(statement_id("https://quiz.example.org", 7, "completed"))
        );
    }

    #[test]
    fn the_learner_is_an_account_unless_email_is_asked_for() {
        let f = facts();
        let s = &statements(&finished(7), &cx(&f, None, false))[0];
        assert_eq!(
            s["actor"]["account"],
            json!({"homePage": "https://quiz.example.org", "name": Uuid::from_u128(2).to_string()})
        );
        assert!(!s.to_string().contains("ada@example.org"));
        let s = &statements(&finished(7), &cx(&f, None, true))[0];
        assert_eq!(s["actor"]["mbox"], "mailto:ada@example.org");
    }

    #[test]
    fn an_endpoint_must_be_https_or_loopback_with_one_way_to_sign_in() {
        let ok = |e: &str| {
            Settings::new(
                e,
                None,
                None,
                Some("t".into()),
                Some("https://q.example/"),
                false,
            )
        };
        assert_eq!(
            ok("https://lrs.example/xapi").unwrap().endpoint.as_str(),
            "https://lrs.example/xapi/"
        );
        assert_eq!(
            ok("https://q.example").unwrap().homepage,
            "https://q.example"
        );
        assert!(ok("http://127.0.0.1:8100/xAPI/").is_ok());
        assert!(ok("http://lrs.example/xAPI/").is_err());
        assert!(ok("ftp://lrs.example/").is_err());
        let both = Settings::new(
            "https://lrs.example/",
            Some("u".into()),
            Some("p".into()),
            Some("t".into()),
            Some("https://q.example"),
            false,
        );
        assert!(both.is_err());
        assert!(
            Settings::new(
                "https://lrs.example/",
                None,
                None,
                Some("t".into()),
                None,
                false
            )
            .is_err()
        );
    }
}
