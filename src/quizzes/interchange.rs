//! Questions in and out of other systems: `POST /v1/quizzes/import` (Moodle XML, GIFT, Aiken, QTI)
//! and `GET /v1/quizzes/{slug}/versions/{n}/export?format=` (Moodle XML, GIFT). The formats
//! themselves are pure, in `content::interchange` and its readers and writers.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use utoipa::{IntoParams, ToSchema};

use super::access;
use super::authoring::{AuthoredStatus, store};
use super::translations::stored_version;
use crate::audit::{self, Action, Entry};
use crate::auth::CurrentUser;
use crate::content::QuizContent;
use crate::content::Visibility;
use crate::content::interchange::{self, Format, Note, Refused, Report, Settings, Skipped};
use crate::content::store::Importer;
use crate::error::{ApiError, Code, Problem};
use crate::state::AppState;

/// The most problems one refused import lists; the rest are counted.
const MAX_PROBLEMS: usize = 50;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ImportQuery {
    /// The quiz's slug: a new (private) quiz, or a new version of a quiz you author.
    pub slug: String,
    /// `gift` or `aiken` for a `text/plain` body; an XML body is Moodle XML (`moodle-xml`), or a
    /// single QTI item or test with `qti3`; a zip body is a QTI 3.0 or 2.1 package (`qti3`). A
    /// QTI 1.2 document or package (Canvas, text2qti: `questestinterop`) is recognised as such
    /// (`qti12`) whatever this says.
    pub format: Option<Format>,
    /// The quiz's title; default: the current one of a quiz you author, else the slug.
    pub title: Option<String>,
    /// The language of the document's texts (BCP 47); default: the quiz's source locale, or `en`.
    pub locale: Option<String>,
    /// The explanation given to each question whose source has none (no general feedback);
    /// without it such a question refuses the import, as quizd needs an explanation.
    pub explanation_default: Option<String>,
}

/// A `multipart/form-data` upload: one `file` part (its content type, or its file name's
/// extension `.zip`, `.xml`, `.gift`, `.txt`, says what it is) and an optional `format` field.
// `Deserialize` only for `deny_unknown_fields`: the document says no other part is taken
// (`additionalProperties: false`), as the handler refuses one.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Documents the form; the handler reads it part by part.
pub struct ImportForm {
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
    pub format: Option<Format>,
}

/// The imported questions.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportedQuestions {
    pub count: usize,
    /// Their keys in the new version, in order (made from the source's names or ids).
    pub keys: Vec<String>,
}

/// What an import made, question by question.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportResult {
    pub slug: String,
    /// The current version after the import.
    pub version: i32,
    pub status: AuthoredStatus,
    pub format: Format,
    pub imported: ImportedQuestions,
    /// Questions (and categories) not imported, each with its name, kind, line and why.
    pub skipped: Vec<Skipped>,
    /// What was imported but not exactly as the source had it.
    pub notes: Vec<Note>,
}

/// The format of an upload: a zip is a QTI package; XML is Moodle XML, or QTI as `format` says;
/// text is GIFT or Aiken as `format` says. QTI 1.2 is recognised by its documents (see
/// `read_upload`) whatever this says.
fn upload_format(content_type: &str, named: Option<Format>) -> Result<Format, ApiError> {
    if content_type.starts_with("application/zip") {
        return match named {
            None | Some(Format::Qti3) => Ok(Format::Qti3),
            Some(Format::Qti12) => Ok(Format::Qti12),
            Some(_) => Err(ApiError::new(
                Code::ImportFormatMismatch,
                "A zip body is a QTI package (`format=qti3`, or `qti12`).",
            )),
        };
    }
    let xml = ["application/xml", "text/xml"]
        .iter()
        .any(|t| content_type.starts_with(t));
    if xml {
        return match named {
            None | Some(Format::MoodleXml) => Ok(Format::MoodleXml),
            Some(f @ (Format::Qti3 | Format::Qti12)) => Ok(f),
            Some(_) => Err(ApiError::new(
                Code::ImportFormatMismatch,
                "An XML body is Moodle XML or QTI 1.2, or a QTI item or test with `format=qti3`; send GIFT and Aiken as text/plain.",
            )),
        };
    }
    if content_type.starts_with("text/plain") {
        return match named {
            Some(f @ (Format::Gift | Format::Aiken)) => Ok(f),
            _ => Err(ApiError::new(
                Code::ImportFormatMismatch,
                "A text/plain body needs `format=gift` or `format=aiken`.",
            )),
        };
    }
    Err(ApiError::from_status(StatusCode::UNSUPPORTED_MEDIA_TYPE))
}

