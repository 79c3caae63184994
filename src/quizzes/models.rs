//! Quiz versions as served: the cached immutable version and the learner-facing views,
//! which carry no key material (no correct flag, no option key, no explanation).

use std::sync::Mutex;

use actix_web::http::header::HeaderValue;
use actix_web::web::Bytes;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::content::{Image, QuestionKind, QuizContent, Visibility};
use crate::i18n::Text;
use crate::i18n::{LocalizedText, MAX_REQUESTED, MAX_TAG_BYTES, negotiate, resolve};

/// Rendered views kept per version: the common chains (the source alone, each translation
/// before it). A request for any other chain is rendered for it alone.
pub const RENDERED_VIEWS: usize = 4;

/// Negotiated chains kept per version, by requested-locale list. Negotiating a bounded list
/// takes microseconds, so this only spares the catalogue's hottest lists the work.
pub const CHAIN_MEMO_ENTRIES: usize = 32;

/// A B-tree leaf of `Text` (up to 11 locale → text pairs of `String`s), with its header.
const TEXT_NODE_BYTES: usize = 11 * 2 * size_of::<String>() + 16;
/// What the allocator adds to each allocation, about.
const ALLOCATION_BYTES: usize = 16;

fn string_bytes(s: &str) -> usize {
    s.len() + ALLOCATION_BYTES
}

fn text_bytes(t: &Text) -> usize {
    t.len().div_ceil(11).max(1) * (TEXT_NODE_BYTES + ALLOCATION_BYTES)
        + t.iter()
            .map(|(l, s)| string_bytes(l) + string_bytes(s))
            .sum::<usize>()
}

/// About how many bytes the content takes in memory: every string, every text's B-tree node,
/// every question and option. An estimate from the types' sizes, not a measurement of the
/// allocator: it leaves out allocator rounding beyond [`ALLOCATION_BYTES`] and collection slack,
/// so a cache's real footprint may exceed its weight by that much.
pub fn content_bytes(c: &QuizContent) -> usize {
    let optional = |t: &Option<Text>| t.as_ref().map_or(0, text_bytes);
    size_of::<QuizContent>()
        + string_bytes(&c.slug)
        + string_bytes(&c.source_locale)
        + c.locales
            .iter()
            .map(|l| size_of::<String>() + string_bytes(l))
            .sum::<usize>()
        + text_bytes(&c.title)
        + optional(&c.intro)
        + c.questions
            .iter()
            .map(|q| {
                size_of_val(q)
                    + string_bytes(&q.key)
                    + text_bytes(&q.prompt)
                    + text_bytes(&q.explanation)
                    + q.image.as_ref().map_or(0, |i| {
                        size_of::<Image>()
                            + string_bytes(&i.sha256)
                            + string_bytes(&i.content_type)
                            + text_bytes(&i.alt)
                    })
                    + optional(&q.wrong_feedback)
                    + q.short_text.as_ref().map_or(0, |k| {
                        k.accepted
                            .iter()
                            .map(|a| size_of::<String>() + string_bytes(a))
                            .sum()
                    })
                    + q.options
                        .iter()
                        .map(|o| {
                            size_of_val(o)
                                + string_bytes(&o.key)
                                + text_bytes(&o.text)
                                + optional(&o.feedback)
                        })
                        .sum::<usize>()
            })
            .sum::<usize>()
}

/// The most bytes one list of at most `tags` locales takes: the vector, and per tag a `String`
/// of at most [`MAX_TAG_BYTES`].
const fn tag_list_bytes(tags: usize) -> usize {
    size_of::<Vec<String>>() + tags * (size_of::<String>() + MAX_TAG_BYTES)
}

/// A small memo that keeps the most used of at most `N` entries (quick_cache's CLOCK-Pro, so
/// a burst of one-off keys does not push the hot ones out).
pub struct Memo<V, const N: usize>(quick_cache::unsync::Cache<Vec<String>, V>);

impl<V: Clone, const N: usize> Default for Memo<V, N> {
    fn default() -> Self {
        Self(quick_cache::unsync::Cache::new(N))
    }
}

impl<V: Clone, const N: usize> std::fmt::Debug for Memo<V, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Memo({} of {N})", self.0.len())
    }
}

/// Rendered views by chain, bounded in bytes by a budget (set from the content's size on
/// first use) and in entries by weighing every view at least a [`RENDERED_VIEWS`]th of it.
#[derive(Default)]
pub struct Views(Option<quick_cache::unsync::Cache<Vec<String>, Rendered, ViewWeight>>);

/// A view as sent: its JSON and its strong entity tag (computed with it, once: a revalidation
/// then costs no hashing, `conditional::revalidate`).
#[derive(Debug, Clone)]
pub struct Rendered {
    pub body: Bytes,
    pub etag: HeaderValue,
}

