//! The regrade benchmark: the largest regrade a class makes. N finished attempts of the seed
//! quiz (8 questions) written straight into a private PostgreSQL with COPY, version 2 of the
//! quiz with one question's key corrected, then `POST /v1/assignments/{id}/regrade` over HTTP,
//! a dry run and the apply, side by side in the same run with the least a database must do for
//! the apply: one `UPDATE` of every response of the assignment (rolled back). Reports the times,
//! their ratio to the yardstick, the report's size, and the process's peak memory (the server
//! runs in this process) before and after.
//!
//! `cargo run --release --example regrade_bench -- [attempts]` (default 10000); `bench/regrade`
//! runs it. See BENCHMARKS.md.

mod support;

use std::time::{Duration, Instant};

use chrono::Utc;
use quizd::analytics::generate::{Plan, finished_attempts};
use quizd::app;
use quizd::auth::Role;
use quizd::state::AppState;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The process's peak resident memory so far (VmHWM), in MiB.
fn peak_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(10_000);
    let seeded = support::seeded("quizd-regrade-bench-").await?;
    let (pool, content, assignment, admin) = (
        seeded.pool.clone(),
        &seeded.content,
        seeded.assignment,
        seeded.admin,
    );
    let version_id = seeded.version_id;
    let mut responses = 0;
    for (i, chunk) in (0..n).step_by(2_000).enumerate() {
        let plan = Plan {
            assignment_id: assignment,
            quiz_version_id: version_id,
            content,
            attempts: (n - chunk).min(2_000),
            seed: i as u64 + 1,
            harder_in: None,
            stronger_in: None,
            finished_at: Utc::now(),
        };
        responses += finished_attempts(&pool, &plan).await?;
    }
    // Version 2: the second question's key moved to another option (every response to it
    // changes grade, right to wrong or wrong to right for those who chose either).
    let mut corrected = content.clone();
    let q = &mut corrected.questions[1];
    let right = q.options.iter().position(|o| o.correct).unwrap();
    q.options[right].correct = false;
    let next = (right + 1) % q.options.len();
    q.options[next].correct = true;
    quizd::content::store::import(
        &pool,
        std::slice::from_ref(&corrected),
        quizd::content::store::Importer::Files,
    )
    .await?;
    sqlx::query("VACUUM ANALYZE").execute(&pool).await?;

    let state = AppState::build(pool.clone(), None, None, Default::default()).await?;
    let token = state.tokens.issue(admin, Role::Admin);
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let base = format!("http://{}", listener.local_addr()?);
    let http = app::serve(listener, actix_web::web::Data::new(state), Some(1))?;
    let handle = http.handle();
    actix_web::rt::spawn(http);
    let client = reqwest::Client::new();
    let regrade = |dry_run: bool| {
        let (client, base, token) = (&client, &base, &token);
        async move {
            let t = Instant::now();
            let res = client
                .post(format!("{base}/v1/assignments/{assignment}/regrade"))
                .bearer_auth(token)
                .json(&serde_json::json!({"to_version": 2, "dry_run": dry_run}))
                .send()
                .await
                .unwrap();
            let status = res.status();
            let body = res.bytes().await.unwrap();
            assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
            let report: serde_json::Value = serde_json::from_slice(&body).unwrap();
            (t.elapsed(), body.len(), report)
        }
    };
    // The yardstick: every response of the assignment rewritten once, rolled back.
    let yardstick = || async {
        let mut tx = pool.begin().await.unwrap();
        let t = Instant::now();
        sqlx::query(
            "UPDATE responses r SET points = r.points, correct = r.correct
               FROM attempts t WHERE t.id = r.attempt_id AND t.assignment_id = $1",
        )
        .bind(assignment)
        .execute(&mut *tx)
        .await
        .unwrap();
        let took = t.elapsed();
        tx.rollback().await.unwrap();
        took
    };
    let before = peak_mib();
    let mut yard = Vec::new();
    for _ in 0..3 {
        yard.push(yardstick().await);
    }
    yard.sort();
    let yard = yard[1];
    let mut dry = Vec::new();
    let mut report = serde_json::Value::Null;
    let mut size = 0;
    for _ in 0..3 {
        let (t, len, r) = regrade(true).await;
        dry.push(t);
        (size, report) = (len, r);
    }
    dry.sort();
    let dry = dry[1];
    let after_dry = peak_mib();
    let (applied, _, applied_report) = regrade(false).await;
    let after_apply = peak_mib();
    assert_eq!(applied_report["attempts"], report["attempts"]);
    handle.stop(true).await;
    pool.close().await;

    println!(
        "# Regrade benchmark ({})",
        Utc::now().format("%Y-%m-%d %H:%M UTC")
    );
    println!();
    println!("| measure | value |");
    println!("|---|---|");
    println!("| finished attempts (COPY) / responses | {n} / {responses} |");
    println!(
        "| attempts changed / grades changed | {} / {} |",
        report["attempts"].as_array().map_or(0, Vec::len),
        report["grades_changed"]
    );
    println!(
        "| yardstick: one `UPDATE` of every response (rolled back), median of 3 | {:.1} ms |",
        ms(yard)
    );
    println!(
        "| dry run over HTTP, median of 3 | {:.1} ms ({:.2} × yardstick) |",
        ms(dry),
        dry.as_secs_f64() / yard.as_secs_f64()
    );
    println!(
        "| apply over HTTP (one transaction; item analysis rebuilt after it, not timed) | {:.1} ms ({:.2} × yardstick) |",
        ms(applied),
        applied.as_secs_f64() / yard.as_secs_f64()
    );
    println!("| report size | {:.1} KiB |", size as f64 / 1024.0);
    println!(
        "| peak RSS of the process: before / after the dry runs / after the apply | {before:.0} / {after_dry:.0} / {after_apply:.0} MiB |"
    );
    Ok(())
}
