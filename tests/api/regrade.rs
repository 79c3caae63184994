//! Regrading over HTTP (`POST /v1/assignments/{id}/regrade`): a dry run, then the same change
//! applied; attempts in progress moved to the corrected version (also when their layout is
//! cached by another instance); overrides, removed and added questions, refusals; a regrade racing
//! learners' finishes and another regrade; the new grade reaching the LMS.

use reqwest::Method;
use serde_json::{Value, json};

use crate::grades::{Course, course, finish, history, start};
use crate::support::session::{Reply, Session};
use crate::support::{Person, TestApp};

/// The exam: questions `q1`..`q3` (prompts "Q1".."Q3"), options A, B, C, A right except where
/// `key2` names q2's right option; q3 worth `points3`; `drop3` leaves q3 out, `add4` adds q4.
fn exam(key2: &str, points3: u32, drop3: bool, add4: bool) -> String {
    let question = |key: &str, right: &str, points: u32| {
        let mut q = format!(
            "\n[[questions]]\nkey = \"{key}\"\nkind = \"single\"\npoints = {points}\n\
             prompt = \"{}\"\nexplanation = \"Because.\"\n",
            key.to_uppercase()
        );
        for o in ["a", "b", "c"] {
            q.push_str(&format!(
                "\n[[questions.options]]\nkey = \"{o}\"\ntext = \"{}\"\n",
                o.to_uppercase()
            ));
            if o == right {
                q.push_str("correct = true\n");
            } else {
                q.push_str("feedback = \"Not this one.\"\n");
            }
        }
        q
    };
    let mut toml = String::from("slug = \"exam\"\ntitle = \"Exam\"\n");
    toml.push_str(&question("q1", "a", 1));
    toml.push_str(&question("q2", key2, 1));
    if !drop3 {
        toml.push_str(&question("q3", "a", points3));
    }
    if add4 {
        toml.push_str(&question("q4", "a", 1));
    }
    toml
}

/// A course with these learners, the exam written by its teacher, and an assignment of it.
async fn exam_course<'a>(
    app: &'a TestApp,
    learners: &[&str],
    policy: Value,
) -> (Course<'a>, String) {
    let c = course(app, "teacher@example.org", learners).await;
    let toml = exam("a", 1, false, false);
    c.teacher.send_quiz(None, &toml).await.status(201).await;
    let path = format!("/v1/courses/{}/assignments", c.id);
    let body = json!({"quiz": "exam", "policy": policy});
    let a = c.teacher.post(&path, &body).await.status(201).await;
    (c, a["id"].as_str().unwrap().to_string())
}

/// The teacher writes the exam's next version.
async fn new_version(teacher: &Session<'_>, toml: &str) {
    let _: Value = teacher.send_quiz(Some("exam"), toml).await.ok().await;
}

/// Answers the question with this prompt by the option with this text.
async fn answer(who: &Session<'_>, attempt: &Value, prompt: &str, option: &str) {
    answer_request(who, attempt, prompt, option)
        .await
        .status(200)
        .await;
}

