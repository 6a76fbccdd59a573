//! [`Error`]: what can go wrong in discovery, and [`GroupDiscoveryFailed`], the partial failure
//! of a discovery that reached some group-versions but not all (client-go's
//! `ErrGroupDiscoveryFailed`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use kclient_core::{ApiStatus, GroupVersion, GroupVersionParseError, Status, StatusReason};

/// The error of every fallible operation of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A request to the API server failed (the server's `Status`, a connection error, a
    /// timeout ...). The [`ApiStatus`] predicates look through to it.
    #[error(transparent)]
    Rest(#[from] kclient_rest::Error),

    /// A discovery document could not be decoded.
    #[error("cannot decode {what} from {source_name}: {source}")]
    Decode {
        /// What was being decoded (`APIGroupDiscoveryList`, `APIResourceList` ...).
        what: &'static str,
        /// Where it came from: a URL path or a cache file.
        source_name: String,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },

    /// Discovery named a group-version that does not parse.
    #[error("discovery returned an invalid group-version: {0}")]
    InvalidGroupVersion(#[from] GroupVersionParseError),

    /// Some group-versions could not be discovered; the others were.
    #[error(transparent)]
    GroupDiscoveryFailed(#[from] GroupDiscoveryFailed),

    /// Aggregated discovery marked the group-version `Stale`: its aggregated API server did not
    /// answer, so its resources are unknown (client-go's `StaleGroupVersionError`).
    #[error("stale GroupVersion discovery: {0}")]
    StaleGroupVersion(GroupVersion),

    /// The server does not serve this group-version (a cached discovery has no entry for it;
    /// client-go's `ErrCacheNotFound`). [`ApiStatus::is_not_found`] is true for it.
    #[error("the server does not serve {group_version}")]
    NotServed {
        /// The group-version asked for.
        group_version: GroupVersion,
        /// A `404 NotFound` status, so the [`ApiStatus`] predicates answer as for the server's.
        status: Box<Status>,
    },

    /// The server answered a group-version with no resources (the memory cache treats this as
    /// an error so that it is retried, as client-go's `emptyResponseError`).
    #[error("received empty response for: {0}")]
    EmptyResponse(GroupVersion),

    /// Reading or writing the disk cache failed.
    #[error("discovery cache {path}: {source}")]
    Cache {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// An error kept by a cache and handed out again (the same failure, shared).
    #[error(transparent)]
    Shared(Arc<Error>),

    /// A blocking task (disk cache I/O) panicked or was cancelled.
    #[error("discovery cache task failed: {0}")]
    Task(String),
}

impl Error {
    /// [`Error::NotServed`] for `group_version`.
    pub fn not_served(group_version: GroupVersion) -> Self {
        let message = format!("the server does not serve {group_version}");
        Error::NotServed {
            group_version,
            status: Box::new(Status::failure(StatusReason::NotFound, 404, message)),
        }
    }

    /// Whether a retry may succeed: a refused or broken connection, a 5xx, a timeout or a
    /// 429 (client-go memcache's `isTransientError`). The memory cache retries these entries.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Shared(e) => e.is_transient(),
            Error::Rest(e) => {
                matches!(
                    e,
                    kclient_rest::Error::Connect { .. }
                        | kclient_rest::Error::Transport { .. }
                        | kclient_rest::Error::Timeout { .. }
                        | kclient_rest::Error::RateLimited { .. }
                ) || e.http_code().is_some_and(|c| c >= 500)
                    || e.is_too_many_requests()
            }
            _ => false,
        }
    }
}

impl ApiStatus for Error {
    fn api_status(&self) -> Option<&Status> {
        match self {
            Error::Rest(e) => e.api_status(),
            Error::NotServed { status, .. } => Some(status),
            Error::Shared(e) => e.api_status(),
            _ => None,
        }
    }

    fn is_connection_refused(&self) -> bool {
        match self {
            Error::Rest(e) => e.is_connection_refused(),
            Error::Shared(e) => e.is_connection_refused(),
            _ => false,
        }
    }
}

/// Some group-versions could not be discovered (client-go's `ErrGroupDiscoveryFailed`).
///
/// Returned next to what did succeed: a discovery that reached most of the API is still
/// useful (kubectl keeps working when one aggregated API server is down).
#[derive(Debug, Clone, Default)]
pub struct GroupDiscoveryFailed {
    /// Each failed group-version with its error.
    pub groups: BTreeMap<GroupVersion, Arc<Error>>,
}

impl GroupDiscoveryFailed {
    /// Whether `group_version` is among the failed ones.
    pub fn failed(&self, group_version: &GroupVersion) -> bool {
        self.groups.contains_key(group_version)
    }
}

/// Formats like client-go: `unable to retrieve the complete list of server APIs: apps/v1: …`.
impl fmt::Display for GroupDiscoveryFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unable to retrieve the complete list of server APIs: ")?;
        for (i, (gv, err)) in self.groups.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{gv}: {err}")?;
        }
        Ok(())
    }
}

impl std::error::Error for GroupDiscoveryFailed {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_discovery_failed_lists_every_group_version() {
        let mut failed = GroupDiscoveryFailed::default();
        failed.groups.insert(
            GroupVersion::new("metrics.k8s.io", "v1beta1"),
            Arc::new(Error::StaleGroupVersion(GroupVersion::new(
                "metrics.k8s.io",
                "v1beta1",
            ))),
        );
        failed.groups.insert(
            GroupVersion::new("apps", "v1"),
            Arc::new(Error::EmptyResponse(GroupVersion::new("apps", "v1"))),
        );
        assert_eq!(
            failed.to_string(),
            "unable to retrieve the complete list of server APIs: apps/v1: received empty \
             response for: apps/v1, metrics.k8s.io/v1beta1: stale GroupVersion discovery: \
             metrics.k8s.io/v1beta1"
        );
        assert!(failed.failed(&GroupVersion::new("apps", "v1")));
        assert!(!failed.failed(&GroupVersion::new("batch", "v1")));
    }

    #[test]
    fn not_served_is_not_found() {
        let e = Error::not_served(GroupVersion::new("example.com", "v1"));
        assert!(e.is_not_found());
        assert!(!e.is_transient());
        assert_eq!(e.to_string(), "the server does not serve example.com/v1");
    }

    #[test]
    fn transient_errors() {
        let unavailable = Error::Rest(kclient_rest::Error::Api(Box::new(
            Status::failure(StatusReason::ServiceUnavailable, 503, "down").into(),
        )));
        assert!(unavailable.is_transient());
        let throttled = Error::Rest(kclient_rest::Error::Api(Box::new(
            Status::failure(StatusReason::TooManyRequests, 429, "slow down").into(),
        )));
        assert!(throttled.is_transient());
        let forbidden = Error::Rest(kclient_rest::Error::Api(Box::new(
            Status::failure(StatusReason::Forbidden, 403, "no").into(),
        )));
        assert!(!forbidden.is_transient());
        assert!(forbidden.is_forbidden());
    }
}
