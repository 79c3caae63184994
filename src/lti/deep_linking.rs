//! Deep Linking 2.0: the instructor picks quizzes, quizd answers the platform with a signed
//! LtiDeepLinkingResponse of ltiResourceLink items, each with a line item for its grades.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use super::cookies::{hash, same_hash};
use super::{DEEP_LINKING_RESPONSE, LTI_VERSION, claim, store};
use crate::auth::CurrentUser;
use crate::error::{ApiError, Code, Problem};
use crate::state::AppState;
use actix_web::http::StatusCode;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeepLinkChoice {
    /// The quiz's slug.
    pub quiz: String,
    /// The title the platform shows; defaults to the quiz's title.
    pub title: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeepLinkRequest {
    /// The `deep_link_id` of the launch's destination.
    pub deep_link_id: Uuid,
    /// The quizzes to place: one, or several when the platform accepts several. None: the
    /// instructor cancelled, and the platform is told so.
    pub items: Vec<DeepLinkChoice>,
}

/// The signed response and where to post it (as the form field `JWT`).
#[derive(Debug, Serialize, ToSchema)]
pub struct DeepLinkResponse {
    /// The platform's `deep_link_return_url`.
    pub return_url: String,
    /// The LtiDeepLinkingResponse, signed RS256 by quizd: post it as the form field `JWT`.
    pub jwt: String,
}

fn not_found() -> ApiError {
    ApiError::new(
        Code::DeepLinkNotFound,
        "There is no such Deep Linking request, or it is not yours.",
    )
}

/// The content item for a quiz: a resource link to quizd's launch URL naming the quiz in a
/// custom parameter, with a line item of the quiz's points.
pub fn content_item(
    launch_url: &str,
    slug: &str,
    title: &str,
    max_score: f64,
    with_lineitem: bool,
) -> Value {
    let mut item = json!({
        "type": "ltiResourceLink",
        "title": title,
        "url": launch_url,
        "custom": { "quiz": slug },
    });
    if with_lineitem {
        item["lineItem"] = json!({
            "scoreMaximum": max_score,
            "label": title,
            "resourceId": slug,
            "tag": "quizd",
        });
    }
    item
}

/// Answers a Deep Linking request with the chosen quizzes: a signed LtiDeepLinkingResponse
/// to post to the platform. As JSON; with `Accept: text/html`, as a page whose form posts it
/// at once. The instructor who launched the request, once.
#[utoipa::path(post, path = "/v1/lti/deep-link", tag = "lti", security(("bearer" = [])),
    request_body = DeepLinkRequest,
    responses(
        (status = 200, description = "The signed response and where to post it (or, for text/html, a self-posting form)", body = DeepLinkResponse),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such Deep Linking request, or not yours", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Answered already, or expired", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An unknown quiz, or several where the platform takes one", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn respond(
    req: HttpRequest,
    state: web::Data<AppState>,
    user: CurrentUser,
    body: crate::extract::JsonObject<DeepLinkRequest>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let row = store::deep_link(&state.pool, body.deep_link_id)
        .await?
        .filter(|r| r.user_id == user.id)
        .ok_or_else(not_found)?;
    if row.used_at.is_some() || row.expires_at <= state.clock.now() {
        return Err(ApiError::new(
            Code::DeepLinkClosed,
            "This Deep Linking request was answered already or has expired: start it again from the LMS.",
        ));
    }
    if body.items.len() > 1 && !row.accept_multiple {
        return Err(ApiError::new(
            Code::DeepLinkSingleItem,
            "The platform accepts one item in this Deep Linking request.",
        ));
    }
    if body.items.len() > 50 {
        return Err(ApiError::new(
            Code::DeepLinkTooManyItems,
            "Place at most 50 quizzes at once.",
        ));
    }
    let launch_url = super::launch_url(&state, &req);
    let mut items = Vec::new();
    for choice in &body.items {
        crate::validate::line("quiz", &choice.quiz, 1, 64)?;
        let unknown = || {
            ApiError::new(
                Code::QuizNotFound,
                format!("There is no quiz `{}`.", choice.quiz),
            )
            .with_status(StatusCode::UNPROCESSABLE_ENTITY)
        };
        // An LMS instructor places public quizzes and the quizzes they author; a private quiz
        // of anyone else's does not exist for them.
        let quiz = crate::quizzes::store::access(&state.pool, &choice.quiz, user.id)
            .await?
            .ok_or_else(unknown)?;
        if !crate::quizzes::access::placeable(&quiz, &user) {
            return Err(unknown());
        }
        let (_, version_id) =
            crate::assignments::store::resolve_version(&state.pool, &choice.quiz, None)
                .await?
                .ok_or_else(unknown)?;
        let version = crate::attempts::version(&state, version_id).await?;
        let source_title = store::quiz_source_title(&state.pool, version_id).await?;
        let title = match &choice.title {
            Some(t) => {
                crate::validate::line("title", t, 1, 200)?;
                t.trim().to_string()
            }
            None => source_title.unwrap_or_else(|| choice.quiz.clone()),
        };
        let max_score = version.content.nominal_max_score();
        items.push(content_item(
            &launch_url,
            &choice.quiz,
            &title,
            max_score,
            row.accept_lineitem,
        ));
    }
    let reg = store::registration(&state.pool, row.registration_id)
        .await?
        .ok_or_else(not_found)?;
    let now = jsonwebtoken::get_current_timestamp();
    let mut claims = json!({
        "iss": reg.client_id,
        "aud": reg.issuer,
        "iat": now,
        "exp": now + 300,
        "nonce": super::cookies::random_token(),
        claim::DEPLOYMENT_ID: row.deployment_id,
        claim::MESSAGE_TYPE: DEEP_LINKING_RESPONSE,
        claim::VERSION: LTI_VERSION,
        claim::DL_CONTENT_ITEMS: items,
    });
    if let Some(data) = &row.data {
        claims[claim::DL_DATA] = json!(data);
    }
    if body.items.is_empty() {
        claims[claim::DL_MSG] = json!("No quiz was placed.");
    }
    let jwt = super::keys::sign(&state.pool, &claims)
        .await
        .map_err(ApiError::internal)?;
    // Answered with exactly this response: the return page forwards it and no other.
    let used = store::use_deep_link(&state.pool, body.deep_link_id, &hash(&jwt)).await?;
    if !used {
        return Err(ApiError::new(
            Code::DeepLinkClosed,
            "This Deep Linking request was answered already.",
        ));
    }
    let wants_html = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"));
    if wants_html {
        return Ok(auto_post_page(&row.return_url, &jwt));
    }
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(DeepLinkResponse {
            return_url: row.return_url,
            jwt,
        }))
}

