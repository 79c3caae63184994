//! Who may do what with a quiz. Its owner and co-authors (and admins) change it and read every
//! version's key; the staff of a course read the key of the versions assigned there and no
//! other; everyone else sees a public quiz without its key, and a private one not at all.

use sqlx::PgPool;
use uuid::Uuid;

use super::store::{self, QuizAccess};
use crate::auth::CurrentUser;
use crate::content::Visibility;
use crate::error::{ApiError, Code};

pub fn quiz_not_found() -> ApiError {
    ApiError::new(Code::QuizNotFound, "There is no quiz with this slug.")
}

/// The quiz as the caller stands to it, if it exists for them: a private quiz does not exist
/// for anyone but its authors and admins (`404`, so that its slug does not leak).
pub async fn known(pool: &PgPool, slug: &str, user: &CurrentUser) -> Result<QuizAccess, ApiError> {
    if !super::routes::plausible_slug(slug) {
        return Err(quiz_not_found());
    }
    let quiz = store::access(pool, slug, user.id)
        .await?
        .ok_or_else(quiz_not_found)?;
    if quiz.visibility == Visibility::Private && !quiz.is_author && !user.is_admin() {
        return Err(quiz_not_found());
    }
    Ok(quiz)
}

/// The quiz, if the caller authors it (or is an admin): `403` for a public quiz they do not
/// author, `404` for a private one.
pub async fn authored(
    pool: &PgPool,
    slug: &str,
    user: &CurrentUser,
) -> Result<QuizAccess, ApiError> {
    let quiz = known(pool, slug, user).await?;
    if quiz.is_author || user.is_admin() {
        Ok(quiz)
    } else {
        Err(ApiError::new(
            Code::NotQuizAuthor,
            "Only the quiz's authors and admins can do this.",
        ))
    }
}

/// Whether the caller may place the quiz in a course (and so, as its staff, read the key of
/// the placed version): a public quiz, one they author, or any quiz for an admin.
pub fn placeable(quiz: &QuizAccess, user: &CurrentUser) -> bool {
    quiz.visibility == Visibility::Public || quiz.is_author || user.is_admin()
}

/// Whether the caller may read this version's key: its authors and admins, and the staff of a
/// course where this version is assigned.
pub async fn reads_key(
    pool: &PgPool,
    quiz: &QuizAccess,
    version_id: Uuid,
    user: &CurrentUser,
) -> Result<bool, ApiError> {
    Ok(quiz.is_author
        || user.is_admin()
        || store::teaches_version(pool, version_id, user.id).await?)
}
