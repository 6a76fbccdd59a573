//! [`Error`]: what a dynamic client call can fail with.

use kclient_core::{
    ApiStatus, GroupResource, GroupVersionResource, OptionsError, PagedListError, PagerError,
    Status,
};
use kclient_rest::RefusedRequest;

/// The error of every dynamic client call.
///
/// The server's refusals (`404 NotFound`, `409 Conflict`, `410 Expired` ...) and transport
/// failures come from the REST layer as [`Error::Rest`]; [`ApiStatus`] is implemented, so
/// `err.is_not_found()`, `err.is_conflict()` and the other predicates work on it directly.
/// Requests the server would refuse are caught before they are sent: invalid options, and
/// calls without the namespace or name they need.
///
/// ```
/// use kclient_core::{ApiError, ApiStatus, GroupResource};
/// use kclient_dynamic::Error;
///
/// let err = Error::from(kclient_rest::Error::from(ApiError::not_found(
///     &GroupResource::new("stable.example.com", "crontabs"),
///     "nightly",
/// )));
/// assert!(err.is_not_found());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request failed in the REST layer: the server answered with a failure `Status`, the
    /// connection or TLS failed, the response could not be decoded, the request timed out.
    #[error(transparent)]
    Rest(#[from] kclient_rest::Error),

    /// The options would be rejected by the server (checked before sending).
    #[error("invalid options: {0}")]
    Options(#[from] OptionsError),

    /// The call addresses one object of a resource known to be namespaced (or creates one),
    /// but no namespace was given.
    #[error("{verb} of a {resource} object needs a namespace: use .namespace(ns)")]
    NamespaceRequired {
        /// The verb (`create`, `get`, `update` ...).
        verb: &'static str,
        /// The resource.
        resource: GroupResource,
    },

    /// The call needs an object name, and none was given (an empty name, or an object
    /// without `metadata.name`).
    #[error("{verb} needs the object's name, which is empty")]
    MissingName {
        /// The verb.
        verb: &'static str,
    },

    /// An apply configuration must not carry `metadata.managedFields` (as in client-go: the
    /// server would take them as the fields to own).
    #[error("cannot apply an object with managed fields already set; remove metadata.managedFields (or extract the apply configuration of your field manager) first")]
    ManagedFieldsSet,

    /// A body could not be serialized.
    #[error("cannot serialize the request body: {0}")]
    Serialize(#[source] serde_json::Error),

    /// A paged list was abandoned although the server answered every page: it returned a
    /// continue token it had returned before, so the list would go round in circles
    /// ([`PagerError::RepeatedContinueToken`]).
    #[error(transparent)]
    Pager(#[from] PagerError),

    /// The server refused to answer a metadata client's request with
    /// `PartialObjectMetadata` (`406 Not Acceptable`): the resource (or the server, or an
    /// aggregated API server in front of it) cannot convert its objects. The server's
    /// `Status` is the source's, so `is_not_acceptable()` holds.
    #[error(
        "the server refused to serve {resource} as PartialObjectMetadata (406 Not Acceptable)"
    )]
    MetadataNotAcceptable {
        /// The resource asked for.
        resource: GroupVersionResource,
        /// The server's answer.
        #[source]
        source: Box<kclient_rest::Error>,
    },
}

/// The checks before sending are kclient-rest's, shared with the typed client; each refusal
/// is this crate's variant of the same name.
impl From<RefusedRequest> for Error {
    fn from(refused: RefusedRequest) -> Self {
        match refused {
            RefusedRequest::Options(e) => Error::Options(e),
            RefusedRequest::NamespaceRequired { verb, resource } => {
                Error::NamespaceRequired { verb, resource }
            }
            RefusedRequest::MissingName { verb } => Error::MissingName { verb },
            RefusedRequest::ManagedFieldsSet => Error::ManagedFieldsSet,
            RefusedRequest::Serialize(e) => Error::Serialize(e),
        }
    }
}

/// A paged list's failure ([`DynamicResource::list_all`](crate::DynamicResource::list_all)):
/// the client's error, or the pager's ([`Error::Pager`]).
impl From<PagedListError<Error>> for Error {
    fn from(e: PagedListError<Error>) -> Self {
        e.into_lister_error()
    }
}

impl ApiStatus for Error {
    fn api_status(&self) -> Option<&Status> {
        match self {
            Error::Rest(e) => e.api_status(),
            Error::MetadataNotAcceptable { source, .. } => source.api_status(),
            _ => None,
        }
    }

    fn is_connection_refused(&self) -> bool {
        match self {
            Error::Rest(e) => e.is_connection_refused(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kclient_core::ApiError;

    #[test]
    fn predicates_see_through_to_the_server_status() {
        let gr = GroupResource::new("example.com", "widgets");
        let err = Error::from(kclient_rest::Error::from(ApiError::conflict(
            &gr, "w", "stale",
        )));
        assert!(err.is_conflict());
        assert!(!err.is_not_found());
        let local = Error::MissingName { verb: "update" };
        assert!(local.api_status().is_none());
        assert!(!local.is_connection_refused());
        assert_eq!(
            Error::NamespaceRequired {
                verb: "get",
                resource: gr
            }
            .to_string(),
            "get of a widgets.example.com object needs a namespace: use .namespace(ns)"
        );
    }
}
