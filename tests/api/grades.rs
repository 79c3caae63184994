//! Grades over HTTP: staff overrides and their append-only history, the course gradebook
//! (checked against grades computed here from the attempts the test made), and the
//! overridden grade reaching the LMS test platform through AGS.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Duration, SubsecRound, Utc};
use quizd::clock::Clock;
use serde_json::{Value, json};

use crate::support::session::{Reply, Session};
use crate::support::{TestApp, expect_status};

/// A course taught by `teacher`, with its learners.
pub(crate) struct Course<'a> {
    pub teacher: Session<'a>,
    pub learners: Vec<Session<'a>>,
    pub id: String,
}

/// A new course of the instructor `teacher_email`'s, with these addresses registered (verified)
/// and enrolled as its learners.
pub(crate) async fn course<'a>(
    app: &'a TestApp,
    teacher_email: &str,
    learners: &[&str],
) -> Course<'a> {
    let teacher = app.person(teacher_email, "instructor").await;
    let body = json!({"title": "Distributed training"});
    let c = teacher.post("/v1/courses", &body).await.status(201).await;
    let id = c["id"].as_str().unwrap().to_string();
    let mut people = Vec::new();
    for email in learners {
        let learner = app.person(email, "learner").await;
        let path = format!("/v1/courses/{id}/enrollments");
        let body = json!({"email": learner.email});
        teacher.post(&path, &body).await.status(201).await;
        people.push(learner);
    }
    Course {
        teacher,
        learners: people,
        id,
    }
}

/// The seed quiz `data-parallelism` assigned in the course under `policy`: the assignment's id.
pub(crate) async fn assignment(c: &Course<'_>, policy: Value) -> String {
    let path = format!("/v1/courses/{}/assignments", c.id);
    let body = json!({"quiz": "data-parallelism", "policy": policy});
    let a = c.teacher.post(&path, &body).await.status(201).await;
    a["id"].as_str().unwrap().to_string()
}

/// A new attempt at the assignment, as its start answers (201).
pub(crate) async fn start(who: &Session<'_>, assignment: &str) -> Value {
    let path = format!("/v1/assignments/{assignment}/attempts");
    who.post(&path, &json!({})).await.status(201).await
}

/// Answers the first `answered` questions, picking option `pick` (modulo the options) of
/// each, so that learners score differently.
pub(crate) async fn answer_some(who: &Session<'_>, attempt: &Value, answered: usize, pick: usize) {
    let id = attempt["id"].as_str().unwrap();
    for q in attempt["questions"]
        .as_array()
        .unwrap()
        .iter()
        .take(answered)
    {
        let answer = match q["kind"].as_str().unwrap() {
            "numeric" => json!({"number": 4 + pick}),
            "short_text" => json!({"text": if pick % 2 == 0 { "gather" } else { "scatter" }}),
            _ => {
                let options = q["options"].as_array().unwrap();
                json!({"selected": [options[pick % options.len()]["id"]]})
            }
        };
        let path = format!("/v1/attempts/{id}/responses/{}", q["id"].as_str().unwrap());
        who.put(&path, &answer).await.status(200).await;
    }
}

/// Finishes the attempt (200): the finished attempt.
pub(crate) async fn finish(who: &Session<'_>, attempt: &Value) -> Value {
    let path = format!("/v1/attempts/{}/finish", attempt["id"].as_str().unwrap());
    who.post(&path, &json!({})).await.status(200).await
}

/// Takes a whole attempt: its id, score and maximum as the finish reported them.
async fn take(
    who: &Session<'_>,
    assignment: &str,
    answered: usize,
    pick: usize,
) -> (String, f64, f64) {
    let attempt = start(who, assignment).await;
    answer_some(who, &attempt, answered, pick).await;
    let done = finish(who, &attempt).await;
    (
        attempt["id"].as_str().unwrap().to_string(),
        done["result"]["score"].as_f64().unwrap(),
        done["result"]["max_score"].as_f64().unwrap(),
    )
}

/// `PUT /v1/attempts/{attempt}/grade`: an override.
async fn set_grade(who: &Session<'_>, attempt: &str, body: Value) -> Reply {
    who.put(&format!("/v1/attempts/{attempt}/grade"), &body)
        .await
}

