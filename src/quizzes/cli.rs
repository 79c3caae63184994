//! `quizd translations …`: a quiz's translation files (XLIFF 2.1, gettext PO) from and into
//! the database, for operators and translators without the API. The same export and the same
//! checked, all-or-nothing import as `GET`/`PUT
//! /v1/quizzes/{slug}/versions/{n}/translations/{locale}.xlf|.po`.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use sqlx::PgPool;

use super::translations::{self, Format};
use crate::content::QuizContent;
use crate::content::store::{self, ImportStatus, Importer};

/// A file format on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FileFormat {
    /// XLIFF 2.1 (`.xlf`, `.xliff`).
    Xliff,
    /// gettext PO (`.po`).
    Po,
}

impl FileFormat {
    fn format(self) -> Format {
        match self {
            FileFormat::Xliff => Format::Xliff,
            FileFormat::Po => Format::Po,
        }
    }

    /// The format a file's name says, when `--format` does not.
    fn of(path: &std::path::Path) -> Option<Self> {
        match path.extension()?.to_str()? {
            "xlf" | "xliff" => Some(FileFormat::Xliff),
            "po" => Some(FileFormat::Po),
            _ => None,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum TranslationsCommand {
    /// Write a quiz version's texts for translation into one locale (to standard output, or
    /// --output).
    Export {
        /// The quiz's slug.
        slug: String,
        /// The target locale (BCP 47, e.g. `bn`).
        #[arg(long)]
        locale: String,
        /// The version (default: the current one).
        #[arg(long)]
        version: Option<i32>,
        /// The file format (default: from --output's extension, else XLIFF).
        #[arg(long, value_enum)]
        format: Option<FileFormat>,
        /// Where to write the file.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Read a translator's file into a new version of the quiz: all or nothing, checked as the
    /// API checks it (every source must be the current one).
    Import {
        /// The quiz's slug.
        slug: String,
        /// The target locale (BCP 47, e.g. `bn`).
        #[arg(long)]
        locale: String,
        /// The file (its extension says the format unless --format does).
        file: PathBuf,
        #[arg(long, value_enum)]
        format: Option<FileFormat>,
    },
}

/// The limit the API puts on an upload holds here too.
const MAX_BYTES: u64 = super::authoring::AUTHORING_BODY_LIMIT as u64;

pub async fn run(pool: &PgPool, command: TranslationsCommand) -> anyhow::Result<()> {
    match command {
        TranslationsCommand::Export {
            slug,
            locale,
            version,
            format,
            output,
        } => {
            let format = format
                .or_else(|| output.as_deref().and_then(FileFormat::of))
                .unwrap_or(FileFormat::Xliff);
            let (n, body) = translations::exported(pool, &slug, version, &locale, format.format())
                .await
                .map_err(|e| anyhow::anyhow!("{}", e.detail))?;
            write_out(
                output,
                body.as_bytes(),
                &format!("{slug} version {n}, {locale}"),
            )?;
            Ok(())
        }
        TranslationsCommand::Import {
            slug,
            locale,
            file,
            format,
        } => {
            let format = format
                .or_else(|| FileFormat::of(&file))
                .context("say --format xliff or --format po (the file's name does not)")?
                .format();
            let size = std::fs::metadata(&file)
                .with_context(|| format!("cannot read {}", file.display()))?
                .len();
            anyhow::ensure!(
                size <= MAX_BYTES,
                "{} is larger than {MAX_BYTES} bytes",
                file.display()
            );
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {} as UTF-8", file.display()))?;
            let (_, _, current) = translations::stored_version(pool, &slug, None)
                .await
                .map_err(|e| anyhow::anyhow!("no quiz '{slug}': {}", e.detail))?;
            translations::target_locale(&locale, &current)
                .map_err(|e| anyhow::anyhow!("{}", e.detail))?;
            let content =
                translations::read_import(&current, &locale, format, &text).map_err(|r| {
                    anyhow::anyhow!(
                        "{} was refused, nothing was imported:\n{}",
                        file.display(),
                        r.problem(format).detail
                    )
                })?;
            let (what, version) = import_one(pool, content).await?;
            println!("{slug}: {what} (version {version})");
            Ok(())
        }
    }
}

/// `quizd import <file>` for a questions document (Moodle XML, GIFT, Aiken): how to make it a
/// quiz.
#[derive(Debug, Clone, clap::Args)]
pub struct QuestionsImport {
    /// The quiz's slug (a file of questions does not say it); a quiz directory has its own.
    #[arg(long)]
    pub slug: Option<String>,
    /// The quiz's title (default: the current one, else the slug).
    #[arg(long)]
    pub title: Option<String>,
    /// The language of the file's texts (BCP 47; default: the quiz's source locale, or en).
    #[arg(long)]
    pub locale: Option<String>,
    /// The file's format (default: .xml is moodle-xml, .gift gift, .txt aiken).
    #[arg(long, value_parser = ["moodle-xml", "gift", "aiken"])]
    pub format: Option<String>,
    /// The explanation for each question whose source has none.
    #[arg(long)]
    pub explanation_default: Option<String>,
}

/// Writes an export to `output`, saying so with `what`, or to standard output.
fn write_out(output: Option<PathBuf>, body: &[u8], what: &str) -> anyhow::Result<()> {
    match output {
        Some(path) => {
            std::fs::write(&path, body)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("wrote {} ({what})", path.display());
        }
        None => {
            use std::io::Write;
            std::io::stdout().write_all(body)?;
        }
    }
    Ok(())
}

/// Imports one quiz as content files are imported (trusted): what became of it, and its
/// version.
async fn import_one(pool: &PgPool, content: QuizContent) -> anyhow::Result<(&'static str, i32)> {
    let imported = store::import(pool, std::slice::from_ref(&content), Importer::Files)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let i = &imported[0];
    let what = match i.status {
        ImportStatus::Created => "created",
        ImportStatus::NewVersion => "new version",
        ImportStatus::Unchanged => "unchanged",
    };
    Ok((what, i.version))
}

/// The format a questions file's name says, if it is one.
pub fn questions_format(path: &std::path::Path) -> Option<crate::content::interchange::Format> {
    use crate::content::interchange::Format;
    match path.extension()?.to_str()? {
        "xml" => Some(Format::MoodleXml),
        "gift" => Some(Format::Gift),
        "txt" => Some(Format::Aiken),
        "zip" => Some(Format::Qti3),
        _ => None,
    }
}

/// Imports a questions file as a quiz, checked and reported as `POST /v1/quizzes/import`
/// checks and reports it (trusted like content files: an existing slug gets a new version).
pub async fn import_questions(
    pool: &PgPool,
    file: &std::path::Path,
    args: QuestionsImport,
) -> anyhow::Result<()> {
    use super::interchange;
    use crate::content::interchange::Format;
    let format = match &args.format {
        Some(f) => Format::parse(f).context("unknown format")?,
        None => questions_format(file).context(
            "say --format moodle-xml, gift, aiken, qti3 or qti12 (the file's name does not say it)",
        )?,
    };
    let slug = args
        .slug
        .context("say the quiz's --slug (a file of questions does not)")?;
    let size = std::fs::metadata(file)
        .with_context(|| format!("cannot read {}", file.display()))?
        .len();
    anyhow::ensure!(
        size <= MAX_BYTES,
        "{} is larger than {MAX_BYTES} bytes",
        file.display()
    );
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let current = translations::stored_version(pool, &slug, None).await.ok();
    let settings = interchange::settings(
        &slug,
        args.title,
        args.locale,
        args.explanation_default,
        current.as_ref().map(|(_, _, c)| c),
    );
    let (content, mut report) = crate::content::interchange::read_upload(format, &bytes, &settings)
        .map_err(|r| {
            anyhow::anyhow!(
                "{} was refused, nothing was imported:\n{}",
                file.display(),
                interchange::problem(r).detail
            )
        })?;
    if let Some((n, _, c)) = &current {
        interchange::note_translations(&mut report, Some(c), *n);
    }
    let (what, version) = import_one(pool, content).await?;
    println!(
        "{slug}: {what} (version {version}), {} question(s) imported from {}",
        report.imported.len(),
        file.display()
    );
    for s in &report.skipped {
        println!(
            "  skipped {} '{}' (line {}): {}",
            s.kind,
            s.name.as_deref().unwrap_or("-"),
            s.line,
            s.reason
        );
    }
    for n in &report.notes {
        println!(
            "  note, {} (line {}): {}",
            n.question.as_deref().unwrap_or("the document"),
            n.line,
            n.note
        );
    }
    Ok(())
}

/// `quizd export`: a quiz version as Moodle XML, GIFT or a QTI 3.0 package, to standard output
/// or `output`.
pub async fn export_questions(
    pool: &PgPool,
    slug: &str,
    version: Option<i32>,
    format: &str,
    output: Option<PathBuf>,
) -> anyhow::Result<()> {
    use super::interchange;
    use crate::content::interchange::Format;
    let format = Format::parse(format)
        .filter(|f| f.exports())
        .context("--format is moodle-xml, gift or qti3")?;
    let (n, _, body) = interchange::exported(pool, slug, version, format)
        .await
        .map_err(|e| anyhow::anyhow!("{}", e.detail))?;
    write_out(output, &body, &format!("{slug} version {n}"))?;
    Ok(())
}
