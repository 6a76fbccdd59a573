//! Query-string parameters: percent-decoding, and the typed list/watch, write and delete
//! options validated with kube-apiserver's rules and messages
//! (`ValidateListOptions`: `resourceVersionMatch is forbidden unless resourceVersion is
//! provided`, `sendInitialEvents requires setting resourceVersionMatch to NotOlderThan`, …).

use std::collections::HashMap;

use kclient_core::{ApiError, GroupResource};

use kclient_core::FieldError;

/// Decoded query parameters (the first value of each name wins).
#[derive(Debug, Clone, Default)]
pub struct Query {
    params: HashMap<String, String>,
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-decodes a query component (`+` is a space).
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Query {
    /// Parses a raw query string.
    pub fn parse(raw: Option<&str>) -> Self {
        let mut params = HashMap::new();
        for pair in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            params
                .entry(percent_decode(k))
                .or_insert_with(|| percent_decode(v));
        }
        Self { params }
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }

    /// The value of `name`, `""` when absent.
    pub fn str(&self, name: &str) -> &str {
        self.get(name).unwrap_or("")
    }

    /// A boolean parameter, parsed as Go's `strconv.ParseBool`.
    pub fn bool(&self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.get(name) {
            None | Some("") => Ok(None),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True") => Ok(Some(true)),
            Some("0" | "f" | "F" | "false" | "FALSE" | "False") => Ok(Some(false)),
            Some(other) => Err(ApiError::bad_request(format!(
                "strconv.ParseBool: parsing {other:?}: invalid syntax"
            ))),
        }
    }

    /// An integer parameter.
    pub fn int(&self, name: &str) -> Result<Option<i64>, ApiError> {
        match self.get(name) {
            None | Some("") => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                ApiError::bad_request(format!("strconv.ParseInt: parsing {v:?}: invalid syntax"))
            }),
        }
    }
}

/// How a list or watch pins its resourceVersion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RvMatch {
    /// No `resourceVersionMatch`: legacy semantics.
    Unset,
    /// `NotOlderThan`.
    NotOlderThan,
    /// `Exact`.
    Exact,
}

/// The options of a list or watch.
#[derive(Debug, Clone)]
pub struct ListParams {
    /// `labelSelector`.
    pub label_selector: String,
    /// `fieldSelector`.
    pub field_selector: String,
    /// `resourceVersion`, `""` when absent.
    pub resource_version: String,
    /// `resourceVersionMatch`.
    pub rv_match: RvMatch,
    /// `limit` (0: no limit).
    pub limit: i64,
    /// `continue`.
    pub continue_token: String,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<i64>,
    /// `allowWatchBookmarks`.
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
    /// `shardSelector` (read only with the `ShardedListAndWatch` gate on).
    pub shard_selector: String,
    /// `watch`.
    pub watch: bool,
}

fn list_options_invalid(errors: Vec<FieldError>) -> ApiError {
    ApiError::invalid(
        &GroupResource::new("meta.k8s.io", "ListOptions"),
        "",
        errors,
    )
}

impl ListParams {
    /// Reads and validates the options (`watch_prefix`: the path used `/watch/`).
    pub fn from_query(q: &Query, watch_prefix: bool) -> Result<Self, ApiError> {
        let watch = watch_prefix || q.bool("watch")?.unwrap_or(false);
        let rv_match_raw = q.str("resourceVersionMatch").to_string();
        let params = Self {
            label_selector: q.str("labelSelector").to_string(),
            field_selector: q.str("fieldSelector").to_string(),
            resource_version: q.str("resourceVersion").to_string(),
            rv_match: match rv_match_raw.as_str() {
                "NotOlderThan" => RvMatch::NotOlderThan,
                "Exact" => RvMatch::Exact,
                _ => RvMatch::Unset,
            },
            limit: q.int("limit")?.unwrap_or(0),
            continue_token: q.str("continue").to_string(),
            timeout_seconds: q.int("timeoutSeconds")?,
            allow_watch_bookmarks: q.bool("allowWatchBookmarks")?.unwrap_or(false),
            send_initial_events: q.bool("sendInitialEvents")?,
            shard_selector: q.str("shardSelector").to_string(),
            watch,
        };
        let errs = if watch {
            params.watch_errors(&rv_match_raw)
        } else {
            params.list_errors(&rv_match_raw)
        };
        if !errs.is_empty() {
            return Err(list_options_invalid(errs));
        }
        Ok(params)
    }

