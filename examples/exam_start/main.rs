//! The exam-morning benchmark (issue #16): a whole class presses Start at once.
//!
//! N learners, already signed in, are enrolled in one course with one assignment of the seed
//! quiz. quizd runs as its own process (the release binary, `--workers`, its default pool) on a
//! private durable PostgreSQL. Then, from this process:
//!
//! 1. **start**: every learner presses Start at the same moment (the load generator keeps
//!    `--concurrency` requests in flight, as a class's browsers would), then loads the attempt
//!    (`GET /v1/attempts/{id}`) and answers its first question; throughput and p50/p99 of each
//!    step, errors by status, and the CPU of quizd, of PostgreSQL and of this load generator
//!    per learner, and quizd's RSS;
//!    With `--lti-learners M`, **1b**: M more learners, new to quizd, open the exam from an LMS
//!    (the LTI test platform): the launch, the exchange of its code, the start, the load and the
//!    first answer, timed the same way (`lti.rs`);
//! 2. **sign-in storm**: `--signins` of them sign in with their password from one address
//!    (`127.0.0.1`) at once; a full hash queue answers `503` with `Retry-After`, which the
//!    client honours, as the web front-end does; no sign-in may meet `429`;
//! 3. **a flood while answering**: learners in their attempts answer at a steady concurrency,
//!    alone and then while a flood of wrong passwords for other accounts arrives from one
//!    address; answers' p50/p99 in both, and what the flood met (`429`, `503`).
//!
//! With `--statement-stats`, PostgreSQL runs with `pg_stat_statements` preloaded and step 1
//! ends with the statements that took most of its time: where a learner's PostgreSQL CPU goes.
//!
//! `cargo run --release --example exam_start -- --learners 3000` (the binary `quizd` must be
//! built: `cargo build --release`); `bench/exam-start` runs it for 3,000 and 10,000 learners.
//! See BENCHMARKS.md, "Exam morning".

mod lti;
#[path = "../support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use quizd::auth::Role;
use quizd::auth::tokens::TokenKeys;
use serde_json::{Value, json};
use uuid::Uuid;

const PASSWORD: &str = "exam-morning-password";

struct Args {
    learners: usize,
    concurrency: usize,
    signins: usize,
    workers: usize,
    flood_seconds: u64,
    lti_learners: usize,
    statement_stats: bool,
    quizd: String,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        learners: 3_000,
        concurrency: 256,
        signins: 500,
        workers: 2,
        flood_seconds: 5,
        lti_learners: 0,
        statement_stats: false,
        quizd: concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/quizd").to_string(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--learners" => a.learners = value()?.parse()?,
            "--concurrency" => a.concurrency = value()?.parse()?,
            "--signins" => a.signins = value()?.parse()?,
            "--workers" => a.workers = value()?.parse()?,
            "--flood-seconds" => a.flood_seconds = value()?.parse()?,
            "--lti-learners" => a.lti_learners = value()?.parse()?,
            "--quizd" => a.quizd = value()?,
            "--statement-stats" => a.statement_stats = true,
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    anyhow::ensure!(
        a.signins <= a.learners,
        "--signins must not exceed --learners"
    );
    Ok(a)
}

