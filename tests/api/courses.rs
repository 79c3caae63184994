//! Courses, enrollments and assignments: who may see and do what, from both sides.

use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::{Person, TestApp, assert_problem, bearer, expect_status, get_as, post_as};

const QUIZ: &str = "data-parallelism";
const QUIZ_TITLE: &str = "Data Parallelism Quiz";

async fn create_course(app: &TestApp, who: &Person, title: &str) -> Value {
    let res = post_as(
        app,
        &who.access,
        "/v1/courses",
        &json!({ "title": title, "code": "CS-451" }),
    )
    .await;
    expect_status(res, 201).await
}

fn id_of(v: &Value) -> &str {
    v["id"].as_str().unwrap()
}

async fn enroll(app: &TestApp, who: &Person, course: &str, body: Value) -> reqwest::Response {
    post_as(
        app,
        &who.access,
        &format!("/v1/courses/{course}/enrollments"),
        &body,
    )
    .await
}

async fn enroll_learner(app: &TestApp, who: &Person, course: &str, learner: &Person) {
    let res = enroll(
        app,
        who,
        course,
        json!({ "user_id": learner.id, "role": "learner" }),
    )
    .await;
    expect_status(res, 201).await;
}

async fn create_assignment(
    app: &TestApp,
    who: &Person,
    course: &str,
    body: Value,
) -> reqwest::Response {
    post_as(
        app,
        &who.access,
        &format!("/v1/courses/{course}/assignments"),
        &body,
    )
    .await
}

async fn roster_ids(app: &TestApp, who: &Person, course: &str) -> Vec<(String, String)> {
    let res = get_as(
        app,
        &who.access,
        &format!("/v1/courses/{course}/enrollments"),
    )
    .await;
    let roster = expect_status(res, 200).await;
    roster["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["user_id"].as_str().unwrap().to_string(),
                e["role"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

async fn course_ids(app: &TestApp, who: &Person) -> Vec<String> {
    let list = expect_status(get_as(app, &who.access, "/v1/courses").await, 200).await;
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| id_of(c).to_string())
        .collect()
}

// Courses.

#[tokio::test]
async fn an_instructor_creates_a_course_and_is_its_instructor() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    let course = teacher
        .post(
            "/v1/courses",
            &json!({ "title": "  Parallel computing ", "code": " CS-451 " }),
        )
        .await
        .status(201)
        .await;
    let id = id_of(&course);
    Uuid::parse_str(id).unwrap();
    assert_eq!(course["title"], "Parallel computing");
    assert_eq!(course["code"], "CS-451");
    assert_eq!(course["my_role"], "instructor");
    assert!(course["created_at"].is_string());
    let fetched = teacher
        .get(&format!("/v1/courses/{id}"))
        .await
        .status(200)
        .await;
    assert_eq!(fetched, course);
    let list = teacher.get("/v1/courses").await.status(200).await;
    assert_eq!(list["items"], json!([course]));
    assert_eq!(
        roster_ids(&app, &teacher, id).await,
        [(teacher.id.to_string(), "instructor".to_string())]
    );
    // A course without a code.
    let res = teacher
        .post("/v1/courses", &json!({ "title": "Other" }))
        .await
        .response();
    assert_eq!(expect_status(res, 201).await["code"], Value::Null);
}

#[tokio::test]
async fn a_course_needs_a_valid_title_and_code() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    for (body, status, code) in [
        (json!({ "title": "" }), 422, "invalid_field"),
        (json!({ "title": "   " }), 422, "invalid_field"),
        (json!({ "title": "x".repeat(201) }), 422, "invalid_field"),
        (json!({ "title": "Ok", "code": "" }), 422, "invalid_field"),
        (
            json!({ "title": "Ok", "code": "x".repeat(65) }),
            422,
            "invalid_field",
        ),
        (json!({ "title": "Bad\u{0}title" }), 400, "invalid_field"),
        (json!({ "code": "CS-1" }), 400, "invalid_body"),
        (
            json!({ "title": "Ok", "owner": "someone" }),
            400,
            "invalid_body",
        ),
    ] {
        teacher
            .post("/v1/courses", &body)
            .await
            .problem(status, code)
            .await;
    }
    assert!(course_ids(&app, &teacher).await.is_empty());
}

#[tokio::test]
async fn a_learner_cannot_create_a_course() {
    let app = TestApp::spawn().await;
    let learner = app.person("ada@example.com", "learner").await;
    learner
        .post("/v1/courses", &json!({ "title": "Mine" }))
        .await
        .problem(403, "forbidden")
        .await;
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM courses")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(count, 0);
    // An admin can, and becomes its instructor.
    let admin = app.person("admin@example.com", "admin").await;
    let course = create_course(&app, &admin, "Admin's course").await;
    assert_eq!(course["my_role"], "instructor");
}

