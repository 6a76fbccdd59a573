//! `metadata` of custom resources and of `x-kubernetes-embedded-resource` objects, as
//! apiextensions-apiserver's `schema/objectmeta` package treats it.
//!
//! - [`coerce_root_metadata`] and [`coerce`]: `metadata` is decoded as an `ObjectMeta`, so
//!   its unknown fields are dropped (`metadata.junk`, `spec.template.metadata.junk`; nested
//!   fields inside known ones are kept).
//! - [`validate`]: an embedded resource needs a string `apiVersion` (a valid group/version)
//!   and `kind` (a DNS-1035 label, in any case), and its `metadata.name` must be a valid
//!   path segment and its `metadata.namespace` a DNS label. Labels, annotations, owner
//!   references and finalizers of embedded objects are not checked.

use kclient_core::FieldError;
use serde_json::{Map, Value};

use super::field_path::{child, key};
use super::structural::Schema;

/// The JSON fields of `ObjectMeta`.
pub const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Drops the fields `ObjectMeta` does not have from `obj.metadata`; returns their paths,
/// sorted, below `prefix` (`None` at the root).
fn coerce_metadata(obj: &mut Map<String, Value>, prefix: Option<&str>) -> Vec<String> {
    let Some(Value::Object(meta)) = obj.get_mut("metadata") else {
        return Vec::new();
    };
    let mut dropped: Vec<String> = meta
        .keys()
        .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
        .cloned()
        .collect();
    dropped.sort();
    for k in &dropped {
        meta.remove(k);
    }
    dropped
        .into_iter()
        .map(|k| match prefix {
            Some(p) => format!("{p}.metadata.{k}"),
            None => format!("metadata.{k}"),
        })
        .collect()
}

/// The root object's `metadata`, decoded as an `ObjectMeta`: returns the dropped paths.
pub fn coerce_root_metadata(obj: &mut Value) -> Vec<String> {
    match obj.as_object_mut() {
        Some(map) => coerce_metadata(map, None),
        None => Vec::new(),
    }
}

/// The `metadata` of every embedded resource below the root, decoded as an `ObjectMeta`:
/// returns the dropped paths, sorted.
pub fn coerce(obj: &mut Value, s: &Schema) -> Vec<String> {
    let mut paths = Vec::new();
    coerce_node(None, obj, s, &mut paths);
    paths.sort();
    paths
}

fn coerce_node(path: Option<&str>, x: &mut Value, s: &Schema, paths: &mut Vec<String>) {
    match x {
        Value::Object(map) => {
            if s.embedded_resource {
                paths.extend(coerce_metadata(map, path));
            }
            for (k, v) in map.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    coerce_node(Some(&child(path, k)), v, prop, paths);
                } else if let Some(a) = s.additional_schema() {
                    coerce_node(Some(&key(path, k)), v, a, paths);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items.as_deref() {
                for (i, v) in items.iter_mut().enumerate() {
                    let p = format!("{}[{i}]", path.unwrap_or(""));
                    coerce_node(Some(&p), v, item_schema, paths);
                }
            }
        }
        _ => {}
    }
}

/// Checks every embedded resource below the root of `obj`.
pub fn validate(obj: &Value, s: &Schema) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_node(None, obj, s, &mut errs);
    errs
}

fn validate_node(path: Option<&str>, x: &Value, s: &Schema, errs: &mut Vec<FieldError>) {
    match x {
        Value::Object(map) => {
            if s.embedded_resource {
                validate_embedded(path, map, errs);
            }
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for k in keys {
                let Some(v) = map.get(k.as_str()) else {
                    continue;
                };
                if let Some(prop) = s.properties.get(k.as_str()) {
                    validate_node(Some(&child(path, k)), v, prop, errs);
                } else if let Some(a) = s.additional_schema() {
                    validate_node(Some(&key(path, k)), v, a, errs);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items.as_deref() {
                for (i, v) in items.iter().enumerate() {
                    let p = format!("{}[{i}]", path.unwrap_or(""));
                    validate_node(Some(&p), v, item_schema, errs);
                }
            }
        }
        _ => {}
    }
}

const DNS1035_MESSAGE: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// apimachinery's `IsDNS1035Label`.
fn dns1035_errors(s: &str) -> Vec<&'static str> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters");
    }
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if !ok {
        errs.push(DNS1035_MESSAGE);
    }
    errs
}

