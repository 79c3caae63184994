//! Deep Linking: the content picker, its signed response, and the placed quiz's grades.

use serde_json::{Value, json};

use crate::support::session::{Reply, Session};
use crate::support::{assert_problem, expect_status};

use super::{
    LEARNER, attr, expect_html, form_action, instructor, launch_session, learner, run_launch,
    setup, take_quiz,
};

/// `who` answers the Deep Linking request `deep_link` with these items.
async fn answer_deep_link(who: &Session<'_>, deep_link: &str, items: Value) -> Reply {
    let body = json!({"deep_link_id": deep_link, "items": items});
    who.post("/v1/lti/deep-link", &body).await
}

#[tokio::test]
async fn deep_linking_places_a_quiz_whose_grades_reach_its_line_item() {
    let lti = setup().await;
    let mut dl = instructor("teacher-dl");
    dl["message_type"] = json!("deep_linking");
    dl["dl_data"] = json!("opaque-7");
    dl.as_object_mut().unwrap().remove("resource_link");
    dl.as_object_mut().unwrap().remove("custom");
    let session = launch_session(&lti, &dl).await;
    assert_eq!(session["destination"]["kind"], "deep_link");
    let teacher = lti.signed_in(&session);
    let deep_link = session["destination"]["deep_link_id"]
        .as_str()
        .unwrap()
        .to_string();

    // One item only unless the platform accepts several (this one does), and real quizzes.
    let no_such_quiz = json!([{"quiz": "no-such-quiz"}]);
    answer_deep_link(&teacher, &deep_link, no_such_quiz)
        .await
        .problem(422, "quiz_not_found")
        .await;
    // Only the instructor who launched it may answer it.
    let other = lti.app.person("other@lti.example", "instructor").await;
    let sampler = json!([{"quiz": "kinds-sampler"}]);
    answer_deep_link(&other, &deep_link, sampler.clone())
        .await
        .problem(404, "deep_link_not_found")
        .await;

    let titled = json!([{"quiz": "kinds-sampler", "title": "Question kinds"}]);
    let answer = answer_deep_link(&teacher, &deep_link, titled)
        .await
        .status(200)
        .await;
    let return_url = answer["return_url"].as_str().unwrap();
    assert_eq!(return_url, lti.platform.url("/deep_link_return"));
    // Answered once only.
    answer_deep_link(&teacher, &deep_link, sampler)
        .await
        .problem(409, "deep_link_closed")
        .await;

    // The browser posts the signed response to the platform, which verifies it with quizd's keys.
    let res = lti
        .platform
        .client
        .post(return_url)
        .form(&[("JWT", answer["jwt"].as_str().unwrap())])
        .send()
        .await
        .unwrap();
    expect_status(res, 200).await;
    let rec = lti.platform.recorded().await;
    let response = &rec["deep_link_responses"][0];
    assert_eq!(response["data"], "opaque-7");
    let item = &response["items"][0];
    assert_eq!(item["type"], "ltiResourceLink");
    assert_eq!(item["title"], "Question kinds");
    assert_eq!(item["url"], lti.app.url("/v1/lti/launch"));
    assert_eq!(item["custom"]["quiz"], "kinds-sampler");
    assert_eq!(item["lineItem"]["resourceId"], "kinds-sampler");
    assert!(item["lineItem"]["scoreMaximum"].as_f64().unwrap() > 0.0);
    let jwks = lti
        .app
        .anonymous()
        .get("/.well-known/jwks.json")
        .await
        .status(200)
        .await;
    assert_eq!(response["kid"], jwks["keys"][0]["kid"]);

    // A learner launches the placed link; the grade reaches the line item the platform made.
    let lineitem = item["lineitem_url"].as_str().unwrap();
    let mut s = learner("learner-dl");
    s["resource_link"] = json!({"id": "rl-from-dl", "title": item["title"]});
    s["custom"] = item["custom"].clone();
    s["lineitem"] = json!(lineitem);
    s["target_link_uri"] = item["url"].clone();
    let session = launch_session(&lti, &s).await;
    let assignment = session["destination"]["assignment_id"].as_str().unwrap();
    let finished = take_quiz(&lti.signed_in(&session), assignment).await;
    let scores = lti.platform.scores(1).await;
    assert_eq!(scores[0]["lineitem"], lineitem.rsplit('/').next().unwrap());
    assert_eq!(scores[0]["userId"], "learner-dl");
    assert_eq!(
        scores[0]["scoreMaximum"].as_f64().unwrap(),
        finished["result"]["max_score"].as_f64().unwrap()
    );

    // With Accept: text/html the answer is a page that posts itself to the platform.
    let session = launch_session(&lti, &dl).await;
    let res = lti
        .signed_in(&session)
        .request(reqwest::Method::POST, "/v1/lti/deep-link")
        .header("accept", "text/html")
        .json(&json!({"deep_link_id": session["destination"]["deep_link_id"], "items": []}))
        .send()
        .await
        .unwrap();
    let csp = res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains(&format!("frame-ancestors {}", lti.platform.base)),
        "{csp}"
    );
    let page = expect_html(res, 200).await;
    assert_eq!(form_action(&page), lti.platform.url("/deep_link_return"));
    assert!(attr(&page, "JWT").split('.').count() == 3);

    // Deep Linking is for those who teach.
    let mut dl_learner = dl.clone();
    dl_learner["roles"] = json!([LEARNER]);
    let flow = run_launch(&lti, &dl_learner).await;
    assert_problem(flow.response, 403, "lti_forbidden_role").await;
}

