//! The same start through LTI launches: no password, no hash. The LMS is the LTI test platform
//! (`tests/lti/lti_platform.py`, built on the independent `lti1p3platform` package), registered
//! in quizd like any platform. A class the LMS has never sent before opens the exam:
//!
//! - *prepared, not timed*: for each learner the platform's login initiation, quizd's OIDC
//!   login (its state cookie and nonce) and the platform's signed `id_token` — what a browser
//!   holds the moment it posts the launch (the platform is Python and signs each token with
//!   RSA; timing it would measure the LMS);
//! - *timed, all at once*: the launch post (quizd checks the signature against the platform's
//!   keys, provisions the person and their enrolment, and hands out a one-time code), the
//!   exchange of that code for tokens, the start, the attempt's load and the first answer.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};

use super::{Cpu, STEP_HEADER, Step, call, status_mib};

const LEARNER: &str = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner";
const INSTRUCTOR: &str = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor";

/// The LTI test platform, stopped when dropped (it stops when its standard input closes).
pub struct Platform {
    child: Child,
    base: String,
}

impl Drop for Platform {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Platform {
    /// Starts the platform for the tool at `tool` with the Python of `target/lti-venv`
    /// (`bench/exam-start/run` makes it).
    pub fn spawn(tool: &str) -> anyhow::Result<Platform> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let python = root.join("target/lti-venv/bin/python");
        let mut child = Command::new(&python)
            .arg(root.join("tests/lti/lti_platform.py"))
            .args(["--tool", tool])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", python.display()))?;
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        BufReader::new(stdout).read_line(&mut line)?;
        let port = line
            .trim()
            .strip_prefix("READY ")
            .ok_or_else(|| anyhow::anyhow!("the LTI platform did not start (said {line:?})"))?;
        Ok(Platform {
            base: format!("http://127.0.0.1:{port}"),
            child,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

/// One step's time and status (0: no HTTP answer); `None`: not reached.
type Timed = Option<(Duration, u16)>;

/// A launch as the browser holds it just before posting it to quizd.
struct Prepared {
    id_token: String,
    state: String,
    cookie: String,
}

fn attr(html: &str, name: &str) -> Option<String> {
    let rest = &html[html.find(&format!("name=\"{name}\""))?..];
    let start = rest.find("value=\"")? + 7;
    let end = rest[start..].find('"')?;
    Some(rest[start..start + end].replace("&amp;", "&"))
}

fn location(res: &reqwest::Response) -> Option<String> {
    Some(res.headers().get("location")?.to_str().ok()?.to_string())
}

/// The `name=value` of the first cookie set whose name starts with `prefix`.
fn cookie(res: &reqwest::Response, prefix: &str) -> Option<String> {
    res.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(prefix))
        .and_then(|v| v.split(';').next())
        .map(str::to_string)
}

/// The platform's scenario for one person of the exam's context and resource link.
fn scenario(sub: &str, instructor: bool) -> Value {
    json!({
        "user": {"sub": sub, "name": format!("Exam {sub}")},
        "roles": [if instructor { INSTRUCTOR } else { LEARNER }],
        "context": {"id": "exam-ctx", "title": "Parallel Programming", "label": "CS-451"},
        "resource_link": {"id": "exam-rl", "title": "Midterm"},
        "custom": {"quiz": "data-parallelism"},
        "ags": "none",
    })
}

/// Initiation at the platform → quizd's login → the platform's auth endpoint: the signed form.
async fn prepare(
    client: &reqwest::Client,
    platform: &Platform,
    sub: &str,
    instructor: bool,
) -> anyhow::Result<Prepared> {
    let hint: Value = client
        .post(platform.url("/scenarios"))
        .json(&scenario(sub, instructor))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let hint = hint["hint"].as_str().unwrap_or_default();
    let res = client
        .get(platform.url(&format!("/initiate?hint={hint}")))
        .send()
        .await?;
    let login = location(&res).ok_or_else(|| anyhow::anyhow!("initiation: {}", res.status()))?;
    let res = client.get(login).send().await?;
    let cookie = cookie(&res, "quizd_lti_browser=")
        .ok_or_else(|| anyhow::anyhow!("quizd's login set no state cookie: {}", res.status()))?;
    let auth = location(&res).ok_or_else(|| anyhow::anyhow!("login: {}", res.status()))?;
    let page = client
        .get(auth)
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    Ok(Prepared {
        id_token: attr(&page, "id_token").ok_or_else(|| anyhow::anyhow!("no id_token: {page}"))?,
        state: attr(&page, "state").ok_or_else(|| anyhow::anyhow!("no state: {page}"))?,
        cookie,
    })
}

/// The timed part of one launch: the launch post and the exchange. The session's access token
/// and assignment, with each step's (time, status).
async fn launch(
    client: &reqwest::Client,
    base: &str,
    p: &Prepared,
) -> ((Duration, u16), Timed, Option<(String, String)>) {
    let t = Instant::now();
    let res = client
        .post(format!("{base}/v1/lti/launch"))
        .header("cookie", &p.cookie)
        .form(&[
            ("id_token", p.id_token.as_str()),
            ("state", p.state.as_str()),
        ])
        .send()
        .await;
    let Ok(res) = res else {
        return ((t.elapsed(), 0), None, None);
    };
    let launched = (t.elapsed(), res.status().as_u16());
    let code = location(&res).and_then(|l| l.strip_prefix("/#/lti/").map(str::to_string));
    let (Some(code), Some(code_cookie)) = (code, cookie(&res, "quizd_lti_code_")) else {
        return (launched, None, None);
    };
    let t = Instant::now();
    let res = client
        .post(format!("{base}/v1/lti/exchange"))
        .header("cookie", code_cookie)
        .json(&json!({ "code": code }))
        .send()
        .await;
    let Ok(res) = res else {
        return (launched, Some((t.elapsed(), 0)), None);
    };
    let status = res.status().as_u16();
    let session: Option<Value> = res.json().await.ok();
    let exchanged = (t.elapsed(), status);
    let session = session.and_then(|s| {
        Some((
            s["access_token"].as_str()?.to_string(),
            s["destination"]["assignment_id"].as_str()?.to_string(),
        ))
    });
    (launched, Some(exchanged), session)
}

/// Registers the platform with quizd, prepares `learners` launches, warms the resource link
/// with the instructor's launch, then times the class's launches; prints the phase's table.
pub async fn run(
    base: &str,
    admin_token: &str,
    learners: usize,
    concurrency: usize,
    quizd_pid: u32,
    postmaster: u32,
) -> anyhow::Result<()> {
    let platform = Platform::spawn(base)?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(concurrency)
        .timeout(Duration::from_secs(120))
        .build()?;
    let recorded: Value = client
        .get(platform.url("/recorded"))
        .send()
        .await?
        .json()
        .await?;
    let issuer = recorded["issuer"].as_str().unwrap_or_default();
    let res = client
        .post(format!("{base}/v1/lti/registrations"))
        .bearer_auth(admin_token)
        .json(&json!({
            "title": "The university's LMS",
            "issuer": issuer,
            "client_id": recorded["client_id"],
            "deployment_ids": [recorded["deployment_id"]],
            "auth_endpoint": format!("{issuer}/auth"),
            "token_endpoint": format!("{issuer}/token"),
            "jwks_url": format!("{issuer}/.well-known/jwks.json"),
        }))
        .send()
        .await?;
    anyhow::ensure!(res.status() == 201, "registration: {}", res.status());

    // The instructor opens the activity first: the course and the assignment exist, and
    // quizd has fetched the platform's keys.
    let teacher = prepare(&client, &platform, "exam-teacher", true).await?;
    let (_, _, session) = launch(&client, base, &teacher).await;
    anyhow::ensure!(session.is_some(), "the instructor's launch failed");

    let t = Instant::now();
    let prepared: Vec<Prepared> = futures_util::stream::iter(0..learners)
        .map(|i| {
            let (client, platform) = (&client, &platform);
            async move { prepare(client, platform, &format!("exam-learner-{i}"), false).await }
        })
        .buffered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<anyhow::Result<_>>()?;
    eprintln!(
        "prepared {learners} LTI launches in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let prepared = Arc::new(prepared);
    let base = Arc::new(base.to_string());
    let mut cpu = Cpu::start(quizd_pid, postmaster);
    let t = Instant::now();
    let results: Vec<[Timed; 5]> = futures_util::stream::iter(0..learners)
        .map(|i| {
            let (client, base, prepared) = (client.clone(), base.clone(), prepared.clone());
            async move {
                let mut timed: [Timed; 5] = [None; 5];
                let (launched, exchanged, session) = launch(&client, &base, &prepared[i]).await;
                (timed[0], timed[1]) = (Some(launched), exchanged);
                let Some((token, assignment)) = session else {
                    return timed;
                };
                let token = Some(token.as_str());
                let url = format!("{base}/v1/assignments/{assignment}/attempts");
                let body = json!({"locale": "bn"});
                let start = call(&client, reqwest::Method::POST, url, token, Some(&body)).await;
                timed[2] = Some((start.0, start.1));
                let Some(id) = start.2.as_ref().and_then(|a| a["id"].as_str()) else {
                    return timed;
                };
                let url = format!("{base}/v1/attempts/{id}");
                let resume = call(&client, reqwest::Method::GET, url, token, None).await;
                timed[3] = Some((resume.0, resume.1));
                let Some(q) = resume.2.as_ref().map(|a| a["questions"][0].clone()) else {
                    return timed;
                };
                let url = format!(
                    "{base}/v1/attempts/{id}/responses/{}",
                    q["id"].as_str().unwrap_or_default()
                );
                let answer = json!({"selected": [q["options"][0]["id"]]});
                let put = call(&client, reqwest::Method::PUT, url, token, Some(&answer)).await;
                timed[4] = Some((put.0, put.1));
                timed
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let wall = t.elapsed().as_secs_f64();
    let [q_cpu, pg_cpu, gen_cpu] = cpu.lap();
    let mut steps: [Step; 5] = Default::default();
    for timed in results {
        for (step, timed) in steps.iter_mut().zip(timed) {
            if let Some((d, s)) = timed {
                step.record(d, s);
            }
        }
    }
    let n = learners as f64;
    println!(
        "### 1b. The same through LTI launches: {learners} learners new to quizd launched, \
         exchanged, started, loaded and answered in {wall:.2} s ({:.0} learners/s)\n",
        n / wall
    );
    println!("{STEP_HEADER}");
    let names = [
        "POST /v1/lti/launch (verify, provision, code)",
        "POST /v1/lti/exchange",
        "POST /v1/assignments/{id}/attempts",
        "GET /v1/attempts/{id}",
        "PUT /v1/attempts/{id}/responses/{q}",
    ];
    for (step, name) in steps.iter_mut().zip(names) {
        println!("{}", step.line(name, wall));
    }
    println!(
        "\nCPU per learner (5 requests): quizd {:.0} µs, PostgreSQL {:.0} µs, load generator {:.0} µs \
         (the LMS, which signed the tokens beforehand, not counted). quizd RSS after: {:.1} MiB, \
         peak {:.1} MiB.\n",
        q_cpu / n * 1e6,
        pg_cpu / n * 1e6,
        gen_cpu / n * 1e6,
        status_mib(&quizd_pid.to_string(), "VmRSS"),
        status_mib(&quizd_pid.to_string(), "VmHWM"),
    );
    Ok(())
}
