//! quizd: a quiz and assessment service.

pub mod analytics;
pub mod app;
pub mod assignments;
pub mod attempts;
pub mod audit;
pub mod auth;
pub mod clock;
pub mod content;
pub mod courses;
pub mod db;
pub mod error;
pub mod extract;
pub mod grading;
pub mod i18n;
pub mod invitations;
pub mod lti;
pub mod mail;
pub mod net;
pub mod openapi;
pub mod ops;
pub mod policy;
pub mod privacy;
pub mod quizzes;
pub mod telemetry;
pub mod validate;
pub mod web;
