//! What the benchmarks share: a private PostgreSQL with the seed content imported, an admin,
//! and a course assignment of the seed quiz (version 1) to fill with attempts.

use quizd::assignments::store::{NewAssignment, insert};
use quizd::content::QuizContent;
use quizd::db::{self, postgres};
use uuid::Uuid;

pub struct Seeded {
    /// Each example compiles this module on its own; not every one reads every field.
    #[allow(dead_code)]
    pub server: postgres::PrivatePostgres,
    /// The database's directory, removed when dropped (after `server` stopped).
    _dir: tempfile::TempDir,
    pub pool: sqlx::PgPool,
    /// The seed quiz's content, its version 1 and its assignment.
    #[allow(dead_code)]
    pub content: QuizContent,
    #[allow(dead_code)]
    pub version_id: Uuid,
    pub assignment: Uuid,
    #[allow(dead_code)]
    pub admin: Uuid,
}

#[allow(dead_code)]
pub async fn seeded(prefix: &str) -> anyhow::Result<Seeded> {
    seeded_with(prefix, Vec::new()).await
}

/// [`seeded`] with more server settings (`name=value`).
pub async fn seeded_with(prefix: &str, settings: Vec<String>) -> anyhow::Result<Seeded> {
    let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
    let server = postgres::PrivatePostgres::start(&postgres::Options {
        dir: dir.path().to_path_buf(),
        durable: true,
        max_connections: 50,
        settings,
    })?;
    let pool = db::connect(&server.url(postgres::DB_NAME), 8).await?;
    db::MIGRATOR.run(&pool).await?;
    let content_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("content");
    let quizzes = quizd::content::load_dir(&content_dir)?;
    let imported =
        quizd::content::store::import(&pool, &quizzes, quizd::content::store::Importer::Files)
            .await?;
    let version_id = imported
        .iter()
        .find(|i| i.slug == "data-parallelism")
        .unwrap()
        .version_id;
    let content = quizzes
        .into_iter()
        .find(|q| q.slug == "data-parallelism")
        .unwrap();
    let quiz_id: Uuid =
        sqlx::query_scalar("SELECT id FROM quizzes WHERE slug = 'data-parallelism'")
            .fetch_one(&pool)
            .await?;
    let admin: Uuid = sqlx::query_scalar(
        "INSERT INTO users (id, display_name, role) VALUES ($1, 'Bench admin', 'admin') RETURNING id",
    )
    .bind(Uuid::now_v7())
    .fetch_one(&pool)
    .await?;
    let course: Uuid =
        sqlx::query_scalar("INSERT INTO courses (id, title) VALUES ($1, 'Bench') RETURNING id")
            .bind(Uuid::now_v7())
            .fetch_one(&pool)
            .await?;
    let assignment = insert(
        &pool,
        NewAssignment {
            course_id: Some(course),
            quiz_id,
            quiz_version_id: version_id,
            title: "Bench",
            policy: content
                .practice
                .as_ref()
                .expect("the seed quiz offers practice"),
            created_by: Some(admin),
        },
    )
    .await?;
    Ok(Seeded {
        server,
        _dir: dir,
        pool,
        content,
        version_id,
        assignment,
        admin,
    })
}
