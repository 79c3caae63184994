//! Drives N phones through a live session against an in-process quizd on a private, durable
//! PostgreSQL: N joins, N event streams, one question opened, N answers, the close announced
//! to every stream. Prints how long each stage took and the process's peak memory. For the
//! lead's measurement on a quiet machine (not run by CI; the functional check of 300 phones is
//! `tests/api/live.rs`).
//!
//! `cargo run --release --example live_phones -- [phones] [workers]` (default 300 phones, 2
//! workers).

mod support;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use quizd::auth::Role;
use quizd::auth::tokens::TokenKeys;
use quizd::db::{self, postgres};
use quizd::state::AppState;
use serde_json::{Value, json};
use uuid::Uuid;

/// The process's peak resident memory so far (VmHWM), in MiB.
fn peak_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Reads a response's Server-Sent Events until one called `name`; its data.
async fn until(res: &mut reqwest::Response, buf: &mut String, name: &str) -> Value {
    loop {
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let mut event = "";
            let mut data = String::new();
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    event = n;
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            if event == name {
                return serde_json::from_str(&data).expect("event data is JSON");
            }
        }
        let chunk = res
            .chunk()
            .await
            .expect("the stream reads")
            .expect("the stream goes on");
        buf.push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
    }
}

fn report(stage: &str, n: usize, took: Duration) {
    println!(
        "{stage:<32} {n:>6} in {:>8.1} ms  ({:.0}/s)",
        took.as_secs_f64() * 1000.0,
        n as f64 / took.as_secs_f64()
    );
}

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let phones: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(300);
    let workers: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(2);
    let seeded = support::seeded("quizd-live-phones-").await?;
    // A pool for a classroom (the seeded one has 8 connections).
    seeded.pool.close().await;
    // (quizd opens as many again for its quick pool: 2 × 20 within the server's 50.)
    let pool = db::connect(&seeded.server.url(postgres::DB_NAME), 20).await?;
    let course: Uuid = sqlx::query_scalar("SELECT course_id FROM assignments WHERE id = $1")
        .bind(seeded.assignment)
        .fetch_one(&pool)
        .await?;
    let state = AppState::build(pool.clone(), None, None, Default::default()).await?;
    let keys = TokenKeys::new(&quizd::auth::store::signing_secret(&pool).await?);
    let admin = keys.issue(seeded.admin, Role::Admin);
    let mut tokens = Vec::with_capacity(phones);
    for i in 0..phones {
        let id = Uuid::now_v7();
        sqlx::query("INSERT INTO users (id, display_name) VALUES ($1, $2)")
            .bind(id)
            .bind(format!("Phone {i}"))
            .execute(&pool)
            .await?;
        sqlx::query(
            "INSERT INTO enrollments (course_id, user_id, role) VALUES ($1, $2, 'learner')",
        )
        .bind(course)
        .bind(id)
        .execute(&pool)
        .await?;
        tokens.push(keys.issue(id, Role::Learner));
    }
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = quizd::app::serve(listener, actix_web::web::Data::new(state), Some(workers))?;
    let handle = server.handle();
    actix_web::rt::spawn(server);
    let client = reqwest::Client::new();
    let post = |path: String, token: &str, body: Value| {
        client
            .post(format!("{base}{path}"))
            .bearer_auth(token)
            .json(&body)
            .send()
    };

    let session: Value = post(
        format!("/v1/assignments/{}/live", seeded.assignment),
        &admin,
        json!({}),
    )
    .await?
    .json()
    .await?;
    let id = session["id"].as_str().unwrap().to_string();
    let code = session["code"].as_str().unwrap().to_string();

    let t = Instant::now();
    let joined: Vec<u16> = futures_util::stream::iter(&tokens)
        .map(|tok| {
            let (post, code) = (&post, &code);
            async move {
                let res = post("/v1/live/join".into(), tok, json!({"code": code}))
                    .await
                    .unwrap();
                let status = res.status().as_u16();
                if status != 201 {
                    eprintln!("join: {status} {}", res.text().await.unwrap_or_default());
                }
                status
            }
        })
        .buffer_unordered(64)
        .collect()
        .await;
    report(
        "joins",
        joined.iter().filter(|s| **s == 201).count(),
        t.elapsed(),
    );

    let t = Instant::now();
    let mut streams: Vec<(reqwest::Response, String)> = futures_util::stream::iter(&tokens)
        .map(|tok| {
            let (client, base, id) = (&client, &base, &id);
            async move {
                let mut res = client
                    .get(format!("{base}/v1/live/sessions/{id}/events"))
                    .bearer_auth(tok)
                    .send()
                    .await
                    .unwrap();
                let mut buf = String::new();
                until(&mut res, &mut buf, "hello").await;
                (res, buf)
            }
        })
        .buffered(64)
        .collect()
        .await;
    report("streams open", streams.len(), t.elapsed());

    let t = Instant::now();
    post(
        format!("/v1/live/sessions/{id}/next"),
        &admin,
        json!({"seconds": 120}),
    )
    .await?;
    let mut questions = Vec::with_capacity(phones);
    for (res, buf) in &mut streams {
        questions.push(until(res, buf, "question").await);
    }
    report("question reached every phone", phones, t.elapsed());

    let t = Instant::now();
    let answered: Vec<u16> = futures_util::stream::iter(questions.iter().zip(&tokens).enumerate())
        .map(|(i, (q, tok))| {
            let (client, base, id) = (&client, &base, &id);
            async move {
                let options = q["question"]["options"].as_array().unwrap();
                let option = &options[i % options.len()]["id"];
                let qid = q["question"]["id"].as_str().unwrap();
                client
                    .put(format!("{base}/v1/live/sessions/{id}/responses/{qid}"))
                    .bearer_auth(tok)
                    .json(&json!({"selected": [option]}))
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16()
            }
        })
        .buffer_unordered(64)
        .collect()
        .await;
    report(
        "answers recorded",
        answered.iter().filter(|s| **s == 200).count(),
        t.elapsed(),
    );

    let t = Instant::now();
    post(format!("/v1/live/sessions/{id}/close"), &admin, json!({})).await?;
    let mut total = 0;
    for (res, buf) in &mut streams {
        total = until(res, buf, "closed").await["total"].as_i64().unwrap();
    }
    report("distribution reached every phone", phones, t.elapsed());
    println!(
        "distribution total {total}; peak RSS {:.1} MiB (quizd and the phones, one process)",
        peak_mib()
    );
    post(format!("/v1/live/sessions/{id}/end"), &admin, json!({})).await?;
    handle.stop(true).await;
    Ok(())
}
