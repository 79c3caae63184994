//! `GET /v1/quizzes` and `GET /v1/quizzes/{slug}`: the catalogue, no login needed.

use std::sync::Arc;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use utoipa::IntoParams;

use super::QuizVersion;
use super::access::quiz_not_found;
use super::models::{QuizList, QuizSummary, QuizView};
use super::store;
use crate::auth::CurrentUser;
use crate::content::Visibility;
use crate::error::{ApiError, Problem};
use crate::i18n::requested_locales;
use crate::pagination;
use crate::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LangQuery {
    /// Preferred locale (BCP 47), before `Accept-Language`. An unsupported one falls back.
    pub lang: Option<String>,
}

/// The catalogue's query: a locale and a page.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CatalogueQuery {
    /// Preferred locale (BCP 47), before `Accept-Language`. An unsupported one falls back.
    pub lang: Option<String>,
    /// Quizzes per page: 1 to 200; 50 when absent.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
    /// The `next` of the previous page; absent for the first page.
    pub cursor: Option<String>,
}

/// The requested locales of a request: `?lang=`, then `Accept-Language` by q-value. A `lang`
/// that is not a language tag (or empty) is ignored like an unsupported one: the reader still
/// gets the quiz, in the fallback, and the response says which language that is.
pub fn request_locales(req: &HttpRequest, lang: Option<&str>) -> Vec<String> {
    let accept = req
        .headers()
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    requested_locales(lang, accept)
}

