//! Course exams stay secret: private quizzes, no practice twin, ownership, course-scoped
//! teaching, and who reads a key.

use chrono::{Duration, Utc};
use quizd::clock::Clock;
use serde_json::{Value, json};

use crate::attempts::{assert_no_key_material, choosing, quiz};
use crate::support::courses::assigned;
use crate::support::session::{Reply, Session};
use crate::support::{
    TestApp, assert_problem, author_exam, expect_status, get_as, post_as, private_quiz, send_quiz,
};

/// A course taught by `teacher` with `slug` (which they may place) assigned; returns the
/// course and assignment ids.
async fn course_with(app: &TestApp, teacher: &str, slug: &str, policy: Value) -> (String, String) {
    let course = expect_status(
        post_as(
            app,
            teacher,
            "/v1/courses",
            &json!({"title": "Exam course"}),
        )
        .await,
        201,
    )
    .await;
    let course = course["id"].as_str().unwrap().to_string();
    let a = expect_status(
        post_as(
            app,
            teacher,
            &format!("/v1/courses/{course}/assignments"),
            &json!({"quiz": slug, "policy": policy}),
        )
        .await,
        201,
    )
    .await;
    (course, a["id"].as_str().unwrap().to_string())
}

async fn enroll(app: &TestApp, teacher: &str, course: &str, user: uuid::Uuid, role: &str) {
    expect_status(
        post_as(
            app,
            teacher,
            &format!("/v1/courses/{course}/enrollments"),
            &json!({"user_id": user, "role": role}),
        )
        .await,
        201,
    )
    .await;
}

