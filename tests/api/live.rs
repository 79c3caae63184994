//! Live mode over HTTP: a class joins with a code, answers against the timer over the same
//! grading and outbox as any attempt, and follows the session on Server-Sent Events; and each
//! kind of misuse the issue names is refused.

use std::collections::HashMap;
use std::time::Duration;

use chrono::Utc;
use futures_util::StreamExt;
use quizd::clock::Clock;
use serde_json::{Value, json};

use crate::support::session::{Reply, Session};
use crate::support::{Person, TestApp, assert_problem, client_from, content_dir, expect_status};

/// A course taught by `teacher` with `learners` enrolled, and an assignment of the seed quiz
/// `data-parallelism` under `policy`.
struct Class<'a> {
    teacher: Session<'a>,
    learners: Vec<Session<'a>>,
    course: String,
    assignment: String,
}

async fn class(app: &TestApp, learners: usize, policy: Value) -> Class<'_> {
    let teacher = app.person("teacher@example.org", "instructor").await;
    let course = teacher
        .post("/v1/courses", &json!({"title": "Live"}))
        .await
        .status(201)
        .await;
    let course = course["id"].as_str().unwrap().to_string();
    let mut people = Vec::new();
    for i in 0..learners {
        let learner = app
            .person(&format!("learner{i}@example.org"), "learner")
            .await;
        let path = format!("/v1/courses/{course}/enrollments");
        let body = json!({"email": learner.email});
        teacher.post(&path, &body).await.status(201).await;
        people.push(learner);
    }
    let path = format!("/v1/courses/{course}/assignments");
    let body = json!({"quiz": "data-parallelism", "policy": policy});
    let a = teacher.post(&path, &body).await.status(201).await;
    Class {
        teacher,
        learners: people,
        course,
        assignment: a["id"].as_str().unwrap().to_string(),
    }
}

async fn create_session(c: &Class<'_>, body: Value) -> Value {
    let path = format!("/v1/assignments/{}/live", c.assignment);
    c.teacher.post(&path, &body).await.status(201).await
}

async fn join(who: &Session<'_>, code: &str) -> Reply {
    who.post("/v1/live/join", &json!({"code": code})).await
}

async fn step(who: &Session<'_>, session: &Value, what: &str, body: Value) -> Reply {
    let path = format!(
        "/v1/live/sessions/{}/{what}",
        session["id"].as_str().unwrap()
    );
    who.post(&path, &body).await
}

async fn live_answer(
    who: &Session<'_>,
    session: &Value,
    question_id: &str,
    option_id: &str,
) -> Reply {
    let path = format!(
        "/v1/live/sessions/{}/responses/{question_id}",
        session["id"].as_str().unwrap()
    );
    who.put(&path, &json!({"selected": [option_id]})).await
}

/// A Server-Sent Events stream, read event by event.
struct Sse {
    res: reqwest::Response,
    buf: String,
}

impl Sse {
    async fn open(
        app: &TestApp,
        client: &reqwest::Client,
        token: &str,
        session: &Value,
    ) -> reqwest::Response {
        let path = format!(
            "/v1/live/sessions/{}/events",
            session["id"].as_str().unwrap()
        );
        client
            .get(app.url(&path))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
    }

    async fn connect(app: &TestApp, token: &str, session: &Value) -> Sse {
        let res = Self::open(app, &app.client, token, session).await;
        assert_eq!(res.status().as_u16(), 200);
        assert_eq!(
            res.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Sse {
            res,
            buf: String::new(),
        }
    }

    /// The next event (name, data), skipping comments; fails after 20 s.
    async fn next(&mut self) -> (String, Value) {
        tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                if let Some(end) = self.buf.find("\n\n") {
                    let block: String = self.buf.drain(..end + 2).collect();
                    let mut name = String::new();
                    let mut data = String::new();
                    for line in block.lines() {
                        if let Some(n) = line.strip_prefix("event: ") {
                            name = n.to_string();
                        } else if let Some(d) = line.strip_prefix("data: ") {
                            data.push_str(d);
                        }
                    }
                    if name.is_empty() {
                        continue;
                    }
                    return (name, serde_json::from_str(&data).unwrap());
                }
                let chunk = self.res.chunk().await.unwrap().expect("the stream goes on");
                self.buf.push_str(std::str::from_utf8(&chunk).unwrap());
            }
        })
        .await
        .expect("an event within 20 s")
    }

    /// The next event called `name`, skipping others.
    async fn until(&mut self, name: &str) -> Value {
        loop {
            let (n, data) = self.next().await;
            if n == name {
                return data;
            }
        }
    }

    /// What the stream still sends until the server closes it (within 20 s).
    async fn rest(mut self) -> String {
        tokio::time::timeout(Duration::from_secs(20), async {
            while let Ok(Some(chunk)) = self.res.chunk().await {
                self.buf.push_str(std::str::from_utf8(&chunk).unwrap());
            }
            self.buf
        })
        .await
        .expect("the stream ends within 20 s")
    }

    /// Whether the stream ends (the server closed it) within 20 s.
    async fn ends(mut self) -> bool {
        tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match self.res.chunk().await {
                    Ok(Some(_)) => continue,
                    _ => return true,
                }
            }
        })
        .await
        .unwrap_or(false)
    }
}

/// Option texts of `data-parallelism`'s question `index` by key, and its correct option's key.
fn question_texts(index: usize) -> (HashMap<String, String>, String) {
    let quizzes = quizd::content::load_dir(&content_dir()).unwrap();
    let quiz = quizzes
        .iter()
        .find(|q| q.slug == "data-parallelism")
        .unwrap();
    let q = &quiz.questions[index];
    let texts = q
        .options
        .iter()
        .map(|o| (o.text[&quiz.source_locale].clone(), o.key.clone()))
        .collect();
    let correct = q.options.iter().find(|o| o.correct).unwrap().key.clone();
    (texts, correct)
}

/// The learner's option id of the option with content key `key`, in a `question` event.
fn option_id(event: &Value, texts: &HashMap<String, String>, key: &str) -> String {
    event["question"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| texts[o["text"].as_str().unwrap()] == key)
        .map(|o| o["id"].as_str().unwrap().to_string())
        .unwrap()
}

