//! CSV exports, streamed row by row from PostgreSQL: any size, constant memory.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use futures_util::StreamExt;
use sqlx::Row;
use sqlx::postgres::PgRow;
use uuid::Uuid;

use super::routes::assignment_scope;
use crate::auth::CurrentUser;
use crate::error::{ApiError, Problem};
use crate::state::AppState;

/// One CSV field: quoted when needed, and defused when a spreadsheet would run it as a formula.
pub fn csv_field(value: &str) -> String {
    let formula =
        value.starts_with(['=', '+', '-', '@', '\t', '\r']) && value.parse::<f64>().is_err();
    let defused = if formula {
        format!("'{value}")
    } else {
        value.to_string()
    };
    if defused.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", defused.replace('"', "\"\""))
    } else {
        defused
    }
}

fn cell(row: &PgRow, i: usize) -> String {
    // Numbers and times print as PostgreSQL formats them (the query casts every column to text).
    row.try_get::<Option<String>, _>(i)
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Where an export reads: the replica once it has replayed what the primary has committed now
/// (the rule of `replica`), else the primary.
async fn fresh_pool(state: &AppState) -> Result<sqlx::PgPool, ApiError> {
    let lsn = super::store::primary_lsn(&state.pool).await?;
    Ok(super::replica::pool_for(&state.pool, state.analytics_replica.as_ref(), &lsn).await)
}

/// Streams the rows of `sql` (every column cast to text, `$1` the assignment) as CSV.
fn stream_csv(
    pool: sqlx::PgPool,
    sql: &'static str,
    assignment: Uuid,
    header_line: &'static str,
    filename: String,
) -> HttpResponse {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<web::Bytes, actix_web::Error>>(16);
    actix_web::rt::spawn(async move {
        if tx
            .send(Ok(web::Bytes::from_static(header_line.as_bytes())))
            .await
            .is_err()
        {
            return;
        }
        let mut rows = super::store::csv_rows(&pool, sql, assignment);
        let mut chunk = String::with_capacity(64 * 1024);
        while let Some(row) = rows.next().await {
            match row {
                Ok(row) => {
                    let fields: Vec<String> =
                        (0..row.len()).map(|i| csv_field(&cell(&row, i))).collect();
                    chunk.push_str(&fields.join(","));
                    chunk.push_str("\r\n");
                    if chunk.len() >= 60 * 1024
                        && tx
                            .send(Ok(web::Bytes::from(std::mem::take(&mut chunk))))
                            .await
                            .is_err()
                    {
                        return;
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "CSV export failed mid-stream");
                    let _ = tx
                        .send(Err(actix_web::error::ErrorInternalServerError(
                            "export failed",
                        )))
                        .await;
                    return;
                }
            }
        }
        if !chunk.is_empty() {
            let _ = tx.send(Ok(web::Bytes::from(chunk))).await;
        }
    });
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    HttpResponse::Ok()
        .content_type("text/csv; charset=utf-8")
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{filename}\""),
        ))
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .streaming(body)
}

const RESPONSES_HEADER: &str = "attempt_id,user_id,attempt_number,locale,attempt_state,question_key,points,max_points,correct,answered_at,seconds,selected_options,number,text\r\n";

const RESULTS_HEADER: &str = "user_id,display_name,email,attempts_started,attempts_finished,grade_percentage,grading_method,last_finished_at\r\n";

/// Every response of an assignment's attempts, one row each, as CSV.
#[utoipa::path(get, path = "/v1/assignments/{id}/analytics/responses.csv", tag = "analytics", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The assignment's id")),
    responses(
        (status = 200, description = "CSV, one row per response, streamed", body = String, content_type = "text/csv"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn responses_csv(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    assignment_scope(&state, *id, &user).await?;
    Ok(stream_csv(
        fresh_pool(&state).await?,
        super::store::RESPONSES_CSV,
        *id,
        RESPONSES_HEADER,
        format!("responses-{id}.csv"),
    ))
}

/// Each learner's attempts and grade under the assignment's grading method, as CSV.
#[utoipa::path(get, path = "/v1/assignments/{id}/analytics/results.csv", tag = "analytics", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The assignment's id")),
    responses(
        (status = 200, description = "CSV, one row per learner, streamed", body = String, content_type = "text/csv"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such assignment, or not in your courses", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn results_csv(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    assignment_scope(&state, *id, &user).await?;
    Ok(stream_csv(
        fresh_pool(&state).await?,
        super::store::RESULTS_CSV,
        *id,
        RESULTS_HEADER,
        format!("results-{id}.csv"),
    ))
}

#[cfg(test)]
mod tests {
    use super::csv_field;

    #[test]
    fn csv_fields_are_quoted_and_formulas_defused() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_field("-1.5"), "-1.5");
        assert_eq!(csv_field("-x"), "'-x");
    }
}