#[derive(Clone)]
struct ViewWeight {
    floor: u64,
}

impl quick_cache::Weighter<Vec<String>, Rendered> for ViewWeight {
    fn weight(&self, chain: &Vec<String>, view: &Rendered) -> u64 {
        ((tag_list_bytes(chain.len()) + view.body.len() + view.etag.len()) as u64).max(self.floor)
    }
}

impl std::fmt::Debug for Views {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (n, w) = self.0.as_ref().map_or((0, 0), |c| (c.len(), c.weight()));
        write!(f, "Views({n}, {w} bytes)")
    }
}

impl Views {
    fn get(&self, chain: &[String]) -> Option<Rendered> {
        self.0.as_ref()?.get(chain).cloned()
    }
    /// Keeps a view within `budget` bytes for all of them (a view larger than the budget is
    /// not kept).
    fn insert(&mut self, chain: Vec<String>, view: Rendered, budget: usize) {
        let budget = budget as u64;
        self.0
            .get_or_insert_with(|| {
                let floor = budget.div_ceil(RENDERED_VIEWS as u64).max(1);
                quick_cache::unsync::Cache::with_weighter(
                    RENDERED_VIEWS,
                    budget,
                    ViewWeight { floor },
                )
            })
            .insert(chain, view);
    }
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |c| c.len())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The bytes the views weigh now.
    pub fn weight(&self) -> u64 {
        self.0.as_ref().map_or(0, |c| c.weight())
    }
}

