//! Taking a quiz through HTTP: every policy, every kind, three locales, deadlines, limits,
//! concurrency, and who may see what.

use chrono::{Duration, Utc};
use quizd::clock::Clock;
use quizd::content::{QuizContent, load_dir};
use serde_json::{Value, json};

use crate::support::courses::assigned;
use crate::support::session::{Reply, Session};
use crate::support::{Person, TestApp, content_dir};

pub(crate) fn quiz(slug: &str) -> QuizContent {
    load_dir(&content_dir())
        .unwrap()
        .into_iter()
        .find(|q| q.slug == slug)
        .unwrap()
}

/// The content question a served question is (found by its prompt in its served language).
fn content_question<'a>(content: &'a QuizContent, served: &Value) -> &'a quizd::content::Question {
    let prompt = served["prompt"].as_str().unwrap();
    let lang = served["lang"].as_str().unwrap();
    content
        .questions
        .iter()
        .find(|q| q.prompt.get(lang).map(String::as_str) == Some(prompt))
        .unwrap_or_else(|| panic!("no question with prompt {prompt}"))
}

/// The served ids of the options whose correct flag is `correct`.
/// An answer choosing the first right (or wrong) option of `served`.
pub(crate) fn choosing(content: &QuizContent, served: &Value, correct: bool) -> Value {
    json!({"selected": [option_ids(content, served, correct)[0]]})
}

fn option_ids(content: &QuizContent, served: &Value, correct: bool) -> Vec<String> {
    let q = content_question(content, served);
    served["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| {
            let text = o["text"].as_str().unwrap();
            let lang = o["lang"].as_str().unwrap();
            q.options
                .iter()
                .any(|c| c.correct == correct && c.text.get(lang).map(String::as_str) == Some(text))
        })
        .map(|o| o["id"].as_str().unwrap().to_string())
        .collect()
}

async fn start_practice(who: &Session<'_>, slug: &str, locale: &str) -> Value {
    let path = format!("/v1/quizzes/{slug}/attempts");
    who.post(&path, &json!({"locale": locale}))
        .await
        .status(201)
        .await
}

async fn answer(who: &Session<'_>, attempt: &Value, question: &Value, body: Value) -> Reply {
    let path = format!(
        "/v1/attempts/{}/responses/{}",
        attempt["id"].as_str().unwrap(),
        question["id"].as_str().unwrap()
    );
    who.put(&path, &body).await
}

async fn finish(who: &Session<'_>, attempt: &Value) -> Value {
    let path = format!("/v1/attempts/{}/finish", attempt["id"].as_str().unwrap());
    who.post(&path, &json!({})).await.status(200).await
}

/// Everything that would tell a learner the answer before the policy allows it.
fn key_material(content: &QuizContent) -> Vec<String> {
    let mut out: Vec<String> = [
        "\"correct\"",
        "correct_options",
        "explanation",
        "\"feedback\"",
        "accepted_answers",
        "correct_number",
    ]
    .map(String::from)
    .to_vec();
    for q in &content.questions {
        out.extend(q.explanation.values().cloned());
        for o in &q.options {
            out.extend(o.feedback.iter().flat_map(|f| f.values().cloned()));
        }
        out.extend(q.wrong_feedback.iter().flat_map(|f| f.values().cloned()));
    }
    out
}

pub(crate) fn assert_no_key_material(body: &str, content: &QuizContent, context: &str) {
    for k in key_material(content) {
        assert!(
            !body.contains(&k),
            "{context}: the body contains {k}: {body}"
        );
    }
}

