//! Launches from the LMS: the learner's and the instructor's way in, a login posted or
//! naming its quiz in the target link, and the one-time code a launch trades for a sign-in.

use serde_json::json;

use crate::support::{TestApp, assert_problem, expect_status};

use super::{
    LEARNER, code_cookie, exchange, instructor, launch_session, launched, learner, run_launch,
    setup, setup_on, take_quiz,
};

#[tokio::test]
async fn a_learner_launched_from_the_lms_takes_the_quiz_and_the_lms_receives_the_grade() {
    let lti = setup().await;
    let reg = &lti.registration;
    assert_eq!(reg["tool"]["launch_url"], lti.app.url("/v1/lti/launch"));
    assert_eq!(reg["tool"]["login_url"], lti.app.url("/v1/lti/login"));

    let flow = run_launch(&lti, &learner("learner-1")).await;
    // The authentication request quizd sent, as the platform received it.
    let rec = lti.platform.recorded().await;
    let auth = &rec["auth_requests"][0];
    for (k, v) in [
        ("scope", "openid"),
        ("response_type", "id_token"),
        ("response_mode", "form_post"),
        ("prompt", "none"),
        ("login_hint", "learner-1"),
    ] {
        assert_eq!(auth[k], v, "{k}");
    }
    assert_eq!(auth["state"].as_str().unwrap().len(), 64);
    assert_eq!(auth["nonce"].as_str().unwrap().len(), 64);
    assert!(auth["lti_message_hint"].as_str().unwrap().starts_with("s-"));

    let (code, cookie) = launched(&flow.response);
    let session = expect_status(exchange(&lti, &code, Some(&cookie)).await, 200).await;
    // The code is single use.
    let again = exchange(&lti, &code, Some(&cookie)).await;
    assert_problem(again, 401, "lti_code_invalid").await;
    assert_eq!(session["destination"]["kind"], "attempt");
    let assignment = session["destination"]["assignment_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        session["destination"]["path"],
        format!("/v1/assignments/{assignment}/attempts")
    );
    let learner_1 = lti.signed_in(&session);

    // The person, the course and the enrollment exist as the LMS says.
    let me = learner_1.get("/v1/me").await.status(200).await;
    assert_eq!(me["display_name"], "Learner learner-1");
    assert_eq!(me["role"], "learner");
    assert!(me["email"].is_null());
    let course = session["destination"]["course_id"].as_str().unwrap();
    let c = learner_1
        .get(&format!("/v1/courses/{course}"))
        .await
        .status(200)
        .await;
    assert_eq!(c["title"], "Parallel Programming");
    assert_eq!(c["code"], "CS-451");
    assert_eq!(c["my_role"], "learner");
    let a = learner_1
        .get(&format!("/v1/assignments/{assignment}"))
        .await
        .status(200)
        .await;
    assert_eq!(a["quiz"], "data-parallelism");
    assert_eq!(a["title"], "Week 1 quiz");

    // Taking the quiz through the API; finishing does not wait for the LMS.
    let finished = take_quiz(&learner_1, &assignment).await;
    let score = finished["result"]["score"].as_f64().unwrap();
    let max = finished["result"]["max_score"].as_f64().unwrap();
    let scores = lti.platform.scores(1).await;
    let s = &scores[0];
    assert_eq!(s["userId"], "learner-1");
    assert_eq!(s["scoreGiven"].as_f64().unwrap(), score);
    assert_eq!(s["scoreMaximum"].as_f64().unwrap(), max);
    assert_eq!(s["activityProgress"], "Completed");
    assert_eq!(s["gradingProgress"], "FullyGraded");
    assert!(s["timestamp"].as_str().unwrap().ends_with('Z'));

    // The delivery is on record as delivered.
    let deliveries = lti
        .admin()
        .get("/v1/lti/deliveries?status=delivered")
        .await
        .status(200)
        .await;
    assert_eq!(deliveries["items"][0]["status"], "delivered");
    assert!(deliveries["items"][0]["last_error"].is_null());

    // A second launch finds the same person, course and assignment; a second attempt's grade
    // (highest) goes out with the token cached from the first delivery.
    let again = launch_session(&lti, &learner("learner-1")).await;
    assert_eq!(again["user_id"], session["user_id"]);
    assert_eq!(
        again["destination"]["assignment_id"].as_str().unwrap(),
        assignment
    );
    take_quiz(&lti.signed_in(&again), &assignment).await;
    lti.platform.scores(2).await;
    let rec = lti.platform.recorded().await;
    assert_eq!(rec["tokens_issued"].as_array().unwrap().len(), 1, "{rec:#}");
    assert!(rec["errors"].as_array().unwrap().is_empty(), "{rec:#}");
}