#[tokio::test]
async fn a_private_quiz_is_not_in_the_catalogue_and_reads_as_absent_to_all_but_its_authors() {
    let app = TestApp::spawn().await;
    let author = app.person("author@example.org", "instructor").await;
    author_exam(&app, &author, "exam").await;
    let other = app.person("other@example.org", "instructor").await;
    let learner = app.person("learner@example.org", "learner").await;

    let catalogue = app.get_json("/v1/quizzes", 200).await;
    let slugs: Vec<&str> = catalogue["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["slug"].as_str().unwrap())
        .collect();
    assert!(!slugs.contains(&"exam"), "{slugs:?}");
    assert!(slugs.contains(&"data-parallelism"));

    // 404, not 403: its existence does not leak.
    assert_problem(app.get("/v1/quizzes/exam").await, 404, "quiz_not_found").await;
    for token in [&other.access, &learner.access] {
        assert_problem(
            get_as(&app, token, "/v1/quizzes/exam").await,
            404,
            "quiz_not_found",
        )
        .await;
        assert_problem(
            get_as(&app, token, "/v1/quizzes/exam/versions/1").await,
            404,
            "version_not_found",
        )
        .await;
        assert_problem(
            get_as(&app, token, "/v1/quizzes/exam/analytics").await,
            404,
            "quiz_not_found",
        )
        .await;
    }
    // Signed in, its author finds it in the catalogue (to place it); nobody else does.
    let listed = |catalogue: Value| {
        catalogue["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["slug"] == "exam")
            .cloned()
    };
    let mine = listed(author.get("/v1/quizzes").await.status(200).await);
    assert_eq!(mine.unwrap()["visibility"], "private");
    for token in [&other.access, &learner.access] {
        assert!(
            listed(expect_status(get_as(&app, token, "/v1/quizzes").await, 200).await).is_none()
        );
    }
    // Its author previews it and reads its key.
    let quiz = author.get("/v1/quizzes/exam").await.status(200).await;
    assert_eq!(quiz["questions"][0]["prompt"], "Pick one");
    assert!(quiz["practice_assignment_id"].is_null());
    let key = author
        .get("/v1/quizzes/exam/versions/1")
        .await
        .status(200)
        .await;
    assert_eq!(key["questions"][0]["options"][0]["correct"], true);
}

#[tokio::test]
async fn a_private_quiz_has_no_practice_twin_and_cannot_ask_for_one() {
    let app = TestApp::spawn().await;
    let author = app.person("author@example.org", "instructor").await;
    author_exam(&app, &author, "exam").await;
    let learner = app.person("learner@example.org", "learner").await;
    learner
        .post("/v1/quizzes/exam/attempts", &json!({}))
        .await
        .problem(404, "quiz_not_found")
        .await;
    let practice: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM assignments a JOIN quizzes q ON q.id = a.quiz_id
          WHERE q.slug = 'exam' AND a.course_id IS NULL",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(practice, 0);
    let mine = learner.get("/v1/assignments").await.status(200).await;
    assert!(
        mine["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["quiz"] != "exam"),
        "{mine}"
    );
    // A practice section on a private quiz is refused, so no twin can be made by mistake.
    let with_practice =
        private_quiz("exam2").replace("title = \"Tiny\"\n", "title = \"Tiny\"\n\n[practice]\n");
    let res = send_quiz(&app, &author.access, None, &with_practice).await;
    let problem = assert_problem(res, 422, "invalid_content").await;
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("[practice] needs visibility")
    );
}

#[tokio::test]
async fn a_learner_gets_nothing_of_an_exams_questions_before_it_opens() {
    let app = TestApp::spawn().await;
    let author = app.person("author@example.org", "instructor").await;
    author_exam(&app, &author, "exam").await;
    let opens = (chrono::Utc::now() + chrono::Duration::days(1)).to_rfc3339();
    let (course, assignment) = course_with(
        &app,
        &author.access,
        "exam",
        json!({"feedback": "never", "opens_at": opens}),
    )
    .await;
    let learner = app.person("learner@example.org", "learner").await;
    enroll(&app, &author.access, &course, learner.id, "learner").await;

    let a = learner
        .get(&format!("/v1/assignments/{assignment}"))
        .await
        .status(200)
        .await;
    assert!(a.get("questions").is_none(), "{a}");
    learner
        .post(
            &format!("/v1/assignments/{assignment}/attempts"),
            &json!({}),
        )
        .await
        .problem(409, "not_open")
        .await;
    learner
        .get("/v1/quizzes/exam")
        .await
        .problem(404, "quiz_not_found")
        .await;
    learner
        .post("/v1/quizzes/exam/attempts", &json!({}))
        .await
        .problem(404, "quiz_not_found")
        .await;
}

#[tokio::test]
async fn two_instructors_creating_one_slug_at_once_get_one_201_and_one_409() {
    let app = TestApp::spawn().await;
    for round in 0..5 {
        let a = app
            .person(&format!("a{round}@example.org"), "instructor")
            .await;
        let b = app
            .person(&format!("b{round}@example.org"), "instructor")
            .await;
        let slug = format!("race-{round}");
        let quiz_a = private_quiz(&slug);
        let quiz_b = quiz_a.replace("Pick one", "Pick one of mine");
        let (ra, rb) = tokio::join!(
            send_quiz(&app, &a.access, None, &quiz_a),
            send_quiz(&app, &b.access, None, &quiz_b),
        );
        let mut statuses = [ra.status().as_u16(), rb.status().as_u16()];
        statuses.sort();
        assert_eq!(statuses, [201, 409], "round {round}");
        let loser = if ra.status() == 409 { ra } else { rb };
        assert_problem(loser, 409, "slug_taken").await;
        let versions: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM quiz_versions v JOIN quizzes q ON q.id = v.quiz_id WHERE q.slug = $1",
        )
        .bind(&slug)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert_eq!(versions, 1, "the loser's content became no version");
    }
}

#[tokio::test]
async fn an_author_posting_their_own_slug_again_gets_a_new_version() {
    let app = TestApp::spawn().await;
    let author = app.person("author@example.org", "instructor").await;
    author_exam(&app, &author, "exam").await;
    let body = expect_status(
        send_quiz(
            &app,
            &author.access,
            None,
            &private_quiz("exam").replace("Pick one", "Pick"),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        body,
        json!({"slug": "exam", "version": 2, "status": "new_version"})
    );
}

#[tokio::test]
async fn co_authors_change_a_quiz_and_read_its_key_and_only_the_owner_chooses_them() {
    let app = TestApp::spawn().await;
    let owner = app.person("owner@example.org", "instructor").await;
    let co = app.person("co@example.org", "instructor").await;
    let third = app.person("third@example.org", "instructor").await;
    author_exam(&app, &owner, "exam").await;
    let changed = private_quiz("exam").replace("Pick one", "Pick the one");

    // Not yet an author: the private quiz does not exist for them.
    assert_problem(
        send_quiz(&app, &co.access, Some("exam"), &changed).await,
        404,
        "quiz_not_found",
    )
    .await;
    assert_problem(
        send_quiz(&app, &co.access, None, &changed).await,
        409,
        "slug_taken",
    )
    .await;

    let add = |who: &str, whom: uuid::Uuid| {
        app.client
            .put(app.url(&format!("/v1/quizzes/exam/authors/{whom}")))
            .bearer_auth(who.to_string())
            .send()
    };
    expect_status(add(&owner.access, co.id).await.unwrap(), 204).await;
    expect_status(add(&owner.access, co.id).await.unwrap(), 204).await;
    // A co-author may change it and read its key, but not choose authors.
    expect_status(
        send_quiz(&app, &co.access, Some("exam"), &changed).await,
        200,
    )
    .await;
    co.get("/v1/quizzes/exam/versions/2")
        .await
        .status(200)
        .await;
    assert_problem(
        add(&co.access, third.id).await.unwrap(),
        403,
        "not_quiz_owner",
    )
    .await;
    let authors = co.get("/v1/quizzes/exam/authors").await.status(200).await;
    assert_eq!(authors["items"][0]["user_id"], owner.id.to_string());
    assert_eq!(authors["items"][0]["role"], "owner");
    assert_eq!(authors["items"][1]["user_id"], co.id.to_string());
    // The owner stays; a removed co-author is a stranger again.
    let remove = |whom: uuid::Uuid| {
        app.client
            .delete(app.url(&format!("/v1/quizzes/exam/authors/{whom}")))
            .bearer_auth(owner.access.clone())
            .send()
    };
    assert_problem(remove(owner.id).await.unwrap(), 409, "owner_stays").await;
    expect_status(remove(co.id).await.unwrap(), 204).await;
    co.get("/v1/quizzes/exam/versions/2")
        .await
        .problem(404, "version_not_found")
        .await;
}

#[tokio::test]
async fn staff_read_the_key_of_versions_assigned_in_their_course_and_no_other() {
    let app = TestApp::spawn().await;
    let x = app.person("x@example.org", "instructor").await;
    let y = app.person("y@example.org", "instructor").await;
    author_exam(&app, &x, "exam-a").await;
    author_exam(&app, &y, "exam-b").await;
    let (course_a, _) = course_with(&app, &x.access, "exam-a", json!({"feedback": "never"})).await;
    let (course_b, _) = course_with(&app, &y.access, "exam-b", json!({"feedback": "never"})).await;
    // A site learner who assists in course A and sits the exam in course B.
    let ta = app.person("ta@example.org", "learner").await;
    enroll(&app, &x.access, &course_a, ta.id, "instructor").await;
    enroll(&app, &y.access, &course_b, ta.id, "learner").await;

    let key = ta
        .get("/v1/quizzes/exam-a/versions/1")
        .await
        .status(200)
        .await;
    assert_eq!(key["questions"][0]["options"][0]["correct"], true);
    ta.get("/v1/quizzes/exam-b/versions/1")
        .await
        .problem(404, "version_not_found")
        .await;
    // Teaching course A lets them see its roster, not course B's.
    ta.get(&format!("/v1/courses/{course_a}/enrollments"))
        .await
        .status(200)
        .await;
    ta.get(&format!("/v1/courses/{course_b}/enrollments"))
        .await
        .problem(403, "forbidden")
        .await;
    // A site instructor reads no key of anyone else's quiz: not a private one, not a public one.
    y.get("/v1/quizzes/exam-a/versions/1")
        .await
        .problem(404, "version_not_found")
        .await;
    y.get("/v1/quizzes/data-parallelism/versions/1")
        .await
        .problem(403, "key_forbidden")
        .await;
}

#[tokio::test]
async fn an_instructor_cannot_place_someone_elses_private_quiz_to_read_its_key() {
    let app = TestApp::spawn().await;
    let x = app.person("x@example.org", "instructor").await;
    let y = app.person("y@example.org", "instructor").await;
    author_exam(&app, &x, "exam").await;
    let course = y
        .post("/v1/courses", &json!({"title": "Mine"}))
        .await
        .status(201)
        .await;
    let course = course["id"].as_str().unwrap();
    y.post(
        &format!("/v1/courses/{course}/assignments"),
        &json!({"quiz": "exam", "policy": {}}),
    )
    .await
    .problem(422, "unknown_quiz")
    .await;
    // A public quiz anyone may place.
    y.post(
        &format!("/v1/courses/{course}/assignments"),
        &json!({"quiz": "data-parallelism", "policy": {}}),
    )
    .await
    .status(201)
    .await;
}

#[tokio::test]
async fn a_co_instructor_cannot_demote_the_courses_owner() {
    let app = TestApp::spawn().await;
    let owner = app.person("owner@example.org", "instructor").await;
    let co = app.person("co@example.org", "learner").await;
    let course = owner
        .post("/v1/courses", &json!({"title": "Mine"}))
        .await
        .status(201)
        .await;
    assert_eq!(course["owner_id"], owner.id.to_string());
    let course = course["id"].as_str().unwrap();
    enroll(&app, &owner.access, course, co.id, "instructor").await;
    // The co-instructor (a site learner: teaching is a role in the course) manages the roster …
    let learner = app.person("l@example.org", "learner").await;
    enroll(&app, &co.access, course, learner.id, "learner").await;
    // … but cannot demote the owner, and nothing changes.
    co.post(
        &format!("/v1/courses/{course}/enrollments"),
        &json!({"user_id": owner.id, "role": "learner"}),
    )
    .await
    .problem(409, "course_owner_stays")
    .await;
    let roster = owner
        .get(&format!("/v1/courses/{course}/enrollments"))
        .await
        .status(200)
        .await;
    let owner_row = roster["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["user_id"] == owner.id.to_string())
        .unwrap();
    assert_eq!(owner_row["role"], "instructor");
}

#[tokio::test]
async fn a_private_quizs_images_are_refused_to_a_learner_and_served_to_its_author_and_in_its_attempts()
 {
    let app = TestApp::spawn().await;
    let author = app.person("author@example.org", "instructor").await;
    crate::media::import_pictures(&app, author.id, "exam", false).await;
    let fixed = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(crate::media::png(4, 3, 1)))
    };
    let path = format!("/v1/quizzes/exam/media/{fixed}");
    let learner = app.person("learner@example.org", "learner").await;
    // As its page: the quiz does not exist for them, nor for anyone signed out.
    learner
        .get(&path)
        .await
        .problem(404, "quiz_not_found")
        .await;
    assert_problem(app.get(&path).await, 404, "quiz_not_found").await;
    let page = author.get("/v1/quizzes/exam").await.status(200).await;
    assert_eq!(page["questions"][0]["image"]["url"], path);
    let bytes = author.get(&path).await.response().bytes().await.unwrap();
    assert_eq!(&bytes[..], &crate::media::png(4, 3, 1)[..]);
    // Assigned in a course, its learner sees it in their attempt, under the attempt's path.
    let (course, assignment) =
        course_with(&app, &author.access, "exam", json!({"feedback": "never"})).await;
    enroll(&app, &author.access, &course, learner.id, "learner").await;
    let attempt = learner
        .post(
            &format!("/v1/assignments/{assignment}/attempts"),
            &json!({}),
        )
        .await
        .status(201)
        .await;
    let url = attempt["questions"][0]["image"]["url"].as_str().unwrap();
    assert_eq!(
        url,
        format!(
            "/v1/attempts/{}/media/{fixed}",
            attempt["id"].as_str().unwrap()
        )
    );
    learner
        .get(url)
        .await
        .response()
        .error_for_status()
        .unwrap();
    // The course's teacher reads it too (they may read the attempt); the page stays closed.
    author.get(url).await.response().error_for_status().unwrap();
    learner
        .get(&path)
        .await
        .problem(404, "quiz_not_found")
        .await;
}

// A public quiz with practice, placed as an exam: the practice is closed to a learner while
// they sit the exam (issue #32).

/// `who`'s practice of the seed quiz (started, or their unfinished one resumed).
async fn practise(who: &Session<'_>) -> Reply {
    who.post("/v1/quizzes/data-parallelism/attempts", &json!({}))
        .await
}

#[tokio::test]
async fn a_learner_sitting_an_exam_gets_no_practice_of_its_quiz_until_it_is_over_for_them() {
    let t0 = Utc::now();
    let clock = Clock::manual(t0);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let content = quiz("data-parallelism");
    let teacher = app.person("teacher@example.org", "instructor").await;
    let policy = json!({"feedback": "on_finish", "attempts_allowed": 1, "time_limit_minutes": 30,
                        "opens_at": t0 + Duration::hours(1), "closes_at": t0 + Duration::days(1)});
    let (learner, assignment) = assigned(&teacher, "data-parallelism", policy).await;

    // Before the exam opens, practice is open: the learner starts one and leaves it unfinished.
    let practice = practise(&learner).await.status(201).await;
    let practice_path = format!("/v1/attempts/{}", practice["id"].as_str().unwrap());
    let q = &practice["questions"];
    let answer = |attempt: &Value, i: usize| {
        format!(
            "/v1/attempts/{}/responses/{}",
            attempt["id"].as_str().unwrap(),
            attempt["questions"][i]["id"].as_str().unwrap()
        )
    };
    learner
        .put(&answer(&practice, 0), &choosing(&content, &q[0], true))
        .await
        .status(200)
        .await;

    // The exam is open and not yet attempted: the practice is closed to them, every way in.
    clock.advance(Duration::hours(2));
    let refused = |r: Reply| r.problem(409, "practice_during_exam");
    refused(practise(&learner).await).await;
    refused(learner.get(&practice_path).await).await;
    refused(
        learner
            .put(&answer(&practice, 1), &choosing(&content, &q[1], true))
            .await,
    )
    .await;
    refused(learner.delete(&answer(&practice, 0)).await).await;
    refused(
        learner
            .post(&format!("{practice_path}/finish"), &json!({}))
            .await,
    )
    .await;
    // Someone not sitting it practises as before.
    let other = app.learner().await;
    practise(&other).await.status(201).await;

    // During the exam attempt too; once its one attempt is finished, the practice reopens.
    let exam = learner
        .post(
            &format!("/v1/assignments/{assignment}/attempts"),
            &json!({}),
        )
        .await
        .status(201)
        .await;
    refused(practise(&learner).await).await;
    learner
        .post(
            &format!("/v1/attempts/{}/finish", exam["id"].as_str().unwrap()),
            &json!({}),
        )
        .await
        .status(200)
        .await;
    let resumed = practise(&learner).await.status(200).await;
    assert_eq!(resumed["id"], practice["id"]);
    learner.get(&practice_path).await.status(200).await;
}

/// Every body `who` can read about the seed quiz now (answering a question of its practice,
/// if they get one), none of which may hold its key.
async fn learner_bodies(who: &Session<'_>, attempts: &[&Value]) -> Vec<(String, String)> {
    let content = quiz("data-parallelism");
    let text = |r: Reply| async move { r.response().text().await.unwrap() };
    let mut bodies = Vec::new();
    let practice = text(practise(who).await).await;
    if let Ok(p) = serde_json::from_str::<Value>(&practice)
        && let Some(q) = p["questions"][0].as_object()
    {
        let path = format!(
            "/v1/attempts/{}/responses/{}",
            p["id"].as_str().unwrap(),
            q["id"].as_str().unwrap()
        );
        let body = choosing(&content, &p["questions"][0], true);
        bodies.push((
            "a practice answer".into(),
            text(who.put(&path, &body).await).await,
        ));
    }
    bodies.push(("practice".into(), practice));
    bodies.push((
        "my attempts".into(),
        text(who.get("/v1/me/attempts").await).await,
    ));
    bodies.push((
        "my export".into(),
        text(who.get("/v1/me/export").await).await,
    ));
    for a in attempts {
        let path = format!("/v1/attempts/{}", a["id"].as_str().unwrap());
        bodies.push((path.clone(), text(who.get(&path).await).await));
        let finish = format!("{path}/finish");
        bodies.push((
            finish.clone(),
            text(who.post(&finish, &json!({})).await).await,
        ));
    }
    bodies
}

#[tokio::test]
async fn an_exam_with_practice_and_an_extension_shows_no_learner_the_key_before_their_own_close() {
    let t0 = Utc::now();
    let clock = Clock::manual(t0);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let content = quiz("data-parallelism");
    let teacher = app.person("teacher@example.org", "instructor").await;
    let closes = t0 + Duration::days(1);
    let policy = json!({"feedback": "after_close", "attempts_allowed": 1,
                        "time_limit_minutes": 60, "closes_at": closes});
    let (on_time, assignment) = assigned(&teacher, "data-parallelism", policy).await;
    let course = teacher
        .get(&format!("/v1/assignments/{assignment}"))
        .await
        .status(200)
        .await["course_id"]
        .as_str()
        .unwrap()
        .to_string();
    // A second learner with an extension: a later close and an extra attempt.
    let extended = app.learner().await;
    crate::support::courses::enroll(&teacher, &course, json!({"user_id": extended.id}))
        .await
        .status(201)
        .await;
    teacher
        .put(
            &format!("/v1/assignments/{assignment}/overrides/{}", extended.id),
            &json!({"closes_at": closes + Duration::days(1), "extra_attempts": 1}),
        )
        .await
        .status(200)
        .await;
    let scan = |bodies: Vec<(String, String)>, who: &str, moment: &str| {
        for (what, body) in bodies {
            assert_no_key_material(&body, &content, &format!("{moment}, {who}, {what}"));
        }
    };

    // Open, nobody started.
    scan(learner_bodies(&on_time, &[]).await, "on time", "open");
    scan(learner_bodies(&extended, &[]).await, "extended", "open");
    // Both sit it and answer everything.
    let start = format!("/v1/assignments/{assignment}/attempts");
    let mut sat = Vec::new();
    for who in [&on_time, &extended] {
        let attempt = who.post(&start, &json!({})).await.status(201).await;
        for (i, q) in attempt["questions"].as_array().unwrap().iter().enumerate() {
            let path = format!(
                "/v1/attempts/{}/responses/{}",
                attempt["id"].as_str().unwrap(),
                q["id"].as_str().unwrap()
            );
            let body = who
                .put(&path, &choosing(&content, q, i % 2 == 0))
                .await
                .response();
            let body = body.text().await.unwrap();
            assert_no_key_material(&body, &content, "an answer");
        }
        sat.push(attempt);
    }
    scan(
        learner_bodies(&on_time, &[&sat[0]]).await,
        "on time",
        "answered",
    );
    // The scan finished both attempts; then past the assignment's close, the learner on time
    // sees the key, the extended one (who may still start an attempt) does not.
    scan(
        learner_bodies(&extended, &[&sat[1]]).await,
        "extended",
        "finished",
    );
    clock.advance(Duration::days(1) + Duration::hours(1));
    let review = on_time
        .get(&format!("/v1/attempts/{}", sat[0]["id"].as_str().unwrap()))
        .await
        .status(200)
        .await;
    assert!(
        review["questions"][0]["result"]["correct"].is_boolean(),
        "{review}"
    );
    scan(
        learner_bodies(&extended, &[&sat[1]]).await,
        "extended",
        "after the close",
    );
    practise(&extended)
        .await
        .problem(409, "practice_during_exam")
        .await;
    // Past their own close, they see it too.
    clock.advance(Duration::days(1));
    let review = extended
        .get(&format!("/v1/attempts/{}", sat[1]["id"].as_str().unwrap()))
        .await
        .status(200)
        .await;
    assert!(
        review["questions"][0]["result"]["correct"].is_boolean(),
        "{review}"
    );
}
