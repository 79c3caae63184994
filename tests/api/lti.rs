//! LTI 1.3 against an independent platform: `tests/lti/lti_platform.py`, built on the PyPI
//! package `lti1p3platform`, plays the LMS on loopback (its keys, OIDC authorization endpoint,
//! token endpoint, AGS line items and scores, NRPS, Deep Linking return). The test plays the
//! browser: it follows the redirects and posts the forms, carrying quizd's cookie.
//!
//! The platform runs in `target/lti-venv`, which the first LTI test makes (pip, from the
//! pinned `tests/lti/requirements.txt`) when it is missing, so `cargo test` needs no setup.

use std::ffi::OsStr;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::peer::PythonPeer;
use crate::support::session::{Reply, Session};
use crate::support::{Person, TestApp, assert_problem, expect_status, wait_until};

const LEARNER: &str = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner";
const INSTRUCTOR: &str = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor";

/// The platform harness, stopped when dropped.
pub(crate) struct Platform {
    _peer: PythonPeer,
    base: String,
    client: reqwest::Client,
}

impl Platform {
    fn spawn(tool: &str) -> Platform {
        let peer = PythonPeer::start(
            "the LTI platform",
            "lti-venv",
            "tests/lti/requirements.txt",
            "tests/lti/lti_platform.py",
            &[OsStr::new("--tool"), OsStr::new(tool)],
        );
        Platform {
            base: peer.url(""),
            _peer: peer,
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn scenario(&self, scenario: &Value) -> String {
        let res = self
            .client
            .post(self.url("/scenarios"))
            .json(scenario)
            .send()
            .await
            .unwrap();
        expect_status(res, 201).await["hint"]
            .as_str()
            .unwrap()
            .to_string()
    }

    async fn recorded(&self) -> Value {
        let res = self.client.get(self.url("/recorded")).send().await.unwrap();
        expect_status(res, 200).await
    }

    async fn control(&self, ask: Value) {
        let res = self
            .client
            .post(self.url("/control"))
            .json(&ask)
            .send()
            .await
            .unwrap();
        expect_status(res, 200).await;
    }

    /// Waits until the platform has received `n` scores; returns them.
    pub(crate) async fn scores(&self, n: usize) -> Vec<Value> {
        let rec = wait_until(
            &format!("the platform to receive {n} scores"),
            || self.recorded(),
            |rec| rec["scores"].as_array().unwrap().len() >= n,
        )
        .await;
        rec["scores"].as_array().unwrap().clone()
    }
}

/// quizd, the platform registered with it, an admin, and the grade-passback worker.
pub(crate) struct Lti {
    pub(crate) app: TestApp,
    pub(crate) platform: Platform,
    admin: Person,
    registration: Value,
    worker: tokio::task::JoinHandle<()>,
}

impl Drop for Lti {
    fn drop(&mut self) {
        self.worker.abort();
    }
}

impl Lti {
    /// The admin who registered the platform, signed in.
    fn admin(&self) -> Session<'_> {
        self.app.session(self.admin.clone())
    }

    /// The person a launch signed in (its exchange's answer), signed in on this quizd.
    fn signed_in(&self, session: &Value) -> Session<'_> {
        let token = |name: &str| session[name].as_str().unwrap().to_string();
        self.app.session(Person {
            id: token("user_id").parse().unwrap(),
            email: String::new(),
            access: token("access_token"),
            refresh: token("refresh_token"),
        })
    }
}

pub(crate) async fn setup() -> Lti {
    setup_on(TestApp::spawn().await).await
}

async fn setup_on(app: TestApp) -> Lti {
    let platform = Platform::spawn(&app.base);
    // Kept as a `Person`: a session borrows the app, which the `Lti` takes.
    let admin = Person::clone(&*app.person("admin@lti.example", "admin").await);
    let rec = platform.recorded().await;
    let issuer = rec["issuer"].as_str().unwrap();
    let registration = app
        .session(admin.clone())
        .post(
            "/v1/lti/registrations",
            &json!({
                "title": "Test LMS",
                "issuer": issuer,
                "client_id": rec["client_id"],
                "deployment_ids": [rec["deployment_id"]],
                "auth_endpoint": format!("{issuer}/auth"),
                "token_endpoint": format!("{issuer}/token"),
                "jwks_url": format!("{issuer}/.well-known/jwks.json"),
            }),
        )
        .await
        .status(201)
        .await;
    let worker = tokio::spawn(quizd::lti::ags::deliver_grades(
        app.pool.clone(),
        quizd::lti::PlatformClient::new(),
        Duration::from_millis(100),
        quizd::background::Shutdown::never(),
    ));
    Lti {
        app,
        platform,
        admin,
        registration,
        worker,
    }
}

pub(crate) fn learner(sub: &str) -> Value {
    json!({
        "user": {"sub": sub, "name": format!("Learner {sub}")},
        "roles": [LEARNER],
        "context": {"id": "ctx-1", "title": "Parallel Programming", "label": "CS-451"},
        "resource_link": {"id": "rl-1", "title": "Week 1 quiz"},
        "custom": {"quiz": "data-parallelism"},
    })
}

pub(crate) fn instructor(sub: &str) -> Value {
    let mut s = learner(sub);
    s["roles"] = json!([INSTRUCTOR]);
    s["user"]["name"] = json!(format!("Teacher {sub}"));
    s
}

/// What a browser sees of one launch.
struct Flow {
    /// The last response: quizd's answer to the launch post, or the step that refused.
    response: reqwest::Response,
    /// The id_token and state the platform posted, with the cookie quizd set.
    form: Option<(String, String, String)>,
}

fn attr<'a>(html: &'a str, name: &str) -> &'a str {
    let at = html
        .find(&format!("name=\"{name}\""))
        .unwrap_or_else(|| panic!("no {name} in {html}"));
    let rest = &html[at..];
    let start = rest.find("value=\"").unwrap() + 7;
    let end = rest[start..].find('"').unwrap();
    &rest[start..start + end]
}

fn form_action(html: &str) -> String {
    let start = html.find("action=\"").unwrap() + 8;
    let end = html[start..].find('"').unwrap();
    html[start..start + end].replace("&amp;", "&")
}

fn location(res: &reqwest::Response) -> String {
    res.headers()
        .get("location")
        .unwrap_or_else(|| panic!("no Location in {} from {}", res.status(), res.url()))
        .to_str()
        .unwrap()
        .to_string()
}

fn cookie(res: &reqwest::Response) -> Option<String> {
    res.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("quizd_lti_browser="))
        .map(|v| v.split(';').next().unwrap().to_string())
}

/// Login initiation at the platform → quizd's login → the platform's auth endpoint → the
/// launch post to quizd, as a browser does it. Stops at the first answer that is not a step.
async fn run_launch(lti: &Lti, scenario: &Value) -> Flow {
    let p = &lti.platform;
    let hint = p.scenario(scenario).await;
    let res = p
        .client
        .get(p.url(&format!("/initiate?hint={hint}")))
        .send()
        .await
        .unwrap();
    // The platform starts the login with a redirect (GET) or a self-posting form (POST).
    let res = if res.status() == 302 {
        p.client.get(location(&res)).send().await.unwrap()
    } else {
        let page = expect_html(res, 200).await;
        let action = form_action(&page);
        let mut fields = Vec::new();
        let mut rest = page.as_str();
        while let Some(at) = rest.find("name=\"") {
            let name = &rest[at + 6..];
            let name = &name[..name.find('"').unwrap()];
            fields.push((name.to_string(), attr(rest, name).replace("&amp;", "&")));
            rest = &rest[at + 6..];
        }
        p.client.post(action).form(&fields).send().await.unwrap()
    };
    if res.status() != 302 {
        return Flow {
            response: res,
            form: None,
        };
    }
    let cookie = cookie(&res).expect("quizd's login sets the state cookie");
    let auth = location(&res);
    assert!(auth.starts_with(&p.url("/auth?")), "{auth}");
    let page = expect_html(p.client.get(auth).send().await.unwrap(), 200).await;
    let (action, id_token, state) = (
        form_action(&page),
        attr(&page, "id_token").to_string(),
        attr(&page, "state").to_string(),
    );
    assert_eq!(action, lti.app.url("/v1/lti/launch"));
    let response = post_launch(lti, &id_token, &state, Some(&cookie)).await;
    Flow {
        response,
        form: Some((id_token, state, cookie)),
    }
}