/// apimachinery's `IsPathSegmentName`.
fn path_segment_errors(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(**bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

fn validate_embedded(path: Option<&str>, map: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    let field = |name: &str| child(path, name);
    if !map.contains_key("apiVersion") {
        errs.push(FieldError::required(&field("apiVersion"), ""));
    }
    if !map.contains_key("kind") {
        errs.push(FieldError::required(&field("kind"), ""));
    }
    if let Some(v) = map.get("apiVersion") {
        match v.as_str() {
            None => errs.push(FieldError::invalid(
                &field("apiVersion"),
                v,
                "must be a string",
            )),
            Some("") => errs.push(FieldError::invalid(
                &field("apiVersion"),
                v,
                "must not be empty",
            )),
            Some(av) if av != "/" && av.matches('/').count() > 1 => errs.push(FieldError::invalid(
                &field("apiVersion"),
                v,
                &format!("unexpected GroupVersion string: {av}"),
            )),
            Some(_) => {}
        }
    }
    if let Some(v) = map.get("kind") {
        match v.as_str() {
            None => errs.push(FieldError::invalid(&field("kind"), v, "must be a string")),
            Some("") => errs.push(FieldError::invalid(&field("kind"), v, "must not be empty")),
            Some(kind) => {
                let problems = dns1035_errors(&kind.to_lowercase());
                if !problems.is_empty() {
                    errs.push(FieldError::invalid(
                        &field("kind"),
                        v,
                        &format!(
                            "may have mixed case, but should otherwise match: {}",
                            problems.join(",")
                        ),
                    ));
                }
            }
        }
    }
    if let Some(meta) = map.get("metadata") {
        validate_embedded_metadata(&field("metadata"), meta, errs);
    }
}

/// The `metadata` of an embedded resource (at `meta_path`): a map, with a valid name and
/// namespace if given.
fn validate_embedded_metadata(meta_path: &str, meta: &Value, errs: &mut Vec<FieldError>) {
    let Some(m) = meta.as_object() else {
        errs.push(FieldError::invalid(
            meta_path,
            meta,
            "expected map[string]interface{}",
        ));
        return;
    };
    if let Some(name) = m.get("name").and_then(Value::as_str) {
        for why in path_segment_errors(name) {
            errs.push(FieldError::invalid(
                &format!("{meta_path}.name"),
                &Value::String(name.into()),
                &why,
            ));
        }
    }
    if let Some(ns) = m
        .get("namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        if let Some(why) = crate::meta::dns_label_error(ns) {
            errs.push(FieldError::invalid(
                &format!("{meta_path}.namespace"),
                &Value::String(ns.into()),
                &why,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Schema {
        Schema::with_spec(json!({
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                         "x-kubernetes-preserve-unknown-fields": true},
            "byName": {"type": "object", "additionalProperties": {"type": "object",
                       "x-kubernetes-embedded-resource": true,
                       "x-kubernetes-preserve-unknown-fields": true}},
            "list": {"type": "array", "items": {"type": "object",
                     "x-kubernetes-embedded-resource": true,
                     "x-kubernetes-preserve-unknown-fields": true}}
        }))
    }

    #[test]
    fn metadata_keeps_object_meta_fields_only() {
        let mut obj = json!({"metadata": {"name": "x", "junk": 1, "labels": {"a": "b"}},
            "spec": {"template": {"apiVersion": "v1", "kind": "Pod",
                                  "metadata": {"name": "p", "extra": true}},
                     "byName": {"k": {"metadata": {"zz": 1}}},
                     "list": [{"metadata": {"aa": 1, "namespace": "n"}}]}});
        assert_eq!(coerce_root_metadata(&mut obj), ["metadata.junk"]);
        assert_eq!(
            coerce(&mut obj, &schema()),
            [
                "spec.byName[k].metadata.zz",
                "spec.list[0].metadata.aa",
                "spec.template.metadata.extra"
            ]
        );
        assert_eq!(obj["metadata"], json!({"name": "x", "labels": {"a": "b"}}));
        assert_eq!(obj["spec"]["template"]["metadata"], json!({"name": "p"}));
        assert_eq!(
            obj["spec"]["list"][0]["metadata"],
            json!({"namespace": "n"})
        );
    }

    #[test]
    fn embedded_resources_need_api_version_and_kind() {
        let full = |obj: Value| -> Vec<String> {
            validate(&obj, &schema())
                .iter()
                .map(FieldError::full)
                .collect()
        };
        assert_eq!(
            full(json!({"spec": {"template": {}}})),
            [
                "spec.template.apiVersion: Required value",
                "spec.template.kind: Required value"
            ]
        );
        assert!(full(
            json!({"spec": {"template": {"apiVersion": "apps/v1", "kind": "Deployment",
                                                   "metadata": {"name": "ok"}}}})
        )
        .is_empty());
        assert_eq!(
            full(json!({"spec": {"template": {"apiVersion": "a/b/c", "kind": "Bad_Kind",
                                              "metadata": {"name": "a/b", "namespace": "Bad"}}}})),
            [
                r#"spec.template.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#,
                format!(r#"spec.template.kind: Invalid value: "Bad_Kind": may have mixed case, but should otherwise match: {DNS1035_MESSAGE}"#).as_str(),
                r#"spec.template.metadata.name: Invalid value: "a/b": may not contain '/'"#,
                &format!(r#"spec.template.metadata.namespace: Invalid value: "Bad": {}"#, crate::meta::dns_label_error("Bad").unwrap()),
            ]
        );
        assert_eq!(
            full(
                json!({"spec": {"byName": {"x": {"apiVersion": 1, "kind": ""}},
                                 "list": [{"apiVersion": "v1", "kind": "K", "metadata": []}]}})
            ),
            [
                "spec.byName[x].apiVersion: Invalid value: 1: must be a string",
                r#"spec.byName[x].kind: Invalid value: "": must not be empty"#,
                "spec.list[0].metadata: Invalid value: []: expected map[string]interface{}",
            ]
        );
    }
}
