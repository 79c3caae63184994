//! LTI client-side postMessage storage (1EdTech "LTI Client Side postMessages", OIDC login
//! with `lti_storage_target`): where third-party cookies are blocked in the platform's iframe,
//! the login state's browser secret is kept in the platform's storage frame as well as the
//! state cookie, and proves the browser where the cookie does not come back. These are the two pages of that flow, both run by one static script
//! (`/assets/lti-storage.js`, with `platform-storage.js`): the login page `lti.put_data`s the
//! state's secret (and the nonce) and then goes on to the platform's authorization endpoint; the
//! launch page `lti.get_data`s the secret back and posts the launch again with it, where
//! quizd checks it against the state's hash (bound, single use, expiring: as strong as the
//! cookie). The data each page needs is a JSON data block (not executed); the policy runs
//! quizd's own scripts only.

use actix_web::HttpResponse;
use actix_web::http::header;
use serde_json::json;

use crate::state::AppState;

/// The longest `lti_storage_target` taken (a frame name, or `_parent`).
pub const MAX_TARGET_LEN: usize = 200;

/// Whether a storage target is usable: not empty, bounded, no control characters.
pub fn valid_target(target: &str) -> bool {
    !target.is_empty() && target.len() <= MAX_TARGET_LEN && !target.chars().any(char::is_control)
}

/// The origin of a URL (`https://lms.example`), where the platform's storage frame must be:
/// messages go to it alone and only its answers are read.
pub fn origin_of(url: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()
        .map(|u| u.origin().ascii_serialization())
        .filter(|o| o != "null")
}

/// The page's policy: quizd's scripts only, forms to quizd only, framed by the LMSs quizd was
/// started with (as the front-end).
fn policy(state: &AppState) -> String {
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
         connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors {}",
        state.frame_ancestors
    )
}

/// JSON that is safe inside `<script type="application/json">`: no `<` (so no `</script>`).
fn data_block(data: &serde_json::Value) -> String {
    data.to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

fn page(state: &AppState, data: &serde_json::Value, form: &str) -> HttpResponse {
    let body = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Signing in from your LMS · quizd</title>\
         <link rel=\"stylesheet\" href=\"/assets/app.css\">\
         <script type=\"application/json\" id=\"lti-storage\">{}</script>\
         <script type=\"module\" src=\"/assets/lti-storage.js\"></script></head>\
         <body><main id=\"main\" class=\"lti-storage\">\
         <h1 id=\"lti-title\">Signing in from your LMS</h1>\
         <p id=\"lti-status\" role=\"status\">Asking your LMS to keep this sign-in…</p>\
         <div id=\"lti-failed\" role=\"alert\" hidden>\
         <p>quizd could not confirm this sign-in: this browser blocks quizd's cookies inside \
         the LMS, and the LMS did not keep the sign-in for quizd.</p>\
         <p>Open the activity in a new window or tab from the LMS, or allow cookies for this \
         site, then launch it again.</p></div>\
         <noscript><p>Signing in from your LMS here needs JavaScript.</p></noscript>{form}\
         </main></body></html>\n",
        data_block(data)
    );
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::CONTENT_SECURITY_POLICY, policy(state)))
        .insert_header(("Referrer-Policy", "no-referrer"))
        .body(body)
}

/// The login's page: puts the state's secret (under `state_<state>`) and the nonce (under
/// `nonce_<nonce>`) in the platform's storage, then goes to `next` (the authentication
/// request).
pub fn login_page(
    state: &AppState,
    target: &str,
    origin: &str,
    login_state: &str,
    nonce: &str,
    secret: &str,
    next: &str,
) -> HttpResponse {
    let data = json!({
        "step": "login",
        "target": target,
        "origin": origin,
        "state": login_state,
        "nonce": nonce,
        "secret": secret,
        "next": next,
    });
    page(state, &data, "")
}

/// The launch's page: reads the state's secret back from the platform's storage and posts the
/// launch again, with it as `lti_storage_secret`.
pub fn launch_page(
    state: &AppState,
    target: &str,
    origin: &str,
    login_state: &str,
    id_token: &str,
) -> HttpResponse {
    let data = json!({
        "step": "launch",
        "target": target,
        "origin": origin,
        "state": login_state,
    });
    let form = format!(
        "<form id=\"lti-launch\" method=\"post\" action=\"/v1/lti/launch\" hidden>\
         <input type=\"hidden\" name=\"id_token\" value=\"{}\">\
         <input type=\"hidden\" name=\"state\" value=\"{}\">\
         <input type=\"hidden\" name=\"lti_storage_secret\" value=\"\"></form>",
        super::html_escape(id_token),
        super::html_escape(login_state)
    );
    page(state, &data, &form)
}

/// Where the front-end goes after a launch proved by the platform's storage: the code, and what
/// the front-end needs to read the secret back for the exchange (`lti.get_data` of
/// `state_<state>` from `target`, answered from `origin`), in the fragment.
pub fn frontend_fragment(code: &str, target: &str, origin: &str, login_state: &str) -> String {
    let query = serde_urlencoded::to_string([
        ("lti_storage_target", target),
        ("origin", origin),
        ("state", login_state),
    ])
    .unwrap_or_default();
    format!("#/lti/{code}?{query}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_storage_target_is_bounded_and_has_no_control_characters() {
        assert!(valid_target("_parent"));
        assert!(valid_target("post_message_forwarding"));
        assert!(!valid_target(""));
        assert!(!valid_target("a\nb"));
        assert!(!valid_target(&"x".repeat(201)));
    }

    #[test]
    fn the_data_block_cannot_close_its_script() {
        let block = data_block(&json!({"state": "</script><script>alert(1)</script>"}));
        assert!(!block.contains('<') && !block.contains('>'), "{block}");
        let back: serde_json::Value = serde_json::from_str(&block).unwrap();
        assert_eq!(back["state"], "</script><script>alert(1)</script>");
    }

    #[test]
    fn the_fragment_carries_the_storage_and_the_code() {
        let f = frontend_fragment("abc", "_parent", "https://lms.example", "s1");
        assert_eq!(
            f,
            "#/lti/abc?lti_storage_target=_parent&origin=https%3A%2F%2Flms.example&state=s1"
        );
        assert_eq!(
            origin_of("https://lms.example/auth?x=1").as_deref(),
            Some("https://lms.example")
        );
    }
}