async fn expect_html(res: reqwest::Response, status: u16) -> String {
    let actual = res.status().as_u16();
    let url = res.url().to_string();
    let text = res.text().await.unwrap();
    assert_eq!(actual, status, "{url}: {text}");
    text
}

async fn post_launch(
    lti: &Lti,
    id_token: &str,
    state: &str,
    cookie: Option<&str>,
) -> reqwest::Response {
    let mut req = lti
        .platform
        .client
        .post(lti.app.url("/v1/lti/launch"))
        .form(&[("id_token", id_token), ("state", state)]);
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    req.send().await.unwrap()
}

/// The one-time code of a successful launch.
fn launch_code(res: &reqwest::Response) -> String {
    assert_eq!(res.status(), 303, "the launch is accepted");
    let to = location(res);
    to.strip_prefix("/#/lti/")
        .unwrap_or_else(|| panic!("the launch leads to {to}"))
        .to_string()
}

/// The cookie a successful launch sets with its code (`name=value`), and the whole
/// `Set-Cookie` line.
fn code_cookie(res: &reqwest::Response) -> (String, String) {
    let line = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("quizd_lti_code_"))
        .unwrap_or_else(|| panic!("the launch sets no code cookie: {:?}", res.headers()))
        .to_string();
    (line.split(';').next().unwrap().to_string(), line)
}

/// The code and cookie of a successful launch.
fn launched(res: &reqwest::Response) -> (String, String) {
    (launch_code(res), code_cookie(res).0)
}

/// `POST /v1/lti/exchange` as the browser: with the launch's cookie, or without one.
async fn exchange(lti: &Lti, code: &str, cookie: Option<&str>) -> reqwest::Response {
    let mut req = lti
        .app
        .client
        .post(lti.app.url("/v1/lti/exchange"))
        .json(&json!({ "code": code }));
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    req.send().await.unwrap()
}

/// Launches successfully and signs in: the session (tokens and destination).
pub(crate) async fn launch_session(lti: &Lti, scenario: &Value) -> Value {
    let flow = run_launch(lti, scenario).await;
    let (code, cookie) = launched(&flow.response);
    expect_status(exchange(lti, &code, Some(&cookie)).await, 200).await
}

/// An instructor and a learner launched from the LMS, the learner's finished attempt, and its
/// grade as the LMS received it (one score so far).
pub(crate) struct GradedLaunch {
    pub teacher_token: String,
    pub assignment: String,
    pub finished: Value,
}

pub(crate) async fn graded_launch(lti: &Lti) -> GradedLaunch {
    let teacher = launch_session(lti, &instructor("teacher-1")).await;
    let session = launch_session(lti, &learner("learner-1")).await;
    let assignment = session["destination"]["assignment_id"].as_str().unwrap();
    let finished = take_quiz(&lti.signed_in(&session), assignment).await;
    let scores = lti.platform.scores(1).await;
    assert_eq!(scores[0]["scoreGiven"], finished["result"]["score"]);
    GradedLaunch {
        teacher_token: teacher["access_token"].as_str().unwrap().to_string(),
        assignment: assignment.to_string(),
        finished,
    }
}

/// `learner` starts an attempt, answers every question with its first option, finishes: the
/// result.
async fn take_quiz(learner: &Session<'_>, assignment: &str) -> Value {
    let path = format!("/v1/assignments/{assignment}/attempts");
    let attempt = learner.post(&path, &json!({})).await.status(201).await;
    let id = attempt["id"].as_str().unwrap();
    for q in attempt["questions"].as_array().unwrap() {
        let answer = match q["kind"].as_str().unwrap() {
            "numeric" => json!({"number": 4}),
            "short_text" => json!({"text": "gather"}),
            _ => json!({"selected": [q["options"][0]["id"]]}),
        };
        let path = format!("/v1/attempts/{id}/responses/{}", q["id"].as_str().unwrap());
        learner.put(&path, &answer).await.status(200).await;
    }
    let path = format!("/v1/attempts/{id}/finish");
    learner.post(&path, &json!({})).await.status(200).await
}

#[tokio::test]
async fn a_learner_launched_from_the_lms_takes_the_quiz_and_the_lms_receives_the_grade() {
    let lti = setup().await;
    let reg = &lti.registration;
    assert_eq!(reg["tool"]["launch_url"], lti.app.url("/v1/lti/launch"));
    assert_eq!(reg["tool"]["login_url"], lti.app.url("/v1/lti/login"));

    let flow = run_launch(&lti, &learner("learner-1")).await;
    // The authentication request quizd sent, as the platform received it.
    let rec = lti.platform.recorded().await;
    let auth = &rec["auth_requests"][0];
    for (k, v) in [
        ("scope", "openid"),
        ("response_type", "id_token"),
        ("response_mode", "form_post"),
        ("prompt", "none"),
        ("login_hint", "learner-1"),
    ] {
        assert_eq!(auth[k], v, "{k}");
    }
    assert_eq!(auth["state"].as_str().unwrap().len(), 64);
    assert_eq!(auth["nonce"].as_str().unwrap().len(), 64);
    assert!(auth["lti_message_hint"].as_str().unwrap().starts_with("s-"));

    let (code, cookie) = launched(&flow.response);
    let session = expect_status(exchange(&lti, &code, Some(&cookie)).await, 200).await;
    // The code is single use.
    let again = exchange(&lti, &code, Some(&cookie)).await;
    assert_problem(again, 401, "lti_code_invalid").await;
    assert_eq!(session["destination"]["kind"], "attempt");
    let assignment = session["destination"]["assignment_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        session["destination"]["path"],
        format!("/v1/assignments/{assignment}/attempts")
    );
    let learner_1 = lti.signed_in(&session);

    // The person, the course and the enrollment exist as the LMS says.
    let me = learner_1.get("/v1/me").await.status(200).await;
    assert_eq!(me["display_name"], "Learner learner-1");
    assert_eq!(me["role"], "learner");
    assert!(me["email"].is_null());
    let course = session["destination"]["course_id"].as_str().unwrap();
    let c = learner_1
        .get(&format!("/v1/courses/{course}"))
        .await
        .status(200)
        .await;
    assert_eq!(c["title"], "Parallel Programming");
    assert_eq!(c["code"], "CS-451");
    assert_eq!(c["my_role"], "learner");
    let a = learner_1
        .get(&format!("/v1/assignments/{assignment}"))
        .await
        .status(200)
        .await;
    assert_eq!(a["quiz"], "data-parallelism");
    assert_eq!(a["title"], "Week 1 quiz");

    // Taking the quiz through the API; finishing does not wait for the LMS.
    let finished = take_quiz(&learner_1, &assignment).await;
    let score = finished["result"]["score"].as_f64().unwrap();
    let max = finished["result"]["max_score"].as_f64().unwrap();
    let scores = lti.platform.scores(1).await;
    let s = &scores[0];
    assert_eq!(s["userId"], "learner-1");
    assert_eq!(s["scoreGiven"].as_f64().unwrap(), score);
    assert_eq!(s["scoreMaximum"].as_f64().unwrap(), max);
    assert_eq!(s["activityProgress"], "Completed");
    assert_eq!(s["gradingProgress"], "FullyGraded");
    assert!(s["timestamp"].as_str().unwrap().ends_with('Z'));

    // The delivery is on record as delivered.
    let deliveries = lti
        .admin()
        .get("/v1/lti/deliveries?status=delivered")
        .await
        .status(200)
        .await;
    assert_eq!(deliveries["items"][0]["status"], "delivered");
    assert!(deliveries["items"][0]["last_error"].is_null());

    // A second launch finds the same person, course and assignment; a second attempt's grade
    // (highest) goes out with the token cached from the first delivery.
    let again = launch_session(&lti, &learner("learner-1")).await;
    assert_eq!(again["user_id"], session["user_id"]);
    assert_eq!(
        again["destination"]["assignment_id"].as_str().unwrap(),
        assignment
    );
    take_quiz(&lti.signed_in(&again), &assignment).await;
    lti.platform.scores(2).await;
    let rec = lti.platform.recorded().await;
    assert_eq!(rec["tokens_issued"].as_array().unwrap().len(), 1, "{rec:#}");
    assert!(rec["errors"].as_array().unwrap().is_empty(), "{rec:#}");
}

