//! [`Error`]: what a typed client call can fail with.

use kclient_core::{ApiStatus, GroupResource, OptionsError, PagedListError, PagerError, Status};
use kclient_rest::RefusedRequest;

/// The error of every typed client call.
///
/// The server's refusals (`404 NotFound`, `409 Conflict`, `410 Expired` ...) and transport
/// failures come from the REST layer as [`Error::Rest`]; [`ApiStatus`] is implemented, so
/// `err.is_not_found()`, `err.is_conflict()` and the other predicates work directly on it.
/// Requests that the server would refuse are caught before they are sent: options it would
/// reject ([`Error::Options`]) and calls that need a namespace or a name they do not have.
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

    /// The options would be rejected by the server (checked before sending).
    #[error("invalid options: {0}")]
    Options(#[from] OptionsError),

    /// The call addresses one object of a namespaced resource, but the client is not bound to
    /// a namespace (it was made for all namespaces).
    #[error("{verb} of a {resource} object needs a namespace: this client addresses all namespaces; make one with a namespace")]
    NamespaceRequired {
        /// The verb (`create`, `get`, `update` ...).
        verb: &'static str,
        /// The resource.
        resource: GroupResource,
    },

    /// The call needs an object name, and none was given (an empty name, or an object
    /// passed to `update` or `update_status` without `metadata.name`).
    #[error("{verb} needs the object's metadata.name, which is not set")]
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

    /// A port-forward could not start (the `streaming` feature): the upgrade was refused
    /// (with the server's `Status`), a port specification is invalid, nothing could listen.
    /// Boxed, to keep `Result<_, Error>` small.
    #[cfg(feature = "streaming")]
    #[error(transparent)]
    PortForward(Box<kclient_streaming::portforward::Error>),
}

#[cfg(feature = "streaming")]
impl From<kclient_streaming::portforward::Error> for Error {
    fn from(e: kclient_streaming::portforward::Error) -> Self {
        Error::PortForward(Box::new(e))
    }
}

/// The checks before sending are kclient-rest's, shared with the dynamic client; each
/// refusal is this crate's variant of the same name.
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

/// A paged list's failure ([`ResourceClient::list_all`](crate::ResourceClient::list_all)):
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
        let local = Error::MissingName { verb: "update" };
        assert!(local.api_status().is_none());
        assert!(!local.is_connection_refused());
        assert_eq!(
            local.to_string(),
            "update needs the object's metadata.name, which is not set"
        );
    }
}
