//! The one table of error codes: every `code` a problem can carry, its HTTP status and what it
//! means. The OpenAPI document lists them (`Problem.code` is this enum, and the schema's
//! description is this table); nothing outside this file spells a code.

use actix_web::http::StatusCode;

macro_rules! error_codes {
    ($($variant:ident = $code:literal, $status:ident, $meaning:literal;)*) => {
        /// A stable, machine-readable error code (`Problem.code`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Code {
            $(
                #[doc = $meaning]
                $variant,
            )*
        }

        impl Code {
            /// Every code, in the table's order.
            pub const ALL: &[Code] = &[$(Code::$variant),*];

            pub const fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $code,)* }
            }

            /// The status a problem with this code answers with (a few call sites answer
            /// another, with [`super::ApiError::with_status`], where the table says so).
            pub const fn status(self) -> StatusCode {
                match self { $(Code::$variant => StatusCode::$status,)* }
            }

            /// One line on what the code means.
            pub const fn meaning(self) -> &'static str {
                match self { $(Code::$variant => $meaning,)* }
            }
        }
    };
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// In the OpenAPI document: a string, one of the codes, described by the whole table.
impl utoipa::PartialSchema for Code {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        let mut table = String::from(
            "A stable, machine-readable error code. Every code quizd answers with:\n\n\
             | code | status | meaning |\n|---|---|---|\n",
        );
        for code in Code::ALL {
            table.push_str(&format!(
                "| `{}` | {} | {} |\n",
                code.as_str(),
                code.status().as_u16(),
                code.meaning().replace('|', "\\|")
            ));
        }
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(Code::ALL.iter().map(|c| c.as_str())))
            .description(Some(table))
            .into()
    }
}

impl utoipa::ToSchema for Code {}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

