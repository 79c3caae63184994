//! Grade passback (AGS): failed deliveries shown to admins and retried, line items created.

use serde_json::{Value, json};

use crate::support::session::Session;
use crate::support::wait_until;

use super::{launch_session, learner, setup, take_quiz};

#[tokio::test]
async fn a_failed_delivery_is_visible_to_admins_and_retried() {
    let lti = setup().await;
    lti.platform.control(json!({"fail_scores": 1})).await;
    let session = launch_session(&lti, &learner("learner-retry")).await;
    let learner_1 = lti.signed_in(&session);
    let assignment = session["destination"]["assignment_id"].as_str().unwrap();
    take_quiz(&learner_1, assignment).await;
    let admin = lti.admin();
    let failed = first_delivery(&admin, "failed").await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["tries"], 1);
    assert!(
        failed["last_error"].as_str().unwrap().contains("500"),
        "{failed}"
    );
    assert!(failed["next_attempt_at"].is_string());
    // Learners and instructors do not see deliveries.
    learner_1
        .get("/v1/lti/deliveries")
        .await
        .problem(403, "forbidden")
        .await;

    let id = failed["id"].as_i64().unwrap();
    let retry = format!("/v1/lti/deliveries/{id}/retry");
    admin.post(&retry, &json!({})).await.status(202).await;
    let scores = lti.platform.scores(1).await;
    assert_eq!(scores[0]["userId"], "learner-retry");
    let delivered = first_delivery(&admin, "delivered").await;
    assert_eq!(delivered["id"], id);
    admin
        .post(&retry, &json!({}))
        .await
        .problem(409, "delivery_done")
        .await;
}

/// The first of the grade deliveries with this status, as an admin lists them, once there is
/// one.
async fn first_delivery(admin: &Session<'_>, status: &str) -> Value {
    let path = &format!("/v1/lti/deliveries?status={status}");
    let list = wait_until(
        &format!("a {status} delivery"),
        || async move { admin.get(path).await.status(200).await },
        |list| !list["items"].as_array().unwrap().is_empty(),
    )
    .await;
    list["items"][0].clone()
}

#[tokio::test]
async fn a_line_item_is_created_when_the_platform_gives_only_the_container() {
    let lti = setup().await;
    let mut s = learner("learner-container");
    s["ags"] = json!("container");
    s["resource_link"] = json!({"id": "rl-container", "title": "Container quiz"});
    let session = launch_session(&lti, &s).await;
    let assignment = session["destination"]["assignment_id"].as_str().unwrap();
    take_quiz(&lti.signed_in(&session), assignment).await;
    let scores = lti.platform.scores(1).await;
    let rec = lti.platform.recorded().await;
    let item = &rec["lineitems"][scores[0]["lineitem"].as_str().unwrap()];
    assert_eq!(item["resourceLinkId"], "rl-container");
    assert_eq!(item["label"], "Container quiz");
}