/// A slug that cannot exist is answered without asking the database.
pub fn plausible_slug(slug: &str) -> bool {
    !slug.is_empty()
        && !crate::content::RESERVED_SLUGS.contains(&slug)
        && slug.len() <= 64
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The catalogue: every public quiz with its title in the negotiated locale. Private quizzes
/// (course exams) are not listed: they exist for learners only through assignments. Signed in,
/// you also see the private quizzes you author (`visibility: private`), to place them.
#[utoipa::path(
    get,
    path = "/v1/quizzes",
    tag = "quizzes",
    params(CatalogueQuery, ("Accept-Language" = Option<String>, Header, description = "Preferred locales with q-values"), ("If-None-Match" = Option<String>, Header, description = "Entity tags of the copies the client holds; the first 64 are compared")),
    responses(
        (status = 200, description = "A page of the catalogue, by slug", body = QuizList,
            headers(("ETag" = String, description = "A strong entity tag of this representation"),
                    ("Link" = String, description = "`<…>; rel=\"next\"`: the next page, absent on the last"))),
        (status = 304, description = "Not modified: the client's copy (`If-None-Match`) is current; no body", headers(("ETag" = String, description = "The current entity tag"))),
        (status = 400, description = "Malformed query, or `limit` out of range (`invalid_limit`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A cursor this list did not give (`invalid_cursor`)", body = Problem, content_type = "application/problem+json"),
    ),
    security((), ("bearer" = [])),
)]
pub async fn list_quizzes(
    state: web::Data<AppState>,
    user: Option<CurrentUser>,
    query: web::Query<CatalogueQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let requested = request_locales(&req, query.lang.as_deref());
    let admin = user.as_ref().is_some_and(CurrentUser::is_admin);
    let reader = user.map(|u| u.id);
    let list = match reader {
        Some(id) => format!("quizzes:{id}"),
        None => "quizzes".to_string(),
    };
    let page = (state.cursors).page::<String>(&list, query.limit, query.cursor.as_deref())?;
    let rows =
        store::current_versions(&state.pool, reader, page.after.as_deref(), page.fetch()).await?;
    let (rows, next) = (state.cursors).cut(&list, rows, page.limit, |(slug, _, _)| slug.clone());
    let mut items = Vec::new();
    for (_, id, authored) in rows {
        if let Some(v) = state.quizzes.get(&state.pool, id).await? {
            items.push(QuizSummary {
                editable: authored || admin,
                ..v.summary(&requested)
            });
        }
    }
    let body = QuizList { items, next };
    let mut res = pagination::respond(&req, body.next.as_deref(), &body);
    let headers = res.headers_mut();
    headers.insert(
        header::VARY,
        HeaderValue::from_static("Accept-Language, Authorization"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(res)
}

/// One public quiz in one locale, field by field with fallback; no key material. A private
/// quiz is served only to its authors and admins (signed in); to anyone else it does not exist.
#[utoipa::path(
    get,
    path = "/v1/quizzes/{slug}",
    tag = "quizzes",
    params(
        ("slug" = String, Path, description = "The quiz's slug, e.g. data-parallelism"),
        LangQuery,
        ("Accept-Language" = Option<String>, Header, description = "Preferred locales with q-values"),
        ("If-None-Match" = Option<String>, Header, description = "Entity tags of the copies the client holds; the first 64 are compared"),
    ),
    responses(
        (status = 200, description = "The quiz in the negotiated locale", body = QuizView,
            headers(("Content-Language" = String, description = "The negotiated locale"),
                ("ETag" = String, description = "A strong entity tag of this representation"))),
        (status = 304, description = "Not modified: the client's copy (`If-None-Match`) is current; no body", headers(("ETag" = String, description = "The current entity tag"))),
        (status = 400, description = "Malformed query", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz, or a private one", body = Problem, content_type = "application/problem+json"),
    ),
    security((), ("bearer" = [])),
)]
pub async fn get_quiz(
    state: web::Data<AppState>,
    user: Option<CurrentUser>,
    slug: web::Path<String>,
    query: web::Query<LangQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let requested = request_locales(&req, query.lang.as_deref());
    let version = readable_current(&state, user.as_ref(), &slug).await?;
    let (locale, view) = version.view_json(&requested).map_err(ApiError::internal)?;
    let lang = HeaderValue::from_str(&locale).map_err(ApiError::internal)?;
    Ok(HttpResponse::Ok()
        .content_type(header::ContentType::json())
        .insert_header((header::ETAG, view.etag))
        .insert_header((header::CONTENT_LANGUAGE, lang))
        .insert_header((header::VARY, "Accept-Language, Authorization"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(view.body))
}

/// The quiz's current version, if the caller may read its page: a public quiz, anyone; a
/// private one, its authors and admins (signed in); to anyone else it does not exist.
async fn readable_current(
    state: &AppState,
    user: Option<&CurrentUser>,
    slug: &str,
) -> Result<Arc<QuizVersion>, ApiError> {
    if !plausible_slug(slug) {
        return Err(quiz_not_found());
    }
    let version = state
        .quizzes
        .current(&state.pool, slug)
        .await?
        .ok_or_else(quiz_not_found)?;
    if version.content.visibility != Visibility::Public {
        match user {
            Some(user) => {
                super::access::authored(&state.pool, slug, user).await?;
            }
            None => return Err(quiz_not_found()),
        }
    }
    Ok(version)
}

/// An image of a question on the quiz's page (`image.url` in `GET /v1/quizzes/{slug}`), to
/// whoever may read that page: the questions every attempt serves, of the current version. A
/// question drawn from a bank shows its image only in the attempts that draw it.
#[utoipa::path(
    get,
    path = "/v1/quizzes/{slug}/media/{sha256}",
    tag = "quizzes",
    params(
        ("slug" = String, Path, description = "The quiz's slug"),
        ("sha256" = String, Path, description = "The image's SHA-256, as its `url` names it"),
        ("If-None-Match" = Option<String>, Header, description = "The entity tag held: the image's hash, quoted"),
    ),
    responses(
        super::media::ImageResponses,
        (status = 404, description = "No such quiz, or a private one (`quiz_not_found`); no such image on its page (`media_not_found`)", body = Problem, content_type = "application/problem+json"),
    ),
    security((), ("bearer" = [])),
)]
pub async fn get_quiz_media(
    state: web::Data<AppState>,
    user: Option<CurrentUser>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (slug, sha256) = path.into_inner();
    let version = readable_current(&state, user.as_ref(), &slug).await?;
    if !super::media::plausible_hash(&sha256) {
        return Err(super::media::media_not_found());
    }
    let image = (version.content.fixed_questions().into_iter())
        .filter_map(|q| q.image.as_ref())
        .find(|i| i.sha256 == sha256)
        .ok_or_else(super::media::media_not_found)?;
    super::media::serve(&state, &req, image).await
}

/// This module's endpoints (resources, not method-guarded routes, so that a wrong method is a
/// `405`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    use super::{authoring, interchange, translations};
    use crate::telemetry::resource;
    use web::{delete, get, post, put};
    let authoring_limit = web::PayloadConfig::new(authoring::AUTHORING_BODY_LIMIT);
    let revalidated = || actix_web::middleware::from_fn(crate::conditional::revalidate);
    // Before `/v1/quizzes/{slug}`: `import` is a reserved slug (`content::RESERVED_SLUGS`),
    // so this path names the endpoint whatever the method (another method is a `405`).
    cfg.service(
        resource("/v1/quizzes/import")
            .app_data(authoring_limit.clone())
            .route(
                post()
                    .to(interchange::import_questions)
                    .wrap(actix_web::middleware::from_fn(crate::idempotency::guard)),
            ),
    )
    .service(
        resource("/v1/quizzes")
            .wrap(revalidated())
            .app_data(authoring_limit.clone())
            .route(get().to(list_quizzes))
            .route(
                post()
                    .to(authoring::create_quiz)
                    .wrap(actix_web::middleware::from_fn(crate::idempotency::guard)),
            ),
    )
    .service(
        resource("/v1/quizzes/{slug}")
            .wrap(revalidated())
            .app_data(authoring_limit.clone())
            .route(get().to(get_quiz))
            .route(put().to(authoring::update_quiz)),
    )
    .service(resource("/v1/quizzes/{slug}/media/{sha256}").route(get().to(get_quiz_media)))
    .service(
        resource("/v1/quizzes/{slug}/versions/{version}").route(get().to(authoring::get_version)),
    )
    .service(
        resource("/v1/quizzes/{slug}/versions/{version}/export")
            .route(get().to(interchange::export_version)),
    )
    .service(resource("/v1/quizzes/{slug}/authors").route(get().to(authoring::list_authors)))
    .service(
        resource("/v1/quizzes/{slug}/authors/{user_id}")
            .route(put().to(authoring::add_author))
            .route(delete().to(authoring::remove_author)),
    )
    .service(
        resource("/v1/quizzes/{slug}/versions/{version}/translations/{locale}.xlf")
            .app_data(authoring_limit.clone())
            .route(get().to(translations::export_xliff))
            .route(put().to(translations::import_xliff)),
    )
    .service(
        resource("/v1/quizzes/{slug}/versions/{version}/translations/{locale}.po")
            .app_data(authoring_limit)
            .route(get().to(translations::export_po))
            .route(put().to(translations::import_po)),
    )
    .service(
        resource("/v1/quizzes/{slug}/translations")
            .route(get().to(translations::translation_status)),
    );
}

/// This module's part of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    list_quizzes,
    get_quiz,
    get_quiz_media,
    super::authoring::create_quiz,
    super::authoring::update_quiz,
    super::authoring::get_version,
    super::authoring::list_authors,
    super::authoring::add_author,
    super::authoring::remove_author,
    super::translations::translation_status,
    super::translations::export_xliff,
    super::translations::import_xliff,
    super::translations::export_po,
    super::translations::import_po,
    super::interchange::import_questions,
    super::interchange::export_version,
))]
pub struct Api;