/// `GET /v1/attempts/{attempt}/grade-history`.
pub(crate) async fn history(who: &Session<'_>, attempt: &str) -> Reply {
    who.get(&format!("/v1/attempts/{attempt}/grade-history"))
        .await
}

fn at(v: &Value) -> DateTime<Utc> {
    v.as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn an_instructor_overrides_a_finished_grade_and_the_history_says_who_when_from_to_and_why() {
    // PostgreSQL keeps microseconds.
    let t0 = Utc::now().trunc_subsecs(6);
    let clock = Clock::manual(t0);
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let c = course(&app, "teacher@example.org", &["learner@example.org"]).await;
    let learner = &c.learners[0];
    let a = assignment(&c, json!({"feedback": "on_finish"})).await;
    let attempt = start(learner, &a).await;
    answer_some(learner, &attempt, 3, 0).await;
    clock.advance(Duration::minutes(1));
    let done = finish(learner, &attempt).await;
    let id = attempt["id"].as_str().unwrap();
    let computed = done["result"]["score"].as_f64().unwrap();
    let max = done["result"]["max_score"].as_f64().unwrap();
    let new_points = if computed >= 1.0 { computed - 1.0 } else { max };

    clock.advance(Duration::minutes(4));
    let reason = "Question 3 was ambiguous; full marks for the reasoning shown in class.";
    let body = json!({"points": new_points, "reason": reason});
    let grade = set_grade(&c.teacher, id, body).await.status(200).await;
    assert_eq!(grade["attempt_id"], id);
    assert_eq!(grade["points"].as_f64().unwrap(), new_points);
    assert_eq!(grade["computed_points"].as_f64().unwrap(), computed);
    assert_eq!(grade["max_points"].as_f64().unwrap(), max);
    assert_eq!(grade["overridden"], true);

    // The learner reads the history: the finish, then the override, with who, when, from, to, why.
    let h = history(learner, id).await.status(200).await;
    assert_eq!(h["grade"], grade);
    let events = h["events"].as_array().unwrap();
    assert_eq!(events.len(), 2, "{h:#}");
    let (finished, overridden) = (&events[0], &events[1]);
    assert_eq!(finished["kind"], "finished");
    assert!(finished["actor_id"].is_null());
    assert_eq!(at(&finished["at"]), t0 + Duration::minutes(1));
    assert!(finished["from_points"].is_null());
    assert_eq!(finished["to_points"].as_f64().unwrap(), computed);
    assert_eq!(finished["reason"], "submitted");
    assert_eq!(overridden["kind"], "override");
    assert_eq!(overridden["actor_id"], c.teacher.id.to_string());
    assert_eq!(at(&overridden["at"]), t0 + Duration::minutes(5));
    assert_eq!(overridden["from_points"].as_f64().unwrap(), computed);
    assert_eq!(overridden["to_points"].as_f64().unwrap(), new_points);
    assert_eq!(overridden["max_points"].as_f64().unwrap(), max);
    assert_eq!(overridden["reason"], reason);
    assert!(overridden["id"].as_i64() > finished["id"].as_i64());
    // The teacher reads the same history.
    let staff_view = history(&c.teacher, id).await.status(200).await;
    assert_eq!(staff_view, h);

    // A second override starts from the first; the LMS is told each time (outbox), the
    // audit log has both, and the computed score never changes.
    let body = json!({"points": 0, "reason": "Copied."});
    let grade = set_grade(&c.teacher, id, body).await.status(200).await;
    assert_eq!(grade["points"].as_f64().unwrap(), 0.0);
    assert_eq!(grade["computed_points"].as_f64().unwrap(), computed);
    let h = history(learner, id).await.status(200).await;
    assert_eq!(h["events"][2]["from_points"].as_f64().unwrap(), new_points);
    assert_eq!(h["events"][2]["to_points"].as_f64().unwrap(), 0.0);
    // The learner's own list shows the grade that counts beside the computed score.
    let mine = learner.get("/v1/me/attempts").await.status(200).await;
    assert_eq!(mine["items"][0]["score"].as_f64().unwrap(), computed);
    assert_eq!(mine["items"][0]["override_points"].as_f64().unwrap(), 0.0);
    assert_eq!(mine["items"][0]["percentage"].as_f64().unwrap(), 0.0);
    assert_eq!(mine["grades"][0]["percentage"].as_f64().unwrap(), 0.0);
    let regraded: Vec<(Value,)> = sqlx::query_as(
        "SELECT payload FROM outbox WHERE topic = 'attempt.regraded' AND aggregate_id = $1::uuid
          ORDER BY id",
    )
    .bind(id)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(regraded.len(), 2);
    assert_eq!(regraded[0].0["points"].as_f64().unwrap(), new_points);
    assert_eq!(regraded[1].0["points"].as_f64().unwrap(), 0.0);
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action = 'grade_overridden' AND actor_id = $1
            AND subject_id = $2",
    )
    .bind(c.teacher.id)
    .bind(learner.id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(audited, 2);

    // The learner's export has the grade events of the attempt.
    let export = learner.get("/v1/me/export").await.status(200).await;
    let exported = &export["attempts"][0];
    assert_eq!(exported["override_points"].as_f64().unwrap(), 0.0);
    let kinds: Vec<&str> = exported["grade_events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["finished", "override", "override"]);
    assert_eq!(exported["grade_events"][1]["reason"], reason);

    // The history is append-only, whoever asks the database.
    for sql in [
        "UPDATE grade_events SET to_points = 0",
        "DELETE FROM grade_events",
        "TRUNCATE grade_events",
    ] {
        let err = sqlx::query(sql).execute(&app.pool).await.unwrap_err();
        assert!(err.to_string().contains("append-only"), "{sql}: {err}");
    }
}

#[tokio::test]
async fn an_override_is_refused_to_learners_to_other_courses_staff_out_of_range_and_unfinished() {
    let app = TestApp::spawn().await;
    let c = course(
        &app,
        "teacher@example.org",
        &["a@example.org", "b@example.org"],
    )
    .await;
    let other = course(&app, "other-teacher@example.org", &[]).await;
    let (learner, classmate) = (&c.learners[0], &c.learners[1]);
    let a = assignment(&c, json!({})).await;
    let (id, computed, max) = take(learner, &a, 8, 0).await;
    let ok = json!({"points": 1, "reason": "Fair."});

    // The learner: their own attempt is visible but not theirs to grade.
    set_grade(learner, &id, ok.clone())
        .await
        .problem(403, "forbidden")
        .await;
    // A classmate and another course's teacher cannot see it at all.
    for who in [classmate, &other.teacher] {
        set_grade(who, &id, ok.clone())
            .await
            .problem(404, "attempt_not_found")
            .await;
        history(who, &id)
            .await
            .problem(404, "attempt_not_found")
            .await;
    }
    // Out of range, a reason missing, empty, too long or not one line: 422 naming the field.
    for (body, field) in [
        (json!({"points": -0.5, "reason": "x"}), "points"),
        (json!({"points": max + 0.5, "reason": "x"}), "points"),
        (json!({"points": 1, "reason": "   "}), "reason"),
        (json!({"points": 1, "reason": "a".repeat(1001)}), "reason"),
        (json!({"points": 1, "reason": "two\nlines"}), "reason"),
    ] {
        let p = set_grade(&c.teacher, &id, body.clone())
            .await
            .problem(422, "invalid_field")
            .await;
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains(&format!("`{field}`")),
            "{body}: {p}"
        );
    }
    for body in [
        json!({"points": 1}),
        json!({"points": "1", "reason": "x"}),
        json!({"points": 1, "reason": "x", "user_id": learner.id}),
        json!([1, "x"]),
    ] {
        set_grade(&c.teacher, &id, body.clone())
            .await
            .problem(400, "invalid_body")
            .await;
    }
    // An attempt in progress has no grade to set.
    let open = start(learner, &a).await;
    let open = open["id"].as_str().unwrap();
    set_grade(&c.teacher, open, ok.clone())
        .await
        .problem(409, "attempt_not_finished")
        .await;
    let h = history(&c.teacher, open).await.status(200).await;
    assert!(h["events"].as_array().unwrap().is_empty());
    assert!(h["grade"]["points"].is_null());

    // Nothing changed: the grade is the computed one, its history the finish alone.
    let h = history(learner, &id).await.status(200).await;
    assert_eq!(h["grade"]["points"].as_f64().unwrap(), computed);
    assert_eq!(h["grade"]["overridden"], false);
    assert_eq!(h["events"].as_array().unwrap().len(), 1);
    // The edges of the range are taken.
    for points in [0.0, max] {
        let body = json!({"points": points, "reason": "Edge."});
        set_grade(&c.teacher, &id, body).await.status(200).await;
    }
}

/// What the test knows of one attempt: its number, its computed score (None while in
/// progress), the override it set, and its maximum.
#[derive(Clone, Copy)]
struct Taken {
    number: i32,
    score: Option<f64>,
    override_points: Option<f64>,
    max: f64,
}

/// The cell as the test computes it: (points, attempts used, state).
fn expected_cell(method: &str, attempts: &[Taken]) -> (Option<f64>, u64, &'static str) {
    let finished: Vec<(i32, f64, f64)> = attempts
        .iter()
        .filter_map(|t| {
            t.score
                .map(|s| (t.number, t.override_points.unwrap_or(s), t.max))
        })
        .collect();
    let max = attempts.first().map_or(0.0, |t| t.max);
    let points = if finished.is_empty() {
        None
    } else {
        let fractions = finished.iter().map(|&(_, p, m)| p / m);
        let by_number = |last: bool| {
            let mut sorted = finished.clone();
            sorted.sort_by_key(|f| f.0);
            let pick = if last { sorted.last() } else { sorted.first() };
            pick.map(|&(_, p, m)| p / m).unwrap()
        };
        let fraction = match method {
            "highest" => fractions.fold(f64::MIN, f64::max),
            "latest" => by_number(true),
            "first" => by_number(false),
            "average" => fractions.sum::<f64>() / finished.len() as f64,
            m => panic!("unknown method {m}"),
        };
        Some(fraction * max)
    };
    let state = if attempts.iter().any(|t| t.score.is_none()) {
        "in_progress"
    } else if attempts.iter().any(|t| t.override_points.is_some()) {
        "overridden"
    } else if !finished.is_empty() {
        "finished"
    } else {
        "not_started"
    };
    (points, attempts.len() as u64, state)
}

#[tokio::test]
async fn the_gradebook_applies_each_grading_method_to_effective_grades_as_computed_here() {
    let app = TestApp::spawn().await;
    let c = course(
        &app,
        "teacher@example.org",
        &["l0@example.org", "l1@example.org", "l2@example.org"],
    )
    .await;
    let methods = ["highest", "latest", "first", "average"];
    let mut assignments = Vec::new();
    for m in methods {
        let a = assignment(&c, json!({"grading_method": m, "feedback": "on_finish"})).await;
        assignments.push((a, m));
    }
    // (learner, assignment) → the attempts taken, in order.
    let mut taken: BTreeMap<(usize, usize), Vec<Taken>> = BTreeMap::new();
    for (ai, (a, _)) in assignments.iter().enumerate() {
        for (li, learner) in c.learners.iter().enumerate() {
            // Learner 2 never starts assignment 3; the others take 1 to 3 attempts.
            let count = if (li, ai) == (2, 3) {
                0
            } else {
                1 + (li + ai) % 3
            };
            for n in 0..count {
                let (_, score, max) = take(learner, a, 2 + (li * 3 + n * 2) % 7, n + li).await;
                taken.entry((li, ai)).or_default().push(Taken {
                    number: n as i32 + 1,
                    score: Some(score),
                    override_points: None,
                    max,
                });
            }
        }
    }
    // An override of learner 0's first attempt at every assignment.
    for (ai, _) in assignments.iter().enumerate() {
        let attempt: String = sqlx::query_scalar(
            "SELECT id::text FROM attempts WHERE assignment_id = $1::uuid AND user_id = $2 AND number = 1",
        )
        .bind(&assignments[ai].0)
        .bind(c.learners[0].id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        let t = &mut taken.get_mut(&(0, ai)).unwrap()[0];
        let points = t.max - 0.5;
        t.override_points = Some(points);
        let body = json!({"points": points, "reason": "Re-marked by hand."});
        set_grade(&c.teacher, &attempt, body)
            .await
            .status(200)
            .await;
    }
    // Learner 1 has an attempt open at assignment 0.
    start(&c.learners[1], &assignments[0].0).await;
    let earlier = taken.get_mut(&(1, 0)).unwrap();
    let open = Taken {
        number: earlier.len() as i32 + 1,
        score: None,
        override_points: None,
        max: earlier[0].max,
    };
    earlier.push(open);

    let path = format!("/v1/courses/{}/gradebook", c.id);
    let res = c.teacher.get(&path).await.response();
    assert!(res.headers().get("link").is_none());
    let book = expect_status(res, 200).await;
    assert!(book["next"].is_null());
    let columns = book["assignments"].as_array().unwrap();
    assert_eq!(columns.len(), methods.len());
    for (i, (a, m)) in assignments.iter().enumerate() {
        assert_eq!(columns[i]["id"], a.as_str());
        assert_eq!(columns[i]["grading_method"], *m);
    }
    let rows = book["learners"].as_array().unwrap();
    assert_eq!(rows.len(), c.learners.len());
    let mut checked = 0;
    for row in rows {
        let li = c
            .learners
            .iter()
            .position(|l| row["user_id"] == l.id.to_string())
            .unwrap();
        for (ai, (a, m)) in assignments.iter().enumerate() {
            let cell = &row["cells"][ai];
            assert_eq!(cell["assignment_id"], a.as_str());
            let attempts = taken.get(&(li, ai)).cloned().unwrap_or_default();
            let (points, used, state) = expected_cell(m, &attempts);
            let what = format!("learner {li}, {m}: {cell}");
            assert_eq!(cell["attempts_used"].as_u64().unwrap(), used, "{what}");
            assert_eq!(cell["state"], state, "{what}");
            match points {
                Some(p) => assert!(
                    (cell["points"].as_f64().unwrap() - p).abs() < 1e-9,
                    "{what}"
                ),
                None => assert!(cell["points"].is_null(), "{what}"),
            }
            assert!(cell["max_points"].as_f64().unwrap() > 0.0);
            checked += 1;
        }
    }
    assert_eq!(checked, 12);
    // Every state appears, so each rule was exercised.
    let states: HashSet<String> = rows
        .iter()
        .flat_map(|r| r["cells"].as_array().unwrap().iter())
        .map(|c| c["state"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(states.len(), 4, "{states:?}");

    // The same page as CSV: a row per learner, a column per assignment, the same grades.
    let res = c
        .teacher
        .get(&format!("{path}?format=csv"))
        .await
        .response();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let text = res.text().await.unwrap();
    let lines: Vec<&str> = text.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1 + rows.len());
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(
        &header[..4],
        ["user_id", "display_name", "email", "enrolled"]
    );
    for (i, (a, _)) in assignments.iter().enumerate() {
        assert!(
            header[4 + i].ends_with(&format!("[{a}]")),
            "{}",
            header[4 + i]
        );
    }
    for (row, line) in rows.iter().zip(&lines[1..]) {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields[0], row["user_id"].as_str().unwrap());
        for (i, cell) in row["cells"].as_array().unwrap().iter().enumerate() {
            match cell["points"].as_f64() {
                Some(p) => assert!((fields[4 + i].parse::<f64>().unwrap() - p).abs() < 1e-6),
                None => assert_eq!(fields[4 + i], ""),
            }
        }
    }
}

#[tokio::test]
async fn gradebook_pages_walk_every_learner_exactly_once_by_name_then_id() {
    let app = TestApp::spawn().await;
    let emails: Vec<String> = (0..7).map(|i| format!("p{i}@example.org")).collect();
    let refs: Vec<&str> = emails.iter().map(String::as_str).collect();
    let c = course(&app, "teacher@example.org", &refs).await;
    assignment(&c, json!({})).await;
    // Names that sort alike in any collation, two of them the same (the id breaks the tie).
    let names = [
        "Learner D",
        "Learner B",
        "Learner B",
        "Learner A",
        "Learner G",
        "Learner C",
        "Learner E",
    ];
    for (l, name) in c.learners.iter().zip(names) {
        sqlx::query("UPDATE users SET display_name = $2 WHERE id = $1")
            .bind(l.id)
            .bind(name)
            .execute(&app.pool)
            .await
            .unwrap();
    }
    let mut expected: Vec<(String, String)> = c
        .learners
        .iter()
        .zip(names)
        .map(|(l, n)| (n.to_string(), l.id.to_string()))
        .collect();
    expected.sort();

    let mut seen = Vec::new();
    let mut path = format!("/v1/courses/{}/gradebook?limit=3", c.id);
    let mut pages = 0;
    loop {
        let res = c.teacher.get(&path).await.response();
        let link = res
            .headers()
            .get("link")
            .map(|v| v.to_str().unwrap().to_string());
        let page = expect_status(res, 200).await;
        pages += 1;
        let learners = page["learners"].as_array().unwrap();
        assert!(learners.len() <= 3);
        for l in learners {
            seen.push((
                l["display_name"].as_str().unwrap().to_string(),
                l["user_id"].as_str().unwrap().to_string(),
            ));
        }
        match (page["next"].as_str(), link) {
            (Some(next), Some(link)) => {
                let target = format!("/v1/courses/{}/gradebook?limit=3&cursor={next}", c.id);
                assert_eq!(link, format!("<{target}>; rel=\"next\""));
                path = target;
            }
            (None, None) => break,
            other => panic!("next and Link disagree: {other:?}"),
        }
        assert!(pages < 10, "the pages do not end");
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, expected, "every learner once, by name then id");

    // Bad paging, and people who may not read the gradebook.
    let base = format!("/v1/courses/{}/gradebook", c.id);
    for q in ["?limit=0", "?limit=201"] {
        let res = c.teacher.get(&format!("{base}{q}")).await;
        res.problem(400, "invalid_limit").await;
    }
    for q in ["?cursor=bm90LWEtY3Vyc29y", "?cursor=%00", "?cursor="] {
        let res = c.teacher.get(&format!("{base}{q}")).await;
        res.problem(422, "invalid_cursor").await;
    }
    let res = c.teacher.get(&format!("{base}?format=xml")).await;
    res.problem(400, "invalid_query").await;
    let res = c.learners[0].get(&base).await;
    res.problem(403, "forbidden").await;
    let outsider = app.person("outsider@example.org", "learner").await;
    outsider
        .get(&base)
        .await
        .problem(404, "course_not_found")
        .await;
    let forged = app.bearer_session("not-a-token");
    forged.get(&base).await.status(401).await;
}

/// The gradebook as CSV, a line of fields per row (the header first); no field holds a comma.
async fn gradebook_csv(who: &Session<'_>, path: &str) -> Vec<Vec<String>> {
    let res = who.get(&format!("{path}?format=csv")).await.response();
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    text.split("\r\n")
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[tokio::test]
async fn a_learner_removed_from_the_course_stays_in_the_gradebook_marked_not_enrolled_but_an_erased_one_does_not()
 {
    let app = TestApp::spawn().await;
    let emails = [
        "ada@example.org",
        "bo@example.org",
        "cy@example.org",
        "di@example.org",
    ];
    let c = course(&app, "teacher@example.org", &emails).await;
    let [ada, bo, cy, di] = &c.learners[..] else {
        unreachable!()
    };
    let a = assignment(&c, json!({"feedback": "on_finish"})).await;
    let b = assignment(&c, json!({"feedback": "on_finish"})).await;
    // Ada: a finished attempt at a, one in progress at b. Bo stays; Cy is removed and enrolled
    // again; Di is removed and then erases her account.
    take(ada, &a, 3, 1).await;
    let open = start(ada, &b).await;
    answer_some(ada, &open, 1, 0).await;
    take(bo, &a, 2, 0).await;
    take(cy, &a, 4, 1).await;
    take(di, &b, 2, 1).await;
    let path = format!("/v1/courses/{}/gradebook", c.id);
    let before = c.teacher.get(&path).await.status(200).await;
    let before_csv = gradebook_csv(&c.teacher, &path).await;

    for l in [ada, cy, di] {
        let removal = format!("/v1/courses/{}/enrollments/{}", c.id, l.id);
        c.teacher.delete(&removal).await.status(204).await;
    }
    let enrollments = format!("/v1/courses/{}/enrollments", c.id);
    let body = json!({"email": cy.email});
    c.teacher.post(&enrollments, &body).await.status(201).await;
    let erase = di
        .request(reqwest::Method::DELETE, "/v1/me")
        .json(&json!({"password": crate::support::PASSWORD}))
        .send()
        .await
        .unwrap();
    expect_status(erase, 204).await;

    // Ada's attempts stay as they were, on a row marked not enrolled; Cy shows once, enrolled;
    // Di is gone, under no name.
    let after = c.teacher.get(&path).await.status(200).await;
    let row = |book: &Value, id: uuid::Uuid| -> Option<Value> {
        let rows = book["learners"].as_array().unwrap();
        rows.iter()
            .find(|r| r["user_id"] == id.to_string())
            .cloned()
    };
    let rows = after["learners"].as_array().unwrap();
    let ids: Vec<&str> = rows
        .iter()
        .map(|r| r["user_id"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = [ada, bo, cy].iter().map(|l| l.id.to_string()).collect();
    assert_eq!(ids, expected, "{after}");
    for (l, enrolled) in [(ada, false), (bo, true), (cy, true)] {
        let mut was = row(&before, l.id).unwrap();
        was["enrolled"] = json!(enrolled);
        assert_eq!(row(&after, l.id).unwrap(), was);
    }
    let cells = &row(&after, ada.id).unwrap()["cells"];
    assert_eq!(
        [&cells[0]["state"], &cells[1]["state"]],
        ["finished", "in_progress"]
    );
    assert!(row(&after, di.id).is_none());
    assert!(!after.to_string().contains("Erased person"));

    // The CSV too: the same grades, and an `enrolled` column.
    let after_csv = gradebook_csv(&c.teacher, &path).await;
    assert_eq!(
        &after_csv[0][..4],
        ["user_id", "display_name", "email", "enrolled"]
    );
    assert_eq!(after_csv[0], before_csv[0]);
    assert_eq!(after_csv.len(), 4);
    for (l, enrolled) in [(ada, "false"), (bo, "true"), (cy, "true")] {
        let id = l.id.to_string();
        let line = |csv: &[Vec<String>]| csv.iter().find(|f| f[0] == id).cloned().unwrap();
        let (mut was, now) = (line(&before_csv), line(&after_csv));
        assert_eq!(was[3], "true");
        was[3] = enrolled.to_string();
        assert_eq!(now, was);
    }
}

#[tokio::test]
async fn an_overridden_grade_reaches_the_lms_through_grade_passback() {
    let lti = crate::lti::setup().await;
    let app = &lti.app;
    let launched = crate::lti::graded_launch(&lti).await;
    let teacher = app.bearer_session(&launched.teacher_token);
    let finished = &launched.finished;
    let attempt = finished["id"].as_str().unwrap();
    let computed = finished["result"]["score"].as_f64().unwrap();
    let max = finished["result"]["max_score"].as_f64().unwrap();

    // The teacher, instructor in the LMS's course, sets the grade; the LMS receives it.
    let points = if computed >= 2.0 {
        computed - 2.0
    } else {
        max - 0.5
    };
    let body = json!({"points": points, "reason": "Partial credit reviewed."});
    let grade = set_grade(&teacher, attempt, body).await.status(200).await;
    assert_eq!(grade["points"].as_f64().unwrap(), points);
    let scores = lti.platform.scores(2).await;
    let s = &scores[1];
    assert_eq!(s["userId"], "learner-1");
    assert_eq!(s["scoreGiven"].as_f64().unwrap(), points);
    assert_eq!(s["scoreMaximum"].as_f64().unwrap(), max);
    assert_eq!(s["gradingProgress"], "FullyGraded");
    // The delivery of the override is on record as delivered (recorded just after the post).
    for _ in 0..100 {
        let delivered: Option<DateTime<Utc>> = sqlx::query_scalar(
            "SELECT d.delivered_at FROM outbox o
               LEFT JOIN deliveries d ON d.consumer = 'lti-ags' AND d.event_id = o.id
              WHERE o.topic = 'attempt.regraded' AND o.aggregate_id = $1::uuid",
        )
        .bind(attempt)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if delivered.is_some() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the regraded event was not marked delivered");
}