/// A Deep Linking request as its instructor sees it: what the platform accepts, and whether it
/// is still open.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeepLinkView {
    pub id: Uuid,
    /// The platform accepts several items at once; otherwise exactly one (or none: cancel).
    pub accept_multiple: bool,
    /// Each placed quiz gets a line item (a gradebook column) in the platform.
    pub accept_lineitem: bool,
    /// Answer before then (`POST /v1/lti/deep-link`).
    pub expires_at: chrono::DateTime<chrono::Utc>,
    /// Answered already: the request takes no other answer.
    pub answered: bool,
}

/// A Deep Linking request of the caller's (the destination of their Deep Linking launch):
/// what the content picker needs to offer.
#[utoipa::path(get, path = "/v1/lti/deep-link/{id}", tag = "lti", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The `deep_link_id` of the launch's destination")),
    responses(
        (status = 200, description = "The request", body = DeepLinkView),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such Deep Linking request, or not yours", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_request(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let id = id.into_inner();
    let row = store::deep_link(&state.pool, id)
        .await?
        .filter(|r| r.user_id == user.id)
        .ok_or_else(not_found)?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(DeepLinkView {
            id,
            accept_multiple: row.accept_multiple,
            accept_lineitem: row.accept_lineitem,
            expires_at: row.expires_at,
            answered: row.used_at.is_some(),
        }))
}

/// The form the front-end posts (a real form post, as a navigation) to go back to the
/// platform.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ReturnForm {
    /// The signed response `POST /v1/lti/deep-link` gave for this request.
    #[serde(rename = "JWT")]
    #[schema(min_length = 1, max_length = 60000)]
    pub jwt: String,
}

