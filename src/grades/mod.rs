//! Grades: staff overrides of an attempt's grade, the append-only history of every change of a
//! grade, and a course's gradebook.
//!
//! - An attempt keeps two grades: `score`, computed from its answers when it finishes (item
//!   analysis reads it), and `override_points`, set by course staff with
//!   `PUT /v1/attempts/{id}/grade`. The effective grade is the override when there is one. The
//!   gradebook and LMS grade passback (`lti::ags`, through the `attempt.regraded` outbox event
//!   written in the override's transaction) read the effective grade, under the assignment's
//!   grading method.
//! - Every change of a grade appends a grade event (`grade_events`): the finish (written by
//!   `attempts::store::finish_in`, whatever finished it: submit, deadline, sweep, close), an
//!   override, a regrade. A trigger refuses to update or delete one. Who changed it is an
//!   opaque user id (absent for quizd itself); erasure keeps that id, as in the audit log,
//!   because erasure keeps the person's nameless row. An override is also an audit entry.
//! - Who sees what: an attempt's grade and history are visible to whoever sees the attempt
//!   (`attempts::visible_attempt`: its learner, the course's instructors, admins; `404` to
//!   anyone else). Only the course's instructors and admins change a grade (the learner gets
//!   `403` for their own attempt) or read the gradebook (`courses::taught_course`).
//! - The gradebook is paginated over learners (by display name, then user id) with an opaque
//!   cursor, one SQL statement per page (`store::gradebook_page`); `?format=csv` gives the
//!   same page as CSV. A learner removed from the course stays in it, `enrolled: false`, with
//!   their attempts as they were; an erased account does not (its attempts stay nameless).

pub mod models;
pub mod regrade;
pub mod routes;
pub mod store;

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::web;
use uuid::Uuid;

use crate::attempts::review::percentage;
use crate::error::{ApiError, Code};
use crate::grading::{FinishedAttempt, assignment_grade};
use models::{
    AttemptGrade, CellState, Gradebook, GradebookAssignment, GradebookCell, GradebookLearner,
};
use store::{AttemptCellRow, GradeRow, GradebookRow};

/// The longest `reason` of an override, in characters.
pub const MAX_REASON: usize = 1000;

/// The most questions one regrade rescores (`questions`): more than any quiz has.
pub const MAX_RESCORED: usize = 1000;

/// The grade routes; `app.rs` calls this from its route table.
pub fn configure(cfg: &mut web::ServiceConfig) {
    use crate::telemetry::resource;
    use actix_web::middleware::from_fn;
    use web::{get, post, put};
    cfg.service(resource("/v1/attempts/{id}/grade").route(put().to(routes::override_grade)))
        .service(
            resource("/v1/assignments/{id}/regrade").route(
                post()
                    .to(routes::regrade)
                    .wrap(from_fn(crate::idempotency::guard)),
            ),
        )
        .service(resource("/v1/attempts/{id}/grade-history").route(get().to(routes::grade_history)))
        .service(resource("/v1/courses/{id}/gradebook").route(get().to(routes::gradebook)));
}

/// The grade endpoints, merged into the document by `openapi.rs`.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(routes::override_grade, routes::grade_history, routes::gradebook, routes::regrade),
    components(schemas(models::GradebookFormat)),
    tags((name = "grades", description = "Grades: overrides by course staff with their history, regrades to a corrected version, and course gradebooks"))
)]
pub struct Api;

impl GradeRow {
    pub fn view(&self) -> AttemptGrade {
        AttemptGrade {
            attempt_id: self.attempt_id,
            assignment_id: self.assignment_id,
            user_id: self.user_id,
            points: self.effective(),
            computed_points: self.score,
            max_points: self.max_score,
            overridden: self.override_points.is_some(),
        }
    }
}

/// Checks an override's body: points a finite number (the range is the attempt's, checked
/// under its lock), reason one line of 1 to [`MAX_REASON`] characters.
pub fn check_override(points: f64, reason: &str) -> Result<(), ApiError> {
    if !points.is_finite() {
        return Err(
            ApiError::new(Code::InvalidField, "`points` must be a number.")
                .with_status(StatusCode::UNPROCESSABLE_ENTITY),
        );
    }
    crate::validate::line("reason", reason, 1, MAX_REASON)
}

pub fn points_out_of_range(max: f64) -> ApiError {
    ApiError::new(
        Code::InvalidField,
        format!("`points` must be from 0 to {max}, the attempt's maximum."),
    )
    .with_status(StatusCode::UNPROCESSABLE_ENTITY)
}

pub fn not_finished() -> ApiError {
    ApiError::new(
        Code::AttemptNotFinished,
        "Only a finished attempt's grade can be set.",
    )
}

/// One learner's cell in one assignment, from their attempts at it.
pub fn cell(column: &GradebookAssignment, attempts: &[&AttemptCellRow]) -> GradebookCell {
    let finished: Vec<FinishedAttempt> = attempts
        .iter()
        .filter(|a| a.finished)
        .map(|a| FinishedAttempt {
            number: a.number,
            fraction: match a.points {
                Some(p) if a.max_points > 0.0 => p / a.max_points,
                _ => 0.0,
            },
        })
        .collect();
    let points = assignment_grade(column.grading_method, &finished).map(|f| f * column.max_points);
    let state = if attempts.iter().any(|a| !a.finished) {
        CellState::InProgress
    } else if attempts.iter().any(|a| a.finished && a.overridden) {
        CellState::Overridden
    } else if !finished.is_empty() {
        CellState::Finished
    } else {
        CellState::NotStarted
    };
    GradebookCell {
        assignment_id: column.id,
        points,
        max_points: column.max_points,
        percentage: points.map(|p| percentage(p, column.max_points)),
        attempts_used: attempts.len() as u32,
        state,
    }
}