#[tokio::test]
async fn a_learner_takes_the_seed_quiz_in_bengali_and_sees_each_explanation_right_after_answering()
{
    let app = TestApp::spawn().await;
    let learner = app.person("mina@example.org", "learner").await;
    let content = quiz("data-parallelism");
    let attempt = start_practice(&learner, "data-parallelism", "bn").await;
    assert_eq!(attempt["locale"], "bn");
    assert_eq!(attempt["feedback_timing"], "immediate");
    assert_eq!(attempt["title"]["lang"], "bn");
    let questions = attempt["questions"].as_array().unwrap().clone();
    assert_eq!(questions.len(), 8);
    for (i, q) in questions.iter().enumerate() {
        let translated = content_question(&content, q).prompt.contains_key("bn");
        assert_eq!(q["lang"], if translated { "bn" } else { "en" });
        assert!(q["result"].is_null(), "nothing is judged before an answer");
        // Answer questions alternately right and wrong.
        let right = i % 2 == 0;
        let pick = option_ids(&content, q, right).remove(0);
        let out = answer(&learner, &attempt, q, json!({"selected": [pick]}))
            .await
            .status(200)
            .await;
        let result = &out["result"];
        assert_eq!(result["correct"], right);
        assert_eq!(result["points"], if right { 1.0 } else { 0.0 });
        assert_eq!(result["max_points"], 1.0);
        assert_eq!(
            result["correct_options"],
            json!(option_ids(&content, q, true))
        );
        let explanation = &result["explanation"];
        assert_eq!(explanation["lang"], if translated { "bn" } else { "en" });
        let cq = content_question(&content, q);
        assert_eq!(
            explanation["text"],
            cq.explanation[explanation["lang"].as_str().unwrap()].as_str()
        );
        if right {
            assert!(result["feedback"].is_null());
        } else {
            assert_eq!(
                result["feedback"]["lang"],
                if translated { "bn" } else { "en" }
            );
        }
    }
    let done = finish(&learner, &attempt).await;
    assert_eq!(done["state"], "finished");
    assert_eq!(
        done["result"],
        json!({"score": 4.0, "max_score": 8.0, "points": 4.0, "overridden": false, "percentage": 50.0})
    );
    // The review shows every question's judgement.
    for q in done["questions"].as_array().unwrap() {
        assert!(q["result"]["explanation"]["text"].is_string());
    }
}

#[tokio::test]
async fn the_quiz_is_served_in_english_and_indonesian_too() {
    let app = TestApp::spawn().await;
    let learner = app.person("ari@example.org", "learner").await;
    let content = quiz("data-parallelism");
    for locale in ["en", "id"] {
        let attempt = start_practice(&learner, "data-parallelism", locale).await;
        assert_eq!(attempt["locale"], locale);
        for q in attempt["questions"].as_array().unwrap() {
            let pick = option_ids(&content, q, true).remove(0);
            let out = answer(&learner, &attempt, q, json!({"selected": [pick]}))
                .await
                .status(200)
                .await;
            assert_eq!(out["result"]["correct"], true);
            let lang = out["result"]["explanation"]["lang"].as_str().unwrap();
            assert!(lang == locale || lang == "en");
        }
        let done = finish(&learner, &attempt).await;
        assert_eq!(done["result"]["percentage"], 100.0);
    }
}

#[tokio::test]
async fn option_ids_differ_in_every_attempt_and_reveal_no_position() {
    let app = TestApp::spawn().await;
    let learner = app.person("ids@example.org", "learner").await;
    let content = quiz("data-parallelism");
    let first = start_practice(&learner, "data-parallelism", "en").await;
    finish(&learner, &first).await;
    let second = start_practice(&learner, "data-parallelism", "en").await;
    let ids = |a: &Value| -> Vec<String> {
        a["questions"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|q| {
                q["options"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|o| o["id"].as_str().unwrap().to_string())
            })
            .collect()
    };
    let (a, b) = (ids(&first), ids(&second));
    assert!(
        a.iter().all(|id| !b.contains(id)),
        "an option id repeats across attempts"
    );
    for id in &a {
        assert_eq!(id.len(), 16);
        assert!(id.parse::<u32>().is_err() || id.len() > 3);
    }
    // Shuffled options: over eight questions, the correct option is not always at the same place.
    let positions: Vec<usize> = second["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            let right = option_ids(&content, q, true).remove(0);
            q["options"]
                .as_array()
                .unwrap()
                .iter()
                .position(|o| o["id"] == right.as_str())
                .unwrap()
        })
        .collect();
    assert_eq!(positions.len(), 8);
}

