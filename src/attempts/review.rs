//! How an attempt is served: its order, its ids, its texts in the attempt's locale, and as
//! much of the judgement as the policy allows. Pure: no I/O.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::models::{
    AttemptOption, AttemptQuestion, AttemptResult, AttemptState, AttemptView, QuestionResult,
    ResponseView,
};
use super::shuffle::{AttemptKeys, Id};
use super::store::{AttemptRow, ResponseRow};
use crate::content::{Question, QuestionKind};
use crate::grading::Answer;
use crate::grading::scoring::QuestionRules;
use crate::i18n::{LocalizedText, resolve, resolve_ref};
use crate::live::machine::Progress;
use crate::policy::Reveal;
use crate::quizzes::QuizVersion;
use crate::quizzes::models::QuestionImage;

/// What a viewer may see of an attempt's questions now: the one rule every read of an attempt
/// applies (its view, and so its start, resume and finish; its images; a live session's
/// stream to the learner).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sight {
    /// What the feedback timing allows (the course's staff: everything).
    pub reveal: Reveal,
    /// A learner's live attempt: how far its session has gone. The session, not the learner's
    /// progress nor the feedback timing, decides what is shown; the timing can only withhold
    /// more.
    pub live: Option<Progress>,
    /// A learner's sequential attempt in progress: only the questions answered so far and the
    /// current one, the first unanswered (see [`Served::view`]).
    pub one_at_a_time: bool,
}

/// How much of one question a viewer sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Nothing: not even that it exists.
    Hidden,
    /// The question and the viewer's answer, nothing of its key.
    Question,
    /// With its judgement: correctness, the right answer, the explanation.
    Judged,
}

impl Sight {
    /// What of the question at `place` (its index in the version's questions, the order a
    /// live session opens them in) is seen, `answered` or not.
    pub fn of(&self, place: usize, answered: bool) -> Seen {
        if let Some(live) = self.live {
            if place >= live.opened {
                return Seen::Hidden;
            }
            if place >= live.revealed {
                return Seen::Question;
            }
        }
        match self.reveal {
            Reveal::All => Seen::Judged,
            Reveal::Answered if answered => Seen::Judged,
            Reveal::Answered | Reveal::Nothing => Seen::Question,
        }
    }
}

/// An attempt's layout: its order and ids, worked out once from its seed (they never change),
/// and its locale chain. Compact: it is kept in memory for every active attempt.
pub struct Served {
    pub version: Arc<QuizVersion>,
    chain: Vec<String>,
    /// Indices into the version's questions, in this attempt's order: only the questions it
    /// serves (its drawn set, for a quiz with banks). Nothing else of the version is reachable
    /// through this layout: no id, no view, no answer.
    order: Box<[u16]>,
    /// By question index: the question's id in this attempt.
    question_ids: Box<[Id]>,
    /// By question index: where its options start in `option_order` and `option_ids` (served
    /// questions only have options there).
    option_start: Box<[u16]>,
    /// Each question's option indices in this attempt's order, one question after another.
    option_order: Box<[u16]>,
    /// Each question's option ids by option index, one question after another.
    option_ids: Box<[Id]>,
}

impl Served {
    pub fn new(version: Arc<QuizVersion>, attempt: &AttemptRow) -> Self {
        let keys = AttemptKeys {
            seed: &attempt.seed,
        };
        let questions = &version.content.questions;
        let small = |i: usize| u16::try_from(i).expect("content limits keep indices small");
        // The served questions, before any shuffle: the drawn set, or all of them.
        let served: Vec<usize> = match &attempt.question_set {
            Some(keys) => keys
                .iter()
                .filter_map(|k| questions.iter().position(|q| q.key == *k))
                .collect(),
            None => (0..questions.len()).collect(),
        };
        let mut option_start = Vec::with_capacity(questions.len());
        let mut option_order = Vec::new();
        let mut option_ids = Vec::new();
        let mut is_served = vec![false; questions.len()];
        for &i in &served {
            is_served[i] = true;
        }
        for (i, q) in questions.iter().enumerate() {
            option_start.push(small(option_order.len()));
            // A question not served has no option layout (only served questions are looked
            // up): a large bank costs an attempt 8 bytes per question, not per option.
            if !is_served[i] {
                continue;
            }
            // True comes before False, always: shuffling them would only confuse.
            let shuffle = attempt.shuffle_options && q.kind != QuestionKind::TrueFalse;
            option_order.extend(
                keys.option_order(&q.key, q.options.len(), shuffle)
                    .into_iter()
                    .map(small),
            );
            option_ids.extend(q.options.iter().map(|o| keys.option_id(&q.key, &o.key)));
        }
        Self {
            chain: version.locale_chain(std::slice::from_ref(&attempt.locale)),
            order: keys
                .question_order(served.len(), attempt.shuffle_questions)
                .into_iter()
                .map(|i| small(served[i]))
                .collect(),
            question_ids: questions.iter().map(|q| keys.question_id(&q.key)).collect(),
            option_start: option_start.into(),
            option_order: option_order.into(),
            option_ids: option_ids.into(),
            version,
        }
    }

