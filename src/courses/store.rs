//! SQL for courses and enrollments.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgExecutor};
use uuid::Uuid;

use super::models::{Course, CourseRole, Enrollment};

/// The role an enrollment takes when it is set again (`ON CONFLICT … DO UPDATE SET role = …`):
/// the course's owner (its creator) keeps teaching it, whoever asks — a co-instructor, an LMS
/// launch, a roster sync. Every upsert of an enrollment uses it.
#[macro_export]
macro_rules! owner_keeps_teaching {
    () => {
        "CASE WHEN enrollments.user_id = (SELECT created_by FROM courses
                                            WHERE id = enrollments.course_id)
              THEN 'instructor' ELSE EXCLUDED.role END"
    };
}

#[derive(FromRow)]
struct CourseRow {
    id: Uuid,
    title: String,
    code: Option<String>,
    created_at: DateTime<Utc>,
    owner_id: Option<Uuid>,
    my_role: Option<CourseRole>,
    archived_at: Option<DateTime<Utc>>,
}

impl From<CourseRow> for Course {
    fn from(r: CourseRow) -> Self {
        Course {
            id: r.id,
            title: r.title,
            code: r.code,
            created_at: r.created_at,
            owner_id: r.owner_id,
            my_role: r.my_role,
            archived_at: r.archived_at,
        }
    }
}

pub async fn insert_course(
    db: impl PgExecutor<'_>,
    title: &str,
    code: Option<&str>,
    created_by: Uuid,
) -> Result<Course, sqlx::Error> {
    let row: CourseRow = sqlx::query_as(
        "WITH c AS (INSERT INTO courses (id, title, code, created_by) VALUES ($1, $2, $3, $4)
                    RETURNING id, title, code, created_at, created_by AS owner_id, archived_at),
              e AS (INSERT INTO enrollments (course_id, user_id, role) SELECT id, $4, 'instructor' FROM c)
         SELECT c.*, 'instructor' AS my_role FROM c",
    )
    .bind(Uuid::now_v7())
    .bind(title)
    .bind(code)
    .bind(created_by)
    .fetch_one(db)
    .await?;
    Ok(row.into())
}

/// The courses a person is enrolled in (for admins, every course): the active ones, or the
/// archived ones.
/// A page of them, oldest first, after `after` (created, id); `fetch` at most.
pub async fn courses_for(
    db: impl PgExecutor<'_>,
    user: Uuid,
    all: bool,
    archived: bool,
    after: Option<(DateTime<Utc>, Uuid)>,
    fetch: i64,
) -> Result<Vec<Course>, sqlx::Error> {
    let rows: Vec<CourseRow> = sqlx::query_as(
        "SELECT c.id, c.title, c.code, c.created_at, c.created_by AS owner_id, e.role AS my_role,
                c.archived_at
           FROM courses c LEFT JOIN enrollments e ON e.course_id = c.id AND e.user_id = $1
          WHERE ($2 OR e.user_id IS NOT NULL) AND (c.archived_at IS NOT NULL) = $3
            AND ($4::timestamptz IS NULL OR (c.created_at, c.id) > ($4, $5))
          ORDER BY c.created_at, c.id LIMIT $6",
    )
    .bind(user)
    .bind(all)
    .bind(archived)
    .bind(after.map(|a| a.0))
    .bind(after.map(|a| a.1))
    .bind(fetch)
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// The course, with the person's role in it; `None` if there is no such course.
pub async fn course_for(
    db: impl PgExecutor<'_>,
    course: Uuid,
    user: Uuid,
) -> Result<Option<Course>, sqlx::Error> {
    let row: Option<CourseRow> = sqlx::query_as(
        "SELECT c.id, c.title, c.code, c.created_at, c.created_by AS owner_id, e.role AS my_role,
                c.archived_at
           FROM courses c LEFT JOIN enrollments e ON e.course_id = c.id AND e.user_id = $2
          WHERE c.id = $1",
    )
    .bind(course)
    .bind(user)
    .fetch_optional(db)
    .await?;
    Ok(row.map(Into::into))
}

#[derive(FromRow)]
struct EnrollmentRow {
    user_id: Uuid,
    display_name: String,
    email: Option<String>,
    role: CourseRole,
    enrolled_at: DateTime<Utc>,
}

impl From<EnrollmentRow> for Enrollment {
    fn from(r: EnrollmentRow) -> Self {
        Enrollment {
            user_id: r.user_id,
            display_name: r.display_name,
            email: r.email,
            role: r.role,
            enrolled_at: r.enrolled_at,
        }
    }
}

/// Enrolls a person (found by id, or by an email address their account has verified), or
/// changes their role if already enrolled. `None` when no such person exists: for an email,
/// also when the account that has it has not verified it, since an address typed at sign-up
/// proves nothing about who reads its mail (the caller invites the address instead, and the
/// account claims the invitation when it verifies the address).
pub async fn enroll(
    db: impl PgExecutor<'_>,
    course: Uuid,
    user_id: Option<Uuid>,
    email: Option<&str>,
    role: CourseRole,
) -> Result<Option<Enrollment>, sqlx::Error> {
    let row: Option<EnrollmentRow> = sqlx::query_as(concat!(
        "WITH u AS (SELECT id, display_name, email FROM users
                     WHERE id = $2 OR ($2 IS NULL AND lower(email) = lower(btrim($3))
                                               AND email_verified_at IS NOT NULL)),
              e AS (INSERT INTO enrollments (course_id, user_id, role)
                    SELECT $1, id, $4 FROM u
                    ON CONFLICT (course_id, user_id) DO UPDATE SET role = ",
        crate::owner_keeps_teaching!(),
        "
                    RETURNING user_id, role, created_at)
         SELECT e.user_id, u.display_name, u.email, e.role, e.created_at AS enrolled_at
           FROM e JOIN u ON u.id = e.user_id"
    ))
    .bind(course)
    .bind(user_id)
    .bind(email)
    .bind(role.as_str())
    .fetch_optional(db)
    .await?;
    Ok(row.map(Into::into))
}