#[tokio::test]
async fn an_instructor_is_taken_to_the_analytics_and_may_manage_the_course() {
    let lti = setup().await;
    let session = launch_session(&lti, &instructor("teacher-1")).await;
    assert_eq!(session["destination"]["kind"], "analytics");
    let teacher = lti.signed_in(&session);
    // Teaching is a role in the launch's course; the site role stays `learner`.
    let me = teacher.get("/v1/me").await.status(200).await;
    assert_eq!(me["role"], "learner");
    let path = session["destination"]["path"].as_str().unwrap();
    assert!(path.ends_with("/analytics"));
    teacher.get(path).await.status(200).await;
    let course = session["destination"]["course_id"].as_str().unwrap();
    let roster = teacher
        .get(&format!("/v1/courses/{course}/enrollments"))
        .await
        .status(200)
        .await;
    assert_eq!(roster["items"][0]["role"], "instructor");
    // Staff of this course read the key of the version assigned here …
    teacher
        .get("/v1/quizzes/data-parallelism/versions/1")
        .await
        .status(200)
        .await;
    // … and, sitting an exam as a learner in another course, not that exam's key.
    let other = lti
        .app
        .person("other-teacher@example.org", "instructor")
        .await;
    crate::support::author_exam(&lti.app, &other, "exam").await;
    let course_b = other
        .post("/v1/courses", &json!({"title": "B"}))
        .await
        .status(201)
        .await;
    let course_b = course_b["id"].as_str().unwrap();
    for (path, body) in [
        (
            format!("/v1/courses/{course_b}/assignments"),
            json!({"quiz": "exam", "policy": {"feedback": "never"}}),
        ),
        (
            format!("/v1/courses/{course_b}/enrollments"),
            json!({"user_id": session["user_id"], "role": "learner"}),
        ),
    ] {
        other.post(&path, &body).await.status(201).await;
    }
    teacher
        .get("/v1/quizzes/exam/versions/1")
        .await
        .problem(404, "version_not_found")
        .await;
    // An LMS administrator gets nothing more than their course role: never quizd's admin.
    let mut admin = instructor("lms-admin");
    admin["roles"] = json!([
        "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator",
        LEARNER
    ]);
    let s = launch_session(&lti, &admin).await;
    let me = lti.signed_in(&s).get("/v1/me").await.status(200).await;
    assert_eq!(me["role"], "learner");
}

#[tokio::test]
async fn a_login_may_be_posted_and_a_quiz_named_in_the_target_link() {
    let lti = setup().await;
    let mut s = learner("learner-post");
    s["login_method"] = json!("post");
    s.as_object_mut().unwrap().remove("custom");
    s["resource_link"] = json!({"id": "rl-target"});
    s["target_link_uri"] = json!(lti.app.url("/v1/lti/launch?quiz=kinds-sampler"));
    let session = launch_session(&lti, &s).await;
    let a = session["destination"]["assignment_id"].as_str().unwrap();
    let a = lti
        .signed_in(&session)
        .get(&format!("/v1/assignments/{a}"))
        .await
        .status(200)
        .await;
    assert_eq!(a["quiz"], "kinds-sampler");
}