#[tokio::test]
async fn the_content_picker_reads_its_request_and_returns_only_the_response_quizd_signed() {
    let lti = setup().await;
    let mut dl = instructor("teacher-picker");
    dl["message_type"] = json!("deep_linking");
    dl.as_object_mut().unwrap().remove("resource_link");
    dl.as_object_mut().unwrap().remove("custom");
    let session = launch_session(&lti, &dl).await;
    let teacher = lti.signed_in(&session);
    let id = session["destination"]["deep_link_id"]
        .as_str()
        .unwrap()
        .to_string();
    let request = format!("/v1/lti/deep-link/{id}");

    // The picker reads what the platform accepts; nobody else reads the request.
    let view = teacher.get(&request).await.status(200).await;
    assert_eq!(view["accept_multiple"], true);
    assert_eq!(view["answered"], false);
    let other = lti
        .app
        .person("picker-other@lti.example", "instructor")
        .await;
    other
        .get(&request)
        .await
        .problem(404, "deep_link_not_found")
        .await;
    // The catalogue gives each quiz's points, the line item's maximum.
    let quiz = teacher.get("/v1/quizzes").await.status(200).await["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["slug"] == "kinds-sampler")
        .cloned()
        .unwrap();
    let max_points = quiz["max_points"].as_f64().unwrap();
    assert!(max_points > 0.0);

    let relay = |jwt: String| {
        let url = lti.app.url(&format!("/v1/lti/deep-link/{id}/return"));
        async move {
            reqwest::Client::new()
                .post(url)
                .form(&[("JWT", jwt)])
                .send()
                .await
                .unwrap()
        }
    };
    // Before it is answered, the return page forwards nothing.
    assert_problem(relay("a.b.c".into()).await, 404, "deep_link_not_found").await;
    let both = json!([{"quiz": "kinds-sampler"}, {"quiz": "data-parallelism"}]);
    let answer = answer_deep_link(&teacher, &id, both)
        .await
        .status(200)
        .await;
    let view = teacher.get(&request).await.status(200).await;
    assert_eq!(view["answered"], true);
    // Any other token, even one quizd signed for another request, is refused.
    let jwt = answer["jwt"].as_str().unwrap().to_string();
    let forged = format!("{jwt}x");
    assert_problem(relay(forged).await, 404, "deep_link_not_found").await;
    // The response itself: a page that posts it to the return URL, with a strict policy.
    let res = relay(jwt.clone()).await;
    let csp = res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert!(csp.contains("script-src 'sha256-"), "{csp}");
    let page = expect_html(res, 200).await;
    assert_eq!(form_action(&page), lti.platform.url("/deep_link_return"));
    assert_eq!(attr(&page, "JWT"), jwt);
    // The platform takes it: both quizzes, the line item with the catalogue's points.
    let res = lti
        .platform
        .client
        .post(form_action(&page))
        .form(&[("JWT", attr(&page, "JWT"))])
        .send()
        .await
        .unwrap();
    expect_status(res, 200).await;
    let rec = lti.platform.recorded().await;
    let items = rec["deep_link_responses"][0]["items"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["custom"]["quiz"], "kinds-sampler");
    assert_eq!(
        items[0]["lineItem"]["scoreMaximum"].as_f64().unwrap(),
        max_points
    );
}
