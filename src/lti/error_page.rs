//! A launch refused inside the platform's frame, as the learner sees it. The platform posts the
//! launch from its page, usually in an iframe; there a browser that blocks cookies of other
//! sites drops quizd's state cookie (Moodle 5.1 offers no platform storage to fall back on), a
//! login can expire, a double click posts it twice. A `problem+json` answer is then the browser's
//! grey error page (`X-Frame-Options: DENY`, a body meant for programs). So a browser's form post
//! (it prefers `text/html`) gets a page instead, with the problem's status:
//!
//! - framed as the front-end is (its `frame-ancestors`, from `--frame-ancestor`: the origins of
//!   the LMS's pages, which need not be the platform's login host, e.g. Canvas's), so the
//!   middleware adds no `X-Frame-Options: DENY`;
//! - in the learner's language: the launch's locale claim where the id_token can be read (only
//!   to choose among quizd's languages, so even an unverified one may), else `Accept-Language`;
//! - saying what happened, by the problem's code, and what to do;
//! - where starting again can help, a link that opens a new window on the OIDC login initiation
//!   (`/v1/lti/login`) with the parameters the platform's own initiation gave (kept with the
//!   login's state): a new state and nonce, a new id_token from the platform, in a top-level
//!   window where the browser keeps quizd's cookies. Nothing of the refused launch (id_token,
//!   state) is carried;
//! - no script (the policy allows none), everything it shows escaped.
//!
//! An API client asking for JSON still gets the problem.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

use super::cookies::hash;
use super::params::parameters;
use super::store::{self, LoginRestart};
use crate::error::{ApiError, Code, ErrorPage};
use crate::state::AppState;

/// Whether the client prefers a page to JSON: its `Accept` lists `text/html` (or XHTML) and
/// ranks no JSON type above it. A browser's form post does; `Accept: application/json`, a
/// missing header and `*/*` do not.
pub fn wants_page(accept: Option<&str>) -> bool {
    let Some(accept) = accept else { return false };
    let (mut html, mut json) = (0.0f32, 0.0f32);
    for range in accept.split(',').take(32) {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        match media.as_str() {
            "text/html" | "application/xhtml+xml" => html = html.max(q),
            "application/json" | "application/problem+json" => json = json.max(q),
            _ => {}
        }
    }
    html > 0.0 && html >= json
}

/// The page for a refused launch, when the client wants one; the error as it is otherwise.
pub async fn respond(
    state: &AppState,
    req: &HttpRequest,
    body: &[u8],
    err: ApiError,
) -> Result<HttpResponse, ApiError> {
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    if !wants_page(accept) {
        return Err(err);
    }
    let p = parameters(body).unwrap_or_default();
    let claimed = p.get("id_token").and_then(|t| unverified_locale(t));
    let accept_language = req
        .headers()
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    let lang = Lang::negotiate(claimed.as_deref(), accept_language);
    let kind = Kind::of(err.code, err.status);
    let restart = match p.get("state").filter(|_| kind.restartable()) {
        Some(login_state) => store::login_restart(&state.pool, &hash(login_state))
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "the login of a refused launch could not be read");
                None
            }),
        None => None,
    };
    tracing::info!(code = %err.code, restart = restart.is_some(), "LTI launch refused, answered with a page");
    let html = render(
        lang,
        kind,
        &err,
        restart.as_ref().map(restart_link).as_deref(),
    );
    let mut res = HttpResponse::build(err.status);
    res.content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::CONTENT_LANGUAGE, lang.tag()))
        .insert_header((header::CONTENT_SECURITY_POLICY, policy(state)));
    if let Some(secs) = err.retry_after {
        res.insert_header((header::RETRY_AFTER, secs.to_string()));
    }
    let mut res = res.body(html);
    // A page for a person: the problem fallback leaves it as it is.
    res.extensions_mut().insert(ErrorPage);
    Ok(res)
}

/// The page's policy: quizd's stylesheet and nothing else, no script; framed by whoever may
/// frame the front-end.
fn policy(state: &AppState) -> String {
    format!(
        "default-src 'none'; style-src 'self'; form-action 'self'; base-uri 'none'; \
         frame-ancestors {}",
        state.frame_ancestors
    )
}

