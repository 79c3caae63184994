//! The tests' PostgreSQL: the private server quizd runs when no `DATABASE_URL` is set (or the
//! server `DATABASE_URL` names), started once per test process, with two templates every
//! test's database is cloned from: migrated and seeded with the content, and migrated only.

use std::path::Path;
use std::str::FromStr;
use std::sync::OnceLock;

use quizd::db::{self, postgres::PrivatePostgres};
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection};

use super::content_dir;

pub(super) struct Cluster {
    pub(super) admin: PgConnectOptions,
    pub(super) admin_url: String,
    pub(super) seeded_template: String,
    pub(super) empty_template: String,
    _server: Option<PrivatePostgres>,
}

fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Starts (once per test process) the server and the two templates.
pub(super) fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        // A thread of its own: the tests' runtimes must not nest another.
        std::thread::spawn(start_cluster)
            .join()
            .expect("the test cluster starts")
    })
}

fn start_cluster() -> Cluster {
    let (admin_url, server) = match std::env::var("DATABASE_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            let tmp = std::env::temp_dir();
            // Clusters of test processes that have ended stop with them; remove their files.
            for entry in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                if let Some(pid) = name.strip_prefix("quizd-test-pg-")
                    && let Ok(pid) = pid.parse::<u32>()
                    && !process_alive(pid)
                {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
            let dir = tmp.join(format!("quizd-test-pg-{}", std::process::id()));
            let server = PrivatePostgres::start(&db::postgres::Options {
                dir,
                durable: false,
                max_connections: 400,
                settings: Vec::new(),
            })
            .expect("a private PostgreSQL starts for the tests");
            (server.url("postgres"), Some(server))
        }
    };
    let admin = PgConnectOptions::from_str(&admin_url).expect("DATABASE_URL parses");
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let empty_template = format!("quizd_tpl_empty_{tag}");
    let seeded_template = format!("quizd_tpl_seeded_{tag}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut conn = PgConnection::connect_with(&admin)
            .await
            .expect("admin connection");
        for name in [&empty_template, &seeded_template] {
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                .execute(&mut conn)
                .await
                .unwrap();
            let pool = db::pool_options(2)
                .connect_with(admin.clone().database(name))
                .await
                .unwrap();
            db::MIGRATOR.run(&pool).await.expect("migrations apply");
            if *name == seeded_template {
                let quizzes =
                    quizd::content::load_dir(&content_dir()).expect("seed content is valid");
                quizd::content::store::import(
                    &pool,
                    &quizzes,
                    quizd::content::store::Importer::Files,
                )
                .await
                .unwrap();
            }
            pool.close().await;
        }
    });
    Cluster {
        admin,
        admin_url,
        seeded_template,
        empty_template,
        _server: server,
    }
}
