//! Question banks: an attempt serves the questions drawn for it at start, and nothing else of
//! its quiz; analytics count each question over the attempts that saw it; the importer refuses
//! slots that cannot be filled.

use std::collections::HashSet;

use quizd::attempts::shuffle::AttemptKeys;
use quizd::content::{QuizSource, SourceFile, compile};
use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::courses::assigned;
use crate::support::session::{Reply, Session};

/// A private exam: one fixed question (1 point), then 2 drawn from bank `pool` (6 true/false
/// questions of 2 points each, `p1`…`p6`).
fn bank_quiz() -> String {
    let mut s = String::from(
        "slug = \"banked\"\ntitle = \"Banked\"\n\n\
         [[questions]]\nkey = \"fixed\"\nkind = \"true_false\"\nprompt = \"Fixed?\"\n\
         explanation = \"Yes.\"\nanswer = true\n\n\
         [[questions]]\nbank = \"pool\"\ndraw = 2\n\n[[banks]]\nkey = \"pool\"\n",
    );
    for i in 1..=6 {
        s += &format!(
            "\n[[banks.questions]]\nkey = \"p{i}\"\nkind = \"true_false\"\npoints = 2\n\
             prompt = \"Pool question {i}?\"\nexplanation = \"Because {i}.\"\nanswer = true\n"
        );
    }
    s
}

struct Exam<'a> {
    teacher: Session<'a>,
    learner: Session<'a>,
    assignment: String,
}

/// The teacher's bank exam, assigned in their course to an enrolled learner under `policy`.
async fn exam(app: &TestApp, policy: Value) -> Exam<'_> {
    let teacher = app.person("teacher@example.org", "instructor").await;
    teacher
        .send_quiz(None, &bank_quiz())
        .await
        .status(201)
        .await;
    let (learner, assignment) = assigned(&teacher, "banked", policy).await;
    Exam {
        teacher,
        learner,
        assignment,
    }
}

async fn start(who: &Session<'_>, assignment: &str) -> Value {
    let path = format!("/v1/assignments/{assignment}/attempts");
    let res = who.post(&path, &json!({})).await.response();
    let status = res.status().as_u16();
    assert!(status == 201 || status == 200, "start: {status}");
    res.json().await.unwrap()
}

async fn finish(who: &Session<'_>, attempt: &Value) -> Value {
    let path = format!("/v1/attempts/{}/finish", attempt["id"].as_str().unwrap());
    who.post(&path, &json!({})).await.status(200).await
}

/// Answers a served question with its first option ("True": right, in this quiz).
async fn answer_true(who: &Session<'_>, attempt: &Value, q: &Value) -> Reply {
    let path = format!(
        "/v1/attempts/{}/responses/{}",
        attempt["id"].as_str().unwrap(),
        q["id"].as_str().unwrap()
    );
    who.put(&path, &json!({"selected": [q["options"][0]["id"]]}))
        .await
}