#[tokio::test]
async fn an_instructor_enrolls_people_by_email_and_by_id() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    let ada = app.person("Ada@Example.com", "learner").await;
    let grace = app.person("grace@example.com", "learner").await;
    let colleague = app.person("colleague@example.com", "instructor").await;
    let course = create_course(&app, &teacher, "Parallel computing").await;
    let id = id_of(&course);

    // By email, in any case.
    let res = enroll(
        &app,
        &teacher,
        id,
        json!({ "email": "ADA@example.COM", "role": "learner" }),
    )
    .await;
    let enrollment = expect_status(res, 201).await;
    assert_eq!(enrollment["user_id"], ada.id.to_string());
    assert_eq!(enrollment["email"], "Ada@Example.com");
    assert_eq!(enrollment["display_name"], "Person Ada@Example.com");
    assert_eq!(enrollment["role"], "learner");
    assert!(enrollment["enrolled_at"].is_string());
    // By id, with the default role (learner).
    let res = enroll(&app, &teacher, id, json!({ "user_id": grace.id })).await;
    assert_eq!(expect_status(res, 201).await["role"], "learner");
    // A co-instructor.
    let res = enroll(
        &app,
        &teacher,
        id,
        json!({ "user_id": colleague.id, "role": "instructor" }),
    )
    .await;
    assert_eq!(expect_status(res, 201).await["role"], "instructor");

    let mut roster = roster_ids(&app, &teacher, id).await;
    roster.sort();
    let mut expected = vec![
        (teacher.id.to_string(), "instructor".to_string()),
        (colleague.id.to_string(), "instructor".to_string()),
        (ada.id.to_string(), "learner".to_string()),
        (grace.id.to_string(), "learner".to_string()),
    ];
    expected.sort();
    assert_eq!(roster, expected);

    // The co-instructor manages the course too.
    assert_eq!(roster_ids(&app, &colleague, id).await.len(), 4);
    let res = create_assignment(&app, &colleague, id, json!({ "quiz": QUIZ })).await;
    expect_status(res, 201).await;

    // Enrolling again changes the role rather than duplicating.
    let res = enroll(
        &app,
        &teacher,
        id,
        json!({ "email": "grace@example.com", "role": "instructor" }),
    )
    .await;
    assert_eq!(expect_status(res, 201).await["role"], "instructor");
    let roster = roster_ids(&app, &teacher, id).await;
    assert_eq!(roster.len(), 4);
    assert!(roster.contains(&(grace.id.to_string(), "instructor".to_string())));
}

#[tokio::test]
async fn enrolling_someone_who_does_not_exist_or_ambiguously_is_refused() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    let ada = app.person("ada@example.com", "learner").await;
    let course = create_course(&app, &teacher, "Parallel computing").await;
    let id = id_of(&course);
    for (body, status, code) in [
        // An unknown email is an invitation now (tests/api/invitations.rs), unless it is none.
        (
            json!({ "email": "nobody-at-example.com" }),
            422,
            "invalid_email",
        ),
        (json!({ "user_id": Uuid::now_v7() }), 422, "unknown_user"),
        (json!({ "role": "learner" }), 422, "invalid_enrollment"),
        (
            json!({ "email": "ada@example.com", "user_id": ada.id }),
            422,
            "invalid_enrollment",
        ),
        (
            json!({ "user_id": ada.id, "role": "admin" }),
            400,
            "invalid_body",
        ),
        (json!({ "user_id": "not-a-uuid" }), 400, "invalid_body"),
        (
            json!({ "user_id": ada.id, "extra": 1 }),
            400,
            "invalid_body",
        ),
    ] {
        let res = enroll(&app, &teacher, id, body.clone()).await;
        let problem = assert_problem(res, status, code).await;
        assert!(problem["detail"].is_string(), "{body}");
    }
    assert_eq!(roster_ids(&app, &teacher, id).await.len(), 1);
}

#[tokio::test]
async fn a_learner_sees_only_the_courses_they_are_in() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    let ada = app.person("ada@example.com", "learner").await;
    let grace = app.person("grace@example.com", "learner").await;
    let mine = create_course(&app, &teacher, "Ada's course").await;
    let other = create_course(&app, &teacher, "Not Ada's course").await;
    enroll_learner(&app, &teacher, id_of(&mine), &ada).await;

    let list = ada.get("/v1/courses").await.status(200).await;
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["id"], mine["id"]);
    assert_eq!(items[0]["title"], "Ada's course");
    assert_eq!(items[0]["my_role"], "learner");
    let course = ada
        .get(&format!("/v1/courses/{}", id_of(&mine)))
        .await
        .status(200)
        .await;
    assert_eq!(course["my_role"], "learner");
    // The other course does not exist for her, just like one that truly does not.
    for id in [id_of(&other).to_string(), Uuid::now_v7().to_string()] {
        ada.get(&format!("/v1/courses/{id}"))
            .await
            .problem(404, "course_not_found")
            .await;
        ada.get(&format!("/v1/courses/{id}/assignments"))
            .await
            .problem(404, "course_not_found")
            .await;
    }
    // Someone in no course sees none.
    assert!(course_ids(&app, &grace).await.is_empty());
    grace
        .get(&format!("/v1/courses/{}", id_of(&mine)))
        .await
        .problem(404, "course_not_found")
        .await;
    // The teacher sees both.
    assert_eq!(course_ids(&app, &teacher).await.len(), 2);
}