/// Samples, every 5 ms until aborted, what the database's active backends are doing: on CPU
/// (no wait event) or waiting, and on what; into the table `exam_waits`.
async fn sample_waits(pool: sqlx::PgPool) -> anyhow::Result<()> {
    sqlx::query(
        "CREATE UNLOGGED TABLE IF NOT EXISTS exam_waits (what text NOT NULL, n bigint NOT NULL)",
    )
    .execute(&pool)
    .await?;
    loop {
        sqlx::query(
            "INSERT INTO exam_waits
             SELECT coalesce(wait_event_type || ': ' || wait_event, 'on CPU'), count(*)
               FROM pg_stat_activity
              WHERE state = 'active' AND pid <> pg_backend_pid()
                AND datname = current_database() AND backend_type = 'client backend'
              GROUP BY 1",
        )
        .execute(&pool)
        .await?;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// What the samples of [`sample_waits`] saw, most frequent first.
async fn wait_events(pool: &sqlx::PgPool) -> anyhow::Result<()> {
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT what, sum(n)::bigint FROM exam_waits GROUP BY what ORDER BY 2 DESC LIMIT 10",
    )
    .fetch_all(pool)
    .await?;
    let all: i64 = rows.iter().map(|r| r.1).sum();
    println!(
        "Active backends in step 1, sampled every 5 ms ({all} backend samples): what they were doing\n"
    );
    println!("| on CPU, or the wait | share |\n|---|---:|");
    for (what, n) in rows {
        println!("| {what} | {:.1} % |", n as f64 * 100.0 / all.max(1) as f64);
    }
    println!();
    Ok(())
}

/// The statements that took most of PostgreSQL's time since the last reset, per learner
/// (`pg_stat_statements`: execution time, which includes waiting for locks).
async fn statement_stats(pool: &sqlx::PgPool, learners: usize) -> anyhow::Result<()> {
    let rows: Vec<(String, i64, f64, i64, i64, i64)> = sqlx::query_as(
        "SELECT regexp_replace(left(query, 300), '\\s+', ' ', 'g'), calls, total_exec_time,
                rows, shared_blks_hit + shared_blks_read, wal_records
           FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          ORDER BY total_exec_time DESC LIMIT 12",
    )
    .fetch_all(pool)
    .await?;
    let all: f64 = sqlx::query_scalar(
        "SELECT coalesce(sum(total_exec_time), 0)::float8 FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    .fetch_one(pool)
    .await?;
    let n = learners as f64;
    println!(
        "PostgreSQL's execution time in step 1 (pg_stat_statements): {:.0} µs per learner in \
         all; the statements that took most:\n",
        all * 1e3 / n
    );
    println!(
        "| statement | calls | µs per learner | µs per call | rows per call | buffers per call | WAL records per call |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    for (query, calls, total_ms, rows, buffers, wal) in rows {
        let c = calls.max(1) as f64;
        let text: String = query.chars().take(90).collect();
        println!(
            "| `{}` | {calls} | {:.0} | {:.0} | {:.1} | {:.1} | {:.1} |",
            text.replace('|', "\\|"),
            total_ms * 1e3 / n,
            total_ms * 1e3 / c,
            rows as f64 / c,
            buffers as f64 / c,
            wal as f64 / c,
        );
    }
    println!();
    Ok(())
}

/// CPU time (user + system) of a process and, with `children_of`, of every process whose
/// parent it is (PostgreSQL's backends are the postmaster's children), in seconds.
fn cpu_seconds(pid: u32, children_of: bool) -> f64 {
    let ticks = 100.0; // USER_HZ on Linux
    let stat = |p: &str| -> Option<(u32, f64)> {
        let s = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        // The command may hold spaces and parentheses: fields start after the last ')'.
        let rest = &s[s.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ppid: u32 = f[1].parse().ok()?;
        let cpu = f[11].parse::<f64>().ok()? + f[12].parse::<f64>().ok()?;
        Some((ppid, cpu / ticks))
    };
    let mut total = stat(&pid.to_string()).map_or(0.0, |(_, c)| c);
    if children_of {
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if !name.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            if let Some((ppid, cpu)) = stat(name)
                && ppid == pid
            {
                total += cpu;
            }
        }
    }
    total
}

/// A field of `/proc/<pid>/status` in MiB (`VmRSS`, `VmHWM`).
fn status_mib(pid: &str, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// CPU of quizd, of PostgreSQL and of this process over a phase.
struct Cpu {
    quizd: u32,
    postmaster: u32,
    at: [f64; 3],
}

impl Cpu {
    fn now(&self) -> [f64; 3] {
        [
            cpu_seconds(self.quizd, false),
            cpu_seconds(self.postmaster, true),
            cpu_seconds(std::process::id(), false),
        ]
    }
    fn start(quizd: u32, postmaster: u32) -> Self {
        let mut c = Cpu {
            quizd,
            postmaster,
            at: [0.0; 3],
        };
        c.at = c.now();
        c
    }
    /// Seconds of CPU each used since `start` (or the last `lap`).
    fn lap(&mut self) -> [f64; 3] {
        let now = self.now();
        let d = [
            now[0] - self.at[0],
            now[1] - self.at[1],
            now[2] - self.at[2],
        ];
        self.at = now;
        d
    }
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let k = ((p / 100.0 * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[k]
}

/// Latencies (ms) and outcomes of one kind of request.
#[derive(Default)]
struct Step {
    ms: Vec<f64>,
    statuses: BTreeMap<u16, usize>,
}

impl Step {
    fn record(&mut self, t: Duration, status: u16) {
        self.ms.push(t.as_secs_f64() * 1000.0);
        *self.statuses.entry(status).or_default() += 1;
    }
    fn line(&mut self, name: &str, wall: f64) -> String {
        self.ms.sort_by(f64::total_cmp);
        let statuses: Vec<String> = self
            .statuses
            .iter()
            .map(|(s, n)| format!("{s}×{n}"))
            .collect();
        format!(
            "| {name} | {} | {:.0} | {:.1} | {:.1} | {:.1} | {} |",
            self.ms.len(),
            self.ms.len() as f64 / wall,
            pct(&self.ms, 50.0),
            pct(&self.ms, 99.0),
            self.ms.last().copied().unwrap_or(f64::NAN),
            statuses.join(" "),
        )
    }
}

const STEP_HEADER: &str = "| step | requests | req/s over the phase | p50 ms | p99 ms | max ms | statuses |\n|---|---:|---:|---:|---:|---:|---|";

async fn call(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: Option<&str>,
    body: Option<&Value>,
) -> (Duration, u16, Option<Value>, Option<u64>) {
    let t = Instant::now();
    let mut req = client.request(method, url);
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    if let Some(body) = body {
        req = req.json(body);
    }
    match req.send().await {
        Ok(res) => {
            let status = res.status().as_u16();
            let retry = res
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok()?.parse().ok());
            let body = res.json::<Value>().await.ok();
            (t.elapsed(), status, body, retry)
        }
        // 0: no HTTP answer (connection refused or reset, timed out).
        Err(_) => (t.elapsed(), 0, None, None),
    }
}

struct Quizd {
    child: Child,
    base: String,
}

impl Drop for Quizd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_quizd(args: &Args, database_url: &str, secret: &str) -> anyhow::Result<Quizd> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let child = Command::new(&args.quizd)
        .arg("serve")
        .env("DATABASE_URL", database_url)
        .env("QUIZD_JWT_SECRET", secret)
        .env("QUIZD_BIND", format!("127.0.0.1:{port}"))
        .env("QUIZD_WORKERS", args.workers.to_string())
        .env(
            "QUIZD_CONTENT_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/content"),
        )
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot start {}: {e} (cargo build --release)", args.quizd))?;
    Ok(Quizd {
        child,
        base: format!("http://127.0.0.1:{port}"),
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let settings = if args.statement_stats {
        vec!["shared_preload_libraries=pg_stat_statements".to_string()]
    } else {
        Vec::new()
    };
    let seeded = support::seeded_with("quizd-exam-start-", settings).await?;
    let pool = seeded.pool.clone();
    let course: Uuid = sqlx::query_scalar("SELECT course_id FROM assignments WHERE id = $1")
        .bind(seeded.assignment)
        .fetch_one(&pool)
        .await?;
    // An exam, not practice: answers shown after the attempt is finished.
    sqlx::query("UPDATE assignments SET feedback = 'on_finish' WHERE id = $1")
        .bind(seeded.assignment)
        .execute(&pool)
        .await?;

    // The class: one password hash (argon2id, quizd's parameters) for every account, verified
    // emails, enrolled; written with one statement, as an LMS roster sync would leave them.
    let hash = quizd::auth::password::hash(PASSWORD).map_err(anyhow::Error::msg)?;
    let t = Instant::now();
    let ids: Vec<Uuid> = (0..args.learners).map(|_| Uuid::now_v7()).collect();
    sqlx::query(
        "WITH people AS (
             INSERT INTO users (id, email, display_name, password_hash, email_verified_at)
             SELECT id, 'learner' || n || '@exam.test', 'Learner ' || n, $2, now()
             FROM unnest($1::uuid[]) WITH ORDINALITY AS u (id, n)
             RETURNING id)
         INSERT INTO enrollments (course_id, user_id, role) SELECT $3, id, 'learner' FROM people",
    )
    .bind(&ids)
    .bind(&hash)
    .bind(course)
    .execute(&pool)
    .await?;
    sqlx::query("VACUUM ANALYZE").execute(&pool).await?;
    eprintln!(
        "seeded {} learners in {:.1} s",
        args.learners,
        t.elapsed().as_secs_f64()
    );

    let secret = hex::encode(rand::random::<[u8; 32]>());
    let quizd = start_quizd(
        &args,
        &seeded.server.url(quizd::db::postgres::DB_NAME),
        &secret,
    )?;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .timeout(Duration::from_secs(120))
        .build()?;
    let ready = Instant::now();
    loop {
        let ok = client
            .get(format!("{}/readyz", quizd.base))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if ok {
            break;
        }
        anyhow::ensure!(
            ready.elapsed() < Duration::from_secs(60),
            "quizd not ready in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let quizd_pid = quizd.child.id();
    // The cluster's directory holds `socket/` and `pgdata/`; the postmaster's pid is the first
    // line of `pgdata/postmaster.pid`.
    let pid_file = seeded
        .server
        .socket_dir()
        .with_file_name("pgdata")
        .join("postmaster.pid");
    let postmaster: u32 = std::fs::read_to_string(&pid_file)?
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .parse()?;
    let keys = TokenKeys::new(secret.as_bytes());
    let tokens: Arc<Vec<String>> = Arc::new(
        ids.iter()
            .map(|id| keys.issue(*id, Role::Learner))
            .collect(),
    );
    let base = Arc::new(quizd.base.clone());
    let assignment = seeded.assignment;
    let rss_idle = status_mib(&quizd_pid.to_string(), "VmRSS");

    println!(
        "## Exam morning: {} learners, {} in flight, quizd --workers {}\n",
        args.learners, args.concurrency, args.workers
    );

    if args.statement_stats {
        sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .execute(&pool)
            .await?;
        sqlx::query("SELECT pg_stat_statements_reset()")
            .execute(&pool)
            .await?;
    }

    // What the busy backends wait on during step 1, sampled every 5 ms (with --statement-stats).
    let waits = args
        .statement_stats
        .then(|| tokio::spawn(sample_waits(pool.clone())));

    // 1. Every learner presses Start, loads the attempt, answers the first question.
    let mut cpu = Cpu::start(quizd_pid, postmaster);
    let t = Instant::now();
    let results: Vec<_> = futures_util::stream::iter(0..args.learners)
        .map(|i| {
            let (client, base, tokens) = (client.clone(), base.clone(), tokens.clone());
            async move {
                let token = tokens[i].as_str();
                let body = json!({"locale": "bn"});
                let start = call(
                    &client,
                    reqwest::Method::POST,
                    format!("{base}/v1/assignments/{assignment}/attempts"),
                    Some(token),
                    Some(&body),
                )
                .await;
                let Some(id) = start.2.as_ref().and_then(|a| a["id"].as_str()) else {
                    return (i, start, None, None, None);
                };
                let url = format!("{base}/v1/attempts/{id}");
                let resume = call(&client, reqwest::Method::GET, url, Some(token), None).await;
                let first = resume
                    .2
                    .as_ref()
                    .map(|a| (a["questions"][0].clone(), a["id"].clone()));
                let Some((q, id)) = first else {
                    return (i, start, Some(resume), None, None);
                };
                let answer = json!({"selected": [q["options"][0]["id"]]});
                let put = call(
                    &client,
                    reqwest::Method::PUT,
                    format!(
                        "{base}/v1/attempts/{}/responses/{}",
                        id.as_str().unwrap_or_default(),
                        q["id"].as_str().unwrap_or_default()
                    ),
                    Some(token),
                    Some(&answer),
                )
                .await;
                let attempt = id.as_str().map(str::to_owned);
                (i, start, Some(resume), Some(put), attempt)
            }
        })
        .buffer_unordered(args.concurrency)
        .collect()
        .await;
    let wall = t.elapsed().as_secs_f64();
    let [q_cpu, pg_cpu, gen_cpu] = cpu.lap();
    let (mut starts, mut resumes, mut answers) =
        (Step::default(), Step::default(), Step::default());
    let mut attempts = Vec::new();
    // Completion order: each result names its learner.
    for (i, s, r, a, id) in results {
        starts.record(s.0, s.1);
        if let Some(r) = r {
            resumes.record(r.0, r.1);
        }
        if let Some(a) = a {
            answers.record(a.0, a.1);
        }
        if let Some(id) = id {
            attempts.push((i, id));
        }
    }
    let n = args.learners as f64;
    println!(
        "### 1. Start, load, first answer: {} learners in {wall:.2} s ({:.0} learners/s)\n",
        args.learners,
        n / wall
    );
    println!("{STEP_HEADER}");
    println!(
        "{}",
        starts.line("POST /v1/assignments/{id}/attempts", wall)
    );
    println!("{}", resumes.line("GET /v1/attempts/{id}", wall));
    println!(
        "{}",
        answers.line("PUT /v1/attempts/{id}/responses/{q}", wall)
    );
    println!(
        "\nCPU per learner (3 requests): quizd {:.0} µs, PostgreSQL {:.0} µs, load generator {:.0} µs; \
         CPU over the phase: quizd {:.2} s, PostgreSQL {:.2} s, load generator {:.2} s. \
         quizd RSS: {rss_idle:.1} MiB idle, {:.1} MiB after, peak {:.1} MiB.\n",
        q_cpu / n * 1e6,
        pg_cpu / n * 1e6,
        gen_cpu / n * 1e6,
        q_cpu,
        pg_cpu,
        gen_cpu,
        status_mib(&quizd_pid.to_string(), "VmRSS"),
        status_mib(&quizd_pid.to_string(), "VmHWM"),
    );
    if let Some(waits) = waits {
        waits.abort();
        statement_stats(&pool, args.learners).await?;
        wait_events(&pool).await?;
    }
    let started_ok = starts.statuses.get(&201).copied().unwrap_or(0)
        + starts.statuses.get(&200).copied().unwrap_or(0);

    // 1b. Another class starts through LTI launches.
    if args.lti_learners > 0 {
        let admin: Uuid = sqlx::query_scalar("SELECT id FROM users WHERE role = 'admin' LIMIT 1")
            .fetch_one(&pool)
            .await?;
        lti::run(
            &base,
            &keys.issue(admin, Role::Admin),
            args.lti_learners,
            args.concurrency,
            quizd_pid,
            postmaster,
        )
        .await?;
    }

    // 2. The sign-in storm: `signins` learners, one address, one moment.
    let storm = Arc::new(std::sync::Mutex::new((Step::default(), 0usize)));
    let t = Instant::now();
    futures_util::stream::iter(0..args.signins)
        .for_each_concurrent(args.concurrency, |i| {
            let (client, base, storm) = (client.clone(), base.clone(), storm.clone());
            async move {
                let body =
                    json!({"email": format!("learner{}@exam.test", i + 1), "password": PASSWORD});
                let began = Instant::now();
                let mut tries = 0;
                loop {
                    tries += 1;
                    let (_, status, _, retry) = call(
                        &client,
                        reqwest::Method::POST,
                        format!("{base}/v1/auth/login"),
                        None,
                        Some(&body),
                    )
                    .await;
                    if status == 503 && tries < 100 {
                        storm.lock().unwrap().1 += 1;
                        tokio::time::sleep(Duration::from_secs(retry.unwrap_or(1))).await;
                        continue;
                    }
                    // No HTTP answer: a kept-alive connection the server closed while this
                    // client waited out a Retry-After. A browser sends the form again.
                    if status == 0 && tries < 100 {
                        continue;
                    }
                    storm.lock().unwrap().0.record(began.elapsed(), status);
                    break;
                }
            }
        })
        .await;
    let storm_wall = t.elapsed().as_secs_f64();
    let [q_cpu, pg_cpu, _] = cpu.lap();
    let (mut signins, retried) = std::mem::take(&mut *storm.lock().unwrap());
    println!(
        "### 2. Sign-in storm: {} learners from one address in {storm_wall:.2} s \
         ({:.0} sign-ins/s; {retried} answers of 503 + Retry-After, each retried after it)\n",
        args.signins,
        args.signins as f64 / storm_wall,
    );
    println!("{STEP_HEADER}");
    println!(
        "{}",
        signins.line("POST /v1/auth/login (until signed in)", storm_wall)
    );
    println!(
        "\nCPU per sign-in: quizd {:.1} ms, PostgreSQL {:.2} ms.\n",
        q_cpu / args.signins as f64 * 1e3,
        pg_cpu / args.signins as f64 * 1e3
    );

    // 3. Answers keep flowing while a flood of wrong passwords arrives from one address.
    let attempts = Arc::new(attempts);
    let answer_phase = |flood: bool| {
        let (client, base, tokens, attempts) = (
            client.clone(),
            base.clone(),
            tokens.clone(),
            attempts.clone(),
        );
        let seconds = args.flood_seconds;
        let in_flight = 16;
        async move {
            let stop = Arc::new(AtomicBool::new(false));
            let flood_task = flood.then(|| {
                let (client, base, stop) = (client.clone(), base.clone(), stop.clone());
                tokio::spawn(async move {
                    // 64 guesses always in flight, each for another account, until told to stop.
                    let step = std::sync::Mutex::new(Step::default());
                    let (client, base, step_ref, stop) = (&client, &base, &step, &stop);
                    futures_util::stream::iter(0..64)
                        .for_each_concurrent(64, |slot| async move {
                            let mut k = slot;
                            while !stop.load(Ordering::Relaxed) {
                                let email = format!("learner{}@exam.test", k % 1000 + 1);
                                k += 64;
                                let body = json!({"email": email, "password": "wrong-guess"});
                                let url = format!("{base}/v1/auth/login");
                                let (t, s, _, _) =
                                    call(client, reqwest::Method::POST, url, None, Some(&body))
                                        .await;
                                step_ref.lock().unwrap().record(t, s);
                            }
                        })
                        .await;
                    step.into_inner().unwrap()
                })
            });
            let deadline = Instant::now() + Duration::from_secs(seconds);
            // Resumes, answers, and resumes that found every question answered.
            let step = Arc::new(std::sync::Mutex::new((
                Step::default(),
                Step::default(),
                0usize,
            )));
            futures_util::stream::iter(0..in_flight)
                .for_each_concurrent(in_flight, |w| {
                    let (client, base, tokens, attempts, step) = (
                        client.clone(),
                        base.clone(),
                        tokens.clone(),
                        attempts.clone(),
                        step.clone(),
                    );
                    async move {
                        let mut k = w;
                        while Instant::now() < deadline {
                            let (i, id) = &attempts[k % attempts.len()];
                            k += in_flight;
                            // Re-answering the question already answered: the same durable
                            // statement, refused as final or accepted again by the policy.
                            let token = tokens[*i].as_str();
                            let (t, s, a, _) = call(
                                &client,
                                reqwest::Method::GET,
                                format!("{base}/v1/attempts/{id}"),
                                Some(token),
                                None,
                            )
                            .await;
                            step.lock().unwrap().0.record(t, s);
                            let Some(a) = a else { continue };
                            let qs = a["questions"].as_array().cloned().unwrap_or_default();
                            let Some(q) = qs.iter().find(|q| q["response"].is_null()) else {
                                step.lock().unwrap().2 += 1;
                                continue;
                            };
                            let body = json!({"selected": [q["options"][0]["id"]]});
                            let (t, s, _, _) = call(
                                &client,
                                reqwest::Method::PUT,
                                format!(
                                    "{base}/v1/attempts/{id}/responses/{}",
                                    q["id"].as_str().unwrap_or_default()
                                ),
                                Some(token),
                                Some(&body),
                            )
                            .await;
                            step.lock().unwrap().1.record(t, s);
                        }
                    }
                })
                .await;
            stop.store(true, Ordering::Relaxed);
            let flood_step = match flood_task {
                Some(t) => Some(t.await.expect("the flood task")),
                None => None,
            };
            let answers = std::mem::take(&mut *step.lock().unwrap());
            (answers, flood_step)
        }
    };
    let ((mut calm_r, mut calm, done_calm), _) = answer_phase(false).await;
    let ((mut flooded_r, mut flooded, done_flooded), flood) = answer_phase(true).await;
    let secs = args.flood_seconds as f64;
    println!(
        "### 3. Answers (16 in flight, each after a resume) alone, then under a flood of wrong passwords from one address ({} s each)\n",
        args.flood_seconds
    );
    println!("{STEP_HEADER}");
    println!("{}", calm_r.line("resumes, alone", secs));
    println!("{}", calm.line("answers, alone", secs));
    println!("{}", flooded_r.line("resumes, during the flood", secs));
    println!("{}", flooded.line("answers, during the flood", secs));
    if let Some(mut flood) = flood {
        println!(
            "{}",
            flood.line("the flood: POST /v1/auth/login, wrong password", secs)
        );
    }
    println!(
        "\n({done_calm} and {done_flooded} resumes found every question answered: no answer sent.)\n"
    );
    anyhow::ensure!(
        started_ok == args.learners,
        "{} of {} starts failed",
        args.learners - started_ok,
        args.learners
    );
    anyhow::ensure!(
        !signins.statuses.contains_key(&429),
        "a sign-in of the class met 429"
    );
    drop(quizd);
    Ok(())
}