/// The question keys an attempt serves, as stored.
async fn question_set(app: &TestApp, attempt: &Value) -> Vec<String> {
    let id: uuid::Uuid = attempt["id"].as_str().unwrap().parse().unwrap();
    sqlx::query_scalar("SELECT question_set FROM attempts WHERE id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn seed(app: &TestApp, attempt: &Value) -> Vec<u8> {
    let id: uuid::Uuid = attempt["id"].as_str().unwrap().parse().unwrap();
    sqlx::query_scalar("SELECT seed FROM attempts WHERE id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

fn ids(attempt: &Value) -> Vec<String> {
    attempt["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn an_attempt_serves_the_fixed_question_and_two_drawn_ones_and_resumes_with_the_same() {
    let app = TestApp::spawn().await;
    let e = exam(&app, json!({"feedback": "on_finish"})).await;
    let attempt = start(&e.learner, &e.assignment).await;
    assert_eq!(attempt["question_count"], 3);
    assert_eq!(attempt["questions"].as_array().unwrap().len(), 3);
    let set = question_set(&app, &attempt).await;
    assert_eq!(set.len(), 3);
    assert_eq!(set[0], "fixed");
    assert!(set[1..].iter().all(|k| k.starts_with('p')), "{set:?}");
    // The served ids are the HMACs of the drawn keys, in this attempt's seed.
    let s = seed(&app, &attempt).await;
    let keys = AttemptKeys { seed: &s };
    let expected: Vec<String> = set
        .iter()
        .map(|k| keys.question_id(k).to_string())
        .collect();
    assert_eq!(ids(&attempt), expected);
    // max_score: the fixed point and two questions of 2 points.
    let id: uuid::Uuid = attempt["id"].as_str().unwrap().parse().unwrap();
    let max: f64 = sqlx::query_scalar("SELECT max_score FROM attempts WHERE id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(max, 5.0);
    // Resuming shows the same questions, and so does a second start (the open attempt).
    let path = format!("/v1/attempts/{}", attempt["id"].as_str().unwrap());
    let resumed = e.learner.get(&path).await.status(200).await;
    assert_eq!(ids(&resumed), ids(&attempt));
    assert_eq!(ids(&start(&e.learner, &e.assignment).await), ids(&attempt));
    // The learner's view never names a key, a bank or its size.
    let text = resumed.to_string();
    for hidden in ["pool", "p1", "p2", "p3", "p4", "p5", "p6", "\"6\""] {
        assert!(!text.contains(hidden), "{hidden} in {text}");
    }
}

#[tokio::test]
async fn an_answer_to_a_question_the_attempt_did_not_draw_is_refused_as_unknown() {
    let app = TestApp::spawn().await;
    let e = exam(&app, json!({"feedback": "immediate"})).await;
    let attempt = start(&e.learner, &e.assignment).await;
    let set = question_set(&app, &attempt).await;
    let undrawn = (1..=6)
        .map(|i| format!("p{i}"))
        .find(|k| !set.contains(k))
        .unwrap();
    // Its id as this attempt would name it, had it been drawn (worked out from the secret seed).
    let s = seed(&app, &attempt).await;
    let keys = AttemptKeys { seed: &s };
    let qid = keys.question_id(&undrawn).to_string();
    let oid = keys.option_id(&undrawn, "true").to_string();
    let path = format!(
        "/v1/attempts/{}/responses/{qid}",
        attempt["id"].as_str().unwrap()
    );
    let refused = e
        .learner
        .put(&path, &json!({"selected": [oid]}))
        .await
        .problem(404, "question_not_found")
        .await;
    // Exactly as a made-up id is refused.
    let made_up = format!(
        "/v1/attempts/{}/responses/0123456789abcdef",
        attempt["id"].as_str().unwrap()
    );
    let unknown = e
        .learner
        .put(&made_up, &json!({"selected": [oid]}))
        .await
        .problem(404, "question_not_found")
        .await;
    assert_eq!(refused["detail"], unknown["detail"]);
    let answered: i64 = sqlx::query_scalar("SELECT count(*) FROM responses")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(answered, 0);
}

#[tokio::test]
async fn a_second_attempt_draws_the_questions_the_learner_has_not_seen() {
    let app = TestApp::spawn().await;
    let e = exam(&app, json!({"feedback": "on_finish"})).await;
    let mut seen: HashSet<String> = HashSet::new();
    // 6 in the bank, 2 per attempt: three attempts see all six, none twice.
    for _ in 0..3 {
        let attempt = start(&e.learner, &e.assignment).await;
        let drawn: Vec<String> = question_set(&app, &attempt).await[1..].to_vec();
        for k in &drawn {
            assert!(
                seen.insert(k.clone()),
                "{k} drawn again before the bank was used up"
            );
        }
        finish(&e.learner, &attempt).await;
    }
    assert_eq!(seen.len(), 6);
    // The fourth draws among all again.
    let fourth = start(&e.learner, &e.assignment).await;
    assert_eq!(question_set(&app, &fourth).await.len(), 3);
}

#[tokio::test]
async fn finishing_grades_only_the_drawn_questions_over_their_points() {
    let app = TestApp::spawn().await;
    let e = exam(&app, json!({"feedback": "on_finish"})).await;
    let attempt = start(&e.learner, &e.assignment).await;
    let questions = attempt["questions"].as_array().unwrap().clone();
    // Right on the fixed question and the first drawn one (1 + 2 points of 5).
    let fixed = &questions
        .iter()
        .find(|q| q["points"] == 1.0)
        .unwrap()
        .clone();
    let drawn = &questions
        .iter()
        .find(|q| q["points"] == 2.0)
        .unwrap()
        .clone();
    for q in [fixed, drawn] {
        answer_true(&e.learner, &attempt, q).await.status(200).await;
    }
    let done = finish(&e.learner, &attempt).await;
    assert_eq!(done["result"]["score"], 3.0);
    assert_eq!(done["result"]["max_score"], 5.0);
    assert_eq!(done["result"]["percentage"], 60.0);
    assert_eq!(done["questions"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn analytics_count_each_question_over_the_attempts_that_saw_it() {
    let app = TestApp::spawn().await;
    let e = exam(
        &app,
        json!({"feedback": "on_finish", "grading_method": "average"}),
    )
    .await;
    let mut saw = std::collections::HashMap::<String, usize>::new();
    let mut more = Vec::new();
    for i in 0..7 {
        more.push(app.person(&format!("more{i}@example.org"), "learner").await);
    }
    let learners: Vec<&Session> = std::iter::once(&e.learner).chain(&more).collect();
    // The other learners are enrolled through the course of the assignment.
    let course: uuid::Uuid =
        sqlx::query_scalar("SELECT course_id FROM assignments WHERE id = $1::uuid")
            .bind(&e.assignment)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    for l in &learners[1..] {
        e.teacher
            .post(
                &format!("/v1/courses/{course}/enrollments"),
                &json!({"email": l.email}),
            )
            .await
            .status(201)
            .await;
    }
    let mut k = 0usize;
    for (n, l) in learners.iter().enumerate() {
        for _ in 0..=n % 2 {
            let attempt = start(l, &e.assignment).await;
            for key in question_set(&app, &attempt).await {
                *saw.entry(key).or_default() += 1;
            }
            // Right or wrong (or unanswered) by a fixed pattern, so that scores vary.
            for (j, q) in attempt["questions"].as_array().unwrap().iter().enumerate() {
                let option = match (k * 7 + j * 3 + n) % 5 {
                    0 => continue,
                    1 | 2 => 1,
                    _ => 0,
                };
                let path = format!(
                    "/v1/attempts/{}/responses/{}",
                    attempt["id"].as_str().unwrap(),
                    q["id"].as_str().unwrap()
                );
                let body = json!({"selected": [q["options"][option]["id"]]});
                l.put(&path, &body).await.status(200).await;
            }
            k += 1;
            finish(l, &attempt).await;
        }
    }
    let report = e
        .teacher
        .get(&format!("/v1/assignments/{}/analytics", e.assignment))
        .await
        .status(200)
        .await;
    let v = &report["versions"][0];
    assert_eq!(v["counts"]["counted"], 12);
    for q in v["questions"].as_array().unwrap() {
        let key = q["key"].as_str().unwrap();
        assert_eq!(
            q["attempts"].as_u64().unwrap() as usize,
            saw.get(key).copied().unwrap_or(0),
            "{key}: {q}"
        );
    }
    assert_eq!(
        v["questions"][0]["attempts"], 12,
        "the fixed question: every attempt"
    );
    // A row per slot beside the questions: the fixed one over every attempt, the drawn one
    // over each (attempt, question) pair it served (tests/stats/verify.py checks the figures).
    let slots: Vec<(Value, Value, usize)> = (v["slots"].as_array().unwrap().iter())
        .map(|s| {
            (
                s["bank"].clone(),
                s["draw"].clone(),
                s["questions"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        slots,
        [(Value::Null, json!(1), 1), (json!("pool"), json!(2), 6)],
        "{}",
        v["slots"]
    );
    assert_eq!(
        (&v["slots"][0]["attempts"], &v["slots"][1]["attempts"]),
        (&json!(12), &json!(24))
    );
    // The test statistics are on each attempt's own maximum (5 points here).
    let mean = v["test"]["mean"].as_f64().unwrap();
    assert!((0.0..=100.0).contains(&mean), "{mean}");

    // For the independent check (tests/stats/verify.py reads banks.json beside analytics.json):
    // each attempt's served keys, points and maximum, straight from the database.
    let rows: Vec<(uuid::Uuid, String, f64, Vec<String>)> = sqlx::query_as(
        "SELECT id, locale, max_score, question_set FROM attempts
          WHERE assignment_id = $1::uuid ORDER BY id",
    )
    .bind(&e.assignment)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let mut attempts = Vec::new();
    for (id, locale, max_score, set) in rows {
        let points: Vec<(String, f64)> =
            sqlx::query_as("SELECT question_key, points FROM responses WHERE attempt_id = $1")
                .bind(id)
                .fetch_all(&app.pool)
                .await
                .unwrap();
        let points: serde_json::Map<String, Value> = set
            .iter()
            .map(|k| {
                let p = points.iter().find(|(q, _)| q == k).map_or(0.0, |(_, p)| *p);
                (k.clone(), json!(p))
            })
            .collect();
        attempts.push(json!({"locale": locale, "max_score": max_score, "points": points}));
    }
    let pool: Vec<String> = (1..=6).map(|i| format!("p{i}")).collect();
    let fixture = json!({
        "attempts": attempts,
        "max": {"fixed": 1.0, "p1": 2.0, "p2": 2.0, "p3": 2.0, "p4": 2.0, "p5": 2.0, "p6": 2.0},
        "slots": [{"questions": ["fixed"], "draw": 1}, {"questions": pool, "draw": 2}],
        "nominal_max": 5.0,
        "report": v,
    });
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("stats-check");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("banks.json"),
        serde_json::to_string_pretty(&fixture).unwrap(),
    )
    .unwrap();
}

fn refused(quiz: &str) -> String {
    let source = QuizSource {
        quiz: SourceFile {
            name: "content/banked/quiz.toml".into(),
            text: quiz.into(),
        },
        translations: vec![],
    };
    match compile(&source) {
        Ok(_) => panic!("accepted:\n{quiz}"),
        Err(errors) => errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

#[test]
fn a_slot_drawing_more_than_its_bank_holds_is_refused() {
    let all = refused(&bank_quiz().replace("draw = 2", "draw = 7"));
    assert!(
        all.contains("content/banked/quiz.toml: question 'slot #2 (bank 'pool')': draws 7 questions, but bank 'pool' holds 6"),
        "{all}"
    );
}

#[test]
fn a_slot_drawing_more_than_its_tag_filter_leaves_is_refused() {
    let quiz = bank_quiz()
        .replace("draw = 2", "draw = 2\ntag = \"hard\"")
        .replacen(
            "answer = true\n\n[[banks.questions]]\nkey = \"p2\"",
            "answer = true\ntags = [\"hard\"]\n\n[[banks.questions]]\nkey = \"p2\"",
            1,
        );
    let all = refused(&quiz);
    assert!(
        all.contains("draws 2 questions tagged 'hard', but bank 'pool' holds 1 so tagged"),
        "{all}"
    );
}

#[test]
fn a_bank_question_with_the_key_of_a_fixed_question_is_refused() {
    let all = refused(&bank_quiz().replace("key = \"p3\"", "key = \"fixed\""));
    assert!(
        all.contains("question 'fixed': is both a fixed question and a question of bank 'pool'"),
        "{all}"
    );
}

#[test]
fn a_slot_naming_an_unknown_bank_is_refused() {
    let all = refused(&bank_quiz().replace("bank = \"pool\"", "bank = \"pond\""));
    assert!(
        all.contains("slot #2 (bank 'pond')': unknown bank 'pond' (the quiz's banks: pool)"),
        "{all}"
    );
}

#[test]
fn a_slot_drawing_fewer_than_one_question_is_refused() {
    let all = refused(&bank_quiz().replace("draw = 2", "draw = 0"));
    assert!(
        all.contains("draw = 0: a slot draws at least 1 question"),
        "{all}"
    );
}

#[tokio::test]
async fn a_refused_bank_quiz_is_a_problem_naming_the_slot_and_nothing_is_stored() {
    let app = TestApp::spawn().await;
    let teacher = app.person("teacher@example.org", "instructor").await;
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM quiz_versions")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let res = teacher
        .send_quiz(None, &bank_quiz().replace("draw = 2", "draw = 9"))
        .await;
    let body = res.problem(422, "invalid_content").await;
    assert!(body.to_string().contains("draws 9 questions"), "{body}");
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM quiz_versions")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(before, after);
}

#[tokio::test]
async fn a_public_bank_quiz_lists_its_fixed_questions_only_and_practice_serves_a_draw() {
    let app = TestApp::spawn().await;
    let author = app.person("author@example.org", "instructor").await;
    let public = bank_quiz().replace(
        "title = \"Banked\"\n",
        "title = \"Banked\"\nvisibility = \"public\"\n\n[practice]\n",
    );
    author.send_quiz(None, &public).await.status(201).await;
    let learner = app.person("learner@example.org", "learner").await;
    let quiz = learner.get("/v1/quizzes/banked").await.status(200).await;
    let listed = quiz["questions"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{quiz}");
    assert_eq!(listed[0]["key"], "fixed");
    let text = quiz.to_string();
    for hidden in ["pool", "p1", "p2", "p3", "p4", "p5", "p6", "Pool question"] {
        assert!(!text.contains(hidden), "{hidden} in {text}");
    }
    let practice = quiz["practice_assignment_id"].as_str().unwrap();
    let attempt = start(&learner, practice).await;
    assert_eq!(attempt["question_count"], 3);
    assert_eq!(question_set(&app, &attempt).await.len(), 3);
}

/// The teacher writes version 2 of the quiz and regrades the assignment to it; the report.
async fn regrade_to(e: &Exam<'_>, toml: &str) -> Value {
    let _: Value = e.teacher.send_quiz(Some("banked"), toml).await.ok().await;
    let path = format!("/v1/assignments/{}/regrade", e.assignment);
    let body = json!({"to_version": 2, "dry_run": false});
    e.teacher.post(&path, &body).await.status(200).await
}

#[tokio::test]
async fn a_regrade_keeps_each_attempts_draw_and_grades_it_under_the_corrected_key() {
    let app = TestApp::spawn().await;
    let e = exam(&app, json!({"feedback": "on_finish"})).await;
    let attempt = start(&e.learner, &e.assignment).await;
    let drawn = question_set(&app, &attempt).await;
    for q in attempt["questions"].as_array().unwrap() {
        answer_true(&e.learner, &attempt, q).await.status(200).await;
    }
    let done = finish(&e.learner, &attempt).await;
    assert_eq!(done["result"]["score"], 5.0);
    // Version 2: the bank's answers were wrong (false), and the bank loses p6.
    let fixed = bank_quiz().replace("answer = true\n", "answer = false\n");
    let fixed = fixed.replacen("answer = false\n", "answer = true\n", 1);
    let fixed = fixed[..fixed.find("\n[[banks.questions]]\nkey = \"p6\"").unwrap()].to_string();
    let report = regrade_to(&e, &fixed).await;
    let change = &report["attempts"][0];
    // The fixed question stays right; each drawn one still in the bank is now wrong.
    let kept: Vec<&String> = drawn.iter().filter(|k| *k != "p6").collect();
    let max = 1.0 + 2.0 * (kept.len() as f64 - 1.0);
    assert_eq!(
        (change["to_points"].as_f64(), change["to_max"].as_f64()),
        (Some(1.0), Some(max))
    );
    // The attempt serves the questions it drew, less a removed one: nothing else of the bank.
    let after = question_set(&app, &attempt).await;
    assert_eq!(after.iter().collect::<Vec<_>>(), kept);
    let seen = e
        .learner
        .get(&format!("/v1/attempts/{}", attempt["id"].as_str().unwrap()))
        .await
        .status(200)
        .await;
    assert_eq!(seen["questions"].as_array().unwrap().len(), kept.len());
}

#[tokio::test]
async fn a_regrade_to_a_version_with_another_layout_keeps_each_attempts_draw_and_new_attempts_follow_the_new_one()
 {
    let app = TestApp::spawn().await;
    let e = exam(&app, json!({"feedback": "on_finish"})).await;
    let first = start(&e.learner, &e.assignment).await;
    for q in first["questions"].as_array().unwrap() {
        answer_true(&e.learner, &first, q).await.status(200).await;
    }
    finish(&e.learner, &first).await;
    let open = start(&e.learner, &e.assignment).await;
    let open_set = question_set(&app, &open).await;
    // Version 2 draws three questions from the bank instead of two.
    let wider = bank_quiz().replace("draw = 2", "draw = 3");
    let report = regrade_to(&e, &wider).await;
    assert_eq!(
        (&report["questions"], &report["attempts"]),
        (&json!([]), &json!([])),
        "the same questions and keys: no grade and no maximum changes"
    );
    // The attempts made keep what they drew: the one in progress resumes with its three
    // questions and finishes over their five points.
    assert_eq!(question_set(&app, &open).await, open_set);
    let done = finish(&e.learner, &open).await;
    assert_eq!(
        (
            done["question_count"].as_u64(),
            done["result"]["max_score"].as_f64()
        ),
        (Some(3), Some(5.0))
    );
    // A new attempt is laid out by version 2: the fixed question and three drawn.
    let next = start(&e.learner, &e.assignment).await;
    assert_eq!(
        (
            next["quiz_version"].as_i64(),
            next["question_count"].as_u64()
        ),
        (Some(2), Some(4))
    );
    assert_eq!(question_set(&app, &next).await.len(), 4);
}
