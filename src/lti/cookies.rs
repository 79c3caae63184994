//! What the LTI flow leaves in the browser: the cookies that bind a login, and a launch's
//! one-time code, to the browser that started them, and the random secrets they carry, which
//! quizd keeps only as hashes.

use actix_web::HttpRequest;
use actix_web::cookie::{Cookie, SameSite};
use rand::RngCore;
use sha2::{Digest, Sha256};

use super::exchange::CODE_TTL_SECS;
use crate::state::AppState;

/// The cookie that binds a login to the browser that started it.
pub const BROWSER_COOKIE: &str = "quizd_lti_browser";
/// The start of the name of the cookie that binds a launch's code to the browser the launch
/// redirected; the rest of the name comes from the code (see [`exchange_cookie_name`]).
pub const EXCHANGE_COOKIE_PREFIX: &str = "quizd_lti_code_";
/// The path of the exchange cookie: it goes with the exchange and nowhere else.
pub const EXCHANGE_COOKIE_PATH: &str = "/v1/lti/exchange";

/// 32 random bytes, hex.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

pub fn hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

pub(super) fn is_https(state: &AppState, req: &HttpRequest) -> bool {
    super::public_base(state, req).starts_with("https://")
}

/// A cookie of the LTI flow (a `Set-Cookie` value), HttpOnly. Over HTTPS it is
/// `SameSite=None; Secure; Partitioned`: the platform's cross-site form post carries it, and a
/// launch inside the platform's iframe keeps it where third-party cookies are blocked (CHIPS).
/// Over plain HTTP (development on loopback, where the platform and quizd are the same site),
/// `SameSite=Lax`.
fn lti_cookie(
    https: bool,
    name: String,
    value: String,
    path: &'static str,
    max_age: actix_web::cookie::time::Duration,
) -> String {
    let cookie = Cookie::build(name, value)
        .path(path)
        .http_only(true)
        .secure(https)
        .same_site(if https { SameSite::None } else { SameSite::Lax })
        .max_age(max_age)
        .finish()
        .to_string();
    if https {
        format!("{cookie}; Partitioned")
    } else {
        cookie
    }
}

/// The browser cookie of a login.
pub(super) fn browser_cookie(https: bool, value: String) -> String {
    lti_cookie(
        https,
        BROWSER_COOKIE.to_string(),
        value,
        "/v1/lti",
        actix_web::cookie::time::Duration::days(1),
    )
}

/// The name of the cookie that goes with a launch's code: one per code, so that two
/// launches at once in one browser (two tools on one LMS page, a double click) do not
/// overwrite each other's secret before each page has exchanged its code.
pub fn exchange_cookie_name(code: &str) -> String {
    format!("{EXCHANGE_COOKIE_PREFIX}{}", hex::encode(&hash(code)[..8]))
}

/// The cookie that binds a launch's code to this browser; it lasts as long as the code.
pub(super) fn exchange_cookie(https: bool, code: &str, secret: String) -> String {
    lti_cookie(
        https,
        exchange_cookie_name(code),
        secret,
        EXCHANGE_COOKIE_PATH,
        actix_web::cookie::time::Duration::seconds(CODE_TTL_SECS),
    )
}

/// The exchange cookie of a code, expired (it has served).
pub(super) fn spent_exchange_cookie(https: bool, code: &str) -> String {
    lti_cookie(
        https,
        exchange_cookie_name(code),
        String::new(),
        EXCHANGE_COOKIE_PATH,
        actix_web::cookie::time::Duration::ZERO,
    )
}

/// Whether two hashes are equal, in time that does not depend on where they differ.
pub(super) fn same_hash(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.ct_eq(b).into()
}

pub(super) fn valid_browser_id(v: &str) -> bool {
    v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_cookie_crosses_sites_only_over_https() {
        let c = browser_cookie(true, "ab".repeat(32));
        for part in [
            "HttpOnly",
            "SameSite=None",
            "Secure",
            "Path=/v1/lti",
            "Partitioned",
        ] {
            assert!(c.contains(part), "{c}");
        }
        let c = browser_cookie(false, "ab".repeat(32));
        assert!(c.contains("SameSite=Lax") && !c.contains("Secure"), "{c}");
    }

    #[test]
    fn the_exchange_cookie_follows_the_state_cookies_rule_and_goes_only_to_the_exchange() {
        let code = "c".repeat(64);
        let c = exchange_cookie(true, &code, "ab".repeat(32));
        for part in [
            "HttpOnly",
            "SameSite=None",
            "Secure",
            "Path=/v1/lti/exchange",
            "Partitioned",
            "Max-Age=60",
        ] {
            assert!(c.contains(part), "{c}");
        }
        assert!(
            c.starts_with(&format!("{}=", exchange_cookie_name(&code))),
            "{c}"
        );
        let c = exchange_cookie(false, &code, "ab".repeat(32));
        assert!(c.contains("SameSite=Lax") && !c.contains("Secure"), "{c}");
        assert!(spent_exchange_cookie(false, &code).contains("Max-Age=0"));
        // One name per code.
        assert_ne!(
            exchange_cookie_name(&code),
            exchange_cookie_name(&"d".repeat(64))
        );
    }
}
