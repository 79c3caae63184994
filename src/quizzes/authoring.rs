//! Authoring over the API: instructors and admins create and change quizzes in the content
//! file format, validated exactly as the importer validates; each change is a new version.

use std::collections::BTreeMap;

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::access;
use crate::audit::{self, Action, Entry};
use crate::auth::CurrentUser;
use crate::content::store::{ImportError, ImportStatus, Importer, import};
use crate::content::{QuizContent, QuizSource, SourceFile, Visibility, compile};
use crate::error::{ApiError, Code, Problem};
use crate::state::AppState;

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
            ApiError::new(
                Code::InvalidContent,
                format!("{name}: cannot be a content file: {e}"),
            )
        }),
        _ => Err(ApiError::new(
            Code::InvalidContent,
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
        .map_err(|_| ApiError::new(Code::InvalidBody, "The body is not UTF-8."))?;
    if text.contains('\0') {
        return Err(ApiError::new(
            Code::InvalidBody,
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
        let doc: QuizDocument = serde_json::from_str(text)
            .map_err(|e| ApiError::new(Code::InvalidBody, format!("Invalid JSON body: {e}")))?;
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
        ApiError::new(Code::InvalidContent, detail.join("\n"))
    })
}

pub(crate) async fn save(
    state: &AppState,
    content: QuizContent,
    importer: Importer,
) -> Result<HttpResponse, ApiError> {
    let (code, authored) = store(state, content, importer).await?;
    Ok(HttpResponse::build(code).json(authored))
}

/// Imports `content` as `importer`: the status to answer with and what became of the quiz.
pub(crate) async fn store(
    state: &AppState,
    content: QuizContent,
    importer: Importer,
) -> Result<(StatusCode, AuthoredQuiz), ApiError> {
    let imported = import(&state.pool, std::slice::from_ref(&content), importer)
        .await
        .map_err(|e| match e {
            ImportError::Db(e) => e.into(),
            ImportError::SlugTaken(slug) => ApiError::new(
                Code::SlugTaken,
                format!("The slug '{slug}' belongs to another quiz; choose another."),
            ),
            ImportError::NotAuthor(_) => ApiError::new(
                Code::NotQuizAuthor,
                "Only the quiz's authors and admins can change it.",
            ),
            ImportError::NoSuchQuiz(_) => super::access::quiz_not_found(),
        })?;
    // This process knows at once; others hear it from PostgreSQL.
    state.quizzes.forget_current();
    let i = &imported[0];
    let (status, code) = match i.status {
        ImportStatus::Created => (AuthoredStatus::Created, StatusCode::CREATED),
        ImportStatus::NewVersion => (AuthoredStatus::NewVersion, StatusCode::OK),
        ImportStatus::Unchanged => (AuthoredStatus::Unchanged, StatusCode::OK),
    };
    Ok((
        code,
        AuthoredQuiz {
            slug: i.slug.clone(),
            version: i.version,
            status,
        },
    ))
}

/// Creates a quiz; you own it. Instructors and admins. A slug you author already gets a new
/// version, as `PUT` would give it; anyone else's is `409 slug_taken`. A quiz is `private`
/// unless its content says `visibility = "public"`.
#[utoipa::path(post, path = "/v1/quizzes", tag = "authoring", security(("bearer" = [])),
    request_body(content(
        (QuizDocument = "application/json"),
        (String = "application/toml"),
    )),
    responses(
        (status = 201, description = "Created as version 1", body = AuthoredQuiz),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Learners cannot author", body = Problem, content_type = "application/problem+json"),
        (status = 200, description = "A quiz you author: saved as a new version (or unchanged)", body = AuthoredQuiz),
        (status = 409, description = "The slug belongs to a quiz you do not author (`slug_taken`)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor TOML", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The content is refused; `detail` lists every problem", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_quiz(
    state: web::Data<AppState>,
    user: CurrentUser,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    user.require_staff()?;
    let content = parse_body(&req, &body)?;
    // Who may write the slug is decided inside the import's transaction, not read before it:
    // two instructors creating one slug at once get one 201 and one 409.
    save(
        &state,
        content,
        Importer::Person {
            id: user.id,
            admin: user.is_admin(),
            create: true,
        },
    )
    .await
}

/// Changes a quiz: a new immutable version when the content differs. Its owner, co-authors
/// and admins.
#[utoipa::path(put, path = "/v1/quizzes/{slug}", tag = "authoring", security(("bearer" = [])),
    params(("slug" = String, Path, description = "The quiz's slug")),
    request_body(content(
        (QuizDocument = "application/json"),
        (String = "application/toml"),
    )),
    responses(
        (status = 200, description = "Saved (or unchanged)", body = AuthoredQuiz),
        (status = 400, description = "Malformed body", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "A public quiz you do not author (`not_quiz_author`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz (or a private one you do not author)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor TOML", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The content is refused, or its slug differs from the path", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn update_quiz(
    state: web::Data<AppState>,
    user: CurrentUser,
    slug: web::Path<String>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    access::authored(&state.pool, &slug, &user).await?;
    let content = parse_body(&req, &body)?;
    if content.slug != *slug {
        return Err(ApiError::new(
            Code::SlugMismatch,
            format!(
                "The content's slug '{}' differs from the path's '{}'.",
                content.slug, slug
            ),
        ));
    }
    // Checked again inside the import's transaction, against a co-author removed meanwhile.
    save(
        &state,
        content,
        Importer::Person {
            id: user.id,
            admin: user.is_admin(),
            create: false,
        },
    )
    .await
}

/// One version of a quiz with everything: answer key, explanations, feedback, all locales.
/// The quiz's authors and admins, and the staff of a course where this version is assigned;
/// nobody else.
#[utoipa::path(get, path = "/v1/quizzes/{slug}/versions/{version}", tag = "authoring", security(("bearer" = [])),
    params(
        ("slug" = String, Path, description = "The quiz's slug"),
        ("version" = i32, Path, description = "The version number"),
    ),
    responses(
        (status = 200, description = "The version's full content (the importer's normalized form)", body = Object),
        (status = 400, description = "Malformed version", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "A public quiz's key, which you may not read (`key_forbidden`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz or version (or a private one whose key you may not read)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_version(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(String, i32)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (slug, version) = path.into_inner();
    let not_found = || ApiError::new(Code::VersionNotFound, "There is no such quiz version.");
    if !super::routes::plausible_slug(&slug) {
        return Err(not_found());
    }
    let quiz = super::store::access(&state.pool, &slug, user.id)
        .await?
        .ok_or_else(not_found)?;
    let (_, version_id) =
        crate::assignments::store::resolve_version(&state.pool, &slug, Some(version))
            .await?
            .ok_or_else(not_found)?;
    if !access::reads_key(&state.pool, &quiz, version_id, &user).await? {
        return Err(match quiz.visibility {
            Visibility::Private => not_found(),
            Visibility::Public => ApiError::new(
                Code::KeyForbidden,
                "Only the quiz's authors, admins and the staff of a course it is assigned in \
                 read its key.",
            ),
        });
    }
    // The stored content, stale translations and their records included (the cache holds it
    // as served).
    let v = super::store::version(&state.pool, version_id)
        .await?
        .ok_or_else(not_found)?;
    // Authors read their own keys as they write them; anyone else's read is on record.
    if !quiz.is_author {
        audit::store::record(
            &state.pool,
            Entry::by(user.id, Action::KeyRead, &req)
                .subject(quiz.quiz_id)
                .detail(serde_json::json!({ "quiz": slug, "version": version })),
        )
        .await?;
    }
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(&v.content.0))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuthorList {
    pub items: Vec<super::store::Author>,
}

/// A quiz's authors: its owner, then its co-authors. Its authors and admins.
#[utoipa::path(get, path = "/v1/quizzes/{slug}/authors", tag = "authoring", security(("bearer" = [])),
    params(("slug" = String, Path, description = "The quiz's slug")),
    responses(
        (status = 200, description = "The authors", body = AuthorList),
        (status = 403, description = "A public quiz you do not author (`not_quiz_author`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz (or a private one you do not author)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_authors(
    state: web::Data<AppState>,
    user: CurrentUser,
    slug: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let quiz = access::authored(&state.pool, &slug, &user).await?;
    let items = super::store::authors(&state.pool, quiz.quiz_id).await?;
    Ok(HttpResponse::Ok().json(AuthorList { items }))
}

/// The quiz, if the caller owns it or is an admin: only they choose who else authors it.
async fn owned(
    state: &AppState,
    slug: &str,
    user: &CurrentUser,
) -> Result<super::store::QuizAccess, ApiError> {
    let quiz = access::authored(&state.pool, slug, user).await?;
    if quiz.owner_id == Some(user.id) || user.is_admin() {
        Ok(quiz)
    } else {
        Err(ApiError::new(
            Code::NotQuizOwner,
            "Only the quiz's owner and admins choose its co-authors.",
        ))
    }
}

/// Makes a person a co-author: they may change the quiz and read every version's key. The
/// quiz's owner and admins. Idempotent.
#[utoipa::path(put, path = "/v1/quizzes/{slug}/authors/{user_id}", tag = "authoring", security(("bearer" = [])),
    params(
        ("slug" = String, Path, description = "The quiz's slug"),
        ("user_id" = Uuid, Path, description = "The person to add"),
    ),
    responses(
        (status = 204, description = "They are a co-author"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not own the quiz (`not_quiz_owner`, `not_quiz_author`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz (or a private one you do not author)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "No such person (`unknown_user`), or the owner (`already_owner`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn add_author(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(String, Uuid)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (slug, person) = path.into_inner();
    let quiz = owned(&state, &slug, &user).await?;
    if quiz.owner_id == Some(person) {
        return Err(ApiError::new(
            Code::AlreadyOwner,
            "This person owns the quiz.",
        ));
    }
    let mut tx = state.pool.begin().await?;
    if !super::store::add_coauthor(&mut *tx, quiz.quiz_id, person, user.id).await? {
        return Err(ApiError::new(
            Code::UnknownUser,
            "There is no person with this id.",
        ));
    }
    audit::store::record(
        &mut *tx,
        Entry::by(user.id, Action::CoauthorAdded, &req)
            .subject(person)
            .detail(serde_json::json!({ "quiz": slug })),
    )
    .await?;
    tx.commit().await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Removes a co-author. The quiz's owner and admins; the owner cannot be removed.
#[utoipa::path(delete, path = "/v1/quizzes/{slug}/authors/{user_id}", tag = "authoring", security(("bearer" = [])),
    params(
        ("slug" = String, Path, description = "The quiz's slug"),
        ("user_id" = Uuid, Path, description = "The co-author to remove"),
    ),
    responses(
        (status = 204, description = "They are no longer a co-author"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not own the quiz", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz, or no such co-author (`author_not_found`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The owner cannot be removed (`owner_stays`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn remove_author(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(String, Uuid)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (slug, person) = path.into_inner();
    let quiz = owned(&state, &slug, &user).await?;
    if quiz.owner_id == Some(person) {
        return Err(ApiError::new(
            Code::OwnerStays,
            "The quiz's owner cannot be removed from its authors.",
        ));
    }
    let mut tx = state.pool.begin().await?;
    if !super::store::remove_coauthor(&mut *tx, quiz.quiz_id, person).await? {
        return Err(ApiError::new(
            Code::AuthorNotFound,
            "This person is not a co-author of the quiz.",
        ));
    }
    audit::store::record(
        &mut *tx,
        Entry::by(user.id, Action::CoauthorRemoved, &req)
            .subject(person)
            .detail(serde_json::json!({ "quiz": slug })),
    )
    .await?;
    tx.commit().await?;
    Ok(HttpResponse::NoContent().finish())
}