/// Every launch here must be refused, with a problem and a code that says why.
#[tokio::test]
async fn tampered_launches_are_refused_with_a_clear_error() {
    let lti = setup().await;
    let launch_url = lti.app.url("/v1/lti/launch");
    let remove = |claim: &str| json!({"tamper": {"remove": [claim]}});
    let set = |claim: &str, v: Value| json!({"tamper": {"set": {claim: v}}});
    let dep = "https://purl.imsglobal.org/spec/lti/claim/deployment_id";
    let mt = "https://purl.imsglobal.org/spec/lti/claim/message_type";
    let ver = "https://purl.imsglobal.org/spec/lti/claim/version";
    let roles = "https://purl.imsglobal.org/spec/lti/claim/roles";
    let target = "https://purl.imsglobal.org/spec/lti/claim/target_link_uri";
    let link = "https://purl.imsglobal.org/spec/lti/claim/resource_link";
    let context = "https://purl.imsglobal.org/spec/lti/claim/context";
    let cases: Vec<(&str, Value, u16, &str)> = vec![
        ("no iss", remove("iss"), 400, "lti_claim_missing"),
        ("no aud", remove("aud"), 400, "lti_claim_missing"),
        ("no exp", remove("exp"), 400, "lti_claim_missing"),
        ("no iat", remove("iat"), 400, "lti_claim_missing"),
        ("no nonce", remove("nonce"), 400, "lti_claim_missing"),
        ("no sub", remove("sub"), 400, "lti_claim_missing"),
        ("no deployment_id", remove(dep), 400, "lti_claim_missing"),
        ("no message_type", remove(mt), 400, "lti_claim_missing"),
        ("no version", remove(ver), 400, "lti_claim_missing"),
        ("no roles", remove(roles), 400, "lti_claim_missing"),
        (
            "no target_link_uri",
            remove(target),
            400,
            "lti_claim_missing",
        ),
        ("no resource_link", remove(link), 400, "lti_claim_missing"),
        ("no context", remove(context), 400, "lti_claim_missing"),
        (
            "wrong iss",
            set("iss", json!("https://evil.example")),
            401,
            "lti_wrong_issuer",
        ),
        (
            "wrong aud",
            set("aud", json!("another-tool")),
            401,
            "lti_wrong_audience",
        ),
        (
            "wrong azp",
            set("azp", json!("another-tool")),
            401,
            "lti_wrong_audience",
        ),
        (
            "wrong deployment",
            set(dep, json!("deployment-9")),
            401,
            "lti_unknown_deployment",
        ),
        (
            "wrong message type",
            set(mt, json!("LtiSubmissionReviewRequest")),
            400,
            "lti_wrong_message_type",
        ),
        (
            "wrong version",
            set(ver, json!("1.1.0")),
            400,
            "lti_wrong_version",
        ),
        (
            "roles not a list",
            set(roles, json!(LEARNER)),
            400,
            "lti_claim_invalid",
        ),
        (
            "resource link without id",
            set(link, json!({"title": "x"})),
            400,
            "lti_claim_missing",
        ),
        (
            "another target link",
            set(target, json!("https://elsewhere.example/launch")),
            400,
            "lti_target_link_mismatch",
        ),
        (
            "another nonce",
            set("nonce", json!("a-nonce-quizd-never-sent")),
            401,
            "lti_nonce_mismatch",
        ),
        (
            "expired",
            json!({"tamper": {"exp_offset": -3600, "iat_offset": -3700}}),
            401,
            "lti_token_expired",
        ),
        (
            "issued in the future",
            json!({"tamper": {"iat_offset": 900}}),
            401,
            "lti_token_not_yet_valid",
        ),
        (
            "bad signature",
            json!({"tamper": {"sign": "bad_signature"}}),
            401,
            "lti_bad_signature",
        ),
        (
            "payload changed after signing",
            json!({"tamper": {"sign": "tampered_payload"}}),
            401,
            "lti_bad_signature",
        ),
        (
            "unknown kid",
            json!({"tamper": {"sign": "unknown_kid"}}),
            401,
            "lti_unknown_key",
        ),
        (
            "alg HS256",
            json!({"tamper": {"sign": "hs256"}}),
            401,
            "lti_bad_algorithm",
        ),
        (
            "alg none",
            json!({"tamper": {"sign": "none"}}),
            401,
            "lti_bad_algorithm",
        ),
        (
            "no quiz named",
            json!({"custom": {}}),
            400,
            "lti_quiz_missing",
        ),
        (
            "an unknown quiz",
            json!({"custom": {"quiz": "no-such-quiz"}}),
            400,
            "lti_quiz_unknown",
        ),
        (
            "login for an unregistered deployment",
            json!({"login_override": {"lti_deployment_id": "deployment-9"}}),
            422,
            "lti_unknown_deployment",
        ),
        (
            "login from an unregistered issuer",
            json!({"login_override": {"iss": "https://unknown.example"}}),
            422,
            "lti_unknown_registration",
        ),
        (
            "login without a login_hint",
            json!({"login_override": {"login_hint": null}}),
            400,
            "lti_invalid_login",
        ),
    ];
    for (i, (name, tweak, status, code)) in cases.iter().enumerate() {
        let mut s = learner(&format!("tamper-{i}"));
        s["resource_link"]["id"] = json!(format!("rl-tamper-{i}"));
        for (k, v) in tweak.as_object().unwrap() {
            s[k] = v.clone();
        }
        let flow = run_launch(&lti, &s).await;
        let body = assert_problem_named(flow.response, *status, code, name).await;
        assert!(!body["detail"].as_str().unwrap().is_empty());
    }
    // Nothing of the refused launches was made.
    let made: i64 = sqlx::query_scalar("SELECT count(*) FROM users WHERE ext_issuer IS NOT NULL")
        .fetch_one(&lti.app.pool)
        .await
        .unwrap();
    assert_eq!(made, 0);

    // Replays. The same post again: its state is used up.
    let flow = run_launch(&lti, &learner("replayer")).await;
    launch_code(&flow.response);
    let (id_token, state, cookie) = flow.form.unwrap();
    let res = post_launch(&lti, &id_token, &state, Some(&cookie)).await;
    assert_problem(res, 401, "lti_state_invalid").await;
    // The same id_token in a fresh login: its nonce was used.
    let res = lti
        .platform
        .client
        .get(lti.app.url(&format!(
            "/v1/lti/login?iss={}&login_hint=replayer&target_link_uri={}&client_id=quizd-tool",
            lti.registration["issuer"].as_str().unwrap(),
            launch_url
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 302);
    let cookie2 = cookie_of(&res);
    let state2 = query_param(&location(&res), "state");
    let res = post_launch(&lti, &id_token, &state2, Some(&cookie2)).await;
    assert_problem(res, 401, "lti_nonce_replayed").await;
    // A launch posted from another browser: without the login's cookie, or with another's.
    let hijack = run_launch_until_form(&lti, &learner("victim")).await;
    let res = post_launch(&lti, &hijack.0, &hijack.1, None).await;
    assert_problem(res, 401, "lti_state_mismatch").await;
    let hijack = run_launch_until_form(&lti, &learner("victim2")).await;
    let res = post_launch(&lti, &hijack.0, &hijack.1, Some(&cookie)).await;
    assert_problem(res, 401, "lti_state_mismatch").await;
    // A platform's error answer to the authentication request.
    let res = lti
        .platform
        .client
        .post(lti.app.url("/v1/lti/launch"))
        .form(&[
            ("error", "login_required"),
            ("error_description", "Sign in to the LMS first"),
        ])
        .send()
        .await
        .unwrap();
    let body = assert_problem(res, 401, "lti_platform_error").await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("Sign in to the LMS first")
    );
}

async fn assert_problem_named(
    res: reqwest::Response,
    status: u16,
    code: &str,
    name: &str,
) -> Value {
    let actual = res.status().as_u16();
    let ct = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let text = res.text().await.unwrap();
    assert_eq!(actual, status, "{name}: {text}");
    assert!(ct.starts_with("application/problem+json"), "{name}: {ct}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["code"], code, "{name}: {body}");
    body
}

fn cookie_of(res: &reqwest::Response) -> String {
    cookie(res).expect("a state cookie")
}

fn query_param(url: &str, name: &str) -> String {
    reqwest::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.to_string())
        .unwrap_or_else(|| panic!("no {name} in {url}"))
}

/// A launch up to the platform's form, without posting it: (id_token, state, cookie).
async fn run_launch_until_form(lti: &Lti, scenario: &Value) -> (String, String, String) {
    let p = &lti.platform;
    let hint = p.scenario(scenario).await;
    let res = p
        .client
        .get(p.url(&format!("/initiate?hint={hint}")))
        .send()
        .await
        .unwrap();
    let res = p.client.get(location(&res)).send().await.unwrap();
    let cookie = cookie_of(&res);
    let page = expect_html(p.client.get(location(&res)).send().await.unwrap(), 200).await;
    (
        attr(&page, "id_token").to_string(),
        attr(&page, "state").to_string(),
        cookie,
    )
}

#[tokio::test]
async fn a_rotated_platform_key_is_fetched_on_its_first_use_and_a_withdrawn_one_expires() {
    let lti = setup().await;
    launch_session(&lti, &learner("before-rotation")).await;
    // quizd refetches the platform's keys for an unknown kid, at most every few seconds.
    tokio::time::sleep(Duration::from_millis(
        quizd::lti::registrations::JWKS_REFETCH_SECS as u64 * 1000 + 200,
    ))
    .await;
    lti.platform.control(json!({"rotate_key": true})).await;
    launch_session(&lti, &learner("after-rotation")).await;

    // The platform withdraws its old key. quizd's cached copy of the key set still has it
    // until the cache is older than its maximum age; then it is fetched again, and the
    // withdrawn key is refused.
    lti.platform
        .control(json!({"withdraw_previous_keys": true}))
        .await;
    let mut old_key = learner("old-key");
    old_key["tamper"] = json!({"sign": "withdrawn_key"});
    launch_session(&lti, &old_key).await;
    sqlx::query("UPDATE lti_registrations SET jwks_fetched_at = now() - make_interval(secs => $1)")
        .bind(quizd::lti::registrations::JWKS_MAX_AGE_SECS as f64 + 1.0)
        .execute(&lti.app.pool)
        .await
        .unwrap();
    let flow = run_launch(&lti, &old_key).await;
    assert_problem(flow.response, 401, "lti_unknown_key").await;
    launch_session(&lti, &learner("current-key")).await;
}

/// `who` answers the Deep Linking request `deep_link` with these items.
async fn answer_deep_link(who: &Session<'_>, deep_link: &str, items: Value) -> Reply {
    let body = json!({"deep_link_id": deep_link, "items": items});
    who.post("/v1/lti/deep-link", &body).await
}

#[tokio::test]
async fn deep_linking_places_a_quiz_whose_grades_reach_its_line_item() {
    let lti = setup().await;
    let mut dl = instructor("teacher-dl");
    dl["message_type"] = json!("deep_linking");
    dl["dl_data"] = json!("opaque-7");
    dl.as_object_mut().unwrap().remove("resource_link");
    dl.as_object_mut().unwrap().remove("custom");
    let session = launch_session(&lti, &dl).await;
    assert_eq!(session["destination"]["kind"], "deep_link");
    let teacher = lti.signed_in(&session);
    let deep_link = session["destination"]["deep_link_id"]
        .as_str()
        .unwrap()
        .to_string();

    // One item only unless the platform accepts several (this one does), and real quizzes.
    let no_such_quiz = json!([{"quiz": "no-such-quiz"}]);
    answer_deep_link(&teacher, &deep_link, no_such_quiz)
        .await
        .problem(422, "quiz_not_found")
        .await;
    // Only the instructor who launched it may answer it.
    let other = lti.app.person("other@lti.example", "instructor").await;
    let sampler = json!([{"quiz": "kinds-sampler"}]);
    answer_deep_link(&other, &deep_link, sampler.clone())
        .await
        .problem(404, "deep_link_not_found")
        .await;

    let titled = json!([{"quiz": "kinds-sampler", "title": "Question kinds"}]);
    let answer = answer_deep_link(&teacher, &deep_link, titled)
        .await
        .status(200)
        .await;
    let return_url = answer["return_url"].as_str().unwrap();
    assert_eq!(return_url, lti.platform.url("/deep_link_return"));
    // Answered once only.
    answer_deep_link(&teacher, &deep_link, sampler)
        .await
        .problem(409, "deep_link_closed")
        .await;

    // The browser posts the signed response to the platform, which verifies it with quizd's keys.
    let res = lti
        .platform
        .client
        .post(return_url)
        .form(&[("JWT", answer["jwt"].as_str().unwrap())])
        .send()
        .await
        .unwrap();
    expect_status(res, 200).await;
    let rec = lti.platform.recorded().await;
    let response = &rec["deep_link_responses"][0];
    assert_eq!(response["data"], "opaque-7");
    let item = &response["items"][0];
    assert_eq!(item["type"], "ltiResourceLink");
    assert_eq!(item["title"], "Question kinds");
    assert_eq!(item["url"], lti.app.url("/v1/lti/launch"));
    assert_eq!(item["custom"]["quiz"], "kinds-sampler");
    assert_eq!(item["lineItem"]["resourceId"], "kinds-sampler");
    assert!(item["lineItem"]["scoreMaximum"].as_f64().unwrap() > 0.0);
    let jwks = lti
        .app
        .anonymous()
        .get("/.well-known/jwks.json")
        .await
        .status(200)
        .await;
    assert_eq!(response["kid"], jwks["keys"][0]["kid"]);

    // A learner launches the placed link; the grade reaches the line item the platform made.
    let lineitem = item["lineitem_url"].as_str().unwrap();
    let mut s = learner("learner-dl");
    s["resource_link"] = json!({"id": "rl-from-dl", "title": item["title"]});
    s["custom"] = item["custom"].clone();
    s["lineitem"] = json!(lineitem);
    s["target_link_uri"] = item["url"].clone();
    let session = launch_session(&lti, &s).await;
    let assignment = session["destination"]["assignment_id"].as_str().unwrap();
    let finished = take_quiz(&lti.signed_in(&session), assignment).await;
    let scores = lti.platform.scores(1).await;
    assert_eq!(scores[0]["lineitem"], lineitem.rsplit('/').next().unwrap());
    assert_eq!(scores[0]["userId"], "learner-dl");
    assert_eq!(
        scores[0]["scoreMaximum"].as_f64().unwrap(),
        finished["result"]["max_score"].as_f64().unwrap()
    );

    // With Accept: text/html the answer is a page that posts itself to the platform.
    let session = launch_session(&lti, &dl).await;
    let res = lti
        .signed_in(&session)
        .request(reqwest::Method::POST, "/v1/lti/deep-link")
        .header("accept", "text/html")
        .json(&json!({"deep_link_id": session["destination"]["deep_link_id"], "items": []}))
        .send()
        .await
        .unwrap();
    let csp = res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains(&format!("frame-ancestors {}", lti.platform.base)),
        "{csp}"
    );
    let page = expect_html(res, 200).await;
    assert_eq!(form_action(&page), lti.platform.url("/deep_link_return"));
    assert!(attr(&page, "JWT").split('.').count() == 3);

    // Deep Linking is for those who teach.
    let mut dl_learner = dl.clone();
    dl_learner["roles"] = json!([LEARNER]);
    let flow = run_launch(&lti, &dl_learner).await;
    assert_problem(flow.response, 403, "lti_forbidden_role").await;
}