#[tokio::test]
async fn another_instructors_course_does_not_exist_for_an_instructor_not_in_it() {
    let app = TestApp::spawn().await;
    let owner = app.person("owner@example.com", "instructor").await;
    let outsider = app.person("outsider@example.com", "instructor").await;
    let ada = app.person("ada@example.com", "learner").await;
    let course = create_course(&app, &owner, "Owner's course").await;
    let id = id_of(&course);
    let res = create_assignment(&app, &owner, id, json!({ "quiz": QUIZ })).await;
    let assignment = expect_status(res, 201).await;

    assert!(course_ids(&app, &outsider).await.is_empty());
    let course_path = format!("/v1/courses/{id}");
    outsider
        .get(&course_path)
        .await
        .problem(404, "course_not_found")
        .await;
    outsider
        .get(&format!("{course_path}/enrollments"))
        .await
        .problem(404, "course_not_found")
        .await;
    let res = enroll(&app, &outsider, id, json!({ "user_id": ada.id })).await;
    assert_problem(res, 404, "course_not_found").await;
    let res = enroll(
        &app,
        &outsider,
        id,
        json!({ "user_id": outsider.id, "role": "instructor" }),
    )
    .await;
    assert_problem(res, 404, "course_not_found").await;
    outsider
        .get(&format!("{course_path}/assignments"))
        .await
        .problem(404, "course_not_found")
        .await;
    let res = create_assignment(&app, &outsider, id, json!({ "quiz": QUIZ })).await;
    assert_problem(res, 404, "course_not_found").await;
    outsider
        .get(&format!("/v1/assignments/{}", id_of(&assignment)))
        .await
        .problem(404, "assignment_not_found")
        .await;

    // Nothing was changed by the attempts.
    assert_eq!(roster_ids(&app, &owner, id).await.len(), 1);
    let list = owner
        .get(&format!("{course_path}/assignments"))
        .await
        .status(200)
        .await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn an_enrolled_learner_cannot_manage_the_course() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    let ada = app.person("ada@example.com", "learner").await;
    let grace = app.person("grace@example.com", "learner").await;
    let course = create_course(&app, &teacher, "Parallel computing").await;
    let id = id_of(&course);
    enroll_learner(&app, &teacher, id, &ada).await;

    ada.get(&format!("/v1/courses/{id}/enrollments"))
        .await
        .problem(403, "forbidden")
        .await;
    let res = enroll(&app, &ada, id, json!({ "user_id": grace.id })).await;
    assert_problem(res, 403, "forbidden").await;
    let res = enroll(
        &app,
        &ada,
        id,
        json!({ "user_id": ada.id, "role": "instructor" }),
    )
    .await;
    assert_problem(res, 403, "forbidden").await;
    let res = create_assignment(&app, &ada, id, json!({ "quiz": QUIZ })).await;
    assert_problem(res, 403, "forbidden").await;
    // She may still see the course and its assignments.
    let res = ada
        .get(&format!("/v1/courses/{id}/assignments"))
        .await
        .response();
    assert_eq!(expect_status(res, 200).await["items"], json!([]));
    // And nothing changed.
    let roster = roster_ids(&app, &teacher, id).await;
    assert_eq!(roster.len(), 2);
    assert!(roster.contains(&(ada.id.to_string(), "learner".to_string())));
}

#[tokio::test]
async fn an_instructor_enrolled_as_a_learner_cannot_manage_that_course() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    let student = app.person("ta@example.com", "instructor").await;
    let course = create_course(&app, &teacher, "Parallel computing").await;
    let id = id_of(&course);
    enroll_learner(&app, &teacher, id, &student).await;
    let res = student.get(&format!("/v1/courses/{id}")).await.response();
    assert_eq!(expect_status(res, 200).await["my_role"], "learner");
    student
        .get(&format!("/v1/courses/{id}/enrollments"))
        .await
        .problem(403, "forbidden")
        .await;
    let res = enroll(
        &app,
        &student,
        id,
        json!({ "user_id": student.id, "role": "instructor" }),
    )
    .await;
    assert_problem(res, 403, "forbidden").await;
    let res = create_assignment(&app, &student, id, json!({ "quiz": QUIZ })).await;
    assert_problem(res, 403, "forbidden").await;
}

