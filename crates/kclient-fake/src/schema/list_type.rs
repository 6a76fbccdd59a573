//! `x-kubernetes-list-type`: `set` lists must not repeat an item and `map` lists must not
//! repeat a key (`x-kubernetes-list-map-keys`), as apiextensions-apiserver's
//! `listtype.ValidateListSetsAndMaps` checks them: `spec.ports[1]: Duplicate value:
//! {"name":"http"}` for the second occurrence of each repeated item.

use std::collections::HashMap;

use kclient_core::{go_format, FieldError};
use serde_json::{Map, Value};

use super::field_path::{child, key};
use super::structural::Schema;

/// Checks every list of `obj` (a whole object, walked from the root schema `s`).
pub fn validate(s: &Schema, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(map) = obj.as_object() {
        walk_object(None, s, map, &mut errs);
    }
    errs
}

fn walk_object(
    path: Option<&str>,
    s: &Schema,
    map: &Map<String, Value>,
    errs: &mut Vec<FieldError>,
) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    if let Some(a) = s.additional_schema() {
        for k in &keys {
            if let Some(v) = map.get(k.as_str()) {
                walk_value(&key(path, k), a, v, errs);
            }
        }
    }
    for k in &keys {
        if let (Some(sub), Some(v)) = (s.properties.get(k.as_str()), map.get(k.as_str())) {
            walk_value(&child(path, k), sub, v, errs);
        }
    }
}

fn walk_value(path: &str, s: &Schema, v: &Value, errs: &mut Vec<FieldError>) {
    match v {
        Value::Array(items) => walk_array(path, s, items, errs),
        Value::Object(map) => walk_object(Some(path), s, map, errs),
        _ => {}
    }
}

fn walk_array(path: &str, s: &Schema, items: &[Value], errs: &mut Vec<FieldError>) {
    match s.list_type.as_deref() {
        Some("set") => {
            for i in repeated(items.iter().map(identity)) {
                errs.push(FieldError::duplicate(&format!("{path}[{i}]"), &items[i]));
            }
        }
        Some("map") => errs.extend(validate_map(path, s, items)),
        _ => {}
    }
    if let Some(item_schema) = s.items.as_deref() {
        for (i, item) in items.iter().enumerate() {
            walk_value(&format!("{path}[{i}]"), item_schema, item, errs);
        }
    }
}

/// The identity Go gives an item in a set: scalars by type and value, compounds by their
/// JSON encoding.
fn identity(v: &Value) -> String {
    match v {
        Value::Null => "n".into(),
        Value::Bool(b) => format!("b{b}"),
        Value::Number(n) if n.is_i64() => format!("i{n}"),
        Value::Number(n) => format!("f{}", go_format::number(n)),
        Value::String(s) => format!("s{s}"),
        other => format!("c{}", go_format::json(other)),
    }
}

/// The indices of the second occurrence of every repeated identity.
fn repeated(ids: impl Iterator<Item = String>) -> Vec<usize> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, id) in ids.enumerate() {
        let count = seen.entry(id).or_insert(0);
        *count += 1;
        if *count == 2 {
            out.push(i);
        }
    }
    out
}

fn validate_map(path: &str, s: &Schema, items: &[Value]) -> Vec<FieldError> {
    for (i, x) in items.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            return vec![FieldError::invalid(
                &format!("{path}[{i}]"),
                x,
                "must be an object for an array of list-type map",
            )];
        }
    }
    if items.len() <= 1 {
        return Vec::new();
    }
    let keys: Vec<Value> = items
        .iter()
        .map(|x| {
            let mut key = Map::new();
            if let Some(m) = x.as_object() {
                for k in &s.list_map_keys {
                    if let Some(v) = m.get(k) {
                        key.insert(k.clone(), v.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    // With one key, Go compares the key values themselves (a missing key is a value of its
    // own); with several, the maps of the keys present.
    let ids: Vec<String> = match s.list_map_keys.as_slice() {
        [one] => items
            .iter()
            .map(|x| match x.get(one) {
                Some(v) => identity(v),
                None => "unspecified".to_string(),
            })
            .collect(),
        _ => keys.iter().map(identity).collect(),
    };
    repeated(ids.into_iter())
        .into_iter()
        .map(|i| FieldError::duplicate(&format!("{path}[{i}]"), &keys[i]))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Schema {
        Schema::with_spec(json!({
            "set": {"type": "array", "x-kubernetes-list-type": "set",
                    "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {
                          "name": {"type": "string"},
                          "tags": {"type": "array", "x-kubernetes-list-type": "set",
                                   "items": {"type": "integer"}}}}},
            "pairs": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["a", "b"],
                      "items": {"type": "object"}},
            "byName": {"type": "object", "additionalProperties": {"type": "array",
                       "x-kubernetes-list-type": "set", "items": {"type": "string"}}},
            "atomic": {"type": "array", "items": {"type": "string"}}
        }))
    }

    fn messages(obj: Value) -> Vec<String> {
        validate(&schema(), &obj)
            .iter()
            .map(FieldError::full)
            .collect()
    }

    #[test]
    fn duplicates() {
        assert_eq!(
            messages(json!({"spec": {"set": ["a", "b", "a", "a", "b"]}})),
            [
                r#"spec.set[2]: Duplicate value: "a""#,
                r#"spec.set[4]: Duplicate value: "b""#
            ]
        );
        assert_eq!(
            messages(json!({"spec": {"ports": [{"name": "a"}, {"name": "a", "x": 1}]}})),
            [r#"spec.ports[1]: Duplicate value: {"name":"a"}"#]
        );
        assert_eq!(
            messages(json!({"spec": {"ports": [{"x": 1}, {"y": 2}]}})),
            ["spec.ports[1]: Duplicate value: {}"]
        );
        assert_eq!(
            messages(json!({"spec": {"ports": [{"name": "a", "tags": [1, 1]}]}})),
            ["spec.ports[0].tags[1]: Duplicate value: 1"]
        );
        assert_eq!(
            messages(json!({"spec": {"pairs": [{"a": 1, "b": 2}, {"a": 1, "b": 2}, {"a": 1}]}})),
            [r#"spec.pairs[1]: Duplicate value: {"a":1,"b":2}"#]
        );
        assert_eq!(
            messages(json!({"spec": {"byName": {"x": ["q", "q"]}}})),
            [r#"spec.byName[x][1]: Duplicate value: "q""#]
        );
        assert_eq!(
            messages(json!({"spec": {"ports": ["text"]}})),
            [
                r#"spec.ports[0]: Invalid value: "text": must be an object for an array of list-type map"#
            ]
        );
    }

    #[test]
    fn distinct_items_and_other_lists_pass() {
        assert!(
            messages(json!({"spec": {"set": ["a", "b"], "atomic": ["a", "a"],
                                         "ports": [{"name": "a"}, {"name": "b"}]}}))
            .is_empty()
        );
        // Go tells an int64 from a float64 and from a string.
        assert!(messages(json!({"spec": {"set": [1, 1.5, "1"]}})).is_empty());
        assert!(messages(json!("not an object")).is_empty());
    }
}
