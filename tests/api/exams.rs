//! Running a course exam through HTTP with the manual clock: changing, closing, deleting an
//! assignment; overrides and accommodations reaching attempts in progress; sequential
//! navigation.

use chrono::{DateTime, Duration, Utc};
use quizd::clock::Clock;
use quizd::content::load_dir;
use serde_json::{Value, json};

use crate::support::{
    Person, TestApp, assert_problem, bearer, content_dir, expect_status, get_as, patch_as, post_as,
    put_as, register, token_for,
};

/// A course taught by `teacher`, with `learners` enrolled as learners.
struct Course {
    teacher: Person,
    learners: Vec<Person>,
    id: String,
}

async fn course(app: &TestApp, learners: usize) -> Course {
    let teacher = token_for(app, "teacher@example.org", "instructor").await;
    let body = json!({"title": "Distributed training"});
    let course = expect_status(
        post_as(app, &teacher.access, "/v1/courses", &body).await,
        201,
    )
    .await;
    let id = course["id"].as_str().unwrap().to_string();
    let mut people = Vec::new();
    for i in 0..learners {
        let learner = register(app, &format!("learner{i}@example.org")).await;
        let path = format!("/v1/courses/{id}/enrollments");
        expect_status(
            post_as(
                app,
                &teacher.access,
                &path,
                &json!({"email": learner.email}),
            )
            .await,
            201,
        )
        .await;
        people.push(learner);
    }
    Course {
        teacher,
        learners: people,
        id,
    }
}

/// An assignment of the seed quiz in the course under `policy`; its id.
async fn assignment(app: &TestApp, c: &Course, policy: Value) -> String {
    let path = format!("/v1/courses/{}/assignments", c.id);
    let body = json!({"quiz": "data-parallelism", "policy": policy});
    let a = expect_status(post_as(app, &c.teacher.access, &path, &body).await, 201).await;
    a["id"].as_str().unwrap().to_string()
}

async fn start(app: &TestApp, who: &Person, assignment: &str) -> reqwest::Response {
    let path = format!("/v1/assignments/{assignment}/attempts");
    post_as(app, &who.access, &path, &json!({})).await
}

async fn read(app: &TestApp, who: &Person, attempt: &Value) -> Value {
    let path = format!("/v1/attempts/{}", attempt["id"].as_str().unwrap());
    expect_status(get_as(app, &who.access, &path).await, 200).await
}

/// Answers `question` (as served) with its `option`th option.
async fn answer(
    app: &TestApp,
    who: &Person,
    attempt: &Value,
    question: &Value,
    option: usize,
) -> reqwest::Response {
    let path = format!(
        "/v1/attempts/{}/responses/{}",
        attempt["id"].as_str().unwrap(),
        question["id"].as_str().unwrap()
    );
    let body = json!({"selected": [question["options"][option]["id"]]});
    put_as(app, &who.access, &path, &body).await
}

async fn finish(app: &TestApp, who: &Person, attempt: &Value) -> Value {
    let path = format!("/v1/attempts/{}/finish", attempt["id"].as_str().unwrap());
    expect_status(post_as(app, &who.access, &path, &json!({})).await, 200).await
}

fn deadline(attempt: &Value) -> DateTime<Utc> {
    attempt["deadline"].as_str().unwrap().parse().unwrap()
}

async fn put_override(
    app: &TestApp,
    who: &Person,
    assignment: &str,
    learner: &Person,
    body: Value,
) -> reqwest::Response {
    let path = format!("/v1/assignments/{assignment}/overrides/{}", learner.id);
    put_as(app, &who.access, &path, &body).await
}