async fn count(app: &TestApp, sql: &str, id: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string()))
        .bind(id.parse::<uuid::Uuid>().unwrap())
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_class_joins_with_the_code_answers_against_the_timer_and_sees_the_distribution() {
    let app = TestApp::spawn().await;
    app.want_events(&["response.recorded"]).await;
    let c = class(&app, 2, json!({"feedback": "immediate"})).await;
    // A display name that is markup reaches the staff as the text it is.
    sqlx::query("UPDATE users SET display_name = '<img src=x onerror=alert(1)>' WHERE id = $1")
        .bind(c.learners[1].id)
        .execute(&app.pool)
        .await
        .unwrap();
    let session = create_session(&c, json!({})).await;
    let code = session["code"].as_str().unwrap().to_string();
    assert_eq!(code.len(), 6);
    assert!(
        code.bytes()
            .all(|b| b"23456789ABCDEFGHJKMNPQRSTUVWXYZ".contains(&b))
    );
    assert_eq!(session["phase"], "lobby");
    assert_eq!(session["leaderboard"], false);
    assert_eq!(session["question_count"], 8);

    let mut staff = Sse::connect(&app, &c.teacher.access, &session).await;
    assert_eq!(staff.next().await.0, "hello");
    assert_eq!(staff.until("tally").await["joined"], 0);

    // Joining: typed loosely, and again after a reload: the same attempt.
    let typed = format!(" {}-{} ", &code[..3].to_lowercase(), &code[3..]);
    let first = join(&c.learners[0], &typed).await.status(201).await;
    let again = join(&c.learners[0], &code).await.status(200).await;
    assert_eq!(first["attempt_id"], again["attempt_id"]);
    let second = join(&c.learners[1], &code).await.status(201).await;
    let mut phones = vec![
        Sse::connect(&app, &c.learners[0].access, &session).await,
        Sse::connect(&app, &c.learners[1].access, &session).await,
    ];
    for phone in &mut phones {
        let hello = phone.until("hello").await;
        assert_eq!(hello["question_count"], 8);
    }
    let tally = loop {
        let t = staff.until("tally").await;
        if t["joined"] == 2 {
            break t;
        }
    };
    assert_eq!(tally["recent"][1], "<img src=x onerror=alert(1)>");

    // The first question, for 60 s: each phone gets it in its own ids, without the key.
    let opened = step(&c.teacher, &session, "next", json!({"seconds": 60}))
        .await
        .status(200)
        .await;
    assert_eq!(
        (opened["phase"].as_str(), opened["index"].as_u64()),
        (Some("open"), Some(0))
    );
    let shown = staff.until("question").await;
    assert_eq!(shown["index"], 0);
    assert!(
        shown["options"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o.get("correct").is_none())
    );
    let (texts, correct) = question_texts(0);
    let wrong = texts.values().find(|k| **k != correct).unwrap().clone();
    let mut questions = Vec::new();
    for phone in &mut phones {
        let q = phone.until("question").await;
        assert_eq!(q["index"], 0);
        assert!(q["seconds_left"].as_i64().unwrap() > 50);
        assert!(q["question"]["result"].is_null());
        assert!(
            !q.to_string().contains("\"correct\""),
            "no key while open: {q}"
        );
        questions.push(q);
    }
    let qid0 = questions[0]["question"]["id"].as_str().unwrap().to_string();
    let qid1 = questions[1]["question"]["id"].as_str().unwrap().to_string();
    let right0 = option_id(&questions[0], &texts, &correct);
    let wrong1 = option_id(&questions[1], &texts, &wrong);
    let reply = live_answer(&c.learners[0], &session, &qid0, &right0)
        .await
        .status(200)
        .await;
    assert!(
        reply["result"].is_null(),
        "no key while the question is open: {reply}"
    );
    // The same answer again is harmless; another one is refused: the first stands.
    live_answer(&c.learners[0], &session, &qid0, &right0)
        .await
        .status(200)
        .await;
    let other = option_id(&questions[0], &texts, &wrong);
    live_answer(&c.learners[0], &session, &qid0, &other)
        .await
        .problem(409, "answer_final")
        .await;
    live_answer(&c.learners[1], &session, &qid1, &wrong1)
        .await
        .status(200)
        .await;
    // The live attempt takes no answer the ordinary way, which would skip the timer.
    let path = format!(
        "/v1/attempts/{}/responses/{qid0}",
        first["attempt_id"].as_str().unwrap()
    );
    c.learners[0]
        .put(&path, &json!({"selected": [right0]}))
        .await
        .problem(409, "live_only")
        .await;
    loop {
        let t = staff.until("tally").await;
        if t["answers"].as_i64().unwrap() >= 2 {
            break;
        }
    }

    // Closed early: the distribution, with the key for the staff and, under immediate
    // feedback, each learner's result.
    let closed = step(&c.teacher, &session, "close", json!({}))
        .await
        .status(200)
        .await;
    assert_eq!(closed["phase"], "closed");
    let d = staff.until("closed").await;
    assert_eq!(d["total"], 2);
    for o in d["options"].as_array().unwrap() {
        let expected = if o["key"] == correct.as_str() || o["key"] == wrong.as_str() {
            1
        } else {
            0
        };
        assert_eq!(o["answers"], expected, "{o}");
        assert_eq!(o["correct"], o["key"] == correct.as_str());
    }
    assert!(
        d.get("leaders").is_none(),
        "the leaderboard is off by default"
    );
    let mine = phones[0].until("closed").await;
    assert_eq!(mine["total"], 2);
    assert_eq!(mine["answered"], true);
    assert_eq!(mine["result"]["correct"], true);
    assert!(
        mine["options"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["id"] == right0.as_str() && o["answers"] == 1)
    );
    assert!(
        !mine.to_string().contains(&format!("\"{correct}\"")),
        "no option key reaches a learner"
    );
    let theirs = phones[1].until("closed").await;
    assert_eq!(theirs["result"]["correct"], false);
    live_answer(&c.learners[1], &session, &qid1, &wrong1)
        .await
        .problem(409, "live_question_closed")
        .await;
    let rest = c
        .teacher
        .get(&format!(
            "/v1/live/sessions/{}/distribution",
            session["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(rest.status(200).await["total"], 2);

    // Ending finishes and grades the attempts, through the outbox like any attempt.
    let ended = step(&c.teacher, &session, "end", json!({}))
        .await
        .status(200)
        .await;
    assert_eq!(ended["phase"], "ended");
    assert_eq!(
        phones[0].until("ended").await["attempt_id"],
        first["attempt_id"]
    );
    staff.until("ended").await;
    for p in phones {
        assert!(p.ends().await, "a learner's stream ends with the session");
    }
    let attempt = c.learners[0]
        .get(&format!(
            "/v1/attempts/{}",
            first["attempt_id"].as_str().unwrap()
        ))
        .await
        .status(200)
        .await;
    assert_eq!(attempt["state"], "finished");
    assert_eq!(attempt["result"]["score"], 1.0);
    let events = count(&app, "SELECT count(*) FROM outbox WHERE aggregate_id = $1 AND topic IN ('response.recorded', 'attempt.finished')", first["attempt_id"].as_str().unwrap()).await;
    assert_eq!(
        events, 2,
        "one response event (the first answer) and the finish"
    );
    let _ = second;
    join(&c.learners[0], &code)
        .await
        .problem(404, "live_session_not_found")
        .await;
    let _ = c.course;
}

#[tokio::test]
async fn a_wrong_malformed_expired_or_ended_code_joins_nothing() {
    let t0 = Utc::now();
    let clock = Clock::manual(t0);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let c = class(&app, 1, json!({})).await;
    let learner = &c.learners[0];
    for code in ["", "AB", "ABCDE0", "ABCDEFG", "ÄBCDEF", &"A".repeat(5000)] {
        join(learner, code)
            .await
            .problem(404, "live_session_not_found")
            .await;
    }
    let session = create_session(&c, json!({})).await;
    let code = session["code"].as_str().unwrap().to_string();
    let wrong: String = code
        .chars()
        .map(|ch| if ch == 'Z' { 'Y' } else { 'Z' })
        .collect();
    join(learner, &wrong)
        .await
        .problem(404, "live_session_not_found")
        .await;
    // Expired: a session left running for longer than its code lives.
    clock.advance(chrono::Duration::hours(7));
    join(learner, &code)
        .await
        .problem(404, "live_session_not_found")
        .await;
    // Ended.
    let other = create_session(&c, json!({})).await;
    step(&c.teacher, &other, "end", json!({}))
        .await
        .status(200)
        .await;
    join(learner, other["code"].as_str().unwrap())
        .await
        .problem(404, "live_session_not_found")
        .await;
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM attempts WHERE user_id = $1",
            &learner.id.to_string()
        )
        .await,
        0
    );
    // A body that is not an object, or has unknown fields, is a 400.
    learner
        .post("/v1/live/join", &json!(["ABCDEF"]))
        .await
        .problem(400, "invalid_body")
        .await;
    learner
        .post("/v1/live/join", &json!({"code": "ABCDEF", "x": 1}))
        .await
        .problem(400, "invalid_body")
        .await;
}

#[tokio::test]
async fn an_answer_after_the_timer_or_to_another_question_is_refused_and_records_nothing() {
    let t0 = Utc::now();
    let clock = Clock::manual(t0);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    app.want_events(&["response.recorded"]).await;
    let c = class(&app, 1, json!({"feedback": "on_finish"})).await;
    let learner = &c.learners[0];
    let session = create_session(&c, json!({})).await;
    let joined = join(learner, session["code"].as_str().unwrap())
        .await
        .status(201)
        .await;
    let attempt = joined["attempt_id"].as_str().unwrap().to_string();
    // The attempt's question ids and option ids, as the learner will know them.
    let qs = secrets(&app, &attempt).await;
    let (q0, q1) = (&qs[0], &qs[1]);
    let id = |q: &Secret| q.id.clone();
    let opt = |q: &Secret| q.option_ids[0].clone();
    // Before any question is open.
    live_answer(learner, &session, &id(q0), &opt(q0))
        .await
        .problem(409, "live_question_closed")
        .await;
    for seconds in [0, 4, 601] {
        step(&c.teacher, &session, "next", json!({"seconds": seconds}))
            .await
            .problem(422, "invalid_timer")
            .await;
    }
    step(&c.teacher, &session, "next", json!({"seconds": 10}))
        .await
        .status(200)
        .await;
    step(&c.teacher, &session, "next", json!({"seconds": 10}))
        .await
        .problem(409, "live_question_open")
        .await;
    // Another question than the open one.
    live_answer(learner, &session, &id(q1), &opt(q1))
        .await
        .problem(409, "live_question_closed")
        .await;
    // The timer runs out, by the server's clock.
    clock.advance(chrono::Duration::seconds(10));
    live_answer(learner, &session, &id(q0), &opt(q0))
        .await
        .problem(409, "live_question_closed")
        .await;
    step(&c.teacher, &session, "close", json!({}))
        .await
        .problem(409, "live_question_closed")
        .await;
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM responses WHERE attempt_id = $1",
            &attempt
        )
        .await,
        0
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM outbox WHERE aggregate_id = $1 AND topic = 'response.recorded'",
            &attempt
        )
        .await,
        0
    );
    // The next question takes an answer, once.
    step(&c.teacher, &session, "next", json!({"seconds": 10}))
        .await
        .status(200)
        .await;
    let reply = live_answer(learner, &session, &id(q1), &opt(q1))
        .await
        .status(200)
        .await;
    assert!(reply["result"].is_null());
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM responses WHERE attempt_id = $1",
            &attempt
        )
        .await,
        1
    );
    step(&c.teacher, &session, "end", json!({}))
        .await
        .status(200)
        .await;
    live_answer(learner, &session, &id(q1), &opt(q1))
        .await
        .problem(409, "live_session_ended")
        .await;
    step(&c.teacher, &session, "next", json!({"seconds": 10}))
        .await
        .problem(409, "live_session_ended")
        .await;
}

