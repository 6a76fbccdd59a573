//! The checks a custom resource with a `scale` subresource gets besides its schema
//! (apiextensions' `ValidateScaleSpec` and `ValidateScaleStatus`): the replica counts at the
//! scale paths are integers in `0..=MaxInt32`, and the label selector a string.

use kclient_core::{go_format, FieldError};
use serde_json::{json, Value};

use crate::catalogue::ScaleSpec;

/// The largest replica count (Go's `math.MaxInt32`).
const MAX_REPLICAS: i64 = i32::MAX as i64;

/// The errors of `obj`'s replica counts: the desired one when `spec`, the observed one and
/// the selector always (a status write checks only those).
pub fn validate(scale: &ScaleSpec, obj: &Value, spec: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if spec {
        errs.extend(replicas(obj, &scale.spec_replicas_path));
    }
    errs.extend(replicas(obj, &scale.status_replicas_path));
    if let Some(path) = &scale.label_selector_path {
        if let Err(detail) = nested(obj, path, "string", Value::is_string) {
            errs.push(FieldError::invalid(
                &format!(".{path}"),
                &json!(""),
                &detail,
            ));
        }
    }
    errs
}

/// A replica count at `path` (dotted, without the leading `.`), as `NestedInt64` reads it:
/// absent is fine; not an integer, negative or over `MaxInt32` is not.
fn replicas(obj: &Value, path: &str) -> Option<FieldError> {
    let field = format!(".{path}");
    match nested(obj, path, "int64", Value::is_i64) {
        Err(detail) => Some(FieldError::invalid(&field, &json!(0), &detail)),
        Ok(Some(n)) => {
            let n = n.as_i64().unwrap_or_default();
            if n < 0 {
                Some(FieldError::invalid(
                    &field,
                    &json!(n),
                    "should be a non-negative integer",
                ))
            } else if n > MAX_REPLICAS {
                Some(FieldError::invalid(
                    &field,
                    &json!(n),
                    &format!("should be less than or equal to {MAX_REPLICAS}"),
                ))
            } else {
                None
            }
        }
        Ok(None) => None,
    }
}

/// The value at `path` if it is there and `is_wanted` holds of it; unstructured's accessor
/// error otherwise (`.spec.size accessor error: 3 is of the type string, expected int64`).
fn nested<'a>(
    obj: &'a Value,
    path: &str,
    wanted: &str,
    is_wanted: impl Fn(&Value) -> bool,
) -> Result<Option<&'a Value>, String> {
    let fields: Vec<&str> = path.split('.').collect();
    let mut current = obj;
    for (i, field) in fields.iter().enumerate() {
        let Value::Object(map) = current else {
            let at = format!(".{}", fields[..i].join("."));
            return Err(format!(
                "{at} accessor error: {} is of the type {}, expected map[string]interface{{}}",
                go_format::v(current),
                go_type(current)
            ));
        };
        match map.get(*field) {
            Some(next) => current = next,
            None => return Ok(None),
        }
    }
    if is_wanted(current) {
        Ok(Some(current))
    } else {
        Err(format!(
            ".{path} accessor error: {} is of the type {}, expected {wanted}",
            go_format::v(current),
            go_type(current)
        ))
    }
}

/// Go's `%T` of a value decoded from JSON into `interface{}` (integers are `int64` in
/// unstructured objects).
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scale() -> ScaleSpec {
        ScaleSpec {
            spec_replicas_path: "spec.size".into(),
            status_replicas_path: "status.replicas".into(),
            label_selector_path: Some("status.selector".into()),
        }
    }

    fn messages(obj: Value, spec: bool) -> Vec<String> {
        validate(&scale(), &obj, spec)
            .iter()
            .map(|e| format!("{}: {}", e.field, e.body))
            .collect()
    }

    #[test]
    fn accessor_errors_are_unstructured_s() {
        assert_eq!(
            messages(json!({"spec": {"size": "3"}}), true),
            [".spec.size: Invalid value: 0: .spec.size accessor error: 3 is of the type string, expected int64"]
        );
        assert_eq!(
            messages(json!({"spec": {"size": 1.5}, "status": {"replicas": -1, "selector": 7}}), true),
            [
                ".spec.size: Invalid value: 0: .spec.size accessor error: 1.5 is of the type float64, expected int64",
                ".status.replicas: Invalid value: -1: should be a non-negative integer",
                ".status.selector: Invalid value: \"\": .status.selector accessor error: 7 is of the type int64, expected string",
            ]
        );
        assert_eq!(
            messages(json!({"spec": "x", "status": {"replicas": 3000000000u64}}), false),
            [".status.replicas: Invalid value: 3000000000: should be less than or equal to 2147483647"]
        );
        assert_eq!(
            messages(json!({"spec": "x"}), true),
            [".spec.size: Invalid value: 0: .spec accessor error: x is of the type string, expected map[string]interface{}"]
        );
        assert!(messages(json!({}), true).is_empty());
    }
}