#[tokio::test]
async fn the_content_picker_reads_its_request_and_returns_only_the_response_quizd_signed() {
    let lti = setup().await;
    let mut dl = instructor("teacher-picker");
    dl["message_type"] = json!("deep_linking");
    dl.as_object_mut().unwrap().remove("resource_link");
    dl.as_object_mut().unwrap().remove("custom");
    let session = launch_session(&lti, &dl).await;
    let teacher = lti.signed_in(&session);
    let id = session["destination"]["deep_link_id"]
        .as_str()
        .unwrap()
        .to_string();
    let request = format!("/v1/lti/deep-link/{id}");

    // The picker reads what the platform accepts; nobody else reads the request.
    let view = teacher.get(&request).await.status(200).await;
    assert_eq!(view["accept_multiple"], true);
    assert_eq!(view["answered"], false);
    let other = lti
        .app
        .person("picker-other@lti.example", "instructor")
        .await;
    other
        .get(&request)
        .await
        .problem(404, "deep_link_not_found")
        .await;
    // The catalogue gives each quiz's points, the line item's maximum.
    let quiz = teacher.get("/v1/quizzes").await.status(200).await["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["slug"] == "kinds-sampler")
        .cloned()
        .unwrap();
    let max_points = quiz["max_points"].as_f64().unwrap();
    assert!(max_points > 0.0);

    let relay = |jwt: String| {
        let url = lti.app.url(&format!("/v1/lti/deep-link/{id}/return"));
        async move {
            reqwest::Client::new()
                .post(url)
                .form(&[("JWT", jwt)])
                .send()
                .await
                .unwrap()
        }
    };
    // Before it is answered, the return page forwards nothing.
    assert_problem(relay("a.b.c".into()).await, 404, "deep_link_not_found").await;
    let both = json!([{"quiz": "kinds-sampler"}, {"quiz": "data-parallelism"}]);
    let answer = answer_deep_link(&teacher, &id, both)
        .await
        .status(200)
        .await;
    let view = teacher.get(&request).await.status(200).await;
    assert_eq!(view["answered"], true);
    // Any other token, even one quizd signed for another request, is refused.
    let jwt = answer["jwt"].as_str().unwrap().to_string();
    let forged = format!("{jwt}x");
    assert_problem(relay(forged).await, 404, "deep_link_not_found").await;
    // The response itself: a page that posts it to the return URL, with a strict policy.
    let res = relay(jwt.clone()).await;
    let csp = res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert!(csp.contains("script-src 'sha256-"), "{csp}");
    let page = expect_html(res, 200).await;
    assert_eq!(form_action(&page), lti.platform.url("/deep_link_return"));
    assert_eq!(attr(&page, "JWT"), jwt);
    // The platform takes it: both quizzes, the line item with the catalogue's points.
    let res = lti
        .platform
        .client
        .post(form_action(&page))
        .form(&[("JWT", attr(&page, "JWT"))])
        .send()
        .await
        .unwrap();
    expect_status(res, 200).await;
    let rec = lti.platform.recorded().await;
    let items = rec["deep_link_responses"][0]["items"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["custom"]["quiz"], "kinds-sampler");
    assert_eq!(
        items[0]["lineItem"]["scoreMaximum"].as_f64().unwrap(),
        max_points
    );
}

/// The data block of a page of the platform-storage flow.
fn storage_data(page: &str) -> Value {
    let needle = "id=\"lti-storage\">";
    let start = page.find(needle).unwrap() + needle.len();
    let end = page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..start + end]).unwrap()
}

