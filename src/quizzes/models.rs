//! Quiz versions as served: the cached immutable version and the learner-facing views,
//! which carry no key material (no correct flag, no option key, no explanation).

use std::collections::HashMap;
use std::sync::Mutex;

use actix_web::web::Bytes;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::content::{QuestionKind, QuizContent};
use crate::i18n::{LocalizedText, negotiate, resolve};

/// An immutable quiz version, cached in memory once loaded.
#[derive(Debug)]
pub struct QuizVersion {
    pub id: Uuid,
    pub quiz_id: Uuid,
    pub version: i32,
    pub created_at: DateTime<Utc>,
    pub content: QuizContent,
    pub coverage: Vec<LocaleCoverage>,
    /// The course-less assignment for open practice on this version.
    pub practice_assignment_id: Option<Uuid>,
    /// The learner-facing view as JSON, by locale chain (there are only as many chains as
    /// ordered choices among the quiz's locales).
    rendered: Mutex<HashMap<Vec<String>, Bytes>>,
    /// Negotiated locale chains by requested locales.
    chains: Mutex<HashMap<Vec<String>, Vec<String>>>,
}

/// How much of a quiz exists in one locale.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LocaleCoverage {
    pub locale: String,
    /// Translatable texts that exist in this locale.
    pub translated: usize,
    /// Translatable texts in the quiz.
    pub total: usize,
}

impl QuizVersion {
    pub fn new(
        id: Uuid,
        quiz_id: Uuid,
        version: i32,
        created_at: DateTime<Utc>,
        content: QuizContent,
        practice_assignment_id: Option<Uuid>,
    ) -> Self {
        let coverage = content
            .coverage()
            .into_iter()
            .map(|(locale, translated, total)| LocaleCoverage {
                locale,
                translated,
                total,
            })
            .collect();
        Self {
            id,
            quiz_id,
            version,
            created_at,
            content,
            coverage,
            practice_assignment_id,
            rendered: Mutex::default(),
            chains: Mutex::default(),
        }
    }

    /// [`QuizVersion::view`] as JSON, and its locale: serialized once per locale chain (the
    /// version never changes).
    pub fn view_json(&self, requested: &[String]) -> Result<(String, Bytes), serde_json::Error> {
        let chain = self.locale_chain(requested);
        let locale = chain[0].clone();
        if let Some(body) = self.rendered.lock().expect("render lock").get(&chain) {
            return Ok((locale, body.clone()));
        }
        let body = Bytes::from(serde_json::to_vec(&self.view(&chain))?);
        self.rendered
            .lock()
            .expect("render lock")
            .insert(chain, body.clone());
        Ok((locale, body))
    }

    /// The locale chain for a request: matching locales in preference order, then the source.
    pub fn locale_chain(&self, requested: &[String]) -> Vec<String> {
        if let Some(chain) = self.chains.lock().expect("chain lock").get(requested) {
            return chain.clone();
        }
        let chain = negotiate(
            requested,
            &self.content.locales,
            &self.content.source_locale,
        );
        let mut chains = self.chains.lock().expect("chain lock");
        // Requests name any locales they like: remember only the first few hundred lists.
        if chains.len() < 256 {
            chains.insert(requested.to_vec(), chain.clone());
        }
        chain
    }

    pub fn summary(&self, requested: &[String]) -> QuizSummary {
        let chain = self.locale_chain(requested);
        QuizSummary {
            slug: self.content.slug.clone(),
            version: self.version,
            locale: chain[0].clone(),
            source_locale: self.content.source_locale.clone(),
            title: resolve(&self.content.title, &chain),
            locales: self.coverage.clone(),
            question_count: self.content.questions.len(),
            practice_assignment_id: self.practice_assignment_id,
        }
    }

    /// The learner-facing view along a negotiated locale chain.
    fn view(&self, chain: &[String]) -> QuizView {
        let c = &self.content;
        QuizView {
            slug: c.slug.clone(),
            version: self.version,
            locale: chain[0].clone(),
            source_locale: c.source_locale.clone(),
            title: resolve(&c.title, chain),
            intro: c.intro.as_ref().map(|i| resolve(i, chain)),
            locales: self.coverage.clone(),
            practice_assignment_id: self.practice_assignment_id,
            questions: c
                .questions
                .iter()
                .map(|q| {
                    let prompt = resolve(&q.prompt, chain);
                    QuestionView {
                        key: q.key.clone(),
                        kind: q.kind,
                        points: q.points,
                        prompt: prompt.text,
                        lang: prompt.lang,
                        options: q
                            .options
                            .iter()
                            .map(|o| {
                                let t = resolve(&o.text, chain);
                                OptionView {
                                    text: t.text,
                                    lang: t.lang,
                                }
                            })
                            .collect(),
                    }
                })
                .collect(),
        }
    }
}

/// A quiz in the catalogue.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuizSummary {
    pub slug: String,
    /// The current version number.
    pub version: i32,
    /// The negotiated locale for this quiz.
    pub locale: String,
    pub source_locale: String,
    pub title: LocalizedText,
    /// Every locale the quiz is available in, with its translation coverage.
    pub locales: Vec<LocaleCoverage>,
    pub question_count: usize,
    /// Start a practice attempt on it (any signed-in learner).
    pub practice_assignment_id: Option<Uuid>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct QuizList {
    pub items: Vec<QuizSummary>,
}

/// A quiz in one locale, for reading before taking it. Carries no key material.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuizView {
    pub slug: String,
    pub version: i32,
    /// The negotiated locale (also sent as `Content-Language`).
    pub locale: String,
    pub source_locale: String,
    pub title: LocalizedText,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intro: Option<LocalizedText>,
    pub locales: Vec<LocaleCoverage>,
    /// Start a practice attempt on it (any signed-in learner).
    pub practice_assignment_id: Option<Uuid>,
    pub questions: Vec<QuestionView>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct QuestionView {
    /// The question's stable key within the quiz.
    pub key: String,
    pub kind: QuestionKind,
    pub points: f64,
    pub prompt: String,
    /// The language `prompt` is in.
    pub lang: String,
    /// The options in authored order (choice kinds only); attempts shuffle per policy.
    pub options: Vec<OptionView>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OptionView {
    pub text: String,
    /// The language `text` is in.
    pub lang: String,
}
