//! [`DeleteResponse`]: what the API server answers to a delete.

use kclient_core::Status;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::Error;

/// The answer to a delete: the object, or a `Status`.
///
/// The API server answers a delete with the object when it still exists afterwards
/// (finalizers or a grace period delay its removal, and it carries a `deletionTimestamp`)
/// and, for many resources (custom resources among them), also when it is gone at once, as
/// its last state. Otherwise it answers with a `Status` of success. A delete-collection
/// answers the same way, with the list of deleted objects. client-go's dynamic client hides
/// the difference (its `Delete` returns only an error).
///
/// ```
/// use kclient_core::{DynamicObject, Status};
/// use kclient_dynamic::DeleteResponse;
///
/// let gone: DeleteResponse<DynamicObject> =
///     DeleteResponse::Status(Status { status: "Success".into(), ..Default::default() });
/// assert!(gone.object().is_none());
/// assert!(gone.status().is_some_and(|s| s.is_success()));
/// ```
#[derive(Debug, Clone, PartialEq)]
// Objects (a `DynamicObject` with its `ObjectMeta`) are larger than a `Status`; the lint only
// sees the generic `T`.
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

    /// Decodes a successful delete response: a body of kind `Status` (in `meta.k8s.io/v1` or
    /// the core `v1`) is a status, anything else the object (or list).
    pub(crate) fn decode(body: &[u8]) -> Result<Self, Error>
    where
        T: DeserializeOwned,
    {
        #[derive(Deserialize)]
        struct Kind {
            #[serde(default)]
            kind: Option<String>,
        }
        let decode_error = |source: serde_json::Error, what: &'static str| {
            Error::Rest(kclient_rest::Error::Decode {
                what,
                snippet: String::from_utf8_lossy(&body[..body.len().min(256)]).into_owned(),
                source,
            })
        };
        let kind: Kind = serde_json::from_slice(body).map_err(|e| decode_error(e, "an object"))?;
        if kind.kind.as_deref() == Some("Status") {
            let status = serde_json::from_slice(body).map_err(|e| decode_error(e, "Status"))?;
            Ok(DeleteResponse::Status(status))
        } else {
            let object = serde_json::from_slice(body)
                .map_err(|e| decode_error(e, std::any::type_name::<T>()))?;
            Ok(DeleteResponse::Object(object))
        }
    }
}

#[cfg(test)]
mod tests {
    use kclient_core::DynamicObject;

    use super::*;

    #[test]
    fn decodes_statuses_and_objects() {
        let status = DeleteResponse::<DynamicObject>::decode(
            br#"{"kind":"Status","apiVersion":"v1","status":"Success","details":{"name":"x"}}"#,
        )
        .unwrap();
        assert!(status.status().is_some_and(Status::is_success));
        let object = DeleteResponse::<DynamicObject>::decode(
            br#"{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","deletionTimestamp":"2025-01-01T00:00:00Z"},"spec":{"x":1}}"#,
        )
        .unwrap();
        let w = object.into_object().unwrap();
        assert_eq!(w.metadata.name.as_deref(), Some("w"));
        assert_eq!(w.data["spec"]["x"], 1);
        assert!(DeleteResponse::<DynamicObject>::decode(b"not json").is_err());
        assert!(
            DeleteResponse::<DynamicObject>::decode(br#"{"kind":"Status","code":"x"}"#).is_err()
        );
    }
}
