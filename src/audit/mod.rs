//! The audit log: security-relevant actions (role changes, co-authors, key reads by staff, LMS
//! registrations, erasures, overrides, grade changes by hand, unenrollments, archived courses),
//! append-only in PostgreSQL, read
//! by admins at `GET /v1/audit`.

pub mod routes;
pub mod store;

use actix_web::HttpRequest;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::state::AppState;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, sqlx::Type)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum Action {
    /// An admin changed a person's site role (`detail`: from, to).
    RoleChanged,
    /// A quiz's owner or an admin added a co-author (`detail`: quiz).
    CoauthorAdded,
    CoauthorRemoved,
    /// Someone who is not an author read a version's key: course staff or an admin
    /// (`detail`: quiz, version).
    KeyRead,
    LtiRegistrationCreated,
    LtiRegistrationUpdated,
    LtiRegistrationDeleted,
    /// A person erased their account (`subject`: the erased id).
    AccountErased,
    /// Course staff set a learner's override of an assignment or accommodation in a course
    /// (`subject`: the learner; `detail`: assignment or course, and the override).
    OverrideSet,
    OverrideRemoved,
    /// Course staff set an attempt's grade by hand (`subject`: the learner; `detail`: attempt,
    /// from, to).
    GradeOverridden,
    /// Course staff moved an assignment to another version of its quiz and regraded its
    /// attempts (`detail`: assignment, from and to version, attempts and grades changed).
    AssignmentRegraded,
    /// Course staff unenrolled someone (`subject`: the person; `detail`: course, role).
    EnrollmentRemoved,
    /// Course staff archived a course, or made it active again (`detail`: course).
    CourseArchived,
    CourseRestored,
    /// An admin subscribed a URL to events (`subject`: the subscription; `detail`: url, topics).
    WebhookCreated,
    /// An admin changed a subscription (`detail`: what it is now).
    WebhookUpdated,
    WebhookDeleted,
    /// An admin rotated a subscription's signing secret (the secrets are never recorded).
    WebhookSecretRotated,
}

/// One action to record.
pub struct Entry {
    pub actor: Option<Uuid>,
    pub action: Action,
    pub subject: Option<Uuid>,
    pub detail: serde_json::Value,
    pub address: Option<String>,
}

impl Entry {
    /// An action by the signed-in `actor`, from the request's client address (forwarded
    /// headers believed only from trusted proxies).
    pub fn by(actor: Uuid, action: Action, req: &HttpRequest) -> Self {
        let address = req
            .app_data::<actix_web::web::Data<AppState>>()
            .and_then(|state| state.trusted_proxies.client_ip(req));
        Self {
            actor: Some(actor),
            action,
            subject: None,
            detail: serde_json::Value::Object(Default::default()),
            address: address.map(|ip| ip.to_string()),
        }
    }

    /// The erasure of `person`: only their opaque id (as actor and subject), no address.
    pub fn erasure(person: Uuid) -> Self {
        Self {
            actor: Some(person),
            action: Action::AccountErased,
            subject: Some(person),
            detail: serde_json::Value::Object(Default::default()),
            address: None,
        }
    }

    pub fn subject(mut self, id: Uuid) -> Self {
        self.subject = Some(id);
        self
    }

    pub fn detail(mut self, detail: serde_json::Value) -> Self {
        self.detail = detail;
        self
    }
}
