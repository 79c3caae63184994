//! Launches quizd refuses, each with a problem that says why: tampered tokens, states and
//! cookies, and service URLs off the platform.

use serde_json::{Value, json};

use crate::support::assert_problem;

use super::{
    LEARNER, assert_problem_named, cookie_of, launch_code, learner, location, post_launch,
    run_launch, run_launch_until_form, setup,
};

/// Every launch here must be refused, with a problem and a code that says why.
#[tokio::test]
async fn tampered_launches_are_refused_with_a_clear_error() {
    let lti = setup().await;
    let launch_url = lti.app.url("/v1/lti/launch");
    let remove = |claim: &str| json!({"tamper": {"remove": [claim]}});
    let set = |claim: &str, v: Value| json!({"tamper": {"set": {claim: v}}});
    let dep = "https://purl.imsglobal.org/spec/lti/claim/deployment_id";
    let mt = "https://purl.imsglobal.org/spec/lti/claim/message_type";
    let ver = "https://purl.imsglobal.org/spec/lti/claim/version";
    let roles = "https://purl.imsglobal.org/spec/lti/claim/roles";
    let target = "https://purl.imsglobal.org/spec/lti/claim/target_link_uri";
    let link = "https://purl.imsglobal.org/spec/lti/claim/resource_link";
    let context = "https://purl.imsglobal.org/spec/lti/claim/context";
    let cases: Vec<(&str, Value, u16, &str)> = vec![
        ("no iss", remove("iss"), 400, "lti_claim_missing"),
        ("no aud", remove("aud"), 400, "lti_claim_missing"),
        ("no exp", remove("exp"), 400, "lti_claim_missing"),
        ("no iat", remove("iat"), 400, "lti_claim_missing"),
        ("no nonce", remove("nonce"), 400, "lti_claim_missing"),
        ("no sub", remove("sub"), 400, "lti_claim_missing"),
        ("no deployment_id", remove(dep), 400, "lti_claim_missing"),
        ("no message_type", remove(mt), 400, "lti_claim_missing"),
        ("no version", remove(ver), 400, "lti_claim_missing"),
        ("no roles", remove(roles), 400, "lti_claim_missing"),
        (
            "no target_link_uri",
            remove(target),
            400,
            "lti_claim_missing",
        ),
        ("no resource_link", remove(link), 400, "lti_claim_missing"),
        ("no context", remove(context), 400, "lti_claim_missing"),
        (
            "wrong iss",
            set("iss", json!("https://evil.example")),
            401,
            "lti_wrong_issuer",
        ),
        (
            "wrong aud",
            set("aud", json!("another-tool")),
            401,
            "lti_wrong_audience",
        ),
        (
            "wrong azp",
            set("azp", json!("another-tool")),
            401,
            "lti_wrong_audience",
        ),
        (
            "wrong deployment",
            set(dep, json!("deployment-9")),
            401,
            "lti_unknown_deployment",
        ),
        (
            "wrong message type",
            set(mt, json!("LtiSubmissionReviewRequest")),
            400,
            "lti_wrong_message_type",
        ),
        (
            "wrong version",
            set(ver, json!("1.1.0")),
            400,
            "lti_wrong_version",
        ),
        (
            "roles not a list",
            set(roles, json!(LEARNER)),
            400,
            "lti_claim_invalid",
        ),
        (
            "resource link without id",
            set(link, json!({"title": "x"})),
            400,
            "lti_claim_missing",
        ),
        (
            "another target link",
            set(target, json!("https://elsewhere.example/launch")),
            400,
            "lti_target_link_mismatch",
        ),
        (
            "another nonce",
            set("nonce", json!("a-nonce-quizd-never-sent")),
            401,
            "lti_nonce_mismatch",
        ),
        (
            "expired",
            json!({"tamper": {"exp_offset": -3600, "iat_offset": -3700}}),
            401,
            "lti_token_expired",
        ),
        (
            "issued in the future",
            json!({"tamper": {"iat_offset": 900}}),
            401,
            "lti_token_not_yet_valid",
        ),
        (
            "bad signature",
            json!({"tamper": {"sign": "bad_signature"}}),
            401,
            "lti_bad_signature",
        ),
        (
            "payload changed after signing",
            json!({"tamper": {"sign": "tampered_payload"}}),
            401,
            "lti_bad_signature",
        ),
        (
            "unknown kid",
            json!({"tamper": {"sign": "unknown_kid"}}),
            401,
            "lti_unknown_key",
        ),
        (
            "alg HS256",
            json!({"tamper": {"sign": "hs256"}}),
            401,
            "lti_bad_algorithm",
        ),
        (
            "alg none",
            json!({"tamper": {"sign": "none"}}),
            401,
            "lti_bad_algorithm",
        ),
        (
            "no quiz named",
            json!({"custom": {}}),
            400,
            "lti_quiz_missing",
        ),
        (
            "an unknown quiz",
            json!({"custom": {"quiz": "no-such-quiz"}}),
            400,
            "lti_quiz_unknown",
        ),
        (
            "login for an unregistered deployment",
            json!({"login_override": {"lti_deployment_id": "deployment-9"}}),
            422,
            "lti_unknown_deployment",
        ),
        (
            "login from an unregistered issuer",
            json!({"login_override": {"iss": "https://unknown.example"}}),
            422,
            "lti_unknown_registration",
        ),
        (
            "login without a login_hint",
            json!({"login_override": {"login_hint": null}}),
            400,
            "lti_invalid_login",
        ),
    ];
    for (i, (name, tweak, status, code)) in cases.iter().enumerate() {
        let mut s = learner(&format!("tamper-{i}"));
        s["resource_link"]["id"] = json!(format!("rl-tamper-{i}"));
        for (k, v) in tweak.as_object().unwrap() {
            s[k] = v.clone();
        }
        let flow = run_launch(&lti, &s).await;
        let body = assert_problem_named(flow.response, *status, code, name).await;
        assert!(!body["detail"].as_str().unwrap().is_empty());
    }
    // Nothing of the refused launches was made.
    let made: i64 = sqlx::query_scalar("SELECT count(*) FROM users WHERE ext_issuer IS NOT NULL")
        .fetch_one(&lti.app.pool)
        .await
        .unwrap();
    assert_eq!(made, 0);

    // Replays. The same post again: its state is used up.
    let flow = run_launch(&lti, &learner("replayer")).await;
    launch_code(&flow.response);
    let (id_token, state, cookie) = flow.form.unwrap();
    let res = post_launch(&lti, &id_token, &state, Some(&cookie)).await;
    assert_problem(res, 401, "lti_state_invalid").await;
    // The same id_token in a fresh login: its nonce was used.
    let res = lti
        .platform
        .client
        .get(lti.app.url(&format!(
            "/v1/lti/login?iss={}&login_hint=replayer&target_link_uri={}&client_id=quizd-tool",
            lti.registration["issuer"].as_str().unwrap(),
            launch_url
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 302);
    let cookie2 = cookie_of(&res);
    let state2 = query_param(&location(&res), "state");
    let res = post_launch(&lti, &id_token, &state2, Some(&cookie2)).await;
    assert_problem(res, 401, "lti_nonce_replayed").await;
    // A launch posted from another browser: without the login's cookie, or with another's.
    let hijack = run_launch_until_form(&lti, &learner("victim")).await;
    let res = post_launch(&lti, &hijack.0, &hijack.1, None).await;
    assert_problem(res, 401, "lti_state_mismatch").await;
    let hijack = run_launch_until_form(&lti, &learner("victim2")).await;
    let res = post_launch(&lti, &hijack.0, &hijack.1, Some(&cookie)).await;
    assert_problem(res, 401, "lti_state_mismatch").await;
    // A platform's error answer to the authentication request.
    let res = lti
        .platform
        .client
        .post(lti.app.url("/v1/lti/launch"))
        .form(&[
            ("error", "login_required"),
            ("error_description", "Sign in to the LMS first"),
        ])
        .send()
        .await
        .unwrap();
    let body = assert_problem(res, 401, "lti_platform_error").await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("Sign in to the LMS first")
    );
}

fn query_param(url: &str, name: &str) -> String {
    reqwest::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.to_string())
        .unwrap_or_else(|| panic!("no {name} in {url}"))
}

