//! The quick pool (resume and answer run on it): connections come back without a ping when
//! the request finished, and are checked before reuse when it did not.

use std::str::FromStr;
use std::time::Duration;

use quizd::db::quick::QuickPool;
use sqlx::postgres::PgConnectOptions;

use crate::support::TestApp;

async fn pool(app: &TestApp, size: u32) -> QuickPool {
    let options = PgConnectOptions::from_str(&app.db_url()).expect("the URL parses");
    QuickPool::new(options, size, Duration::from_millis(500))
}

async fn backend(conn: &mut sqlx::PgConnection) -> i32 {
    sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(conn)
        .await
        .expect("a backend pid")
}

#[tokio::test]
async fn a_released_connection_is_the_next_one_leased() {
    let app = TestApp::spawn().await;
    let pool = pool(&app, 2).await;
    let mut lease = pool.acquire().await.unwrap();
    let first = backend(&mut lease).await;
    lease.release();
    assert_eq!(pool.num_idle(), 1);
    let mut lease = pool.acquire().await.unwrap();
    assert_eq!(backend(&mut lease).await, first);
    assert_eq!(pool.num_leased(), 1);
    lease.release();
    assert_eq!(pool.num_leased(), 0);
}

#[tokio::test]
async fn a_lease_dropped_mid_statement_is_reused_only_once_it_answers_again() {
    let app = TestApp::spawn().await;
    let pool = pool(&app, 1).await;
    let mut lease = pool.acquire().await.unwrap();
    let pid = backend(&mut lease).await;
    // The request goes away while PostgreSQL is still running its statement.
    let cut = tokio::time::timeout(
        Duration::from_millis(50),
        sqlx::query("SELECT pg_sleep(0.3)").execute(&mut *lease),
    )
    .await;
    assert!(cut.is_err(), "the statement was still running");
    drop(lease);
    // Its only slot stays taken until the connection has answered a ping...
    assert_eq!(pool.num_leased(), 1);
    let mut lease = tokio::time::timeout(Duration::from_secs(5), pool.acquire())
        .await
        .expect("the slot comes back")
        .unwrap();
    // ...and then it is in step again: this statement gets its own result, not the sleep's.
    assert_eq!(backend(&mut lease).await, pid);
    let n: i32 = sqlx::query_scalar("SELECT 42")
        .fetch_one(&mut *lease)
        .await
        .unwrap();
    assert_eq!(n, 42);
    lease.release();
}

#[tokio::test]
async fn a_broken_connection_is_closed_and_replaced() {
    let app = TestApp::spawn().await;
    let pool = pool(&app, 1).await;
    let mut lease = pool.acquire().await.unwrap();
    let pid = backend(&mut lease).await;
    let admin = sqlx::PgPool::connect(&app.db_url()).await.unwrap();
    sqlx::query("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .execute(&admin)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        sqlx::query("SELECT 1").execute(&mut *lease).await.is_err(),
        "the backend is gone"
    );
    drop(lease);
    let mut lease = tokio::time::timeout(Duration::from_secs(5), pool.acquire())
        .await
        .expect("a slot")
        .unwrap();
    assert_ne!(backend(&mut lease).await, pid, "a new connection");
    lease.release();
}

#[tokio::test]
async fn when_every_connection_is_leased_acquiring_times_out() {
    let app = TestApp::spawn().await;
    let pool = pool(&app, 1).await;
    let held = pool.acquire().await.unwrap();
    let second = pool.acquire().await;
    assert!(matches!(second, Err(sqlx::Error::PoolTimedOut)));
    held.release();
    pool.acquire().await.unwrap().release();
}