    /// The index of a question of this version (questions are compared by identity).
    pub fn index(&self, q: &Question) -> usize {
        self.version
            .content
            .questions
            .iter()
            .position(|x| std::ptr::eq(x, q))
            .expect("a question of this attempt's version")
    }

    /// The option ids of question `i`, by option index.
    fn ids_of(&self, i: usize) -> &[Id] {
        let start = usize::from(self.option_start[i]);
        let n = self.version.content.questions[i].options.len();
        &self.option_ids[start..start + n]
    }

    /// The option indices of question `i`, in this attempt's order.
    fn order_of(&self, i: usize) -> &[u16] {
        let start = usize::from(self.option_start[i]);
        let n = self.version.content.questions[i].options.len();
        &self.option_order[start..start + n]
    }

    /// `q`'s image as attempt `attempt` serves it: under the attempt's own media path, its
    /// alt text in the attempt's locale.
    fn image(&self, attempt: Uuid, q: &Question) -> Option<QuestionImage> {
        let base = format!("/v1/attempts/{attempt}");
        (q.image.as_ref()).map(|i| QuestionImage::new(&base, i, &self.chain))
    }

    fn text(&self, t: &crate::i18n::Text) -> LocalizedText {
        resolve(t, &self.chain)
    }

    /// The questions in this attempt's order.
    pub fn questions(&self) -> impl Iterator<Item = &Question> {
        self.order
            .iter()
            .map(|&i| &self.version.content.questions[usize::from(i)])
    }

    pub fn question_id(&self, q: &Question) -> String {
        self.question_ids[self.index(q)].to_string()
    }

    pub fn question_by_id(&self, id: &str) -> Option<&Question> {
        let id = Id::parse(id)?;
        // Only the questions this attempt serves: any other question of the version is as
        // unknown here as a made-up id.
        let i = self
            .order
            .iter()
            .map(|&i| usize::from(i))
            .find(|&i| self.question_ids[i] == id)?;
        Some(&self.version.content.questions[i])
    }