impl<V: Clone, const N: usize> Memo<V, N> {
    fn get(&self, key: &[String]) -> Option<V> {
        self.0.get(key).cloned()
    }
    fn insert(&mut self, key: Vec<String>, value: V) {
        self.0.insert(key, value);
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// An immutable quiz version, cached in memory once loaded.
#[derive(Debug)]
pub struct QuizVersion {
    pub id: Uuid,
    pub quiz_id: Uuid,
    pub version: i32,
    pub created_at: DateTime<Utc>,
    /// The content as served: stale translations left out ([`QuizContent::served`]).
    pub content: QuizContent,
    pub coverage: Vec<LocaleCoverage>,
    /// The course-less assignment for open practice on this version.
    pub practice_assignment_id: Option<Uuid>,
    /// The learner-facing view as JSON, by locale chain: at most [`RENDERED_VIEWS`] of them,
    /// each a projection of the content into one chain (see [`QuizVersion::memo_bytes`]).
    rendered: Mutex<Views>,
    /// Negotiated locale chains by requested locales: at most [`CHAIN_MEMO_ENTRIES`], and a
    /// key is at most [`MAX_REQUESTED`] tags of [`MAX_TAG_BYTES`] (`i18n` bounds what a request
    /// yields), so entries × the largest key and chain bound its bytes.
    chains: Mutex<Memo<Vec<String>, CHAIN_MEMO_ENTRIES>>,
}

/// How much of a quiz exists in one locale.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LocaleCoverage {
    pub locale: String,
    /// Translatable texts that exist in this locale and are current (made from the current
    /// source text; stale translations do not count).
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
        // Served without its stale translations: they fall back to the source, and coverage
        // counts only what is current. (Authors read the stored content from the store.)
        let content = content.served();
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

    /// [`QuizVersion::view`] as JSON with its entity tag, and its locale: serialized and
    /// tagged once per locale chain (the version never changes) while the chain is among the
    /// most used.
    pub fn view_json(&self, requested: &[String]) -> Result<(String, Rendered), serde_json::Error> {
        let chain = self.locale_chain(requested);
        let locale = chain[0].clone();
        if let Some(view) = self.rendered.lock().expect("render lock").get(&chain) {
            return Ok((locale, view));
        }
        let body = Bytes::from(serde_json::to_vec(&self.view(&chain))?);
        let etag = HeaderValue::from_str(&crate::conditional::entity_tag(&body))
            .expect("a tag is quoted base64url");
        let view = Rendered { body, etag };
        let budget = self.views_budget();
        self.rendered
            .lock()
            .expect("render lock")
            .insert(chain, view.clone(), budget);
        Ok((locale, view))
    }

    /// The locale chain for a request: matching locales in preference order, then the source.
    pub fn locale_chain(&self, requested: &[String]) -> Vec<String> {
        if let Some(chain) = self.chains.lock().expect("chain lock").get(requested) {
            return chain;
        }
        let chain = negotiate(
            requested,
            &self.content.locales,
            &self.content.source_locale,
        );
        self.chains
            .lock()
            .expect("chain lock")
            .insert(requested.to_vec(), chain.clone());
        chain
    }

    /// The bytes all rendered views may take together: as much as the content (a view is the
    /// content in one locale chain without its key material, so one view fits).
    fn views_budget(&self) -> usize {
        content_bytes(&self.content)
    }

    /// About how many bytes this version can take in memory, at most: the content, the
    /// rendered views' budget, and the chain memo, whose [`CHAIN_MEMO_ENTRIES`] keys are each at
    /// most [`MAX_REQUESTED`] tags of [`MAX_TAG_BYTES`] (`i18n` bounds what a request yields)
    /// and whose chains have at most one tag per locale of the quiz and the source.
    pub fn approx_bytes(&self) -> usize {
        let content = content_bytes(&self.content);
        let chain = tag_list_bytes(self.content.locales.len() + 1);
        size_of::<Self>()
            + content
            + self.coverage.len() * (size_of::<LocaleCoverage>() + MAX_TAG_BYTES)
            + self.views_budget()
            + CHAIN_MEMO_ENTRIES * (tag_list_bytes(MAX_REQUESTED) + chain + 2 * ALLOCATION_BYTES)
    }

    /// How many views and chains are remembered now, and the views' bytes (for tests and
    /// diagnostics).
    pub fn memo_use(&self) -> (usize, u64, usize) {
        let views = self.rendered.lock().expect("render lock");
        (
            views.len(),
            views.weight(),
            self.chains.lock().expect("chain lock").len(),
        )
    }

    pub fn summary(&self, requested: &[String]) -> QuizSummary {
        let chain = self.locale_chain(requested);
        QuizSummary {
            slug: self.content.slug.clone(),
            version: self.version,
            locale: chain[0].clone(),
            source_locale: self.content.source_locale.clone(),
            title: resolve(&self.content.title, &chain),
            intro: (self.content.intro.as_ref()).map(|i| resolve(i, &chain)),
            visibility: self.content.visibility,
            locales: self.coverage.clone(),
            question_count: self.content.served_count(),
            max_points: self.content.nominal_max_score(),
            practice_assignment_id: self.practice_assignment_id,
            editable: false,
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
            // A bank's questions are served only in the attempts that draw them.
            questions: c
                .fixed_questions()
                .into_iter()
                .map(|q| {
                    let prompt = resolve(&q.prompt, chain);
                    QuestionView {
                        key: q.key.clone(),
                        kind: q.kind,
                        points: q.points,
                        prompt: prompt.text,
                        lang: prompt.lang,
                        image: (q.image.as_ref()).map(|i| {
                            QuestionImage::new(&format!("/v1/quizzes/{}", c.slug), i, chain)
                        }),
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
    /// The quiz's intro line, for a learner to read before starting; absent when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intro: Option<LocalizedText>,
    /// `public`, or `private`: a quiz you author, listed for you alone.
    pub visibility: Visibility,
    /// Every locale the quiz is available in, with its translation coverage.
    pub locales: Vec<LocaleCoverage>,
    pub question_count: usize,
    /// The most an attempt can score: the points of every question, or with question banks
    /// the fixed questions and each slot's highest draw (what an LMS line item is made with).
    pub max_points: f64,
    /// Start a practice attempt on it (any signed-in learner).
    pub practice_assignment_id: Option<Uuid>,
    /// You may change it and read its translations (you own or co-author it, or are an
    /// admin).
    pub editable: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct QuizList {
    pub items: Vec<QuizSummary>,
    /// The cursor of the next page (pass it as `cursor`); absent on the last page.
    pub next: Option<String>,
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
    /// The questions every attempt serves; a quiz with question banks also draws questions
    /// per attempt, which are not listed.
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
    /// The image shown with the prompt, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<QuestionImage>,
    /// The options in authored order (choice kinds only); attempts shuffle per policy.
    pub options: Vec<OptionView>,
}

/// A question's image as served: fetched from `url` with the reader's bearer token (the
/// same rule as the page it is on decides who may), described by `alt`.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuestionImage {
    /// Where to fetch it: `/v1/quizzes/{slug}/media/{sha256}` on a quiz's page,
    /// `/v1/attempts/{id}/media/{sha256}` in an attempt.
    pub url: String,
    /// What the image shows, for people who cannot see it, with the language it is in.
    pub alt: LocalizedText,
    /// Its width in pixels, where its header says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    /// Its height in pixels, where its header says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
}

impl QuestionImage {
    /// `image` served under `base` (the path its page serves media under), its alt text along
    /// the locale `chain`.
    pub fn new(base: &str, image: &Image, chain: &[String]) -> Self {
        Self {
            url: format!("{base}/media/{}", image.sha256),
            alt: resolve(&image.alt, chain),
            width: image.width,
            height: image.height,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OptionView {
    pub text: String,
    /// The language `text` is in.
    pub lang: String,
}