/// The locale an id_token claims (LTI's `launch_presentation.locale`, else OpenID's `locale`),
/// read without verifying it: it only chooses the page's language.
fn unverified_locale(id_token: &str) -> Option<String> {
    let payload = id_token.split('.').nth(1)?;
    if payload.len() > 60_000 {
        return None;
    }
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    claims
        .get(super::claim::LAUNCH_PRESENTATION)
        .and_then(|p| p.get("locale"))
        .or_else(|| claims.get("locale"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// `/v1/lti/login?…`: the platform's login initiation again.
fn restart_link(r: &LoginRestart) -> String {
    let mut q = vec![
        ("iss", r.issuer.as_str()),
        ("login_hint", &r.login_hint),
        ("target_link_uri", &r.target_link_uri),
        ("client_id", &r.client_id),
    ];
    if let Some(h) = &r.message_hint {
        q.push(("lti_message_hint", h));
    }
    if let Some(d) = &r.deployment_id {
        q.push(("lti_deployment_id", d));
    }
    format!(
        "/v1/lti/login?{}",
        serde_urlencoded::to_string(q).unwrap_or_default()
    )
}

/// The page. Pure.
fn render(lang: Lang, kind: Kind, err: &ApiError, restart: Option<&str>) -> String {
    let words = lang.words();
    let (title, what, todo) = kind.texts(lang);
    let open = restart.map_or_else(String::new, |href| {
        format!(
            "<p class=\"actions\"><a class=\"button\" href=\"{}\" target=\"_blank\" \
             rel=\"noopener\">{}</a></p>",
            super::html_escape(href),
            words.open
        )
    });
    format!(
        "<!DOCTYPE html>\n<html lang=\"{lang}\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · quizd</title><link rel=\"stylesheet\" href=\"/assets/app.css\"></head>\
         <body><main id=\"main\" class=\"lti-refused\"><h1>{title}</h1><p>{what}</p>\
         <p>{todo}</p>{open}<p class=\"meta\">{code_label} <code>{code}</code></p>\
         <details class=\"meta\"><summary>{details}</summary><p lang=\"en\">{detail}</p></details>\
         </main></body></html>\n",
        lang = lang.tag(),
        code_label = words.code,
        code = err.code,
        details = words.details,
        detail = super::html_escape(&err.detail),
    )
}

/// The languages of quizd's interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    En,
    Bn,
    Id,
}

impl Lang {
    const ALL: [Lang; 3] = [Lang::En, Lang::Bn, Lang::Id];

    fn tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Bn => "bn",
            Lang::Id => "id",
        }
    }

    /// The claimed locale first, then the browser's languages; English when none is quizd's.
    fn negotiate(claimed: Option<&str>, accept_language: Option<&str>) -> Lang {
        let requested = crate::i18n::requested_locales(claimed, accept_language);
        let available = Lang::ALL.map(|l| l.tag().to_string());
        let chain = crate::i18n::negotiate(&requested, &available, "en");
        Lang::ALL
            .into_iter()
            .find(|l| chain.first().is_some_and(|c| c == l.tag()))
            .unwrap_or(Lang::En)
    }

    fn words(self) -> Words {
        match self {
            Lang::En => Words {
                open: "Open in a new window",
                code: "Error code:",
                details: "Details for the LMS’s administrator",
            },
            Lang::Bn => Words {
                open: "নতুন উইন্ডোতে খুলুন",
                code: "ত্রুটির কোড:",
                details: "LMS-এর প্রশাসকের জন্য বিস্তারিত",
            },
            Lang::Id => Words {
                open: "Buka di jendela baru",
                code: "Kode kesalahan:",
                details: "Rincian untuk administrator LMS",
            },
        }
    }
}

struct Words {
    open: &'static str,
    code: &'static str,
    details: &'static str,
}

/// What happened, as the learner is told it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The state cookie did not come back: blocked in the frame.
    CookieBlocked,
    Expired,
    /// Posted twice (a double click, a reload, Back), or unknown.
    Used,
    /// The platform answered the authentication request with an error.
    PlatformRefused,
    /// quizd or the platform failed (5xx).
    Unavailable,
    /// quizd does not accept what the platform sent: its configuration's to fix.
    Invalid,
    NoQuiz,
    Archived,
    NotTeaching,
}

impl Kind {
    fn of(code: Code, status: StatusCode) -> Kind {
        match code {
            Code::LtiStateMismatch => Kind::CookieBlocked,
            Code::LtiStateExpired | Code::LtiTokenExpired => Kind::Expired,
            Code::LtiStateInvalid | Code::LtiNonceReplayed => Kind::Used,
            Code::LtiPlatformError => Kind::PlatformRefused,
            Code::LtiQuizMissing | Code::LtiQuizUnknown => Kind::NoQuiz,
            Code::CourseArchived => Kind::Archived,
            Code::LtiForbiddenRole => Kind::NotTeaching,
            _ if status.is_server_error() => Kind::Unavailable,
            _ => Kind::Invalid,
        }
    }

