//! [`Error`]: what a dynamic client call can fail with.

use kclient_core::{
    ApiStatus, GroupVersionResource, OptionsError, PagedListError, PagerError, Status,
};
use kclient_rest::RefusedRequest;

/// The error of every dynamic client call.
///
/// The server's refusals (`404 NotFound`, `409 Conflict`, `410 Expired` ...) and transport
/// failures come from the REST layer as [`Error::Rest`]; [`ApiStatus`] is implemented, so
/// `err.is_not_found()`, `err.is_conflict()` and the other predicates work on it directly.
/// Requests the server would refuse are caught before they are sent ([`Error::Refused`]):
/// invalid options, and calls without the namespace or name they need.
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

    /// The request was refused before it was sent, by the checks the dynamic and typed
    /// clients share (kclient-rest's `ResourceRequests`): options the server would reject, a
    /// call on one object without its name or (for a resource known to be namespaced) its
    /// namespace, an apply configuration carrying `metadata.managedFields`, a body that does
    /// not serialize.
    #[error(transparent)]
    Refused(#[from] RefusedRequest),

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

/// Options the server would reject, refused before sending ([`Error::Refused`]).
impl From<OptionsError> for Error {
    fn from(e: OptionsError) -> Self {
        Error::Refused(e.into())
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
    use kclient_core::{ApiError, GroupResource};

    #[test]
    fn predicates_see_through_to_the_server_status() {
        let gr = GroupResource::new("example.com", "widgets");
        let err = Error::from(kclient_rest::Error::from(ApiError::conflict(
            &gr, "w", "stale",
        )));
        assert!(err.is_conflict());
        assert!(!err.is_not_found());
        let local = Error::from(RefusedRequest::MissingName { verb: "update" });
        assert!(local.api_status().is_none());
        assert!(!local.is_connection_refused());
        assert_eq!(
            Error::from(RefusedRequest::NamespaceRequired {
                verb: "get",
                resource: gr
            })
            .to_string(),
            "get of a widgets.example.com object needs a namespace: this client addresses all namespaces; bind it to one"
        );
    }
}
