//! The translation workflow: what is translated, stale or missing per locale
//! (`GET /v1/quizzes/{slug}/translations`), and XLIFF 2.1 export and import per version and
//! locale. Quiz authors and admins only.

use actix_web::{HttpResponse, web};
use serde::Serialize;
use sqlx::PgPool;
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
    pool: &PgPool,
    slug: &str,
    version: Option<i32>,
) -> Result<(i32, uuid::Uuid, QuizContent), ApiError> {
    let not_found = || ApiError::new(Code::VersionNotFound, "There is no such quiz version.");
    let (_, id) = crate::assignments::store::resolve_version(pool, slug, version)
        .await?
        .ok_or_else(not_found)?;
    let row = super::store::version(pool, id)
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
    let (n, _, content) = stored_version(&state.pool, &slug, None).await?;
    Ok(HttpResponse::Ok()
        .insert_header((actix_web::http::header::CACHE_CONTROL, "private, no-store"))
        .json(status(&content, n)))
}

/// The locale of a translation path: a canonical BCP 47 tag other than the quiz's source.
pub(crate) fn target_locale(locale: &str, content: &QuizContent) -> Result<(), ApiError> {
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

/// The translation exchange formats, each at its own path suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Xliff,
    Po,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Xliff => "xlf",
            Format::Po => "po",
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Format::Xliff => crate::content::xliff::CONTENT_TYPE,
            Format::Po => crate::content::po::CONTENT_TYPE,
        }
    }

    /// The media types an upload may say it is.
    fn accepts(self, content_type: &str) -> bool {
        let types: &[&str] = match self {
            Format::Xliff => &["application/xliff+xml", "application/xml", "text/xml"],
            Format::Po => &[
                "text/x-gettext-translation",
                "text/x-po",
                "application/x-gettext",
                "text/plain",
            ],
        };
        types.iter().any(|t| content_type.starts_with(t))
    }
}

/// The most problems one refused import lists; the rest are counted.
const MAX_PROBLEMS: usize = 50;

/// Earlier source texts by their hash, for the PO export's `#| msgid` of stale entries: read
/// from the quiz's other versions only when some translation is stale.
async fn earlier_sources(
    pool: &PgPool,
    slug: &str,
    content: &QuizContent,
    locale: &str,
) -> Result<std::collections::BTreeMap<String, String>, ApiError> {
    let wanted: std::collections::HashSet<&String> = content
        .translated_from
        .values()
        .filter_map(|by_locale| by_locale.get(locale))
        .collect();
    let mut out = std::collections::BTreeMap::new();
    if wanted.is_empty() {
        return Ok(out);
    }
    for other in super::store::version_contents(pool, slug).await? {
        for t in other.0.texts() {
            if let Some(source) = t.text.get(&other.0.source_locale) {
                let hash = crate::content::model::source_hash(source);
                if wanted.contains(&hash) {
                    out.insert(hash, source.clone());
                }
            }
        }
    }
    Ok(out)
}

/// Version `version` (or the current one) of quiz `slug` for translation into `locale`, in
/// `format`: its number and the file. No access check: callers make it.
pub async fn exported(
    pool: &PgPool,
    slug: &str,
    version: Option<i32>,
    locale: &str,
    format: Format,
) -> Result<(i32, String), ApiError> {
    let (n, _, content) = stored_version(pool, slug, version).await?;
    target_locale(locale, &content)?;
    let body = match format {
        Format::Xliff => crate::content::xliff::export(&content, n, locale),
        Format::Po => {
            let previous = earlier_sources(pool, slug, &content, locale).await?;
            crate::content::po::export(&content, n, locale, &previous)
        }
    };
    Ok((n, body))
}

/// The export of `path`'s version and locale in `format`, as a download.
async fn export(
    state: &AppState,
    user: &CurrentUser,
    path: (String, i32, String),
    format: Format,
) -> Result<HttpResponse, ApiError> {
    let (slug, version, locale) = path;
    access::authored(&state.pool, &slug, user).await?;
    let (n, body) = exported(&state.pool, &slug, Some(version), &locale, format).await?;
    Ok(HttpResponse::Ok()
        .content_type(format.content_type())
        .insert_header((actix_web::http::header::CACHE_CONTROL, "private, no-store"))
        .insert_header((
            actix_web::http::header::CONTENT_DISPOSITION,
            format!(
                "attachment; filename=\"{slug}-v{n}-{locale}.{}\"",
                format.extension()
            ),
        ))
        .body(body))
}

/// Why an import was refused: the whole document, or some of its units or entries.
pub enum Refused {
    Malformed(String),
    Units(Vec<(String, String)>),
}

/// Reads `text` in `format` for `locale` against `current` and applies it: the new content,
/// or why not. Pure (CPU work: callers run it off the HTTP workers).
pub fn read_import(
    current: &QuizContent,
    locale: &str,
    format: Format,
    text: &str,
) -> Result<QuizContent, Refused> {
    use crate::content::{exchange, po, xliff};
    let imported = match format {
        Format::Xliff => xliff::import(current, locale, text).map_err(|e| match e {
            xliff::XliffError::Malformed(why) => Refused::Malformed(why),
            xliff::XliffError::Units(units) => Refused::Units(
                units
                    .into_iter()
                    .map(|(id, what)| (format!("unit '{id}'"), what))
                    .collect(),
            ),
        })?,
        Format::Po => po::import(current, locale, text).map_err(|e| match e {
            po::PoError::Malformed(why) => Refused::Malformed(why),
            po::PoError::Entries(entries) => Refused::Units(
                entries
                    .into_iter()
                    .map(|(entry, what)| (format!("entry {entry}"), what))
                    .collect(),
            ),
        })?,
    };
    let file = format!("{locale}.{}", format.extension());
    exchange::apply(current, locale, &file, &imported).map_err(|errors| {
        Refused::Units(
            errors
                .into_iter()
                .map(|e| (e.question.unwrap_or_else(|| file.clone()), e.message))
                .collect(),
        )
    })
}

