//! The OpenAPI 3.1 document, generated from the code. `quizd openapi > openapi/openapi.json`
//! regenerates the committed copy; a test fails when it is stale.

use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{Modify, OpenApi};

/// The document's frame: its info, servers, tags and shared schemas. The operations come from
/// each module's own `Api` (see [`document`]).
#[derive(OpenApi)]
#[openapi(
    info(
        title = "quizd",
        description = "A quiz and assessment service: quizzes in the learner's language, \
            graded on the server, with the answer and its explanation as the learner goes. \
            Every error is `application/problem+json` with a stable `code`."
    ),
    components(schemas(crate::error::Problem)),
    servers((url = "/", description = "The quizd that serves this document")),
    tags(
        (name = "quizzes", description = "The quiz catalogue, in the reader's language"),
        (name = "authoring", description = "Creating and changing quizzes; reading them with their key"),
        (name = "auth", description = "Accounts, sign-in, tokens, roles"),
        (name = "courses", description = "Courses, enrollments and rosters"),
        (name = "assignments", description = "Quizzes placed in courses with a policy"),
        (name = "analytics", description = "Item analysis per quiz version and per locale; CSV exports"),
        (name = "attempts", description = "Taking a quiz: graded on the server, feedback as the policy says"),
        (name = "live", description = "Live mode: an assignment run question by question for a classroom, joined with a code, answered against a timer; Server-Sent Events"),
        (name = "lti", description = "LMS integration (LTI 1.3): launch, Deep Linking, grade passback, rosters; platform registrations"),
        (name = "events", description = "Learning events out: xAPI statements to a Learning Record Store, signed webhooks (Standard Webhooks); subscriptions and deliveries, for admins"),
        (name = "audit", description = "Security-relevant actions, append-only: for admins"),
        (name = "operations", description = "Liveness, readiness and metrics"),
    )
)]
pub struct ApiDoc;

/// Declares the bearer schemes: an access token from `/v1/auth/login` (a JWT signed HS256),
/// and the operator's metrics token.
struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "The access token from /v1/auth/login or /v1/auth/register",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "metrics_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("The token quizd was started with (--metrics-token)"))
                    .build(),
            ),
        );
    }
}

/// Every operation of the document, mutably.
fn operations(openapi: &mut utoipa::openapi::OpenApi) -> impl Iterator<Item = &mut Operation> {
    openapi.paths.paths.values_mut().flat_map(|item| {
        [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.options,
            &mut item.head,
            &mut item.patch,
            &mut item.trace,
        ]
        .into_iter()
        .flatten()
    })
}

/// Says `security: []` on every operation that declares no security of its own, so that public
/// operations are public by declaration (client generators and `redocly lint` read an absent
/// `security` as "unknown"). An operation that can answer `401` must declare its scheme; the
/// test `every_operation_declares_its_security_and_one_that_can_answer_401_names_a_scheme`
/// holds that.
struct PublicOperations;

impl Modify for PublicOperations {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for operation in operations(openapi) {
            operation.security.get_or_insert_with(Vec::new);
        }
    }
}

/// Operations that never touch the database, so never answer `503` for it.
const WITHOUT_DATABASE: [&str; 3] = ["healthz", "metrics", "verification_page"];

/// Adds the problems every operation of a kind can answer, so that each handler lists only its
/// own: `503` (database unavailable; every operation that touches it), `401` (every operation
/// that requires a bearer token), `413` (every operation with a body), `415` (every operation
/// whose required body is JSON only). An operation's own description of one of them wins.
struct SharedProblems;

pub(crate) fn problem(description: &str) -> RefOr<Response> {
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content(
                crate::error::PROBLEM_JSON,
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("Problem")))
                    .build(),
            )
            .build(),
    )
}

impl Modify for SharedProblems {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for operation in operations(openapi) {
            let id = operation.operation_id.clone().unwrap_or_default();
            let security = serde_json::to_value(&operation.security).unwrap_or_default();
            let requirements = security.as_array().map(Vec::as_slice).unwrap_or_default();
            let bearer_required =
                !requirements.is_empty() && requirements.iter().all(|r| r.get("bearer").is_some());
            let body = operation.request_body.as_ref().map(|b| match b {
                RefOr::T(body) => (
                    body.required == Some(utoipa::openapi::Required::True),
                    body.content.keys().all(|c| c == "application/json"),
                ),
                RefOr::Ref(_) => (false, false),
            });
            let mut shared = Vec::new();
            if !WITHOUT_DATABASE.contains(&id.as_str()) {
                shared.push(("503", "Database unavailable; retry"));
            }
            if bearer_required {
                shared.push(("401", "Not signed in"));
            }
            if body.is_some() {
                shared.push(("413", "Body too large"));
            }
            if body == Some((true, true)) {
                shared.push(("415", "Not JSON"));
            }
            for (status, description) in shared {
                operation
                    .responses
                    .responses
                    .entry(status.to_string())
                    .or_insert_with(|| problem(description));
            }
        }
    }
}

/// The whole document: the frame, every module's operations, then the shared declarations.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut openapi = ApiDoc::openapi();
    for part in [
        crate::quizzes::routes::Api::openapi(),
        crate::auth::routes::Api::openapi(),
        crate::privacy::Api::openapi(),
        crate::audit::routes::Api::openapi(),
        crate::courses::routes::Api::openapi(),
        crate::invitations::Api::openapi(),
        crate::assignments::routes::Api::openapi(),
        crate::attempts::routes::Api::openapi(),
        crate::live::routes::Api::openapi(),
        crate::grades::Api::openapi(),
        crate::analytics::routes::Api::openapi(),
        crate::lti::routes::Api::openapi(),
        crate::events::routes::Api::openapi(),
        crate::events::webhooks::routes::Api::openapi(),
        crate::ops::Api::openapi(),
    ] {
        openapi.merge(part);
    }
    for modifier in [
        &BearerAuth as &dyn Modify,
        &PublicOperations,
        &SharedProblems,
        &crate::idempotency::Documented,
    ] {
        modifier.modify(&mut openapi);
    }
    openapi
}

/// The document as committed in `openapi/openapi.json`.
pub fn to_json() -> String {
    let mut json = document()
        .to_pretty_json()
        .expect("the document serializes");
    json.push('\n');
    json
}