#[tokio::test]
async fn extra_time_reaches_an_attempt_in_progress_at_once() {
    let t0 = Utc::now();
    let clock = Clock::manual(t0);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let c = course(&app, 1).await;
    let learner = &c.learners[0];
    let a = assignment(
        &app,
        &c,
        json!({"time_limit_minutes": 10, "feedback": "on_finish"}),
    )
    .await;
    let attempt = expect_status(start(&app, learner, &a).await, 201).await;
    assert_eq!(attempt["time_left_seconds"], 600);
    clock.advance(Duration::minutes(5));
    let set = put_override(&app, &c.teacher, &a, learner, json!({"extra_minutes": 10})).await;
    let set = expect_status(set, 200).await;
    assert_eq!(set["extra_minutes"], 10);
    assert_eq!(set["user_id"], learner.id.to_string());
    // The learner's next read shows the new deadline.
    let resumed = read(&app, learner, &attempt).await;
    assert_eq!(resumed["time_left_seconds"], 900);
    assert_eq!(
        deadline(&resumed),
        deadline(&attempt) + Duration::minutes(10)
    );
    // After the old deadline: taken.
    clock.advance(Duration::minutes(10));
    let q = &attempt["questions"];
    expect_status(answer(&app, learner, &attempt, &q[0], 0).await, 200).await;
    // After the new one: refused, and the attempt is finished with what was answered.
    clock.advance(Duration::minutes(6));
    assert_problem(
        answer(&app, learner, &attempt, &q[1], 0).await,
        409,
        "deadline_passed",
    )
    .await;
    let after = read(&app, learner, &attempt).await;
    assert_eq!(after["state"], "finished");
    assert_eq!(after["finish_reason"], "deadline");
    assert!(after["questions"][0]["response"].is_object());
    assert_eq!(after["finished_at"], resumed["deadline"]);
    // The override is in the audit log.
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action = 'override_set' AND subject_id = $1",
    )
    .bind(learner.id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(audited, 1);
}