/// A login started with `lti_storage_target`, through the platform's authorization endpoint:
/// quizd's login page, and the id_token and state the platform posts to the launch.
async fn storage_login(lti: &Lti, sub: &str) -> (String, String, Value) {
    let mut s = learner(sub);
    s["storage_target"] = json!("lti_storage");
    let flow = run_launch(lti, &s).await;
    // The state cookie is set too, for where it comes back (a window of its own).
    assert!(cookie(&flow.response).is_some(), "the state cookie");
    let csp = flow.response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    let page = expect_html(flow.response, 200).await;
    let data = storage_data(&page);
    assert_eq!(data["step"], "login");
    assert_eq!(data["target"], "lti_storage");
    assert_eq!(data["origin"], lti.platform.base);
    for part in [
        "script-src 'self'",
        "form-action 'self'",
        "default-src 'none'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert!(!page.contains("<script>"), "no inline script: {page}");
    let auth = data["next"].as_str().unwrap();
    assert!(auth.starts_with(&lti.platform.url("/auth?")), "{auth}");
    let form = expect_html(lti.platform.client.get(auth).send().await.unwrap(), 200).await;
    let (id_token, state) = (
        attr(&form, "id_token").to_string(),
        attr(&form, "state").to_string(),
    );
    assert_eq!(state, data["state"]);
    (id_token, state, data)
}

async fn post_storage_launch(
    lti: &Lti,
    id_token: &str,
    state: &str,
    secret: Option<&str>,
) -> reqwest::Response {
    let mut form = vec![("id_token", id_token), ("state", state)];
    if let Some(s) = secret {
        form.push(("lti_storage_secret", s));
    }
    lti.platform
        .client
        .post(lti.app.url("/v1/lti/launch"))
        .form(&form)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_login_kept_in_the_platforms_storage_is_proved_by_its_secret_not_a_cookie() {
    let lti = setup().await;
    let (id_token, state, data) = storage_login(&lti, "learner-storage").await;
    let secret = data["secret"].as_str().unwrap();

    // The platform's post gets the page that reads the secret back; nothing is used up.
    let res = post_storage_launch(&lti, &id_token, &state, None).await;
    let page = expect_html(res, 200).await;
    assert_eq!(storage_data(&page)["step"], "launch");
    assert_eq!(attr(&page, "state"), state);
    let res = post_storage_launch(&lti, &id_token, &state, None).await;
    expect_html(res, 200).await;

    // The secret from the platform's storage: accepted, no cookie, the fragment says where the
    // front-end reads it back.
    let res = post_storage_launch(&lti, &id_token, &state, Some(secret)).await;
    assert_eq!(res.status(), 303);
    assert!(
        res.headers().get("set-cookie").is_none(),
        "no cookie with the platform's storage"
    );
    let to = location(&res);
    let code = to
        .split("#/lti/")
        .nth(1)
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_string();
    assert!(to.contains("lti_storage_target=lti_storage"), "{to}");
    // The state is used up: the same launch again is refused.
    let res = post_storage_launch(&lti, &id_token, &state, Some(secret)).await;
    assert_problem(res, 401, "lti_state_invalid").await;
    // The exchange: without the secret nothing is used up; with it, signed in.
    let browser = lti.app.anonymous();
    browser
        .post("/v1/lti/exchange", &json!({"code": code}))
        .await
        .problem(401, "launch_browser_mismatch")
        .await;
    let session = browser
        .post(
            "/v1/lti/exchange",
            &json!({"code": code, "storage_secret": secret}),
        )
        .await
        .status(200)
        .await;
    assert_eq!(session["destination"]["kind"], "attempt");

    // Where the state cookie comes back, the launch goes on at once, with the exchange cookie.
    let mut s = learner("learner-storage-cookie");
    s["storage_target"] = json!("_parent");
    let flow = run_launch(&lti, &s).await;
    let state_cookie = cookie(&flow.response).unwrap();
    let page = expect_html(flow.response, 200).await;
    let auth = storage_data(&page)["next"].as_str().unwrap().to_string();
    let form = expect_html(lti.platform.client.get(auth).send().await.unwrap(), 200).await;
    let res = post_launch(
        &lti,
        attr(&form, "id_token"),
        attr(&form, "state"),
        Some(&state_cookie),
    )
    .await;
    let (code, exchange_cookie) = launched(&res);
    expect_status(exchange(&lti, &code, Some(&exchange_cookie)).await, 200).await;

    // Another secret (a forged form, another browser's) is refused, and the state is spent.
    let (id_token, state, _) = storage_login(&lti, "learner-storage-2").await;
    let res = post_storage_launch(&lti, &id_token, &state, Some(&"0".repeat(64))).await;
    assert_problem(res, 401, "lti_state_mismatch").await;
    // A cookie login's state is not proved by a storage secret either (its cookie is missing).
    let (id_token, state, _cookie) = run_launch_until_form(&lti, &learner("learner-cookie")).await;
    let res = post_storage_launch(&lti, &id_token, &state, Some(&"0".repeat(64))).await;
    assert_problem(res, 401, "lti_state_mismatch").await;
}

#[tokio::test]
async fn a_failed_delivery_is_visible_to_admins_and_retried() {
    let lti = setup().await;
    lti.platform.control(json!({"fail_scores": 1})).await;
    let session = launch_session(&lti, &learner("learner-retry")).await;
    let learner_1 = lti.signed_in(&session);
    let assignment = session["destination"]["assignment_id"].as_str().unwrap();
    take_quiz(&learner_1, assignment).await;
    let admin = lti.admin();
    let failed = first_delivery(&admin, "failed").await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["tries"], 1);
    assert!(
        failed["last_error"].as_str().unwrap().contains("500"),
        "{failed}"
    );
    assert!(failed["next_attempt_at"].is_string());
    // Learners and instructors do not see deliveries.
    learner_1
        .get("/v1/lti/deliveries")
        .await
        .problem(403, "forbidden")
        .await;

    let id = failed["id"].as_i64().unwrap();
    let retry = format!("/v1/lti/deliveries/{id}/retry");
    admin.post(&retry, &json!({})).await.status(202).await;
    let scores = lti.platform.scores(1).await;
    assert_eq!(scores[0]["userId"], "learner-retry");
    let delivered = first_delivery(&admin, "delivered").await;
    assert_eq!(delivered["id"], id);
    admin
        .post(&retry, &json!({}))
        .await
        .problem(409, "delivery_done")
        .await;
}

/// The first of the grade deliveries with this status, as an admin lists them, once there is
/// one.
async fn first_delivery(admin: &Session<'_>, status: &str) -> Value {
    let path = &format!("/v1/lti/deliveries?status={status}");
    let list = wait_until(
        &format!("a {status} delivery"),
        || async move { admin.get(path).await.status(200).await },
        |list| !list["items"].as_array().unwrap().is_empty(),
    )
    .await;
    list["items"][0].clone()
}

#[tokio::test]
async fn a_line_item_is_created_when_the_platform_gives_only_the_container() {
    let lti = setup().await;
    let mut s = learner("learner-container");
    s["ags"] = json!("container");
    s["resource_link"] = json!({"id": "rl-container", "title": "Container quiz"});
    let session = launch_session(&lti, &s).await;
    let assignment = session["destination"]["assignment_id"].as_str().unwrap();
    take_quiz(&lti.signed_in(&session), assignment).await;
    let scores = lti.platform.scores(1).await;
    let rec = lti.platform.recorded().await;
    let item = &rec["lineitems"][scores[0]["lineitem"].as_str().unwrap()];
    assert_eq!(item["resourceLinkId"], "rl-container");
    assert_eq!(item["label"], "Container quiz");
}

#[tokio::test]
async fn the_roster_from_the_lms_shows_who_has_not_started() {
    let lti = setup().await;
    let teacher = launch_session(&lti, &instructor("teacher-nrps")).await;
    let course = teacher["destination"]["course_id"]
        .as_str()
        .unwrap()
        .to_string();
    let assignment = teacher["destination"]["assignment_id"]
        .as_str()
        .unwrap()
        .to_string();
    let started = launch_session(&lti, &learner("learner-a")).await;
    let learner_a = lti.signed_in(&started);
    let path = format!("/v1/assignments/{assignment}/attempts");
    learner_a.post(&path, &json!({})).await.status(201).await;
    lti.platform
        .control(json!({"roster": {"ctx-1": [
            {"user_id": "teacher-nrps", "roles": [INSTRUCTOR], "name": "Teacher teacher-nrps"},
            {"user_id": "learner-a", "roles": [LEARNER], "name": "Learner learner-a"},
            {"user_id": "learner-b", "roles": [LEARNER], "name": "Bea Never-Launched"},
            {"user_id": "learner-c", "roles": [LEARNER], "name": "Cy Dropped", "status": "Inactive"},
        ]}}))
        .await;
    let teacher_nrps = lti.signed_in(&teacher);
    let roster = teacher_nrps
        .get(&format!(
            "/v1/lti/courses/{course}/roster?assignment={assignment}"
        ))
        .await
        .status(200)
        .await;
    let members = roster["members"].as_array().unwrap();
    assert_eq!(members.len(), 4);
    let b = members
        .iter()
        .find(|m| m["lti_user_id"] == "learner-b")
        .unwrap();
    assert_eq!(b["display_name"], "Bea Never-Launched");
    assert_eq!(b["attempts_started"], 0);
    let a = members
        .iter()
        .find(|m| m["lti_user_id"] == "learner-a")
        .unwrap();
    assert_eq!(a["attempts_started"], 1);
    assert_eq!(a["user_id"], started["user_id"]);
    assert_eq!(roster["not_started"], json!([b["user_id"]]));
    // The never-launched learner is now enrolled; the inactive one is not.
    let enrolled = teacher_nrps
        .get(&format!("/v1/courses/{course}/enrollments"))
        .await
        .status(200)
        .await;
    let names: Vec<&str> = enrolled["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["display_name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"Bea Never-Launched"), "{names:?}");
    assert!(!names.contains(&"Cy Dropped"), "{names:?}");
    // Learners may not.
    learner_a
        .get(&format!("/v1/lti/courses/{course}/roster"))
        .await
        .problem(403, "forbidden")
        .await;
}

