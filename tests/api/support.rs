//! The test harness: a real PostgreSQL (the private one quizd runs when no `DATABASE_URL` is
//! set, or the server `DATABASE_URL` names), a fresh database per test cloned from a migrated
//! and seeded template, and quizd serving real HTTP on a loopback port. People and their
//! requests: [`session`] (`app.learner()`, `learner.get(path).await.status(200)`).
//!
//! By concern: [`postgres`] (the cluster and its templates), [`app`] (the [`TestApp`]),
//! [`people`] (registering and signing in), [`http`] (requests and checks by hand),
//! [`quizzes`] (content and quizzes), [`courses`] (a course with a quiz assigned), [`peer`]
//! (the Python peers and their virtual environments). What tests use is re-exported here.

mod app;
pub mod courses;
mod http;
pub mod peer;
mod people;
mod postgres;
mod quizzes;
pub mod session;

use std::path::Path;

pub use app::{TestApp, alone, passes_alone, wait_until};
pub use http::{
    assert_problem, bearer, client_from, expect_status, get_as, patch_as, post_as, put_as,
};
pub use people::{
    PASSWORD, Person, login, login_request, register, register_unverified, token_for,
};
pub use quizzes::{TINY_QUIZ, author_exam, content_dir, private_quiz, send_quiz};

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}