#[tokio::test]
async fn under_immediate_feedback_the_first_answer_is_final_and_a_retry_is_safe() {
    let app = TestApp::spawn().await;
    let learner = app.person("retry@example.org", "learner").await;
    let content = quiz("data-parallelism");
    let attempt = start_practice(&learner, "data-parallelism", "en").await;
    let q = &attempt["questions"][0];
    let wrong = option_ids(&content, q, false);
    let first = answer(&learner, &attempt, q, json!({"selected": [wrong[0]]}))
        .await
        .status(200)
        .await;
    let again = answer(&learner, &attempt, q, json!({"selected": [wrong[0]]}))
        .await
        .status(200)
        .await;
    assert_eq!(first, again);
    let res = answer(&learner, &attempt, q, choosing(&content, q, true)).await;
    let problem = res.problem(409, "answer_final").await;
    assert_eq!(problem["recorded"], first);
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM responses")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(count, 1);
}

#[tokio::test]
async fn an_event_nobody_wants_is_not_written_and_one_a_consumer_wants_is_written_with_its_answer()
{
    let app = TestApp::spawn().await;
    let learner = app.person("events@example.org", "learner").await;
    let content = quiz("data-parallelism");
    let events = |topic: &'static str| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT count(*) FROM outbox WHERE topic = $1")
                .bind(topic)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    // No xAPI, no webhook: nobody wants starts or answers.
    let attempt = start_practice(&learner, "data-parallelism", "en").await;
    let (q0, q1) = (&attempt["questions"][0], &attempt["questions"][1]);
    answer(&learner, &attempt, q0, choosing(&content, q0, true))
        .await
        .status(200)
        .await;
    assert_eq!(
        (
            events("attempt.started").await,
            events("response.recorded").await
        ),
        (0, 0)
    );
    // Once a consumer wants answers, each answer's event is written with it.
    app.want_events(&["response.recorded"]).await;
    answer(&learner, &attempt, q1, choosing(&content, q1, true))
        .await
        .status(200)
        .await;
    assert_eq!(events("response.recorded").await, 1);
    let (last, payload): (String, Value) = sqlx::query_as(
        "SELECT (SELECT question_key FROM responses ORDER BY answered_at DESC LIMIT 1),
                (SELECT payload FROM outbox WHERE topic = 'response.recorded')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(payload["attempt_id"], attempt["id"]);
    assert_eq!(
        payload["question_key"],
        last.as_str(),
        "the second answer's event"
    );
}

#[tokio::test]
async fn many_parallel_submissions_record_exactly_one_response() {
    let app = TestApp::spawn().await;
    app.want_events(&["response.recorded"]).await;
    let learner = app.person("race@example.org", "learner").await;
    let content = quiz("data-parallelism");
    let attempt = start_practice(&learner, "data-parallelism", "en").await;
    // Identical submissions: all succeed with the same result.
    let q = attempt["questions"][0].clone();
    let pick = option_ids(&content, &q, true)[0].clone();
    let same = futures_util::future::join_all(
        (0..16).map(|_| answer(&learner, &attempt, &q, json!({"selected": [pick.clone()]}))),
    )
    .await;
    let mut bodies = Vec::new();
    for res in same {
        bodies.push(res.status(200).await);
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]));
    // Conflicting submissions: one answer wins, every other is refused with it.
    let q = attempt["questions"][1].clone();
    let options: Vec<String> = q["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_string())
        .collect();
    let mixed = futures_util::future::join_all((0..16).map(|i| {
        answer(
            &learner,
            &attempt,
            &q,
            json!({"selected": [options[i % 4].clone()]}),
        )
    }))
    .await;
    let mut winners = std::collections::HashSet::new();
    for res in mixed {
        let res = res.response();
        let status = res.status().as_u16();
        let body: Value = res.json().await.unwrap();
        match status {
            200 => winners.insert(body["response"]["selected"].to_string()),
            409 => winners.insert(body["recorded"]["response"]["selected"].to_string()),
            other => panic!("unexpected {other}: {body}"),
        };
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    let (responses, events): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM responses), (SELECT count(*) FROM outbox WHERE topic = 'response.recorded')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        (responses, events),
        (2, 2),
        "one response and one event per question"
    );
}

/// An instructor's course with one enrolled learner and an assignment of `slug` under `policy`.
async fn course_assignment<'a>(
    app: &'a TestApp,
    slug: &str,
    policy: Value,
) -> (Session<'a>, Session<'a>, String) {
    let teacher = app.person("teacher@example.org", "instructor").await;
    let (learner, assignment) = assigned(&teacher, slug, policy).await;
    (teacher, learner, assignment)
}