    /// The option errors of a watch (`rv_match_raw`: `resourceVersionMatch` as given).
    fn watch_errors(&self, rv_match_raw: &str) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let field = "resourceVersionMatch";
        if self.send_initial_events.is_some() && self.rv_match != RvMatch::NotOlderThan {
            errs.push(FieldError::forbidden(
                field,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !rv_match_raw.is_empty() {
            if self.send_initial_events.is_none() {
                errs.push(FieldError::forbidden(
                    field,
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if self.rv_match != RvMatch::NotOlderThan {
                errs.push(FieldError::not_supported(
                    field,
                    rv_match_raw,
                    &["NotOlderThan"],
                ));
            }
            if !self.continue_token.is_empty() {
                errs.push(FieldError::forbidden(
                    field,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
        errs
    }

    /// The option errors of a list (`rv_match_raw`: `resourceVersionMatch` as given).
    fn list_errors(&self, rv_match_raw: &str) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let field = "resourceVersionMatch";
        if !rv_match_raw.is_empty() {
            if self.resource_version.is_empty() {
                errs.push(FieldError::forbidden(
                    field,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if !self.continue_token.is_empty() {
                errs.push(FieldError::forbidden(
                    field,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if self.rv_match == RvMatch::Unset {
                errs.push(FieldError::not_supported(
                    field,
                    rv_match_raw,
                    &["Exact", "NotOlderThan", ""],
                ));
            }
            if self.rv_match == RvMatch::Exact && self.resource_version == "0" {
                errs.push(FieldError::forbidden(
                    field,
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if self.send_initial_events.is_some() {
            errs.push(FieldError::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
        errs
    }
}

/// Parses a resourceVersion parameter (`""` is `None`).
pub fn parse_rv(rv: &str) -> Result<Option<u64>, ApiError> {
    if rv.is_empty() {
        return Ok(None);
    }
    rv.parse::<u64>()
        .map(Some)
        .map_err(|_| ApiError::bad_request(format!("invalid resource version {rv:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_percent_and_plus() {
        assert_eq!(percent_decode("a%3Db+c%2"), "a=b c%2");
        assert_eq!(percent_decode("%"), "%");
        assert_eq!(percent_decode("%zz"), "%zz");
        let q = Query::parse(Some("labelSelector=app%3Dweb&watch=1&watch=0&x"));
        assert_eq!(q.get("labelSelector"), Some("app=web"));
        assert_eq!(q.bool("watch").unwrap(), Some(true));
        assert_eq!(q.get("x"), Some(""));
    }

    #[test]
    fn validation_messages() {
        let q = Query::parse(Some("resourceVersionMatch=Exact"));
        let err = ListParams::from_query(&q, false).unwrap_err();
        assert_eq!(
            err.message(),
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
        );
        let q = Query::parse(Some("watch=true&sendInitialEvents=true"));
        let err = ListParams::from_query(&q, false).unwrap_err();
        assert_eq!(err.code(), 422);
        assert!(err
            .message()
            .contains("sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
        let q = Query::parse(Some("limit=abc"));
        assert_eq!(ListParams::from_query(&q, false).unwrap_err().code(), 400);
        let q = Query::parse(Some("watch=maybe"));
        assert_eq!(ListParams::from_query(&q, false).unwrap_err().code(), 400);
    }
}

/// Fuzz target for the request parsing (query strings, list options, paths), as a property
/// test: hostile input gives an answer or a typed error, never a panic.
/// From a fixed seed with the tests; `cargo xtask fuzz` runs it longer (failures recorded in
/// `proptest-regressions/query.txt`).
#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    use super::*;

    fn query_soup() -> impl Strategy<Value = String> {
        proptest::string::string_regex(
            r"((watch|limit|continue|resourceVersion|resourceVersionMatch|timeoutSeconds|labelSelector|fieldSelector|sendInitialEvents|allowWatchBookmarks|%[0-9A-Fa-fZ]{0,2}|=|&|true|1|-1|99999999999999999999|NotOlderThan|Exact|[a-z!()=,])){0,40}",
        )
        .unwrap()
    }

    proptest! {
        #![proptest_config(kclient_testkit::proptest_config(2048, concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/query.txt")))]

        #[test]
        fn request_parsing_never_panics(query in query_soup(), path in "(/[a-z0-9.%-]{0,12}){0,9}") {
            let q = Query::parse(Some(&query));
            for watch in [false, true] {
                let _ = ListParams::from_query(&q, watch);
            }
            let _ = percent_decode(&query);
            let _ = parse_rv(&query);
            let _ = crate::router::route(&path);
        }
    }
}
