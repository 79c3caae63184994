//! Authoring over the API: instructors and admins create and change quizzes in the content
//! file format, validated exactly as the importer validates; each change is a new version.

use std::collections::BTreeMap;

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::app::AppState;
use crate::auth::CurrentUser;
use crate::content::store::{ImportStatus, import};
use crate::content::{QuizContent, QuizSource, SourceFile, compile};
use crate::error::{ApiError, Problem};

/// The largest quiz (with its translations) accepted over the API.
pub const AUTHORING_BODY_LIMIT: usize = 1024 * 1024;

/// A quiz in the content file format: `quiz` is the text of `quiz.toml` or its JSON
/// equivalent; `translations` maps a locale to the text of `<locale>.toml` or its JSON
/// equivalent. (Or send just a `quiz.toml` as `application/toml`.)
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuizDocument {
    #[schema(value_type = Object)]
    pub quiz: serde_json::Value,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub translations: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuthoredStatus {
    Created,
    NewVersion,
    Unchanged,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuthoredQuiz {
    pub slug: String,
    /// The current version after this change.
    pub version: i32,
    pub status: AuthoredStatus,
}

fn as_toml(name: &str, value: serde_json::Value) -> Result<String, ApiError> {
    match value {
        serde_json::Value::String(text) => Ok(text),
        other @ serde_json::Value::Object(_) => toml::to_string(&other).map_err(|e| {
            ApiError::unprocessable(
                "invalid_content",
                format!("{name}: cannot be a content file: {e}"),
            )
        }),
        _ => Err(ApiError::unprocessable(
            "invalid_content",
            format!("{name}: expected the file's text or its JSON object"),
        )),
    }
}

/// Reads the body as TOML (one `quiz.toml`) or as a JSON [`QuizDocument`], then compiles it.
fn parse_body(req: &HttpRequest, body: &[u8]) -> Result<QuizContent, ApiError> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::bad_request("invalid_body", "The body is not UTF-8."))?;
    if text.contains('\0') {
        return Err(ApiError::bad_request(
            "invalid_body",
            "The body contains a NUL character.",
        ));
    }
    let source = if content_type.starts_with("application/toml") {
        QuizSource {
            quiz: SourceFile {
                name: "quiz.toml".into(),
                text: text.to_string(),
            },
            translations: Vec::new(),
        }
    } else if content_type.starts_with("application/json") {
        let doc: QuizDocument = serde_json::from_str(text).map_err(|e| {
            ApiError::bad_request("invalid_body", format!("Invalid JSON body: {e}"))
        })?;
        let mut translations = Vec::new();
        for (locale, value) in doc.translations {
            let name = format!("{locale}.toml");
            let text = as_toml(&name, value)?;
            translations.push((locale, SourceFile { name, text }));
        }
        QuizSource {
            quiz: SourceFile {
                name: "quiz.toml".into(),
                text: as_toml("quiz.toml", doc.quiz)?,
            },
            translations,
        }
    } else {
        return Err(ApiError::from_status(StatusCode::UNSUPPORTED_MEDIA_TYPE));
    };
    compile(&source).map_err(|errors| {
        let detail: Vec<String> = errors.iter().map(ToString::to_string).collect();
        ApiError::unprocessable("invalid_content", detail.join("\n"))
    })
}

async fn save(
    state: &AppState,
    content: QuizContent,
    owner: Option<Uuid>,
) -> Result<HttpResponse, ApiError> {
    let imported = import(&state.pool, std::slice::from_ref(&content), owner).await?;
    // This process knows at once; others hear it from PostgreSQL.
    state.quizzes.forget_current();
    let i = &imported[0];
    let (status, code) = match i.status {
        ImportStatus::Created => (AuthoredStatus::Created, StatusCode::CREATED),
        ImportStatus::NewVersion => (AuthoredStatus::NewVersion, StatusCode::OK),
        ImportStatus::Unchanged => (AuthoredStatus::Unchanged, StatusCode::OK),
    };
    Ok(HttpResponse::build(code).json(AuthoredQuiz {
        slug: i.slug.clone(),
        version: i.version,
        status,
    }))
}

