//! The web front-end: a small single-page app for learners and instructors (plain HTML, CSS
//! and ES modules from `web/`, no build step), embedded in the binary and served at `/` and
//! `/assets/{file}`. Everything it loads comes from quizd; its Content-Security-Policy allows
//! nothing else, and no inline script or style.

use std::collections::HashMap;
use std::sync::LazyLock;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use sha2::{Digest, Sha256};

use crate::error::{ApiError, Code};
use crate::state::AppState;

/// The policy of every front-end response: same origin only, no inline code; framed only by
/// the origins quizd was started with (`--frame-ancestor`: the LMSs that launch quizd), else by
/// nobody. Images also from `blob:`: a question's image is fetched with the bearer token
/// (which an `<img>` cannot send) and shown from an object URL.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; \
     object-src 'none'; base-uri 'none'; form-action 'self'";

/// The `frame-ancestors` source list for these origins (e.g. `https://moodle.example.edu`, an
/// LMS that shows quizd in a frame after an LTI launch): the well-formed ones, or `'none'`.
pub fn frame_ancestors(origins: &[String]) -> String {
    let valid: Vec<&str> = origins
        .iter()
        .map(|o| o.trim().trim_end_matches('/'))
        .filter(|o| {
            (o.starts_with("https://") || o.starts_with("http://"))
                && !o.contains([' ', ';', ',', '\'', '"'])
        })
        .collect();
    if valid.is_empty() {
        "'none'".to_string()
    } else {
        valid.join(" ")
    }
}

/// The full policy of a front-end response, with the app's `frame-ancestors` (`'none'` where
/// the app has no state, as in unit tests).
fn content_security_policy(req: &HttpRequest) -> String {
    let ancestors = req
        .app_data::<web::Data<AppState>>()
        .map_or("'none'", |s| s.frame_ancestors.as_str());
    format!("{CONTENT_SECURITY_POLICY}; frame-ancestors {ancestors}")
}

struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $content_type:literal) => {
        Asset {
            name: $name,
            content_type: $content_type,
            body: include_bytes!(concat!("../web/assets/", $name)),
        }
    };
}

const INDEX: &[u8] = include_bytes!("../web/index.html");

/// Every file under `web/assets/` (a test checks that none is missing).
const ASSETS: &[Asset] = &[
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("app.js", "text/javascript; charset=utf-8"),
    asset!("api.js", "text/javascript; charset=utf-8"),
    asset!("charts.js", "text/javascript; charset=utf-8"),
    asset!("dom.js", "text/javascript; charset=utf-8"),
    asset!("i18n.js", "text/javascript; charset=utf-8"),
    asset!("learner.js", "text/javascript; charset=utf-8"),
    asset!("live.js", "text/javascript; charset=utf-8"),
    asset!("lti-storage.js", "text/javascript; charset=utf-8"),
    asset!("platform-storage.js", "text/javascript; charset=utf-8"),
    asset!("picker.js", "text/javascript; charset=utf-8"),
    asset!("storage.js", "text/javascript; charset=utf-8"),
    asset!("teach.js", "text/javascript; charset=utf-8"),
    asset!("icon.svg", "image/svg+xml"),
];

/// Strong validators: the files are compiled in, so a hash of each is its version.
static ETAGS: LazyLock<HashMap<&'static str, String>> = LazyLock::new(|| {
    let tag = |body: &[u8]| format!("\"{}\"", &hex::encode(Sha256::digest(body))[..32]);
    let mut tags: HashMap<&'static str, String> =
        ASSETS.iter().map(|a| (a.name, tag(a.body))).collect();
    tags.insert("", tag(INDEX));
    tags
});

/// Registers `GET /` (the app) and `GET /assets/{file}`, and `HEAD` of both through the same
/// handlers: a `HEAD` answer carries exactly the headers of the `GET` one (its framing policy
/// among them), without the body.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        crate::telemetry::resource("/")
            .route(web::get().to(index))
            .route(web::head().to(index)),
    )
    .service(
        crate::telemetry::resource("/assets/{file}")
            .route(web::get().to(asset))
            .route(web::head().to(asset)),
    );
}

