//! Synthetic finished attempts, written straight into PostgreSQL with COPY: for the
//! analytics benchmark and for checking the statistics on data of a known shape.
//!
//! Each synthetic learner has an ability θ ~ N(0, 1); a question with difficulty b is answered
//! correctly with probability 1 / (1 + e^(b − θ)) (a Rasch model), a wrong answer picks a wrong
//! option at random, and 5% of questions go unanswered. One question can be made harder in one
//! locale, as a misleading translation would; and one locale's learners can be made more able,
//! as a group that is simply stronger is (which must not look like a biased translation).

use std::fmt::Write;

use chrono::{DateTime, Duration, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::attempts::shuffle::SplitMix64;
use crate::content::{QuestionKind, QuizContent};

pub struct Plan<'a> {
    pub assignment_id: Uuid,
    pub quiz_version_id: Uuid,
    pub content: &'a QuizContent,
    pub attempts: usize,
    pub seed: u64,
    /// A question key and a locale in which it is this much harder (logits).
    pub harder_in: Option<(&'a str, &'a str, f64)>,
    /// A locale whose learners are this much more able (logits).
    pub stronger_in: Option<(&'a str, f64)>,
    pub finished_at: DateTime<Utc>,
}

struct Rng(SplitMix64);

impl Rng {
    fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        // Box–Muller.
        let (u, v) = (self.unit().max(f64::MIN_POSITIVE), self.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
    }
}

/// Writes `plan.attempts` finished attempts (one learner each) with their responses.
/// Returns the number of responses written.
pub async fn finished_attempts(pool: &PgPool, plan: &Plan<'_>) -> Result<u64, sqlx::Error> {
    // The attempts are laid out as the assignment is now.
    let (shuffle_questions, shuffle_options, navigation): (bool, bool, String) = sqlx::query_as(
        "SELECT shuffle_questions, shuffle_options, navigation FROM assignments WHERE id = $1",
    )
    .bind(plan.assignment_id)
    .fetch_one(pool)
    .await?;
    let mut rng = Rng(SplitMix64::new(plan.seed));
    let q = &plan.content.questions;
    let difficulty: Vec<f64> = (0..q.len())
        .map(|i| -1.0 + 2.0 * i as f64 / q.len().max(2) as f64)
        .collect();
    let locales = &plan.content.locales;
    let (mut users, mut attempts, mut responses) = (String::new(), String::new(), String::new());
    let max_score: f64 = q.iter().map(|q| q.points).sum();
    let mut ids = Vec::with_capacity(plan.attempts);
    for n in 0..plan.attempts {
        let user = Uuid::now_v7();
        let attempt = Uuid::now_v7();
        ids.push(attempt);
        let locale = &locales[rng.below(locales.len())];
        let ability = rng.normal()
            + match plan.stronger_in {
                Some((l, shift)) if l == locale => shift,
                _ => 0.0,
            };
        let started = plan.finished_at - Duration::minutes(20) + Duration::seconds(n as i64 % 600);
        let mut at = started;
        let mut score = 0.0;
        let (mut keys, mut vpoints, mut vseconds, mut choices) = (vec![], vec![], vec![], vec![]);
        for (i, question) in q.iter().enumerate() {
            if rng.unit() < 0.05 {
                continue;
            }
            let mut b = difficulty[i];
            if let Some((key, l, extra)) = plan.harder_in
                && key == question.key
                && l == locale
            {
                b += extra;
            }
            let right = rng.unit() < 1.0 / (1.0 + (b - ability).exp());
            let (answer, points) = match question.kind {
                QuestionKind::Single | QuestionKind::TrueFalse | QuestionKind::Multiple => {
                    let pool: Vec<&str> = question
                        .options
                        .iter()
                        .filter(|o| o.correct == right)
                        .map(|o| o.key.as_str())
                        .collect();
                    let picked: Vec<&str> = if right && question.kind == QuestionKind::Multiple {
                        pool
                    } else {
                        vec![pool[rng.below(pool.len())]]
                    };
                    choices.extend(picked.iter().map(|k| format!("{}:{k}", question.key)));
                    let list: Vec<String> = picked.iter().map(|k| format!("\"\"{k}\"\"")).collect();
                    (
                        format!("\"{{\"\"selected\"\": [{}]}}\"", list.join(", ")),
                        if right { question.points } else { 0.0 },
                    )
                }
                QuestionKind::Numeric => {
                    let key = question.numeric.as_ref().expect("numeric key");
                    let x = if right {
                        key.answer
                    } else {
                        key.answer + key.tolerance + 1.0
                    };
                    (
                        format!("\"{{\"\"number\"\": {x}}}\""),
                        if right { question.points } else { 0.0 },
                    )
                }
                QuestionKind::ShortText => {
                    let key = question.short_text.as_ref().expect("short text key");
                    let t = if right {
                        key.accepted[0].as_str()
                    } else {
                        "no idea"
                    };
                    (
                        format!("\"{{\"\"text\"\": \"\"{t}\"\"}}\""),
                        if right { question.points } else { 0.0 },
                    )
                }
            };
            let seconds = 5.0 + 55.0 * rng.unit();
            at += Duration::milliseconds((seconds * 1000.0) as i64);
            score += points;
            keys.push(question.key.clone());
            vpoints.push(points.to_string());
            vseconds.push(seconds.to_string());
            let _ = writeln!(
                responses,
                "{attempt},{},{answer},{points},{},{},{},{seconds}",
                question.key,
                question.points,
                right,
                at.to_rfc3339()
            );
        }
        let _ = writeln!(users, "{user},Synthetic learner {n},learner");
        let _ = writeln!(
            attempts,
            "{attempt},{},{user},{},1,{locale},\\x{},{},{},submitted,{score},{max_score},\"{{{}}}\",\"{{{}}}\",\"{{{}}}\",\"{{{}}}\",{shuffle_questions},{shuffle_options},{navigation}",
            plan.assignment_id,
            plan.quiz_version_id,
            hex::encode(user.as_bytes()).repeat(2),
            started.to_rfc3339(),
            at.to_rfc3339(),
            keys.join(","),
            vpoints.join(","),
            vseconds.join(","),
            choices.join(","),
        );
    }
    let mut conn = pool.acquire().await?;
    let mut tx = sqlx::Connection::begin(&mut *conn).await?;
    let mut copy = tx
        .copy_in_raw("COPY users (id, display_name, role) FROM STDIN (FORMAT csv)")
        .await?;
    copy.send(users.as_bytes()).await?;
    copy.finish().await?;
    let mut copy = tx
        .copy_in_raw(
            "COPY attempts (id, assignment_id, user_id, quiz_version_id, number, locale, seed, started_at,
                            finished_at, finish_reason, score, max_score, question_keys,
                            question_points, question_seconds, choices, shuffle_questions,
                            shuffle_options, navigation) FROM STDIN (FORMAT csv)",
        )
        .await?;
    copy.send(attempts.as_bytes()).await?;
    copy.finish().await?;
    let mut copy = tx
        .copy_in_raw(
            "COPY responses (attempt_id, question_key, answer, points, max_points, correct, answered_at,
                             seconds) FROM STDIN (FORMAT csv)",
        )
        .await?;
    copy.send(responses.as_bytes()).await?;
    let written = copy.finish().await?;
    sqlx::query(
        "INSERT INTO analytics_generations (assignment_id, generation) VALUES ($1, 1)
         ON CONFLICT (assignment_id) DO UPDATE SET generation = analytics_generations.generation + 1",
    )
    .bind(plan.assignment_id)
    .execute(&mut *tx)
    .await?;
    // Counted as the finish transaction counts attempts (after the generation bump).
    super::store::record_finished(&mut *tx, &ids).await?;
    tx.commit().await?;
    Ok(written)
}