/// An upload as the import reads it: its content type, its bytes, and the format it names.
struct Upload {
    content_type: String,
    bytes: web::Bytes,
    format: Option<Format>,
}

/// The most bytes a form's `format` field may have.
const MAX_FORMAT_FIELD: usize = 32;

fn form_problem(detail: impl Into<String>) -> ApiError {
    ApiError::new(Code::InvalidUploadForm, detail)
}

/// A `multipart/form-data` body (already read, within the route's body limit) as an upload:
/// exactly one `file` part, whose content type (or else its file name's extension) says what
/// it is, and at most one `format` field, which wins over the query's. Any other part, a
/// second file, or a form that does not parse is refused.
async fn form_upload(
    headers: &header::HeaderMap,
    body: web::Bytes,
    query_format: Option<Format>,
) -> Result<Upload, ApiError> {
    use futures_util::StreamExt;
    let stream =
        futures_util::stream::once(async move { Ok::<_, actix_web::error::PayloadError>(body) });
    let mut form = actix_multipart::Multipart::new(headers, stream);
    let mut file: Option<(String, Option<String>, web::BytesMut)> = None;
    let mut format_field: Option<String> = None;
    while let Some(part) = form.next().await {
        let mut part = part.map_err(|e| form_problem(format!("not a readable form: {e}")))?;
        let disposition = part.content_disposition().cloned();
        let name = disposition
            .as_ref()
            .and_then(|d| d.get_name())
            .unwrap_or_default()
            .to_string();
        let mut bytes = web::BytesMut::new();
        while let Some(chunk) = part.next().await {
            let chunk = chunk.map_err(|e| form_problem(format!("part '{name}': {e}")))?;
            bytes.extend_from_slice(&chunk);
        }
        match name.as_str() {
            "file" if file.is_none() => {
                let content_type = part
                    .content_type()
                    .map(|m| m.essence_str().to_string())
                    .unwrap_or_default();
                let filename = disposition
                    .as_ref()
                    .and_then(|d| d.get_filename())
                    .map(str::to_string);
                file = Some((content_type, filename, bytes));
            }
            "file" => return Err(form_problem("the form has more than one `file` part")),
            "format" if format_field.is_none() && bytes.len() <= MAX_FORMAT_FIELD => {
                format_field = Some(
                    String::from_utf8(bytes.to_vec())
                        .map_err(|_| form_problem("the `format` field is not UTF-8"))?,
                );
            }
            "format" => return Err(form_problem("one short `format` field at most")),
            other => {
                return Err(form_problem(format!(
                    "the form has a part '{other}': it holds one `file` part and at most a \
                     `format` field"
                )));
            }
        }
    }
    let Some((part_type, filename, bytes)) = file else {
        return Err(form_problem("the form has no `file` part"));
    };
    let format = match format_field.as_deref().map(str::trim) {
        None | Some("") => query_format,
        Some(f) => Some(Format::parse(f).ok_or_else(|| {
            ApiError::new(
                Code::ImportFormatMismatch,
                format!(
                    "the form's `format` '{f}' is not one of moodle-xml, gift, aiken, qti3, qti12"
                ),
            )
        })?),
    };
    // The part's own content type when it is one the import reads, else the file name's.
    let known = [
        "application/zip",
        "application/xml",
        "text/xml",
        "text/plain",
    ];
    let by_name = filename
        .as_deref()
        .and_then(|n| super::cli::questions_format(std::path::Path::new(n)));
    let (content_type, format) = if known.contains(&part_type.as_str()) {
        (part_type, format)
    } else {
        match by_name {
            Some(f @ (Format::Qti3 | Format::Qti12)) => {
                ("application/zip".into(), format.or(Some(f)))
            }
            Some(Format::MoodleXml) => ("application/xml".into(), format),
            Some(f) => ("text/plain".into(), format.or(Some(f))),
            None => {
                return Err(ApiError::new(
                    Code::ImportFormatMismatch,
                    "the `file` part's content type and file name do not say its format: give \
                     it a content type (application/zip, application/xml, text/plain), a file \
                     name ending .zip, .xml, .gift or .txt, or a `format` field",
                ));
            }
        }
    };
    Ok(Upload {
        content_type,
        bytes: bytes.freeze(),
        format,
    })
}

/// The problem for a refused import, listing at most [`MAX_PROBLEMS`] problems.
pub fn problem(refused: Refused) -> ApiError {
    match refused {
        Refused::Malformed(why) => ApiError::new(Code::InvalidImport, why),
        Refused::Content(problems) => {
            let mut detail: Vec<String> = problems.iter().take(MAX_PROBLEMS).cloned().collect();
            if problems.len() > MAX_PROBLEMS {
                detail.push(format!("and {} more", problems.len() - MAX_PROBLEMS));
            }
            ApiError::new(Code::InvalidContent, detail.join("\n"))
        }
    }
}

