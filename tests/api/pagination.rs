//! Cursor pagination over HTTP: every list the OpenAPI document gives a `cursor` is walked
//! page by page and must give exactly what one page of its maximum gives, in the same order, each
//! `next` also in `Link`; a cursor from another list, another reader's list or altered by hand
//! is refused, and so is a `limit` outside 1 to its stated maximum.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::grades::{course, finish, start};
use crate::support::session::Session;
use crate::support::{TestApp, expect_status};

fn quiz(slug: &str) -> String {
    format!(
        "slug = \"{slug}\"\ntitle = \"Quiz {slug}\"\n\n[[questions]]\nkey = \"q1\"\n\
         kind = \"true_false\"\nprompt = \"True?\"\nexplanation = \"Yes.\"\nanswer = true\n"
    )
}

/// Walks a list with pages of `limit`: its items in order, and the pages' count.
async fn walk(who: &Session<'_>, path: &str, key: &str, limit: usize) -> Vec<Value> {
    let mut items = Vec::new();
    let mut url = format!("{path}?limit={limit}");
    for _ in 0..100 {
        let res = who.get(&url).await.response();
        let link = res
            .headers()
            .get("link")
            .map(|l| l.to_str().unwrap().to_string());
        let page = expect_status(res, 200).await;
        let got = page[key].as_array().unwrap();
        assert!(got.len() <= limit, "{url}: {} items", got.len());
        items.extend(got.iter().cloned());
        match page["next"].as_str() {
            None => {
                assert!(link.is_none(), "{url}: a Link on the last page");
                return items;
            }
            Some(next) => {
                assert!(!got.is_empty(), "{url}: an empty page before the last");
                let next_url = format!("{path}?limit={limit}&cursor={next}");
                assert_eq!(
                    link.as_deref(),
                    Some(format!("<{next_url}>; rel=\"next\"").as_str()),
                    "{url}"
                );
                url = next_url;
            }
        }
    }
    panic!("{path}: more than 100 pages");
}