#[tokio::test]
async fn a_client_sending_a_flood_of_answers_gets_exactly_one_recorded() {
    let app = TestApp::spawn().await;
    app.want_events(&["response.recorded"]).await;
    let c = class(&app, 1, json!({})).await;
    let learner = &c.learners[0];
    let session = create_session(&c, json!({})).await;
    let joined = join(learner, session["code"].as_str().unwrap())
        .await
        .status(201)
        .await;
    let attempt = joined["attempt_id"].as_str().unwrap().to_string();
    step(&c.teacher, &session, "next", json!({"seconds": 60}))
        .await
        .status(200)
        .await;
    // The open question, as the learner's attempt shows it.
    let view = learner
        .get(&format!("/v1/attempts/{attempt}"))
        .await
        .status(200)
        .await;
    let q = view["questions"].as_array().unwrap()[0].clone();
    let qid = q["id"].as_str().unwrap().to_string();
    let options: Vec<String> = q["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_string())
        .collect();
    let statuses: Vec<u16> = futures_util::stream::iter(0..200)
        .map(|i| {
            let (session, qid, option) = (&session, &qid, options[i % options.len()].clone());
            async move {
                live_answer(learner, session, qid, &option)
                    .await
                    .response()
                    .status()
                    .as_u16()
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 409),
        "{statuses:?}"
    );
    assert!(statuses.contains(&200));
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM responses WHERE attempt_id = $1",
            &attempt
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM outbox WHERE aggregate_id = $1 AND topic = 'response.recorded'",
            &attempt
        )
        .await,
        1
    );
}