#[tokio::test]
async fn registrations_and_keys_are_for_admins_and_keys_rotate() {
    let lti = setup().await;
    let app = &lti.app;
    let admin = lti.admin();
    let someone = app.person("learner@lti.example", "learner").await;
    someone
        .get("/v1/lti/registrations")
        .await
        .problem(403, "forbidden")
        .await;
    app.anonymous()
        .get("/v1/lti/registrations")
        .await
        .problem(401, "unauthorized")
        .await;

    // The same issuer and client id twice; invalid fields.
    let mut again = lti.registration.clone();
    let obj = again.as_object_mut().unwrap();
    for k in [
        "id",
        "created_at",
        "updated_at",
        "tool",
        "jwks",
        "jwks_fetched_at",
        "token_audience",
    ] {
        obj.remove(k);
    }
    let registrations = "/v1/lti/registrations";
    admin
        .post(registrations, &again)
        .await
        .problem(409, "registration_exists")
        .await;
    let mut bad = again.clone();
    bad["client_id"] = json!("other");
    bad["auth_endpoint"] = json!("http://lms.example/auth");
    admin
        .post(registrations, &bad)
        .await
        .problem(422, "invalid_registration")
        .await;
    bad["auth_endpoint"] = json!("https://lms.example/auth");
    bad["deployment_ids"] = json!([]);
    admin
        .post(registrations, &bad)
        .await
        .problem(422, "invalid_registration")
        .await;
    bad["deployment_ids"] = json!(["d"]);
    bad["jwks"] = json!({"keys": [{"kty": "EC", "kid": "k"}]});
    admin
        .post(registrations, &bad)
        .await
        .problem(422, "invalid_registration")
        .await;
    bad.as_object_mut().unwrap().remove("jwks_url");
    admin
        .post(registrations, &bad)
        .await
        .problem(422, "invalid_registration")
        .await;

    let id = lti.registration["id"].as_str().unwrap();
    let registration = format!("/v1/lti/registrations/{id}");
    let changed = admin
        .patch(
            &registration,
            &json!({"deployment_ids": ["deployment-1", "deployment-2"]}),
        )
        .await
        .status(200)
        .await;
    assert_eq!(
        changed["deployment_ids"],
        json!(["deployment-1", "deployment-2"])
    );
    let list = admin.get(registrations).await.status(200).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);

    // quizd's keys: one signs; rotation keeps the previous one published.
    let jwks = app
        .anonymous()
        .get("/.well-known/jwks.json")
        .await
        .status(200)
        .await;
    let keys = jwks["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0]["kty"], "RSA");
    assert_eq!(keys[0]["alg"], "RS256");
    assert_eq!(keys[0]["use"], "sig");
    let first = keys[0]["kid"].as_str().unwrap().to_string();
    let rotated = admin
        .post("/v1/lti/keys/rotate", &json!({}))
        .await
        .status(201)
        .await;
    let second = rotated["kid"].as_str().unwrap();
    assert_ne!(second, first);
    let jwks = app.anonymous().get("/v1/lti/jwks").await.status(200).await;
    let kids: Vec<&str> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap())
        .collect();
    assert_eq!(kids, vec![second, first.as_str()]);
    let list = admin.get("/v1/lti/keys").await.status(200).await;
    assert!(list["items"][0]["retired_at"].is_null());
    assert!(list["items"][1]["retired_at"].is_string());
    someone
        .post("/v1/lti/keys/rotate", &json!({}))
        .await
        .problem(403, "forbidden")
        .await;

    // The platform takes client assertions signed with the new key.
    let session = launch_session(&lti, &learner("after-key-rotation")).await;
    take_quiz(
        &lti.signed_in(&session),
        session["destination"]["assignment_id"].as_str().unwrap(),
    )
    .await;
    lti.platform.scores(1).await;

    admin.delete(&registration).await.status(204).await;
    let flow = run_launch(&lti, &learner("after-removal")).await;
    assert_problem(flow.response, 422, "lti_unknown_registration").await;
}

#[tokio::test]
async fn the_command_line_registers_platforms_and_rotates_keys() {
    let app = TestApp::spawn_empty().await;
    let quizd = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_quizd"))
            .args(args)
            .env("DATABASE_URL", app.db_url())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let (ok, out) = quizd(&[
        "lti",
        "register",
        "--issuer",
        "https://moodle.example.edu",
        "--client-id",
        "abc123",
        "--deployment-id",
        "1",
        "--deployment-id",
        "2",
        "--auth-endpoint",
        "https://moodle.example.edu/mod/lti/auth.php",
        "--token-endpoint",
        "https://moodle.example.edu/mod/lti/token.php",
        "--jwks-url",
        "https://moodle.example.edu/mod/lti/certs.php",
    ]);
    assert!(ok, "{out}");
    assert!(out.contains("/v1/lti/login"), "{out}");
    let (ok, out) = quizd(&["lti", "list"]);
    assert!(
        ok && out.contains("client_id=abc123 deployments=1,2"),
        "{out}"
    );
    let (ok, out) = quizd(&[
        "lti",
        "register",
        "--issuer",
        "http://moodle.example.edu",
        "--client-id",
        "x",
        "--deployment-id",
        "1",
        "--auth-endpoint",
        "https://a.example",
        "--token-endpoint",
        "https://a.example",
        "--jwks-url",
        "https://a.example",
    ]);
    assert!(!ok && out.contains("https"), "{out}");
    let (ok, _) = quizd(&["lti", "keys"]);
    assert!(ok);
    let (ok, out) = quizd(&["lti", "rotate-key"]);
    assert!(ok, "{out}");
    let (ok, out) = quizd(&["lti", "keys"]);
    assert!(
        ok && out.contains("signing") && out.contains("retired"),
        "{out}"
    );
}