async fn start(who: &Session<'_>, assignment: &str) -> Reply {
    who.post(
        &format!("/v1/assignments/{assignment}/attempts"),
        &json!({}),
    )
    .await
}

#[tokio::test]
async fn deferred_policies_reveal_nothing_until_they_allow_and_let_answers_change() {
    let t0 = Utc::now();
    for feedback in ["on_finish", "after_close", "never"] {
        let clock = Clock::manual(t0);
        let app = TestApp::spawn_with_clock(clock.clone()).await;
        let closes = t0 + Duration::days(1);
        let (_, learner, assignment) = course_assignment(&app, "data-parallelism", json!({"feedback": feedback, "shuffle_questions": true, "shuffle_options": true, "closes_at": closes})).await;
        let content = quiz("data-parallelism");
        let attempt = start(&learner, &assignment).await.status(201).await;
        assert_no_key_material(&attempt.to_string(), &content, feedback);
        for q in attempt["questions"].as_array().unwrap() {
            // Change the answer once: deferred answers may change until finishing.
            let wrong = option_ids(&content, q, false)[0].clone();
            let body = answer(&learner, &attempt, q, json!({"selected": [wrong]}))
                .await
                .status(200)
                .await;
            assert_no_key_material(&body.to_string(), &content, feedback);
            let right = option_ids(&content, q, true)[0].clone();
            let body = answer(&learner, &attempt, q, json!({"selected": [right.clone()]}))
                .await
                .status(200)
                .await;
            assert_eq!(body["response"]["selected"], json!([right]));
            assert!(body["result"].is_null());
        }
        let id = attempt["id"].as_str().unwrap();
        let resumed = learner
            .get(&format!("/v1/attempts/{id}"))
            .await
            .status(200)
            .await;
        assert_no_key_material(&resumed.to_string(), &content, feedback);
        let mine = learner.get("/v1/me/attempts").await.status(200).await;
        assert_no_key_material(&mine.to_string(), &content, feedback);
        let done = finish(&learner, &attempt).await;
        assert_eq!(
            done["result"]["percentage"], 100.0,
            "{feedback}: the score is always shown"
        );
        match feedback {
            "on_finish" => assert!(done["questions"][0]["result"]["explanation"].is_object()),
            _ => assert_no_key_material(&done.to_string(), &content, feedback),
        }
        if feedback == "after_close" {
            clock.advance(Duration::days(2));
            let after = learner
                .get(&format!("/v1/attempts/{id}"))
                .await
                .status(200)
                .await;
            assert!(
                after["questions"][0]["result"]["correct"]
                    .as_bool()
                    .unwrap()
            );
        }
    }
}

#[tokio::test]
async fn every_question_kind_is_graded_on_the_server() {
    let app = TestApp::spawn().await;
    let learner = app.person("kinds@example.org", "learner").await;
    let content = quiz("kinds-sampler");
    let attempt = start_practice(&learner, "kinds-sampler", "en").await;
    assert_eq!(attempt["feedback_timing"], "on_finish");
    let mut expected = 0.0;
    for q in attempt["questions"].as_array().unwrap() {
        let cq = content_question(&content, q);
        let body = match q["kind"].as_str().unwrap() {
            "single" | "true_false" => choosing(&content, q, true),
            "multiple" => {
                json!({"selected": [option_ids(&content, q, true)[0], option_ids(&content, q, false)[0]]})
            }
            "numeric" => json!({"number": cq.numeric.as_ref().unwrap().answer}),
            "short_text" => {
                json!({"text": format!("  {} ", cq.short_text.as_ref().unwrap().accepted[0].to_uppercase())})
            }
            other => panic!("{other}"),
        };
        expected += if q["kind"] == "multiple" {
            0.0
        } else {
            cq.points
        };
        answer(&learner, &attempt, q, body).await.status(200).await;
        // The wrong shape of answer is refused and changes nothing.
        let wrong_shape = if q["kind"] == "numeric" {
            json!({"text": "64"})
        } else {
            json!({"number": 1})
        };
        answer(&learner, &attempt, q, wrong_shape)
            .await
            .problem(422, "invalid_answer")
            .await;
    }
    let done = finish(&learner, &attempt).await;
    assert_eq!(done["result"]["score"], expected);
    for q in done["questions"].as_array().unwrap() {
        let r = &q["result"];
        match q["kind"].as_str().unwrap() {
            "multiple" => assert_eq!(
                (r["correct"].as_bool(), r["points"].as_f64()),
                (Some(false), Some(0.0)),
                "one right and one wrong of two right: no credit"
            ),
            _ => assert_eq!(r["correct"], true, "{q}"),
        }
    }
}