/// A learner's launch whose AGS or NRPS claim the platform signed with these URLs.
fn launch_naming_services(sub: &str, ags: Option<Value>, nrps: Option<&str>) -> Value {
    let mut s = learner(sub);
    s["resource_link"] = json!({"id": format!("rl-{sub}"), "title": "Services"});
    let mut set = serde_json::Map::new();
    if let Some(ags) = ags {
        let mut claim = json!({"scope": [
            "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
            "https://purl.imsglobal.org/spec/lti-ags/scope/score",
        ]});
        for (k, v) in ags.as_object().unwrap() {
            claim[k] = v.clone();
        }
        set.insert(quizd::lti::claim::AGS_ENDPOINT.into(), claim);
    }
    if let Some(url) = nrps {
        set.insert(
            quizd::lti::claim::NRPS.into(),
            json!({"context_memberships_url": url, "service_versions": ["2.0"]}),
        );
    }
    s["tamper"] = json!({ "set": set });
    s
}

#[tokio::test]
async fn a_launch_naming_service_urls_off_the_platform_is_refused() {
    let lti = setup().await;
    let base = lti.platform.base.clone();
    let cases = [
        (
            "plain http to a host in quizd's network",
            launch_naming_services(
                "svc-1",
                Some(json!({"lineitems": "http://10.0.0.5/lineitems"})),
                None,
            ),
            quizd::lti::claim::AGS_ENDPOINT,
        ),
        (
            "https line item on a foreign host",
            launch_naming_services(
                "svc-2",
                Some(json!({
                    "lineitems": format!("{base}/lineitems"),
                    "lineitem": "https://grades.evil.example/lineitems/1",
                })),
                None,
            ),
            quizd::lti::claim::AGS_ENDPOINT,
        ),
        (
            "https roster on a foreign host",
            launch_naming_services(
                "svc-3",
                None,
                Some("https://roster.evil.example/nrps/ctx-1"),
            ),
            quizd::lti::claim::NRPS,
        ),
        (
            "plain http roster on a non-loopback host",
            launch_naming_services("svc-4", None, Some("http://lms.example/nrps/ctx-1")),
            quizd::lti::claim::NRPS,
        ),
    ];
    for (name, scenario, claim) in &cases {
        let flow = run_launch(&lti, scenario).await;
        let body = assert_problem_named(flow.response, 400, "lti_service_url_refused", name).await;
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.contains(claim), "{name}: {detail}");
    }
    let made: i64 = sqlx::query_scalar("SELECT count(*) FROM users WHERE ext_issuer IS NOT NULL")
        .fetch_one(&lti.app.pool)
        .await
        .unwrap();
    assert_eq!(made, 0, "nothing of a refused launch is made");

    // The platform's own host (its endpoints') is fine, and so is a host its registration
    // lists for its services.
    let ok = launch_naming_services(
        "svc-5",
        Some(json!({"lineitems": format!("{base}/lineitems")})),
        Some(&format!("{base}/nrps/ctx-1")),
    );
    launch_code(&run_launch(&lti, &ok).await.response);
    let id = lti.registration["id"].as_str().unwrap();
    let registration = format!("/v1/lti/registrations/{id}");
    let admin = lti.admin();
    let reg = admin
        .patch(
            &registration,
            &json!({"service_hosts": ["grades.lms.example"]}),
        )
        .await
        .status(200)
        .await;
    assert_eq!(reg["service_hosts"], json!(["grades.lms.example"]));
    let listed = launch_naming_services(
        "svc-6",
        Some(json!({"lineitem": "https://grades.lms.example/lineitems/7"})),
        None,
    );
    launch_code(&run_launch(&lti, &listed).await.response);
    // Hosts are names, not URLs.
    admin
        .patch(
            &registration,
            &json!({"service_hosts": ["https://grades.lms.example/"]}),
        )
        .await
        .problem(422, "invalid_registration")
        .await;
}
