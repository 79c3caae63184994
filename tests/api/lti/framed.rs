//! A launch refused inside the LMS's frame (#32): the browser's form post (`Accept: text/html`)
//! gets a page, not a problem: in the learner's language, framed by the LMS as the front-end is
//! (`--frame-ancestor`), saying what happened, with a link that starts the launch again (the
//! OIDC login initiation) in a window of its own, where the browser keeps quizd's cookies. An
//! API client asking for JSON still gets the problem.

use std::collections::HashMap;

use serde_json::json;

use crate::support::assert_problem;

use super::{
    Lti, attr, cookie_of, expect_html, launch_code, learner, location, post_launch, run_launch,
    run_launch_until_form, setup_framed,
};

/// What Chromium sends with a form post.
const BROWSER_ACCEPT: &str =
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";

/// A refused launch as the browser got it.
struct Page {
    status: u16,
    header: HashMap<String, String>,
    html: String,
}

impl Page {
    fn header(&self, name: &str) -> Option<&str> {
        self.header.get(name).map(String::as_str)
    }

    /// The page's link that opens in a new window: its address, unescaped.
    fn new_window_link(&self) -> Option<String> {
        let at = self.html.find("target=\"_blank\"")?;
        let tag_start = self.html[..at].rfind("<a ")?;
        let tag = &self.html[tag_start..];
        let tag = &tag[..tag.find('>')?];
        let href = &tag[tag.find("href=\"")? + 6..];
        Some(href[..href.find('"')?].replace("&amp;", "&"))
    }
}

/// The launch form posted by a browser (in the LMS's frame, where quizd's cookie may be
/// dropped: `cookie` is what reaches quizd).
async fn post_as_browser(
    lti: &Lti,
    form: &[(&str, &str)],
    cookie: Option<&str>,
    accept_language: &str,
) -> Page {
    let mut req = lti
        .platform
        .client
        .post(lti.app.url("/v1/lti/launch"))
        .header("accept", BROWSER_ACCEPT)
        .header("accept-language", accept_language)
        .form(form);
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let header = res
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap().to_string()))
        .collect();
    Page {
        status,
        header,
        html: res.text().await.unwrap(),
    }
}

/// The page is HTML the LMS may frame (the front-end's `frame-ancestors`, nothing that
/// forbids framing), runs no script, in `lang`, and names the problem's code.
fn assert_framed_page(lti: &Lti, page: &Page, status: u16, code: &str, lang: &str) {
    assert_eq!(page.status, status, "{}", page.html);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let csp = page.header("content-security-policy").unwrap_or_default();
    assert!(
        csp.contains(&format!("frame-ancestors {}", lti.platform.base)),
        "{csp}"
    );
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(!csp.contains("script-src"), "no script at all: {csp}");
    assert_eq!(page.header("x-frame-options"), None, "framing is the CSP's");
    assert_eq!(page.header("cache-control"), Some("no-store"));
    assert_eq!(page.header("content-language"), Some(lang));
    assert!(
        page.html.contains(&format!("<html lang=\"{lang}\"")),
        "{}",
        page.html
    );
    assert!(page.html.contains(code), "the code {code}: {}", page.html);
    assert!(!page.html.contains("<script"), "{}", page.html);
}

/// The link starts the OIDC login initiation again, with what the platform's first one said and
/// nothing of the refused launch (no id_token, no state).
fn assert_restarts_the_login(lti: &Lti, link: &str, sub: &str) {
    let (path, query) = link.split_once('?').unwrap();
    assert_eq!(path, "/v1/lti/login", "{link}");
    let q: HashMap<String, String> = serde_urlencoded::from_str(query).unwrap();
    let reg = &lti.registration;
    assert_eq!(q["iss"], reg["issuer"].as_str().unwrap());
    assert_eq!(q["client_id"], reg["client_id"].as_str().unwrap());
    assert_eq!(
        q["lti_deployment_id"],
        reg["deployment_ids"][0].as_str().unwrap()
    );
    assert_eq!(q["login_hint"], sub);
    assert_eq!(q["target_link_uri"], lti.app.url("/v1/lti/launch"));
    assert!(q["lti_message_hint"].starts_with("s-"), "{link}");
    assert!(
        !q.contains_key("id_token") && !q.contains_key("state"),
        "{link}"
    );
    assert!(!q.contains_key("lti_storage_target"), "{link}");
}

