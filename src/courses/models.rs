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
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CourseList {
    pub items: Vec<Course>,
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
}
