//! Reading a roster CSV (`email,role`) into rows to enroll. Pure: no I/O.
//!
//! A row that cannot be enrolled is reported with its line and why, and the others go on; only
//! a file that is not a roster at all (no `email,role` header, more than [`MAX_ROWS`] rows) is
//! refused as a whole.

use std::collections::HashMap;

use crate::courses::models::CourseRole;

/// Rows in one file at most (the header not counted).
pub const MAX_ROWS: usize = 5_000;
/// Bytes in one file at most.
pub const MAX_BYTES: usize = 1024 * 1024;

/// A row to enroll: its line in the file (the header is line 1), the address (trimmed, lower
/// case) and the role.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub line: u64,
    pub email: String,
    pub role: CourseRole,
}

/// A row that cannot be enrolled, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    pub line: u64,
    /// What the row said in its email column, when it could be read.
    pub email: Option<String>,
    pub reason: String,
}

/// Why a whole file is refused.
#[derive(Debug, PartialEq)]
pub enum Refused {
    Header,
    TooManyRows,
}

/// The trimmed, lower-case address if `raw` is one (the rule of `validate::Email`).
pub fn normalize_email(raw: &str) -> Option<String> {
    let email = crate::validate::Email::try_from(raw.trim().to_string()).ok()?;
    Some(email.as_str().to_lowercase())
}

/// The rows of `bytes`, in file order: each one to enroll or invalid. A later row with an
/// address already seen is invalid (it names the line it repeats).
pub fn parse(bytes: &[u8]) -> Result<Vec<Result<Row, Invalid>>, Refused> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let mut records = reader.byte_records();
    let header_ok = match records.next() {
        Some(Ok(h)) => {
            let names: Vec<String> = h
                .iter()
                .map(|f| {
                    String::from_utf8_lossy(f)
                        .trim_start_matches('\u{feff}')
                        .to_lowercase()
                })
                .collect();
            names == ["email", "role"]
        }
        _ => false,
    };
    if !header_ok {
        return Err(Refused::Header);
    }
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut rows = Vec::new();
    for record in records {
        if rows.len() == MAX_ROWS {
            return Err(Refused::TooManyRows);
        }
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                rows.push(Err(Invalid {
                    line,
                    email: None,
                    reason: format!("unreadable row: {e}"),
                }));
                continue;
            }
        };
        let line = record.position().map_or(0, |p| p.line());
        rows.push(row(&record, line, &mut seen));
    }
    Ok(rows)
}

fn row(
    record: &csv::ByteRecord,
    line: u64,
    seen: &mut HashMap<String, u64>,
) -> Result<Row, Invalid> {
    let invalid = |email: Option<&str>, reason: String| Invalid {
        line,
        email: email.map(str::to_string),
        reason,
    };
    let Some(raw_email) = record.get(0) else {
        return Err(invalid(None, "no email".into()));
    };
    let Ok(raw_email) = std::str::from_utf8(raw_email) else {
        return Err(invalid(None, "the email is not UTF-8".into()));
    };
    // The address is echoed back in the report: at most an address's length of it.
    let shown: String = raw_email.chars().take(254).collect();
    if record.len() > 2 {
        return Err(invalid(
            Some(&shown),
            format!("{} columns; a row has email and role", record.len()),
        ));
    }
    let Some(email) = normalize_email(raw_email) else {
        return Err(invalid(Some(&shown), "not an email address".into()));
    };
    let role = match record.get(1).map(std::str::from_utf8) {
        None | Some(Ok("")) => CourseRole::Learner,
        Some(Ok(r)) => match CourseRole::parse(&r.to_lowercase()) {
            Some(role) => role,
            None => {
                return Err(invalid(
                    Some(&email),
                    "`role` must be learner or instructor".into(),
                ));
            }
        },
        Some(Err(_)) => return Err(invalid(Some(&email), "the role is not UTF-8".into())),
    };
    if let Some(first) = seen.get(&email) {
        return Err(invalid(
            Some(&email),
            format!("the same email as line {first}"),
        ));
    }
    seen.insert(email.clone(), line);
    Ok(Row { line, email, role })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(rows: &[Result<Row, Invalid>]) -> Vec<(u64, bool)> {
        rows.iter()
            .map(|r| match r {
                Ok(r) => (r.line, true),
                Err(i) => (i.line, false),
            })
            .collect()
    }

    #[test]
    fn good_rows_are_normalized_and_a_missing_role_means_learner() {
        let rows = parse(
            b"email,role\n  Ada@Example.ORG , Instructor\nbob@example.org,\ncy@example.org\n",
        )
        .unwrap();
        assert_eq!(
            rows,
            vec![
                Ok(Row {
                    line: 2,
                    email: "ada@example.org".into(),
                    role: CourseRole::Instructor
                }),
                Ok(Row {
                    line: 3,
                    email: "bob@example.org".into(),
                    role: CourseRole::Learner
                }),
                Ok(Row {
                    line: 4,
                    email: "cy@example.org".into(),
                    role: CourseRole::Learner
                }),
            ]
        );
    }

    #[test]
    fn bad_rows_say_why_and_do_not_stop_the_others() {
        let rows = parse(
            b"\xef\xbb\xbfEmail,Role\nnot-an-email,learner\nada@example.org,admin\nada@example.org,learner\nada@example.org,learner\n\"x@example.org\",learner,extra\nok@example.org,learner\n",
        )
        .unwrap();
        assert_eq!(
            lines(&rows),
            vec![
                (2, false),
                (3, false),
                (4, true),
                (5, false),
                (6, false),
                (7, true)
            ]
        );
        let Err(dup) = &rows[3] else { panic!() };
        assert_eq!(dup.reason, "the same email as line 4");
        let Err(role) = &rows[1] else { panic!() };
        assert!(role.reason.contains("role"), "{role:?}");
    }

    #[test]
    fn a_file_without_the_header_or_with_too_many_rows_is_refused() {
        assert_eq!(parse(b"ada@example.org,learner\n"), Err(Refused::Header));
        assert_eq!(parse(b""), Err(Refused::Header));
        let mut big = String::from("email,role\n");
        for i in 0..=MAX_ROWS {
            big.push_str(&format!("p{i}@example.org,learner\n"));
        }
        assert_eq!(parse(big.as_bytes()), Err(Refused::TooManyRows));
        let exact: String = big
            .lines()
            .take(MAX_ROWS + 1)
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(parse(exact.as_bytes()).unwrap().len(), MAX_ROWS);
    }
}