/// A gradebook page from the rows of [`store::gradebook_page`], which read `limit + 1`
/// learners: the extra one only says that there is a next page.
/// `next`: the cursor after a learner (their display name and id).
pub fn assemble(
    course: Uuid,
    rows: Vec<GradebookRow>,
    limit: usize,
    next: impl Fn(&GradebookLearner) -> String,
) -> Gradebook {
    let columns: Vec<GradebookAssignment> = rows
        .first()
        .map(|r| {
            r.columns
                .iter()
                .map(|c| GradebookAssignment {
                    id: c.id,
                    title: c.title.clone(),
                    grading_method: c.grading_method,
                    max_points: c.max_points,
                })
                .collect()
        })
        .unwrap_or_default();
    let mut learners = Vec::new();
    let mut more = false;
    for mut row in rows {
        let (Some(user_id), Some(display_name)) = (row.user_id, row.display_name.take()) else {
            continue;
        };
        if learners.len() == limit {
            more = true;
            break;
        }
        let attempts = row.attempts();
        let mut by_assignment: HashMap<Uuid, Vec<&AttemptCellRow>> = HashMap::new();
        for a in &attempts {
            by_assignment.entry(a.assignment_id).or_default().push(a);
        }
        let cells = columns
            .iter()
            .map(|c| cell(c, by_assignment.get(&c.id).map_or(&[][..], |v| &v[..])))
            .collect();
        learners.push(GradebookLearner {
            user_id,
            display_name,
            email: row.email.take(),
            enrolled: row.enrolled.unwrap_or(true),
            cells,
        });
    }
    let next = more.then(|| learners.last()).flatten().map(next);
    Gradebook {
        course_id: course,
        assignments: columns,
        learners,
        next,
    }
}

/// A number for a CSV cell: as JSON would print it, at most six decimals.
fn csv_number(x: f64) -> String {
    let rounded = (x * 1e6).round() / 1e6;
    serde_json::Number::from_f64(rounded)
        .map(|n| n.to_string())
        .unwrap_or_default()
}

/// The page as CSV: `user_id,display_name,email,enrolled`, then a column per assignment
/// (`<title> [<id>]`) holding the grade in points (empty before any attempt finished).
pub fn to_csv(book: &Gradebook) -> String {
    use crate::analytics::export::csv_field;
    let mut out = String::new();
    let mut header = vec![
        "user_id".to_string(),
        "display_name".to_string(),
        "email".to_string(),
        "enrolled".to_string(),
    ];
    header.extend(
        book.assignments
            .iter()
            .map(|a| csv_field(&format!("{} [{}]", a.title, a.id))),
    );
    out.push_str(&header.join(","));
    out.push_str("\r\n");
    for l in &book.learners {
        let mut fields = vec![
            l.user_id.to_string(),
            csv_field(&l.display_name),
            csv_field(l.email.as_deref().unwrap_or("")),
            l.enrolled.to_string(),
        ];
        fields.extend(
            l.cells
                .iter()
                .map(|c| c.points.map(csv_number).unwrap_or_default()),
        );
        out.push_str(&fields.join(","));
        out.push_str("\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::GradingMethod;

    fn column(method: GradingMethod) -> GradebookAssignment {
        GradebookAssignment {
            id: Uuid::nil(),
            title: "Quiz".into(),
            grading_method: method,
            max_points: 10.0,
        }
    }

    fn attempt(number: i32, points: Option<f64>, overridden: bool) -> AttemptCellRow {
        AttemptCellRow {
            assignment_id: Uuid::nil(),
            number,
            finished: points.is_some(),
            points,
            max_points: 10.0,
            overridden,
        }
    }

    #[test]
    fn a_cell_applies_the_grading_method_to_effective_grades_and_says_its_state() {
        let a1 = attempt(1, Some(4.0), false);
        let a2 = attempt(2, Some(9.0), true);
        let a3 = attempt(3, None, false);
        let c = cell(&column(GradingMethod::Highest), &[&a1, &a2]);
        assert_eq!(
            (c.points, c.state, c.attempts_used),
            (Some(9.0), CellState::Overridden, 2)
        );
        let c = cell(&column(GradingMethod::First), &[&a2, &a1]);
        assert_eq!((c.points, c.state), (Some(4.0), CellState::Overridden));
        let c = cell(&column(GradingMethod::Average), &[&a1, &a2, &a3]);
        assert_eq!(
            (c.points, c.state, c.attempts_used),
            (Some(6.5), CellState::InProgress, 3)
        );
        let c = cell(&column(GradingMethod::Latest), &[&a1]);
        assert_eq!((c.points, c.state), (Some(4.0), CellState::Finished));
        assert_eq!(c.percentage, Some(40.0));
        let c = cell(&column(GradingMethod::Latest), &[]);
        assert_eq!(
            (c.points, c.state, c.attempts_used),
            (None, CellState::NotStarted, 0)
        );
    }
}