#[tokio::test]
async fn an_admin_sees_and_manages_every_course() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    let other = app.person("other@example.com", "instructor").await;
    let admin = app.person("admin@example.com", "admin").await;
    let ada = app.person("ada@example.com", "learner").await;
    let first = create_course(&app, &teacher, "First").await;
    let second = create_course(&app, &other, "Second").await;

    let list = admin.get("/v1/courses").await.status(200).await;
    let items = list["items"].as_array().unwrap();
    let ids: Vec<&str> = items.iter().map(id_of).collect();
    assert_eq!(ids, [id_of(&first), id_of(&second)]);
    assert!(items.iter().all(|c| c["my_role"].is_null()), "{list}");

    let id = id_of(&second);
    let course = admin
        .get(&format!("/v1/courses/{id}"))
        .await
        .status(200)
        .await;
    assert_eq!(course["title"], "Second");
    assert!(course["my_role"].is_null());
    let res = enroll(&app, &admin, id, json!({ "email": "ada@example.com" })).await;
    expect_status(res, 201).await;
    let roster = roster_ids(&app, &admin, id).await;
    assert_eq!(roster.len(), 2);
    assert!(roster.contains(&(ada.id.to_string(), "learner".to_string())));
    let res = create_assignment(
        &app,
        &admin,
        id,
        json!({ "quiz": QUIZ, "title": "Set by the admin" }),
    )
    .await;
    let assignment = expect_status(res, 201).await;
    let res = admin
        .get(&format!("/v1/assignments/{}", id_of(&assignment)))
        .await
        .response();
    assert_eq!(expect_status(res, 200).await["title"], "Set by the admin");
    let res = admin
        .get(&format!("/v1/courses/{id}/assignments"))
        .await
        .response();
    assert_eq!(
        expect_status(res, 200).await["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // The admin did not become a member by managing it.
    assert!(
        !roster_ids(&app, &admin, id)
            .await
            .iter()
            .any(|(u, _)| *u == admin.id.to_string())
    );
    // Ada, enrolled by the admin, now sees the course and the assignment.
    assert_eq!(course_ids(&app, &ada).await, [id.to_string()]);
    ada.get(&format!("/v1/assignments/{}", id_of(&assignment)))
        .await
        .status(200)
        .await;
    // A course that does not exist is 404 even for an admin.
    admin
        .get(&format!("/v1/courses/{}", Uuid::now_v7()))
        .await
        .problem(404, "course_not_found")
        .await;
    let res = enroll(
        &app,
        &admin,
        &Uuid::now_v7().to_string(),
        json!({ "user_id": ada.id }),
    )
    .await;
    assert_problem(res, 404, "course_not_found").await;
}

#[tokio::test]
async fn a_malformed_course_or_assignment_id_is_a_bad_request() {
    let app = TestApp::spawn().await;
    let admin = app.person("admin@example.com", "admin").await;
    for path in [
        "/v1/courses/not-a-uuid",
        "/v1/courses/123/enrollments",
        "/v1/courses/x/assignments",
        "/v1/assignments/nope",
    ] {
        admin.get(path).await.problem(400, "invalid_path").await;
    }
}

// Assignments.

#[tokio::test]
async fn an_assignment_keeps_the_policy_it_was_given() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    let course = create_course(&app, &teacher, "Parallel computing").await;
    let id = id_of(&course);
    let policy = json!({
        "feedback": "on_finish",
        "attempts_allowed": 3,
        "time_limit_minutes": 45,
        "grading_method": "latest",
        "shuffle_questions": true,
        "shuffle_options": true,
        "navigation": "sequential",
        "opens_at": "2030-01-01T09:00:00Z",
        "closes_at": "2030-01-08T09:00:00Z",
    });
    let res = create_assignment(
        &app,
        &teacher,
        id,
        json!({ "quiz": QUIZ, "title": " Week 1 check ", "policy": policy }),
    )
    .await;
    let assignment = expect_status(res, 201).await;
    Uuid::parse_str(id_of(&assignment)).unwrap();
    assert_eq!(assignment["course_id"], id);
    assert_eq!(assignment["quiz"], QUIZ);
    assert_eq!(assignment["quiz_version"], 1);
    assert_eq!(assignment["title"], "Week 1 check");
    assert_eq!(assignment["policy"], policy);
    assert!(assignment["created_at"].is_string());

    let mut fetched = teacher
        .get(&format!("/v1/assignments/{}", id_of(&assignment)))
        .await
        .status(200)
        .await;
    // The one assignment read also says how many attempts the reader has left.
    let yours = fetched.as_object_mut().unwrap().remove("your_attempts");
    assert_eq!(yours.unwrap()["used"], 0);
    assert_eq!(fetched, assignment);
    let list = teacher
        .get(&format!("/v1/courses/{id}/assignments"))
        .await
        .status(200)
        .await;
    assert_eq!(list["items"], json!([assignment]));

    // Each feedback timing and grading method is kept.
    for (feedback, grading) in [
        ("immediate", "highest"),
        ("after_close", "first"),
        ("never", "average"),
    ] {
        let res = create_assignment(
            &app,
            &teacher,
            id,
            json!({ "quiz": QUIZ, "policy": { "feedback": feedback, "grading_method": grading } }),
        )
        .await;
        let a = expect_status(res, 201).await;
        assert_eq!(a["policy"]["feedback"], feedback);
        assert_eq!(a["policy"]["grading_method"], grading);
    }
}

#[tokio::test]
async fn an_assignment_defaults_to_the_quiz_title_and_the_default_policy() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    let course = create_course(&app, &teacher, "Parallel computing").await;
    let id = id_of(&course);
    let res = create_assignment(&app, &teacher, id, json!({ "quiz": QUIZ })).await;
    let assignment = expect_status(res, 201).await;
    assert_eq!(assignment["title"], QUIZ_TITLE);
    assert_eq!(assignment["quiz_version"], 1);
    assert_eq!(
        assignment["policy"],
        json!({
            "feedback": "immediate",
            "attempts_allowed": null,
            "time_limit_minutes": null,
            "grading_method": "highest",
            "shuffle_questions": false,
            "shuffle_options": false,
            "navigation": "free",
        })
    );
    // A partial policy keeps the defaults for what it leaves out.
    let res = create_assignment(
        &app,
        &teacher,
        id,
        json!({ "quiz": "kinds-sampler", "policy": { "attempts_allowed": 2 } }),
    )
    .await;
    let assignment = expect_status(res, 201).await;
    assert_eq!(assignment["quiz"], "kinds-sampler");
    assert_eq!(assignment["policy"]["attempts_allowed"], 2);
    assert_eq!(assignment["policy"]["feedback"], "immediate");
    assert_eq!(assignment["policy"]["shuffle_options"], false);
    let quiz = app.get_json("/v1/quizzes/kinds-sampler?lang=en", 200).await;
    assert_eq!(assignment["title"], quiz["title"]["text"]);
}

#[tokio::test]
async fn an_assignment_of_an_unknown_quiz_or_version_is_refused() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    let course = create_course(&app, &teacher, "Parallel computing").await;
    let id = id_of(&course);
    for body in [
        json!({ "quiz": "no-such-quiz" }),
        json!({ "quiz": "Data-Parallelism" }),
        json!({ "quiz": "../data-parallelism" }),
        json!({ "quiz": "" }),
        json!({ "quiz": "x".repeat(100) }),
        json!({ "quiz": QUIZ, "version": 2 }),
        json!({ "quiz": QUIZ, "version": 0 }),
        json!({ "quiz": QUIZ, "version": -1 }),
    ] {
        let res = create_assignment(&app, &teacher, id, body.clone()).await;
        let problem = assert_problem(res, 422, "unknown_quiz").await;
        assert!(problem["detail"].is_string(), "{body}");
    }
    let res = create_assignment(&app, &teacher, id, json!({ "title": "No quiz" })).await;
    assert_problem(res, 400, "invalid_body").await;
    let res = create_assignment(&app, &teacher, id, json!({ "quiz": QUIZ, "course": id })).await;
    assert_problem(res, 400, "invalid_body").await;
    let res = create_assignment(&app, &teacher, id, json!({ "quiz": QUIZ, "title": "" })).await;
    assert_problem(res, 422, "invalid_field").await;
    let list = teacher
        .get(&format!("/v1/courses/{id}/assignments"))
        .await
        .status(200)
        .await;
    assert_eq!(list["items"], json!([]));
}