#[tokio::test]
async fn a_change_that_would_shorten_a_running_attempt_does_not_unless_asked() {
    let t0 = Utc::now();
    let clock = Clock::manual(t0);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let c = course(&app, 2).await;
    let (first, second) = (&c.learners[0], &c.learners[1]);
    let a = assignment(
        &app,
        &c,
        json!({"time_limit_minutes": 30, "shuffle_questions": true}),
    )
    .await;
    let attempt = expect_status(start(&app, first, &a).await, 201).await;
    let path = format!("/v1/assignments/{a}");
    let changed = patch_as(
        &app,
        &c.teacher.access,
        &path,
        &json!({"time_limit_minutes": 10, "shuffle_questions": false}),
    )
    .await;
    let changed = expect_status(changed, 200).await;
    assert_eq!(changed["policy"]["time_limit_minutes"], 10);
    // The running attempt keeps what it was shown; a new one gets the new limit.
    assert_eq!(read(&app, first, &attempt).await["time_left_seconds"], 1800);
    let other = expect_status(start(&app, second, &a).await, 201).await;
    assert_eq!(other["time_left_seconds"], 600);
    // A longer limit reaches the running attempts at once.
    clock.advance(Duration::minutes(1));
    let res = patch_as(
        &app,
        &c.teacher.access,
        &path,
        &json!({"time_limit_minutes": 60}),
    )
    .await;
    expect_status(res, 200).await;
    assert_eq!(read(&app, first, &attempt).await["time_left_seconds"], 3540);
    assert_eq!(read(&app, second, &other).await["time_left_seconds"], 3540);
    // Shortening, when asked for.
    let body = json!({"time_limit_minutes": 20, "shorten_running": true});
    expect_status(patch_as(&app, &c.teacher.access, &path, &body).await, 200).await;
    assert_eq!(read(&app, first, &attempt).await["time_left_seconds"], 1140);
    // The shuffle change did not reorder the attempt started under shuffling.
    let order = |v: &Value| -> Vec<Value> {
        v["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["id"].clone())
            .collect()
    };
    assert_eq!(order(&read(&app, first, &attempt).await), order(&attempt));
    let pinned: bool =
        sqlx::query_scalar("SELECT shuffle_questions FROM attempts WHERE id = $1::uuid")
            .bind(attempt["id"].as_str().unwrap())
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(pinned, "the attempt keeps the layout it started with");
    // A bad change is refused, naming the field, and changes nothing.
    let bad = json!({"opens_at": t0 + Duration::days(2), "closes_at": t0 + Duration::days(1)});
    let problem = assert_problem(
        patch_as(&app, &c.teacher.access, &path, &bad).await,
        422,
        "invalid_policy",
    )
    .await;
    assert!(problem["detail"].as_str().unwrap().contains("`opens_at`"));
    let now = expect_status(get_as(&app, &c.teacher.access, &path).await, 200).await;
    assert!(now["policy"].get("opens_at").is_none());
    // Learners do not change assignments.
    let res = patch_as(&app, &first.access, &path, &json!({"title": "Mine"})).await;
    assert_problem(res, 403, "forbidden").await;
}

#[tokio::test]
async fn closing_now_finishes_attempts_in_progress_with_what_was_answered() {
    let clock = Clock::manual(Utc::now());
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let c = course(&app, 2).await;
    let a = assignment(&app, &c, json!({"feedback": "on_finish"})).await;
    let one = expect_status(start(&app, &c.learners[0], &a).await, 201).await;
    let two = expect_status(start(&app, &c.learners[1], &a).await, 201).await;
    expect_status(
        answer(&app, &c.learners[0], &one, &one["questions"][0], 0).await,
        200,
    )
    .await;
    clock.advance(Duration::minutes(3));
    let path = format!("/v1/assignments/{a}/close");
    let closed = expect_status(
        post_as(&app, &c.teacher.access, &path, &json!({})).await,
        200,
    )
    .await;
    let closes_at: DateTime<Utc> = closed["policy"]["closes_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (closes_at - clock.now()).num_milliseconds().abs() < 1,
        "closes now"
    );
    for (who, attempt) in [(&c.learners[0], &one), (&c.learners[1], &two)] {
        let after = read(&app, who, attempt).await;
        assert_eq!(after["state"], "finished");
        assert_eq!(after["finish_reason"], "closed");
        assert!(after["result"]["score"].is_number());
        assert_problem(
            answer(&app, who, attempt, &attempt["questions"][1], 0).await,
            409,
            "attempt_finished",
        )
        .await;
    }
    let answered = read(&app, &c.learners[0], &one).await;
    assert!(
        answered["questions"][0]["response"].is_object(),
        "what was answered counts"
    );
    let events: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM outbox WHERE topic = 'attempt.finished' AND payload->>'reason' = 'closed'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(events, 2);
    assert_problem(start(&app, &c.learners[0], &a).await, 409, "closed").await;
}

#[tokio::test]
async fn the_most_generous_rule_wins_across_an_assignment_override_and_a_course_accommodation() {
    let t0 = Utc::now();
    let clock = Clock::manual(t0);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let c = course(&app, 1).await;
    let learner = &c.learners[0];
    let policy = json!({"time_limit_minutes": 60, "attempts_allowed": 1, "closes_at": t0 + Duration::hours(3)});
    let a = assignment(&app, &c, policy).await;
    let path = format!("/v1/courses/{}/accommodations/{}", c.id, learner.id);
    let body =
        json!({"time_multiplier": 1.5, "extra_attempts": 1, "closes_at": t0 + Duration::hours(4)});
    expect_status(put_as(&app, &c.teacher.access, &path, &body).await, 200).await;
    let body =
        json!({"time_multiplier": 1.25, "extra_minutes": 10, "closes_at": t0 + Duration::hours(2)});
    expect_status(put_override(&app, &c.teacher, &a, learner, body).await, 200).await;
    // 60 × max(1.5, 1.25) + max(10) minutes.
    let first = expect_status(start(&app, learner, &a).await, 201).await;
    assert_eq!(first["time_left_seconds"], 100 * 60);
    finish(&app, learner, &first).await;
    // After the assignment's close, before the accommodation's: the latest close wins, and it
    // bounds the attempt; 1 + max(1) attempts.
    clock.advance(Duration::minutes(210));
    let second = expect_status(start(&app, learner, &a).await, 201).await;
    assert_eq!(second["time_left_seconds"], 30 * 60);
    finish(&app, learner, &second).await;
    assert_problem(start(&app, learner, &a).await, 409, "attempts_exhausted").await;
    // Both are listed where they were set.
    let list = get_as(
        &app,
        &c.teacher.access,
        &format!("/v1/courses/{}/accommodations", c.id),
    )
    .await;
    let list = expect_status(list, 200).await;
    assert_eq!(list["items"][0]["time_multiplier"], 1.5);
    let list = get_as(
        &app,
        &c.teacher.access,
        &format!("/v1/assignments/{a}/overrides"),
    )
    .await;
    let list = expect_status(list, 200).await;
    assert_eq!(list["items"][0]["extra_minutes"], 10);
    // And removed.
    let res = bearer(&app, reqwest::Method::DELETE, &path, &c.teacher.access)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    let list = get_as(
        &app,
        &c.teacher.access,
        &format!("/v1/courses/{}/accommodations", c.id),
    )
    .await;
    assert_eq!(expect_status(list, 200).await["items"], json!([]));
}

/// Whether the learner's view of the attempt shows any question's judgement.
fn judged(view: &Value) -> bool {
    view["questions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|q| !q["result"].is_null())
}

#[tokio::test]
async fn after_close_answers_wait_for_each_learners_own_close_and_their_last_attempt() {
    let t0 = Utc::now();
    let clock = Clock::manual(t0);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let c = course(&app, 3).await;
    let [on_time, overridden, accommodated] = &c.learners[..] else {
        unreachable!()
    };
    let closes = t0 + Duration::days(1);
    let policy = json!({"feedback": "after_close", "attempts_allowed": 1, "closes_at": closes});
    let a = assignment(&app, &c, policy).await;
    let later = json!({"closes_at": closes + Duration::days(2)});
    expect_status(
        put_override(&app, &c.teacher, &a, overridden, later.clone()).await,
        200,
    )
    .await;
    let path = format!("/v1/courses/{}/accommodations/{}", c.id, accommodated.id);
    expect_status(put_as(&app, &c.teacher.access, &path, &later).await, 200).await;
    let mut attempts = Vec::new();
    for who in &c.learners {
        let attempt = expect_status(start(&app, who, &a).await, 201).await;
        expect_status(
            answer(&app, who, &attempt, &attempt["questions"][0], 0).await,
            200,
        )
        .await;
        assert!(!judged(&finish(&app, who, &attempt).await));
        attempts.push(attempt);
    }
    // Past the assignment's close: the learner on time sees the answers; those whose own close
    // is later (an override, an accommodation) do not, whether they are done or not.
    clock.advance(Duration::days(1) + Duration::hours(1));
    assert!(judged(&read(&app, on_time, &attempts[0]).await));
    assert!(!judged(&read(&app, overridden, &attempts[1]).await));
    assert!(!judged(&read(&app, accommodated, &attempts[2]).await));
    // Past their own close, they do.
    clock.advance(Duration::days(2));
    assert!(judged(&read(&app, overridden, &attempts[1]).await));
    assert!(judged(&read(&app, accommodated, &attempts[2]).await));

    // With no close time, never while the learner may start another attempt: an extra attempt
    // holds the answers back until it is used.
    let policy = json!({"feedback": "after_close", "attempts_allowed": 1});
    let open = assignment(&app, &c, policy).await;
    let extra = json!({"extra_attempts": 1});
    expect_status(
        put_override(&app, &c.teacher, &open, overridden, extra).await,
        200,
    )
    .await;
    let first = expect_status(start(&app, on_time, &open).await, 201).await;
    assert!(
        judged(&finish(&app, on_time, &first).await),
        "no attempt left"
    );
    let first = expect_status(start(&app, overridden, &open).await, 201).await;
    assert!(!judged(&finish(&app, overridden, &first).await));
    assert!(!judged(&read(&app, overridden, &first).await));
    let mine = get_as(&app, &overridden.access, "/v1/me/attempts").await;
    assert!(
        !expect_status(mine, 200)
            .await
            .to_string()
            .contains("\"correct\"")
    );
    // The second, last attempt: in progress, the first still shows nothing; finished, both do.
    let second = expect_status(start(&app, overridden, &open).await, 201).await;
    assert!(!judged(&read(&app, overridden, &first).await));
    assert!(judged(&finish(&app, overridden, &second).await));
    assert!(judged(&read(&app, overridden, &first).await));
}

#[tokio::test]
async fn bulk_overrides_are_all_or_nothing() {
    let app = TestApp::spawn().await;
    let c = course(&app, 2).await;
    let outsider = app.person("outsider@example.org", "learner").await;
    let a = assignment(&app, &c, json!({"time_limit_minutes": 20})).await;
    let path = format!("/v1/assignments/{a}/overrides");
    let (l0, l1) = (c.learners[0].id, c.learners[1].id);
    let body = json!({"user_ids": [l0, outsider.id, l1], "override": {"extra_minutes": 15}});
    let problem = assert_problem(
        post_as(&app, &c.teacher.access, &path, &body).await,
        422,
        "not_a_learner",
    )
    .await;
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("`user_ids[1]`"),
        "{problem}"
    );
    let body = json!({"user_ids": [l0, l1], "override": {"time_multiplier": 0}});
    let problem = assert_problem(
        post_as(&app, &c.teacher.access, &path, &body).await,
        422,
        "invalid_override",
    )
    .await;
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("`time_multiplier`")
    );
    let listed = expect_status(get_as(&app, &c.teacher.access, &path).await, 200).await;
    assert_eq!(listed["items"], json!([]), "nothing was set");
    let body = json!({"user_ids": [l0, l1], "override": {"extra_minutes": 15}});
    let set = expect_status(post_as(&app, &c.teacher.access, &path, &body).await, 200).await;
    assert_eq!(set["items"].as_array().unwrap().len(), 2);
    let listed = expect_status(get_as(&app, &c.teacher.access, &path).await, 200).await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 2);
    let attempt = expect_status(start(&app, &c.learners[1], &a).await, 201).await;
    assert_eq!(attempt["time_left_seconds"], 35 * 60);
}

