//! Names and Role Provisioning Services 2.0: the course's roster as the platform knows it,
//! on demand. Everyone on it becomes a person and an enrollment in quizd (without launching),
//! so analytics can tell who has not started.

use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgPool;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::registrations::RegistrationRow;
use super::services::{access_token, excerpt};
use super::store;
use super::{PlatformClient, course_role, read_body, scope};
use crate::auth::CurrentUser;
use crate::courses::models::CourseRole;
use crate::error::{ApiError, Code, Problem};
use crate::state::AppState;

pub const MEMBERSHIP_MEDIA_TYPE: &str = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json";
/// Pages of a roster read at most (a platform pages with `Link: <…>; rel="next"`).
const MAX_PAGES: usize = 100;

/// One member of the platform's roster.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub user_id: String,
    pub name: Option<String>,
    pub roles: Vec<String>,
    /// `Active`, `Inactive` or `Deleted`.
    pub status: String,
}

/// The members of a membership container page.
pub fn parse_members(page: &Value) -> Vec<Member> {
    let Some(members) = page.get("members").and_then(Value::as_array) else {
        return Vec::new();
    };
    members
        .iter()
        .filter_map(|m| {
            let user_id = m.get("user_id").and_then(Value::as_str)?;
            if user_id.is_empty()
                || user_id.len() > super::claims::MAX_ID_LEN
                || user_id.chars().any(char::is_control)
            {
                return None;
            }
            let text = |k: &str| {
                m.get(k)
                    .and_then(Value::as_str)
                    .map(|s| {
                        s.chars()
                            .filter(|c| !c.is_control())
                            .take(200)
                            .collect::<String>()
                    })
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
            };
            let name = text("name").or_else(|| match (text("given_name"), text("family_name")) {
                (Some(g), Some(f)) => Some(format!("{g} {f}")),
                (g, f) => g.or(f),
            });
            Some(Member {
                user_id: user_id.to_string(),
                name,
                roles: m
                    .get("roles")
                    .and_then(Value::as_array)
                    .map(|r| {
                        r.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default(),
                status: m
                    .get("status")
                    .and_then(Value::as_str)
                    .unwrap_or("Active")
                    .to_string(),
            })
        })
        .collect()
}

/// The `rel="next"` URL of a `Link` header, if any.
pub fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        let is_next = params.split(';').any(|p| {
            let p = p.trim().replace(' ', "");
            p == "rel=\"next\"" || p == "rel=next"
        });
        is_next.then(|| {
            url.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string()
        })
    })
}

