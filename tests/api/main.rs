//! quizd's API tests: real HTTP against quizd on a real PostgreSQL.

mod authoring;
mod catalogue;
mod content;
mod errors;
mod openapi;
mod ops;
mod serve;
mod support;
