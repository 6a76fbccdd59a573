//! The structural invariants of a CRD schema (apiextensions' `validateStructuralInvariants`):
//! types everywhere, `items` for arrays, `metadata` restricted at the root, and nothing in
//! `anyOf`/`allOf`/`oneOf`/`not` that describes rather than validates.

use kclient_core::FieldError;
use serde_json::{json, Map, Value};

use super::{flag, is_int_or_string_any_of, non_empty_array, obj, properties, str_of, Level};

/// apiextensions' `validateStructuralInvariants`.
pub(super) fn invariants(s: &Value, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
    let Some(m) = obj(s) else { return };
    invariants_of_children(m, lvl, path, errs);
    let int_or_string = flag(m, "x-kubernetes-int-or-string");
    let embedded = flag(m, "x-kubernetes-embedded-resource");
    let preserve = flag(m, "x-kubernetes-preserve-unknown-fields");
    if int_or_string && preserve {
        errs.push(FieldError::invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            &json!(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(FieldError::invalid(
            &format!("{path}.x-kubernetes-embedded-resource"),
            &json!(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    value_validation(
        m,
        is_int_or_string_any_of(m.get("anyOf")),
        all_of_skips_any_of(m),
        path,
        errs,
    );
    type_invariants(m, lvl, path, errs);
    resource_field_invariants(m, lvl, path, errs);
    let has_properties = m
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if embedded && !preserve && !has_properties {
        errs.push(FieldError::required(
            &format!("{path}.properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// The invariants of a node's `items`, `properties` and `additionalProperties` (an array
/// needs `items`; the root has no `additionalProperties`).
fn invariants_of_children(
    m: &Map<String, Value>,
    lvl: Level,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let items = m.get("items").filter(|i| i.is_object());
    if str_of(m, "type") == "array" && items.is_none() {
        errs.push(FieldError::required(
            &format!("{path}.items"),
            "must be specified",
        ));
    }
    if let Some(items) = items {
        invariants(items, Level::Item, &format!("{path}.items"), errs);
    }
    for (k, v) in properties(m) {
        invariants(v, Level::Field, &format!("{path}.properties[{k}]"), errs);
    }
    if let Some(additional) = m.get("additionalProperties") {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                &format!("{path}.additionalProperties"),
                "must not be used at the root",
            ));
        }
        if additional.is_object() {
            invariants(
                additional,
                Level::Field,
                &format!("{path}.additionalProperties"),
                errs,
            );
        }
    }
}

/// The rules on a node's `type`: set unless the node is int-or-string or preserves unknown
/// fields, `object` for an embedded resource and at the root.
fn type_invariants(m: &Map<String, Value>, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
    let ty = str_of(m, "type");
    let embedded = flag(m, "x-kubernetes-embedded-resource");
    if embedded && ty != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        if ty.is_empty() {
            errs.push(FieldError::required(&format!("{path}.type"), detail));
        } else {
            errs.push(FieldError::invalid(
                &format!("{path}.type"),
                &json!(ty),
                detail,
            ));
        }
    } else if ty.is_empty()
        && !flag(m, "x-kubernetes-int-or-string")
        && !flag(m, "x-kubernetes-preserve-unknown-fields")
    {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(&format!("{path}.type"), detail));
    }
    if embedded && m.contains_key("additionalProperties") {
        errs.push(FieldError::forbidden(
            &format!("{path}.additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(FieldError::invalid(
            &format!("{path}.type"),
            &json!(ty),
            "must be object at the root",
        ));
    }
}

/// The rules on `kind`, `apiVersion` and `metadata` of a resource (the root or an embedded
/// resource).
fn resource_field_invariants(
    m: &Map<String, Value>,
    lvl: Level,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let check_metadata = lvl == Level::Root || flag(m, "x-kubernetes-embedded-resource");
    let props = m.get("properties").and_then(Value::as_object);
    if check_metadata {
        for k in ["kind", "apiVersion"] {
            if let Some(p) = props.and_then(|p| p.get(k)) {
                let t = p.get("type").and_then(Value::as_str).unwrap_or("");
                if t != "string" {
                    errs.push(FieldError::invalid(
                        &format!("{path}.properties[{k}].type"),
                        &json!(t),
                        "must be string",
                    ));
                }
            }
        }
    }
    if let Some(meta) = props.and_then(|p| p.get("metadata")) {
        metadata_invariants(
            meta,
            check_metadata,
            lvl,
            &format!("{path}.properties[metadata]"),
            errs,
        );
    }
}

fn all_of_skips_any_of(m: &Map<String, Value>) -> bool {
    m.get("allOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .is_some_and(|first| is_int_or_string_any_of(first.get("anyOf")))
}

fn metadata_invariants(s: &Value, check: bool, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
    let Some(m) = obj(s) else { return };
    let ty = str_of(m, "type");
    if check && ty != "object" {
        errs.push(FieldError::invalid(
            &format!("{path}.type"),
            &json!(ty),
            "must be object",
        ));
    }
    if lvl != Level::Root {
        return;
    }
    let only_names = m
        .get("properties")
        .and_then(Value::as_object)
        .is_none_or(|p| p.keys().all(|k| k == "name" || k == "generateName"));
    let other = m.keys().any(|k| {
        !matches!(
            k.as_str(),
            "type" | "default" | "properties" | "example" | "externalDocs" | "$schema"
        )
    });
    if other || !only_names {
        errs.push(FieldError::forbidden(
            path,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

/// `anyOf`, `allOf`, `oneOf`, `not` and `pattern` of a node.
fn value_validation(
    m: &Map<String, Value>,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let list = |k: &str| {
        m.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    if !skip_any_of {
        for (i, v) in list("anyOf").iter().enumerate() {
            nested(v, false, &format!("{path}.anyOf[{i}]"), errs);
        }
    }
    for (i, v) in list("allOf").iter().enumerate() {
        nested(
            v,
            skip_first_all_of_any_of && i == 0,
            &format!("{path}.allOf[{i}]"),
            errs,
        );
    }
    for (i, v) in list("oneOf").iter().enumerate() {
        nested(v, false, &format!("{path}.oneOf[{i}]"), errs);
    }
    if let Some(not) = m.get("not") {
        nested(not, false, &format!("{path}.not"), errs);
    }
    if let Some(pattern) = m
        .get("pattern")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    {
        if let Err(why) = crate::schema::structural::Pattern::new(pattern).compiled {
            errs.push(FieldError::invalid(
                &format!("{path}.pattern"),
                &json!(pattern),
                &format!(
                    "must be a valid regular expression, but isn't: error parsing regexp: {why}"
                ),
            ));
        }
    }
}

/// A schema inside `anyOf` & co.: it may only validate values, not describe them.
fn nested(v: &Value, skip_any_of: bool, path: &str, errs: &mut Vec<FieldError>) {
    let Some(m) = obj(v) else { return };
    value_validation(m, skip_any_of, false, path, errs);
    if let Some(items) = m.get("items") {
        nested(items, false, &format!("{path}.items"), errs);
    }
    for (k, p) in properties(m) {
        nested(p, false, &format!("{path}.properties[{k}]"), errs);
    }
    let forbid = |errs: &mut Vec<FieldError>, key: &str, detail: &str| {
        errs.push(FieldError::forbidden(&format!("{path}.{key}"), detail));
    };
    if !str_of(m, "type").is_empty() {
        forbid(errs, "type", "must be empty to be structural");
    }
    if m.contains_key("additionalProperties") {
        forbid(
            errs,
            "additionalProperties",
            "must be undefined to be structural",
        );
    }
    if m.get("default").is_some_and(|d| !d.is_null()) {
        forbid(errs, "default", "must be undefined to be structural");
    }
    if !str_of(m, "title").is_empty() {
        forbid(errs, "title", "must be empty to be structural");
    }
    if !str_of(m, "description").is_empty() {
        forbid(errs, "description", "must be empty to be structural");
    }
    if flag(m, "nullable") {
        forbid(errs, "nullable", "must be false to be structural");
    }
    for k in [
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if flag(m, k) {
            forbid(errs, k, "must be false to be structural");
        }
    }
    if non_empty_array(m, "x-kubernetes-list-map-keys") {
        forbid(
            errs,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    for k in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if m.get(k).is_some_and(|v| !v.is_null()) {
            forbid(errs, k, "must be undefined to be structural");
        }
    }
    if non_empty_array(m, "x-kubernetes-validations") {
        forbid(
            errs,
            "x-kubernetes-validations",
            "must be empty to be structural",
        );
    }
    if m.get("properties")
        .and_then(|p| p.get("metadata"))
        .is_some()
    {
        forbid(
            errs,
            "properties[metadata]",
            "must not be specified in a nested context",
        );
    }
}