/// Reads the whole roster from the platform.
pub async fn fetch_roster(
    pool: &PgPool,
    platforms: &PlatformClient,
    reg: &RegistrationRow,
    memberships_url: &str,
) -> anyhow::Result<Vec<Member>> {
    let mut members = Vec::new();
    let mut next = Some(memberships_url.to_string());
    let mut pages = 0;
    while let Some(url) = next.take() {
        pages += 1;
        anyhow::ensure!(
            pages <= MAX_PAGES,
            "the roster has more than {MAX_PAGES} pages"
        );
        // The first URL came from a launch, the next ones from the platform's answers.
        reg.check_service_url(&url)
            .map_err(|why| anyhow::anyhow!("the roster URL {why}"))?;
        let token = access_token(pool, platforms, reg, scope::NRPS).await?;
        let res = platforms
            .http()
            .get(&url)
            .bearer_auth(token)
            .header("accept", MEMBERSHIP_MEDIA_TYPE)
            .send()
            .await?;
        let status = res.status();
        next = res
            .headers()
            .get("link")
            .and_then(|v| v.to_str().ok())
            .and_then(next_link);
        let body = read_body(res).await?;
        if !status.is_success() {
            anyhow::bail!(
                "the platform answered {status} to the roster request: {}",
                excerpt(&String::from_utf8_lossy(&body))
            );
        }
        let page: Value = serde_json::from_slice(&body)?;
        members.extend(parse_members(&page));
    }
    Ok(members)
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct RosterQuery {
    /// Report, for this assignment of the course, who has started and finished it.
    pub assignment: Option<Uuid>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RosterMember {
    pub user_id: Uuid,
    /// The platform's id for the person (`sub`).
    pub lti_user_id: String,
    pub display_name: String,
    /// The course role the platform's roles map to; absent for roles that are neither.
    pub role: Option<CourseRole>,
    /// The platform's status: `Active`, `Inactive` or `Deleted`.
    pub status: String,
    /// With `assignment`: how many attempts the person started and finished.
    pub attempts_started: Option<i64>,
    pub attempts_finished: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LtiRoster {
    pub course_id: Uuid,
    pub members: Vec<RosterMember>,
    /// With `assignment`: the active learners who have not started it.
    pub not_started: Option<Vec<Uuid>>,
}

/// The course's roster, fetched now from the LMS (Names and Role Provisioning Services).
/// Active members are enrolled (learners and instructors, by their LMS roles). The course's
/// instructors and admins; the course must have come from an LMS launch that offered NRPS.
#[utoipa::path(get, path = "/v1/lti/courses/{id}/roster", tag = "lti", operation_id = "lti_roster", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The course's id"), RosterQuery),
    responses(
        (status = 200, description = "The roster", body = LtiRoster),
        (status = 400, description = "Malformed id or query", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "You do not teach this course", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such course or assignment, or you are not in it", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The course's LMS offers no roster (`lti_nrps_unavailable`), or the course is archived (`course_archived`)", body = Problem, content_type = "application/problem+json"),
        (status = 502, description = "The LMS could not be reached or refused", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn roster(
    state: web::Data<AppState>,
    user: CurrentUser,
    id: web::Path<Uuid>,
    query: web::Query<RosterQuery>,
) -> Result<HttpResponse, ApiError> {
    let course = crate::courses::taught_active_course(&state.pool, *id, &user).await?;
    if let Some(a) = query.assignment {
        let in_course = crate::assignments::store::by_id(&state.pool, a)
            .await?
            .is_some_and(|row| row.course_id == Some(course.id));
        if !in_course {
            return Err(crate::assignments::assignment_not_found());
        }
    }
    let link = store::course_context(&state.pool, course.id).await?;
    let unavailable = || {
        ApiError::new(
            Code::LtiNrpsUnavailable,
            "This course's LMS offers no roster (Names and Role Provisioning Services).",
        )
    };
    let (registration_id, Some(url)) = link.ok_or_else(unavailable)? else {
        return Err(unavailable());
    };
    let reg = store::registration(&state.pool, registration_id)
        .await?
        .ok_or_else(unavailable)?;
    let members = fetch_roster(&state.pool, &state.platforms, &reg, &url).await.map_err(|e| {
        tracing::warn!(registration = %reg.id, error = %format!("{e:#}"), "NRPS roster fetch failed");
        ApiError::new(Code::LtiPlatformUnreachable,
            "The LMS did not give the roster; try again later.",
        )
    })?;

    let mut tx = state.pool.begin().await?;
    let mut out = Vec::with_capacity(members.len());
    for m in &members {
        let role = course_role(&m.roles);
        let (user_id, display_name) = store::upsert_roster_user(
            &mut *tx,
            m.name.as_deref().unwrap_or("LMS user"),
            &reg.issuer,
            &m.user_id,
            m.name.is_some(),
        )
        .await?;
        // Enrollments follow the platform's active members and their roles. (The global
        // instructor role, which managing a course also needs, comes only with a launch.)
        if m.status == "Active" {
            let enrolled_as = match role {
                Some(CourseRole::Instructor) => CourseRole::Instructor,
                _ => CourseRole::Learner,
            };
            store::enroll(&mut *tx, course.id, user_id, enrolled_as.as_str()).await?;
        }
        let counts: Option<(i64, i64)> = match query.assignment {
            Some(a) => Some(store::attempt_counts(&mut *tx, a, user_id).await?),
            None => None,
        };
        out.push(RosterMember {
            user_id,
            lti_user_id: m.user_id.clone(),
            display_name,
            role,
            status: m.status.clone(),
            attempts_started: counts.map(|c| c.0),
            attempts_finished: counts.map(|c| c.1),
        });
    }
    tx.commit().await?;
    let not_started = query.assignment.map(|_| {
        out.iter()
            .filter(|m| {
                m.status == "Active"
                    && m.role != Some(CourseRole::Instructor)
                    && m.attempts_started == Some(0)
            })
            .map(|m| m.user_id)
            .collect()
    });
    Ok(HttpResponse::Ok().json(LtiRoster {
        course_id: course.id,
        members: out,
        not_started,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn members_are_read_with_their_defaults() {
        let page = json!({
            "id": "https://lms.example/nrps",
            "members": [
                {"user_id": "u1", "roles": ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"], "name": "Ann"},
                {"user_id": "u2", "roles": [], "given_name": "Bo", "family_name": "Li", "status": "Inactive"},
                {"roles": ["x"]},
                {"user_id": ""}
            ]
        });
        let m = parse_members(&page);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].status, "Active");
        assert_eq!(m[0].name.as_deref(), Some("Ann"));
        assert_eq!(m[1].name.as_deref(), Some("Bo Li"));
        assert_eq!(m[1].status, "Inactive");
    }

    #[test]
    fn the_next_page_comes_from_the_link_header() {
        assert_eq!(
            next_link(r#"<https://lms.example/nrps?page=2>; rel="next", <https://lms.example/nrps?page=1>; rel="first""#)
                .as_deref(),
            Some("https://lms.example/nrps?page=2")
        );
        assert_eq!(next_link(r#"<https://x>; rel="prev""#), None);
    }
}
