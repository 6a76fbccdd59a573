//! The checks kube-apiserver makes of a CRD's schemas before it accepts the CRD, for the
//! mistakes people make: a `v1` CRD needs a structural `openAPIV3Schema` in every version.
//!
//! Checked, with the server's paths and messages (`spec.validation.openAPIV3Schema...` when
//! every version has the same schema, as the server's internal version hoists it,
//! `spec.versions[i].schema.openAPIV3Schema...` otherwise):
//!
//! - a schema in every version; `type: object` at the root, no `nullable` and no
//!   `additionalProperties` there; a type for every property and item (unless
//!   `x-kubernetes-int-or-string` or `x-kubernetes-preserve-unknown-fields`), a supported
//!   type name, `items` for arrays; `metadata` at the root with nothing but `name` and
//!   `generateName`; nothing that makes `anyOf`/`allOf`/`oneOf`/`not` non-structural;
//! - `uniqueItems: true`, `additionalProperties` beside `properties`, `patternProperties`,
//!   `$ref`, `definitions`, `dependencies`, `additionalItems`, `id`, `type: null`, a list of
//!   `items` schemas; invalid `pattern`s;
//! - `x-kubernetes-embedded-resource`, `x-kubernetes-int-or-string`,
//!   `x-kubernetes-preserve-unknown-fields: false`, `x-kubernetes-list-type`,
//!   `x-kubernetes-list-map-keys` (keys that are scalar, required or defaulted item
//!   properties) and `x-kubernetes-map-type` misuse;
//! - `default`s that have unknown fields or do not validate against their schema, and
//!   defaults in `metadata`, `apiVersion` or `kind` at the root.
//!
//! Not checked: CEL rules (`x-kubernetes-validations` compile errors and costs), the
//! restriction of root fields when the status subresource is enabled, that the properties
//! `anyOf` & co. mention are specified (structural completeness), and defaults inside
//! `metadata` of embedded resources.

mod invariants;
mod openapi;
#[cfg(test)]
mod tests;

use kclient_core::FieldError;
use serde_json::{json, Map, Value};

use super::structural::Schema;
use invariants::invariants;
use openapi::{openapi, Ctx};

const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The schema errors of a CRD (`crd` is the whole object).
pub fn validate(crd: &Value) -> Vec<FieldError> {
    let Some(versions) = crd.pointer("/spec/versions").and_then(Value::as_array) else {
        return Vec::new();
    };
    if versions.is_empty() {
        return Vec::new();
    }
    fn schema_of(v: &Value) -> Option<&Value> {
        v.pointer("/schema/openAPIV3Schema")
            .filter(|s| !s.is_null())
    }
    let first = schema_of(&versions[0]);
    let identical = first.is_some() && versions.iter().all(|v| schema_of(v) == first);
    if let (true, Some(schema)) = (identical, first) {
        return check_schema(schema, "spec.validation.openAPIV3Schema");
    }
    let mut errs = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let base = format!("spec.versions[{i}].schema.openAPIV3Schema");
        match schema_of(v) {
            None => errs.push(FieldError::required(&base, "")),
            Some(schema) => errs.extend(check_schema(schema, &base)),
        }
    }
    errs
}

fn check_schema(schema: &Value, base: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if schema.get("nullable") == Some(&Value::Bool(true)) {
        errs.push(FieldError::forbidden(
            &format!("{base}.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let mut structural = Vec::new();
    invariants(schema, Level::Root, base, &mut structural);
    structural.sort_by_key(FieldError::full);
    if structural.is_empty() {
        defaults(schema, base, true, false, &mut errs);
    } else {
        errs.extend(structural);
    }
    openapi(schema, base, true, &Ctx::default(), &mut errs);
    errs
}

fn obj(v: &Value) -> Option<&Map<String, Value>> {
    v.as_object()
}

fn str_of<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or("")
}

fn flag(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn non_empty_array(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k)
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

fn properties(m: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut props: Vec<(&String, &Value)> = m
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().collect())
        .unwrap_or_default();
    props.sort_by(|a, b| a.0.cmp(b.0));
    props
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

fn is_int_or_string_any_of(any_of: Option<&Value>) -> bool {
    any_of == Some(&json!([{"type": "integer"}, {"type": "string"}]))
}

/// apiextensions' `ValidateDefaults`: each default is pruned (it must not lose anything)
/// and validated against its own schema. The root counts as an embedded resource.
fn defaults(s: &Value, path: &str, is_root: bool, inside_meta: bool, errs: &mut Vec<FieldError>) {
    let Some(m) = obj(s) else { return };
    let embedded = is_root || flag(m, "x-kubernetes-embedded-resource");
    let inside_meta = inside_meta && !embedded;
    if let Some(default) = m.get("default").filter(|d| !d.is_null()) {
        if !inside_meta {
            let schema = Schema::from_json(s);
            let mut pruned = default.clone();
            super::prune::prune_value(&mut pruned, &schema, embedded);
            let default_path = format!("{path}.default");
            if pruned != *default {
                errs.push(FieldError::invalid(
                    &default_path,
                    default,
                    "must not have unknown fields",
                ));
            }
            errs.extend(super::validation::validate(
                &schema,
                default,
                None,
                super::validation::Root(Some(&default_path)),
            ));
        }
    }
    if let Some(items) = m.get("items").filter(|i| i.is_object()) {
        defaults(items, &format!("{path}.items"), false, inside_meta, errs);
    }
    for (k, v) in properties(m) {
        let sub_meta = inside_meta || (embedded && META_FIELDS.contains(&k.as_str()));
        defaults(v, &format!("{path}.properties[{k}]"), false, sub_meta, errs);
    }
}