#[tokio::test]
async fn a_launch_whose_cookie_the_frame_dropped_is_a_page_the_lms_frames_and_its_new_window_launches()
 {
    let lti = setup_framed(|_| {}).await;
    let (id_token, state, _dropped) = run_launch_until_form(&lti, &learner("framed-1")).await;
    let page = post_as_browser(
        &lti,
        &[("id_token", &id_token), ("state", &state)],
        None,
        "id-ID,id;q=0.9,en;q=0.5",
    )
    .await;
    // In Indonesian (the browser's language; the launch's claim names none).
    assert_framed_page(&lti, &page, 401, "lti_state_mismatch", "id");
    assert!(page.html.contains("Buka di jendela baru"), "{}", page.html);
    assert!(!page.html.contains(&id_token) && !page.html.contains(&state));
    let link = page.new_window_link().expect("a link to a new window");
    assert_restarts_the_login(&lti, &link, "framed-1");

    // The new window: a top-level browsing context, where quizd's cookie is kept. Its login
    // goes to the platform again, which posts a fresh launch: accepted.
    let res = lti
        .platform
        .client
        .get(lti.app.url(&link))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 302);
    let cookie = cookie_of(&res);
    let form = expect_html(
        lti.platform
            .client
            .get(location(&res))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let (new_token, new_state) = (attr(&form, "id_token"), attr(&form, "state"));
    assert_ne!(new_state, state);
    let res = post_launch(&lti, new_token, new_state, Some(&cookie)).await;
    launch_code(&res);

    // An API client asking for JSON still gets the problem.
    let (id_token, state, _) = run_launch_until_form(&lti, &learner("framed-json")).await;
    let res = lti
        .platform
        .client
        .post(lti.app.url("/v1/lti/launch"))
        .header("accept", "application/json")
        .form(&[("id_token", &id_token), ("state", &state)])
        .send()
        .await
        .unwrap();
    assert_problem(res, 401, "lti_state_mismatch").await;
}

#[tokio::test]
async fn a_launch_posted_twice_is_a_page_in_the_launchs_language_that_says_it_was_used() {
    let lti = setup_framed(|_| {}).await;
    let mut s = learner("twice");
    s["tamper"] = json!({"set": {
        "https://purl.imsglobal.org/spec/lti/claim/launch_presentation": {"locale": "bn-BD"}
    }});
    let flow = run_launch(&lti, &s).await;
    launch_code(&flow.response);
    let (id_token, state, cookie) = flow.form.unwrap();
    let page = post_as_browser(
        &lti,
        &[("id_token", &id_token), ("state", &state)],
        Some(&cookie),
        "id",
    )
    .await;
    // The launch's locale claim wins over the browser's language.
    assert_framed_page(&lti, &page, 401, "lti_state_invalid", "bn");
    assert!(page.html.contains("নতুন উইন্ডোতে খুলুন"), "{}", page.html);
    assert_restarts_the_login(&lti, &page.new_window_link().unwrap(), "twice");
}

#[tokio::test]
async fn a_login_that_took_too_long_is_a_page_that_says_it_expired() {
    let clock = quizd::clock::Clock::manual(chrono::Utc::now());
    let moved = clock.clone();
    let lti = setup_framed(move |s| s.clock = moved).await;
    let (id_token, state, cookie) = run_launch_until_form(&lti, &learner("slow")).await;
    clock.advance(chrono::Duration::minutes(11));
    let page = post_as_browser(
        &lti,
        &[("id_token", &id_token), ("state", &state)],
        Some(&cookie),
        "fr, en;q=0.5",
    )
    .await;
    assert_framed_page(&lti, &page, 401, "lti_state_expired", "en");
    assert!(page.html.contains("expired"), "{}", page.html);
    assert_restarts_the_login(&lti, &page.new_window_link().unwrap(), "slow");
    // For an API client, the same code.
    let (id_token, state, cookie) = run_launch_until_form(&lti, &learner("slow-2")).await;
    clock.advance(chrono::Duration::minutes(11));
    let res = post_launch(&lti, &id_token, &state, Some(&cookie)).await;
    assert_problem(res, 401, "lti_state_expired").await;
}

#[tokio::test]
async fn what_the_platform_says_is_escaped_on_the_page() {
    let lti = setup_framed(|_| {}).await;
    let (_, state, _) = run_launch_until_form(&lti, &learner("refused")).await;
    let page = post_as_browser(
        &lti,
        &[
            ("error", "login_required\"><b>"),
            (
                "error_description",
                "<script>alert(1)</script><a href=\"https://evil.example\">x</a>",
            ),
            ("state", &state),
        ],
        None,
        "en",
    )
    .await;
    assert_framed_page(&lti, &page, 401, "lti_platform_error", "en");
    assert!(!page.html.contains("<b>") && !page.html.contains("evil.example\""));
    assert!(
        page.html.contains(
            "&lt;script&gt;alert(1)&lt;/script&gt;&lt;a href=&quot;https://evil.example&quot;&gt;"
        ),
        "{}",
        page.html
    );
    // The platform refused the sign-in here; in a window of its own it may not.
    assert_restarts_the_login(&lti, &page.new_window_link().unwrap(), "refused");
    // Nothing known of the launch (no state, no token): the page, without a link.
    let page = post_as_browser(&lti, &[("state", "x")], None, "en").await;
    assert_framed_page(&lti, &page, 400, "lti_invalid_request", "en");
    assert_eq!(page.new_window_link(), None);
}
