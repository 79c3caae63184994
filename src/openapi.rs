//! The OpenAPI 3.1 document, generated from the code. `quizd openapi > openapi/openapi.json`
//! regenerates the committed copy; a test fails when it is stale.

use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "quizd",
        description = "A quiz and assessment service: quizzes in the learner's language, \
            graded on the server, with the answer and its explanation as the learner goes. \
            Every error is `application/problem+json` with a stable `code`."
    ),
    paths(
        crate::quizzes::routes::list_quizzes,
        crate::quizzes::routes::get_quiz,
        crate::ops::healthz,
        crate::ops::readyz,
        crate::ops::metrics,
    ),
    components(schemas(crate::error::Problem)),
    tags(
        (name = "quizzes", description = "The quiz catalogue, in the reader's language"),
        (name = "operations", description = "Liveness, readiness and metrics"),
    )
)]
pub struct ApiDoc;

pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// The document as committed in `openapi/openapi.json`.
pub fn to_json() -> String {
    let mut json = document()
        .to_pretty_json()
        .expect("the document serializes");
    json.push('\n');
    json
}