    pub fn option_key<'q>(&self, q: &'q Question, option_id: &str) -> Option<&'q str> {
        let id = Id::parse(option_id)?;
        let o = self.ids_of(self.index(q)).iter().position(|x| *x == id)?;
        Some(q.options[o].key.as_str())
    }

    fn options<'a>(&'a self, q: &'a Question) -> Vec<AttemptOption<'a>> {
        let i = self.index(q);
        let ids = self.ids_of(i);
        self.order_of(i)
            .iter()
            .map(|&o| {
                let (text, lang) = resolve_ref(&q.options[usize::from(o)].text, &self.chain);
                AttemptOption {
                    id: ids[usize::from(o)],
                    text,
                    lang,
                }
            })
            .collect()
    }

    pub fn response_view(&self, q: &Question, r: &ResponseRow) -> ResponseView {
        let (selected, number, text) = match &r.answer.0 {
            Answer::Selected(keys) => {
                // Served in this attempt's option order, whatever order they were sent in.
                let i = self.index(q);
                let ids = self.ids_of(i);
                let ordered = self
                    .order_of(i)
                    .iter()
                    .map(|&o| usize::from(o))
                    .filter(|&o| keys.contains(&q.options[o].key))
                    .map(|o| ids[o].to_string())
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

    /// The judgement of one question, with the answer given (or none), scored as the
    /// assignment's rules say.
    pub fn result(
        &self,
        q: &Question,
        r: Option<&ResponseRow>,
        rules: &QuestionRules,
    ) -> QuestionResult {
        let (points, max_points) = rules.question(&q.key, q.points, r.map(|r| r.points));
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
            points,
            max_points,
            correct_options: q
                .options
                .iter()
                .zip(self.ids_of(self.index(q)))
                .filter(|(o, _)| o.correct)
                .map(|(_, id)| id.to_string())
                .collect(),
            correct_number: q.numeric.as_ref().map(|n| n.answer),
            accepted_answers: q.short_text.as_ref().map(|s| s.accepted.clone()),
            explanation: self.text(&q.explanation),
            feedback,
        }
    }

    /// One question as this attempt serves it, with no response and nothing of its key (live
    /// mode: the question shown now, in the learner's locale, with their option ids).
    pub fn question_view<'a>(
        &'a self,
        attempt: Uuid,
        q: &'a Question,
        rules: &QuestionRules,
    ) -> AttemptQuestion<'a> {
        let (prompt, lang) = resolve_ref(&q.prompt, &self.chain);
        AttemptQuestion {
            id: self.question_ids[self.index(q)],
            kind: q.kind,
            points: rules.question(&q.key, q.points, None).1,
            scoring: rules.scoring(&q.key),
            prompt,
            lang,
            image: self.image(attempt, q),
            options: self.options(q),
            response: None,
            result: None,
        }
    }

    /// This attempt's id of `q`'s option `key` (live mode: a distribution counted by option
    /// key, shown to a learner by the ids they know; keys are never shown to learners).
    pub fn option_id(&self, q: &Question, key: &str) -> Option<String> {
        let o = q.options.iter().position(|o| o.key == key)?;
        Some(self.ids_of(self.index(q))[o].to_string())
    }

    /// The keys of the questions before `q` in this attempt's order.
    pub fn keys_before(&self, q: &Question) -> Vec<String> {
        self.questions()
            .take_while(|x| !std::ptr::eq(*x, q))
            .map(|x| x.key.clone())
            .collect()
    }

    /// The whole attempt as its viewer may see it now ([`Sight`]). One at a time (a learner's
    /// sequential attempt in progress): only the questions answered so far and the current one,
    /// the first unanswered; nothing of the questions after it.
    pub fn view(
        &self,
        attempt: &AttemptRow,
        responses: &[ResponseRow],
        sight: Sight,
        now: DateTime<Utc>,
    ) -> AttemptView<'_> {
        let by_key: HashMap<&str, &ResponseRow> = responses
            .iter()
            .map(|r| (r.question_key.as_str(), r))
            .collect();
        let finished = attempt.finished_at.is_some();
        // The score, once finished; the band's feedback goes with it and only with it.
        let result = attempt.score.map(|score| {
            let points = attempt.override_points.unwrap_or(score);
            AttemptResult {
                score,
                max_score: attempt.max_score,
                points,
                overridden: attempt.override_points.is_some(),
                percentage: percentage(points, attempt.max_score),
            }
        });
        let mut current_served = false;
        let questions = self
            .questions()
            .take_while(|q| {
                if !sight.one_at_a_time || by_key.contains_key(q.key.as_str()) {
                    return true;
                }
                !std::mem::replace(&mut current_served, true)
            })
            .filter_map(|q| {
                let response = by_key.get(q.key.as_str()).copied();
                let place = self.index(q);
                let seen = sight.of(place, response.is_some());
                if seen == Seen::Hidden {
                    return None;
                }
                let (prompt, lang) = resolve_ref(&q.prompt, &self.chain);
                let rules = &attempt.question_rules;
                let result = (seen == Seen::Judged).then(|| self.result(q, response, rules));
                Some(AttemptQuestion {
                    id: self.question_ids[place],
                    kind: q.kind,
                    points: rules.question(&q.key, q.points, None).1,
                    scoring: rules.scoring(&q.key),
                    prompt,
                    lang,
                    image: self.image(attempt.id, q),
                    options: self.options(q),
                    response: response.map(|r| self.response_view(q, r)),
                    result,
                })
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
            feedback_timing: attempt.feedback,
            navigation: attempt.navigation,
            question_count: self.order.len(),
            started_at: attempt.started_at,
            deadline: attempt.deadline,
            time_left_seconds: attempt
                .deadline
                .filter(|_| !finished)
                .map(|d| ((d - now).num_milliseconds().max(0) + 999) / 1000),
            finished_at: attempt.finished_at,
            finish_reason: attempt.finish_reason.clone(),
            regraded_at: attempt.regraded_at,
            questions,
            score_feedback: result.as_ref().and_then(|r| {
                let band = self.version.content.score_band(r.percentage)?;
                Some(self.text(&band.text))
            }),
            result,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sight(reveal: Reveal, live: Option<(usize, usize)>) -> Sight {
        Sight {
            reveal,
            live: live.map(|(opened, revealed)| Progress { opened, revealed }),
            one_at_a_time: false,
        }
    }

    #[test]
    fn outside_live_mode_the_feedback_timing_decides() {
        for answered in [false, true] {
            assert_eq!(sight(Reveal::All, None).of(5, answered), Seen::Judged);
            assert_eq!(sight(Reveal::Nothing, None).of(5, answered), Seen::Question);
        }
        assert_eq!(sight(Reveal::Answered, None).of(5, true), Seen::Judged);
        assert_eq!(sight(Reveal::Answered, None).of(5, false), Seen::Question);
    }

    #[test]
    fn in_live_mode_the_session_shows_and_reveals_and_the_timing_can_only_withhold() {
        // Two questions opened, the first revealed.
        let open = |reveal| sight(reveal, Some((2, 1)));
        for reveal in [Reveal::All, Reveal::Answered, Reveal::Nothing] {
            for answered in [false, true] {
                assert_eq!(open(reveal).of(2, answered), Seen::Hidden, "not opened");
                assert_eq!(open(reveal).of(7, answered), Seen::Hidden, "not opened");
                assert_eq!(open(reveal).of(1, answered), Seen::Question, "not revealed");
            }
        }
        assert_eq!(open(Reveal::Answered).of(0, true), Seen::Judged);
        assert_eq!(open(Reveal::Answered).of(0, false), Seen::Question);
        assert_eq!(open(Reveal::All).of(0, false), Seen::Judged);
        assert_eq!(open(Reveal::Nothing).of(0, true), Seen::Question);
        // In the lobby nothing exists yet.
        assert_eq!(sight(Reveal::All, Some((0, 0))).of(0, false), Seen::Hidden);
    }
}