#[tokio::test]
async fn an_override_is_only_for_the_courses_learners_and_bad_values_are_refused() {
    let app = TestApp::spawn().await;
    let c = course(&app, 1).await;
    let learner = &c.learners[0];
    let outsider = app.person("outsider@example.org", "learner").await;
    let a = assignment(&app, &c, json!({"time_limit_minutes": 20})).await;
    let body = json!({"extra_minutes": 5});
    for who in [&outsider, &c.teacher] {
        let problem = assert_problem(
            put_override(&app, &c.teacher, &a, who, body.clone()).await,
            422,
            "not_a_learner",
        )
        .await;
        assert!(problem["detail"].as_str().unwrap().contains("`user_id`"));
    }
    let path = format!("/v1/courses/{}/accommodations/{}", c.id, outsider.id);
    assert_problem(
        put_as(&app, &c.teacher.access, &path, &body).await,
        422,
        "not_a_learner",
    )
    .await;
    for (bad, field) in [
        (json!({"time_multiplier": 11}), "time_multiplier"),
        (json!({"time_multiplier": -1}), "time_multiplier"),
        (json!({"extra_minutes": -5}), "extra_minutes"),
        (json!({"extra_attempts": -1}), "extra_attempts"),
        (
            json!({"opens_at": "2030-01-02T00:00:00Z", "closes_at": "2030-01-01T00:00:00Z"}),
            "opens_at",
        ),
    ] {
        let problem = assert_problem(
            put_override(&app, &c.teacher, &a, learner, bad).await,
            422,
            "invalid_override",
        )
        .await;
        assert!(
            problem["detail"]
                .as_str()
                .unwrap()
                .contains(&format!("`{field}`")),
            "{problem}"
        );
    }
    // A learner sets no overrides, not even their own.
    assert_problem(
        put_override(&app, learner, &a, learner, body.clone()).await,
        403,
        "forbidden",
    )
    .await;
    let listed = get_as(
        &app,
        &c.teacher.access,
        &format!("/v1/assignments/{a}/overrides"),
    )
    .await;
    assert_eq!(
        expect_status(listed, 200).await["items"],
        json!([]),
        "nothing was set"
    );
}

