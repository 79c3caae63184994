//! quizd: a quiz and assessment service.

pub mod app;
pub mod content;
pub mod db;
pub mod error;
pub mod i18n;
pub mod openapi;
pub mod ops;
pub mod policy;
pub mod quizzes;
pub mod telemetry;
