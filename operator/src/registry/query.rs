//! The query parameters of `GET /v0.1/servers` (and `include_deleted` of the version routes),
//! parsed once with their bounds, and the opaque cursor. Pure.

use super::entry::Entry;
use super::settings::{DEFAULT_PAGE, MAX_PAGE};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jiff::Timestamp;

/// Longest query string read (longer ones are refused, not truncated).
pub const MAX_QUERY: usize = 4096;
/// Longest `search` text.
const MAX_SEARCH: usize = 200;
/// Longest cursor (a base64 name of at most 200 characters).
const MAX_CURSOR: usize = 300;

/// Which versions a list holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VersionWanted {
    /// Every version (each entry has one: its current one).
    Any,
    /// `version=latest`: the latest of each server, which every entry is.
    Latest,
    /// Only entries of exactly this version.
    Exact(String),
}

/// A parsed list query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListQuery {
    /// Continue after this name.
    pub cursor: Option<String>,
    /// Entries per page (1 to `MAX_PAGE`).
    pub limit: usize,
    /// Lower-cased text that the name, title or description must contain.
    pub search: Option<String>,
    /// Only entries updated at or after this time (deletions included).
    pub updated_since: Option<Timestamp>,
    /// Version filter.
    pub version: VersionWanted,
    /// Deleted entries too.
    pub include_deleted: bool,
}

impl Default for ListQuery {
    fn default() -> Self {
        Self {
            cursor: None,
            limit: DEFAULT_PAGE,
            search: None,
            updated_since: None,
            version: VersionWanted::Any,
            include_deleted: false,
        }
    }
}

/// One page of entries and where the next begins.
#[derive(Clone, Debug, Default)]
pub struct Page {
    /// The entries, by name.
    pub entries: Vec<Entry>,
    /// Name of the last entry, when more follow.
    pub next_cursor: Option<String>,
}

/// A refused query; the message names the parameter.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum QueryError {
    /// The query string is too long.
    #[error("the query string is longer than {MAX_QUERY} bytes")]
    TooLong,
    /// A parameter's value is not what it must be.
    #[error("`{name}`: {problem}")]
    Invalid {
        /// The parameter.
        name: &'static str,
        /// What is wrong.
        problem: &'static str,
    },
}

fn invalid(name: &'static str, problem: &'static str) -> QueryError {
    QueryError::Invalid { name, problem }
}

/// Parses the query string of a list request.
pub fn parse_list(raw: Option<&str>) -> Result<ListQuery, QueryError> {
    let raw = raw.unwrap_or_default();
    if raw.len() > MAX_QUERY {
        return Err(QueryError::TooLong);
    }
    let mut query = ListQuery::default();
    for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
        match key.as_ref() {
            "cursor" if !value.is_empty() => query.cursor = Some(decode_cursor(&value)?),
            "limit" => {
                let limit: usize = value
                    .parse()
                    .map_err(|_| invalid("limit", "must be a positive integer"))?;
                if limit == 0 {
                    return Err(invalid("limit", "must be a positive integer"));
                }
                // Larger asks get the largest page rather than an error: clients pick round numbers.
                query.limit = limit.min(MAX_PAGE);
            }
            "search" if !value.is_empty() => {
                if value.chars().count() > MAX_SEARCH {
                    return Err(invalid("search", "must be at most 200 characters"));
                }
                query.search = Some(value.to_lowercase());
            }
            "updated_since" if !value.is_empty() => {
                let since = value.parse::<Timestamp>().map_err(|_| {
                    invalid(
                        "updated_since",
                        "must be an RFC 3339 time such as 2025-08-07T13:15:04Z",
                    )
                })?;
                query.updated_since = Some(since);
            }
            "version" if !value.is_empty() => {
                query.version = if value == "latest" {
                    VersionWanted::Latest
                } else {
                    VersionWanted::Exact(value.into_owned())
                };
            }
            "include_deleted" => query.include_deleted = parse_bool("include_deleted", &value)?,
            // Unknown parameters are ignored: the API may grow, and clients add their own.
            _ => {}
        }
    }
    Ok(query)
}

/// `include_deleted` of the version routes.
pub fn parse_include_deleted(raw: Option<&str>) -> Result<bool, QueryError> {
    let raw = raw.unwrap_or_default();
    if raw.len() > MAX_QUERY {
        return Err(QueryError::TooLong);
    }
    let mut include = false;
    for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
        if key == "include_deleted" {
            include = parse_bool("include_deleted", &value)?;
        }
    }
    Ok(include)
}

fn parse_bool(name: &'static str, value: &str) -> Result<bool, QueryError> {
    match value {
        "true" | "1" => Ok(true),
        "false" | "0" | "" => Ok(false),
        _ => Err(invalid(name, "must be true or false")),
    }
}

/// The cursor of a name: opaque to clients, as the API asks.
pub fn encode_cursor(name: &str) -> String {
    URL_SAFE_NO_PAD.encode(name)
}

fn decode_cursor(cursor: &str) -> Result<String, QueryError> {
    let bad = || invalid("cursor", "is not a cursor this registry returned");
    if cursor.len() > MAX_CURSOR {
        return Err(bad());
    }
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    String::from_utf8(bytes).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_parameter_with_its_bounds() {
        let q = parse_list(Some(&format!(
            "cursor={}&limit=500&search=Weather&updated_since=2025-08-07T13:15:04.280Z&version=latest&include_deleted=true&x=1",
            encode_cursor("a/b")
        )))
        .unwrap();
        assert_eq!(q.cursor.as_deref(), Some("a/b"));
        assert_eq!(q.limit, MAX_PAGE);
        assert_eq!(q.search.as_deref(), Some("weather"));
        assert_eq!(
            q.updated_since.unwrap().to_string(),
            "2025-08-07T13:15:04.28Z"
        );
        assert_eq!(q.version, VersionWanted::Latest);
        assert!(q.include_deleted);
        assert_eq!(parse_list(None).unwrap(), ListQuery::default());
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        for bad in [
            "limit=0",
            "limit=-1",
            "limit=ten",
            "updated_since=yesterday",
            "include_deleted=maybe",
            "cursor=%%%",
            "cursor=_w",
        ] {
            assert!(parse_list(Some(bad)).is_err(), "{bad}");
        }
        let long = format!("search={}", "a".repeat(201));
        assert!(parse_list(Some(&long)).is_err());
        let huge = "a".repeat(MAX_QUERY + 1);
        assert_eq!(parse_list(Some(&huge)), Err(QueryError::TooLong));
    }
}