#[tokio::test]
async fn an_invalid_policy_is_refused() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    let course = create_course(&app, &teacher, "Parallel computing").await;
    let id = id_of(&course);
    let cases = [
        (json!({ "attempts_allowed": 0 }), 422, "invalid_policy"),
        (json!({ "attempts_allowed": 1001 }), 422, "invalid_policy"),
        (json!({ "time_limit_minutes": 0 }), 422, "invalid_policy"),
        (
            json!({ "time_limit_minutes": 10081 }),
            422,
            "invalid_policy",
        ),
        (
            json!({ "opens_at": "2030-01-08T00:00:00Z", "closes_at": "2030-01-01T00:00:00Z" }),
            422,
            "invalid_policy",
        ),
        (
            json!({ "opens_at": "2030-01-01T00:00:00Z", "closes_at": "2030-01-01T00:00:00Z" }),
            422,
            "invalid_policy",
        ),
        (json!({ "attempts_allowed": -1 }), 400, "invalid_body"),
        (json!({ "attempts_allowed": 1.5 }), 400, "invalid_body"),
        (
            json!({ "attempts_allowed": 4_294_967_296u64 }),
            400,
            "invalid_body",
        ),
        (json!({ "feedback": "sometimes" }), 400, "invalid_body"),
        (json!({ "grading_method": "best" }), 400, "invalid_body"),
        (json!({ "opens_at": "next tuesday" }), 400, "invalid_body"),
        (json!({ "max_score": 10 }), 400, "invalid_body"),
    ];
    for (policy, status, code) in cases {
        let res = create_assignment(
            &app,
            &teacher,
            id,
            json!({ "quiz": QUIZ, "policy": policy.clone() }),
        )
        .await;
        let problem = assert_problem(res, status, code).await;
        assert!(problem["detail"].is_string(), "{policy}");
    }
    let list = teacher
        .get(&format!("/v1/courses/{id}/assignments"))
        .await
        .status(200)
        .await;
    assert_eq!(list["items"], json!([]));
    // The limits themselves are fine.
    let res = create_assignment(
        &app,
        &teacher,
        id,
        json!({ "quiz": QUIZ, "policy": { "attempts_allowed": 1000, "time_limit_minutes": 10080,
            "opens_at": "2030-01-01T00:00:00Z", "closes_at": "2030-01-01T00:00:01Z" } }),
    )
    .await;
    expect_status(res, 201).await;
}

#[tokio::test]
async fn a_course_assignment_is_visible_to_its_members_only() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    let outsider_teacher = app.person("other@example.com", "instructor").await;
    let admin = app.person("admin@example.com", "admin").await;
    let ada = app.person("ada@example.com", "learner").await;
    let grace = app.person("grace@example.com", "learner").await;
    let course = create_course(&app, &teacher, "Parallel computing").await;
    let id = id_of(&course);
    enroll_learner(&app, &teacher, id, &ada).await;
    let res = create_assignment(&app, &teacher, id, json!({ "quiz": QUIZ })).await;
    let assignment = expect_status(res, 201).await;
    let path = format!("/v1/assignments/{}", id_of(&assignment));

    for who in [&teacher, &ada, &admin] {
        let res = get_as(&app, &who.access, &path).await;
        let mut read = expect_status(res, 200).await;
        assert!(
            read.as_object_mut()
                .unwrap()
                .remove("your_attempts")
                .is_some()
        );
        assert_eq!(read, assignment, "{}", who.email);
    }
    let res = ada
        .get(&format!("/v1/courses/{id}/assignments"))
        .await
        .response();
    assert_eq!(expect_status(res, 200).await["items"], json!([assignment]));
    // Not in the course: it does not exist, exactly like one that does not.
    for who in [&grace, &outsider_teacher] {
        let res = get_as(&app, &who.access, &path).await;
        assert_problem(res, 404, "assignment_not_found").await;
    }
    grace
        .get(&format!("/v1/assignments/{}", Uuid::now_v7()))
        .await
        .problem(404, "assignment_not_found")
        .await;
    // Without a token, nothing.
    let res = app.get(&path).await;
    assert_problem(res, 401, "unauthorized").await;
}

#[tokio::test]
async fn the_practice_assignment_is_open_to_any_signed_in_learner() {
    let app = TestApp::spawn().await;
    let ada = app.person("ada@example.com", "learner").await;
    let quiz = app.get_json(&format!("/v1/quizzes/{QUIZ}"), 200).await;
    let practice = quiz["practice_assignment_id"]
        .as_str()
        .expect("a practice assignment");
    let path = format!("/v1/assignments/{practice}");
    let assignment = ada.get(&path).await.status(200).await;
    assert_eq!(assignment["id"], practice);
    assert!(assignment["course_id"].is_null());
    assert_eq!(assignment["quiz"], QUIZ);
    assert_eq!(assignment["quiz_version"], quiz["version"]);
    assert_eq!(assignment["title"], QUIZ_TITLE);
    let policy = &assignment["policy"];
    assert_eq!(policy["feedback"], "immediate");
    assert_eq!(policy["shuffle_options"], true);
    assert_eq!(policy["shuffle_questions"], false);
    assert_eq!(policy["grading_method"], "highest");
    assert!(policy["attempts_allowed"].is_null());
    assert!(policy["time_limit_minutes"].is_null());
    assert!(policy.get("opens_at").is_none() && policy.get("closes_at").is_none());
    // Every quiz version has one.
    let list = app.get_json("/v1/quizzes", 200).await;
    for q in list["items"].as_array().unwrap() {
        let id = q["practice_assignment_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{q}"));
        ada.get(&format!("/v1/assignments/{id}"))
            .await
            .status(200)
            .await;
    }
    // But not anonymously.
    assert_problem(app.get(&path).await, 401, "unauthorized").await;
}

