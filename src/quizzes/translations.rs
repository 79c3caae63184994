//! The translation workflow: what is translated, stale or missing per locale
//! (`GET /v1/quizzes/{slug}/translations`), and XLIFF 2.1 export and import per version and
//! locale. Quiz authors and admins only.

use actix_web::{HttpResponse, web};
use serde::Serialize;
use utoipa::ToSchema;

use super::access;
use crate::auth::CurrentUser;
use crate::content::QuizContent;
use crate::error::{ApiError, Code, Problem};
use crate::state::AppState;

/// Where one text stands in one locale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TextState {
    /// Translated from the current source text: served.
    Translated,
    /// Translated from an earlier source text: stored, not served (the source is, marked by
    /// its `lang`).
    Stale,
    /// Not translated.
    Missing,
}

/// The state of every text of one question (or, with `question` null, of the quiz's title
/// and intro) in one locale.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TextGroupStatus {
    /// The question's key; `null` for the quiz's own texts (title, intro).
    pub question: Option<String>,
    pub translated: usize,
    pub stale: usize,
    pub missing: usize,
    /// Ids of the stale texts (as in the XLIFF export's unit ids).
    pub stale_texts: Vec<String>,
    /// Ids of the missing texts.
    pub missing_texts: Vec<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LocaleTranslationStatus {
    pub locale: String,
    pub translated: usize,
    pub stale: usize,
    pub missing: usize,
    /// The quiz's own texts first, then each question in order.
    pub items: Vec<TextGroupStatus>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TranslationStatus {
    pub quiz: String,
    /// The current version, which the status describes.
    pub version: i32,
    pub source_locale: String,
    /// Translatable texts in the quiz.
    pub texts: usize,
    /// Every locale the quiz has translations in (the source locale excluded).
    pub locales: Vec<LocaleTranslationStatus>,
}

/// The state of text `id` in `locale`. Pure.
pub fn text_state(
    content: &QuizContent,
    id: &str,
    text: &crate::i18n::Text,
    locale: &str,
) -> TextState {
    if !text.contains_key(locale) {
        TextState::Missing
    } else if content.is_stale(id, text, locale) {
        TextState::Stale
    } else {
        TextState::Translated
    }
}

/// The status of every translation of the stored content. Pure.
pub fn status(content: &QuizContent, version: i32) -> TranslationStatus {
    let texts = content.texts();
    let locales = content
        .locales
        .iter()
        .filter(|l| **l != content.source_locale)
        .map(|locale| {
            let mut items: Vec<TextGroupStatus> = Vec::new();
            for t in &texts {
                let key = t.question.map(str::to_string);
                if items.last().is_none_or(|g| g.question != key) {
                    items.push(TextGroupStatus {
                        question: key,
                        translated: 0,
                        stale: 0,
                        missing: 0,
                        stale_texts: Vec::new(),
                        missing_texts: Vec::new(),
                    });
                }
                let group = items.last_mut().expect("pushed");
                match text_state(content, &t.id, t.text, locale) {
                    TextState::Translated => group.translated += 1,
                    TextState::Stale => {
                        group.stale += 1;
                        group.stale_texts.push(t.id.clone());
                    }
                    TextState::Missing => {
                        group.missing += 1;
                        group.missing_texts.push(t.id.clone());
                    }
                }
            }
            LocaleTranslationStatus {
                locale: locale.clone(),
                translated: items.iter().map(|g| g.translated).sum(),
                stale: items.iter().map(|g| g.stale).sum(),
                missing: items.iter().map(|g| g.missing).sum(),
                items,
            }
        })
        .collect();
    TranslationStatus {
        quiz: content.slug.clone(),
        version,
        source_locale: content.source_locale.clone(),
        texts: texts.len(),
        locales,
    }
}

/// The stored content (stale translations and their records included) of a quiz's current
/// version, or of version `n`: for its authors and admins only.
pub(crate) async fn stored_version(
    state: &AppState,
    slug: &str,
    version: Option<i32>,
) -> Result<(i32, uuid::Uuid, QuizContent), ApiError> {
    let not_found = || ApiError::new(Code::VersionNotFound, "There is no such quiz version.");
    let (_, id) = crate::assignments::store::resolve_version(&state.pool, slug, version)
        .await?
        .ok_or_else(not_found)?;
    let row = super::store::version(&state.pool, id)
        .await?
        .ok_or_else(not_found)?;
    Ok((row.version, id, row.content.0))
}

/// Per locale, which texts of the current version are translated, stale (translated from a
/// source text that has since changed: not served) or missing, per question. The quiz's
/// authors and admins.
#[utoipa::path(get, path = "/v1/quizzes/{slug}/translations", tag = "authoring", security(("bearer" = [])),
    params(("slug" = String, Path, description = "The quiz's slug")),
    responses(
        (status = 200, description = "Translation status per locale", body = TranslationStatus),
        (status = 403, description = "A public quiz you do not author (`not_quiz_author`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz (or a private one you do not author)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn translation_status(
    state: web::Data<AppState>,
    user: CurrentUser,
    slug: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    access::authored(&state.pool, &slug, &user).await?;
    let (n, _, content) = stored_version(&state, &slug, None).await?;
    Ok(HttpResponse::Ok()
        .insert_header((actix_web::http::header::CACHE_CONTROL, "private, no-store"))
        .json(status(&content, n)))
}

/// The locale of a translation path: a canonical BCP 47 tag other than the quiz's source.
fn target_locale(locale: &str, content: &QuizContent) -> Result<(), ApiError> {
    if crate::i18n::canonical_tag(locale).as_deref() != Some(locale)
        || locale == content.source_locale
    {
        return Err(ApiError::new(
            Code::LocaleNotFound,
            "Not a translation locale of this quiz: use a canonical BCP 47 tag (bn, pt-BR) other \
             than the quiz's source locale.",
        ));
    }
    Ok(())
}

/// One version's texts for translation into one locale, as XLIFF 2.1: a unit per text, named
/// by its text id, with the source, the translation (state `translated`; a stale one `initial`
/// with `subState="quizd:stale"`, for review; none when missing) and a note saying what the
/// text is. The quiz's authors and admins.
#[utoipa::path(get, path = "/v1/quizzes/{slug}/versions/{version}/translations/{locale}.xlf", tag = "authoring", security(("bearer" = [])),
    params(
        ("slug" = String, Path, description = "The quiz's slug"),
        ("version" = i32, Path, description = "The version number"),
        ("locale" = String, Path, description = "The target locale (BCP 47)"),
    ),
    responses(
        (status = 200, description = "The XLIFF 2.1 document", body = String, content_type = "application/xliff+xml"),
        (status = 400, description = "Malformed version", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "A public quiz you do not author (`not_quiz_author`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz, version (`version_not_found`) or translation locale (`locale_not_found`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn export_xliff(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(String, i32, String)>,
) -> Result<HttpResponse, ApiError> {
    let (slug, version, locale) = path.into_inner();
    access::authored(&state.pool, &slug, &user).await?;
    let (n, _, content) = stored_version(&state, &slug, Some(version)).await?;
    target_locale(&locale, &content)?;
    let body = crate::content::xliff::export(&content, n, &locale);
    Ok(HttpResponse::Ok()
        .content_type(crate::content::xliff::CONTENT_TYPE)
        .insert_header((actix_web::http::header::CACHE_CONTROL, "private, no-store"))
        .insert_header((
            actix_web::http::header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{slug}-v{n}-{locale}.xlf\""),
        ))
        .body(body))
}

/// Imports a translator's XLIFF 2.0/2.1 for one locale: every unit whose state is
/// `translated`, `reviewed` or `final` becomes the locale's translation of its text (units
/// left `initial` change nothing), validated as a `<locale>.toml` is, and saved as a new
/// version of the quiz — all or nothing. Each unit's source must still be the quiz's current
/// source text (the version in the path may be an older export). No DTD is accepted (so no
/// entity is ever expanded or fetched); at most 1 MiB. The quiz's authors and admins.
#[utoipa::path(put, path = "/v1/quizzes/{slug}/versions/{version}/translations/{locale}.xlf", tag = "authoring", security(("bearer" = [])),
    params(
        ("slug" = String, Path, description = "The quiz's slug"),
        ("version" = i32, Path, description = "The version the document was exported from"),
        ("locale" = String, Path, description = "The target locale (BCP 47)"),
    ),
    request_body(content = String, content_type = "application/xliff+xml"),
    responses(
        (status = 200, description = "Saved as a new version (or unchanged)", body = crate::quizzes::authoring::AuthoredQuiz),
        (status = 400, description = "Not well-formed XLIFF 2, a DTD, or not UTF-8 (`invalid_xliff`)", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "A public quiz you do not author (`not_quiz_author`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz, version or translation locale", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not XML", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Units refused (`invalid_xliff_unit`: unknown id, changed source, inline markup, empty target; `detail` names each unit) or the result refused (`invalid_content`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn import_xliff(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(String, i32, String)>,
    req: actix_web::HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    use crate::content::xliff::{self, XliffError};
    let (slug, version, locale) = path.into_inner();
    access::authored(&state.pool, &slug, &user).await?;
    let content_type = req
        .headers()
        .get(actix_web::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !["application/xliff+xml", "application/xml", "text/xml"]
        .iter()
        .any(|t| content_type.starts_with(t))
    {
        return Err(ApiError::from_status(
            actix_web::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ));
    }
    // The version exported from must exist; the translations go onto the current version.
    stored_version(&state, &slug, Some(version)).await?;
    let (_, _, current) = stored_version(&state, &slug, None).await?;
    target_locale(&locale, &current)?;
    let text = String::from_utf8(body.to_vec())
        .map_err(|_| ApiError::new(Code::InvalidXliff, "The body is not UTF-8."))?;
    let target = locale.clone();
    // Parsing up to 1 MiB of XML is CPU work: off the HTTP workers.
    let applied = web::block(move || {
        let imported = xliff::import(&current, &target, &text)?;
        xliff::apply(&current, &target, &imported).map_err(|errors| {
            XliffError::Units(
                errors
                    .iter()
                    .map(|e| (e.question.clone().unwrap_or_default(), e.message.clone()))
                    .collect(),
            )
        })
    })
    .await
    .map_err(ApiError::internal)?;
    let content = match applied {
        Ok(c) => c,
        Err(XliffError::Malformed(why)) => return Err(ApiError::new(Code::InvalidXliff, why)),
        Err(XliffError::Units(problems)) => {
            let detail: Vec<String> = problems
                .iter()
                .map(|(unit, what)| format!("unit '{unit}': {what}"))
                .collect();
            return Err(ApiError::new(Code::InvalidXliffUnit, detail.join("\n")));
        }
    };
    super::authoring::save(
        &state,
        content,
        crate::content::store::Importer::Person {
            id: user.id,
            admin: user.is_admin(),
            create: false,
        },
    )
    .await
}