#[derive(sqlx::FromRow)]
struct Ownership {
    owner_id: Option<Uuid>,
}

/// Creates a quiz; you own it. Instructors and admins.
#[utoipa::path(post, path = "/v1/quizzes", tag = "authoring", security(("bearer" = [])),
    request_body(content(
        (QuizDocument = "application/json"),
        (String = "application/toml"),
    )),
    responses(
        (status = 201, description = "Created as version 1", body = AuthoredQuiz),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Not signed in", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Learners cannot author", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A quiz with this slug exists; PUT to change it", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor TOML", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The content is refused; `detail` lists every problem", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Database unavailable; retry", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_quiz(
    state: web::Data<AppState>,
    user: CurrentUser,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    user.require_staff()?;
    let content = parse_body(&req, &body)?;
    if super::store::current_version_id(&state.pool, &content.slug)
        .await?
        .is_some()
    {
        return Err(ApiError::conflict(
            "quiz_exists",
            format!(
                "A quiz with slug '{}' exists; PUT /v1/quizzes/{} to change it.",
                content.slug, content.slug
            ),
        ));
    }
    save(&state, content, Some(user.id)).await
}

/// Changes a quiz: a new immutable version when the content differs. Its owner and admins.
#[utoipa::path(put, path = "/v1/quizzes/{slug}", tag = "authoring", security(("bearer" = [])),
    params(("slug" = String, Path, description = "The quiz's slug")),
    request_body(content(
        (QuizDocument = "application/json"),
        (String = "application/toml"),
    )),
    responses(
        (status = 200, description = "Saved (or unchanged)", body = AuthoredQuiz),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Not signed in", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Not yours, or you are a learner", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor TOML", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The content is refused, or its slug differs from the path", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Database unavailable; retry", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn update_quiz(
    state: web::Data<AppState>,
    user: CurrentUser,
    slug: web::Path<String>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    user.require_staff()?;
    let not_found = || ApiError::not_found("quiz_not_found", "There is no quiz with this slug.");
    if !super::routes::plausible_slug(&slug) {
        return Err(not_found());
    }
    let ownership: Ownership = sqlx::query_as("SELECT owner_id FROM quizzes WHERE slug = $1")
        .bind(slug.as_str())
        .fetch_optional(&state.pool)
        .await?
        .ok_or_else(not_found)?;
    if !user.is_admin() && ownership.owner_id != Some(user.id) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "Only the quiz's owner or an admin can change it.",
        ));
    }
    let content = parse_body(&req, &body)?;
    if content.slug != *slug {
        return Err(ApiError::unprocessable(
            "slug_mismatch",
            format!(
                "The content's slug '{}' differs from the path's '{}'.",
                content.slug, slug
            ),
        ));
    }
    save(&state, content, None).await
}

/// One version of a quiz with everything: answer key, explanations, feedback, all locales.
/// Instructors and admins only; learners never.
#[utoipa::path(get, path = "/v1/quizzes/{slug}/versions/{version}", tag = "authoring", security(("bearer" = [])),
    params(
        ("slug" = String, Path, description = "The quiz's slug"),
        ("version" = i32, Path, description = "The version number"),
    ),
    responses(
        (status = 200, description = "The version's full content (the importer's normalized form)", body = Object),
        (status = 400, description = "Malformed version", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Not signed in", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Learners cannot see the key", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz or version", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Database unavailable; retry", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_version(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(String, i32)>,
) -> Result<HttpResponse, ApiError> {
    user.require_staff()?;
    let (slug, version) = path.into_inner();
    let not_found = || ApiError::not_found("version_not_found", "There is no such quiz version.");
    if !super::routes::plausible_slug(&slug) {
        return Err(not_found());
    }
    let (_, version_id) =
        crate::assignments::store::resolve_version(&state.pool, &slug, Some(version))
            .await?
            .ok_or_else(not_found)?;
    let v = state
        .quizzes
        .get(&state.pool, version_id)
        .await?
        .ok_or_else(not_found)?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(&v.content))
}