#[tokio::test]
async fn an_assignment_pins_the_quiz_version_it_was_given() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    let course = create_course(&app, &teacher, "Parallel computing").await;
    let id = id_of(&course);
    // A second version of the quiz, now current, with a new title.
    sqlx::query(
        "WITH v1 AS (SELECT v.* FROM quiz_versions v JOIN quizzes q ON q.id = v.quiz_id
                      WHERE q.slug = $1 AND v.version = 1),
              v2 AS (INSERT INTO quiz_versions (id, quiz_id, version, content_hash, content)
                     SELECT gen_random_uuid(), quiz_id, 2, content_hash || '-v2',
                            jsonb_set(content, '{title,en}', '\"Data Parallelism Quiz, revised\"')
                       FROM v1 RETURNING id, quiz_id)
         UPDATE quizzes SET current_version_id = v2.id FROM v2 WHERE quizzes.id = v2.quiz_id",
    )
    .bind(QUIZ)
    .execute(&app.pool)
    .await
    .unwrap();

    let res = create_assignment(&app, &teacher, id, json!({ "quiz": QUIZ, "version": 1 })).await;
    let pinned = expect_status(res, 201).await;
    assert_eq!(pinned["quiz_version"], 1);
    assert_eq!(pinned["title"], QUIZ_TITLE);
    let res = create_assignment(&app, &teacher, id, json!({ "quiz": QUIZ })).await;
    let current = expect_status(res, 201).await;
    assert_eq!(current["quiz_version"], 2);
    assert_eq!(current["title"], "Data Parallelism Quiz, revised");
    let res = create_assignment(&app, &teacher, id, json!({ "quiz": QUIZ, "version": 2 })).await;
    assert_eq!(expect_status(res, 201).await["quiz_version"], 2);
    let res = create_assignment(&app, &teacher, id, json!({ "quiz": QUIZ, "version": 3 })).await;
    assert_problem(res, 422, "unknown_quiz").await;
    // The pin holds when read back.
    let res = teacher
        .get(&format!("/v1/assignments/{}", id_of(&pinned)))
        .await
        .response();
    assert_eq!(expect_status(res, 200).await["quiz_version"], 1);
}

#[tokio::test]
async fn the_roster_lists_instructors_first() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teach@example.com", "instructor").await;
    let colleague = app.person("zed@example.com", "instructor").await;
    let ada = app.person("ada@example.com", "learner").await;
    let course = create_course(&app, &teacher, "Parallel computing").await;
    let id = id_of(&course);
    enroll_learner(&app, &teacher, id, &ada).await;
    let res = enroll(
        &app,
        &teacher,
        id,
        json!({ "user_id": colleague.id, "role": "instructor" }),
    )
    .await;
    expect_status(res, 201).await;
    let roles: Vec<String> = roster_ids(&app, &teacher, id)
        .await
        .into_iter()
        .map(|(_, role)| role)
        .collect();
    assert_eq!(roles, ["instructor", "instructor", "learner"]);
}

// Course management: change, archive, unenroll.

#[tokio::test]
async fn an_instructor_renames_and_recodes_a_course_and_nobody_else_can() {
    let app = TestApp::spawn().await;
    let teacher = app.instructor().await;
    let outsider = app.instructor().await;
    let learner = app.learner().await;
    let course = create_course(&app, &teacher, "Parallel computing").await;
    let id = id_of(&course);
    enroll_learner(&app, &teacher, id, &learner).await;
    let path = format!("/v1/courses/{id}");

    let body = json!({ "title": " Data parallelism ", "code": "CS-452" });
    let changed = teacher.patch(&path, &body).await.status(200).await;
    assert_eq!(changed["title"], "Data parallelism");
    assert_eq!(changed["code"], "CS-452");
    assert_eq!(changed["my_role"], "instructor");
    assert!(changed["archived_at"].is_null());
    // Only what is given changes; `null` removes the code.
    let body = json!({ "code": null });
    let changed = teacher.patch(&path, &body).await.status(200).await;
    assert_eq!(changed["title"], "Data parallelism");
    assert!(changed["code"].is_null());
    let seen = learner.get(&path).await.status(200).await;
    assert_eq!(seen["title"], "Data parallelism");

    for (body, status, code) in [
        (json!({ "title": "" }), 422, "invalid_field"),
        (json!({ "title": "x".repeat(201) }), 422, "invalid_field"),
        (json!({ "code": "y".repeat(65) }), 422, "invalid_field"),
        (
            json!({ "title": "Fine", "owner_id": learner.id }),
            400,
            "invalid_body",
        ),
        (json!({ "archived": "yes" }), 400, "invalid_body"),
    ] {
        teacher
            .patch(&path, &body)
            .await
            .problem(status, code)
            .await;
    }
    let mine = json!({ "title": "Mine" });
    learner
        .patch(&path, &mine)
        .await
        .problem(403, "forbidden")
        .await;
    let res = outsider.patch(&path, &mine).await;
    res.problem(404, "course_not_found").await;
    let seen = teacher.get(&path).await.status(200).await;
    assert_eq!(seen["title"], "Data parallelism");
}

