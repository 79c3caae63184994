//! How an attempt is served: its order, its ids, its texts in the attempt's locale, and as
//! much of the judgement as the policy allows. Pure: no I/O.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::models::{
    AttemptOption, AttemptQuestion, AttemptResult, AttemptState, AttemptView, QuestionResult,
    ResponseView,
};
use super::shuffle::AttemptKeys;
use super::store::{AttemptRow, ResponseRow};
use crate::content::{Question, QuestionKind};
use crate::grading::Answer;
use crate::i18n::{LocalizedText, resolve};
use crate::policy::{FeedbackTiming, Reveal};
use crate::quizzes::QuizVersion;

pub struct Served<'a> {
    pub version: &'a QuizVersion,
    keys: AttemptKeys<'a>,
    chain: Vec<String>,
    shuffle_questions: bool,
    shuffle_options: bool,
}

impl<'a> Served<'a> {
    pub fn new(version: &'a QuizVersion, attempt: &'a AttemptRow) -> Self {
        Self {
            version,
            keys: AttemptKeys {
                seed: &attempt.seed,
            },
            chain: version.locale_chain(std::slice::from_ref(&attempt.locale)),
            shuffle_questions: attempt.shuffle_questions,
            shuffle_options: attempt.shuffle_options,
        }
    }

    fn text(&self, t: &crate::i18n::Text) -> LocalizedText {
        resolve(t, &self.chain)
    }

    /// The questions in this attempt's order.
    pub fn questions(&self) -> Vec<&'a Question> {
        let all = &self.version.content.questions;
        self.keys
            .question_order(all.len(), self.shuffle_questions)
            .into_iter()
            .map(|i| &all[i])
            .collect()
    }

    pub fn question_id(&self, q: &Question) -> String {
        self.keys.question_id(&q.key)
    }

    pub fn question_by_id(&self, id: &str) -> Option<&'a Question> {
        self.version
            .content
            .questions
            .iter()
            .find(|q| self.keys.question_id(&q.key) == id)
    }

    pub fn option_id(&self, q: &Question, option_key: &str) -> String {
        self.keys.option_id(&q.key, option_key)
    }

    pub fn option_key(&self, q: &'a Question, option_id: &str) -> Option<&'a str> {
        q.options
            .iter()
            .find(|o| self.keys.option_id(&q.key, &o.key) == option_id)
            .map(|o| o.key.as_str())
    }

    fn options(&self, q: &Question) -> Vec<AttemptOption> {
        // True comes before False, always: shuffling them would only confuse.
        let shuffle = self.shuffle_options && q.kind != QuestionKind::TrueFalse;
        self.keys
            .option_order(&q.key, q.options.len(), shuffle)
            .into_iter()
            .map(|i| {
                let o = &q.options[i];
                let t = self.text(&o.text);
                AttemptOption {
                    id: self.option_id(q, &o.key),
                    text: t.text,
                    lang: t.lang,
                }
            })
            .collect()
    }

    pub fn response_view(&self, q: &Question, r: &ResponseRow) -> ResponseView {
        let (selected, number, text) = match &r.answer.0 {
            Answer::Selected(keys) => {
                // Served in this attempt's option order, whatever order they were sent in.
                let order = self.options(q);
                let ids: Vec<String> = keys.iter().map(|k| self.option_id(q, k)).collect();
                let ordered = order
                    .into_iter()
                    .map(|o| o.id)
                    .filter(|id| ids.contains(id))
                    .collect();
                (Some(ordered), None, None)
            }
            Answer::Number(x) => (None, Some(*x), None),
            Answer::Text(t) => (None, None, Some(t.clone())),
        };
        ResponseView {
            selected,
            number,
            text,
            answered_at: r.answered_at,
        }
    }

    /// The judgement of one question, with the answer given (or none).
    pub fn result(&self, q: &Question, r: Option<&ResponseRow>) -> QuestionResult {
        let feedback = r.and_then(|r| match &r.answer.0 {
            Answer::Selected(keys) => {
                let parts: Vec<LocalizedText> = q
                    .options
                    .iter()
                    .filter(|o| keys.contains(&o.key))
                    .filter_map(|o| o.feedback.as_ref().map(|f| self.text(f)))
                    .collect();
                match parts.len() {
                    0 => None,
                    1 => parts.into_iter().next(),
                    _ => Some(LocalizedText {
                        lang: parts[0].lang.clone(),
                        text: parts
                            .iter()
                            .map(|p| p.text.as_str())
                            .collect::<Vec<_>>()
                            .join(" "),
                    }),
                }
            }
            _ if !r.correct => q.wrong_feedback.as_ref().map(|f| self.text(f)),
            _ => None,
        });
        QuestionResult {
            correct: r.is_some_and(|r| r.correct),
            points: r.map_or(0.0, |r| r.points),
            max_points: q.points,
            correct_options: q
                .options
                .iter()
                .filter(|o| o.correct)
                .map(|o| self.option_id(q, &o.key))
                .collect(),
            correct_number: q.numeric.as_ref().map(|n| n.answer),
            accepted_answers: q.short_text.as_ref().map(|s| s.accepted.clone()),
            explanation: self.text(&q.explanation),
            feedback,
        }
    }

    /// The whole attempt as its viewer may see it now.
    pub fn view(
        &self,
        attempt: &AttemptRow,
        responses: &[ResponseRow],
        reveal: Reveal,
        now: DateTime<Utc>,
    ) -> AttemptView {
        let by_key: HashMap<&str, &ResponseRow> = responses
            .iter()
            .map(|r| (r.question_key.as_str(), r))
            .collect();
        let finished = attempt.finished_at.is_some();
        let questions = self
            .questions()
            .into_iter()
            .map(|q| {
                let response = by_key.get(q.key.as_str()).copied();
                let prompt = self.text(&q.prompt);
                let result = match reveal {
                    Reveal::All => Some(self.result(q, response)),
                    Reveal::Answered => response.map(|r| self.result(q, Some(r))),
                    Reveal::Nothing => None,
                };
                AttemptQuestion {
                    id: self.question_id(q),
                    kind: q.kind,
                    points: q.points,
                    prompt: prompt.text,
                    lang: prompt.lang,
                    options: self.options(q),
                    response: response.map(|r| self.response_view(q, r)),
                    result,
                }
            })
            .collect();
        AttemptView {
            id: attempt.id,
            assignment_id: attempt.assignment_id,
            quiz: self.version.content.slug.clone(),
            quiz_version: self.version.version,
            number: attempt.number,
            locale: attempt.locale.clone(),
            title: self.text(&self.version.content.title),
            state: if finished {
                AttemptState::Finished
            } else {
                AttemptState::InProgress
            },
            feedback_timing: FeedbackTiming::parse(&attempt.feedback).unwrap_or_default(),
            started_at: attempt.started_at,
            deadline: attempt.deadline,
            time_left_seconds: attempt
                .deadline
                .filter(|_| !finished)
                .map(|d| ((d - now).num_milliseconds().max(0) + 999) / 1000),
            finished_at: attempt.finished_at,
            finish_reason: attempt.finish_reason.clone(),
            questions,
            result: attempt.score.map(|score| AttemptResult {
                score,
                max_score: attempt.max_score,
                percentage: percentage(score, attempt.max_score),
            }),
        }
    }
}

pub fn percentage(score: f64, max: f64) -> f64 {
    if max > 0.0 {
        (score / max * 10000.0).round() / 100.0
    } else {
        0.0
    }
}
