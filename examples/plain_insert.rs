//! The second yardstick for `PUT /v1/attempts/{id}/responses/{question_id}` in `bench/run`: the
//! cheapest durable HTTP write. A plain actix-web handler with sqlx that runs one single-row
//! `INSERT` (the request's path and body) on the same PostgreSQL as quizd, with
//! `synchronous_commit` on, and answers `201` once it has committed — no authentication, no
//! attempt read, no grading, no outbox. Whatever an answer costs beyond this is what quizd's
//! guarantees cost (ownership, deadline, one graded response per question, the event).
//!
//! ```sh
//! cargo run --release --example plain_insert -- --bind 127.0.0.1:18082 --database-url URL --workers 2 --pool 16
//! ```
//!
//! It creates its table (`plain_writes`) if missing, prints `plain_insert listening on
//! http://ADDR` when ready, and stops on SIGTERM/SIGINT.

use std::net::TcpListener;

use actix_web::web::{self, Bytes};
use actix_web::{App, HttpResponse, HttpServer};
use clap::Parser;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

#[derive(Parser)]
#[command(about = "One durable single-row INSERT per request, from an actix-web handler")]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:18082")]
    bind: String,
    /// The PostgreSQL to write to (quizd's, in bench/run).
    #[arg(long)]
    database_url: String,
    /// HTTP worker threads (default: one per core, as quizd).
    #[arg(long)]
    workers: Option<usize>,
    /// Connections in the pool (bench/run: quizd's pool size).
    #[arg(long, default_value_t = 16)]
    pool: u32,
}

async fn write(
    pool: web::Data<sqlx::PgPool>,
    path: web::Path<(uuid::Uuid, String)>,
    body: Bytes,
) -> HttpResponse {
    let (attempt, question) = path.into_inner();
    let Ok(body) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return HttpResponse::BadRequest().finish();
    };
    match sqlx::query("INSERT INTO plain_writes (attempt_id, question, body) VALUES ($1, $2, $3)")
        .bind(attempt)
        .bind(question)
        .bind(body)
        .execute(pool.get_ref())
        .await
    {
        Ok(_) => HttpResponse::Created()
            .content_type("application/json")
            .body(r#"{"recorded":true}"#),
        Err(_) => HttpResponse::ServiceUnavailable().finish(),
    }
}

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let options: PgConnectOptions = args.database_url.parse()?;
    let pool = PgPoolOptions::new()
        .max_connections(args.pool)
        .min_connections(args.pool)
        .test_before_acquire(false)
        .connect_with(options.options([("synchronous_commit", "on")]))
        .await?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS plain_writes (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
             attempt_id uuid NOT NULL, question text NOT NULL, body jsonb NOT NULL,
             at timestamptz NOT NULL DEFAULT now())",
    )
    .execute(&pool)
    .await?;
    let listener = TcpListener::bind(&args.bind)?;
    let addr = listener.local_addr()?;
    let data = web::Data::new(pool);
    let mut server = HttpServer::new(move || {
        App::new().app_data(data.clone()).route(
            "/v1/attempts/{attempt}/responses/{question}",
            web::put().to(write),
        )
    });
    if let Some(w) = args.workers {
        server = server.workers(w);
    }
    let server = server.listen(listener)?.run();
    println!("plain_insert listening on http://{addr}");
    server.await?;
    Ok(())
}
