//! JSON patch (RFC 6902), with the `json-patch` crate: a malformed patch is a
//! `400 BadRequest`, more than 10,000 operations a `413`, and a patch that does not apply (a
//! failed `test`, a missing path) a `422` with the reason in its cause, as kube-apiserver.

use kclient_core::{ApiError, Status, StatusCause, StatusDetails, StatusReason};
use serde_json::Value;

/// kube-apiserver's limit on operations in one JSON patch.
pub const MAX_OPERATIONS: usize = 10_000;

/// Applies a JSON patch document to `target`.
pub fn apply(target: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let patch: json_patch::Patch = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    if patch.0.len() > MAX_OPERATIONS {
        let mut err: ApiError = Status::failure(
            StatusReason::RequestEntityTooLarge,
            413,
            format!(
                "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {}",
                patch.0.len()
            ),
        )
        .into();
        err.status.details = None;
        return Err(err);
    }
    let mut doc = target.clone();
    json_patch::patch(&mut doc, &patch.0).map_err(|e| {
        ApiError::from(
            Status::failure(
                StatusReason::Invalid,
                422,
                "the server rejected our request due to an error in our request",
            )
            .with_details(StatusDetails {
                causes: vec![StatusCause {
                    cause_type: "UnexpectedServerResponse".into(),
                    message: e.to_string(),
                    field: String::new(),
                }],
                ..StatusDetails::default()
            }),
        )
    })?;
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn applies_and_rejects() {
        let doc = json!({"a": 1});
        let out = apply(&doc, br#"[{"op":"add","path":"/b","value":2}]"#).unwrap();
        assert_eq!(out, json!({"a": 1, "b": 2}));
        assert_eq!(apply(&doc, b"{").unwrap_err().code(), 400);
        let failed = apply(&doc, br#"[{"op":"test","path":"/a","value":2}]"#).unwrap_err();
        assert_eq!(failed.code(), 422);
        assert_eq!(failed.details().unwrap().causes.len(), 1);
    }
}
