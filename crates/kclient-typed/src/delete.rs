//! [`DeleteResponse`]: what the API server answers to a delete.

use kclient_core::Status;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::Error;

/// The answer to a delete: the object, or a `Status`.
///
/// The API server answers a delete with the object when it still exists afterwards
/// (finalizers or a grace period delay the removal: the object carries a
/// `deletionTimestamp`) and, for many resources (pods, custom resources ...), also when it is
/// gone at once, as its last state. Otherwise it answers with a `Status` of success. Delete-
/// collection answers the same way, with the list of deleted objects. client-go hides the
/// difference (its `Delete` returns only an error); kube-rs returns `Either<K, Status>`.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kclient_typed::DeleteResponse;
///
/// let gone: DeleteResponse<ConfigMap> =
///     DeleteResponse::Status(kclient_core::Status { status: "Success".into(), ..Default::default() });
/// assert!(gone.object().is_none());
/// assert!(gone.status().is_some_and(|s| s.is_success()));
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

    /// Decodes a successful delete response: a body of kind `Status` is a status, anything
    /// else the object (or list).
    pub(crate) fn decode(body: &[u8]) -> Result<Self, Error>
    where
        T: DeserializeOwned,
    {
        #[derive(Deserialize)]
        struct Kind {
            #[serde(default)]
            kind: Option<String>,
            #[serde(default, rename = "apiVersion")]
            api_version: Option<String>,
        }
        let decode_error = |source: serde_json::Error, what: &'static str| {
            Error::Rest(kclient_rest::Error::Decode {
                what,
                snippet: String::from_utf8_lossy(&body[..body.len().min(256)]).into_owned(),
                source,
            })
        };
        let kind: Kind =
            serde_json::from_slice(body).map_err(|e| decode_error(e, "a delete response"))?;
        let is_status = kind.kind.as_deref() == Some("Status")
            && matches!(kind.api_version.as_deref(), None | Some("v1") | Some(""));
        if is_status {
            let status = serde_json::from_slice(body)
                .map_err(|e| decode_error(e, std::any::type_name::<Status>()))?;
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
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn status_bodies_are_statuses_and_others_objects() {
        let status = br#"{"kind":"Status","apiVersion":"v1","status":"Success","details":{"name":"a","kind":"configmaps"}}"#;
        let decoded = DeleteResponse::<Pod>::decode(status).unwrap();
        assert!(decoded.status().is_some_and(Status::is_success));
        let pod = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","deletionTimestamp":"2025-01-01T00:00:00Z"}}"#;
        let decoded = DeleteResponse::<Pod>::decode(pod).unwrap();
        assert_eq!(
            decoded.into_object().unwrap().metadata.name.as_deref(),
            Some("a")
        );
        assert!(matches!(
            DeleteResponse::<Pod>::decode(b"not json"),
            Err(Error::Rest(kclient_rest::Error::Decode { .. }))
        ));
    }
}
