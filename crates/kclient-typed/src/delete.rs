//! Decoding what the API server answers to a delete into kclient-core's [`DeleteResponse`]
//! (re-exported here as `kclient_typed::DeleteResponse`).
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_typed::DeleteResponse;
//!
//! let gone: DeleteResponse<ConfigMap> =
//!     DeleteResponse::Status(kclient_core::Status { status: "Success".into(), ..Default::default() });
//! assert!(gone.object().is_none());
//! assert!(gone.status().is_some_and(|s| s.is_success()));
//! ```

use kclient_core::{DeleteResponse, Status};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::Error;

/// Decodes a successful delete response: a body of kind `Status` (with `apiVersion` `v1` or
/// none) is a status, anything else the object (or list).
pub(crate) fn decode_delete_response<T>(body: &[u8]) -> Result<DeleteResponse<T>, Error>
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

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn status_bodies_are_statuses_and_others_objects() {
        let status = br#"{"kind":"Status","apiVersion":"v1","status":"Success","details":{"name":"a","kind":"configmaps"}}"#;
        let decoded = decode_delete_response::<Pod>(status).unwrap();
        assert!(decoded.status().is_some_and(Status::is_success));
        let pod = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","deletionTimestamp":"2025-01-01T00:00:00Z"}}"#;
        let decoded = decode_delete_response::<Pod>(pod).unwrap();
        assert_eq!(
            decoded.into_object().unwrap().metadata.name.as_deref(),
            Some("a")
        );
        assert!(matches!(
            decode_delete_response::<Pod>(b"not json"),
            Err(Error::Rest(kclient_rest::Error::Decode { .. }))
        ));
    }
}