impl Refused {
    /// The problem for `format`, listing at most [`MAX_PROBLEMS`] units.
    pub fn problem(self, format: Format) -> ApiError {
        let (malformed, units) = match format {
            Format::Xliff => (Code::InvalidXliff, Code::InvalidXliffUnit),
            Format::Po => (Code::InvalidPo, Code::InvalidPoEntry),
        };
        match self {
            Refused::Malformed(why) => ApiError::new(malformed, why),
            Refused::Units(problems) => {
                let mut detail: Vec<String> = problems
                    .iter()
                    .take(MAX_PROBLEMS)
                    .map(|(unit, what)| format!("{unit}: {what}"))
                    .collect();
                if problems.len() > MAX_PROBLEMS {
                    detail.push(format!("and {} more", problems.len() - MAX_PROBLEMS));
                }
                ApiError::new(units, detail.join("\n"))
            }
        }
    }
}

/// The import of a translator's file in `format` as a new version.
async fn import(
    state: &AppState,
    user: &CurrentUser,
    path: (String, i32, String),
    req: &actix_web::HttpRequest,
    body: web::Bytes,
    format: Format,
) -> Result<HttpResponse, ApiError> {
    let (slug, version, locale) = path;
    access::authored(&state.pool, &slug, user).await?;
    let content_type = req
        .headers()
        .get(actix_web::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !format.accepts(content_type) {
        return Err(ApiError::from_status(
            actix_web::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ));
    }
    // The version exported from must exist; the translations go onto the current version.
    stored_version(&state.pool, &slug, Some(version)).await?;
    let (_, _, current) = stored_version(&state.pool, &slug, None).await?;
    target_locale(&locale, &current)?;
    let text = String::from_utf8(body.to_vec())
        .map_err(|_| Refused::Malformed("The body is not UTF-8.".into()).problem(format))?;
    // Parsing up to the body limit is CPU work: off the HTTP workers.
    let content = web::block(move || read_import(&current, &locale, format, &text))
        .await
        .map_err(ApiError::internal)?
        .map_err(|r| r.problem(format))?;
    super::authoring::save(
        state,
        content,
        crate::content::store::Importer::Person {
            id: user.id,
            admin: user.is_admin(),
            create: false,
        },
    )
    .await
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
    export(&state, &user, path.into_inner(), Format::Xliff).await
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
    import(&state, &user, path.into_inner(), &req, body, Format::Xliff).await
}

/// One version's texts for translation into one locale, as a gettext PO file (for Weblate,
/// Poedit, the gettext tools): an entry per text with the text id as `msgctxt`, the source as
/// `msgid`, the translation as `msgstr` (empty when missing; a stale one flagged `fuzzy`, with
/// the source it was made from as `#| msgid`) and a `#.` comment saying what the text is. The
/// quiz's authors and admins.
#[utoipa::path(get, path = "/v1/quizzes/{slug}/versions/{version}/translations/{locale}.po", tag = "authoring", security(("bearer" = [])),
    params(
        ("slug" = String, Path, description = "The quiz's slug"),
        ("version" = i32, Path, description = "The version number"),
        ("locale" = String, Path, description = "The target locale (BCP 47)"),
    ),
    responses(
        (status = 200, description = "The PO file (UTF-8)", body = String, content_type = "text/x-gettext-translation"),
        (status = 400, description = "Malformed version", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "A public quiz you do not author (`not_quiz_author`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz, version (`version_not_found`) or translation locale (`locale_not_found`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn export_po(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(String, i32, String)>,
) -> Result<HttpResponse, ApiError> {
    export(&state, &user, path.into_inner(), Format::Po).await
}

/// Imports a translator's PO file for one locale, as the XLIFF import does: every entry with
/// a non-empty `msgstr` and no `fuzzy` flag becomes the locale's translation of the text its
/// `msgctxt` names (fuzzy and empty entries change nothing), validated as a `<locale>.toml`
/// is, and saved as a new version — all or nothing. Each entry's `msgid` must still be the
/// quiz's current source text. Read strictly (no plural forms, only the escapes `\n \t \r \"
/// \\`, UTF-8); at most 1 MiB and 20 000 entries. The quiz's authors and admins.
#[utoipa::path(put, path = "/v1/quizzes/{slug}/versions/{version}/translations/{locale}.po", tag = "authoring", security(("bearer" = [])),
    params(
        ("slug" = String, Path, description = "The quiz's slug"),
        ("version" = i32, Path, description = "The version the file was exported from"),
        ("locale" = String, Path, description = "The target locale (BCP 47)"),
    ),
    request_body(content = String, content_type = "text/x-gettext-translation"),
    responses(
        (status = 200, description = "Saved as a new version (or unchanged)", body = crate::quizzes::authoring::AuthoredQuiz),
        (status = 400, description = "Not PO syntax, not UTF-8, another Language in the header, too many entries (`invalid_po`; `detail` names the line)", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "A public quiz you do not author (`not_quiz_author`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz, version or translation locale", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not a PO media type (`text/x-gettext-translation`, `text/x-po`, `text/plain`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Entries refused (`invalid_po_entry`: unknown msgctxt, changed msgid, no msgctxt, empty translation; `detail` names each entry and its line) or the result refused (`invalid_content`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn import_po(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(String, i32, String)>,
    req: actix_web::HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    import(&state, &user, path.into_inner(), &req, body, Format::Po).await
}