    /// Whether launching again, in a window of its own, can go otherwise.
    fn restartable(self) -> bool {
        matches!(
            self,
            Kind::CookieBlocked
                | Kind::Expired
                | Kind::Used
                | Kind::PlatformRefused
                | Kind::Unavailable
        )
    }

    /// Title, what happened, what to do.
    fn texts(self, lang: Lang) -> (&'static str, &'static str, &'static str) {
        use Kind::*;
        use Lang::*;
        match (self, lang) {
            (CookieBlocked, En) => (
                "quizd cannot sign you in inside this page",
                "Your browser blocks quizd’s cookies inside the LMS’s page, so quizd cannot confirm that this sign-in was started in this browser.",
                "Open the activity in a new window: there your browser keeps quizd’s cookies.",
            ),
            (CookieBlocked, Bn) => (
                "এই পাতার ভেতরে quizd আপনাকে সাইন ইন করাতে পারছে না",
                "আপনার ব্রাউজার LMS-এর পাতার ভেতরে quizd-এর কুকি আটকায়, তাই এই সাইন-ইন এই ব্রাউজারেই শুরু হয়েছে কি না quizd তা নিশ্চিত করতে পারছে না।",
                "কার্যক্রমটি নতুন উইন্ডোতে খুলুন: সেখানে আপনার ব্রাউজার quizd-এর কুকি রাখে।",
            ),
            (CookieBlocked, Id) => (
                "quizd tidak dapat memasukkan Anda di dalam halaman ini",
                "Peramban Anda memblokir cookie quizd di dalam halaman LMS, sehingga quizd tidak dapat memastikan bahwa proses masuk ini dimulai di peramban ini.",
                "Buka aktivitas di jendela baru: di sana peramban Anda menyimpan cookie quizd.",
            ),
            (Expired, En) => (
                "This sign-in has expired",
                "The sign-in from your LMS took too long and is no longer valid.",
                "Start it again in a new window.",
            ),
            (Expired, Bn) => (
                "এই সাইন-ইনের মেয়াদ শেষ হয়ে গেছে",
                "আপনার LMS থেকে সাইন-ইনে অনেক বেশি সময় লেগেছে, তাই এটি আর বৈধ নয়।",
                "নতুন উইন্ডোতে আবার শুরু করুন।",
            ),
            (Expired, Id) => (
                "Proses masuk ini sudah kedaluwarsa",
                "Proses masuk dari LMS Anda memakan waktu terlalu lama dan tidak berlaku lagi.",
                "Mulai lagi di jendela baru.",
            ),
            (Used, En) => (
                "This sign-in was used already",
                "Your LMS sent this sign-in to quizd twice (for example after a double click, a reload or the Back button), and each sign-in works once.",
                "Start it again in a new window.",
            ),
            (Used, Bn) => (
                "এই সাইন-ইন আগেই ব্যবহার করা হয়েছে",
                "আপনার LMS এই সাইন-ইন quizd-এ দুবার পাঠিয়েছে (যেমন দুবার ক্লিক, পাতা আবার লোড করা বা পেছনে যাওয়ার বোতামের পরে), আর প্রতিটি সাইন-ইন একবারই কাজ করে।",
                "নতুন উইন্ডোতে আবার শুরু করুন।",
            ),
            (Used, Id) => (
                "Proses masuk ini sudah dipakai",
                "LMS Anda mengirim proses masuk ini ke quizd dua kali (misalnya setelah klik ganda, memuat ulang halaman, atau tombol Kembali), dan setiap proses masuk hanya berlaku sekali.",
                "Mulai lagi di jendela baru.",
            ),
            (PlatformRefused, En) => (
                "Your LMS did not confirm who you are",
                "The LMS refused the sign-in, for example because your session in the LMS has ended.",
                "Sign in to your LMS again if it asks you to, then open the activity in a new window.",
            ),
            (PlatformRefused, Bn) => (
                "আপনার LMS আপনার পরিচয় নিশ্চিত করেনি",
                "LMS সাইন-ইনটি ফিরিয়ে দিয়েছে, যেমন LMS-এ আপনার সেশন শেষ হয়ে গেছে বলে।",
                "LMS চাইলে আবার সাইন ইন করুন, তারপর কার্যক্রমটি নতুন উইন্ডোতে খুলুন।",
            ),
            (PlatformRefused, Id) => (
                "LMS Anda tidak mengonfirmasi identitas Anda",
                "LMS menolak proses masuk, misalnya karena sesi Anda di LMS telah berakhir.",
                "Masuk lagi ke LMS Anda jika diminta, lalu buka aktivitas di jendela baru.",
            ),
            (Unavailable, En) => (
                "quizd could not finish signing you in",
                "quizd or your LMS did not answer in time.",
                "Try again in a moment, in a new window.",
            ),
            (Unavailable, Bn) => (
                "quizd আপনার সাইন-ইন শেষ করতে পারেনি",
                "quizd বা আপনার LMS সময়মতো সাড়া দেয়নি।",
                "একটু পরে নতুন উইন্ডোতে আবার চেষ্টা করুন।",
            ),
            (Unavailable, Id) => (
                "quizd tidak dapat menyelesaikan proses masuk Anda",
                "quizd atau LMS Anda tidak menjawab tepat waktu.",
                "Coba lagi sebentar lagi, di jendela baru.",
            ),
            (Invalid, En) => (
                "quizd could not accept this launch",
                "What your LMS sent is not a launch quizd can accept (its signature or its contents).",
                "Tell your teacher or the LMS’s administrator, with the error code below.",
            ),
            (Invalid, Bn) => (
                "quizd এই লঞ্চটি গ্রহণ করতে পারেনি",
                "আপনার LMS যা পাঠিয়েছে তা quizd গ্রহণ করতে পারে এমন লঞ্চ নয় (এর স্বাক্ষর বা বিষয়বস্তু)।",
                "নিচের ত্রুটির কোডসহ আপনার শিক্ষক বা LMS-এর প্রশাসককে জানান।",
            ),
            (Invalid, Id) => (
                "quizd tidak dapat menerima peluncuran ini",
                "Yang dikirim LMS Anda bukan peluncuran yang dapat diterima quizd (tanda tangan atau isinya).",
                "Beri tahu pengajar Anda atau administrator LMS, beserta kode kesalahan di bawah ini.",
            ),
            (NoQuiz, En) => (
                "This activity names no quiz that quizd has",
                "The activity in your LMS is not linked to a quiz that exists in quizd.",
                "Tell your teacher, with the error code below.",
            ),
            (NoQuiz, Bn) => (
                "এই কার্যক্রমে quizd-এর কোনো কুইজের নাম নেই",
                "আপনার LMS-এর কার্যক্রমটি quizd-এ থাকা কোনো কুইজের সঙ্গে যুক্ত নয়।",
                "নিচের ত্রুটির কোডসহ আপনার শিক্ষককে জানান।",
            ),
            (NoQuiz, Id) => (
                "Aktivitas ini tidak menyebut kuis yang ada di quizd",
                "Aktivitas di LMS Anda tidak terhubung ke kuis yang ada di quizd.",
                "Beri tahu pengajar Anda, beserta kode kesalahan di bawah ini.",
            ),
            (Archived, En) => (
                "This course is archived in quizd",
                "quizd keeps this course read-only, so it takes no launches.",
                "Tell your teacher, with the error code below.",
            ),
            (Archived, Bn) => (
                "এই কোর্সটি quizd-এ আর্কাইভ করা আছে",
                "quizd এই কোর্সটি শুধু পড়ার জন্য রাখে, তাই এটি কোনো লঞ্চ নেয় না।",
                "নিচের ত্রুটির কোডসহ আপনার শিক্ষককে জানান।",
            ),
            (Archived, Id) => (
                "Kursus ini diarsipkan di quizd",
                "quizd menyimpan kursus ini hanya untuk dibaca, jadi kursus ini tidak menerima peluncuran.",
                "Beri tahu pengajar Anda, beserta kode kesalahan di bawah ini.",
            ),
            (NotTeaching, En) => (
                "Only the course’s teachers can place quizzes",
                "You opened quizd to choose content for the course, which only its teachers can do.",
                "Go back to the course in your LMS.",
            ),
            (NotTeaching, Bn) => (
                "শুধু কোর্সের শিক্ষকেরাই কুইজ বসাতে পারেন",
                "আপনি কোর্সের জন্য বিষয়বস্তু বেছে নিতে quizd খুলেছেন, যা শুধু এর শিক্ষকেরাই পারেন।",
                "আপনার LMS-এর কোর্সে ফিরে যান।",
            ),
            (NotTeaching, Id) => (
                "Hanya pengajar kursus yang dapat memasang kuis",
                "Anda membuka quizd untuk memilih konten bagi kursus, yang hanya dapat dilakukan oleh pengajarnya.",
                "Kembali ke kursus di LMS Anda.",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_browsers_form_post_wants_a_page_and_an_api_client_json() {
        let chromium = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8";
        assert!(wants_page(Some(chromium)));
        assert!(wants_page(Some("application/xhtml+xml")));
        assert!(wants_page(Some("application/json;q=0.5, text/html")));
        for accept in [
            None,
            Some("*/*"),
            Some("application/json"),
            Some("application/problem+json, text/html;q=0.5"),
            Some("text/html;q=0"),
        ] {
            assert!(!wants_page(accept), "{accept:?}");
        }
    }

    #[test]
    fn the_launchs_locale_comes_before_the_browsers_languages() {
        assert_eq!(Lang::negotiate(Some("bn-BD"), Some("id")), Lang::Bn);
        assert_eq!(Lang::negotiate(None, Some("id-ID,en;q=0.5")), Lang::Id);
        assert_eq!(
            Lang::negotiate(Some("fr-FR"), Some("fr, id;q=0.4")),
            Lang::Id
        );
        assert_eq!(Lang::negotiate(Some("not a tag"), None), Lang::En);
        let payload = URL_SAFE_NO_PAD.encode(
            r#"{"https://purl.imsglobal.org/spec/lti/claim/launch_presentation":{"locale":"id"},"locale":"bn"}"#,
        );
        assert_eq!(
            unverified_locale(&format!("e30.{payload}.c2ln")).as_deref(),
            Some("id")
        );
        let payload = URL_SAFE_NO_PAD.encode(r#"{"locale":"bn"}"#);
        assert_eq!(
            unverified_locale(&format!("e30.{payload}.c2ln")).as_deref(),
            Some("bn")
        );
        assert_eq!(unverified_locale("not a jwt"), None);
    }

    #[test]
    fn every_kind_is_said_in_every_language_and_only_some_offer_a_new_window() {
        let kinds = [
            Kind::CookieBlocked,
            Kind::Expired,
            Kind::Used,
            Kind::PlatformRefused,
            Kind::Unavailable,
            Kind::Invalid,
            Kind::NoQuiz,
            Kind::Archived,
            Kind::NotTeaching,
        ];
        for kind in kinds {
            let english = kind.texts(Lang::En);
            for lang in [Lang::Bn, Lang::Id] {
                assert_ne!(kind.texts(lang), english, "{kind:?} in {lang:?}");
            }
        }
        assert_eq!(
            Kind::of(Code::LtiStateMismatch, StatusCode::UNAUTHORIZED),
            Kind::CookieBlocked
        );
        assert_eq!(
            Kind::of(Code::ServiceUnavailable, StatusCode::SERVICE_UNAVAILABLE),
            Kind::Unavailable
        );
        assert_eq!(
            Kind::of(Code::LtiBadSignature, StatusCode::UNAUTHORIZED),
            Kind::Invalid
        );
        assert!(!Kind::Invalid.restartable() && Kind::Used.restartable());
    }

    #[test]
    fn the_page_escapes_what_it_shows_and_runs_no_script() {
        let err = ApiError::new(Code::LtiPlatformError, "<script>alert('x')</script>");
        let html = render(
            Lang::En,
            Kind::PlatformRefused,
            &err,
            Some("/v1/lti/login?iss=a&login_hint=\"><b>"),
        );
        assert!(!html.contains("<script") && !html.contains("<b>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
        assert!(html.contains("href=\"/v1/lti/login?iss=a&amp;login_hint=&quot;&gt;&lt;b&gt;\""));
        let link = restart_link(&LoginRestart {
            issuer: "https://lms.example".into(),
            client_id: "c 1".into(),
            login_hint: "u&1".into(),
            message_hint: None,
            target_link_uri: "https://q.example/v1/lti/launch".into(),
            deployment_id: Some("d".into()),
        });
        assert_eq!(
            link,
            "/v1/lti/login?iss=https%3A%2F%2Flms.example&login_hint=u%261&target_link_uri=https%3A%2F%2Fq.example%2Fv1%2Flti%2Flaunch&client_id=c+1&lti_deployment_id=d"
        );
    }
}