#[tokio::test]
async fn an_archived_course_is_read_only_listed_apart_and_takes_no_new_attempts() {
    let app = TestApp::spawn().await;
    let teacher = app.instructor().await;
    let learner = app.learner().await;
    let late = app.learner().await;
    let grace = app.learner().await;
    let course = create_course(&app, &teacher, "Parallel computing").await;
    let id = id_of(&course);
    enroll_learner(&app, &teacher, id, &learner).await;
    enroll_learner(&app, &teacher, id, &grace).await;
    let res = create_assignment(&app, &teacher, id, json!({ "quiz": QUIZ })).await;
    let assignment = expect_status(res, 201).await;
    let attempts = format!("/v1/assignments/{}/attempts", id_of(&assignment));
    // Grace has an attempt in progress when the course is archived.
    let in_progress = grace.post(&attempts, &json!({})).await.status(201).await;

    let path = format!("/v1/courses/{id}");
    let archive = json!({ "archived": true });
    let archived = teacher.patch(&path, &archive).await.status(200).await;
    let archived_at = archived["archived_at"].as_str().unwrap().to_string();
    // Archived again: the first time stays.
    let again = teacher.patch(&path, &archive).await.status(200).await;
    assert_eq!(again["archived_at"], archived_at.as_str());

    // Listed apart, for staff and learners alike; still readable.
    assert!(course_ids(&app, &teacher).await.is_empty());
    assert!(course_ids(&app, &learner).await.is_empty());
    let listed: Value = learner.get("/v1/courses?archived=true").await.ok().await;
    assert_eq!(listed["items"][0]["id"], id);
    assert_eq!(roster_ids(&app, &teacher, id).await.len(), 3);
    let seen = teacher.get(&path).await.status(200).await;
    assert_eq!(seen["archived_at"], archived_at.as_str());

    // Nothing new: enrollments, invitations, rosters, assignments, attempts, other changes.
    let res = enroll(&app, &teacher, id, json!({ "user_id": late.id })).await;
    assert_problem(res, 409, "course_archived").await;
    let res = enroll(&app, &teacher, id, json!({ "email": "new@example.com" })).await;
    assert_problem(res, 409, "course_archived").await;
    let res = bearer(
        &app,
        reqwest::Method::POST,
        &format!("{path}/enrollments/csv"),
        &teacher.access,
    )
    .header("content-type", "text/csv")
    .body("email,role\nnew@example.com,learner\n")
    .send()
    .await
    .unwrap();
    assert_problem(res, 409, "course_archived").await;
    let unenroll = format!("{path}/enrollments/{}", learner.id);
    let res = teacher.delete(&unenroll).await;
    res.problem(409, "course_archived").await;
    let res = create_assignment(&app, &teacher, id, json!({ "quiz": QUIZ })).await;
    assert_problem(res, 409, "course_archived").await;
    let res = teacher.patch(&path, &json!({ "title": "Renamed" })).await;
    res.problem(409, "course_archived").await;
    let res = learner.post(&attempts, &json!({})).await;
    res.problem(409, "course_archived").await;
    // An attempt already in progress resumes (it finishes as its rules say).
    let resumed = grace.post(&attempts, &json!({})).await.status(200).await;
    assert_eq!(resumed["id"], in_progress["id"]);
    // The learner cannot archive or restore it.
    let res = learner.patch(&path, &json!({ "archived": false })).await;
    res.problem(403, "forbidden").await;

    // Made active again (with a change in the same request), it takes everything again.
    let body = json!({ "archived": false, "title": "Again" });
    let active = teacher.patch(&path, &body).await.status(200).await;
    assert!(active["archived_at"].is_null());
    assert_eq!(active["title"], "Again");
    assert_eq!(course_ids(&app, &teacher).await, vec![id.to_string()]);
    learner.post(&attempts, &json!({})).await.status(201).await;
    enroll_learner(&app, &teacher, id, &late).await;
}

#[tokio::test]
async fn unenrolling_keeps_the_learners_attempts_and_never_removes_the_owner() {
    let app = TestApp::spawn().await;
    let owner = app.person("owner@example.com", "instructor").await;
    let colleague = app.person("colleague@example.com", "instructor").await;
    let outsider = app.person("outsider@example.com", "instructor").await;
    let learner = app.person("ada@example.com", "learner").await;
    let other = app.person("bob@example.com", "learner").await;
    let course = create_course(&app, &owner, "Parallel computing").await;
    let id = id_of(&course);
    enroll_learner(&app, &owner, id, &learner).await;
    enroll_learner(&app, &owner, id, &other).await;
    let res = enroll(
        &app,
        &owner,
        id,
        json!({ "user_id": colleague.id, "role": "instructor" }),
    )
    .await;
    expect_status(res, 201).await;
    let res = create_assignment(&app, &owner, id, json!({ "quiz": QUIZ })).await;
    let assignment = expect_status(res, 201).await;
    let attempts = format!("/v1/assignments/{}/attempts", id_of(&assignment));
    let attempt = learner.post(&attempts, &json!({})).await.status(201).await;
    let attempt_path = format!("/v1/attempts/{}", id_of(&attempt));

    let delete = |who: &Person, user: Uuid| {
        bearer(
            &app,
            reqwest::Method::DELETE,
            &format!("/v1/courses/{id}/enrollments/{user}"),
            &who.access,
        )
        .send()
    };
    // Nobody removes the owner, not even a co-instructor or the owner.
    for who in [&colleague, &owner] {
        assert_problem(
            delete(who, owner.id).await.unwrap(),
            409,
            "course_owner_stays",
        )
        .await;
    }
    // A learner of the course may not; an instructor of another course does not see it.
    assert_problem(delete(&other, learner.id).await.unwrap(), 403, "forbidden").await;
    assert_problem(
        delete(&outsider, learner.id).await.unwrap(),
        404,
        "course_not_found",
    )
    .await;
    assert_problem(
        delete(&owner, outsider.id).await.unwrap(),
        404,
        "enrollment_not_found",
    )
    .await;
    let res = bearer(
        &app,
        reqwest::Method::DELETE,
        &format!("/v1/courses/{id}/enrollments/not-a-uuid"),
        &owner.access,
    )
    .send()
    .await
    .unwrap();
    assert_problem(res, 400, "invalid_path").await;

    expect_status(delete(&colleague, learner.id).await.unwrap(), 204).await;
    assert!(
        !roster_ids(&app, &owner, id)
            .await
            .iter()
            .any(|(u, _)| *u == learner.id.to_string())
    );
    learner
        .get(&format!("/v1/courses/{id}"))
        .await
        .problem(404, "course_not_found")
        .await;
    // The attempt stays: its learner and the course's staff still read it.
    learner.get(&attempt_path).await.status(200).await;
    owner.get(&attempt_path).await.status(200).await;
    let listed = owner.get(&attempts).await.status(200).await;
    assert!(listed.to_string().contains(id_of(&attempt)), "{listed}");
    assert_problem(
        delete(&owner, learner.id).await.unwrap(),
        404,
        "enrollment_not_found",
    )
    .await;
    // A co-instructor may leave; the owner still teaches.
    expect_status(delete(&colleague, colleague.id).await.unwrap(), 204).await;
    let res = owner.get(&format!("/v1/courses/{id}")).await.response();
    assert_eq!(expect_status(res, 200).await["my_role"], "instructor");
}

