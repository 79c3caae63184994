//! What a valid launch makes exist in quizd: the person, the course of the LMS context and
//! the enrollment in it, then, for a resource link, its assignment (placed on its first
//! launch), or, for Deep Linking, the instructor's pending request; and the one-time code
//! that takes the browser there. One transaction, the caller's.

use chrono::{DateTime, Duration, Utc};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::claims::{self, DeepLinkingSettings, Launch, Message, ResourceLink};
use super::cookies::{hash, random_token};
use super::course_role;
use super::exchange::{CODE_TTL_SECS, DestinationKind};
use super::launch::nonce_replayed;
use super::store::{self, AgsEndpoints, ContextKey, RegistrationRow, ResourceLinkKey};
use crate::auth::Role;
use crate::courses::models::CourseRole;
use crate::error::{ApiError, Code};
use crate::policy::Policy;

/// How long an instructor has to answer a Deep Linking request.
pub const DEEP_LINK_TTL_MINUTES: i64 = 60;

/// Makes what a valid launch stands for exist, and returns the one-time code for the browser.
pub(super) async fn provision(
    tx: &mut Transaction<'_, Postgres>,
    reg: &RegistrationRow,
    launch: &Launch,
    now: DateTime<Utc>,
    browser_hash: &[u8],
) -> Result<String, ApiError> {
    let expires_at = DateTime::from_timestamp(launch.expires_at, 0)
        .unwrap_or(now)
        .max(now + Duration::minutes(5));
    if !store::record_nonce(&mut **tx, reg.id, &launch.nonce, expires_at).await? {
        return Err(nonce_replayed());
    }

    let role = course_role(&launch.roles).unwrap_or(CourseRole::Learner);
    let locale = launch
        .locale
        .as_deref()
        .and_then(|l| crate::validate::Locale::try_from(l.to_string()).ok())
        .map(|l| l.as_str().to_string());
    let user_id = store::upsert_launch_user(
        &mut **tx,
        store::LaunchUser {
            display_name: launch.name.as_deref().unwrap_or("LMS user"),
            // Teaching is a role in the launch's course (the enrollment below), never a site
            // role: a TeachingAssistant in one course must not become staff of every other. A
            // person the launch creates is a site learner; an existing person's site role is
            // left as it is.
            role: Role::Learner.as_str(),
            locale: locale.as_deref(),
            issuer: &reg.issuer,
            subject: &launch.subject,
            named: launch.name.is_some(),
        },
    )
    .await?;

    let (course_id, destination, assignment_id, deep_link_id) = match &launch.message {
        Message::ResourceLink { context, link } => {
            let course = enroll_in(tx, reg, launch, context, user_id, role).await?;
            let assignment = link_assignment(tx, reg, launch, link, course, user_id, role).await?;
            let kind = match role {
                CourseRole::Instructor => DestinationKind::Analytics,
                CourseRole::Learner => DestinationKind::Attempt,
            };
            (Some(course), kind, Some(assignment), None)
        }
        Message::DeepLinking { context, settings } => {
            let course = match context {
                Some(context) => Some(enroll_in(tx, reg, launch, context, user_id, role).await?),
                None => None,
            };
            if role != CourseRole::Instructor {
                return Err(ApiError::new(
                    Code::LtiForbiddenRole,
                    "Only the course's instructors can place quizzes (Deep Linking).",
                ));
            }
            let id = open_deep_link(tx, reg, launch, settings, user_id, now).await?;
            (course, DestinationKind::DeepLink, None, Some(id))
        }
    };

    let code = random_token();
    store::insert_launch_code(
        &mut **tx,
        store::NewLaunchCode {
            code_hash: &hash(&code),
            user_id,
            destination: destination.as_str(),
            course_id,
            assignment_id,
            deep_link_id,
            created_at: now,
            expires_at: now + Duration::seconds(CODE_TTL_SECS),
            browser_hash,
        },
    )
    .await?;
    Ok(code)
}

