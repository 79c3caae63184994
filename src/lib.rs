//! quizd: a quiz and assessment service.

// No `unsafe` but in the private PostgreSQL launcher (`db::postgres`, which allows it), so that
// the compiler keeps it there (docs/ARCHITECTURE.md, "Unsafe code").
#![deny(unsafe_code)]

pub mod analytics;
pub mod app;
pub mod assignments;
pub mod attempts;
pub mod audit;
pub mod auth;
pub mod background;
pub mod clock;
pub mod conditional;
pub mod content;
pub mod courses;
pub mod db;
pub mod error;
pub mod events;
pub mod extract;
pub mod frontend;
pub mod grades;
pub mod grading;
pub mod i18n;
pub mod idempotency;
pub mod invitations;
pub mod live;
pub mod lti;
pub mod mail;
pub mod net;
pub mod openapi;
pub mod ops;
pub mod pagination;
pub mod policy;
pub mod privacy;
pub mod quizzes;
pub mod state;
pub mod telemetry;
pub mod validate;