/// Back to the platform: a page that posts the response `POST /v1/lti/deep-link` signed for
/// this request, and only that one, to the platform's `deep_link_return_url` as the form field
/// `JWT`. The front-end's own policy lets its forms post to quizd alone (`form-action 'self'`),
/// so it goes through here; no bearer token is needed, the response itself is the proof.
#[utoipa::path(post, path = "/v1/lti/deep-link/{id}/return", tag = "lti",
    params(("id" = Uuid, Path, description = "The `deep_link_id` of the launch's destination")),
    request_body(content = ReturnForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "A page that posts the response to the platform at once", content_type = "text/html"),
        (status = 400, description = "Malformed form", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such answered request, or not the response quizd signed for it", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn return_to_platform(
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let form: ReturnForm = serde_urlencoded::from_bytes(&body).map_err(|e| {
        ApiError::new(
            Code::LtiInvalidRequest,
            format!("The form cannot be read: {e}."),
        )
    })?;
    if form.jwt.is_empty() || form.jwt.len() > 60_000 {
        return Err(not_found());
    }
    let row = store::deep_link(&state.pool, id.into_inner())
        .await?
        .ok_or_else(not_found)?;
    let signed = row
        .response_hash
        .as_deref()
        .is_some_and(|h| same_hash(&hash(&form.jwt), h));
    if !signed {
        return Err(not_found());
    }
    Ok(auto_post_page(&row.return_url, &form.jwt))
}

/// The one script of the page that posts a response to the platform.
const AUTO_POST_SCRIPT: &str = "document.getElementById('dl').submit();";

/// A CSP hash source for an inline script (`sha256-…`): the page runs that script and no other.
pub(super) fn script_hash(script: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(script.as_bytes()))
    )
}

/// A page that posts the response to the platform as soon as it loads. The platform frames
/// tools: its origin (that of the return URL) may frame this page.
fn auto_post_page(return_url: &str, jwt: &str) -> HttpResponse {
    let origin = reqwest::Url::parse(return_url)
        .ok()
        .map(|u| u.origin().ascii_serialization())
        .filter(|o| o != "null")
        .unwrap_or_else(|| "'none'".to_string());
    let page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Returning to the LMS</title></head>\
         <body><form id=\"dl\" method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"JWT\" value=\"{}\">\
         <noscript><button type=\"submit\">Continue</button></noscript></form>\
         <script>{AUTO_POST_SCRIPT}</script></body></html>\n",
        super::html_escape(return_url),
        super::html_escape(jwt)
    );
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            format!(
                "frame-ancestors {origin}; default-src 'none'; script-src '{}'; form-action *",
                script_hash(AUTO_POST_SCRIPT)
            ),
        ))
        .body(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_content_item_names_the_quiz_and_carries_a_line_item() {
        let item = content_item(
            "https://q.example/v1/lti/launch",
            "data-parallelism",
            "DP",
            8.0,
            true,
        );
        assert_eq!(item["type"], "ltiResourceLink");
        assert_eq!(item["custom"]["quiz"], "data-parallelism");
        assert_eq!(item["lineItem"]["scoreMaximum"], 8.0);
        let bare = content_item("https://q.example/v1/lti/launch", "x", "X", 1.0, false);
        assert!(bare.get("lineItem").is_none());
    }

    #[test]
    fn the_page_runs_its_one_script_by_hash_and_no_inline_script_else() {
        let res = auto_post_page("https://lms.example/dl?x=1", "a.b.c");
        let csp = res
            .headers()
            .get(header::CONTENT_SECURITY_POLICY)
            .unwrap()
            .to_str()
            .unwrap();
        assert!(!csp.contains("unsafe-inline"), "{csp}");
        assert!(csp.contains(&script_hash(AUTO_POST_SCRIPT)), "{csp}");
        assert!(
            csp.contains("frame-ancestors https://lms.example;"),
            "{csp}"
        );
        // The hash of a script is the base64 of its SHA-256 (CSP Level 2).
        assert_eq!(
            script_hash("alert(1);"),
            "sha256-5jFwrAK0UV47oFbVg/iCCBbxD8X1w+QvoOUepu4C2YA="
        );
    }
}