#[tokio::test]
async fn a_learner_removed_from_the_course_can_no_longer_answer_clear_or_finish() {
    let t0 = chrono::Utc::now();
    let clock = quizd::clock::Clock::manual(t0);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let owner = app.person("owner@example.com", "instructor").await;
    let learner = app.person("ada@example.com", "learner").await;
    let course = create_course(&app, &owner, "Parallel computing").await;
    let id = id_of(&course);
    enroll_learner(&app, &owner, id, &learner).await;
    let policy = json!({ "feedback": "on_finish", "time_limit_minutes": 30 });
    let res = create_assignment(&app, &owner, id, json!({ "quiz": QUIZ, "policy": policy })).await;
    let assignment = expect_status(res, 201).await;
    let attempts = format!("/v1/assignments/{}/attempts", id_of(&assignment));
    let attempt = learner.post(&attempts, &json!({})).await.status(201).await;
    let attempt_path = format!("/v1/attempts/{}", id_of(&attempt));
    let response = |i: usize| {
        format!(
            "{attempt_path}/responses/{}",
            attempt["questions"][i]["id"].as_str().unwrap()
        )
    };
    let pick = |i: usize| json!({ "selected": [attempt["questions"][i]["options"][0]["id"]] });
    learner.put(&response(0), &pick(0)).await.status(200).await;
    let before = owner.get(&attempts).await.status(200).await;

    owner
        .delete(&format!("/v1/courses/{id}/enrollments/{}", learner.id))
        .await
        .status(204)
        .await;
    // Their attempt takes nothing more from them: no answer, no clearing, no finish.
    let removed = |r: crate::support::session::Reply| r.problem(403, "not_enrolled");
    removed(learner.put(&response(1), &pick(1)).await).await;
    removed(learner.put(&response(0), &pick(0)).await).await;
    removed(learner.delete(&response(0)).await).await;
    removed(
        learner
            .post(&format!("{attempt_path}/finish"), &json!({}))
            .await,
    )
    .await;
    learner
        .post(&attempts, &json!({}))
        .await
        .problem(404, "assignment_not_found")
        .await;
    // It stays as it was, in progress with its one answer, in the course's results.
    assert_eq!(owner.get(&attempts).await.status(200).await, before);
    let seen = owner.get(&attempt_path).await.status(200).await;
    assert_eq!(seen["state"], "in_progress");
    let answered = seen["questions"].as_array().unwrap().iter();
    assert_eq!(answered.filter(|q| !q["response"].is_null()).count(), 1);
    learner.get(&attempt_path).await.status(200).await;
    // The deadline sweep finishes it at its deadline with what was answered, as any other.
    clock.advance(chrono::Duration::minutes(31));
    quizd::attempts::finish_expired(&app.pool, clock.now())
        .await
        .unwrap();
    let seen = owner.get(&attempt_path).await.status(200).await;
    assert_eq!(seen["finish_reason"], "deadline");
}

#[tokio::test]
async fn unenrolling_archiving_and_restoring_a_course_are_on_the_audit_record() {
    let app = TestApp::spawn().await;
    let owner = app.person("owner@example.com", "instructor").await;
    let admin = app.person("admin@example.com", "admin").await;
    let learner = app.person("ada@example.com", "learner").await;
    let course = create_course(&app, &owner, "Parallel computing").await;
    let id = id_of(&course);
    enroll_learner(&app, &owner, id, &learner).await;
    let path = format!("/v1/courses/{id}");
    for archived in [true, true, false] {
        owner
            .patch(&path, &json!({ "archived": archived }))
            .await
            .status(200)
            .await;
    }
    let unenroll = format!("/v1/courses/{id}/enrollments/{}", learner.id);
    let res = bearer(&app, reqwest::Method::DELETE, &unenroll, &owner.access)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    let log = admin.get("/v1/audit").await.status(200).await;
    // Newest first; archiving an archived course again is no new entry.
    let entries: Vec<(Value, Value, Value)> = log["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].clone(),
                e["subject_id"].clone(),
                e["detail"].clone(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            (
                json!("enrollment_removed"),
                json!(learner.id),
                json!({"course_id": id, "role": "learner"})
            ),
            (
                json!("course_restored"),
                Value::Null,
                json!({"course_id": id})
            ),
            (
                json!("course_archived"),
                Value::Null,
                json!({"course_id": id})
            ),
        ]
    );
    assert!(
        log["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["actor_id"] == json!(owner.id))
    );
}
