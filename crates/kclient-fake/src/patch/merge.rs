//! JSON merge patch (RFC 7386), with the `json-patch` crate: objects merge recursively,
//! `null` deletes, everything else (arrays included) replaces.

use kclient_core::ApiError;
use serde_json::Value;

/// Applies a merge patch document to `target`.
pub fn apply(target: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let patch: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    let mut doc = target.clone();
    json_patch::merge(&mut doc, &patch);
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merges_and_deletes() {
        let doc = json!({"a": {"b": 1, "c": 2}, "l": [1, 2]});
        let out = apply(&doc, br#"{"a": {"b": null, "d": 3}, "l": [3]}"#).unwrap();
        assert_eq!(out, json!({"a": {"c": 2, "d": 3}, "l": [3]}));
        assert_eq!(apply(&doc, b"nope").unwrap_err().code(), 400);
    }
}
