//! A login kept in the platform's storage (`lti_storage_target`) instead of a cookie.

use serde_json::{Value, json};

use crate::support::{assert_problem, expect_status};

use super::{
    Lti, attr, cookie, exchange, expect_html, launched, learner, location, post_launch, run_launch,
    run_launch_until_form, setup,
};

/// The data block of a page of the platform-storage flow.
fn storage_data(page: &str) -> Value {
    let needle = "id=\"lti-storage\">";
    let start = page.find(needle).unwrap() + needle.len();
    let end = page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..start + end]).unwrap()
}

/// A login started with `lti_storage_target`, through the platform's authorization endpoint:
/// quizd's login page, and the id_token and state the platform posts to the launch.
async fn storage_login(lti: &Lti, sub: &str) -> (String, String, Value) {
    let mut s = learner(sub);
    s["storage_target"] = json!("lti_storage");
    let flow = run_launch(lti, &s).await;
    // The state cookie is set too, for where it comes back (a window of its own).
    assert!(cookie(&flow.response).is_some(), "the state cookie");
    let csp = flow.response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    let page = expect_html(flow.response, 200).await;
    let data = storage_data(&page);
    assert_eq!(data["step"], "login");
    assert_eq!(data["target"], "lti_storage");
    assert_eq!(data["origin"], lti.platform.base);
    for part in [
        "script-src 'self'",
        "form-action 'self'",
        "default-src 'none'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert!(!page.contains("<script>"), "no inline script: {page}");
    let auth = data["next"].as_str().unwrap();
    assert!(auth.starts_with(&lti.platform.url("/auth?")), "{auth}");
    let form = expect_html(lti.platform.client.get(auth).send().await.unwrap(), 200).await;
    let (id_token, state) = (
        attr(&form, "id_token").to_string(),
        attr(&form, "state").to_string(),
    );
    assert_eq!(state, data["state"]);
    (id_token, state, data)
}

async fn post_storage_launch(
    lti: &Lti,
    id_token: &str,
    state: &str,
    secret: Option<&str>,
) -> reqwest::Response {
    let mut form = vec![("id_token", id_token), ("state", state)];
    if let Some(s) = secret {
        form.push(("lti_storage_secret", s));
    }
    lti.platform
        .client
        .post(lti.app.url("/v1/lti/launch"))
        .form(&form)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_login_kept_in_the_platforms_storage_is_proved_by_its_secret_not_a_cookie() {
    let lti = setup().await;
    let (id_token, state, data) = storage_login(&lti, "learner-storage").await;
    let secret = data["secret"].as_str().unwrap();

    // The platform's post gets the page that reads the secret back; nothing is used up.
    let res = post_storage_launch(&lti, &id_token, &state, None).await;
    let page = expect_html(res, 200).await;
    assert_eq!(storage_data(&page)["step"], "launch");
    assert_eq!(attr(&page, "state"), state);
    let res = post_storage_launch(&lti, &id_token, &state, None).await;
    expect_html(res, 200).await;

    // The secret from the platform's storage: accepted, no cookie, the fragment says where the
    // front-end reads it back.
    let res = post_storage_launch(&lti, &id_token, &state, Some(secret)).await;
    assert_eq!(res.status(), 303);
    assert!(
        res.headers().get("set-cookie").is_none(),
        "no cookie with the platform's storage"
    );
    let to = location(&res);
    let code = to
        .split("#/lti/")
        .nth(1)
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_string();
    assert!(to.contains("lti_storage_target=lti_storage"), "{to}");
    // The state is used up: the same launch again is refused.
    let res = post_storage_launch(&lti, &id_token, &state, Some(secret)).await;
    assert_problem(res, 401, "lti_state_invalid").await;
    // The exchange: without the secret nothing is used up; with it, signed in.
    let browser = lti.app.anonymous();
    browser
        .post("/v1/lti/exchange", &json!({"code": code}))
        .await
        .problem(401, "launch_browser_mismatch")
        .await;
    let session = browser
        .post(
            "/v1/lti/exchange",
            &json!({"code": code, "storage_secret": secret}),
        )
        .await
        .status(200)
        .await;
    assert_eq!(session["destination"]["kind"], "attempt");

    // Where the state cookie comes back, the launch goes on at once, with the exchange cookie.
    let mut s = learner("learner-storage-cookie");
    s["storage_target"] = json!("_parent");
    let flow = run_launch(&lti, &s).await;
    let state_cookie = cookie(&flow.response).unwrap();
    let page = expect_html(flow.response, 200).await;
    let auth = storage_data(&page)["next"].as_str().unwrap().to_string();
    let form = expect_html(lti.platform.client.get(auth).send().await.unwrap(), 200).await;
    let res = post_launch(
        &lti,
        attr(&form, "id_token"),
        attr(&form, "state"),
        Some(&state_cookie),
    )
    .await;
    let (code, exchange_cookie) = launched(&res);
    expect_status(exchange(&lti, &code, Some(&exchange_cookie)).await, 200).await;

    // Another secret (a forged form, another browser's) is refused, and the state is spent.
    let (id_token, state, _) = storage_login(&lti, "learner-storage-2").await;
    let res = post_storage_launch(&lti, &id_token, &state, Some(&"0".repeat(64))).await;
    assert_problem(res, 401, "lti_state_mismatch").await;
    // A cookie login's state is not proved by a storage secret either (its cookie is missing).
    let (id_token, state, _cookie) = run_launch_until_form(&lti, &learner("learner-cookie")).await;
    let res = post_storage_launch(&lti, &id_token, &state, Some(&"0".repeat(64))).await;
    assert_problem(res, 401, "lti_state_mismatch").await;
}
