//! Instructor analytics: checked against the data, edge cases, locales, exports, access.

use chrono::{Duration, Utc};
use quizd::analytics::generate::{Plan, finished_attempts};
use quizd::content::load_dir;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::{
    Person, TestApp, assert_problem, content_dir, expect_status, get_as, patch_as, post_as, put_as,
    token_for,
};

/// A course taught by `teacher` with an assignment of the seed quiz.
async fn course_with_assignment(app: &TestApp, policy: Value) -> (Person, String, String) {
    let teacher = token_for(app, "stats-teacher@example.org", "instructor").await;
    let course = expect_status(
        post_as(
            app,
            &teacher.access,
            "/v1/courses",
            &json!({"title": "Stats"}),
        )
        .await,
        201,
    )
    .await;
    let course_id = course["id"].as_str().unwrap().to_string();
    let res = post_as(
        app,
        &teacher.access,
        &format!("/v1/courses/{course_id}/assignments"),
        &json!({"quiz": "data-parallelism", "policy": policy}),
    )
    .await;
    let assignment = expect_status(res, 201).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    (teacher, course_id, assignment)
}

async fn version_id(app: &TestApp, assignment: &str) -> Uuid {
    sqlx::query_scalar("SELECT quiz_version_id FROM assignments WHERE id = $1::uuid")
        .bind(assignment)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn generate(app: &TestApp, assignment: &str, attempts: usize, seed: u64) -> u64 {
    generate_with(app, assignment, attempts, seed, 3.0, None).await
}

/// `sync-collective` made `harder` logits harder in Indonesian; `stronger`: a locale whose
/// learners are more able.
async fn generate_with(
    app: &TestApp,
    assignment: &str,
    attempts: usize,
    seed: u64,
    harder: f64,
    stronger: Option<(&str, f64)>,
) -> u64 {
    let content = load_dir(&content_dir())
        .unwrap()
        .into_iter()
        .find(|q| q.slug == "data-parallelism")
        .unwrap();
    finished_attempts(
        &app.pool,
        &Plan {
            assignment_id: assignment.parse().unwrap(),
            quiz_version_id: version_id(app, assignment).await,
            content: &content,
            attempts,
            seed,
            harder_in: Some(("sync-collective", "id", harder)),
            stronger_in: stronger,
            finished_at: Utc::now() - Duration::hours(1),
        },
    )
    .await
    .unwrap()
}

async fn analytics(app: &TestApp, who: &Person, assignment: &str, query: &str) -> Value {
    expect_status(
        get_as(
            app,
            &who.access,
            &format!("/v1/assignments/{assignment}/analytics{query}"),
        )
        .await,
        200,
    )
    .await
}

#[tokio::test]
async fn the_statistics_agree_with_the_data_and_an_independent_check() {
    let app = TestApp::spawn().await;
    let (teacher, _, assignment) = course_with_assignment(&app, json!({})).await;
    generate(&app, &assignment, 400, 7).await;
    let report = analytics(&app, &teacher, &assignment, "").await;
    let v = &report["versions"][0];
    assert_eq!(v["counts"]["counted"], 400);
    assert_eq!(v["counts"]["finished"], 400);
    // Facility is the mean score per question, unanswered counting 0: check it in SQL.
    let facility: Vec<(String, f64)> = sqlx::query_as(
        "SELECT q.question_key, 100 * coalesce(sum(r.points), 0) / (400 * q.points)
           FROM analytics.questions q
           LEFT JOIN analytics.responses r ON r.question_key = q.question_key AND r.assignment_id = $1::uuid
          WHERE q.quiz = 'data-parallelism' AND q.quiz_version = 1
          GROUP BY q.question_key, q.points, q.position ORDER BY q.position",
    )
    .bind(&assignment)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    for (q, (key, f)) in v["questions"].as_array().unwrap().iter().zip(&facility) {
        assert_eq!(q["key"], key.as_str());
        assert!((q["facility"].as_f64().unwrap() - f).abs() < 1e-9, "{key}");
        let chosen: u64 = q["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["count"].as_u64().unwrap())
            .sum();
        assert_eq!(
            chosen,
            q["responses"].as_u64().unwrap(),
            "single choice: one option per response"
        );
        assert!(q["median_seconds"].as_f64().unwrap() >= 5.0);
        assert_eq!(q["random_guess_score"], 25.0);
    }
    let mean: f64 = sqlx::query_scalar(
        "SELECT avg(percentage) FROM analytics.attempts WHERE assignment_id = $1::uuid",
    )
    .bind(&assignment)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!((v["test"]["mean"].as_f64().unwrap() - mean).abs() < 1e-9);
    // The question made harder in Indonesian is flagged; its facility there is lower.
    let diffs = v["locale_differences"].as_array().unwrap();
    let flagged: Vec<&str> = diffs
        .iter()
        .filter(|d| d["flagged"] == true)
        .map(|d| d["key"].as_str().unwrap())
        .collect();
    assert_eq!(flagged, ["sync-collective"], "{diffs:?}");
    let by_locale = |l: &str| {
        v["locales"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["locale"] == l)
            .unwrap()
            .clone()
    };
    let facility_in = |l: &str| by_locale(l)["questions"][1]["facility"].as_f64().unwrap();
    assert!(facility_in("id") < facility_in("en") - 20.0);
    let per_locale: u64 = ["en", "bn", "id"]
        .iter()
        .map(|l| by_locale(l)["attempts"].as_u64().unwrap())
        .sum();
    assert_eq!(per_locale, 400);

    // For the independent check (.ci/run runs tests/stats/verify.py with numpy and scipy).
    write_stats_check(&app, &assignment, v, "analytics.json").await;
}

/// Writes what the API reported and the score matrix behind it (straight from the views) for
/// tests/stats/verify.py, which .ci/run runs with numpy and scipy.
async fn write_stats_check(app: &TestApp, assignment: &str, v: &Value, file: &str) {
    let rows: Vec<(Uuid, String, String, f64)> = sqlx::query_as(
        "SELECT a.attempt_id, a.locale, q.question_key, coalesce(r.points, 0)
           FROM analytics.attempts a
           CROSS JOIN analytics.questions q
           LEFT JOIN analytics.responses r ON r.attempt_id = a.attempt_id AND r.question_key = q.question_key
          WHERE a.assignment_id = $1::uuid AND q.quiz = 'data-parallelism' AND q.quiz_version = 1
          ORDER BY a.attempt_id, q.position",
    )
    .bind(assignment)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let mut scores: Vec<Vec<f64>> = Vec::new();
    let mut locales: Vec<String> = Vec::new();
    let mut last = None;
    for (attempt, locale, _, points) in rows {
        if last != Some(attempt) {
            scores.push(Vec::new());
            locales.push(locale);
            last = Some(attempt);
        }
        scores.last_mut().unwrap().push(points);
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("stats-check");
    std::fs::create_dir_all(&dir).unwrap();
    let fixture = json!({"scores": scores, "max": vec![1.0; 8], "locales": locales, "report": v});
    std::fs::write(
        dir.join(file),
        serde_json::to_string_pretty(&fixture).unwrap(),
    )
    .unwrap();
}

#[tokio::test]
async fn mantel_haenszel_flags_the_planted_translation_and_not_a_stronger_group() {
    let app = TestApp::spawn().await;
    let (teacher, _, assignment) = course_with_assignment(&app, json!({})).await;
    // Bengali learners are stronger; sync-collective is harder in Indonesian only.
    generate_with(&app, &assignment, 3000, 11, 1.5, Some(("bn", 0.8))).await;
    let report = analytics(&app, &teacher, &assignment, "").await;
    let v = &report["versions"][0];
    let by_locale = |l: &str| {
        v["locales"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["locale"] == l)
            .unwrap()["mean"]
            .as_f64()
            .unwrap()
    };
    assert!(by_locale("bn") > by_locale("en") + 8.0, "the groups differ");
    let diffs = v["locale_differences"].as_array().unwrap();
    // The plain chi-square mistakes the stronger group for easier questions.
    let chi_flagged = diffs.iter().filter(|d| d["flagged"] == true).count();
    assert!(chi_flagged >= 4, "{chi_flagged}");
    for d in diffs {
        let key = d["key"].as_str().unwrap();
        let pairs = d["mantel_haenszel"].as_array().unwrap();
        assert_eq!(pairs.len(), 3, "en-bn, en-id, bn-id");
        for pair in pairs {
            let focal_id = pair["reference"] == "id" || pair["focal"] == "id";
            let expected = if key == "sync-collective" && focal_id {
                "C"
            } else {
                "A"
            };
            assert_eq!(pair["ets_class"], expected, "{key}: {pair}");
            assert!(pair["note"].is_null(), "{pair}");
        }
        // Untranslated questions are English for everybody: labelled, not a translation effect.
        let en_bn = &pairs[0];
        assert_eq!(
            (en_bn["reference"].as_str(), en_bn["focal"].as_str()),
            (Some("en"), Some("bn"))
        );
        let translated = en_bn["focal_languages"][0] == "bn";
        assert_eq!(en_bn["same_language"], !translated, "{key}");
    }
    let sync = &diffs[1]["mantel_haenszel"];
    assert!(
        sync[1]["d_dif"].as_f64().unwrap() < -1.5,
        "harder for id: {sync}"
    );
    write_stats_check(&app, &assignment, v, "dif.json").await;
}

#[tokio::test]
async fn undefined_statistics_are_null_for_one_attempt_and_for_no_variance() {
    let app = TestApp::spawn().await;
    let (teacher, course, assignment) =
        course_with_assignment(&app, json!({"feedback": "on_finish"})).await;
    let learner = app.person("solo@example.org", "learner").await;
    // No attempt yet: everything undefined, nothing NaN.
    let empty = analytics(&app, &teacher, &assignment, "").await;
    assert_eq!(empty["versions"][0]["counts"]["counted"], 0);
    assert!(empty["versions"][0]["test"]["mean"].is_null());
    let res = post_as(
        &app,
        &teacher.access,
        &format!("/v1/courses/{course}/enrollments"),
        &json!({"email": learner.email}),
    )
    .await;
    expect_status(res, 201).await;
    // One attempt that answers one question right and leaves the rest unanswered.
    let attempt = learner
        .post(
            &format!("/v1/assignments/{assignment}/attempts"),
            &json!({}),
        )
        .await
        .status(201)
        .await;
    let q = &attempt["questions"][0];
    let id = attempt["id"].as_str().unwrap();
    let qid = q["id"].as_str().unwrap();
    let opt = q["options"][0]["id"].as_str().unwrap();
    learner
        .put(
            &format!("/v1/attempts/{id}/responses/{qid}"),
            &json!({"selected": [opt]}),
        )
        .await
        .status(200)
        .await;
    // An in-progress attempt is counted as started, not in the statistics.
    let report = analytics(&app, &teacher, &assignment, "").await;
    assert_eq!(report["versions"][0]["counts"]["in_progress"], 1);
    assert_eq!(report["versions"][0]["counts"]["counted"], 0);
    learner
        .post(&format!("/v1/attempts/{id}/finish"), &json!({}))
        .await
        .status(200)
        .await;
    // Not stale: the finished attempt shows at once.
    let report = analytics(&app, &teacher, &assignment, "").await;
    let v = &report["versions"][0];
    assert_eq!(v["counts"]["counted"], 1);
    let test = &v["test"];
    assert!(test["mean"].is_number());
    for field in [
        "standard_deviation",
        "skewness",
        "kurtosis",
        "cronbach_alpha",
        "error_ratio",
        "standard_error",
    ] {
        assert!(test[field].is_null(), "{field} with one attempt: {test}");
    }
    let q2 = &v["questions"][1];
    assert_eq!(q2["facility"], 0.0, "unanswered scores 0");
    assert_eq!(q2["responses"], 0);
    assert!(q2["discrimination_index"].is_null());
    assert!(!report.to_string().contains("NaN"));
}

#[tokio::test]
async fn all_finished_or_graded_attempts_can_be_chosen_and_filters_apply() {
    let app = TestApp::spawn().await;
    let (teacher, _, assignment) = course_with_assignment(&app, json!({})).await;
    generate(&app, &assignment, 30, 3).await;
    let all = analytics(&app, &teacher, &assignment, "?attempts=all&locale=bn").await;
    let bn: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM analytics.attempts WHERE assignment_id = $1::uuid AND locale = 'bn'",
    )
    .bind(&assignment)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(all["versions"][0]["counts"]["counted"], bn);
    assert_eq!(all["attempts"], "all");
    let paged = analytics(&app, &teacher, &assignment, "?offset=2&limit=3").await;
    let keys: Vec<&str> = paged["versions"][0]["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 3);
    assert_eq!(paged["versions"][0]["total_questions"], 8);
    let future = (Utc::now() + Duration::days(1))
        .to_rfc3339()
        .replace('+', "%2B");
    let none = analytics(&app, &teacher, &assignment, &format!("?from={future}")).await;
    assert_eq!(none["versions"][0]["counts"]["counted"], 0);
    let res = get_as(
        &app,
        &teacher.access,
        &format!("/v1/assignments/{assignment}/analytics?limit=100000"),
    )
    .await;
    assert_problem(res, 400, "invalid_query").await;
    let res = get_as(
        &app,
        &teacher.access,
        &format!("/v1/assignments/{assignment}/analytics?colour=red"),
    )
    .await;
    assert_problem(res, 400, "invalid_query").await;
}

#[tokio::test]
async fn only_the_courses_staff_see_analytics_and_exports() {
    let app = TestApp::spawn().await;
    let (teacher, _, assignment) = course_with_assignment(&app, json!({})).await;
    generate(&app, &assignment, 20, 5).await;
    let learner = app.person("nosy@example.org", "learner").await;
    let other = app.person("other-teacher@example.org", "instructor").await;
    let admin = app.person("root@example.org", "admin").await;
    for path in [
        "analytics",
        "analytics/responses.csv",
        "analytics/results.csv",
    ] {
        let path = format!("/v1/assignments/{assignment}/{path}");
        learner
            .get(&path)
            .await
            .problem(404, "assignment_not_found")
            .await;
        other
            .get(&path)
            .await
            .problem(404, "assignment_not_found")
            .await;
        assert_eq!(admin.get(&path).await.response().status(), 200);
        assert_eq!(get_as(&app, &teacher.access, &path).await.status(), 200);
        assert_problem(app.get(&path).await, 401, "unauthorized").await;
    }
    // Quiz analytics: learners are refused; an instructor sees only their own assignments,
    // an admin every assignment, practice included.
    learner
        .get("/v1/quizzes/data-parallelism/analytics")
        .await
        .problem(403, "forbidden")
        .await;
    let theirs = other
        .get("/v1/quizzes/data-parallelism/analytics")
        .await
        .status(200)
        .await;
    assert!(theirs["assignments"].as_array().unwrap().is_empty());
    let mine = expect_status(
        get_as(
            &app,
            &teacher.access,
            "/v1/quizzes/data-parallelism/analytics",
        )
        .await,
        200,
    )
    .await;
    assert_eq!(mine["assignments"], json!([assignment]));
    assert_eq!(mine["versions"][0]["counts"]["counted"], 20);
    let all = admin
        .get("/v1/quizzes/data-parallelism/analytics")
        .await
        .status(200)
        .await;
    assert_eq!(
        all["assignments"].as_array().unwrap().len(),
        2,
        "the course assignment and the practice one"
    );
}

#[tokio::test]
async fn the_csv_exports_stream_every_response_and_every_learner() {
    let app = TestApp::spawn().await;
    let (teacher, _, assignment) = course_with_assignment(&app, json!({})).await;
    let written = generate(&app, &assignment, 50, 11).await;
    let res = get_as(
        &app,
        &teacher.access,
        &format!("/v1/assignments/{assignment}/analytics/responses.csv"),
    )
    .await;
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let body = res.text().await.unwrap();
    let lines: Vec<&str> = body.lines().collect();
    assert!(lines[0].starts_with("attempt_id,user_id,attempt_number,locale"));
    assert_eq!(lines.len() as u64 - 1, written);
    let res = get_as(
        &app,
        &teacher.access,
        &format!("/v1/assignments/{assignment}/analytics/results.csv"),
    )
    .await;
    let body = res.text().await.unwrap();
    assert_eq!(body.lines().count(), 51);
    assert!(body.lines().nth(1).unwrap().contains("Synthetic learner"));
}

#[tokio::test]
async fn the_analytics_views_are_readable_by_the_read_only_role() {
    let app = TestApp::spawn().await;
    let (_, _, assignment) = course_with_assignment(&app, json!({})).await;
    generate(&app, &assignment, 10, 1).await;
    let mut tx = app.pool.begin().await.unwrap();
    sqlx::query("SET LOCAL ROLE quizd_analytics")
        .execute(&mut *tx)
        .await
        .unwrap();
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM analytics.attempts")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(n, 10);
    let options: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM analytics.options WHERE quiz = 'data-parallelism'",
    )
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    assert_eq!(options, 32);
    // Nothing outside the analytics schema, and nothing to write.
    assert!(
        sqlx::query("SELECT 1 FROM users")
            .execute(&mut *tx)
            .await
            .is_err()
    );
    tx.rollback().await.unwrap();
}

#[tokio::test]
async fn an_attempt_that_ran_out_of_time_counts_as_abandoned_and_with_what_it_answered() {
    let clock = quizd::clock::Clock::manual(Utc::now());
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let (teacher, course, assignment) =
        course_with_assignment(&app, json!({"time_limit_minutes": 5})).await;
    let learner = app.person("slow@example.org", "learner").await;
    let res = post_as(
        &app,
        &teacher.access,
        &format!("/v1/courses/{course}/enrollments"),
        &json!({"email": learner.email}),
    )
    .await;
    expect_status(res, 201).await;
    let attempt = learner
        .post(
            &format!("/v1/assignments/{assignment}/attempts"),
            &json!({}),
        )
        .await
        .status(201)
        .await;
    let (id, q) = (attempt["id"].as_str().unwrap(), &attempt["questions"][0]);
    let path = format!("/v1/attempts/{id}/responses/{}", q["id"].as_str().unwrap());
    learner
        .put(&path, &json!({"selected": [q["options"][0]["id"]]}))
        .await
        .status(200)
        .await;
    clock.advance(Duration::minutes(6));
    assert_eq!(
        quizd::attempts::finish_expired(&app.pool, clock.now())
            .await
            .unwrap(),
        1
    );
    let v = &analytics(&app, &teacher, &assignment, "").await["versions"][0];
    assert_eq!(v["counts"]["abandoned"], 1);
    assert_eq!(v["counts"]["finished"], 0);
    assert_eq!(v["counts"]["counted"], 1, "its answers count");
    assert_eq!(
        v["questions"][0]["responses"].as_u64().unwrap()
            + v["questions"][1]["responses"].as_u64().unwrap(),
        1
    );
}

/// Every row of an assignment's kept count tables that counts something, as text, in order.
async fn kept_tables(app: &TestApp, assignment: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT 'totals ' || t::text FROM item_totals t WHERE assignment_id = $1::uuid AND attempts <> 0
         UNION ALL
         SELECT 'cells ' || c::text FROM item_cells c WHERE assignment_id = $1::uuid AND attempts <> 0
         UNION ALL
         SELECT 'options ' || o::text FROM item_options o WHERE assignment_id = $1::uuid AND attempts <> 0
         UNION ALL
         SELECT 'seconds ' || s::text FROM item_seconds s WHERE assignment_id = $1::uuid AND attempts <> 0
         ORDER BY 1",
    )
    .bind(assignment)
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// Two reports agree: the same shape and strings, numbers within 1e-9 (relative above 1).
fn assert_same_report(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!((x - y).abs() <= 1e-9 * x.abs().max(1.0), "{at}: {x} vs {y}");
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: length");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                assert_same_report(x, y, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{at}: keys"
            );
            for (k, v) in x {
                assert_same_report(v, &y[k], &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

/// The report from the kept tables, and the one computed from the attempts themselves (a date
/// range that holds every attempt takes that path), for both counted sets: they must agree.
async fn assert_incremental_equals_from_scratch(app: &TestApp, who: &Person, assignment: &str) {
    for set in ["graded", "all"] {
        let kept = analytics(app, who, assignment, &format!("?attempts={set}")).await;
        let scratch = analytics(
            app,
            who,
            assignment,
            &format!("?attempts={set}&from=2000-01-01T00:00:00Z"),
        )
        .await;
        assert_same_report(&kept, &scratch, set);
    }
}

#[tokio::test]
async fn the_tables_kept_by_every_way_of_finishing_equal_a_rebuild_and_give_the_same_report() {
    let clock = quizd::clock::Clock::manual(Utc::now());
    let app = TestApp::spawn_with_clock(clock.clone()).await;
    let (teacher, course, assignment) = course_with_assignment(
        &app,
        json!({"time_limit_minutes": 5, "attempts_allowed": 3, "grading_method": "highest"}),
    )
    .await;
    // The first report starts the tables of an assignment nobody has finished yet.
    analytics(&app, &teacher, &assignment, "").await;
    generate(&app, &assignment, 120, 11).await;
    let mut learners = Vec::new();
    for i in 0..3 {
        let learner = app
            .person(&format!("kept-{i}@example.org"), "learner")
            .await;
        let res = post_as(
            &app,
            &teacher.access,
            &format!("/v1/courses/{course}/enrollments"),
            &json!({"email": learner.email}),
        )
        .await;
        expect_status(res, 201).await;
        learners.push(learner);
    }
    // Starts an attempt and answers its first `answers` questions with option `option`.
    let take = |who: usize, answers: usize, option: usize| {
        let (app, learners, assignment) = (&app, &learners, &assignment);
        async move {
            let attempt = expect_status(
                post_as(
                    app,
                    &learners[who].access,
                    &format!("/v1/assignments/{assignment}/attempts"),
                    &json!({}),
                )
                .await,
                201,
            )
            .await;
            let id = attempt["id"].as_str().unwrap().to_string();
            for q in attempt["questions"]
                .as_array()
                .unwrap()
                .iter()
                .take(answers)
            {
                let path = format!("/v1/attempts/{id}/responses/{}", q["id"].as_str().unwrap());
                let options = q["options"].as_array().unwrap();
                let body = json!({"selected": [options[option % options.len()]["id"]]});
                expect_status(put_as(app, &learners[who].access, &path, &body).await, 200).await;
            }
            id
        }
    };
    let finish = |who: usize, id: String| {
        let (app, learners) = (&app, &learners);
        async move {
            let path = format!("/v1/attempts/{id}/finish");
            expect_status(
                post_as(app, &learners[who].access, &path, &json!({})).await,
                200,
            )
            .await;
        }
    };
    // Learner 0 finishes three attempts: under `highest` the graded one changes as they do.
    for (answers, option) in [(2, 1), (8, 0), (4, 2)] {
        let id = take(0, answers, option).await;
        finish(0, id).await;
    }
    // Learner 1 runs out of time (the sweep finishes it), then finishes a better attempt.
    take(1, 3, 0).await;
    clock.advance(Duration::minutes(6));
    assert_eq!(
        quizd::attempts::finish_expired(&app.pool, clock.now())
            .await
            .unwrap(),
        1
    );
    let id = take(1, 8, 0).await;
    finish(1, id).await;
    // Learner 2 is in an attempt when the teacher closes the assignment now.
    take(2, 5, 0).await;
    let report = analytics(&app, &teacher, &assignment, "?attempts=all").await;
    assert_eq!(report["versions"][0]["counts"]["in_progress"], 1);
    expect_status(
        post_as(
            &app,
            &teacher.access,
            &format!("/v1/assignments/{assignment}/close"),
            &json!({}),
        )
        .await,
        200,
    )
    .await;

    let v = &analytics(&app, &teacher, &assignment, "?attempts=all").await["versions"][0];
    assert_eq!(v["counts"]["counted"], 120 + 3 + 2 + 1);
    assert_eq!(v["counts"]["abandoned"], 1);
    assert_eq!(v["counts"]["in_progress"], 0);
    let v = &analytics(&app, &teacher, &assignment, "").await["versions"][0];
    assert_eq!(
        v["counts"]["counted"],
        120 + 3,
        "one graded attempt per learner"
    );
    assert_incremental_equals_from_scratch(&app, &teacher, &assignment).await;

    // What the finishes kept is what a rebuild from the attempts writes.
    let kept = kept_tables(&app, &assignment).await;
    assert!(kept.len() > 50);
    sqlx::query("SELECT item_sums_rebuild($1::uuid)")
        .bind(&assignment)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(kept, kept_tables(&app, &assignment).await);

    // A change of grading method: the next report rebuilds the graded set.
    let res = patch_as(
        &app,
        &teacher.access,
        &format!("/v1/assignments/{assignment}"),
        &json!({"grading_method": "first"}),
    )
    .await;
    expect_status(res, 200).await;
    assert_incremental_equals_from_scratch(&app, &teacher, &assignment).await;
}

/// As if the assignment's attempts had finished before migration 0014: no tables, no state.
async fn forget_sums(app: &TestApp, assignment: &str) {
    for table in [
        "item_totals",
        "item_cells",
        "item_options",
        "item_seconds",
        "item_graded",
        "item_sums_state",
    ] {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DELETE FROM {table} WHERE assignment_id = $1::uuid"
        )))
        .bind(assignment)
        .execute(&app.pool)
        .await
        .unwrap();
    }
}

#[tokio::test]
async fn attempts_finished_before_the_tables_existed_are_counted_at_the_first_report() {
    let app = TestApp::spawn().await;
    let (teacher, _, assignment) = course_with_assignment(&app, json!({})).await;
    generate(&app, &assignment, 60, 5).await;
    let before = analytics(&app, &teacher, &assignment, "").await;
    forget_sums(&app, &assignment).await;
    // Attempts finishing meanwhile are left to the rebuild, not counted twice.
    generate(&app, &assignment, 10, 6).await;
    let after = analytics(&app, &teacher, &assignment, "").await;
    assert_eq!(after["versions"][0]["counts"]["counted"], 70);
    assert_eq!(before["versions"][0]["counts"]["counted"], 60);
    assert_incremental_equals_from_scratch(&app, &teacher, &assignment).await;
    // Rebuilding again changes nothing.
    let kept = kept_tables(&app, &assignment).await;
    sqlx::query("SELECT item_sums_rebuild($1::uuid)")
        .bind(&assignment)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(kept, kept_tables(&app, &assignment).await);
}

#[tokio::test]
async fn the_start_up_backfill_rebuilds_stale_tables_ahead_of_the_first_report() {
    let app = TestApp::spawn().await;
    let (teacher, _, assignment) = course_with_assignment(&app, json!({})).await;
    generate(&app, &assignment, 40, 7).await;
    let kept = kept_tables(&app, &assignment).await;
    forget_sums(&app, &assignment).await;
    // What `quizd serve` runs once at start (background::Loops::SERVE): every stale
    // assignment, and nothing the second time.
    let rebuilt = quizd::analytics::rebuild_stale_sums(&app.pool, None, None)
        .await
        .unwrap();
    assert!(rebuilt >= 1, "{rebuilt}");
    assert_eq!(kept, kept_tables(&app, &assignment).await);
    let again = quizd::analytics::rebuild_stale_sums(&app.pool, None, None)
        .await
        .unwrap();
    assert_eq!(again, 0);
    assert_incremental_equals_from_scratch(&app, &teacher, &assignment).await;
}

#[tokio::test]
async fn with_the_replica_down_analytics_and_exports_answer_from_the_primary() {
    // A replica nobody listens for: port 9 on loopback (discard) refuses connections.
    let app = TestApp::spawn_configured(|state| {
        let down = sqlx::postgres::PgConnectOptions::new()
            .host("127.0.0.1")
            .port(9)
            .username("quizd");
        state.analytics_replica = Some(quizd::analytics::replica::Replica::new(
            quizd::db::pool_options(2).connect_lazy_with(down),
        ));
    })
    .await;
    let (teacher, _, assignment) = course_with_assignment(&app, json!({})).await;
    let written = generate(&app, &assignment, 20, 5).await;
    for _ in 0..2 {
        let report = analytics(&app, &teacher, &assignment, "?attempts=all").await;
        assert_eq!(
            report["versions"][0]["counts"]["finished"].as_u64(),
            Some(20)
        );
    }
    let res = get_as(
        &app,
        &teacher.access,
        &format!("/v1/assignments/{assignment}/analytics/responses.csv"),
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    let body = res.text().await.unwrap();
    assert_eq!(body.lines().count() as u64 - 1, written);
}