/// What the document does not say, for quiz `slug`: from the query, else from the current
/// version of a quiz the caller authors (`current`), else the defaults.
pub fn settings(
    slug: &str,
    title: Option<String>,
    locale: Option<String>,
    explanation_default: Option<String>,
    current: Option<&QuizContent>,
) -> Settings {
    let source = |t: &crate::i18n::Text, c: &QuizContent| t.get(&c.source_locale).cloned();
    Settings {
        slug: slug.to_string(),
        title: title
            .or_else(|| current.and_then(|c| source(&c.title, c)))
            .unwrap_or_else(|| slug.to_string()),
        source_locale: locale
            .or_else(|| current.map(|c| c.source_locale.clone()))
            .unwrap_or_else(|| "en".into()),
        visibility: current.map_or(Visibility::Private, |c| c.visibility),
        intro: current.and_then(|c| c.intro.as_ref().and_then(|i| source(i, c))),
        practice: current.and_then(|c| c.practice.clone()),
        explanation_default,
    }
}

/// Notes what a new version of `current` leaves behind: its translations.
pub fn note_translations(report: &mut Report, current: Option<&QuizContent>, version: i32) {
    if let Some(c) = current
        && c.locales.len() > 1
    {
        report.notes.insert(
            0,
            Note {
                question: None,
                line: 0,
                note: format!(
                    "the translations of version {version} ({}) are not in this document: the \
                     new version has its source locale only",
                    c.locales[1..].join(", ")
                ),
            },
        );
    }
}

