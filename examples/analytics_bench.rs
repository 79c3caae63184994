//! The analytics benchmark: N finished attempts of the seed quiz written straight into a
//! private PostgreSQL with COPY, then the per-quiz statistics over HTTP timed side by side
//! with a plain `SELECT count(*)` over the same responses through psql, in the same run.
//!
//! `cargo run --release --example analytics_bench -- [attempts]` (default 100000); see
//! BENCHMARKS.md.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use chrono::Utc;
use quizd::analytics::generate::{Plan, finished_attempts};
use quizd::app;
use quizd::auth::Role;
use quizd::db::postgres;
use quizd::state::AppState;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs `SELECT count(*)` through psql `runs` times; returns the server-side times psql reports.
fn psql_count(
    bindir: &std::path::Path,
    socket: &std::path::Path,
    runs: usize,
) -> (i64, Vec<Duration>) {
    let mut script = String::from("\\timing on\n");
    for _ in 0..runs {
        script.push_str("SELECT count(*) FROM responses;\n");
    }
    use std::io::Write;
    let mut child = Command::new(bindir.join("psql"))
        .args(["-X", "-A", "-t", "-h"])
        .arg(socket)
        .args(["-U", postgres::DB_USER, "-d", postgres::DB_NAME, "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("psql runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("psql runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut count = 0;
    let mut times = Vec::new();
    for line in text.lines() {
        if let Some(t) = line.strip_prefix("Time: ") {
            let ms: f64 = t.split_whitespace().next().unwrap().parse().unwrap();
            times.push(Duration::from_secs_f64(ms / 1000.0));
        } else if let Ok(n) = line.trim().parse::<i64>() {
            count = n;
        }
    }
    (count, times)
}

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(100_000);
    let seeded = support::seeded("quizd-analytics-bench-").await?;
    let (pool, content, assignment, admin) = (
        seeded.pool.clone(),
        &seeded.content,
        seeded.assignment,
        seeded.admin,
    );
    let version_id = seeded.version_id;
    let plan = |attempts, seed| Plan {
        assignment_id: assignment,
        quiz_version_id: version_id,
        content,
        attempts,
        seed,
        harder_in: Some(("sync-collective", "id", 1.0)),
        stronger_in: None,
        finished_at: Utc::now(),
    };
    let started = Instant::now();
    let mut responses = 0;
    for (i, chunk) in (0..n).step_by(2_000).enumerate() {
        responses += finished_attempts(&pool, &plan((n - chunk).min(2_000), i as u64 + 1)).await?;
    }
    let generated = started.elapsed();
    sqlx::query("VACUUM ANALYZE").execute(&pool).await?;

    // Where the time goes: the two queries, then the computation.
    let scope = quizd::analytics::store::Scope {
        assignments: vec![assignment],
        version_id,
        from: None,
        to: None,
        locale: None,
        all_finished: false,
    };
    let t = Instant::now();
    let attempts = quizd::analytics::store::counted_scores(&pool, &scope).await?;
    let q_scores = t.elapsed();
    eprintln!(
        "breakdown: score vectors {:.0} ms ({} rows)",
        ms(q_scores),
        attempts.len()
    );

    // quizd serving over HTTP, with an admin's token.
    let state = AppState::build(pool.clone(), None, None, Default::default()).await?;
    let token = state.tokens.issue(admin, Role::Admin);
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let base = format!("http://{}", listener.local_addr()?);
    let state = actix_web::web::Data::new(state);
    let background = quizd::background::Background::start(
        state.clone(),
        quizd::background::Loops {
            deadline_sweep: false,
            grade_delivery: None,
            xapi_delivery: None,
            webhook_delivery: None,
            change_listener: true,
            erasure_listener: true,
            live_listener: false,
            metrics_upkeep: false,
            analytics_backfill: false,
        },
    );
    let http = app::serve(listener, state, Some(1))?;
    let handle = http.handle();
    actix_web::rt::spawn(http);
    let client = reqwest::Client::new();
    let get = || async {
        let t = Instant::now();
        let res = client
            .get(format!("{base}/v1/quizzes/data-parallelism/analytics"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        let status = res.status();
        let body: serde_json::Value = res.json().await.unwrap();
        assert_eq!(status, 200, "{body}");
        (t.elapsed(), body)
    };
    let get_with = |query: &'static str| {
        let (client, base, token) = (&client, &base, &token);
        async move {
            let t = Instant::now();
            let res = client
                .get(format!(
                    "{base}/v1/quizzes/data-parallelism/analytics{query}"
                ))
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200);
            let body: serde_json::Value = res.json().await.unwrap();
            (t.elapsed(), body)
        }
    };
    let bindir = postgres::find_bindir()?;
    // The yardstick first, in the same run: a count over the same responses.
    let (count, count_times) = psql_count(&bindir, seeded.server.socket_dir(), 5);
    // The first report: the count tables kept as the attempts finished, read and computed.
    let (cold, body) = get().await;
    let counted = body["versions"][0]["counts"]["counted"].as_u64().unwrap();
    let mut warm = Vec::new();
    for _ in 0..5 {
        warm.push(get().await.0);
    }
    // One more attempt at a time: the next request must count it (recomputed, not stale).
    let mut fresh = Vec::new();
    let mut written = Vec::new();
    for i in 0..5 {
        let w = Instant::now();
        finished_attempts(&pool, &plan(1, 1000 + i)).await?;
        written.push(w.elapsed());
        let (t, body) = get().await;
        let recounted = body["versions"][0]["counts"]["counted"].as_u64().unwrap();
        assert_eq!(
            recounted,
            counted + 1 + i,
            "statistics after a new attempt are not stale"
        );
        fresh.push(t);
    }
    // For comparison, the same report computed from every attempt (a date range that holds
    // them all takes that path), as every report was before the count tables.
    let (scratch, _) = get_with("?from=2000-01-01T00:00:00Z").await;
    // The one-off cost after an upgrade: attempts finished before the tables existed are
    // rebuilt into them by the first report.
    // (No state row, as after migration 0014; a new generation, as for a server started then.)
    sqlx::query(
        "WITH gone AS (DELETE FROM item_sums_state WHERE assignment_id = $1)
         UPDATE analytics_generations SET generation = generation + 1 WHERE assignment_id = $1",
    )
    .bind(assignment)
    .execute(&pool)
    .await?;
    let (rebuilt, _) = get().await;
    let (count_after, count_times_after) = psql_count(&bindir, seeded.server.socket_dir(), 5);
    // Stop the server and close the pools inside the runtime: dropping them after it is gone
    // aborted the benchmark at exit ("this functionality requires a Tokio context").
    handle.stop(true).await;
    background.stop().await;
    pool.close().await;

    let count_ms = ms(median(count_times));
    let count_after_ms = ms(median(count_times_after));
    println!(
        "# Analytics benchmark ({})",
        Utc::now().format("%Y-%m-%d %H:%M UTC")
    );
    println!();
    println!("| measure | value |");
    println!("|---|---|");
    println!("| finished attempts (COPY) | {counted} |");
    println!("| responses | {responses} (psql count: {count}, after: {count_after}) |");
    println!(
        "| generating them with COPY (and counting them into the tables) | {:.1} s |",
        generated.as_secs_f64()
    );
    println!(
        "| `SELECT count(*) FROM responses` via psql, median of 5 (before / after the requests) | {count_ms:.1} / {count_after_ms:.1} ms |"
    );
    println!(
        "| per-quiz statistics over HTTP, first request (from the count tables) | {:.1} ms |",
        ms(cold)
    );
    println!(
        "| per-quiz statistics over HTTP, repeated (cached), median of 5 | {:.1} ms |",
        ms(median(warm.clone()))
    );
    println!(
        "| per-quiz statistics after one new attempt (recomputed), median of 5 | {:.1} ms |",
        ms(median(fresh.clone()))
    );
    println!(
        "| one attempt written (COPY) and counted into the tables in its transaction, median of 5 | {:.1} ms |",
        ms(median(written))
    );
    println!(
        "| per-quiz statistics computed from every attempt (`?from=`, the old path) | {:.1} ms |",
        ms(scratch)
    );
    println!(
        "| first report after an upgrade (rebuilds the tables from {counted} attempts) | {:.1} ms |",
        ms(rebuilt)
    );
    println!(
        "| ratio first report / count(*) | {:.2} |",
        ms(cold) / count_ms
    );
    println!(
        "| ratio after one new attempt / count(*) | {:.2} |",
        ms(median(fresh)) / count_ms
    );
    println!(
        "| ratio cached / count(*) | {:.2} |",
        ms(median(warm)) / count_ms
    );
    println!(
        "| ratio from every attempt / count(*) | {:.1} |",
        ms(scratch) / count_ms
    );
    println!(
        "| ratio rebuild / count(*) | {:.1} |",
        ms(rebuilt) / count_ms
    );
    Ok(())
}
