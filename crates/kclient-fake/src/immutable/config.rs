//! ConfigMaps and Secrets marked `immutable: true` (`ValidateConfigMapUpdate`,
//! `ValidateSecretUpdate`): their `data` and `binaryData` cannot change and `immutable`
//! cannot be unset; a Secret's `type` cannot change at all.

use kclient_core::FieldError;
use serde_json::Value;

use super::{at, immutable_string};

/// The detail of every refusal of an immutable ConfigMap's or Secret's fields.
const IMMUTABLE_WHEN_SET: &str = "field is immutable when `immutable` is set";

/// `data`, `binaryData` (ConfigMaps only) and `immutable` of an object marked immutable.
fn immutable_contents(old: &Value, new: &Value, fields: &[&str]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if at(old, &["immutable"]) != Some(&Value::Bool(true)) {
        return errs;
    }
    if at(new, &["immutable"]) != Some(&Value::Bool(true)) {
        errs.push(FieldError::forbidden("immutable", IMMUTABLE_WHEN_SET));
    }
    for field in fields {
        // reflect.DeepEqual of the maps: the stored ones are never empty (omitempty), so a
        // change is any difference, an emptied map included.
        if at(new, &[field]) != at(old, &[field]) {
            errs.push(FieldError::forbidden(field, IMMUTABLE_WHEN_SET));
        }
    }
    errs
}

/// A ConfigMap.
pub(super) fn config_map_update(old: &Value, new: &Value) -> Vec<FieldError> {
    immutable_contents(old, new, &["data", "binaryData"])
}

/// A Secret: `type` first, then the immutable contents (`stringData` was merged into `data`
/// before).
pub(super) fn secret_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> =
        immutable_string("type", at(new, &["type"]), at(old, &["type"]))
            .into_iter()
            .collect();
    errs.extend(immutable_contents(old, new, &["data"]));
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn full(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(FieldError::full).collect()
    }

    #[test]
    fn an_immutable_config_map_keeps_its_data_and_its_mark() {
        let old = json!({"immutable": true, "data": {"k": "v"}});
        assert!(config_map_update(&old, &old).is_empty());
        let labelled = json!({"immutable": true, "data": {"k": "v"},
                              "metadata": {"labels": {"a": "b"}}});
        assert!(config_map_update(&old, &labelled).is_empty());
        assert_eq!(
            full(config_map_update(
                &old,
                &json!({"data": {"k": "w"}, "binaryData": {"b": "AA=="}})
            )),
            [
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set",
                "binaryData: Forbidden: field is immutable when `immutable` is set",
            ]
        );
        let mutable = json!({"data": {"k": "v"}});
        assert!(config_map_update(&mutable, &json!({"data": {"k": "w"}})).is_empty());
        assert!(
            config_map_update(&json!({"immutable": false}), &json!({"immutable": true})).is_empty(),
            "an object can be made immutable"
        );
    }

    #[test]
    fn a_secret_keeps_its_type() {
        let old = json!({"type": "Opaque", "data": {"k": "dg=="}});
        assert_eq!(
            full(secret_update(
                &old,
                &json!({"type": "kubernetes.io/tls", "data": {"k": "dg=="}})
            )),
            [r#"type: Invalid value: "kubernetes.io/tls": field is immutable"#]
        );
        let immutable = json!({"type": "Opaque", "immutable": true, "data": {"k": "dg=="}});
        assert_eq!(
            full(secret_update(
                &immutable,
                &json!({"type": "Opaque", "immutable": true})
            )),
            ["data: Forbidden: field is immutable when `immutable` is set"]
        );
    }
}