#[tokio::test]
async fn an_answer_after_the_deadline_is_refused_and_the_attempt_finishes_with_what_was_answered() {
    let clock = Clock::manual(Utc::now());
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let (_, learner, assignment) =
        course_assignment(&app, "data-parallelism", json!({"time_limit_minutes": 10})).await;
    let content = quiz("data-parallelism");
    let attempt = start(&learner, &assignment).await.status(201).await;
    assert_eq!(attempt["time_left_seconds"], 600);
    let q0 = &attempt["questions"][0];
    answer(&learner, &attempt, q0, choosing(&content, q0, true))
        .await
        .status(200)
        .await;
    clock.advance(Duration::minutes(4));
    let id = attempt["id"].as_str().unwrap();
    let resumed = learner
        .get(&format!("/v1/attempts/{id}"))
        .await
        .status(200)
        .await;
    assert_eq!(resumed["time_left_seconds"], 360);
    clock.advance(Duration::minutes(7));
    let q1 = &attempt["questions"][1];
    let res = answer(&learner, &attempt, q1, choosing(&content, q1, true)).await;
    res.problem(409, "deadline_passed").await;
    let after = learner
        .get(&format!("/v1/attempts/{id}"))
        .await
        .status(200)
        .await;
    assert_eq!(after["state"], "finished");
    assert_eq!(after["finish_reason"], "deadline");
    assert_eq!(after["result"]["score"], 1.0);
    assert_eq!(after["finished_at"], attempt["deadline"]);
}