#[tokio::test]
async fn a_launch_code_is_traded_only_in_the_browser_the_launch_redirected() {
    let lti = setup().await;
    let a = run_launch(&lti, &learner("browser-a")).await;
    let (code_a, cookie_a) = launched(&a.response);
    // HttpOnly, for the exchange only, as long as the code lives; over plain http on loopback
    // SameSite=Lax, as the state cookie (SameSite=None; Secure; Partitioned over https).
    let (_, line) = code_cookie(&a.response);
    for part in [
        "HttpOnly",
        "Path=/v1/lti/exchange",
        "Max-Age=60",
        "SameSite=Lax",
    ] {
        assert!(line.contains(part), "{line}");
    }

    // A link with the code, opened in another browser: no cookie. Refused, and the code is
    // not used up by it.
    let res = exchange(&lti, &code_a, None).await;
    assert_problem(res, 401, "launch_browser_mismatch").await;
    // A browser with a launch of its own sends that launch's cookie, which is not this code's.
    let b = run_launch(&lti, &learner("browser-b")).await;
    let (code_b, cookie_b) = launched(&b.response);
    let res = exchange(&lti, &code_a, Some(&cookie_b)).await;
    assert_problem(res, 401, "launch_browser_mismatch").await;
    // The other launch's secret under this code's cookie name: refused, and the code, tried
    // with a cookie, is used up.
    let name_a = cookie_a.split('=').next().unwrap();
    let value_b = cookie_b.split_once('=').unwrap().1;
    let forged = format!("{name_a}={value_b}");
    let res = exchange(&lti, &code_a, Some(&forged)).await;
    assert_problem(res, 401, "launch_browser_mismatch").await;
    let res = exchange(&lti, &code_a, Some(&cookie_a)).await;
    assert_problem(res, 401, "lti_code_invalid").await;

    // The browser that launched: signed in, and the cookie cleared.
    let res = exchange(&lti, &code_b, Some(&cookie_b)).await;
    let cleared = code_cookie(&res).1;
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    let session = expect_status(res, 200).await;
    let me = lti
        .signed_in(&session)
        .get("/v1/me")
        .await
        .status(200)
        .await;
    assert_eq!(me["display_name"], "Learner browser-b");
    // Once.
    let res = exchange(&lti, &code_b, Some(&cookie_b)).await;
    assert_problem(res, 401, "lti_code_invalid").await;
}

#[tokio::test]
async fn a_launch_code_expires_after_a_minute_by_the_servers_clock() {
    let clock = quizd::clock::Clock::manual(chrono::Utc::now());
    let lti = setup_on(TestApp::spawn_with_clock(clock.clone()).await).await;
    let flow = run_launch(&lti, &learner("slow-1")).await;
    let (code, cookie) = launched(&flow.response);
    clock.advance(chrono::Duration::seconds(59));
    expect_status(exchange(&lti, &code, Some(&cookie)).await, 200).await;

    let flow = run_launch(&lti, &learner("slow-2")).await;
    let (code, cookie) = launched(&flow.response);
    clock.advance(chrono::Duration::seconds(60));
    let res = exchange(&lti, &code, Some(&cookie)).await;
    assert_problem(res, 401, "lti_code_invalid").await;
}

/// A learner's launch whose AGS or NRPS claim the platform signed with these URLs.
fn launch_naming_services(sub: &str, ags: Option<Value>, nrps: Option<&str>) -> Value {
    let mut s = learner(sub);
    s["resource_link"] = json!({"id": format!("rl-{sub}"), "title": "Services"});
    let mut set = serde_json::Map::new();
    if let Some(ags) = ags {
        let mut claim = json!({"scope": [
            "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
            "https://purl.imsglobal.org/spec/lti-ags/scope/score",
        ]});
        for (k, v) in ags.as_object().unwrap() {
            claim[k] = v.clone();
        }
        set.insert(quizd::lti::claim::AGS_ENDPOINT.into(), claim);
    }
    if let Some(url) = nrps {
        set.insert(
            quizd::lti::claim::NRPS.into(),
            json!({"context_memberships_url": url, "service_versions": ["2.0"]}),
        );
    }
    s["tamper"] = json!({ "set": set });
    s
}

#[tokio::test]
async fn a_launch_naming_service_urls_off_the_platform_is_refused() {
    let lti = setup().await;
    let base = lti.platform.base.clone();
    let cases = [
        (
            "plain http to a host in quizd's network",
            launch_naming_services(
                "svc-1",
                Some(json!({"lineitems": "http://10.0.0.5/lineitems"})),
                None,
            ),
            quizd::lti::claim::AGS_ENDPOINT,
        ),
        (
            "https line item on a foreign host",
            launch_naming_services(
                "svc-2",
                Some(json!({
                    "lineitems": format!("{base}/lineitems"),
                    "lineitem": "https://grades.evil.example/lineitems/1",
                })),
                None,
            ),
            quizd::lti::claim::AGS_ENDPOINT,
        ),
        (
            "https roster on a foreign host",
            launch_naming_services(
                "svc-3",
                None,
                Some("https://roster.evil.example/nrps/ctx-1"),
            ),
            quizd::lti::claim::NRPS,
        ),
        (
            "plain http roster on a non-loopback host",
            launch_naming_services("svc-4", None, Some("http://lms.example/nrps/ctx-1")),
            quizd::lti::claim::NRPS,
        ),
    ];
    for (name, scenario, claim) in &cases {
        let flow = run_launch(&lti, scenario).await;
        let body = assert_problem_named(flow.response, 400, "lti_service_url_refused", name).await;
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.contains(claim), "{name}: {detail}");
    }
    let made: i64 = sqlx::query_scalar("SELECT count(*) FROM users WHERE ext_issuer IS NOT NULL")
        .fetch_one(&lti.app.pool)
        .await
        .unwrap();
    assert_eq!(made, 0, "nothing of a refused launch is made");

    // The platform's own host (its endpoints') is fine, and so is a host its registration
    // lists for its services.
    let ok = launch_naming_services(
        "svc-5",
        Some(json!({"lineitems": format!("{base}/lineitems")})),
        Some(&format!("{base}/nrps/ctx-1")),
    );
    launch_code(&run_launch(&lti, &ok).await.response);
    let id = lti.registration["id"].as_str().unwrap();
    let registration = format!("/v1/lti/registrations/{id}");
    let admin = lti.admin();
    let reg = admin
        .patch(
            &registration,
            &json!({"service_hosts": ["grades.lms.example"]}),
        )
        .await
        .status(200)
        .await;
    assert_eq!(reg["service_hosts"], json!(["grades.lms.example"]));
    let listed = launch_naming_services(
        "svc-6",
        Some(json!({"lineitem": "https://grades.lms.example/lineitems/7"})),
        None,
    );
    launch_code(&run_launch(&lti, &listed).await.response);
    // Hosts are names, not URLs.
    admin
        .patch(
            &registration,
            &json!({"service_hosts": ["https://grades.lms.example/"]}),
        )
        .await
        .problem(422, "invalid_registration")
        .await;
}

#[tokio::test]
async fn an_archived_course_takes_no_launch_and_no_roster_sync() {
    let lti = setup().await;
    let session = launch_session(&lti, &instructor("teacher-1")).await;
    let teacher = lti.signed_in(&session);
    let course = session["destination"]["course_id"].as_str().unwrap();
    teacher
        .patch(&format!("/v1/courses/{course}"), &json!({"archived": true}))
        .await
        .status(200)
        .await;
    let flow = run_launch(&lti, &learner("student-1")).await;
    assert_problem(flow.response, 409, "course_archived").await;
    let enrolled: i64 = sqlx::query_scalar("SELECT count(*) FROM enrollments WHERE course_id = $1")
        .bind(uuid::Uuid::parse_str(course).unwrap())
        .fetch_one(&lti.app.pool)
        .await
        .unwrap();
    assert_eq!(enrolled, 1, "only the instructor, as before");
    teacher
        .get(&format!("/v1/lti/courses/{course}/roster"))
        .await
        .problem(409, "course_archived")
        .await;
}
