//! quizd's API tests: real HTTP against quizd on a real PostgreSQL.

mod analytics;
mod attempts;
mod auth;
mod authoring;
mod catalogue;
mod content;
mod courses;
mod errors;
mod openapi;
mod ops;
mod serve;
mod support;
