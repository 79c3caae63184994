//! The roster from the LMS (NRPS), and an archived course that takes no launch or sync.

use serde_json::json;

use crate::support::assert_problem;

use super::{INSTRUCTOR, LEARNER, instructor, launch_session, learner, run_launch, setup};

#[tokio::test]
async fn the_roster_from_the_lms_shows_who_has_not_started() {
    let lti = setup().await;
    let teacher = launch_session(&lti, &instructor("teacher-nrps")).await;
    let course = teacher["destination"]["course_id"]
        .as_str()
        .unwrap()
        .to_string();
    let assignment = teacher["destination"]["assignment_id"]
        .as_str()
        .unwrap()
        .to_string();
    let started = launch_session(&lti, &learner("learner-a")).await;
    let learner_a = lti.signed_in(&started);
    let path = format!("/v1/assignments/{assignment}/attempts");
    learner_a.post(&path, &json!({})).await.status(201).await;
    lti.platform
        .control(json!({"roster": {"ctx-1": [
            {"user_id": "teacher-nrps", "roles": [INSTRUCTOR], "name": "Teacher teacher-nrps"},
            {"user_id": "learner-a", "roles": [LEARNER], "name": "Learner learner-a"},
            {"user_id": "learner-b", "roles": [LEARNER], "name": "Bea Never-Launched"},
            {"user_id": "learner-c", "roles": [LEARNER], "name": "Cy Dropped", "status": "Inactive"},
        ]}}))
        .await;
    let teacher_nrps = lti.signed_in(&teacher);
    let roster = teacher_nrps
        .get(&format!(
            "/v1/lti/courses/{course}/roster?assignment={assignment}"
        ))
        .await
        .status(200)
        .await;
    let members = roster["members"].as_array().unwrap();
    assert_eq!(members.len(), 4);
    let b = members
        .iter()
        .find(|m| m["lti_user_id"] == "learner-b")
        .unwrap();
    assert_eq!(b["display_name"], "Bea Never-Launched");
    assert_eq!(b["attempts_started"], 0);
    let a = members
        .iter()
        .find(|m| m["lti_user_id"] == "learner-a")
        .unwrap();
    assert_eq!(a["attempts_started"], 1);
    assert_eq!(a["user_id"], started["user_id"]);
    assert_eq!(roster["not_started"], json!([b["user_id"]]));
    // The never-launched learner is now enrolled; the inactive one is not.
    let enrolled = teacher_nrps
        .get(&format!("/v1/courses/{course}/enrollments"))
        .await
        .status(200)
        .await;
    let names: Vec<&str> = enrolled["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["display_name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"Bea Never-Launched"), "{names:?}");
    assert!(!names.contains(&"Cy Dropped"), "{names:?}");
    // Learners may not.
    learner_a
        .get(&format!("/v1/lti/courses/{course}/roster"))
        .await
        .problem(403, "forbidden")
        .await;
}

#[tokio::test]
async fn an_archived_course_takes_no_launch_and_no_roster_sync() {
    let lti = setup().await;
    let session = launch_session(&lti, &instructor("teacher-1")).await;
    let teacher = lti.signed_in(&session);
    let course = session["destination"]["course_id"].as_str().unwrap();
    teacher
        .patch(&format!("/v1/courses/{course}"), &json!({"archived": true}))
        .await
        .status(200)
        .await;
    let flow = run_launch(&lti, &learner("student-1")).await;
    assert_problem(flow.response, 409, "course_archived").await;
    let enrolled: i64 = sqlx::query_scalar("SELECT count(*) FROM enrollments WHERE course_id = $1")
        .bind(uuid::Uuid::parse_str(course).unwrap())
        .fetch_one(&lti.app.pool)
        .await
        .unwrap();
    assert_eq!(enrolled, 1, "only the instructor, as before");
    teacher
        .get(&format!("/v1/lti/courses/{course}/roster"))
        .await
        .problem(409, "course_archived")
        .await;
}