#[tokio::test]
async fn a_thousand_joins_from_one_address_are_refused_after_the_burst_with_retry_after() {
    let app = TestApp::spawn().await;
    let c = class(&app, 2, json!({})).await;
    let session = create_session(&c, json!({})).await;
    let code = session["code"].as_str().unwrap().to_string();
    let flood = client_from("127.0.0.7");
    let (flooder, neighbour) = (&c.learners[0], &c.learners[1]);
    let started = std::time::Instant::now();
    let responses: Vec<(u16, Option<String>)> = futures_util::stream::iter(0..1000)
        .map(|i| {
            let (app, flood) = (&app, &flood);
            // Mostly guesses, now and then the real code.
            let code = if i % 100 == 0 {
                code.clone()
            } else {
                format!("{:0>6}", i).replace('0', "A").replace('1', "B")
            };
            async move {
                let res = flood
                    .post(app.url("/v1/live/join"))
                    .bearer_auth(&flooder.access)
                    .json(&json!({"code": code}))
                    .send()
                    .await
                    .unwrap();
                let retry = res
                    .headers()
                    .get("retry-after")
                    .map(|v| v.to_str().unwrap().to_string());
                (res.status().as_u16(), retry)
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let refused: Vec<_> = responses.iter().filter(|(s, _)| *s == 429).collect();
    assert!(refused.len() >= 980, "{} refused", refused.len());
    assert!(
        refused
            .iter()
            .all(|(_, r)| r.as_ref().is_some_and(|r| r.parse::<u32>().unwrap() >= 1))
    );
    assert!(
        responses
            .iter()
            .all(|(s, _)| [200, 201, 404, 429].contains(s))
    );
    eprintln!(
        "1000 joins from one address answered in {:?}",
        started.elapsed()
    );
    // Another account from another address joins; the flooder's account waits.
    let other = client_from("127.0.0.8");
    let res = other
        .post(app.url("/v1/live/join"))
        .bearer_auth(&neighbour.access)
        .json(&json!({"code": code}))
        .send()
        .await
        .unwrap();
    expect_status(res, 201).await;
    let res = other
        .post(app.url("/v1/live/join"))
        .bearer_auth(&flooder.access)
        .json(&json!({"code": code}))
        .send()
        .await
        .unwrap();
    assert_problem(res, 429, "too_many_joins").await;
    // The counts hold one row per key, not one per request.
    let rows: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM sign_in_limits WHERE kind::text LIKE 'live_join%'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(rows <= 4, "{rows} rows");
}

#[tokio::test]
async fn only_those_who_may_take_the_assignment_join_and_only_its_staff_run_it() {
    let app = TestApp::spawn().await;
    let c = class(&app, 1, json!({"attempts_allowed": 1})).await;
    let outsider = app.person("outsider@example.org", "learner").await;
    let path = format!("/v1/assignments/{}/live", c.assignment);
    c.learners[0]
        .post(&path, &json!({}))
        .await
        .problem(403, "forbidden")
        .await;
    outsider
        .post(&path, &json!({}))
        .await
        .problem(404, "assignment_not_found")
        .await;
    let session = create_session(&c, json!({"leaderboard": true})).await;
    assert_eq!(session["leaderboard"], true);
    let code = session["code"].as_str().unwrap();
    // Not in the course: the code joins nothing.
    join(&outsider, code)
        .await
        .problem(404, "live_session_not_found")
        .await;
    let sid = session["id"].as_str().unwrap();
    for who in [&outsider, &c.learners[0]] {
        who.get(&format!("/v1/live/sessions/{sid}"))
            .await
            .problem(404, "live_session_not_found")
            .await;
        step(who, &session, "next", json!({"seconds": 30}))
            .await
            .problem(404, "live_session_not_found")
            .await;
        // A stream only for who runs or joined the session.
        let res = Sse::open(&app, &app.client, &who.access, &session).await;
        assert_problem(res, 404, "live_session_not_found").await;
    }
    // A learner with an unfinished attempt started the ordinary way does not join with it.
    let start = format!("/v1/assignments/{}/attempts", c.assignment);
    c.learners[0]
        .post(&start, &json!({}))
        .await
        .status(201)
        .await;
    join(&c.learners[0], code)
        .await
        .problem(409, "live_attempt_conflict")
        .await;
    // Streams per person are capped.
    let mut streams = Vec::new();
    for _ in 0..4 {
        streams.push(Sse::connect(&app, &c.teacher.access, &session).await);
    }
    let res = Sse::open(&app, &app.client, &c.teacher.access, &session).await;
    assert_problem(res, 429, "too_many_streams").await;
    drop(streams);
}

/// `n` learners enrolled in the course behind the API's back (a password hash each would take
/// minutes), with access tokens signed by the test quizd's key.
async fn many_learners<'a>(app: &'a TestApp, course: &str, n: usize) -> Vec<Session<'a>> {
    let secret = quizd::auth::store::signing_secret(&app.pool).await.unwrap();
    let keys = quizd::auth::tokens::TokenKeys::new(&secret);
    let course: uuid::Uuid = course.parse().unwrap();
    let mut people = Vec::new();
    for i in 0..n {
        let id = uuid::Uuid::now_v7();
        sqlx::query("INSERT INTO users (id, email, display_name, email_verified_at) VALUES ($1, $2, $3, now())")
            .bind(id)
            .bind(format!("phone{i}@example.org"))
            .bind(format!("Phone {i}"))
            .execute(&app.pool)
            .await
            .unwrap();
        sqlx::query(
            "INSERT INTO enrollments (course_id, user_id, role) VALUES ($1, $2, 'learner')",
        )
        .bind(course)
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
        people.push(app.session(Person {
            id,
            email: format!("phone{i}@example.org"),
            access: keys.issue(id, quizd::auth::Role::Learner),
            refresh: String::new(),
        }));
    }
    people
}

#[tokio::test]
async fn three_hundred_phones_on_event_streams_answer_and_every_answer_is_counted_exactly() {
    const PHONES: usize = 300;
    // Room for a class: the server's pools are larger than a test's default.
    let app = TestApp::spawn_configured(|s| {
        let options = (*s.pool.connect_options()).clone();
        s.pool = quizd::db::pool_options(24).connect_lazy_with(options.clone());
        s.quick = quizd::db::quick::QuickPool::new(options, 24, Duration::from_secs(10));
    })
    .await;
    let c = class(&app, 0, json!({"feedback": "immediate"})).await;
    let phones = many_learners(&app, &c.course, PHONES).await;
    let session = create_session(&c, json!({"leaderboard": true})).await;
    let code = session["code"].as_str().unwrap().to_string();
    let mut staff = Sse::connect(&app, &c.teacher.access, &session).await;
    let joins: Vec<u16> = futures_util::stream::iter(&phones)
        .map(|p| {
            let code = &code;
            async move { join(p, code).await.response().status().as_u16() }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    assert!(joins.iter().all(|s| *s == 201), "{joins:?}");
    // In the phones' order: stream i is phone i's.
    let mut streams: Vec<Sse> = futures_util::stream::iter(&phones)
        .map(|p| {
            let (app, session) = (&app, &session);
            async move {
                let mut s = Sse::connect(app, &p.access, session).await;
                s.until("hello").await;
                s
            }
        })
        .buffered(32)
        .collect()
        .await;
    step(&c.teacher, &session, "next", json!({"seconds": 120}))
        .await
        .status(200)
        .await;
    let (texts, _) = question_texts(0);
    let mut keys: Vec<String> = texts.values().cloned().collect();
    keys.sort();
    // Each phone answers from the question its stream brought (its own ids), option i mod 4.
    let mut expected: HashMap<String, i64> = HashMap::new();
    let mut answers = Vec::new();
    for (i, s) in streams.iter_mut().enumerate() {
        let q = s.until("question").await;
        let key = keys[i % keys.len()].clone();
        *expected.entry(key.clone()).or_default() += 1;
        let option = option_id(&q, &texts, &key);
        answers.push((i, q["question"]["id"].as_str().unwrap().to_string(), option));
    }
    let statuses: Vec<u16> = futures_util::stream::iter(answers)
        .map(|(i, qid, option)| {
            let (session, phone) = (&session, &phones[i]);
            async move {
                live_answer(phone, session, &qid, &option)
                    .await
                    .response()
                    .status()
                    .as_u16()
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    loop {
        let t = staff.until("tally").await;
        if t["answers"] == PHONES as i64 {
            assert_eq!(t["joined"], PHONES as i64);
            break;
        }
    }
    step(&c.teacher, &session, "close", json!({}))
        .await
        .status(200)
        .await;
    let d = staff.until("closed").await;
    assert_eq!(d["total"], PHONES as i64);
    for o in d["options"].as_array().unwrap() {
        assert_eq!(o["answers"], expected[o["key"].as_str().unwrap()], "{o}");
    }
    let leaders = d["leaders"].as_array().unwrap();
    assert_eq!(leaders.len(), 10);
    assert_eq!(leaders[0]["points"], 1.0);
    let mut totals = 0;
    for s in &mut streams {
        let closed = s.until("closed").await;
        assert_eq!(closed["total"], PHONES as i64);
        let sum: i64 = closed["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["answers"].as_i64().unwrap())
            .sum();
        assert_eq!(sum, PHONES as i64);
        assert!(closed.get("leaders").is_none());
        totals += 1;
    }
    assert_eq!(totals, PHONES);
    let recorded: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM responses r JOIN live_participants p ON p.attempt_id = r.attempt_id
          WHERE p.session_id = $1 AND r.question_key = 'replica-contents'",
    )
    .bind(
        session["id"]
            .as_str()
            .unwrap()
            .parse::<uuid::Uuid>()
            .unwrap(),
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(recorded, PHONES as i64);
}

#[tokio::test]
async fn under_deferred_feedback_a_closed_question_shows_the_spread_but_not_the_key() {
    let app = TestApp::spawn().await;
    let c = class(&app, 1, json!({"feedback": "immediate"})).await;
    let learner = &c.learners[0];
    let session = create_session(&c, json!({})).await;
    join(learner, session["code"].as_str().unwrap())
        .await
        .status(201)
        .await;
    let mut phone = Sse::connect(&app, &learner.access, &session).await;
    phone.until("hello").await;
    // The policy changes after the learner's attempt was laid out (and cached): the close
    // follows the policy as it is now.
    let path = format!("/v1/assignments/{}", c.assignment);
    c.teacher
        .patch(&path, &json!({"feedback": "never"}))
        .await
        .status(200)
        .await;
    step(&c.teacher, &session, "next", json!({"seconds": 60}))
        .await
        .status(200)
        .await;
    let q = phone.until("question").await;
    let (texts, correct) = question_texts(0);
    let option = option_id(&q, &texts, &correct);
    let qid = q["question"]["id"].as_str().unwrap();
    let reply = live_answer(learner, &session, qid, &option)
        .await
        .status(200)
        .await;
    assert!(reply["result"].is_null());
    step(&c.teacher, &session, "close", json!({}))
        .await
        .status(200)
        .await;
    let closed = phone.until("closed").await;
    assert_eq!(closed["total"], 1);
    assert_eq!(closed["answered"], true);
    assert!(closed["result"].is_null(), "no key under `never`: {closed}");
    assert!(!closed.to_string().contains("explanation"));
}

#[tokio::test]
async fn a_stream_on_another_instance_follows_the_session_through_notify() {
    let a = TestApp::spawn().await;
    let b = a.another_instance().await;
    let c = class(&a, 1, json!({"feedback": "immediate"})).await;
    let learner = &c.learners[0];
    let session = create_session(&c, json!({})).await;
    // The projector's stream on instance B; everything else happens on A.
    let mut staff = Sse::connect(&b, &c.teacher.access, &session).await;
    staff.until("hello").await;
    // B's listener is up once a notice reaches it: wait for the join's tally.
    join(learner, session["code"].as_str().unwrap())
        .await
        .status(201)
        .await;
    loop {
        if staff.until("tally").await["joined"] == 1 {
            break;
        }
    }
    let mut phone = Sse::connect(&a, &learner.access, &session).await;
    phone.until("hello").await;
    step(&c.teacher, &session, "next", json!({"seconds": 60}))
        .await
        .status(200)
        .await;
    assert_eq!(staff.until("question").await["index"], 0);
    let q = phone.until("question").await;
    let option = q["question"]["options"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let qid = q["question"]["id"].as_str().unwrap().to_string();
    live_answer(learner, &session, &qid, &option)
        .await
        .status(200)
        .await;
    loop {
        if staff.until("tally").await["answers"] == 1 {
            break;
        }
    }
    step(&c.teacher, &session, "close", json!({}))
        .await
        .status(200)
        .await;
    assert_eq!(staff.until("closed").await["total"], 1);
    step(&c.teacher, &session, "end", json!({}))
        .await
        .status(200)
        .await;
    staff.until("ended").await;
    assert!(staff.ends().await);
}

// Issue #32: a live attempt shows a learner only what the session has opened, and the key only
// once the session reveals it (closes the question, or ends), whatever its feedback timing;
// the session, not the learner, ends the attempt; its staff are decided at every request.

/// One question of `data-parallelism` as one learner's live attempt knows it, and all that
/// would tell the learner about it before its time.
struct Secret {
    /// Its id in the attempt, and its options' (derived from the attempt's seed, as quizd does).
    id: String,
    option_ids: Vec<String>,
    correct_ids: Vec<String>,
    /// Its prompt in every locale.
    prompts: Vec<String>,
    /// Its explanation and feedback in every locale, and its option keys (quoted).
    key: Vec<String>,
}

/// The quiz's questions, in the content's order (the order a session opens them in), as the
/// attempt `attempt` knows them.
async fn secrets(app: &TestApp, attempt: &str) -> Vec<Secret> {
    let seed: Vec<u8> = sqlx::query_scalar("SELECT seed FROM attempts WHERE id = $1")
        .bind(attempt.parse::<uuid::Uuid>().unwrap())
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let keys = quizd::attempts::shuffle::AttemptKeys { seed: &seed };
    let quizzes = quizd::content::load_dir(&content_dir()).unwrap();
    let quiz = quizzes
        .iter()
        .find(|q| q.slug == "data-parallelism")
        .unwrap();
    quiz.questions
        .iter()
        .map(|q| {
            let option_id = |o: &quizd::content::Choice| keys.option_id(&q.key, &o.key).to_string();
            let mut key: Vec<String> = q.explanation.values().cloned().collect();
            key.extend(q.wrong_feedback.iter().flat_map(|f| f.values().cloned()));
            for o in &q.options {
                key.extend(o.feedback.iter().flat_map(|f| f.values().cloned()));
                key.push(format!("\"{}\"", o.key));
            }
            Secret {
                id: keys.question_id(&q.key).to_string(),
                option_ids: q.options.iter().map(option_id).collect(),
                correct_ids: q
                    .options
                    .iter()
                    .filter(|o| o.correct)
                    .map(option_id)
                    .collect(),
                prompts: q.prompt.values().cloned().collect(),
                key,
            }
        })
        .collect()
}

/// Whether `v` (anywhere in it) judges question `s`: a `result` on it, or its correct options
/// listed as `correct_options`.
fn judges(v: &Value, s: &Secret) -> bool {
    match v {
        Value::Object(o) => {
            let about = ["id", "question_id"]
                .iter()
                .any(|f| o.get(*f).and_then(Value::as_str) == Some(s.id.as_str()));
            let result = o.get("result").is_some_and(|r| !r.is_null());
            let listed = o
                .get("correct_options")
                .and_then(Value::as_array)
                .is_some_and(|ids| {
                    ids.iter()
                        .any(|id| s.correct_ids.iter().any(|c| id == c.as_str()))
                });
            (about && result) || listed || o.values().any(|x| judges(x, s))
        }
        Value::Array(items) => items.iter().any(|x| judges(x, s)),
        _ => false,
    }
}

/// Fails if `body`, something a learner reads, shows anything of a question the session has
/// not opened (the first `opened` of the quiz's are: its id, its options' ids, its prompt), or
/// the key of one it has not revealed (the first `revealed`: a result on it, its correct
/// options marked, its explanation or feedback, an option key).
fn assert_hides(body: &str, secrets: &[Secret], opened: usize, revealed: usize, context: &str) {
    let json: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    for (i, s) in secrets.iter().enumerate() {
        if i >= opened {
            let shown = std::iter::once(&s.id)
                .chain(&s.option_ids)
                .chain(&s.prompts)
                .find(|x| body.contains(x.as_str()));
            assert!(
                shown.is_none(),
                "{context}: question {i}, not opened, shows {shown:?}: {body}"
            );
        }
        if i >= revealed {
            let key = s.key.iter().find(|k| body.contains(k.as_str()));
            assert!(
                key.is_none(),
                "{context}: question {i}, not revealed, shows {key:?}: {body}"
            );
            assert!(
                !judges(&json, s),
                "{context}: question {i}, not revealed, is judged: {body}"
            );
        }
    }
    if revealed == 0 {
        for field in ["correct_options", "\"correct\"", "explanation"] {
            assert!(
                !body.contains(field),
                "{context}: nothing is revealed, yet {field}: {body}"
            );
        }
    }
}

/// The body of a reply, as text.
async fn text(reply: Reply) -> String {
    reply.response().text().await.unwrap()
}

/// A class of one under `policy`, a session, and the learner joined: (class, session, the
/// learner's attempt id).
async fn joined_class(app: &TestApp, policy: Value) -> (Class<'_>, Value, String) {
    let c = class(app, 1, policy).await;
    let session = create_session(&c, json!({})).await;
    let joined = join(&c.learners[0], session["code"].as_str().unwrap())
        .await
        .status(201)
        .await;
    let attempt = joined["attempt_id"].as_str().unwrap().to_string();
    (c, session, attempt)
}

/// The learner's answer choosing the option of `option_id` through the session.
async fn answer_with(who: &Session<'_>, session: &Value, s: &Secret, option_id: &str) -> Reply {
    live_answer(who, session, &s.id, option_id).await
}

#[tokio::test]
async fn a_learner_in_a_live_session_reads_no_question_before_the_session_opens_it() {
    let app = TestApp::spawn().await;
    let (c, session, attempt) = joined_class(&app, json!({"feedback": "immediate"})).await;
    let learner = &c.learners[0];
    let secrets = secrets(&app, &attempt).await;
    let path = format!("/v1/attempts/{attempt}");
    let before = text(learner.get(&path).await).await;
    assert_hides(&before, &secrets, 0, 0, "before any question opens");
    let view: Value = serde_json::from_str(&before).unwrap();
    assert_eq!(view["questions"], json!([]), "{view}");
    step(&c.teacher, &session, "next", json!({"seconds": 60}))
        .await
        .status(200)
        .await;
    let open = text(learner.get(&path).await).await;
    assert_hides(&open, &secrets, 1, 0, "the first question open");
    let view: Value = serde_json::from_str(&open).unwrap();
    assert_eq!(view["questions"].as_array().unwrap().len(), 1, "{view}");
    assert_eq!(view["questions"][0]["id"], secrets[0].id.as_str());
}

#[tokio::test]
async fn under_immediate_feedback_a_live_answer_shows_no_key_until_the_session_reveals_it() {
    let app = TestApp::spawn().await;
    let (c, session, attempt) = joined_class(&app, json!({"feedback": "immediate"})).await;
    let learner = &c.learners[0];
    let secrets = secrets(&app, &attempt).await;
    step(&c.teacher, &session, "next", json!({"seconds": 60}))
        .await
        .status(200)
        .await;
    let reply = answer_with(learner, &session, &secrets[0], &secrets[0].correct_ids[0]).await;
    assert_hides(&text(reply).await, &secrets, 1, 0, "the answer's reply");
    let path = format!("/v1/attempts/{attempt}");
    let open = text(learner.get(&path).await).await;
    assert_hides(&open, &secrets, 1, 0, "answered, the question still open");
    // The session reveals it by closing it: now the result shows.
    step(&c.teacher, &session, "close", json!({}))
        .await
        .status(200)
        .await;
    let closed = learner.get(&path).await.status(200).await;
    assert_eq!(
        closed["questions"][0]["result"]["correct"], true,
        "{closed}"
    );
    assert_hides(&closed.to_string(), &secrets, 1, 1, "the question closed");
}

#[tokio::test]
async fn a_learner_cannot_finish_a_live_attempt_while_the_session_runs() {
    let app = TestApp::spawn().await;
    let (c, session, attempt) = joined_class(&app, json!({"feedback": "immediate"})).await;
    let learner = &c.learners[0];
    let secrets = secrets(&app, &attempt).await;
    let finish = format!("/v1/attempts/{attempt}/finish");
    let refused = learner
        .post(&finish, &json!({}))
        .await
        .problem(409, "live_session_running")
        .await;
    assert_hides(&refused.to_string(), &secrets, 0, 0, "finish in the lobby");
    step(&c.teacher, &session, "next", json!({"seconds": 60}))
        .await
        .status(200)
        .await;
    learner
        .post(&finish, &json!({}))
        .await
        .problem(409, "live_session_running")
        .await;
    let view = learner
        .get(&format!("/v1/attempts/{attempt}"))
        .await
        .status(200)
        .await;
    assert_eq!(view["state"], "in_progress");
    // The session ends it; finishing then returns it as it is, with only what was shown.
    step(&c.teacher, &session, "end", json!({}))
        .await
        .status(200)
        .await;
    let done = text(learner.post(&finish, &json!({})).await).await;
    assert_hides(&done, &secrets, 1, 1, "finished by the session's end");
    let done: Value = serde_json::from_str(&done).unwrap();
    assert_eq!(done["state"], "finished");
    assert_eq!(done["questions"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_live_answer_cannot_be_cleared_and_answered_again() {
    let app = TestApp::spawn().await;
    let (c, session, attempt) = joined_class(&app, json!({"feedback": "on_finish"})).await;
    let learner = &c.learners[0];
    let secrets = secrets(&app, &attempt).await;
    step(&c.teacher, &session, "next", json!({"seconds": 60}))
        .await
        .status(200)
        .await;
    let q = &secrets[0];
    let wrong = q
        .option_ids
        .iter()
        .find(|o| !q.correct_ids.contains(o))
        .unwrap();
    answer_with(learner, &session, q, wrong)
        .await
        .status(200)
        .await;
    learner
        .delete(&format!("/v1/attempts/{attempt}/responses/{}", q.id))
        .await
        .problem(409, "live_session_running")
        .await;
    answer_with(learner, &session, q, &q.correct_ids[0])
        .await
        .problem(409, "answer_final")
        .await;
    let answers = count(
        &app,
        "SELECT count(*) FROM responses WHERE attempt_id = $1 AND NOT correct",
        &attempt,
    )
    .await;
    assert_eq!(answers, 1, "the first answer stands");
}

#[tokio::test]
async fn an_instructor_removed_from_the_course_no_longer_runs_the_session_they_started() {
    let app = TestApp::spawn().await;
    let c = class(&app, 1, json!({"feedback": "immediate"})).await;
    let assistant = app.person("assistant@example.org", "learner").await;
    let enrollments = format!("/v1/courses/{}/enrollments", c.course);
    let body = json!({"user_id": assistant.id, "role": "instructor"});
    c.teacher.post(&enrollments, &body).await.status(201).await;
    let path = format!("/v1/assignments/{}/live", c.assignment);
    let session = assistant.post(&path, &json!({})).await.status(201).await;
    let sid = session["id"].as_str().unwrap();
    join(&c.learners[0], session["code"].as_str().unwrap())
        .await
        .status(201)
        .await;
    step(&assistant, &session, "next", json!({"seconds": 60}))
        .await
        .status(200)
        .await;
    step(&assistant, &session, "close", json!({}))
        .await
        .status(200)
        .await;
    let distribution = format!("/v1/live/sessions/{sid}/distribution");
    assistant.get(&distribution).await.status(200).await;
    let mut screen = Sse::connect(&app, &assistant.access, &session).await;
    screen.until("closed").await;
    // Removed from the course: the session they started is no longer theirs to run or read.
    c.teacher
        .delete(&format!("{enrollments}/{}", assistant.id))
        .await
        .status(204)
        .await;
    // The screen they opened before shows no further question, nor its key: it ends.
    step(&c.teacher, &session, "next", json!({"seconds": 60}))
        .await
        .status(200)
        .await;
    step(&c.teacher, &session, "close", json!({}))
        .await
        .status(200)
        .await;
    let rest = screen.rest().await;
    assert!(
        !rest.contains("event: question") && !rest.contains("event: closed"),
        "{rest}"
    );
    assistant
        .get(&distribution)
        .await
        .problem(404, "live_session_not_found")
        .await;
    assistant
        .get(&format!("/v1/live/sessions/{sid}"))
        .await
        .problem(404, "live_session_not_found")
        .await;
    for what in ["next", "end"] {
        step(&assistant, &session, what, json!({"seconds": 60}))
            .await
            .problem(404, "live_session_not_found")
            .await;
    }
    let res = Sse::open(&app, &app.client, &assistant.access, &session).await;
    assert_problem(res, 404, "live_session_not_found").await;
    // The course's instructors still run it.
    c.teacher.get(&distribution).await.status(200).await;
    step(&c.teacher, &session, "end", json!({}))
        .await
        .status(200)
        .await;
}

/// Everything the learner reads of their attempt (its view, its finish, their list of
/// attempts), checked against what the session has opened and revealed: the view, and whether
/// the finish was taken.
async fn look(
    learner: &Session<'_>,
    attempt: &str,
    s: &[Secret],
    opened: usize,
    revealed: usize,
    context: &str,
) -> (Value, bool) {
    let path = format!("/v1/attempts/{attempt}");
    let view = text(learner.get(&path).await).await;
    assert_hides(
        &view,
        s,
        opened,
        revealed,
        &format!("{context}: the attempt"),
    );
    let finish = learner.post(&format!("{path}/finish"), &json!({})).await;
    let finished = finish.status_code() == 200;
    let finish = text(finish).await;
    assert_hides(&finish, s, opened, revealed, &format!("{context}: finish"));
    let mine = text(learner.get("/v1/me/attempts").await).await;
    assert_hides(
        &mine,
        s,
        opened,
        revealed,
        &format!("{context}: my attempts"),
    );
    (serde_json::from_str(&view).unwrap(), finished)
}

#[tokio::test]
async fn a_whole_live_session_shows_each_learner_nothing_of_a_question_before_the_session_does() {
    let app = TestApp::spawn().await;
    let policy =
        json!({"feedback": "immediate", "shuffle_questions": true, "shuffle_options": true});
    let (c, session, attempt) = joined_class(&app, policy).await;
    let learner = &c.learners[0];
    let s = secrets(&app, &attempt).await;
    let mut phone = Sse::connect(&app, &learner.access, &session).await;
    let hello = phone.until("hello").await;
    let reads = |opened, revealed, context| look(learner, &attempt, &s, opened, revealed, context);
    let event = |e: &Value, opened, revealed, context: &str| {
        assert_hides(&e.to_string(), &s, opened, revealed, context);
    };
    event(&hello, 0, 0, "hello");
    let (view, finished) = reads(0, 0, "joined").await;
    assert!(!finished, "the session runs: no finish");
    assert_eq!(view["questions"], json!([]));

    let wrong = |q: &Secret| {
        q.option_ids
            .iter()
            .find(|o| !q.correct_ids.contains(o))
            .unwrap()
            .clone()
    };
    // Two questions, one answered right and one wrong, each revealed by its close.
    for (i, right) in [(0, true), (1, false)] {
        step(&c.teacher, &session, "next", json!({"seconds": 60}))
            .await
            .status(200)
            .await;
        event(&phone.until("question").await, i + 1, i, "question event");
        reads(i + 1, i, "open").await;
        let option = if right {
            s[i].correct_ids[0].clone()
        } else {
            wrong(&s[i])
        };
        let reply = text(answer_with(learner, &session, &s[i], &option).await).await;
        assert_hides(&reply, &s, i + 1, i, "the answer's reply");
        reads(i + 1, i, "answered, before the reveal").await;
        // A stream opened now starts from where the session stands.
        let mut late = Sse::connect(&app, &learner.access, &session).await;
        event(
            &late.until("hello").await,
            i + 1,
            i,
            "a late stream's hello",
        );
        event(
            &late.until("question").await,
            i + 1,
            i,
            "a late stream's question",
        );
        drop(late);
        step(&c.teacher, &session, "close", json!({}))
            .await
            .status(200)
            .await;
        let closed = phone.until("closed").await;
        event(&closed, i + 1, i + 1, "closed event");
        assert_eq!(closed["result"]["correct"], right, "{closed}");
        let (view, finished) = reads(i + 1, i + 1, "revealed").await;
        assert!(!finished);
        let shown = view["questions"].as_array().unwrap();
        assert_eq!(shown.len(), i + 1);
        let this = shown.iter().find(|q| q["id"] == s[i].id.as_str()).unwrap();
        assert_eq!(this["result"]["correct"], right, "{this}");
    }
    // The third opens and the session ends while it is open: it is revealed with the end; the
    // five never opened stay unseen.
    step(&c.teacher, &session, "next", json!({"seconds": 60}))
        .await
        .status(200)
        .await;
    event(&phone.until("question").await, 3, 2, "question event");
    reads(3, 2, "the third open").await;
    step(&c.teacher, &session, "end", json!({}))
        .await
        .status(200)
        .await;
    event(&phone.until("closed").await, 3, 3, "closed by the end");
    event(&phone.until("ended").await, 3, 3, "ended");
    let (view, finished) = reads(3, 3, "ended").await;
    assert!(finished, "a finished attempt's finish returns it");
    assert_eq!(view["state"], "finished");
    assert_eq!(view["questions"].as_array().unwrap().len(), 3);
}
