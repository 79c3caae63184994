//! Cursor pagination: one shape for every list that can grow. A request takes `limit` (1 to
//! [`MAX_LIMIT`], [`DEFAULT_LIMIT`] when absent; out of range is `400 invalid_limit`, never
//! clamped in silence) and `cursor` (the `next` of the previous page); a page answers its
//! `items` in a stable order and `next`, absent on the last page, which is also sent as
//! `Link: <…>; rel="next"` (RFC 8288).
//!
//! Keyset, not offset: a cursor holds the sort key of the last item given, so a page costs an
//! index range scan wherever it starts, and rows added or removed meanwhile neither repeat nor
//! skip others. The key is signed (HMAC-SHA256, with a key derived from the signing secret that
//! every instance shares) together with the list it belongs to and its scope (the course, the
//! assignment, the reader): a cursor altered by hand, from another list, or from another
//! person's list is `422 invalid_cursor`, as is one longer than [`MAX_CURSOR`] bytes (decoded
//! without allocating more than that).

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::Sha256;

use crate::error::{ApiError, Code};

pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 200;
/// The longest cursor read (a sort key of a display name of 200 characters fits several
/// times over).
pub const MAX_CURSOR: usize = 1200;
/// Bytes of the HMAC kept in a cursor.
const TAG: usize = 16;

/// `?limit=&cursor=` of a list with no other parameters. Lists with parameters of their own
/// carry these two fields and call [`page`].
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Items per page: 1 to 200; 50 when absent.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
    /// The `next` of the previous page; absent for the first page.
    pub cursor: Option<String>,
}

/// A page asked for: how many items, and after which sort key (`None`: from the start).
#[derive(Debug)]
pub struct Page<K> {
    pub limit: usize,
    pub after: Option<K>,
}

impl<K> Page<K> {
    /// What to fetch: one more than the page, to know whether a next page exists.
    pub fn fetch(&self) -> i64 {
        self.limit as i64 + 1
    }
}

/// Signs and reads cursors.
#[derive(Clone)]
pub struct Cursors {
    key: [u8; 32],
}

impl Cursors {
    /// The cursor key derived from the signing secret (never the secret itself).
    pub fn new(secret: &[u8]) -> Self {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("an HMAC key of any length");
        mac.update(b"quizd pagination cursors v1");
        Self {
            key: mac.finalize().into_bytes().into(),
        }
    }

    fn tag(&self, list: &str, payload: &[u8]) -> [u8; TAG] {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("a 32-byte key");
        mac.update(list.as_bytes());
        mac.update(&[0]);
        mac.update(payload);
        let full = mac.finalize().into_bytes();
        let mut tag = [0; TAG];
        tag.copy_from_slice(&full[..TAG]);
        tag
    }