error_codes! {
    // Answered by quizd itself for any route.
    NotFound = "not_found", NOT_FOUND, "No resource at this path.";
    MethodNotAllowed = "method_not_allowed", METHOD_NOT_ALLOWED, "This resource does not support this method.";
    PayloadTooLarge = "payload_too_large", PAYLOAD_TOO_LARGE, "The request body is larger than this endpoint accepts.";
    UnsupportedMediaType = "unsupported_media_type", UNSUPPORTED_MEDIA_TYPE, "The body's content type is not one this endpoint reads.";
    BadRequest = "bad_request", BAD_REQUEST, "The request was refused before reaching an endpoint.";
    InternalError = "internal_error", INTERNAL_SERVER_ERROR, "The server failed; the cause is logged, never sent.";
    ServiceUnavailable = "service_unavailable", SERVICE_UNAVAILABLE, "The database or a queue is unavailable now; retry after `Retry-After` seconds.";
    Conflict = "conflict", CONFLICT, "The request conflicts with an existing record.";
    ValueRefused = "value_refused", BAD_REQUEST, "A value is outside what quizd keeps (a database check refused it); nothing changed.";
    AccountErased = "account_erased", BAD_REQUEST, "The account was erased; nothing can be set on it.";
    // Answered by endpoints.
    CourseArchived = "course_archived", CONFLICT, "The course is archived and read-only; make it active again first.";
    EmailAlreadyVerified = "email_already_verified", CONFLICT, "Your email address is verified already.";
    EnrollmentNotFound = "enrollment_not_found", NOT_FOUND, "This person is not enrolled in this course.";
    InvalidCsvHeader = "invalid_csv_header", UNPROCESSABLE_ENTITY, "The CSV's first line must be the header `email,role`.";
    InvitationNotFound = "invitation_not_found", NOT_FOUND, "There is no such pending invitation in this course.";
    NoEmail = "no_email", CONFLICT, "Your account has no email address to verify.";
    TooManyEmails = "too_many_emails", TOO_MANY_REQUESTS, "Too many messages to this address; wait `Retry-After` seconds.";
    TooManyInvitations = "too_many_invitations", TOO_MANY_REQUESTS, "Too many invitation mails for you in the last 24 hours; wait `Retry-After` seconds.";
    TooManyRows = "too_many_rows", UNPROCESSABLE_ENTITY, "The CSV has more rows than one request takes.";
    VerificationExpired = "verification_expired", GONE, "This verification link has expired; ask for a new one.";
    VerificationNotFound = "verification_not_found", NOT_FOUND, "There is no such verification link.";
    VerificationUsed = "verification_used", CONFLICT, "This verification link was used already.";
    AttemptNotFinished = "attempt_not_finished", CONFLICT, "Only a finished attempt's grade can be set.";
    InvalidCursor = "invalid_cursor", UNPROCESSABLE_ENTITY, "`cursor` is not one this list gave.";
    NotOpen = "not_open", CONFLICT, "The assignment is not open yet.";
    Closed = "closed", CONFLICT, "The assignment is closed.";
    AttemptStartConflict = "attempt_start_conflict", CONFLICT, "Another start of an attempt for you ran at the same moment; retry.";
    AttemptsExhausted = "attempts_exhausted", CONFLICT, "You have used every attempt this assignment allows.";
    LtiInvalidLogin = "lti_invalid_login", BAD_REQUEST, "The LTI login (OIDC third-party initiation) lacks a parameter or names none quizd can take; `422` when well-formed but not acceptable.";
    Unauthorized = "unauthorized", UNAUTHORIZED, "No valid access token: sign in, or refresh the token.";
    AlreadyOwner = "already_owner", UNPROCESSABLE_ENTITY, "This person owns the quiz.";
    AnswerFinal = "answer_final", CONFLICT, "This question was answered already and, under immediate feedback, the first answer stands.";
    AssetNotFound = "asset_not_found", NOT_FOUND, "There is no such file.";
    AssignmentArchived = "assignment_archived", CONFLICT, "This assignment is archived; it no longer changes.";
    AssignmentNotFound = "assignment_not_found", NOT_FOUND, "There is no such assignment, or it is not in your courses.";
    AttemptFinished = "attempt_finished", CONFLICT, "This attempt is finished; answers are closed.";
    AttemptNotFound = "attempt_not_found", NOT_FOUND, "There is no such attempt, or it is not yours.";
    AuthorNotFound = "author_not_found", NOT_FOUND, "This person is not a co-author of the quiz.";
    CourseNotFound = "course_not_found", NOT_FOUND, "There is no such course, or you are not in it.";
    CourseOwnerStays = "course_owner_stays", CONFLICT, "The course's owner keeps teaching it; their role cannot be changed.";
    DeadlinePassed = "deadline_passed", CONFLICT, "The deadline has passed: the answer was not recorded and the attempt is finished.";
    DeepLinkClosed = "deep_link_closed", CONFLICT, "This Deep Linking request was answered already or has expired.";
    DeepLinkNotFound = "deep_link_not_found", NOT_FOUND, "There is no such Deep Linking request, or it is not yours.";
    DeepLinkSingleItem = "deep_link_single_item", UNPROCESSABLE_ENTITY, "The platform accepts one item in this Deep Linking request.";
    DeepLinkTooManyItems = "deep_link_too_many_items", UNPROCESSABLE_ENTITY, "Place at most 50 quizzes at once.";
    DeliveryDone = "delivery_done", CONFLICT, "This delivery (a grade to an LMS, statements to an LRS, an event to a webhook) has been made already.";
    DeliveryNotFound = "delivery_not_found", NOT_FOUND, "There is no such delivery.";
    EmailTaken = "email_taken", CONFLICT, "An account with this email exists; sign in instead.";
    Forbidden = "forbidden", FORBIDDEN, "The action needs a role you do not hold here.";
    InvalidAnswer = "invalid_answer", BAD_REQUEST, "The answer does not fit the question (its kind, its options, its size).";
    InvalidBody = "invalid_body", BAD_REQUEST, "The body is not well-formed JSON of the expected shape.";
    InvalidContent = "invalid_content", UNPROCESSABLE_ENTITY, "The quiz content is refused; the detail names each problem.";
    InvalidCredentials = "invalid_credentials", UNAUTHORIZED, "The email or password is wrong.";
    InvalidEmail = "invalid_email", UNPROCESSABLE_ENTITY, "`email` is not an email address.";
    InvalidEnrollment = "invalid_enrollment", UNPROCESSABLE_ENTITY, "Give exactly one of `email` and `user_id`.";
    InvalidField = "invalid_field", BAD_REQUEST, "A field's value is malformed (NUL or control characters, length); the detail names it.";
    InvalidImport = "invalid_import", UNPROCESSABLE_ENTITY, "The questions document cannot be read as its format (not UTF-8, not well-formed, a DTD, GIFT or Aiken syntax, more than 2 000 questions); the detail names the line.";
    InvalidUploadForm = "invalid_upload_form", BAD_REQUEST, "A multipart/form-data upload holds exactly one `file` part and at most a `format` field; the detail says what is wrong.";
    ImportFormatMismatch = "import_format_mismatch", UNPROCESSABLE_ENTITY, "The `format` asked for does not fit the body's content type (or a text body names none).";
    InvalidLimit = "invalid_limit", BAD_REQUEST, "`limit` is outside the endpoint's range.";
    InvalidLocale = "invalid_locale", UNPROCESSABLE_ENTITY, "`locale` must be a BCP 47 language tag such as bn, id or pt-BR.";
    InvalidOverride = "invalid_override", UNPROCESSABLE_ENTITY, "An override or accommodation is refused (multiplier, minutes, dates); the detail names the field.";
    InvalidPath = "invalid_path", BAD_REQUEST, "A path parameter is malformed (e.g. not a UUID).";
    InvalidPolicy = "invalid_policy", UNPROCESSABLE_ENTITY, "An assignment policy is refused (dates, time limit, attempts, feedback); the detail names the field.";
    InvalidQuery = "invalid_query", BAD_REQUEST, "The query string is malformed or a parameter is out of range.";
    InvalidRegistration = "invalid_registration", UNPROCESSABLE_ENTITY, "An LTI platform registration is refused; the detail names the field.";
    InvalidXliff = "invalid_xliff", BAD_REQUEST, "The XLIFF document cannot be read (not UTF-8, not XML, too large, a DTD, wrong version).";
    InvalidXliffUnit = "invalid_xliff_unit", UNPROCESSABLE_ENTITY, "XLIFF units are refused (unknown id, stale source, bad state); the detail names them.";
    InvalidPo = "invalid_po", BAD_REQUEST, "The PO file cannot be read (not UTF-8, not PO syntax, plural forms, another Language, too many entries); the detail names the line.";
    InvalidPoEntry = "invalid_po_entry", UNPROCESSABLE_ENTITY, "PO entries are refused (unknown msgctxt, msgid not the current source, no msgctxt); the detail names each entry and its line.";
    KeyForbidden = "key_forbidden", FORBIDDEN, "Reading this quiz's key (its answers) is for its authors.";
    LaunchBrowserMismatch = "launch_browser_mismatch", UNAUTHORIZED, "The launch code is presented by another browser than the one the launch redirected.";
    LocaleNotFound = "locale_not_found", NOT_FOUND, "The quiz version has no such locale.";
    LtiAmbiguousRegistration = "lti_ambiguous_registration", UNPROCESSABLE_ENTITY, "This issuer has several registrations: the login must name its `client_id`.";
    LtiBadAlgorithm = "lti_bad_algorithm", UNAUTHORIZED, "The id_token is not signed with RS256.";
    LtiBadSignature = "lti_bad_signature", UNAUTHORIZED, "The id_token's signature does not verify with the platform's key.";
    LtiClaimInvalid = "lti_claim_invalid", BAD_REQUEST, "A claim of the id_token is invalid; the detail names it.";
    LtiClaimMissing = "lti_claim_missing", BAD_REQUEST, "The id_token lacks a required claim; the detail names it.";
    LtiCodeInvalid = "lti_code_invalid", UNAUTHORIZED, "The launch code is unknown, used or expired: launch again from the LMS.";
    LtiDeepLinkingUnsupported = "lti_deep_linking_unsupported", BAD_REQUEST, "The platform does not accept ltiResourceLink items in this Deep Linking request.";
    LtiForbiddenRole = "lti_forbidden_role", FORBIDDEN, "Only the course's instructors can place quizzes (Deep Linking).";
    LtiInvalidRequest = "lti_invalid_request", BAD_REQUEST, "The LTI request's parameters cannot be read.";
    LtiMalformedToken = "lti_malformed_token", BAD_REQUEST, "The id_token is not a well-formed JWT.";
    LtiNonceMismatch = "lti_nonce_mismatch", UNAUTHORIZED, "The id_token's nonce is not the one sent with this login.";
    LtiNonceReplayed = "lti_nonce_replayed", UNAUTHORIZED, "The id_token's nonce has been used already: a launch cannot be replayed.";
    LtiNrpsUnavailable = "lti_nrps_unavailable", CONFLICT, "This course's LMS offers no roster (Names and Role Provisioning Services).";
    LtiPlatformError = "lti_platform_error", UNAUTHORIZED, "The platform answered the login with an error.";
    LtiPlatformUnreachable = "lti_platform_unreachable", BAD_GATEWAY, "The platform's public keys could not be fetched; try again later.";
    LtiQuizMissing = "lti_quiz_missing", BAD_REQUEST, "The launch names no quiz (custom parameter `quiz` or a Deep Linking placement).";
    LtiQuizUnknown = "lti_quiz_unknown", BAD_REQUEST, "The launch names a quiz quizd does not have.";
    LtiServiceUrlRefused = "lti_service_url_refused", BAD_REQUEST, "An LTI service URL is not https on the platform's own host.";
    LtiStateExpired = "lti_state_expired", UNAUTHORIZED, "The login took longer than its ten minutes: start the launch again.";
    LtiStateInvalid = "lti_state_invalid", UNAUTHORIZED, "The login state is unknown or used already (a launch posted twice): start the launch again.";
    LtiStateMismatch = "lti_state_mismatch", UNAUTHORIZED, "This launch was not started in this browser (its state cookie is missing or different).";
    LtiTargetLinkMismatch = "lti_target_link_mismatch", BAD_REQUEST, "The id_token's target_link_uri is not the one the login was started with.";
    LtiTokenExpired = "lti_token_expired", UNAUTHORIZED, "The id_token has expired.";
    LtiTokenNotYetValid = "lti_token_not_yet_valid", UNAUTHORIZED, "The id_token was issued in the future; check the platform's clock.";
    LtiUnknownDeployment = "lti_unknown_deployment", UNAUTHORIZED, "The id_token's deployment id is not registered with quizd for this platform.";
    LtiUnknownKey = "lti_unknown_key", UNAUTHORIZED, "The id_token's header names no key (kid).";
    LtiUnknownRegistration = "lti_unknown_registration", UNPROCESSABLE_ENTITY, "No LTI registration matches this issuer and client id.";
    LtiWrongAudience = "lti_wrong_audience", UNAUTHORIZED, "The id_token is not meant for quizd: its audience lacks quizd's client id.";
    LtiWrongIssuer = "lti_wrong_issuer", UNAUTHORIZED, "The id_token was issued by another platform than the one this login was started with.";
    LtiWrongMessageType = "lti_wrong_message_type", BAD_REQUEST, "quizd accepts LtiResourceLinkRequest and LtiDeepLinkingRequest only.";
    LtiWrongVersion = "lti_wrong_version", BAD_REQUEST, "quizd speaks LTI 1.3.0 only.";
    MediaNotFound = "media_not_found", NOT_FOUND, "No image with this hash is in what you may see here (the quiz's page, or this attempt's questions as you may see them now).";
    MetricsTokenRequired = "metrics_token_required", UNAUTHORIZED, "Reading the metrics needs `Authorization: Bearer <the metrics token>`.";
    NotALearner = "not_a_learner", UNPROCESSABLE_ENTITY, "Overrides are for the course's learners; this person is not one.";
    NotEnrolled = "not_enrolled", FORBIDDEN, "You are no longer enrolled in this attempt's course: it takes no answer, clearing or finish from you, and stays as it was.";
    NotCurrentQuestion = "not_current_question", CONFLICT, "Under sequential navigation only the current question takes an answer.";
    NotQuizAuthor = "not_quiz_author", FORBIDDEN, "Only the quiz's authors and admins can do this.";
    NotQuizOwner = "not_quiz_owner", FORBIDDEN, "Only the quiz's owner and admins choose its co-authors.";
    OverrideNotFound = "override_not_found", NOT_FOUND, "This learner has no override here.";
    OwnerStays = "owner_stays", CONFLICT, "The quiz's owner cannot be removed from its authors.";
    PracticeAssignment = "practice_assignment", CONFLICT, "A practice assignment takes its policy from its quiz's content.";
    PracticeNotOffered = "practice_not_offered", NOT_FOUND, "This quiz offers no open practice; take it through an assignment.";
    PracticeDuringExam = "practice_during_exam", CONFLICT, "You are sitting an exam of this quiz (an attempt in progress, or an assignment open to you with an attempt left): its practice, and your practice attempts of it, are closed to you until the exam is over for you.";
    QuestionNotFound = "question_not_found", NOT_FOUND, "This attempt has no question with this id.";
    QuizNotFound = "quiz_not_found", NOT_FOUND, "There is no quiz with this slug.";
    RefreshTokenReused = "refresh_token_reused", UNAUTHORIZED, "This refresh token was already used; every session from that sign-in is now signed out.";
    RegistrationExists = "registration_exists", CONFLICT, "A platform with this issuer and client id is registered already.";
    RegistrationNotFound = "registration_not_found", NOT_FOUND, "There is no such LTI registration.";
    SlugMismatch = "slug_mismatch", UNPROCESSABLE_ENTITY, "The content's slug differs from the path's.";
    SlugTaken = "slug_taken", CONFLICT, "The slug belongs to another quiz.";
    TooManyAttempts = "too_many_attempts", TOO_MANY_REQUESTS, "Too many failed sign-ins for this account or address; wait `Retry-After` seconds.";
    TooManySignups = "too_many_signups", TOO_MANY_REQUESTS, "Too many sign-ups from this address; wait `Retry-After` seconds.";
    // Live mode (`live`).
    LiveSessionNotFound = "live_session_not_found", NOT_FOUND, "No open live session has this code (wrong, expired or ended), or the session is not yours to see.";
    LiveQuestionClosed = "live_question_closed", CONFLICT, "The question is not the one the live session shows now, or its timer has run out: the answer was not recorded.";
    LiveQuestionOpen = "live_question_open", CONFLICT, "A question is open; close it (or let its timer run out) first.";
    LiveNoMoreQuestions = "live_no_more_questions", CONFLICT, "Every question of the quiz has been shown; end the session.";
    LiveSessionEnded = "live_session_ended", CONFLICT, "The live session has ended.";
    LiveAttemptConflict = "live_attempt_conflict", CONFLICT, "An unfinished attempt at this assignment was started the other way (in a live session, or not); finish it first.";
    LiveOnly = "live_only", CONFLICT, "The attempt belongs to a live session: it takes answers only through the session.";
    LiveSessionRunning = "live_session_running", CONFLICT, "The attempt belongs to a live session that is still running: only the session's end finishes it, and its answers stand (no clearing).";
    LiveNotSupported = "live_not_supported", CONFLICT, "Live mode runs quizzes without question banks.";
    InvalidTimer = "invalid_timer", UNPROCESSABLE_ENTITY, "`seconds` must be 5 to 600.";
    TooManyJoins = "too_many_joins", TOO_MANY_REQUESTS, "Too many live-session joins from this address or account; wait `Retry-After` seconds.";
    TooManyStreams = "too_many_streams", TOO_MANY_REQUESTS, "Too many event streams open for you (or for this session); close one first.";
    UnknownOption = "unknown_option", UNPROCESSABLE_ENTITY, "An option id is not one of this question's options.";
    UnknownQuestion = "unknown_question", UNPROCESSABLE_ENTITY, "The quiz version has no question with this key.";
    UnknownQuiz = "unknown_quiz", UNPROCESSABLE_ENTITY, "There is no such quiz or quiz version.";
    UnknownUser = "unknown_user", UNPROCESSABLE_ENTITY, "There is no person with this email or id.";
    UserNotFound = "user_not_found", NOT_FOUND, "This account no longer exists.";
    VersionNotFound = "version_not_found", NOT_FOUND, "There is no such quiz version.";
    IdempotencyKeyInFlight = "idempotency_key_in_flight", CONFLICT, "A request with this Idempotency-Key is still running; retry after `Retry-After` seconds.";
    IdempotencyKeyReused = "idempotency_key_reused", UNPROCESSABLE_ENTITY, "This Idempotency-Key was used with another request (method, path or body).";
    InvalidIdempotencyKey = "invalid_idempotency_key", BAD_REQUEST, "`Idempotency-Key` must be 1 to 255 visible ASCII characters, sent once.";
    AttemptRegraded = "attempt_regraded", CONFLICT, "A regrade moved the attempt to a corrected version of its quiz while the request was on its way; read the attempt again.";
    RegradeConflict = "regrade_conflict", CONFLICT, "Another regrade of this assignment ran at the same moment; read it and retry.";
    RegradeSameVersion = "regrade_same_version", UNPROCESSABLE_ENTITY, "The assignment already uses this version; there is nothing to regrade to.";
    InvalidWebhook = "invalid_webhook", UNPROCESSABLE_ENTITY, "A webhook subscription is refused (its URL, topics or description); the detail names the field.";
    WebhookNotFound = "webhook_not_found", NOT_FOUND, "There is no such webhook subscription.";
    WeakPassword = "weak_password", UNPROCESSABLE_ENTITY, "The password is too short or too long.";
}

/// Compares with the code as clients see it (tests read better with the string).
impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_unique_snake_case_and_explained() {
        let mut seen = std::collections::HashSet::new();
        for code in Code::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "{s} is in the table twice");
            assert!(
                s.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{s} is not snake_case"
            );
            assert!(
                code.meaning().ends_with('.'),
                "{s}: one sentence of meaning"
            );
            assert!(code.status().is_client_error() || code.status().is_server_error());
        }
    }
}