async fn answer_request(who: &Session<'_>, attempt: &Value, prompt: &str, option: &str) -> Reply {
    let q = attempt["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["prompt"] == prompt)
        .unwrap_or_else(|| panic!("no question {prompt} in {attempt}"));
    let o = q["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["text"] == option)
        .unwrap();
    let path = format!(
        "/v1/attempts/{}/responses/{}",
        attempt["id"].as_str().unwrap(),
        q["id"].as_str().unwrap()
    );
    who.put(&path, &json!({"selected": [o["id"]]})).await
}

/// An attempt answered with these options for Q1, Q2, Q3 (`None`: left unanswered), finished.
async fn take(who: &Session<'_>, assignment: &str, picks: [Option<&str>; 3]) -> Value {
    let attempt = start(who, assignment).await;
    for (prompt, pick) in ["Q1", "Q2", "Q3"].into_iter().zip(picks) {
        if let Some(option) = pick {
            answer(who, &attempt, prompt, option).await;
        }
    }
    finish(who, &attempt).await
}

/// `POST /v1/assignments/{assignment}/regrade`.
async fn regrade(who: &Session<'_>, assignment: &str, body: Value) -> Reply {
    who.post(&format!("/v1/assignments/{assignment}/regrade"), &body)
        .await
}

/// Applies the regrade to version 2; its report.
async fn apply(who: &Session<'_>, assignment: &str) -> Value {
    let body = json!({"to_version": 2, "dry_run": false});
    regrade(who, assignment, body).await.status(200).await
}

/// The attempt as `who` reads it.
async fn attempt(who: &Session<'_>, id: &str) -> Value {
    who.get(&format!("/v1/attempts/{id}"))
        .await
        .status(200)
        .await
}

fn score(attempt: &Value) -> (f64, f64) {
    (
        attempt["result"]["score"].as_f64().unwrap(),
        attempt["result"]["max_score"].as_f64().unwrap(),
    )
}

#[tokio::test]
async fn a_dry_run_shows_what_a_corrected_key_changes_and_applying_it_changes_exactly_that() {
    let app = TestApp::spawn().await;
    let learners = ["l1@example.org", "l2@example.org", "l3@example.org"];
    let (c, a) = exam_course(&app, &learners, json!({"feedback": "on_finish"})).await;
    let [l1, l2, l3] = [&c.learners[0], &c.learners[1], &c.learners[2]];
    let t1 = take(l1, &a, [Some("A"), Some("A"), Some("A")]).await;
    let t2 = take(l2, &a, [Some("A"), Some("B"), Some("C")]).await;
    let t3 = take(l3, &a, [Some("B"), Some("B"), None]).await;
    assert_eq!(
        [score(&t1), score(&t2), score(&t3)],
        [(3.0, 3.0), (1.0, 3.0), (0.0, 3.0)]
    );
    // Version 2: Q2's right answer is B, not A; Q3 is worth 2.
    new_version(&c.teacher, &exam("b", 2, false, false)).await;

    let dry = regrade(&c.teacher, &a, json!({"to_version": 2}))
        .await
        .status(200)
        .await;
    assert_eq!(dry["dry_run"], true);
    assert_eq!(
        (dry["from_version"].as_i64(), dry["to_version"].as_i64()),
        (Some(1), Some(2))
    );
    assert_eq!(
        dry["questions"],
        json!([
            {"question_key": "q2", "from_scoring": "graded", "to_scoring": "graded", "key_changed": true, "removed": false, "added": false, "from_points": 1.0, "to_points": 1.0},
            {"question_key": "q3", "from_scoring": "graded", "to_scoring": "graded", "key_changed": false, "removed": false, "added": false, "from_points": 1.0, "to_points": 2.0},
        ])
    );
    assert_eq!(dry["attempts_total"], 3);
    assert_eq!(dry["grades_changed"], 3);
    let by_attempt = |report: &Value, t: &Value| -> Value {
        report["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["attempt_id"] == t["id"])
            .cloned()
            .unwrap()
    };
    let c2 = by_attempt(&dry, &t2);
    assert_eq!(
        (
            &c2["from_points"],
            &c2["to_points"],
            &c2["from_max"],
            &c2["to_max"]
        ),
        (&json!(1.0), &json!(2.0), &json!(3.0), &json!(4.0))
    );
    assert_eq!(
        c2["responses"],
        json!([{"question_key": "q2", "from_points": 0.0, "to_points": 1.0, "correct": true}])
    );
    assert_eq!(by_attempt(&dry, &t1)["to_points"], 3.0);
    assert_eq!(by_attempt(&dry, &t3)["to_points"], 1.0);
    // A dry run changes nothing.
    let id2 = t2["id"].as_str().unwrap();
    assert_eq!(score(&attempt(l2, id2).await), (1.0, 3.0));
    let h = history(l2, id2).await.status(200).await;
    assert_eq!(h["events"].as_array().unwrap().len(), 1);

    let body = json!({"to_version": 2, "dry_run": false, "reason": "Question 2's key was wrong."});
    let applied = regrade(&c.teacher, &a, body.clone())
        .await
        .status(200)
        .await;
    assert_eq!(applied["dry_run"], false);
    let mut expected = dry.clone();
    expected["dry_run"] = json!(false);
    assert_eq!(
        applied, expected,
        "applying changes what the dry run showed"
    );

    // The learner sees the corrected key, the new score and a note.
    let seen = attempt(l2, id2).await;
    assert_eq!(score(&seen), (2.0, 4.0));
    assert_eq!(seen["quiz_version"], 2);
    assert!(seen["regraded_at"].is_string());
    let q2 = seen["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["prompt"] == "Q2")
        .unwrap();
    assert_eq!(q2["result"]["correct"], true, "{q2}");
    // The history says who, from, to and why.
    let h = history(l2, id2).await.status(200).await;
    let events = h["events"].as_array().unwrap();
    assert_eq!(events.len(), 2);
    let e = &events[1];
    assert_eq!(
        (
            &e["kind"],
            &e["from_points"],
            &e["to_points"],
            &e["max_points"]
        ),
        (&json!("regrade"), &json!(1.0), &json!(2.0), &json!(4.0))
    );
    assert_eq!(e["reason"], "Question 2's key was wrong.");
    assert_eq!(e["actor_id"], json!(c.teacher.id));
    assert_eq!(h["grade"]["points"], 2.0);
    // The gradebook and the item analysis read the new grades: 75 %, 50 %, 25 %.
    let gradebook = format!("/v1/courses/{}/gradebook", c.id);
    let book = c.teacher.get(&gradebook).await.status(200).await;
    let mut points: Vec<f64> = book["learners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["cells"][0]["points"].as_f64().unwrap())
        .collect();
    points.sort_by(f64::total_cmp);
    assert_eq!(points, vec![1.0, 2.0, 3.0]);
    let analytics = format!("/v1/assignments/{a}/analytics");
    let report = c.teacher.get(&analytics).await.status(200).await;
    let versions = report["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "{report}");
    assert_eq!(versions[0]["quiz_version"], 2);
    assert!((versions[0]["test"]["mean"].as_f64().unwrap() - 50.0).abs() < 1e-9);

    // Applying it again changes nothing: the version is the assigned one now.
    regrade(&c.teacher, &a, body)
        .await
        .problem(422, "regrade_same_version")
        .await;
    assert_eq!(
        history(l2, id2).await.status(200).await["events"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // The regrade is in the audit log.
    let admin = app.person("root@example.org", "admin").await;
    let audit = admin
        .get("/v1/audit?action=assignment_regraded")
        .await
        .status(200)
        .await;
    let items = audit["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["detail"]["grades_changed"], 3);
}

#[tokio::test]
async fn an_attempt_in_progress_moves_to_the_new_version_and_finishes_under_the_corrected_key() {
    let app = TestApp::spawn().await;
    let (c, a) = exam_course(&app, &["l1@example.org"], json!({"feedback": "on_finish"})).await;
    let l1 = &c.learners[0];
    let open = start(l1, &a).await;
    answer(l1, &open, "Q2", "B").await;
    new_version(&c.teacher, &exam("b", 1, false, false)).await;
    let applied = apply(&c.teacher, &a).await;
    let moved = &applied["attempts"][0];
    assert_eq!(
        (
            &moved["finished"],
            &moved["to_points"],
            &moved["grade_changed"]
        ),
        (&json!(false), &Value::Null, &json!(false))
    );
    // The questions keep their ids in the attempt; the rest is answered under version 2.
    let resumed = attempt(l1, open["id"].as_str().unwrap()).await;
    assert_eq!(resumed["quiz_version"], 2);
    let ids = |v: &Value| -> Vec<Value> {
        v["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["id"].clone())
            .collect()
    };
    assert_eq!(ids(&resumed), ids(&open));
    answer(l1, &open, "Q1", "A").await;
    let done = finish(l1, &open).await;
    assert_eq!(score(&done), (2.0, 3.0));
}

#[tokio::test]
async fn an_answer_through_another_instance_that_cached_the_old_layout_is_graded_under_the_new_key()
{
    let app = TestApp::spawn().await;
    let other = app.another_instance().await;
    let (c, a) = exam_course(&app, &["l1@example.org"], json!({"feedback": "on_finish"})).await;
    let l1 = &c.learners[0];
    // The same learner, through the other instance.
    let l1_there = other.session(Person::clone(l1));
    let open = start(l1, &a).await;
    let id = open["id"].as_str().unwrap();
    // The other instance lays the attempt out (version 1) and keeps it cached.
    assert_eq!(attempt(&l1_there, id).await["quiz_version"], 1);
    new_version(&c.teacher, &exam("b", 1, false, false)).await;
    apply(&c.teacher, &a).await;
    // Answered through the instance that still holds the old layout: B is right now.
    answer(&l1_there, &open, "Q2", "B").await;
    let resumed = attempt(&l1_there, id).await;
    assert_eq!(resumed["quiz_version"], 2);
    let done = finish(&l1_there, &open).await;
    assert_eq!(score(&done), (1.0, 3.0));
}

#[tokio::test]
async fn a_removed_question_no_longer_counts_and_an_override_stands_capped_at_the_new_maximum() {
    let app = TestApp::spawn().await;
    let learners = ["l1@example.org", "l2@example.org"];
    let (c, a) = exam_course(&app, &learners, json!({"feedback": "on_finish"})).await;
    let t1 = take(&c.learners[0], &a, [Some("A"), Some("B"), Some("A")]).await;
    let t2 = take(&c.learners[1], &a, [None, None, None]).await;
    let id2 = t2["id"].as_str().unwrap();
    let body = json!({"points": 2.5, "reason": "Answered on paper."});
    let path = format!("/v1/attempts/{id2}/grade");
    c.teacher.put(&path, &body).await.status(200).await;
    new_version(&c.teacher, &exam("a", 1, true, false)).await;
    let applied = apply(&c.teacher, &a).await;
    assert_eq!(
        applied["questions"],
        json!([{"question_key": "q3", "from_scoring": "graded", "to_scoring": "graded", "key_changed": false, "removed": true, "added": false, "from_points": 1.0, "to_points": null}])
    );
    let seen = attempt(&c.learners[0], t1["id"].as_str().unwrap()).await;
    assert_eq!(score(&seen), (1.0, 2.0));
    assert_eq!(seen["questions"].as_array().unwrap().len(), 2);
    // The learner's own view of the attempt shows the grade that counts, and says it was set
    // by hand.
    let result = &attempt(&c.learners[1], id2).await["result"];
    assert_eq!(
        (&result["score"], &result["points"], &result["overridden"]),
        (&json!(0.0), &json!(2.0), &json!(true))
    );
    assert_eq!(result["percentage"], 100.0);
    let h = history(&c.teacher, id2).await.status(200).await;
    assert_eq!(
        (
            &h["grade"]["points"],
            &h["grade"]["max_points"],
            &h["grade"]["overridden"]
        ),
        (&json!(2.0), &json!(2.0), &json!(true))
    );
}

#[tokio::test]
async fn a_question_the_new_version_adds_is_served_to_attempts_started_after_the_regrade_only() {
    let app = TestApp::spawn().await;
    let learners = ["l1@example.org", "l2@example.org", "l3@example.org"];
    let (c, a) = exam_course(&app, &learners, json!({"feedback": "on_finish"})).await;
    let [l1, l2, l3] = [&c.learners[0], &c.learners[1], &c.learners[2]];
    let done = take(l1, &a, [Some("A"), Some("A"), Some("A")]).await;
    let open = start(l2, &a).await;
    new_version(&c.teacher, &exam("a", 1, false, true)).await;
    let applied = apply(&c.teacher, &a).await;
    assert_eq!(
        applied["questions"],
        json!([{"question_key": "q4", "from_scoring": "graded", "to_scoring": "graded", "key_changed": false, "removed": false, "added": true, "from_points": null, "to_points": 1.0}])
    );
    assert_eq!(
        applied["attempts"],
        json!([]),
        "no attempt's grade or maximum changes"
    );
    let prompts = |v: &Value| -> Vec<String> {
        let mut p: Vec<String> = v["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["prompt"].as_str().unwrap().to_string())
            .collect();
        p.sort();
        p
    };
    let seen = attempt(l1, done["id"].as_str().unwrap()).await;
    assert_eq!(
        (seen["quiz_version"].as_i64(), score(&seen)),
        (Some(2), (3.0, 3.0))
    );
    assert_eq!(prompts(&seen), ["Q1", "Q2", "Q3"]);
    let resumed = attempt(l2, open["id"].as_str().unwrap()).await;
    assert_eq!(prompts(&resumed), ["Q1", "Q2", "Q3"]);
    let fresh = start(l3, &a).await;
    assert_eq!(prompts(&fresh), ["Q1", "Q2", "Q3", "Q4"]);
}

#[tokio::test]
async fn a_regrade_that_cannot_be_made_is_refused_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let (c, a) = exam_course(&app, &["l1@example.org"], json!({})).await;
    let learner = &c.learners[0];
    let t = take(learner, &a, [Some("A"), None, None]).await;
    new_version(&c.teacher, &exam("b", 1, false, false)).await;
    let apply = json!({"to_version": 2, "dry_run": false});
    for (body, status, code) in [
        (
            json!({"to_version": 1, "dry_run": false}),
            422,
            "regrade_same_version",
        ),
        (
            json!({"to_version": 9, "dry_run": false}),
            404,
            "version_not_found",
        ),
        (json!({"to_version": 2, "reason": ""}), 422, "invalid_field"),
        (
            json!({"to_version": 2, "reason": "a\nb"}),
            422,
            "invalid_field",
        ),
        (json!({"to_version": "2"}), 400, "invalid_body"),
        (json!({"to_version": 2, "score": 5}), 400, "invalid_body"),
    ] {
        regrade(&c.teacher, &a, body)
            .await
            .problem(status, code)
            .await;
    }
    // Not the course's staff: its learner is refused, a stranger does not see the assignment.
    regrade(learner, &a, apply.clone())
        .await
        .problem(403, "forbidden")
        .await;
    let stranger = app.person("other@example.org", "instructor").await;
    regrade(&stranger, &a, apply)
        .await
        .problem(404, "assignment_not_found")
        .await;
    // A whole number written with a zero fraction is the same version (JSON Schema's integer).
    let dry = regrade(&c.teacher, &a, json!({"to_version": 2.0})).await;
    assert_eq!(dry.status(200).await["to_version"], 2);
    let seen = attempt(learner, t["id"].as_str().unwrap()).await;
    assert_eq!(
        (score(&seen), &seen["quiz_version"]),
        ((1.0, 3.0), &json!(1))
    );
    assert!(seen["regraded_at"].is_null());
}

#[tokio::test]
async fn a_regrade_racing_finishes_and_another_regrade_loses_no_change() {
    let app = TestApp::spawn().await;
    let emails: Vec<String> = (0..8).map(|i| format!("l{i}@example.org")).collect();
    let emails: Vec<&str> = emails.iter().map(String::as_str).collect();
    let (c, a) = exam_course(&app, &emails, json!({"feedback": "on_finish"})).await;
    // Every learner has answered Q2 with B (wrong under version 1, right under 2).
    let mut open = Vec::new();
    for l in &c.learners {
        let t = start(l, &a).await;
        answer(l, &t, "Q2", "B").await;
        open.push(t);
    }
    new_version(&c.teacher, &exam("b", 1, false, false)).await;
    let body = json!({"to_version": 2, "dry_run": false});
    let mut tasks = Vec::new();
    for (l, t) in c.learners.iter().zip(&open) {
        tasks.push(async move {
            let path = format!("/v1/attempts/{}/finish", t["id"].as_str().unwrap());
            let res = l.post(&path, &json!({})).await.response();
            let status = res.status().as_u16();
            if status != 200 {
                eprintln!("finish: {status} {}", res.text().await.unwrap());
            }
            status
        });
    }
    let regrades = async {
        let (x, y) = tokio::join!(
            regrade(&c.teacher, &a, body.clone()),
            regrade(&c.teacher, &a, body.clone())
        );
        let (x, y) = (x.response(), y.response());
        let mut statuses = [x.status().as_u16(), y.status().as_u16()];
        for r in [x, y] {
            if r.status() != 200 {
                eprintln!("regrade: {}", r.text().await.unwrap());
            }
        }
        statuses.sort();
        statuses
    };
    let (finishes, regrades) = tokio::join!(futures_util::future::join_all(tasks), regrades);
    assert!(finishes.iter().all(|s| *s == 200), "{finishes:?}");
    assert_eq!(
        regrades,
        [200, 422],
        "one regrade applies, the other finds it done"
    );
    // Whichever came first, every attempt is finished, on version 2, with Q2 right.
    for (l, t) in c.learners.iter().zip(&open) {
        let id = t["id"].as_str().unwrap();
        let seen = attempt(l, id).await;
        assert_eq!(
            (seen["quiz_version"].as_i64(), score(&seen)),
            (Some(2), (1.0, 3.0))
        );
        let h = history(l, id).await.status(200).await;
        assert_eq!(h["grade"]["points"], 1.0);
        let last = h["events"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["to_points"], 1.0, "{h}");
    }
}

#[tokio::test]
async fn a_retried_regrade_with_the_same_idempotency_key_is_replayed_not_refused() {
    let app = TestApp::spawn().await;
    let (c, a) = exam_course(&app, &["l1@example.org"], json!({})).await;
    take(&c.learners[0], &a, [Some("A"), Some("A"), None]).await;
    new_version(&c.teacher, &exam("b", 1, false, false)).await;
    let path = format!("/v1/assignments/{a}/regrade");
    let send = || {
        c.teacher
            .request(Method::POST, &path)
            .header("idempotency-key", "regrade-1")
            .json(&json!({"to_version": 2, "dry_run": false}))
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), 200);
    let first: Value = first.json().await.unwrap();
    let again = send().await.unwrap();
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.json::<Value>().await.unwrap(), first);
}

#[tokio::test]
async fn a_regraded_grade_reaches_the_lms_through_grade_passback() {
    let lti = crate::lti::setup().await;
    let app = &lti.app;
    let launched = crate::lti::graded_launch(&lti).await;

    // An admin publishes version 2 of the seed quiz with its first question worth 3 points.
    let admin = app.person("root@example.org", "admin").await;
    let toml =
        std::fs::read_to_string(crate::support::content_dir().join("data-parallelism/quiz.toml"))
            .unwrap()
            .replacen("points = 1\n", "points = 3\n", 1);
    let _: Value = admin
        .send_quiz(Some("data-parallelism"), &toml)
        .await
        .ok()
        .await;
    let teacher = app.bearer_session(&launched.teacher_token);
    let report = apply(&teacher, &launched.assignment).await;
    let change = &report["attempts"][0];
    assert_eq!(change["grade_changed"], true);
    let scores = lti.platform.scores(2).await;
    let s = &scores[1];
    assert_eq!(s["userId"], "learner-1");
    assert_eq!(s["scoreGiven"].as_f64(), change["to_points"].as_f64());
    assert_eq!(s["scoreMaximum"].as_f64(), change["to_max"].as_f64());
}

/// The result the attempt shows for the question with this prompt.
fn question<'a>(attempt: &'a Value, prompt: &str) -> &'a Value {
    attempt["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["prompt"] == prompt)
        .unwrap_or_else(|| panic!("no question {prompt} in {attempt}"))
}

#[tokio::test]
async fn giving_everyone_full_marks_raises_every_attempt_that_served_the_question_answered_or_not()
{
    let app = TestApp::spawn().await;
    let learners = ["l1@example.org", "l2@example.org", "l3@example.org"];
    let (c, a) = exam_course(&app, &learners, json!({"feedback": "immediate"})).await;
    let [l1, l2, l3] = [&c.learners[0], &c.learners[1], &c.learners[2]];
    let right = take(l1, &a, [Some("A"), Some("A"), Some("A")]).await;
    let wrong = take(l2, &a, [Some("A"), Some("B"), None]).await;
    let open = start(l3, &a).await;
    answer(l3, &open, "Q1", "A").await;

    let body = json!({"questions": {"q2": "full_marks"}});
    let dry = regrade(&c.teacher, &a, body.clone())
        .await
        .status(200)
        .await;
    assert_eq!(
        dry["questions"],
        json!([{"question_key": "q2", "from_scoring": "graded", "to_scoring": "full_marks", "key_changed": false, "removed": false, "added": false, "from_points": 1.0, "to_points": 1.0}])
    );
    assert_eq!(
        (
            &dry["from_version"],
            &dry["to_version"],
            &dry["grades_changed"]
        ),
        (&json!(1), &json!(1), &json!(1)),
        "only the attempt that missed Q2 gets a new grade"
    );
    let mut apply = body.clone();
    apply["dry_run"] = json!(false);
    let applied = regrade(&c.teacher, &a, apply.clone())
        .await
        .status(200)
        .await;
    assert_eq!(
        (&applied["questions"], &applied["attempts"]),
        (&dry["questions"], &dry["attempts"])
    );

    let seen = attempt(l2, wrong["id"].as_str().unwrap()).await;
    assert_eq!(score(&seen), (2.0, 3.0));
    let q2 = question(&seen, "Q2");
    assert_eq!(
        (
            &q2["scoring"],
            &q2["result"]["correct"],
            &q2["result"]["points"]
        ),
        (&json!("full_marks"), &json!(false), &json!(1.0)),
        "the key still says the answer was wrong; the points are full"
    );
    assert!(seen["regraded_at"].is_string());
    assert_eq!(
        score(&attempt(l1, right["id"].as_str().unwrap()).await),
        (3.0, 3.0)
    );
    let h = history(&c.teacher, wrong["id"].as_str().unwrap())
        .await
        .status(200)
        .await;
    let last = h["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (
            &last["kind"],
            &last["from_points"],
            &last["to_points"],
            &last["reason"]
        ),
        (
            &json!("regrade"),
            &json!(1.0),
            &json!(2.0),
            &json!("Questions rescored for everyone.")
        )
    );

    // The attempt in progress: an answer to Q2 now scores in full, and so would no answer.
    let outcome = answer_request(l3, &open, "Q2", "C").await.status(200).await;
    assert_eq!(
        (&outcome["result"]["correct"], &outcome["result"]["points"]),
        (&json!(false), &json!(1.0))
    );
    let finished = finish(l3, &open).await;
    assert_eq!(
        score(&finished),
        (2.0, 3.0),
        "Q1 right, Q2 in full, Q3 unanswered"
    );

    // Applying the same again changes nothing.
    let again = regrade(&c.teacher, &a, apply).await.status(200).await;
    assert_eq!(
        (
            &again["questions"],
            &again["attempts"],
            &again["grades_changed"]
        ),
        (&json!([]), &json!([]), &json!(0))
    );
}

#[tokio::test]
async fn a_dropped_question_leaves_every_score_and_maximum_also_of_attempts_in_progress_and_later()
{
    let app = TestApp::spawn().await;
    let learners = ["l1@example.org", "l2@example.org", "l3@example.org"];
    let (c, a) = exam_course(&app, &learners, json!({"feedback": "on_finish"})).await;
    let [l1, l2, l3] = [&c.learners[0], &c.learners[1], &c.learners[2]];
    let done = take(l1, &a, [Some("A"), Some("B"), Some("A")]).await;
    let open = start(l2, &a).await;
    answer(l2, &open, "Q3", "A").await;
    let body =
        json!({"questions": {"q3": "dropped"}, "dry_run": false, "reason": "Q3 was ambiguous."});
    let applied = regrade(&c.teacher, &a, body).await.status(200).await;
    assert_eq!(applied["attempts_total"], 2);
    assert_eq!(applied["grades_changed"], 1);

    let seen = attempt(l1, done["id"].as_str().unwrap()).await;
    assert_eq!(score(&seen), (1.0, 2.0));
    let q3 = question(&seen, "Q3");
    assert_eq!(
        (
            &q3["scoring"],
            &q3["points"],
            &q3["result"]["points"],
            &q3["result"]["max_points"]
        ),
        (&json!("dropped"), &json!(0.0), &json!(0.0), &json!(0.0))
    );
    assert_eq!(score(&finish(l2, &open).await), (0.0, 2.0));
    let fresh = take(l3, &a, [Some("A"), Some("A"), Some("A")]).await;
    assert_eq!(score(&fresh), (2.0, 2.0));
    let h = history(&c.teacher, done["id"].as_str().unwrap())
        .await
        .status(200)
        .await;
    assert_eq!(
        h["events"].as_array().unwrap().last().unwrap()["reason"],
        "Q3 was ambiguous."
    );

    // Undone: graded by its key again, everywhere.
    let undo = json!({"questions": {"q3": "graded"}, "dry_run": false});
    let undone = regrade(&c.teacher, &a, undo).await.status(200).await;
    assert_eq!(undone["grades_changed"], 3);
    assert_eq!(
        score(&attempt(l1, done["id"].as_str().unwrap()).await),
        (2.0, 3.0)
    );
}

#[tokio::test]
async fn question_rules_carry_over_a_regrade_to_a_new_version_and_a_bad_rescore_changes_nothing() {
    let app = TestApp::spawn().await;
    let (c, a) = exam_course(&app, &["l1@example.org"], json!({"feedback": "on_finish"})).await;
    let learner = &c.learners[0];
    let t = take(learner, &a, [Some("A"), Some("A"), None]).await;
    for (body, status, code) in [
        (json!({}), 422, "invalid_field"),
        (json!({"questions": {}}), 422, "invalid_field"),
        (
            json!({"questions": {"q9": "dropped"}}),
            422,
            "unknown_question",
        ),
        (json!({"questions": {"q1": "bonus"}}), 400, "invalid_body"),
        (json!({"questions": ["q1"]}), 400, "invalid_body"),
    ] {
        regrade(&c.teacher, &a, body)
            .await
            .problem(status, code)
            .await;
    }
    regrade(learner, &a, json!({"questions": {"q1": "full_marks"}}))
        .await
        .problem(403, "forbidden")
        .await;
    assert_eq!(
        score(&attempt(learner, t["id"].as_str().unwrap()).await),
        (2.0, 3.0)
    );

    let full = json!({"questions": {"q3": "full_marks"}, "dry_run": false});
    regrade(&c.teacher, &a, full).await.status(200).await;
    assert_eq!(
        score(&attempt(learner, t["id"].as_str().unwrap()).await),
        (3.0, 3.0)
    );
    // Version 2: Q2's key is B, Q3 worth 2. Q3 keeps its full marks, now 2 of them.
    new_version(&c.teacher, &exam("b", 2, false, false)).await;
    let applied = apply(&c.teacher, &a).await;
    let q3 = applied["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["question_key"] == "q3")
        .unwrap();
    assert_eq!(
        (&q3["from_scoring"], &q3["to_scoring"]),
        (&json!("full_marks"), &json!("full_marks"))
    );
    let seen = attempt(learner, t["id"].as_str().unwrap()).await;
    assert_eq!(
        (seen["quiz_version"].as_i64(), score(&seen)),
        (Some(2), (3.0, 4.0))
    );
}
