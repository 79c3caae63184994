//! The yardstick for `GET /v1/quizzes/{slug}` in `bench/run`: a plain actix-web handler that
//! answers with a fixed JSON document (the captured bytes of a quizd response), with no
//! middleware, no database and no serialization. Whatever quizd does beyond this is the cost
//! of being quizd.
//!
//! ```sh
//! cargo run --release --example plain_json -- --bind 127.0.0.1:18081 --body quiz.json --workers 2
//! ```
//!
//! It prints `plain_json listening on http://ADDR` when ready and stops on SIGTERM/SIGINT.

use std::net::TcpListener;
use std::path::PathBuf;

use actix_web::http::header::{CONTENT_TYPE, HeaderValue};
use actix_web::web::{self, Bytes};
use actix_web::{App, HttpResponse, HttpServer};
use clap::Parser;

#[derive(Parser)]
#[command(about = "Serves one fixed JSON document from an actix-web handler")]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:18081")]
    bind: String,
    /// The JSON document to serve (its exact bytes).
    #[arg(long)]
    body: PathBuf,
    /// HTTP worker threads (default: one per core, as quizd).
    #[arg(long)]
    workers: Option<usize>,
}

async fn quiz(body: web::Data<Bytes>, _slug: web::Path<String>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, HeaderValue::from_static("application/json")))
        .body(body.get_ref().clone())
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let body = Bytes::from(std::fs::read(&args.body)?);
    serde_json::from_slice::<serde_json::Value>(&body)
        .map_err(|e| std::io::Error::other(format!("{} is not JSON: {e}", args.body.display())))?;
    let listener = TcpListener::bind(&args.bind)?;
    let addr = listener.local_addr()?;
    let data = web::Data::new(body);
    let mut server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/v1/quizzes/{slug}", web::get().to(quiz))
    });
    if let Some(w) = args.workers {
        server = server.workers(w);
    }
    let server = server.listen(listener)?.run();
    println!("plain_json listening on http://{addr}");
    server.await
}
