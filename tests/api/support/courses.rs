//! Courses as the tests set them up: a teacher's course with a learner enrolled and a quiz
//! assigned, the start of most tests of taking a quiz.

use serde_json::{Value, json};

use super::session::{Reply, Session};

/// A new course of `teacher`'s with `learner@example.org` registered and enrolled (by address,
/// as a teacher enrolls a verified account) and the quiz `slug` assigned under `policy`:
/// the learner, signed in, and the assignment's id.
pub async fn assigned<'a>(
    teacher: &Session<'a>,
    slug: &str,
    policy: Value,
) -> (Session<'a>, String) {
    let course = teacher
        .post("/v1/courses", &json!({"title": "Distributed training"}))
        .await
        .status(201)
        .await;
    let course = course["id"].as_str().unwrap();
    let learner = teacher.app().person("learner@example.org", "learner").await;
    enroll(teacher, course, json!({"email": learner.email}))
        .await
        .status(201)
        .await;
    let assignment = teacher
        .post(
            &format!("/v1/courses/{course}/assignments"),
            &json!({"quiz": slug, "policy": policy}),
        )
        .await
        .status(201)
        .await;
    (learner, assignment["id"].as_str().unwrap().to_string())
}

/// `teacher`'s `POST /v1/courses/{course}/enrollments` of `body` (an email, with a role, or a
/// user id): `201` enrolled, `202` invited.
pub async fn enroll(teacher: &Session<'_>, course: &str, body: Value) -> Reply {
    teacher
        .post(&format!("/v1/courses/{course}/enrollments"), &body)
        .await
}
