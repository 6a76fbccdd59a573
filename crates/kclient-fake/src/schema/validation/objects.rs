//! The object checks: `minProperties`, `maxProperties`, `additionalProperties`,
//! `properties` in name order, `required`.

use serde_json::{Map, Value};

use super::{child_path, node, At, Code, OpenApiError, Outcome};
use crate::schema::structural::{Additional, Schema};

/// `minProperties`, `maxProperties`, `additionalProperties`, `properties`, `required`.
pub(super) fn object_checks(at: At<'_>) -> Outcome {
    let At {
        s,
        data,
        path,
        old,
        top,
    } = at;
    let c = &s.checks;
    let empty = Map::new();
    let map = data.as_object().unwrap_or(&empty);
    let old_map = old.and_then(Value::as_object);
    // The old value of a field, when correlation reaches it (kube-openapi's Key()).
    let old_of = |key: &str, has_schema: bool| -> Option<&Value> {
        if !has_schema || (top && (key == "kind" || key == "apiVersion")) {
            return None;
        }
        old_map?.get(key)
    };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    let mut out = property_count_checks(s, map.len() as i64, path);
    match &s.additional {
        Some(Additional::Allows(false)) => {
            for k in &keys {
                if !s.properties.contains_key(k.as_str()) {
                    out.add(OpenApiError {
                        code: Code::Other,
                        name: path.to_string(),
                        value: Some(Value::String((*k).clone())),
                        message: format!("{path}.{k} in body is a forbidden property"),
                    });
                }
            }
        }
        Some(Additional::Schema(additional)) => {
            for k in &keys {
                if s.properties.contains_key(k.as_str()) {
                    continue;
                }
                if let Some(v) = map.get(k.as_str()) {
                    let old_v = old_of(k, true);
                    let path = format!("{path}.{k}");
                    out.merge(node(At::below(additional, v, &path, old_v)));
                }
            }
        }
        _ => {}
    }
    for (name, prop) in &s.properties {
        if let Some(v) = map.get(name) {
            let old_v = old_of(name, true);
            let path = child_path(path, name);
            out.merge(node(At::below(prop, v, &path, old_v)));
        }
    }
    for k in &c.required {
        if !map.contains_key(k) {
            out.add(OpenApiError {
                code: Code::Required,
                name: format!("{path}.{k}"),
                value: None,
                message: format!("{path}.{k} in body is required"),
            });
        }
    }
    out
}

/// `minProperties` and `maxProperties` of an object of `size` properties.
fn property_count_checks(s: &Schema, size: i64, path: &str) -> Outcome {
    let c = &s.checks;
    let mut out = Outcome::default();
    if let Some(min) = c.min_properties {
        if size < min {
            out.add(OpenApiError {
                code: Code::Other,
                name: path.to_string(),
                value: Some(Value::from(size)),
                message: format!("{path} in body should have at least {min} properties"),
            });
        }
    }
    if let Some(max) = c.max_properties {
        if size > max {
            out.add(OpenApiError {
                code: Code::TooMany(size, max),
                name: path.to_string(),
                value: Some(Value::from(size)),
                message: format!("{path} in body should have at most {max} properties"),
            });
        }
    }
    out
}
