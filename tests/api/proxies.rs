//! Forwarded headers are believed only from trusted proxies (`--trusted-proxy`): the client's
//! address for the sign-in limits, and the origin of the LTI URLs when there is no public URL.

use serde_json::{Value, json};

use crate::support::{TestApp, expect_status, get_as, login_request, post_as, token_for};

fn trusting_loopback(state: &mut quizd::state::AppState) {
    state.trusted_proxies =
        quizd::net::TrustedProxies::new(vec![quizd::net::parse_cidr("127.0.0.1/32").unwrap()]);
}

/// Registers a platform (never contacted here); returns the registration.
async fn register_platform(app: &TestApp) -> (String, Value) {
    let admin = token_for(app, "admin@proxies.example", "admin").await;
    let res = post_as(
        app,
        &admin.access,
        "/v1/lti/registrations",
        &json!({
            "issuer": "https://lms.example",
            "client_id": "quizd",
            "deployment_ids": ["1"],
            "auth_endpoint": "https://lms.example/auth",
            "token_endpoint": "https://lms.example/token",
            "jwks_url": "https://lms.example/jwks",
        }),
    )
    .await;
    (admin.access, expect_status(res, 201).await)
}

/// What quizd does with a login from a client that sends these headers: the redirect URI it
/// gives the platform, its state cookie, and the registration's launch URL as admins see it.
async fn lti_urls(
    app: &TestApp,
    (admin, reg): &(String, Value),
    headers: &[(&str, &str)],
) -> (String, String, String) {
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut req = no_redirects.get(app.url(&format!(
        "/v1/lti/login?iss=https://lms.example&login_hint=u1&target_link_uri={}",
        app.url("/v1/lti/launch")
    )));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = req.send().await.unwrap();
    assert_eq!(res.status(), 302);
    let cookie = res
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let to = reqwest::Url::parse(res.headers()["location"].to_str().unwrap()).unwrap();
    let redirect_uri = to
        .query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .unwrap()
        .1
        .to_string();
    let id = reg["id"].as_str().unwrap();
    let mut req = crate::support::bearer(
        app,
        reqwest::Method::GET,
        &format!("/v1/lti/registrations/{id}"),
        admin,
    );
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let seen = expect_status(req.send().await.unwrap(), 200).await;
    let launch_url = seen["tool"]["launch_url"].as_str().unwrap().to_string();
    (redirect_uri, cookie, launch_url)
}

const FORWARDED_ELSEWHERE: [(&str, &str); 3] = [
    ("x-forwarded-host", "evil.example"),
    ("x-forwarded-proto", "https"),
    ("forwarded", "for=203.0.113.7;host=evil.example;proto=https"),
];

#[tokio::test]
async fn forwarded_hosts_from_an_untrusted_peer_do_not_move_the_lti_urls() {
    let app = TestApp::spawn().await;
    let platform = register_platform(&app).await;
    let (redirect_uri, cookie, launch_url) = lti_urls(&app, &platform, &FORWARDED_ELSEWHERE).await;
    assert_eq!(redirect_uri, app.url("/v1/lti/launch"));
    assert_eq!(launch_url, app.url("/v1/lti/launch"));
    // Not taken for https either: the state cookie is the plain-http one.
    assert!(
        cookie.contains("SameSite=Lax") && !cookie.contains("Secure"),
        "{cookie}"
    );
}

#[tokio::test]
async fn a_trusted_proxy_names_the_host_and_scheme_of_the_lti_urls() {
    let app = TestApp::spawn_configured(trusting_loopback).await;
    let platform = register_platform(&app).await;
    let (redirect_uri, cookie, launch_url) = lti_urls(&app, &platform, &FORWARDED_ELSEWHERE).await;
    assert_eq!(redirect_uri, "https://evil.example/v1/lti/launch");
    assert_eq!(launch_url, "https://evil.example/v1/lti/launch");
    assert!(
        cookie.contains("SameSite=None") && cookie.contains("Secure"),
        "{cookie}"
    );
    // Without forwarded headers, the request's own Host.
    let (redirect_uri, _, _) = lti_urls(&app, &platform, &[]).await;
    assert_eq!(redirect_uri, app.url("/v1/lti/launch"));
}

/// Wrong passwords for different accounts, each claiming another address, until the
/// per-address limit answers (at most `max` tries): how many were let through, if it did.
async fn wrong_passwords_until_limited(app: &TestApp, max: u32) -> Option<u32> {
    for i in 0..max {
        let res = app
            .client
            .post(app.url("/v1/auth/login"))
            .header("x-forwarded-for", format!("198.51.100.{}", i % 250 + 1))
            .header("forwarded", format!("for=192.0.2.{}", i % 250 + 1))
            .json(&json!({"email": format!("nobody{i}@proxies.example"), "password": "wrong password"}))
            .send()
            .await
            .unwrap();
        match res.status().as_u16() {
            401 => {}
            429 => {
                let body: Value = res.json().await.unwrap();
                assert_eq!(body["code"], "too_many_attempts", "{body}");
                return Some(i);
            }
            s => panic!("sign-in answered {s}"),
        }
    }
    None
}

#[tokio::test]
async fn made_up_forwarded_addresses_from_an_untrusted_peer_all_count_against_the_real_one() {
    let app = TestApp::spawn().await;
    let allowed = wrong_passwords_until_limited(&app, 200)
        .await
        .expect("the per-address sign-in limit answers although every try names another address");
    assert!(allowed > 0);
    // The same tries through a trusted proxy are from as many clients: none is limited.
    let behind_proxy = TestApp::spawn_configured(trusting_loopback).await;
    assert_eq!(
        wrong_passwords_until_limited(&behind_proxy, allowed + 5).await,
        None
    );
    // And sign-in itself is unaffected by the headers.
    crate::support::register(&behind_proxy, "real@proxies.example").await;
    let res = login_request(
        &behind_proxy,
        "real@proxies.example",
        crate::support::PASSWORD,
    )
    .await;
    let tokens = expect_status(res, 200).await;
    let me = get_as(
        &behind_proxy,
        tokens["access_token"].as_str().unwrap(),
        "/v1/me",
    )
    .await;
    expect_status(me, 200).await;
}
