//! Decoding what the API server answers to a delete into kclient-core's [`DeleteResponse`]
//! (re-exported here as `kclient_dynamic::DeleteResponse`).
//!
//! ```
//! use kclient_core::{DynamicObject, Status};
//! use kclient_dynamic::DeleteResponse;
//!
//! let gone: DeleteResponse<DynamicObject> =
//!     DeleteResponse::Status(Status { status: "Success".into(), ..Default::default() });
//! assert!(gone.object().is_none());
//! assert!(gone.status().is_some_and(|s| s.is_success()));
//! ```

use kclient_core::DeleteResponse;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::Error;

/// Decodes a successful delete response: a body of kind `Status` (in `meta.k8s.io/v1` or
/// the core `v1`) is a status, anything else the object (or list).
pub(crate) fn decode_delete_response<T>(body: &[u8]) -> Result<DeleteResponse<T>, Error>
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

#[cfg(test)]
mod tests {
    use kclient_core::{DynamicObject, Status};

    use super::*;

    #[test]
    fn decodes_statuses_and_objects() {
        let status = decode_delete_response::<DynamicObject>(
            br#"{"kind":"Status","apiVersion":"v1","status":"Success","details":{"name":"x"}}"#,
        )
        .unwrap();
        assert!(status.status().is_some_and(Status::is_success));
        let object = decode_delete_response::<DynamicObject>(
            br#"{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","deletionTimestamp":"2025-01-01T00:00:00Z"},"spec":{"x":1}}"#,
        )
        .unwrap();
        let w = object.into_object().unwrap();
        assert_eq!(w.metadata.name.as_deref(), Some("w"));
        assert_eq!(w.data["spec"]["x"], 1);
        assert!(decode_delete_response::<DynamicObject>(b"not json").is_err());
        assert!(
            decode_delete_response::<DynamicObject>(br#"{"kind":"Status","code":"x"}"#).is_err()
        );
    }
}