    /// The cursor after `key` in list `list` (its name and scope, e.g. `roster:<course id>`).
    pub fn encode<K: Serialize>(&self, list: &str, key: &K) -> String {
        let payload = serde_json::to_vec(key).expect("a sort key serializes");
        let mut bytes = self.tag(list, &payload).to_vec();
        bytes.extend_from_slice(&payload);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The sort key in a cursor this list gave.
    pub fn decode<K: DeserializeOwned>(&self, list: &str, cursor: &str) -> Result<K, ApiError> {
        // 422, not 400: any string is a well-formed cursor; this one does not name a position.
        let bad = || {
            ApiError::new(
                Code::InvalidCursor,
                "`cursor` is not one this list gave: use the `next` of its previous page.",
            )
        };
        if cursor.len() > MAX_CURSOR {
            return Err(bad());
        }
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
        if bytes.len() <= TAG {
            return Err(bad());
        }
        let (tag, payload) = bytes.split_at(TAG);
        // Compared in constant time by the MAC.
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("a 32-byte key");
        mac.update(list.as_bytes());
        mac.update(&[0]);
        mac.update(payload);
        mac.verify_truncated_left(tag).map_err(|_| bad())?;
        serde_json::from_slice(payload).map_err(|_| bad())
    }

    /// The page asked for by `limit` and `cursor` of list `list`.
    pub fn page<K: DeserializeOwned>(
        &self,
        list: &str,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<Page<K>, ApiError> {
        self.page_within(list, limit, cursor, (DEFAULT_LIMIT, MAX_LIMIT))
    }

    /// [`Cursors::page`] of a list whose pages are larger: `(default, max)` limits.
    pub fn page_within<K: DeserializeOwned>(
        &self,
        list: &str,
        limit: Option<u32>,
        cursor: Option<&str>,
        (default, max): (u32, u32),
    ) -> Result<Page<K>, ApiError> {
        let limit = limit.unwrap_or(default);
        if !(1..=max).contains(&limit) {
            return Err(ApiError::new(
                Code::InvalidLimit,
                format!("`limit` must be 1 to {max}."),
            ));
        }
        Ok(Page {
            limit: limit as usize,
            after: cursor.map(|c| self.decode(list, c)).transpose()?,
        })
    }

    /// The page's rows (fetched with [`Page::fetch`]) cut to its limit, and the cursor after
    /// its last row if more follow.
    pub fn cut<R, K: Serialize>(
        &self,
        list: &str,
        mut rows: Vec<R>,
        limit: usize,
        key: impl Fn(&R) -> K,
    ) -> (Vec<R>, Option<String>) {
        if rows.len() <= limit {
            return (rows, None);
        }
        rows.truncate(limit);
        let next = rows.last().map(|r| self.encode(list, &key(r)));
        (rows, next)
    }
}

/// `200` with the page as JSON and, if there is a next page, its `Link` (this request's path
/// and query with the cursor replaced).
pub fn respond<T: Serialize>(req: &HttpRequest, next: Option<&str>, body: &T) -> HttpResponse {
    let mut res = HttpResponse::Ok();
    if let Some(next) = next {
        res.insert_header((header::LINK, link(req, next)));
    }
    res.json(body)
}

/// `<path?query with cursor=next>; rel="next"`.
pub fn link(req: &HttpRequest, next: &str) -> String {
    let mut query: Vec<(String, String)> =
        serde_urlencoded::from_str::<Vec<(String, String)>>(req.query_string())
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k != "cursor")
            .collect();
    query.push(("cursor".into(), next.into()));
    let query = serde_urlencoded::to_string(&query).unwrap_or_default();
    format!("<{}?{query}>; rel=\"next\"", req.path())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_only_in_its_own_list_and_unaltered() {
        let c = Cursors::new(b"a secret of some length");
        let cursor = c.encode("roster:1", &("Ada", 7));
        assert_eq!(
            c.decode::<(String, i32)>("roster:1", &cursor).unwrap(),
            ("Ada".to_string(), 7)
        );
        assert!(c.decode::<(String, i32)>("roster:2", &cursor).is_err());
        let other = Cursors::new(b"another secret");
        assert!(other.decode::<(String, i32)>("roster:1", &cursor).is_err());
        // One character changed anywhere is refused.
        for i in 0..cursor.len() {
            let mut bytes = cursor.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(bytes).unwrap();
            assert!(
                c.decode::<(String, i32)>("roster:1", &altered).is_err(),
                "{altered}"
            );
        }
        assert!(c.decode::<(String, i32)>("roster:1", "").is_err());
        assert!(
            c.decode::<(String, i32)>("roster:1", &"A".repeat(MAX_CURSOR + 1))
                .is_err()
        );
    }

    #[test]
    fn a_limit_outside_its_range_is_refused_not_clamped() {
        let c = Cursors::new(b"k");
        assert!(c.page::<i32>("l", Some(0), None).is_err());
        assert!(c.page::<i32>("l", Some(MAX_LIMIT + 1), None).is_err());
        assert_eq!(c.page::<i32>("l", None, None).unwrap().limit, 50);
    }

    #[test]
    fn a_page_cut_to_its_limit_points_after_its_last_row() {
        let c = Cursors::new(b"k");
        let (rows, next) = c.cut("l", vec![1, 2, 3], 2, |r| *r);
        assert_eq!(rows, [1, 2]);
        assert_eq!(c.decode::<i32>("l", &next.unwrap()).unwrap(), 2);
        assert_eq!(c.cut("l", vec![1, 2], 2, |r| *r).1, None);
    }
}
