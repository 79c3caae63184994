//! The translation workflow: what is translated, stale or missing per locale
//! (`GET /v1/quizzes/{slug}/translations`), and XLIFF 2.1 export and import per version and
//! locale. Quiz authors and admins only.

use actix_web::{HttpResponse, web};
use serde::Serialize;
use utoipa::ToSchema;

use super::access;
use crate::app::AppState;
use crate::auth::CurrentUser;
use crate::content::QuizContent;
use crate::error::{ApiError, Problem};

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
    let not_found = || ApiError::not_found("version_not_found", "There is no such quiz version.");
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
        (status = 401, description = "Not signed in", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "A public quiz you do not author (`not_quiz_author`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz (or a private one you do not author)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Database unavailable; retry", body = Problem, content_type = "application/problem+json"),
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
