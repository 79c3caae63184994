//! quizd's API tests: real HTTP against quizd on a real PostgreSQL.

mod abuse;
mod analytics;
mod attempts;
mod auth;
mod authoring;
mod banks;
mod catalogue;
mod content;
mod courses;
mod durability;
mod errors;
mod exams;
mod grades;
mod idempotency;
mod invitations;
mod lti;
mod mailbox;
mod openapi;
mod ops;
mod pool;
mod privacy;
mod proxies;
mod secrecy;
mod serve;
mod support;
mod translations;