#[tokio::test]
async fn every_list_walks_page_by_page_to_exactly_its_items_and_refuses_a_foreign_cursor() {
    let app = TestApp::spawn().await;
    let learners = [
        "l1@example.org",
        "l2@example.org",
        "l3@example.org",
        "l4@example.org",
        "l5@example.org",
    ];
    let c = course(&app, "teacher@example.org", &learners).await;
    let t = &c.teacher;
    for i in 0..3 {
        let own = quiz(&format!("own-{i}"));
        t.send_quiz(None, &own).await.status(201).await;
        let body = json!({"title": format!("Another course {i}")});
        t.post("/v1/courses", &body).await.status(201).await;
    }
    let mut assignments = Vec::new();
    for i in 0..4 {
        let path = format!("/v1/courses/{}/assignments", c.id);
        let body = json!({"quiz": format!("own-{}", i % 3), "title": format!("Exam {i}")});
        let a = t.post(&path, &body).await.status(201).await;
        assignments.push(a["id"].as_str().unwrap().to_string());
    }
    let first = &c.learners[0];
    for a in &assignments {
        let attempt = start(first, a).await;
        finish(first, &attempt).await;
    }
    for l in &c.learners[1..] {
        let attempt = start(l, &assignments[0]).await;
        let done = finish(l, &attempt).await;
        // A grade set by hand: an entry in the audit log.
        let path = format!("/v1/attempts/{}/grade", done["id"].as_str().unwrap());
        let body = json!({"points": 0.5, "reason": "Marked on paper."});
        t.put(&path, &body).await.status(200).await;
    }
    // Addresses with no account: pending invitations.
    for i in 0..3 {
        let path = format!("/v1/courses/{}/enrollments", c.id);
        let body = json!({"email": format!("new{i}@example.org")});
        t.post(&path, &body).await.status(202).await;
    }
    let admin = app.admin().await;
    let course_id = c.id.as_str();
    let a0 = assignments[0].as_str();
    // Who reads each list, at which path, and where its items are.
    let lists: BTreeMap<&str, (&Session, String, &str)> = BTreeMap::from([
        ("/v1/quizzes", (t, "/v1/quizzes".to_string(), "items")),
        ("/v1/courses", (t, "/v1/courses".to_string(), "items")),
        (
            "/v1/courses/{id}/enrollments",
            (t, format!("/v1/courses/{course_id}/enrollments"), "items"),
        ),
        (
            "/v1/courses/{id}/assignments",
            (t, format!("/v1/courses/{course_id}/assignments"), "items"),
        ),
        (
            "/v1/courses/{id}/gradebook",
            (t, format!("/v1/courses/{course_id}/gradebook"), "learners"),
        ),
        (
            "/v1/assignments",
            (first, "/v1/assignments".to_string(), "items"),
        ),
        (
            "/v1/assignments/{id}/attempts",
            (t, format!("/v1/assignments/{a0}/attempts"), "items"),
        ),
        (
            "/v1/me/attempts",
            (first, "/v1/me/attempts".to_string(), "items"),
        ),
        (
            "/v1/courses/{id}/invitations",
            (t, format!("/v1/courses/{course_id}/invitations"), "items"),
        ),
        ("/v1/audit", (&admin, "/v1/audit".to_string(), "items")),
    ]);

    let doc = app.get_json("/openapi.json", 200).await;
    let mut walked = Vec::new();
    for (template, item) in doc["paths"].as_object().unwrap() {
        let Some(params) = item["get"]["parameters"].as_array() else {
            continue;
        };
        if !params
            .iter()
            .any(|p| p["name"] == "cursor" && p["in"] == "query")
        {
            continue;
        }
        let max = params
            .iter()
            .find(|p| p["name"] == "limit")
            .and_then(|p| p["schema"]["maximum"].as_u64())
            .unwrap_or_else(|| panic!("{template}: `limit` states no maximum"));
        let (who, path, key) = lists
            .get(template.as_str())
            .unwrap_or_else(|| panic!("{template} takes a cursor but this test does not walk it"));
        let whole = who
            .get(&format!("{path}?limit={max}"))
            .await
            .status(200)
            .await;
        assert!(whole["next"].is_null(), "{template}: one page holds it all");
        let all = whole[*key].as_array().unwrap().clone();
        assert!(
            all.len() >= 3,
            "{template}: {} items, too few to page",
            all.len()
        );
        for limit in [1, 2] {
            assert_eq!(
                walk(who, path, key, limit).await,
                all,
                "{template} in pages of {limit}"
            );
        }
        // A cursor from this list, read by another list, altered, or with a bad limit.
        let page = who.get(&format!("{path}?limit=1")).await.status(200).await;
        let cursor = page["next"].as_str().unwrap().to_string();
        let mut altered = cursor.clone().into_bytes();
        let last = altered.len() - 3;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        for bad in [altered.as_str(), "not-a-cursor"] {
            let res = who.get(&format!("{path}?cursor={bad}")).await;
            res.problem(422, "invalid_cursor").await;
        }
        for limit in [0, max + 1] {
            let res = who.get(&format!("{path}?limit={limit}")).await;
            res.problem(400, "invalid_limit").await;
        }
        walked.push((template.clone(), path.clone(), cursor, *who));
    }
    assert_eq!(walked.len(), lists.len(), "every list is in the document");
    // Each list's cursor is refused by every other list (and by another reader's).
    for (template, _, cursor, _) in &walked {
        for (other, path, _, who) in &walked {
            if other != template {
                let res = who.get(&format!("{path}?cursor={cursor}")).await;
                res.problem(422, "invalid_cursor").await;
            }
        }
    }
    let (_, _, mine, _) = walked.iter().find(|w| w.0 == "/v1/me/attempts").unwrap();
    let other = &c.learners[1];
    let res = other.get(&format!("/v1/me/attempts?cursor={mine}")).await;
    res.problem(422, "invalid_cursor").await;
}

#[tokio::test]
async fn a_grade_counts_every_attempt_of_its_learner_whichever_page_lists_them() {
    let app = TestApp::spawn().await;
    let c = course(&app, "teacher@example.org", &["l1@example.org"]).await;
    let t = &c.teacher;
    t.send_quiz(None, &quiz("graded")).await.status(201).await;
    let path = format!("/v1/courses/{}/assignments", c.id);
    let body = json!({"quiz": "graded", "policy": {"grading_method": "highest"}});
    let a = t.post(&path, &body).await.status(201).await;
    let a = a["id"].as_str().unwrap();
    let learner = &c.learners[0];
    // The first attempt right, the second unanswered.
    let right = start(learner, a).await;
    let q = &right["questions"][0];
    let true_id = q["options"][0]["id"].clone();
    let answer = format!(
        "/v1/attempts/{}/responses/{}",
        right["id"].as_str().unwrap(),
        q["id"].as_str().unwrap()
    );
    let body = json!({"selected": [true_id]});
    learner.put(&answer, &body).await.status(200).await;
    finish(learner, &right).await;
    let empty = start(learner, a).await;
    finish(learner, &empty).await;
    // Newest first: the page of one lists the unanswered attempt, with the highest grade.
    let page = learner
        .get("/v1/me/attempts?limit=1")
        .await
        .status(200)
        .await;
    assert_eq!(page["items"][0]["id"], empty["id"]);
    assert_eq!(page["grades"][0]["finished_attempts"], 2);
    // True comes first, and is right: the first attempt scored 100 %.
    assert_eq!(page["grades"][0]["percentage"], 100.0);
}
