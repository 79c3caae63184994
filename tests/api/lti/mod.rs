//! LTI 1.3 against an independent platform: `tests/lti/lti_platform.py`, built on the PyPI
//! package `lti1p3platform`, plays the LMS on loopback (its keys, OIDC authorization endpoint,
//! token endpoint, AGS line items and scores, NRPS, Deep Linking return). The test plays the
//! browser: it follows the redirects and posts the forms, carrying quizd's cookie.
//!
//! The platform runs in `target/lti-venv`, which the first LTI test makes (pip, from the
//! pinned `tests/lti/requirements.txt`) when it is missing, so `cargo test` needs no setup.
//!
//! Here: the platform, quizd with the platform registered ([`setup`]) and the browser's steps of
//! a launch. By topic: [`launch`] (the way in and the one-time code), [`refused`] (launches
//! refused and why), [`registration`] (registrations and both sides' keys), [`deep_linking`],
//! [`storage`] (a login kept in the platform's storage), [`framed`] (a launch refused inside the
//! LMS's frame: a page, not a problem), [`ags`] (grade passback), [`nrps`] (the roster).

mod ags;
mod deep_linking;
mod framed;
mod launch;
mod nrps;
mod refused;
mod registration;
mod storage;

use std::ffi::OsStr;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::peer::PythonPeer;
use crate::support::session::Session;
use crate::support::{Person, TestApp, expect_status, wait_until};

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
        Self::spawn_on(tool, 0)
    }

    /// The platform on `port` (`0`: any free port).
    fn spawn_on(tool: &str, port: u16) -> Platform {
        let port = port.to_string();
        let peer = PythonPeer::start(
            "the LTI platform",
            "lti-venv",
            "tests/lti/requirements.txt",
            "tests/lti/lti_platform.py",
            &[
                OsStr::new("--tool"),
                OsStr::new(tool),
                OsStr::new("--port"),
                OsStr::new(&port),
            ],
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
    register(app, platform).await
}

/// quizd started as `--frame-ancestor <the platform's origin>` says (the LMS's pages may frame
/// it), with `configure`'s settings too, and the platform registered.
pub(crate) async fn setup_framed(
    configure: impl FnOnce(&mut quizd::state::AppState) + Send + 'static,
) -> Lti {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let origin = format!("http://127.0.0.1:{port}");
    let app = TestApp::spawn_configured(move |s| {
        s.frame_ancestors = quizd::frontend::frame_ancestors(&[origin]);
        configure(s);
    })
    .await;
    let platform = Platform::spawn_on(&app.base, port);
    register(app, platform).await
}

async fn register(app: TestApp, platform: Platform) -> Lti {
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