/// The instructor's Deep Linking request, kept until they answer it (for
/// [`DEEP_LINK_TTL_MINUTES`]); its id.
async fn open_deep_link(
    tx: &mut Transaction<'_, Postgres>,
    reg: &RegistrationRow,
    launch: &Launch,
    settings: &DeepLinkingSettings,
    user_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Uuid, ApiError> {
    let id = Uuid::now_v7();
    store::insert_deep_link(
        &mut **tx,
        store::NewDeepLink {
            id,
            registration_id: reg.id,
            deployment_id: &launch.deployment_id,
            user_id,
            return_url: &settings.return_url,
            data: settings.data.as_deref(),
            accept_multiple: settings.accept_multiple,
            accept_lineitem: settings.accept_lineitem,
            created_at: now,
            expires_at: now + Duration::minutes(DEEP_LINK_TTL_MINUTES),
        },
    )
    .await?;
    Ok(id)
}

/// The course of the LMS context (made on its first launch), with the person enrolled in it in
/// their role.
async fn enroll_in(
    tx: &mut Transaction<'_, Postgres>,
    reg: &RegistrationRow,
    launch: &Launch,
    context: &claims::Context,
    user_id: Uuid,
    role: CourseRole,
) -> Result<Uuid, ApiError> {
    let course = context_course(tx, reg, launch, context).await?;
    store::enroll(&mut **tx, course, user_id, role.as_str()).await?;
    Ok(course)
}

/// The course of the LMS context, made on its first launch.
async fn context_course(
    tx: &mut Transaction<'_, Postgres>,
    reg: &RegistrationRow,
    launch: &Launch,
    context: &claims::Context,
) -> Result<Uuid, ApiError> {
    let key = ContextKey {
        registration_id: reg.id,
        deployment_id: &launch.deployment_id,
        context_id: &context.id,
    };
    let memberships_url = launch.memberships_url.as_deref();
    if let Some(course) = store::touch_context(&mut **tx, key, memberships_url).await? {
        // An archived course is read-only: a launch would enroll people and place assignments.
        if store::course_archived(&mut **tx, course).await? {
            return Err(crate::courses::course_archived());
        }
        return Ok(course);
    }
    let title = context
        .title
        .clone()
        .or_else(|| context.label.clone())
        .unwrap_or_else(|| "LMS course".to_string());
    let course = Uuid::now_v7();
    store::insert_course(&mut **tx, course, &title, context.label.as_deref()).await?;
    // A simultaneous first launch of the same context waits here and then finds the other's.
    if let Some(course) = store::link_context(&mut **tx, key, course, memberships_url).await? {
        return Ok(course);
    }
    store::delete_course(&mut **tx, course).await?;
    Ok(store::context_course(&mut **tx, key).await?)
}

/// The assignment of the resource link, placed on its first launch from the quiz it names;
/// its grade service endpoints are kept as the latest launch gives them.
async fn link_assignment(
    tx: &mut Transaction<'_, Postgres>,
    reg: &RegistrationRow,
    launch: &Launch,
    link: &ResourceLink,
    course: Uuid,
    user: Uuid,
    role: CourseRole,
) -> Result<Uuid, ApiError> {
    let ags = launch.ags.clone().unwrap_or_default();
    let key = ResourceLinkKey {
        registration_id: reg.id,
        deployment_id: &launch.deployment_id,
        resource_link_id: &link.id,
    };
    let endpoints = AgsEndpoints {
        lineitem: ags.lineitem.as_deref(),
        lineitems: ags.lineitems.as_deref(),
        scopes: &ags.scopes,
    };
    let offered = launch.ags.is_some();
    if let Some(assignment) = store::touch_resource_link(&mut **tx, key, offered, endpoints).await?
    {
        return Ok(assignment);
    }
    let slug = claims::quiz_slug(launch)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ApiError::new(
                Code::LtiQuizMissing,
                "The launch names no quiz: place it with Deep Linking, or set the custom parameter \
             `quiz=<slug>` (or `?quiz=<slug>` on the target link URI).",
            )
        })?;
    let unknown = || {
        ApiError::new(
            Code::LtiQuizUnknown,
            format!("The launch names the quiz `{slug}`, which quizd does not have."),
        )
    };
    // Placing a quiz makes the course's staff readers of its key: a private quiz is placed
    // only by a launch of one of its authors (the instructor who placed the link opens it
    // first); for anyone else it does not exist. Custom parameters are the LMS's to set, so a
    // slug in them proves nothing.
    let quiz = crate::quizzes::store::access(&mut **tx, &slug, user)
        .await?
        .ok_or_else(unknown)?;
    if quiz.visibility != crate::content::Visibility::Public && !quiz.is_author {
        return Err(unknown());
    }
    let (quiz_id, version_id) = crate::assignments::store::resolve_version(&mut **tx, &slug, None)
        .await?
        .ok_or_else(unknown)?;
    let quiz_title = store::quiz_source_title(&mut **tx, version_id).await?;
    let title = link
        .title
        .clone()
        .or(quiz_title)
        .unwrap_or_else(|| slug.clone());
    let title: String = title.chars().take(200).collect();
    let assignment = crate::assignments::store::insert(
        &mut **tx,
        crate::assignments::store::NewAssignment {
            course_id: Some(course),
            quiz_id,
            quiz_version_id: version_id,
            title: &title,
            policy: &Policy::default(),
            created_by: (role == CourseRole::Instructor).then_some(user),
        },
    )
    .await?;
    if store::link_resource(&mut **tx, key, assignment, endpoints).await? {
        return Ok(assignment);
    }
    // A simultaneous first launch placed it: use that one.
    store::delete_assignment(&mut **tx, assignment).await?;
    Ok(
        store::touch_resource_link(&mut **tx, key, offered, endpoints)
            .await?
            .ok_or(sqlx::Error::RowNotFound)?,
    )
}
