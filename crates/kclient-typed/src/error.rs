//! [`Error`]: what a typed client call can fail with.

use kclient_core::{ApiStatus, OptionsError, PagedListError, PagerError, Status};
use kclient_rest::RefusedRequest;

/// The error of every typed client call.
///
/// The server's refusals (`404 NotFound`, `409 Conflict`, `410 Expired` ...) and transport
/// failures come from the REST layer as [`Error::Rest`]; [`ApiStatus`] is implemented, so
/// `err.is_not_found()`, `err.is_conflict()` and the other predicates work directly on it.
/// Requests that the server would refuse are caught before they are sent
/// ([`Error::Refused`]): options it would reject, and calls that need a namespace or a name
/// they do not have.
///
/// ```
/// use kclient_core::{ApiError, ApiStatus, GroupResource};
/// use kclient_typed::Error;
///
/// let err = Error::from(kclient_rest::Error::from(ApiError::not_found(
///     &GroupResource::new("", "pods"),
///     "web",
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

    /// The request was refused before it was sent, by the checks the typed and dynamic
    /// clients share (kclient-rest's `ResourceRequests`): options the server would reject, a
    /// call on one object without its name or namespace, an apply configuration carrying
    /// `metadata.managedFields`, a body that does not serialize.
    #[error(transparent)]
    Refused(#[from] RefusedRequest),

    /// A paged list was abandoned although the server answered every page: it returned a
    /// continue token it had returned before, so the list would go round in circles
    /// ([`PagerError::RepeatedContinueToken`]).
    #[error(transparent)]
    Pager(#[from] PagerError),

    /// A port-forward could not start (the `streaming` feature): the upgrade was refused
    /// (with the server's `Status`), a port specification is invalid, nothing could listen.
    /// Boxed, to keep `Result<_, Error>` small.
    #[cfg(feature = "streaming")]
    #[error(transparent)]
    PortForward(Box<kclient_streaming::portforward::Error>),
}

/// Options the server would reject, refused before sending ([`Error::Refused`]).
impl From<OptionsError> for Error {
    fn from(e: OptionsError) -> Self {
        Error::Refused(e.into())
    }
}

/// A paged list's failure ([`ResourceClient::list_all`](crate::ResourceClient::list_all)):
/// the client's error, or the pager's ([`Error::Pager`]).
impl From<PagedListError<Error>> for Error {
    fn from(e: PagedListError<Error>) -> Self {
        e.into_lister_error()
    }
}

#[cfg(feature = "streaming")]
impl From<kclient_streaming::portforward::Error> for Error {
    fn from(e: kclient_streaming::portforward::Error) -> Self {
        Error::PortForward(Box::new(e))
    }
}

impl ApiStatus for Error {
    fn api_status(&self) -> Option<&Status> {
        match self {
            Error::Rest(e) => e.api_status(),
            #[cfg(feature = "streaming")]
            Error::PortForward(e) => e.api_status(),
            _ => None,
        }
    }

    fn is_connection_refused(&self) -> bool {
        match self {
            Error::Rest(e) => e.is_connection_refused(),
            #[cfg(feature = "streaming")]
            Error::PortForward(e) => e.is_connection_refused(),
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
        let conflict =
            ApiError::conflict(&GroupResource::new("apps", "deployments"), "web", "stale");
        let err = Error::from(kclient_rest::Error::from(conflict));
        assert!(err.is_conflict());
        assert!(!err.is_not_found());
        let local = Error::from(RefusedRequest::MissingName { verb: "update" });
        assert!(local.api_status().is_none());
        assert!(!local.is_connection_refused());
        assert_eq!(
            local.to_string(),
            "update needs the object's metadata.name, which is not set"
        );
    }
}
