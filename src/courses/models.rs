use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// A person's role within one course.
#[derive(sqlx::Type)]
#[sqlx(type_name = "text", rename_all = "snake_case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum CourseRole {
    #[default]
    Learner,
    Instructor,
}

impl CourseRole {
    pub fn as_str(self) -> &'static str {
        match self {
            CourseRole::Learner => "learner",
            CourseRole::Instructor => "instructor",
        }
    }
    /// A role as a request names it (a CSV row); `None` for any other word.
    pub fn parse(s: &str) -> Option<Self> {
        [CourseRole::Learner, CourseRole::Instructor]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CourseCreate {
    pub title: String,
    /// A short code such as `CS-451`.
    pub code: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Course {
    pub id: Uuid,
    pub title: String,
    pub code: Option<String>,
    pub created_at: DateTime<Utc>,
    /// Who created the course and owns it: they keep teaching it (co-instructors cannot demote
    /// them). Absent when nobody did (an admin's import, a deleted account).
    pub owner_id: Option<Uuid>,
    /// Your role in the course; absent for an admin who is not enrolled.
    pub my_role: Option<CourseRole>,
    /// When the course was archived: it is then read-only (no new enrollments, invitations,
    /// assignments or attempts) and listed only with `?archived=true`. Absent while active.
    pub archived_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CourseList {
    pub items: Vec<Course>,
    /// The cursor of the next page (pass it as `cursor`); absent on the last page.
    pub next: Option<String>,
}

/// Whom to enroll: by `email` or by `user_id` (exactly one).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnrollmentCreate {
    pub email: Option<String>,
    pub user_id: Option<Uuid>,
    #[serde(default)]
    pub role: CourseRole,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Enrollment {
    pub user_id: Uuid,
    pub display_name: String,
    pub email: Option<String>,
    pub role: CourseRole,
    pub enrolled_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Roster {
    pub items: Vec<Enrollment>,
    /// The cursor of the next page (pass it as `cursor`); absent on the last page.
    pub next: Option<String>,
}

/// A change of a course: only the fields given change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CourseUpdate {
    /// 1 to 200 characters.
    pub title: Option<String>,
    /// 1 to 64 characters; `null` removes the code.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub code: Option<Option<String>>,
    /// `true` archives the course (read-only), `false` makes it active again. An archived
    /// course accepts no other change until it is active again.
    pub archived: Option<bool>,
}

/// A field that is present (`Some`, possibly `null`) or absent (`None`, by `default`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// Which courses to list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct CourseListQuery {
    /// `true`: the archived courses instead of the active ones.
    #[serde(default)]
    pub archived: bool,
    /// Courses per page: 1 to 200; 50 when absent.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
    /// The `next` of the previous page; absent for the first page.
    pub cursor: Option<String>,
}
