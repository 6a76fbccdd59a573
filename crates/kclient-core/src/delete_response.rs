//! [`DeleteResponse`]: what the API server answers to a delete.

use crate::status::Status;

/// The answer to a delete: the object, or a `Status`.
///
/// The API server answers a delete with the object when it still exists afterwards
/// (finalizers or a grace period delay the removal: the object carries a
/// `deletionTimestamp`) and, for many resources (pods, custom resources ...), also when it is
/// gone at once, as its last state. Otherwise it answers with a `Status` of success. Delete-
/// collection answers the same way, with the list of deleted objects. client-go hides the
/// difference (its `Delete` returns only an error); kube-rs returns `Either<K, Status>`.
///
/// The typed and the dynamic clients both return it (and re-export it); kclient-rest's
/// `Response::delete_response` decodes it, by one rule for both.
///
/// ```
/// use kclient_core::{DeleteResponse, DynamicObject, Status};
///
/// let gone: DeleteResponse<DynamicObject> =
///     DeleteResponse::Status(Status { status: "Success".into(), ..Default::default() });
/// assert!(gone.object().is_none());
/// assert!(gone.status().is_some_and(|s| s.is_success()));
///
/// let terminating = DeleteResponse::Object(DynamicObject::default());
/// assert!(terminating.status().is_none());
/// assert!(terminating.into_object().is_some());
/// ```
#[derive(Debug, Clone, PartialEq)]
// The size is `T`'s (a Pod is far larger than a Status); boxing either side would only add an
// allocation to every delete.
#[allow(clippy::large_enum_variant)]
pub enum DeleteResponse<T> {
    /// The server returned the object (still being deleted, or its last state).
    Object(T),
    /// The server returned a `Status` (the object is gone).
    Status(Status),
}

impl<T> DeleteResponse<T> {
    /// The returned object, if the server returned one.
    pub fn object(&self) -> Option<&T> {
        match self {
            DeleteResponse::Object(object) => Some(object),
            DeleteResponse::Status(_) => None,
        }
    }

    /// The returned object, by value.
    pub fn into_object(self) -> Option<T> {
        match self {
            DeleteResponse::Object(object) => Some(object),
            DeleteResponse::Status(_) => None,
        }
    }

    /// The returned status, if the server returned one.
    pub fn status(&self) -> Option<&Status> {
        match self {
            DeleteResponse::Object(_) => None,
            DeleteResponse::Status(status) => Some(status),
        }
    }
}