/// Imports questions from another system's format as a new quiz, or as a new version of a
/// quiz you author (keeping its title, visibility, intro and practice unless the query says
/// otherwise): Moodle XML (`application/xml`), GIFT or Aiken (`text/plain` with
/// `?format=gift|aiken`), a QTI 3.0 or 2.1 package (`application/zip`, every `xml:lang`
/// becoming a locale; or one item or test document, `application/xml` with `?format=qti3`),
/// or QTI 1.2 as Canvas exports it (a zip, or one `questestinterop` document as XML; told by
/// its documents, reported as `qti12`). Any of them may come as `multipart/form-data` (an HTML
/// form's upload): one `file` part, its content type or file name's extension saying what it
/// is, and an optional `format` field; within the same 1 MiB body limit.
/// All or nothing, through the same checks as quiz content files; the
/// answer reports every question imported (its key), skipped (a kind quizd does not have,
/// grading it cannot reproduce: by name and line) and changed on the way (`notes`). Moodle's
/// multiple-answer fractions map to quizd's partial credit when the right options share the
/// points equally (a wrong pick takes one share back); unequal shares are skipped. No DTD is
/// accepted (so no entity is ever expanded or fetched); at most 1 MiB and 2 000 questions.
/// Instructors and admins.
#[utoipa::path(post, path = "/v1/quizzes/import", tag = "authoring", security(("bearer" = [])),
    params(ImportQuery),
    request_body(content(
        (String = "application/xml"),
        (String = "text/plain"),
        (Vec<u8> = "application/zip"),
        (ImportForm = "multipart/form-data"),
    ), description = "A Moodle XML document, a GIFT or Aiken file, or a QTI package or document; or a form whose `file` part is one of them"),
    responses(
        (status = 201, description = "Created as version 1", body = ImportResult),
        (status = 200, description = "A quiz you author: saved as a new version (or unchanged)", body = ImportResult),
        (status = 400, description = "A malformed query, or a form that is not one `file` part and at most a `format` field (`invalid_upload_form`)", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Learners cannot author", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The slug belongs to a quiz you do not author (`slug_taken`)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither XML nor text", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Not readable as its format: not UTF-8, not well-formed, a DTD, a syntax error, not the format's document, too many questions (`invalid_import`; `detail` names the line); the questions are refused (`invalid_content`): `detail` lists every problem by question name and line, then what was skipped; or `format` does not fit the content type (`import_format_mismatch`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn import_questions(
    state: web::Data<AppState>,
    user: CurrentUser,
    query: web::Query<ImportQuery>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    user.require_staff()?;
    let query = query.into_inner();
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let upload = if content_type.starts_with("multipart/form-data") {
        form_upload(req.headers(), body, query.format).await?
    } else {
        Upload {
            content_type: content_type.to_string(),
            bytes: body,
            format: query.format,
        }
    };
    let format = upload_format(&upload.content_type, upload.format)?;
    let body = upload.bytes;
    // A quiz the caller authors keeps what the document cannot say. Whether they may write
    // the slug is decided again inside the import's transaction.
    let mut current = None;
    if super::routes::plausible_slug(&query.slug)
        && let Some(quiz) = super::store::access(&state.pool, &query.slug, user.id).await?
        && (quiz.is_author || user.is_admin())
    {
        current = Some(stored_version(&state.pool, &query.slug, None).await?);
    }
    let settings = settings(
        &query.slug,
        query.title,
        query.locale,
        query.explanation_default,
        current.as_ref().map(|(_, _, c)| c),
    );
    // Parsing up to the body limit is CPU work: off the HTTP workers.
    let (content, mut report) =
        web::block(move || interchange::read_upload(format, &body, &settings))
            .await
            .map_err(ApiError::internal)?
            .map_err(problem)?;
    if let Some((n, _, c)) = &current {
        note_translations(&mut report, Some(c), *n);
    }
    let (code, authored) = store(
        &state,
        content,
        Importer::Person {
            id: user.id,
            admin: user.is_admin(),
            create: true,
        },
    )
    .await?;
    Ok(HttpResponse::build(code).json(ImportResult {
        slug: authored.slug,
        version: authored.version,
        status: authored.status,
        format: report.format,
        imported: ImportedQuestions {
            count: report.imported.len(),
            keys: report.imported,
        },
        skipped: report.skipped,
        notes: report.notes,
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// `moodle-xml`, `gift` or `qti3` (a zip with every locale).
    pub format: String,
}

/// Version `version` of quiz `slug` in `format`: its number, its source locale and the
/// document. No access check: callers make it.
pub async fn exported(
    pool: &PgPool,
    slug: &str,
    version: Option<i32>,
    format: Format,
) -> Result<(i32, String, Vec<u8>), ApiError> {
    let (n, _, content) = stored_version(pool, slug, version).await?;
    let locale = content.source_locale.clone();
    // Writing a package is CPU work: off the HTTP workers.
    let body = web::block(move || format.write(&content, n))
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(|| {
            ApiError::new(
                Code::InvalidQuery,
                "quizd exports moodle-xml, gift and qti3.",
            )
        })?
        .map_err(ApiError::internal)?;
    Ok((n, locale, body))
}

/// One version's questions, with their key, as Moodle XML or GIFT, for another system: the
/// texts in the quiz's source locale (neither format holds translations: the XLIFF and PO
/// exports carry them); or as a QTI 3.0 package (`qti3`), with every locale (one item file per
/// question and locale, `xml:lang` on each; each slot of a bank a section that selects its draw), points, explanations, per-option feedback; multiple choice as equal
/// shares with a matching penalty, which is quizd's grading. The quiz's authors and admins
/// only: it holds the answer key.
#[utoipa::path(get, path = "/v1/quizzes/{slug}/versions/{version}/export", tag = "authoring", security(("bearer" = [])),
    params(
        ("slug" = String, Path, description = "The quiz's slug"),
        ("version" = i32, Path, description = "The version number"),
        ExportQuery,
    ),
    responses(
        (status = 200, description = "The document, as a download", content(
            (String = "application/xml"),
            (String = "text/plain"),
            (Vec<u8> = "application/zip"),
        ), headers(("Content-Language" = String, description = "The quiz's source locale, the texts' language"))),
        (status = 400, description = "Malformed version, or `format` not `moodle-xml`, `gift` or `qti3` (`invalid_query`)", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "A public quiz you do not author (`not_quiz_author`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such quiz or version (or a private one you do not author)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn export_version(
    state: web::Data<AppState>,
    user: CurrentUser,
    path: web::Path<(String, i32)>,
    query: web::Query<ExportQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (slug, version) = path.into_inner();
    let quiz = access::authored(&state.pool, &slug, &user).await?;
    let format = Format::parse(&query.format)
        .filter(|f| f.exports())
        .ok_or_else(|| {
            ApiError::new(Code::InvalidQuery, "`format` is moodle-xml, gift or qti3.")
        })?;
    let (n, locale, body) = exported(&state.pool, &slug, Some(version), format).await?;
    // An admin reading someone else's key is on record, as reading the version is.
    if !quiz.is_author {
        audit::store::record(
            &state.pool,
            Entry::by(user.id, Action::KeyRead, &req)
                .subject(quiz.quiz_id)
                .detail(serde_json::json!({ "quiz": slug, "version": n, "export": format.name() })),
        )
        .await?;
    }
    Ok(HttpResponse::Ok()
        .content_type(format.content_type())
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .insert_header((header::CONTENT_LANGUAGE, locale))
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!(
                "attachment; filename=\"{slug}-v{n}.{}\"",
                format.extension()
            ),
        ))
        .body(body))
}
