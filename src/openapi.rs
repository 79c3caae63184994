//! The OpenAPI 3.1 document, generated from the code. `quizd openapi > openapi/openapi.json`
//! regenerates the committed copy; a test fails when it is stale.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

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
        crate::quizzes::authoring::create_quiz,
        crate::quizzes::authoring::update_quiz,
        crate::quizzes::authoring::get_version,
        crate::quizzes::authoring::list_authors,
        crate::quizzes::authoring::add_author,
        crate::quizzes::authoring::remove_author,
        crate::quizzes::translations::translation_status,
        crate::quizzes::translations::export_xliff,
        crate::quizzes::translations::import_xliff,
        crate::auth::routes::register,
        crate::auth::routes::login,
        crate::auth::routes::refresh,
        crate::auth::routes::logout,
        crate::auth::routes::me,
        crate::auth::routes::update_me,
        crate::auth::routes::set_role,
        crate::privacy::export,
        crate::privacy::erase,
        crate::audit::routes::list_audit,
        crate::courses::routes::create_course,
        crate::courses::routes::list_courses,
        crate::courses::routes::get_course,
        crate::courses::routes::enroll,
        crate::courses::routes::roster,
        crate::assignments::routes::create_assignment,
        crate::assignments::routes::list_assignments,
        crate::assignments::routes::get_assignment,
        crate::assignments::routes::my_assignments,
        crate::assignments::routes::update_assignment,
        crate::assignments::routes::close_assignment,
        crate::assignments::routes::delete_assignment,
        crate::assignments::overrides::put_override,
        crate::assignments::overrides::bulk_overrides,
        crate::assignments::overrides::list_overrides,
        crate::assignments::overrides::delete_override,
        crate::assignments::overrides::put_accommodation,
        crate::assignments::overrides::list_accommodations,
        crate::assignments::overrides::delete_accommodation,
        crate::attempts::routes::start_assignment_attempt,
        crate::attempts::routes::start_practice_attempt,
        crate::attempts::routes::get_attempt,
        crate::attempts::routes::answer,
        crate::attempts::routes::finish,
        crate::attempts::routes::my_attempts,
        crate::attempts::routes::assignment_attempts,
        crate::analytics::routes::assignment_analytics,
        crate::analytics::routes::quiz_analytics,
        crate::analytics::export::responses_csv,
        crate::analytics::export::results_csv,
        crate::lti::routes::jwks,
        crate::lti::routes::jwks_v1,
        crate::lti::launch::login_get,
        crate::lti::launch::login_post,
        crate::lti::launch::launch,
        crate::lti::launch::exchange,
        crate::lti::deep_linking::respond,
        crate::lti::nrps::roster,
        crate::lti::routes::create_registration,
        crate::lti::routes::list_registrations,
        crate::lti::routes::get_registration,
        crate::lti::routes::update_registration,
        crate::lti::routes::delete_registration,
        crate::lti::routes::list_keys,
        crate::lti::routes::rotate_key,
        crate::lti::routes::list_deliveries,
        crate::lti::routes::retry_delivery,
        crate::ops::healthz,
        crate::ops::readyz,
        crate::ops::metrics,
    ),
    components(schemas(crate::error::Problem)),
    modifiers(&BearerAuth),
    tags(
        (name = "quizzes", description = "The quiz catalogue, in the reader's language"),
        (name = "authoring", description = "Creating and changing quizzes; reading them with their key"),
        (name = "auth", description = "Accounts, sign-in, tokens, roles"),
        (name = "courses", description = "Courses, enrollments and rosters"),
        (name = "assignments", description = "Quizzes placed in courses with a policy"),
        (name = "analytics", description = "Item analysis per quiz version and per locale; CSV exports"),
        (name = "attempts", description = "Taking a quiz: graded on the server, feedback as the policy says"),
        (name = "lti", description = "LMS integration (LTI 1.3): launch, Deep Linking, grade passback, rosters; platform registrations"),
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

pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.merge(crate::courses::routes::CourseManagementApi::openapi());
    doc.merge(crate::invitations::InvitationsApi::openapi());
    doc
}

/// The document as committed in `openapi/openapi.json`.
pub fn to_json() -> String {
    let mut json = document()
        .to_pretty_json()
        .expect("the document serializes");
    json.push('\n');
    json
}