#[tokio::test]
async fn the_background_sweep_finishes_expired_attempts() {
    let clock = Clock::manual(Utc::now());
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let (_, learner, assignment) =
        course_assignment(&app, "data-parallelism", json!({"time_limit_minutes": 1})).await;
    start(&learner, &assignment).await.status(201).await;
    clock.advance(Duration::minutes(2));
    let finished = quizd::attempts::finish_expired(&app.pool, clock.now())
        .await
        .unwrap();
    assert_eq!(finished, 1);
    let reason: String = sqlx::query_scalar("SELECT finish_reason FROM attempts")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(reason, "deadline");
    let events: i64 =
        sqlx::query_scalar("SELECT count(*) FROM outbox WHERE topic = 'attempt.finished'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(events, 1);
}

#[tokio::test]
async fn the_attempts_limit_and_the_window_are_enforced() {
    let t0 = Utc::now();
    let clock = Clock::manual(t0);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let policy = json!({"attempts_allowed": 1, "opens_at": t0 + Duration::hours(1), "closes_at": t0 + Duration::hours(2)});
    let (_, learner, assignment) = course_assignment(&app, "data-parallelism", policy).await;
    start(&learner, &assignment)
        .await
        .problem(409, "not_open")
        .await;
    clock.advance(Duration::minutes(90));
    let attempt = start(&learner, &assignment).await.status(201).await;
    // Starting again while it is open resumes it.
    let again = start(&learner, &assignment).await.status(200).await;
    assert_eq!(again["id"], attempt["id"]);
    // The close time bounds the attempt.
    assert_eq!(attempt["time_left_seconds"], 1800);
    finish(&learner, &attempt).await;
    start(&learner, &assignment)
        .await
        .problem(409, "attempts_exhausted")
        .await;
    clock.advance(Duration::hours(1));
    start(&learner, &assignment)
        .await
        .problem(409, "closed")
        .await;
}

#[tokio::test]
async fn another_learners_attempt_is_404_on_every_attempt_endpoint_and_staff_can_read_not_answer() {
    let app = TestApp::spawn().await;
    let (teacher, learner, assignment) =
        course_assignment(&app, "data-parallelism", json!({})).await;
    let intruder = app.person("eve@example.org", "learner").await;
    let other_teacher = app.person("mallory@example.org", "instructor").await;
    let attempt = start(&learner, &assignment).await.status(201).await;
    let id = attempt["id"].as_str().unwrap();
    let q = attempt["questions"][0]["id"].as_str().unwrap();
    let opt = attempt["questions"][0]["options"][0]["id"]
        .as_str()
        .unwrap();
    for who in [&intruder, &other_teacher] {
        who.get(&format!("/v1/attempts/{id}"))
            .await
            .problem(404, "attempt_not_found")
            .await;
        let res = who
            .put(
                &format!("/v1/attempts/{id}/responses/{q}"),
                &json!({"selected": [opt]}),
            )
            .await;
        res.problem(404, "attempt_not_found").await;
        let res = who
            .post(&format!("/v1/attempts/{id}/finish"), &json!({}))
            .await;
        res.problem(404, "attempt_not_found").await;
        // Nor can they start an attempt in a course they are not in.
        start(who, &assignment)
            .await
            .problem(404, "assignment_not_found")
            .await;
    }
    // The course's instructor reads it (with the key: staff see everything) but cannot answer.
    let seen = teacher
        .get(&format!("/v1/attempts/{id}"))
        .await
        .status(200)
        .await;
    assert!(seen["questions"][0]["result"]["correct_options"].is_array());
    let res = teacher
        .put(
            &format!("/v1/attempts/{id}/responses/{q}"),
            &json!({"selected": [opt]}),
        )
        .await;
    res.problem(403, "forbidden").await;
    let list = teacher
        .get(&format!("/v1/assignments/{assignment}/attempts"))
        .await
        .status(200)
        .await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    learner
        .get(&format!("/v1/assignments/{assignment}/attempts"))
        .await
        .problem(403, "forbidden")
        .await;
    // Without a token: 401.
    app.anonymous()
        .get(&format!("/v1/attempts/{id}"))
        .await
        .problem(401, "unauthorized")
        .await;
}

#[tokio::test]
async fn resuming_returns_the_same_order_the_answers_and_the_feedback_earned() {
    let app = TestApp::spawn().await;
    let learner = app.person("resume@example.org", "learner").await;
    let content = quiz("data-parallelism");
    let attempt = start_practice(&learner, "data-parallelism", "bn").await;
    let q = &attempt["questions"][2];
    let pick = option_ids(&content, q, true)[0].clone();
    let out = answer(&learner, &attempt, q, json!({"selected": [pick.clone()]}))
        .await
        .status(200)
        .await;
    let id = attempt["id"].as_str().unwrap();
    // Another device: sign in again and resume.
    let (access, refresh) = crate::support::login(&app, &learner.email).await;
    let device = app.session(Person {
        access,
        refresh,
        ..Person::clone(&learner)
    });
    let resumed = device
        .get(&format!("/v1/attempts/{id}"))
        .await
        .status(200)
        .await;
    let strip = |a: &Value| -> Vec<(Value, Value)> {
        a["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| (q["id"].clone(), q["options"].clone()))
            .collect()
    };
    assert_eq!(strip(&resumed), strip(&attempt));
    let rq = &resumed["questions"][2];
    assert_eq!(rq["response"]["selected"], json!([pick]));
    assert_eq!(rq["result"], out["result"]);
    assert!(resumed["questions"][3]["result"].is_null());
    // Starting the practice again resumes the same attempt.
    let again = learner
        .post("/v1/quizzes/data-parallelism/attempts", &json!({}))
        .await;
    assert_eq!(again.status(200).await["id"], attempt["id"]);
}

#[tokio::test]
async fn grades_follow_the_grading_method() {
    let app = TestApp::spawn().await;
    let (teacher, learner, assignment) = course_assignment(
        &app,
        "data-parallelism",
        json!({"grading_method": "latest"}),
    )
    .await;
    let content = quiz("data-parallelism");
    for correct_answers in [3, 1] {
        let attempt = start(&learner, &assignment).await.status(201).await;
        for q in attempt["questions"]
            .as_array()
            .unwrap()
            .iter()
            .take(correct_answers)
        {
            answer(&learner, &attempt, q, choosing(&content, q, true))
                .await
                .status(200)
                .await;
        }
        finish(&learner, &attempt).await;
    }
    let mine = learner.get("/v1/me/attempts").await.status(200).await;
    assert_eq!(mine["items"].as_array().unwrap().len(), 2);
    assert_eq!(mine["grades"][0]["grading_method"], "latest");
    assert_eq!(mine["grades"][0]["percentage"], 12.5);
    let theirs = teacher
        .get(&format!("/v1/assignments/{assignment}/attempts"))
        .await
        .status(200)
        .await;
    assert_eq!(theirs["grades"], mine["grades"]);
}

#[tokio::test]
async fn bad_answers_are_refused_and_change_nothing() {
    let app = TestApp::spawn().await;
    let learner = app.person("bad@example.org", "learner").await;
    let attempt = start_practice(&learner, "data-parallelism", "en").await;
    let q = &attempt["questions"][0];
    let opts: Vec<&str> = q["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    let other_q_opt = attempt["questions"][1]["options"][0]["id"]
        .as_str()
        .unwrap();
    for (body, status, code) in [
        (
            json!({"selected": [opts[0], opts[1]]}),
            422,
            "invalid_answer",
        ),
        (json!({"selected": []}), 422, "invalid_answer"),
        (json!({"selected": [other_q_opt]}), 422, "unknown_option"),
        (json!({"selected": ["0"]}), 422, "unknown_option"),
        (json!({"number": 1}), 422, "invalid_answer"),
        (
            json!({"selected": [opts[0]], "text": "x"}),
            400,
            "invalid_body",
        ),
        (
            json!({"selected": [opts[0]], "correct": true}),
            400,
            "invalid_body",
        ),
        (json!({"number": null}), 400, "invalid_body"),
        (json!([[opts[0]]]), 400, "invalid_body"),
        (json!({}), 400, "invalid_body"),
    ] {
        answer(&learner, &attempt, q, body.clone())
            .await
            .problem(status, code)
            .await;
    }
    let path = format!(
        "/v1/attempts/{}/responses/nope",
        attempt["id"].as_str().unwrap()
    );
    learner
        .put(&path, &json!({"selected": [opts[0]]}))
        .await
        .problem(404, "question_not_found")
        .await;
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM responses")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(count, 0);
}

#[tokio::test]
async fn a_feedback_policy_the_code_does_not_know_fails_closed_and_reveals_nothing() {
    let app = TestApp::spawn().await;
    let learner = app.person("mina@example.org", "learner").await;
    // A value the database's CHECK would refuse, as if a later migration added a policy this
    // build does not know: it must not read as some default (`immediate` reveals the most).
    sqlx::query("ALTER TABLE assignments DROP CONSTRAINT assignments_feedback_check")
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query(
        "UPDATE assignments SET feedback = 'sometimes'
          WHERE quiz_id = (SELECT id FROM quizzes WHERE slug = 'data-parallelism')",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let res = learner
        .post(
            "/v1/quizzes/data-parallelism/attempts",
            &json!({"locale": "en"}),
        )
        .await;
    res.problem(500, "internal_error").await;
    let started: i64 = sqlx::query_scalar("SELECT count(*) FROM attempts")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(started, 0);
}

async fn clear(who: &Session<'_>, attempt: &Value, question: &str) -> Reply {
    let path = format!(
        "/v1/attempts/{}/responses/{question}",
        attempt["id"].as_str().unwrap()
    );
    who.delete(&path).await
}

async fn cleared_events(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM outbox WHERE topic = 'response.cleared'")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn clearing_a_choice_leaves_the_question_unanswered_while_answers_may_change_and_never_after()
{
    let clock = Clock::manual(Utc::now());
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    app.want_events(&["response.cleared"]).await;
    let (teacher, learner, assignment) = course_assignment(
        &app,
        "data-parallelism",
        json!({"feedback": "on_finish", "time_limit_minutes": 10}),
    )
    .await;
    let content = quiz("data-parallelism");
    let attempt = start(&learner, &assignment).await.status(201).await;
    let id = attempt["id"].as_str().unwrap();
    let q0 = &attempt["questions"][0];
    let q0_id = q0["id"].as_str().unwrap();
    let right = choosing(&content, q0, true);
    answer(&learner, &attempt, q0, right.clone())
        .await
        .status(200)
        .await;

    // Cleared: unanswered again, with its event; clearing it again changes nothing.
    clear(&learner, &attempt, q0_id).await.status(204).await;
    let read = learner
        .get(&format!("/v1/attempts/{id}"))
        .await
        .status(200)
        .await;
    assert!(
        read["questions"][0]["response"].is_null(),
        "{}",
        read["questions"][0]
    );
    assert_eq!(cleared_events(&app).await, 1);
    clear(&learner, &attempt, q0_id).await.status(204).await;
    assert_eq!(cleared_events(&app).await, 1);

    // Nobody else clears it: another learner does not see the attempt, its teacher may not answer.
    let other = app.person("other-clear@example.org", "learner").await;
    clear(&other, &attempt, q0_id)
        .await
        .problem(404, "attempt_not_found")
        .await;
    clear(&teacher, &attempt, q0_id).await.status(403).await;
    clear(&learner, &attempt, "no-such-question")
        .await
        .problem(404, "question_not_found")
        .await;

    // Answered again, then past the deadline: the answer stands and counts.
    answer(&learner, &attempt, q0, right)
        .await
        .status(200)
        .await;
    clock.advance(Duration::minutes(11));
    clear(&learner, &attempt, q0_id)
        .await
        .problem(409, "deadline_passed")
        .await;
    let after = learner
        .get(&format!("/v1/attempts/{id}"))
        .await
        .status(200)
        .await;
    assert_eq!(after["state"], "finished");
    assert_eq!(after["result"]["score"], 1.0);
    assert_eq!(cleared_events(&app).await, 1);

    // Under immediate feedback an answered question has shown its key: its answer stands.
    let practice = start_practice(&other, "data-parallelism", "en").await;
    let p0 = &practice["questions"][0];
    answer(&other, &practice, p0, choosing(&content, p0, false))
        .await
        .status(200)
        .await;
    clear(&other, &practice, p0["id"].as_str().unwrap())
        .await
        .problem(409, "answer_final")
        .await;
    let p1 = practice["questions"][1]["id"].as_str().unwrap();
    clear(&other, &practice, p1).await.status(204).await;
    let count: i64 =
        sqlx::query_scalar("SELECT count(*) FROM responses WHERE attempt_id = $1::uuid")
            .bind(practice["id"].as_str().unwrap())
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(count, 1);
    assert_eq!(cleared_events(&app).await, 1);
}

#[tokio::test]
async fn a_learner_reads_how_many_attempts_remain_with_an_overrides_extra_attempts() {
    let app = TestApp::spawn().await;
    let (teacher, learner, assignment) = course_assignment(
        &app,
        "kinds-sampler",
        json!({"feedback": "on_finish", "attempts_allowed": 1}),
    )
    .await;
    let path = format!("/v1/assignments/{assignment}");
    let yours = |v: Value| v["your_attempts"].clone();
    let before = yours(learner.get(&path).await.status(200).await);
    assert_eq!(
        before,
        json!({"allowed": 1, "used": 0, "remaining": 1, "opens_at": null, "closes_at": null})
    );
    let attempt = start(&learner, &assignment).await.status(201).await;
    finish(&learner, &attempt).await;
    let used = yours(learner.get(&path).await.status(200).await);
    assert_eq!(
        (used["used"].as_u64(), used["remaining"].as_u64()),
        (Some(1), Some(0))
    );
    start(&learner, &assignment)
        .await
        .problem(409, "attempts_exhausted")
        .await;

    // A staff override's extra attempt: visible to the learner, and the start agrees.
    let path_override = format!("/v1/assignments/{assignment}/overrides/{}", learner.id);
    teacher
        .put(&path_override, &json!({"extra_attempts": 1}))
        .await
        .ok::<Value>()
        .await;
    let extra = yours(learner.get(&path).await.status(200).await);
    assert_eq!(
        (
            extra["allowed"].as_u64(),
            extra["used"].as_u64(),
            extra["remaining"].as_u64()
        ),
        (Some(2), Some(1), Some(1))
    );
    start(&learner, &assignment).await.status(201).await;
    // Each reader reads their own: the teacher has used none of theirs.
    let theirs = yours(teacher.get(&path).await.status(200).await);
    assert_eq!(
        (theirs["allowed"].as_u64(), theirs["used"].as_u64()),
        (Some(1), Some(0))
    );
}