#[tokio::test]
async fn an_instructor_is_taken_to_the_analytics_and_may_manage_the_course() {
    let lti = setup().await;
    let session = launch_session(&lti, &instructor("teacher-1")).await;
    assert_eq!(session["destination"]["kind"], "analytics");
    let teacher = lti.signed_in(&session);
    // Teaching is a role in the launch's course; the site role stays `learner`.
    let me = teacher.get("/v1/me").await.status(200).await;
    assert_eq!(me["role"], "learner");
    let path = session["destination"]["path"].as_str().unwrap();
    assert!(path.ends_with("/analytics"));
    teacher.get(path).await.status(200).await;
    let course = session["destination"]["course_id"].as_str().unwrap();
    let roster = teacher
        .get(&format!("/v1/courses/{course}/enrollments"))
        .await
        .status(200)
        .await;
    assert_eq!(roster["items"][0]["role"], "instructor");
    // Staff of this course read the key of the version assigned here …
    teacher
        .get("/v1/quizzes/data-parallelism/versions/1")
        .await
        .status(200)
        .await;
    // … and, sitting an exam as a learner in another course, not that exam's key.
    let other = lti
        .app
        .person("other-teacher@example.org", "instructor")
        .await;
    crate::support::author_exam(&lti.app, &other, "exam").await;
    let course_b = other
        .post("/v1/courses", &json!({"title": "B"}))
        .await
        .status(201)
        .await;
    let course_b = course_b["id"].as_str().unwrap();
    for (path, body) in [
        (
            format!("/v1/courses/{course_b}/assignments"),
            json!({"quiz": "exam", "policy": {"feedback": "never"}}),
        ),
        (
            format!("/v1/courses/{course_b}/enrollments"),
            json!({"user_id": session["user_id"], "role": "learner"}),
        ),
    ] {
        other.post(&path, &body).await.status(201).await;
    }
    teacher
        .get("/v1/quizzes/exam/versions/1")
        .await
        .problem(404, "version_not_found")
        .await;
    // An LMS administrator gets nothing more than their course role: never quizd's admin.
    let mut admin = instructor("lms-admin");
    admin["roles"] = json!([
        "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator",
        LEARNER
    ]);
    let s = launch_session(&lti, &admin).await;
    let me = lti.signed_in(&s).get("/v1/me").await.status(200).await;
    assert_eq!(me["role"], "learner");
}

#[tokio::test]
async fn a_login_may_be_posted_and_a_quiz_named_in_the_target_link() {
    let lti = setup().await;
    let mut s = learner("learner-post");
    s["login_method"] = json!("post");
    s.as_object_mut().unwrap().remove("custom");
    s["resource_link"] = json!({"id": "rl-target"});
    s["target_link_uri"] = json!(lti.app.url("/v1/lti/launch?quiz=kinds-sampler"));
    let session = launch_session(&lti, &s).await;
    let a = session["destination"]["assignment_id"].as_str().unwrap();
    let a = lti
        .signed_in(&session)
        .get(&format!("/v1/assignments/{a}"))
        .await
        .status(200)
        .await;
    assert_eq!(a["quiz"], "kinds-sampler");
}

#[tokio::test]
async fn a_launch_code_is_traded_only_in_the_browser_the_launch_redirected() {
    let lti = setup().await;
    let a = run_launch(&lti, &learner("browser-a")).await;
    let (code_a, cookie_a) = launched(&a.response);
    // HttpOnly, for the exchange only, as long as the code lives; over plain http on loopback
    // SameSite=Lax, as the state cookie (SameSite=None; Secure; Partitioned over https).
    let (_, line) = code_cookie(&a.response);
    for part in [
        "HttpOnly",
        "Path=/v1/lti/exchange",
        "Max-Age=60",
        "SameSite=Lax",
    ] {
        assert!(line.contains(part), "{line}");
    }

    // A link with the code, opened in another browser: no cookie. Refused, and the code is
    // not used up by it.
    let res = exchange(&lti, &code_a, None).await;
    assert_problem(res, 401, "launch_browser_mismatch").await;
    // A browser with a launch of its own sends that launch's cookie, which is not this code's.
    let b = run_launch(&lti, &learner("browser-b")).await;
    let (code_b, cookie_b) = launched(&b.response);
    let res = exchange(&lti, &code_a, Some(&cookie_b)).await;
    assert_problem(res, 401, "launch_browser_mismatch").await;
    // The other launch's secret under this code's cookie name: refused, and the code, tried
    // with a cookie, is used up.
    let name_a = cookie_a.split('=').next().unwrap();
    let value_b = cookie_b.split_once('=').unwrap().1;
    let forged = format!("{name_a}={value_b}");
    let res = exchange(&lti, &code_a, Some(&forged)).await;
    assert_problem(res, 401, "launch_browser_mismatch").await;
    let res = exchange(&lti, &code_a, Some(&cookie_a)).await;
    assert_problem(res, 401, "lti_code_invalid").await;

    // The browser that launched: signed in, and the cookie cleared.
    let res = exchange(&lti, &code_b, Some(&cookie_b)).await;
    let cleared = code_cookie(&res).1;
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    let session = expect_status(res, 200).await;
    let me = lti
        .signed_in(&session)
        .get("/v1/me")
        .await
        .status(200)
        .await;
    assert_eq!(me["display_name"], "Learner browser-b");
    // Once.
    let res = exchange(&lti, &code_b, Some(&cookie_b)).await;
    assert_problem(res, 401, "lti_code_invalid").await;
}

#[tokio::test]
async fn a_launch_code_expires_after_a_minute_by_the_servers_clock() {
    let clock = quizd::clock::Clock::manual(chrono::Utc::now());
    let lti = setup_on(TestApp::spawn_with_clock(clock.clone()).await).await;
    let flow = run_launch(&lti, &learner("slow-1")).await;
    let (code, cookie) = launched(&flow.response);
    clock.advance(chrono::Duration::seconds(59));
    expect_status(exchange(&lti, &code, Some(&cookie)).await, 200).await;

    let flow = run_launch(&lti, &learner("slow-2")).await;
    let (code, cookie) = launched(&flow.response);
    clock.advance(chrono::Duration::seconds(60));
    let res = exchange(&lti, &code, Some(&cookie)).await;
    assert_problem(res, 401, "lti_code_invalid").await;
}