async fn index(req: HttpRequest) -> HttpResponse {
    respond(&req, "text/html; charset=utf-8", INDEX, &ETAGS[""])
}

async fn asset(req: HttpRequest, file: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let asset = ASSETS
        .iter()
        .find(|a| a.name == file.as_str())
        .ok_or_else(|| ApiError::new(Code::AssetNotFound, "There is no such file."))?;
    Ok(respond(
        &req,
        asset.content_type,
        asset.body,
        &ETAGS[asset.name],
    ))
}

/// The file, or `304` when the client's copy is current. `no-cache`: the names are not
/// versioned, so a client revalidates (cheaply, by ETag) before using its copy.
fn respond(req: &HttpRequest, content_type: &str, body: &'static [u8], etag: &str) -> HttpResponse {
    let current = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .map(|t| t.trim().trim_start_matches("W/"))
                .any(|t| t == etag || t == "*")
        });
    let mut res = if current {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    res.insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((header::ETAG, etag))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            content_security_policy(req),
        ));
    if current {
        res.finish()
    } else {
        res.insert_header((header::CONTENT_TYPE, content_type))
            .body(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::App;
    use actix_web::test::{TestRequest, call_service, init_service, read_body_json};

    fn header_of(res: &actix_web::dev::ServiceResponse, name: header::HeaderName) -> &str {
        res.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    #[test]
    fn every_file_in_web_assets_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("web/assets");
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().to_string();
            assert!(
                ASSETS.iter().any(|a| a.name == name),
                "web/assets/{name} is not listed in src/web.rs"
            );
        }
    }

    #[test]
    fn the_page_loads_only_its_own_files_and_has_no_inline_script() {
        let html = std::str::from_utf8(INDEX).unwrap();
        for tag in html.split("<script").skip(1) {
            assert!(tag.contains("src=\"/assets/"), "inline script: {tag}");
        }
        for part in html.split("=\"/assets/").skip(1) {
            let name = part.split('"').next().unwrap();
            assert!(
                ASSETS.iter().any(|a| a.name == name),
                "{name} is not served"
            );
        }
        // Nothing names another origin (the SVG namespace is a name, not a request).
        for a in ASSETS {
            let text = String::from_utf8_lossy(a.body).replace("http://www.w3.org/2000/svg", "");
            assert!(
                !text.contains("http://") && !text.contains("https://") && !text.contains("//cdn"),
                "{} names another origin",
                a.name
            );
        }
    }

    #[actix_web::test]
    async fn the_app_and_its_files_are_served_with_their_types_and_policy() {
        let app = init_service(App::new().configure(configure)).await;
        let res = call_service(&app, TestRequest::get().uri("/").to_request()).await;
        assert_eq!(res.status(), 200);
        assert_eq!(
            header_of(&res, header::CONTENT_TYPE),
            "text/html; charset=utf-8"
        );
        assert!(header_of(&res, header::CONTENT_SECURITY_POLICY).starts_with("default-src 'self'"));
        let etag = header_of(&res, header::ETAG).to_string();
        let again = TestRequest::get()
            .uri("/")
            .insert_header((header::IF_NONE_MATCH, etag))
            .to_request();
        assert_eq!(call_service(&app, again).await.status(), 304);

        for (file, ct) in [
            ("app.js", "text/javascript; charset=utf-8"),
            ("app.css", "text/css; charset=utf-8"),
            ("icon.svg", "image/svg+xml"),
        ] {
            let req = TestRequest::get()
                .uri(&format!("/assets/{file}"))
                .to_request();
            let res = call_service(&app, req).await;
            assert_eq!(res.status(), 200, "{file}");
            assert_eq!(header_of(&res, header::CONTENT_TYPE), ct);
            assert_eq!(header_of(&res, header::CACHE_CONTROL), "no-cache");
        }

        let req = TestRequest::get()
            .uri("/assets/..%2Fsrc%2Fweb.rs")
            .to_request();
        let res = call_service(&app, req).await;
        assert_eq!(res.status(), 404);
        assert_eq!(
            header_of(&res, header::CONTENT_TYPE),
            crate::error::PROBLEM_JSON
        );
        let body: serde_json::Value = read_body_json(res).await;
        assert_eq!(body["code"], "asset_not_found");
    }
}