#[tokio::test]
async fn sequential_navigation_serves_one_question_at_a_time_and_refuses_any_other() {
    let app = TestApp::spawn().await;
    let c = course(&app, 1).await;
    let learner = &c.learners[0];
    let policy =
        json!({"navigation": "sequential", "feedback": "on_finish", "shuffle_questions": true});
    let a = assignment(&app, &c, policy).await;
    let attempt = expect_status(start(&app, learner, &a).await, 201).await;
    assert_eq!(attempt["navigation"], "sequential");
    assert_eq!(attempt["question_count"], 8);
    assert_eq!(attempt["questions"].as_array().unwrap().len(), 1);
    // The course's staff see the whole attempt: it tells what the learner must not see.
    let id = attempt["id"].as_str().unwrap();
    let all = expect_status(
        get_as(&app, &c.teacher.access, &format!("/v1/attempts/{id}")).await,
        200,
    )
    .await;
    let all = all["questions"].as_array().unwrap().clone();
    assert_eq!(all.len(), 8);
    assert_eq!(all[0]["id"], attempt["questions"][0]["id"]);
    let content = load_dir(&content_dir())
        .unwrap()
        .into_iter()
        .find(|q| q.slug == "data-parallelism")
        .unwrap();
    let unseen_from = |n: usize, body: &str| {
        for q in &all[n..] {
            let prompt = q["prompt"].as_str().unwrap();
            assert!(
                !body.contains(prompt),
                "a later question's prompt is served: {prompt}"
            );
            for o in q["options"].as_array().unwrap() {
                assert!(
                    !body.contains(o["id"].as_str().unwrap()),
                    "a later question's option is served"
                );
            }
        }
        for k in [
            "\"correct\"",
            "correct_options",
            "explanation",
            "accepted_answers",
        ] {
            assert!(!body.contains(k), "key material: {k} in {body}");
        }
        for q in &content.questions {
            for e in q.explanation.values() {
                assert!(!body.contains(e.as_str()), "an explanation is served");
            }
        }
    };
    unseen_from(1, &attempt.to_string());
    // A later question is refused.
    let res = answer(&app, learner, &attempt, &all[1], 0).await;
    let body = assert_problem(res, 409, "not_current_question").await;
    unseen_from(1, &body.to_string());
    // The current one is taken; then the next is current.
    let res = bearer(
        &app,
        reqwest::Method::PUT,
        &format!(
            "/v1/attempts/{id}/responses/{}",
            all[0]["id"].as_str().unwrap()
        ),
        &learner.access,
    )
    .json(&json!({"selected": [all[0]["options"][0]["id"]]}))
    .send()
    .await
    .unwrap();
    let text = res.text().await.unwrap();
    unseen_from(1, &text);
    let now = read(&app, learner, &attempt).await;
    assert_eq!(now["questions"].as_array().unwrap().len(), 2);
    assert_eq!(now["questions"][1]["id"], all[1]["id"]);
    unseen_from(2, &now.to_string());
    // No way back: a changed answer to an earlier question is refused (the same one again is
    // a safe retry), and so is a question beyond the current one.
    assert_problem(
        answer(&app, learner, &attempt, &all[0], 1).await,
        409,
        "not_current_question",
    )
    .await;
    expect_status(answer(&app, learner, &attempt, &all[0], 0).await, 200).await;
    assert_problem(
        answer(&app, learner, &attempt, &all[2], 0).await,
        409,
        "not_current_question",
    )
    .await;
    expect_status(answer(&app, learner, &attempt, &all[1], 0).await, 200).await;
    assert_eq!(
        read(&app, learner, &attempt).await["questions"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    // Finished, the whole attempt is reviewed as the policy allows.
    let done = finish(&app, learner, &attempt).await;
    assert_eq!(done["questions"].as_array().unwrap().len(), 8);
}

#[tokio::test]
async fn deleting_an_assignment_removes_it_if_unattempted_and_archives_it_otherwise() {
    let app = TestApp::spawn().await;
    let c = course(&app, 1).await;
    let learner = &c.learners[0];
    let unused = assignment(&app, &c, json!({})).await;
    let used = assignment(&app, &c, json!({})).await;
    let attempt = expect_status(start(&app, learner, &used).await, 201).await;
    finish(&app, learner, &attempt).await;
    let delete = |id: &str| {
        bearer(
            &app,
            reqwest::Method::DELETE,
            &format!("/v1/assignments/{id}"),
            &c.teacher.access,
        )
        .send()
    };
    // A learner deletes nothing.
    let res = bearer(
        &app,
        reqwest::Method::DELETE,
        &format!("/v1/assignments/{unused}"),
        &learner.access,
    )
    .send()
    .await
    .unwrap();
    assert_problem(res, 403, "forbidden").await;
    let res = delete(&unused).await.unwrap();
    assert_eq!(res.status(), 204);
    let res = get_as(
        &app,
        &c.teacher.access,
        &format!("/v1/assignments/{unused}"),
    )
    .await;
    assert_problem(res, 404, "assignment_not_found").await;
    let archived = expect_status(delete(&used).await.unwrap(), 200).await;
    assert!(archived["archived_at"].is_string());
    // Hidden from the learner's lists, listed to the teacher, no new attempts, the old one kept.
    let mine = expect_status(get_as(&app, &learner.access, "/v1/assignments").await, 200).await;
    assert!(!mine.to_string().contains(&used));
    let course_list = format!("/v1/courses/{}/assignments", c.id);
    let theirs = expect_status(get_as(&app, &learner.access, &course_list).await, 200).await;
    assert_eq!(theirs["items"], json!([]));
    let staff = expect_status(get_as(&app, &c.teacher.access, &course_list).await, 200).await;
    assert_eq!(staff["items"][0]["id"], used.as_str());
    assert_problem(
        start(&app, learner, &used).await,
        409,
        "assignment_archived",
    )
    .await;
    assert_eq!(read(&app, learner, &attempt).await["state"], "finished");
    let res = patch_as(
        &app,
        &c.teacher.access,
        &format!("/v1/assignments/{used}"),
        &json!({"title": "Again"}),
    )
    .await;
    assert_problem(res, 409, "assignment_archived").await;
    // A practice assignment is not changed here.
    let admin = app.person("admin@example.org", "admin").await;
    let practice: uuid::Uuid =
        sqlx::query_scalar("SELECT id FROM assignments WHERE course_id IS NULL LIMIT 1")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    admin
        .patch(
            &format!("/v1/assignments/{practice}"),
            &json!({"title": "Mine"}),
        )
        .await
        .problem(409, "practice_assignment")
        .await;
}

#[tokio::test]
async fn a_learner_is_refused_403_by_the_override_routes_whatever_body_they_send() {
    let app = TestApp::spawn().await;
    let c = course(&app, 1).await;
    let learner = &c.learners[0];
    let a = assignment(&app, &c, json!({})).await;
    use reqwest::Method;
    let routes = [
        (Method::POST, format!("/v1/assignments/{a}/overrides")),
        (
            Method::PUT,
            format!("/v1/assignments/{a}/overrides/{}", learner.id),
        ),
        (
            Method::PUT,
            format!("/v1/courses/{}/accommodations/{}", c.id, learner.id),
        ),
    ];
    let bodies = [
        "{not json",
        "[1, 2]",
        r#"{"user_ids": "all"}"#,
        r#"{"user_ids": [], "extra_attempts": -1}"#,
        r#"{"extra_attempts": -1}"#,
    ];
    for (method, path) in &routes {
        for body in bodies {
            let res = bearer(&app, method.clone(), path, &learner.access)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            assert_problem(res, 403, "forbidden").await;
        }
    }
    // Staff still get the body's problems.
    let res = bearer(&app, Method::POST, &routes[0].1, &c.teacher.access)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_problem(res, 400, "invalid_body").await;
    let res = bearer(&app, Method::POST, &routes[0].1, &c.teacher.access)
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 415);
}

#[tokio::test]
async fn a_learner_is_refused_by_every_staff_only_route_before_their_body_is_read() {
    let app = TestApp::spawn().await;
    let c = course(&app, 1).await;
    let learner = &c.learners[0];
    let a = assignment(&app, &c, json!({})).await;
    let attempt = expect_status(start(&app, learner, &a).await, 201).await;
    let attempt = attempt["id"].as_str().unwrap();
    let live = format!("/v1/assignments/{a}/live");
    let session = expect_status(
        post_as(&app, &c.teacher.access, &live, &json!({})).await,
        201,
    )
    .await;
    let session = session["id"].as_str().unwrap();
    let registration = "00000000-0000-0000-0000-000000000001";
    use reqwest::Method;
    // Each route, and what a learner of the course gets there whatever they send.
    let routes = [
        (Method::POST, "/v1/courses".to_string(), 403, "forbidden"),
        (
            Method::PATCH,
            format!("/v1/courses/{}", c.id),
            403,
            "forbidden",
        ),
        (
            Method::POST,
            format!("/v1/courses/{}/enrollments", c.id),
            403,
            "forbidden",
        ),
        (
            Method::POST,
            format!("/v1/courses/{}/assignments", c.id),
            403,
            "forbidden",
        ),
        (
            Method::PATCH,
            format!("/v1/assignments/{a}"),
            403,
            "forbidden",
        ),
        (
            Method::PUT,
            format!("/v1/attempts/{attempt}/grade"),
            403,
            "forbidden",
        ),
        (
            Method::POST,
            format!("/v1/assignments/{a}/regrade"),
            403,
            "forbidden",
        ),
        (
            Method::POST,
            "/v1/lti/registrations".to_string(),
            403,
            "forbidden",
        ),
        (
            Method::PATCH,
            format!("/v1/lti/registrations/{registration}"),
            403,
            "forbidden",
        ),
        (Method::POST, live.clone(), 403, "forbidden"),
        (
            Method::POST,
            format!("/v1/live/sessions/{session}/next"),
            404,
            "live_session_not_found",
        ),
    ];
    let bodies = [
        Some("{not json"),
        Some("[1, 2]"),
        Some(r#"{"title": 7, "points": "x", "seconds": -1}"#),
        Some(r#"{"title": "", "to_version": 0, "issuer": ""}"#),
        None,
    ];
    for (method, path, status, code) in &routes {
        for body in bodies {
            let request = bearer(&app, method.clone(), path, &learner.access);
            let request = match body {
                Some(body) => request
                    .header("content-type", "application/json")
                    .body(body),
                // Not JSON at all: still not theirs to send.
                None => request
                    .header("content-type", "text/plain")
                    .body("points=10"),
            };
            let res = request.send().await.unwrap();
            let what = format!("{method} {path} with {body:?}");
            assert_eq!(res.status(), *status, "{what}");
            assert_problem(res, *status, code).await;
        }
    }
    // Staff still get the body's problems.
    for (method, path, _, _) in &routes[1..7] {
        let res = bearer(&app, method.clone(), path, &c.teacher.access)
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap();
        assert_problem(res, 400, "invalid_body").await;
    }
}