/// The roster's sort key: instructors first, then by display name and id.
pub type RosterKey = (bool, String, Uuid);

/// A page of the roster, after `after` ([`RosterKey`]); `fetch` at most.
pub async fn roster(
    db: impl PgExecutor<'_>,
    course: Uuid,
    after: Option<&RosterKey>,
    fetch: i64,
) -> Result<Vec<Enrollment>, sqlx::Error> {
    let rows: Vec<EnrollmentRow> = sqlx::query_as(
        "SELECT e.user_id, u.display_name, u.email, e.role, e.created_at AS enrolled_at
           FROM enrollments e JOIN users u ON u.id = e.user_id
          WHERE e.course_id = $1
            AND ($2::bool IS NULL OR (e.role <> 'instructor', u.display_name, u.id) > ($2, $3, $4))
          ORDER BY e.role <> 'instructor', u.display_name, u.id LIMIT $5",
    )
    .bind(course)
    .bind(after.map(|a| a.0))
    .bind(after.map(|a| a.1.as_str()))
    .bind(after.map(|a| a.2))
    .bind(fetch)
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// Changes a course's title, code (`Some(None)` clears it) or archived state, with the
/// person's role in it; `None` if there is no such course.
pub async fn update_course(
    db: impl PgExecutor<'_>,
    course: Uuid,
    user: Uuid,
    title: Option<&str>,
    code: Option<Option<&str>>,
    archived_at: Option<Option<DateTime<Utc>>>,
) -> Result<Option<Course>, sqlx::Error> {
    let row: Option<CourseRow> = sqlx::query_as(
        "WITH c AS (UPDATE courses SET title = coalesce($3, title),
                                       code = CASE WHEN $4 THEN $5 ELSE code END,
                                       archived_at = CASE WHEN $6 THEN $7 ELSE archived_at END
                     WHERE id = $1
                 RETURNING id, title, code, created_at, created_by AS owner_id, archived_at)
         SELECT c.*, e.role AS my_role
           FROM c LEFT JOIN enrollments e ON e.course_id = c.id AND e.user_id = $2",
    )
    .bind(course)
    .bind(user)
    .bind(title)
    .bind(code.is_some())
    .bind(code.flatten())
    .bind(archived_at.is_some())
    .bind(archived_at.flatten())
    .fetch_optional(db)
    .await?;
    Ok(row.map(Into::into))
}

/// Whether the course is archived (`false` when there is no such course).
pub async fn is_archived(db: impl PgExecutor<'_>, course: Uuid) -> Result<bool, sqlx::Error> {
    let archived: Option<bool> =
        sqlx::query_scalar("SELECT archived_at IS NOT NULL FROM courses WHERE id = $1")
            .bind(course)
            .fetch_optional(db)
            .await?;
    Ok(archived.unwrap_or(false))
}

/// Ends a person's enrollment; the role they had (`None`: they were not enrolled). Their
/// attempts stay.
pub async fn unenroll(
    db: impl PgExecutor<'_>,
    course: Uuid,
    user: Uuid,
) -> Result<Option<CourseRole>, sqlx::Error> {
    sqlx::query_scalar(
        "DELETE FROM enrollments WHERE course_id = $1 AND user_id = $2 RETURNING role",
    )
    .bind(course)
    .bind(user)
    .fetch_optional(db)
    .await
}
