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

use kclient_core::FieldError;
use serde_json::{json, Map, Value};

use super::structural::Schema;

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

/// apiextensions' `validateStructuralInvariants`.
fn invariants(s: &Value, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
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
        if let Err(why) = super::structural::Pattern::new(pattern).compiled {
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

/// Where a node of the schema sits, for the rules that depend on it.
#[derive(Debug, Clone, Default)]
struct Ctx {
    inside_meta: bool,
    forbid_defaults: Option<String>,
}

/// apiextensions' `ValidateCustomResourceDefinitionOpenAPISchema` (without CEL).
fn openapi(s: &Value, path: &str, is_root: bool, ctx: &Ctx, errs: &mut Vec<FieldError>) {
    let Some(m) = obj(s) else { return };
    unsupported_keywords(m, path, ctx, errs);
    openapi_of_children(m, path, is_root, ctx, errs);
    if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(FieldError::invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            &json!(false),
            "must be true or undefined",
        ));
    }
    map_type_checks(m, path, errs);
    let list_type = m.get("x-kubernetes-list-type").and_then(Value::as_str);
    if let Some(lt) = list_type {
        list_type_checks(m, lt, path, errs);
    }
    let keys: Vec<&str> = m
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    list_map_keys_checks(m, list_type, &keys, path, errs);
    map_list_keys(m, list_type, &keys, path, errs);
}

/// What a CRD schema may not say at all: an unknown type, `type: null`, a forbidden
/// default, the JSON-schema keywords apiextensions does not support, a list of `items`
/// schemas, an embedded resource inside resource meta, `uniqueItems`.
fn unsupported_keywords(m: &Map<String, Value>, path: &str, ctx: &Ctx, errs: &mut Vec<FieldError>) {
    let at = |k: &str| format!("{path}.{k}");
    let ty = str_of(m, "type");
    if !ty.is_empty() && !TYPES.contains(&ty) {
        errs.push(FieldError::not_supported_value(
            &at("type"),
            &json!(ty),
            &TYPES,
        ));
    }
    if m.get("default").is_some_and(|d| !d.is_null()) {
        if let Some(why) = &ctx.forbid_defaults {
            errs.push(FieldError::forbidden(
                &at("default"),
                &format!("must not be set {why}"),
            ));
        }
    }
    for k in [
        "id",
        "additionalItems",
        "patternProperties",
        "definitions",
        "dependencies",
        "$ref",
    ] {
        let present = match m.get(k) {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Object(o)) => {
                !o.is_empty() || k == "additionalItems" || k == "dependencies"
            }
            Some(_) => true,
        };
        if present {
            errs.push(FieldError::forbidden(
                &at(k),
                &format!("{k} is not supported"),
            ));
        }
    }
    if ty == "null" {
        errs.push(FieldError::forbidden(
            &at("type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if m.get("items").is_some_and(Value::is_array) {
        errs.push(FieldError::forbidden(
            &at("items"),
            "items must be a schema object and not an array",
        ));
    }
    if ctx.inside_meta && flag(m, "x-kubernetes-embedded-resource") {
        errs.push(FieldError::forbidden(
            &at("x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
    if flag(m, "uniqueItems") {
        errs.push(FieldError::forbidden(
            &at("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
}

/// [`openapi`] of every schema inside a node (`additionalProperties`, `properties`, `not`,
/// `allOf`/`oneOf`/`anyOf`, `items`), each with the context it sits in.
fn openapi_of_children(
    m: &Map<String, Value>,
    path: &str,
    is_root: bool,
    ctx: &Ctx,
    errs: &mut Vec<FieldError>,
) {
    let at = |k: &str| format!("{path}.{k}");
    let has_properties = m
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if let Some(additional) = m.get("additionalProperties") {
        if has_properties && *additional != Value::Bool(true) {
            errs.push(FieldError::forbidden(
                &at("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if additional.is_object() {
            let sub = if ctx.inside_meta {
                Ctx {
                    forbid_defaults: Some(
                        "inside additionalProperties applying to object metadata".into(),
                    ),
                    ..ctx.clone()
                }
            } else {
                ctx.clone()
            };
            openapi(additional, &at("additionalProperties"), false, &sub, errs);
        }
    }
    let embedded = flag(m, "x-kubernetes-embedded-resource");
    for (k, v) in properties(m) {
        let mut sub = ctx.clone();
        if (is_root || embedded) && META_FIELDS.contains(&k.as_str()) {
            sub.inside_meta = true;
            if is_root {
                sub.forbid_defaults = Some(format!("in top-level {k}"));
            }
        }
        openapi(v, &format!("{path}.properties[{k}]"), false, &sub, errs);
    }
    if let Some(not) = m.get("not") {
        openapi(not, &at("not"), false, ctx, errs);
    }
    for k in ["allOf", "oneOf", "anyOf"] {
        for (i, v) in m
            .get(k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            openapi(v, &format!("{path}.{k}[{i}]"), false, ctx, errs);
        }
    }
    if let Some(items) = m.get("items").filter(|i| i.is_object()) {
        openapi(items, &at("items"), false, ctx, errs);
    }
}

/// `x-kubernetes-map-type`: on objects only, `atomic` or `granular`.
fn map_type_checks(m: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    let Some(map_type) = m.get("x-kubernetes-map-type").and_then(Value::as_str) else {
        return;
    };
    let at = |k: &str| format!("{path}.{k}");
    let ty = str_of(m, "type");
    let detail = "must be object if x-kubernetes-map-type is specified";
    if ty.is_empty() {
        errs.push(FieldError::required(&at("type"), detail));
    } else if ty != "object" {
        errs.push(FieldError::invalid(&at("type"), &json!(ty), detail));
    }
    if map_type != "atomic" && map_type != "granular" {
        errs.push(FieldError::not_supported_value(
            &at("x-kubernetes-map-type"),
            &json!(map_type),
            &["atomic", "granular"],
        ));
    }
}

/// `x-kubernetes-list-type` (`lt`): on arrays only, `atomic`, `set` or `map`, and a set's
/// items atomic.
fn list_type_checks(m: &Map<String, Value>, lt: &str, path: &str, errs: &mut Vec<FieldError>) {
    let at = |k: &str| format!("{path}.{k}");
    let ty = str_of(m, "type");
    if ty != "array" {
        let detail = "must be array if x-kubernetes-list-type is specified";
        if ty.is_empty() {
            errs.push(FieldError::required(&at("type"), detail));
        } else {
            errs.push(FieldError::invalid(&at("type"), &json!(ty), detail));
        }
    } else if lt == "set" {
        set_item_checks(m, path, errs);
    }
    if !matches!(lt, "atomic" | "set" | "map") {
        errs.push(FieldError::not_supported_value(
            &at("x-kubernetes-list-type"),
            &json!(lt),
            &["atomic", "set", "map"],
        ));
    }
}

/// The items of a `set` list must be atomic (a scalar, an atomic list or an atomic map).
fn set_item_checks(m: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    let Some(im) = m
        .get("items")
        .filter(|i| i.is_object())
        .and_then(Value::as_object)
    else {
        return;
    };
    let item_list_type = im.get("x-kubernetes-list-type").and_then(Value::as_str);
    match str_of(im, "type") {
        "array" if item_list_type.is_some_and(|t| t != "atomic") => {
            errs.push(FieldError::invalid(
                &format!("{path}.items.x-kubernetes-list-type"),
                &json!(item_list_type),
                "must be atomic as item of a list with x-kubernetes-list-type=set",
            ));
        }
        "object" if im.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic") => {
            errs.push(FieldError::invalid(
                &format!("{path}.items.x-kubernetes-map-type"),
                &json!(item_list_type),
                "must be atomic as item of a list with x-kubernetes-list-type=set",
            ));
        }
        _ => {}
    }
}

/// `x-kubernetes-list-map-keys` and `x-kubernetes-list-type: map` go together; a map list
/// has one object item schema whose keys are distinct scalar properties.
fn list_map_keys_checks(
    m: &Map<String, Value>,
    list_type: Option<&str>,
    keys: &[&str],
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let at = |k: &str| format!("{path}.{k}");
    if !keys.is_empty() {
        let detail = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => errs.push(FieldError::required(&at("x-kubernetes-list-type"), detail)),
            Some(lt) if lt != "map" => {
                errs.push(FieldError::invalid(
                    &at("x-kubernetes-list-type"),
                    &json!(lt),
                    detail,
                ));
            }
            _ => {}
        }
    }
    if list_type != Some("map") {
        return;
    }
    if keys.is_empty() {
        errs.push(FieldError::required(
            &at("x-kubernetes-list-map-keys"),
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    match m.get("items") {
        None => errs.push(FieldError::required(
            &at("items"),
            "must have a schema if x-kubernetes-list-type is map",
        )),
        Some(i @ Value::Array(_)) => errs.push(FieldError::invalid(
            &at("items"),
            i,
            "must only have a single schema if x-kubernetes-list-type is map",
        )),
        Some(_) => {}
    }
    if let Some(im) = m
        .get("items")
        .filter(|i| i.is_object())
        .and_then(Value::as_object)
    {
        map_item_key_checks(im, keys, path, errs);
    }
}

/// The item schema `im` of a map list: an object whose keys are distinct scalar properties.
fn map_item_key_checks(
    im: &Map<String, Value>,
    keys: &[&str],
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let item_type = str_of(im, "type");
    if item_type != "object" {
        errs.push(FieldError::invalid(
            &format!("{path}.items.type"),
            &json!(item_type),
            "must be object if parent array's x-kubernetes-list-type is map",
        ));
        return;
    }
    let keys_path = format!("{path}.x-kubernetes-list-map-keys");
    let props = im.get("properties").and_then(Value::as_object);
    let mut seen: Vec<&str> = Vec::new();
    for k in keys {
        match props.and_then(|p| p.get(*k)) {
            Some(p) => {
                let t = p.get("type").and_then(Value::as_str).unwrap_or("");
                if t == "array" || t == "object" {
                    errs.push(FieldError::invalid(
                        &format!("{path}.items.properties[{k}].type"),
                        &json!(item_type),
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    ));
                }
            }
            None => errs.push(FieldError::invalid(
                &keys_path,
                &json!(keys),
                "entries must all be names of item properties",
            )),
        }
        if seen.contains(k) {
            errs.push(FieldError::invalid(
                &keys_path,
                &json!(keys),
                "must not contain duplicate entries",
            ));
        }
        seen.push(k);
    }
}

/// Map-list keys must be required or defaulted and not nullable; set and map items must not
/// be nullable (`validateMapListKeysMapSet`).
fn map_list_keys(
    m: &Map<String, Value>,
    list_type: Option<&str>,
    keys: &[&str],
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let Some(im) = m.get("items").and_then(Value::as_object) else {
        return;
    };
    let Some(lt) = list_type.filter(|t| *t == "set" || *t == "map") else {
        return;
    };
    if flag(im, "nullable") {
        errs.push(FieldError::forbidden(
            &format!("{path}.items.nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt != "map" {
        return;
    }
    let required: Vec<&str> = im
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for k in keys {
        let Some(p) = im
            .get("properties")
            .and_then(|p| p.get(*k))
            .and_then(Value::as_object)
        else {
            continue;
        };
        if !required.contains(k) && p.get("default").is_none_or(Value::is_null) {
            errs.push(FieldError::required(
                &format!("{path}.items.properties[{k}].default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
        if flag(p, "nullable") {
            errs.push(FieldError::forbidden(
                &format!("{path}.items.properties[{k}].nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ));
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn crd_with(schema: Value) -> Value {
        json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}]}})
    }

    fn errors(schema: Value) -> Vec<String> {
        validate(&crd_with(schema))
            .iter()
            .map(FieldError::full)
            .collect()
    }

    const BASE: &str = "spec.validation.openAPIV3Schema";

    #[test]
    fn structural_rules_with_the_servers_messages() {
        // Each case was observed on kube-apiserver v1.37.
        assert_eq!(
            errors(json!({})),
            [format!(
                "{BASE}.type: Required value: must not be empty at the root"
            )]
        );
        assert_eq!(
            errors(json!({"type": "object", "properties": {"spec": {}}})),
            [format!("{BASE}.properties[spec].type: Required value: must not be empty for specified object fields")]
        );
        assert_eq!(
            errors(json!({"type": "string"})),
            [format!(
                r#"{BASE}.type: Invalid value: "string": must be object at the root"#
            )]
        );
        assert_eq!(
            errors(json!({"type": "object", "properties": {"spec": {"type": "object",
                "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}})),
            [format!("{BASE}.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive")]
        );
        assert_eq!(
            errors(json!({"type": "object", "properties": {"spec": {"type": "array"}}})),
            [format!(
                "{BASE}.properties[spec].items: Required value: must be specified"
            )]
        );
        assert_eq!(
            errors(
                json!({"type": "object", "properties": {"spec": {"type": "integer", "default": "x"}}})
            ),
            [format!(
                r#"{BASE}.properties[spec].default: Invalid value: "string":  in body must be of type integer: "string""#
            )]
        );
        assert_eq!(
            errors(
                json!({"type": "object", "properties": {"spec": {"type": "object",
                "default": {"a": 1}, "properties": {"b": {"type": "string"}}}}})
            ),
            [format!(
                r#"{BASE}.properties[spec].default: Invalid value: {{"a":1}}: must not have unknown fields"#
            )]
        );
        assert_eq!(
            errors(json!({"type": "object", "properties": {"metadata": {"type": "object",
                "properties": {"labels": {"type": "object"}}}}})),
            [format!("{BASE}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified")]
        );
        assert!(errors(
            json!({"type": "object", "properties": {"metadata": {"type": "object",
            "properties": {"name": {"type": "string", "maxLength": 10}}}}})
        )
        .is_empty());
        assert_eq!(
            errors(json!({"type": "object", "properties": {"spec": {"type": "array",
                "x-kubernetes-list-type": "map", "items": {"type": "object",
                "properties": {"a": {"type": "string"}}}}}})),
            [format!("{BASE}.properties[spec].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map")]
        );
        assert_eq!(
            errors(json!({"type": "object", "properties": {"spec": {"type": "string",
                "x-kubernetes-embedded-resource": true}}})),
            [
                format!("{BASE}.properties[spec].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"),
                format!(r#"{BASE}.properties[spec].type: Invalid value: "string": must be object if x-kubernetes-embedded-resource is true"#),
            ]
        );
        assert_eq!(
            errors(json!({"type": "object", "additionalProperties": {"type": "string"}})),
            [format!(
                "{BASE}.additionalProperties: Forbidden: must not be used at the root"
            )]
        );
        assert_eq!(
            errors(json!({"type": "object", "properties": {"spec": {"type": "strin"}}})),
            [format!(
                r#"{BASE}.properties[spec].type: Unsupported value: "strin": supported values: "array", "boolean", "integer", "number", "object", "string""#
            )]
        );
        assert_eq!(
            errors(json!({"type": "object", "properties": {"tags": {"type": "array",
                "uniqueItems": true, "items": {"type": "string"}}}})),
            [format!("{BASE}.properties[tags].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic")]
        );
        let bad_pattern = errors(
            json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "(["}}}),
        );
        assert_eq!(bad_pattern.len(), 1);
        assert!(bad_pattern[0].starts_with(&format!(
            r#"{BASE}.properties[s].pattern: Invalid value: "([": must be a valid regular expression, but isn't: error parsing regexp: "#
        )));
    }

    #[test]
    fn good_schemas_pass() {
        for good in [
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            json!({"type": "object", "properties": {
                "spec": {"type": "object", "required": ["size"], "properties": {
                    "size": {"type": "integer", "minimum": 1, "default": 1},
                    "ios": {"x-kubernetes-int-or-string": true,
                            "anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "either": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                               "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
                    "emb": {"type": "object", "x-kubernetes-embedded-resource": true,
                            "x-kubernetes-preserve-unknown-fields": true},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map",
                              "x-kubernetes-list-map-keys": ["name"],
                              "items": {"type": "object", "required": ["name"],
                                        "properties": {"name": {"type": "string"}}}},
                    "defobj": {"type": "object", "default": {"a": 1},
                               "properties": {"a": {"type": "integer"}}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                             "default": {"anything": true}}
                }},
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
            }}),
        ] {
            assert_eq!(errors(good.clone()), Vec::<String>::new(), "{good}");
        }
    }

    #[test]
    fn per_version_paths_and_missing_schemas() {
        let crd = json!({"spec": {"versions": [
            {"name": "v1", "schema": {"openAPIV3Schema": {"type": "object",
                "properties": {"spec": {"type": "array"}}}}},
            {"name": "v2", "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"a": {"type": "array"}, "b": {}}}}}}},
            {"name": "v3"}
        ]}});
        let got: Vec<String> = validate(&crd).iter().map(FieldError::full).collect();
        assert_eq!(
            got,
            [
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].items: Required value: must be specified",
                "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[a].items: Required value: must be specified",
                "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[b].type: Required value: must not be empty for specified object fields",
                "spec.versions[2].schema.openAPIV3Schema: Required value",
            ]
        );
    }

    #[test]
    fn nested_value_validations_must_stay_structural() {
        let got = errors(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "anyOf": [{"type": "object", "nullable": true, "properties": {"metadata": {}}}]}}}),
        );
        assert_eq!(
            got,
            [
                format!("{BASE}.properties[spec].anyOf[0].nullable: Forbidden: must be false to be structural"),
                format!("{BASE}.properties[spec].anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context"),
                format!("{BASE}.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural"),
            ]
        );
    }

    #[test]
    fn list_rules() {
        let got = errors(json!({"type": "object", "properties": {
            "a": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k", "z"],
                  "items": {"type": "object", "properties": {"k": {"type": "object"}}}},
            "b": {"type": "string", "x-kubernetes-list-type": "bag"}}}));
        assert_eq!(
            got,
            [
                format!(r#"{BASE}.properties[a].items.properties[k].type: Invalid value: "object": must be a scalar type if parent array's x-kubernetes-list-type is map"#),
                format!(r#"{BASE}.properties[a].x-kubernetes-list-map-keys: Invalid value: ["k","z"]: entries must all be names of item properties"#),
                format!("{BASE}.properties[a].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"),
                format!(r#"{BASE}.properties[b].type: Invalid value: "string": must be array if x-kubernetes-list-type is specified"#),
                format!(r#"{BASE}.properties[b].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map""#),
            ]
        );
    }

    #[test]
    fn junk_never_panics() {
        for junk in [
            json!(null),
            json!({"spec": {"versions": "x"}}),
            json!({"spec": {"versions": [null, 1, {"schema": 5}]}}),
        ] {
            let _ = validate(&junk);
        }
        let _ = errors(
            json!({"type": ["object"], "properties": [], "items": 1, "anyOf": {"a": 1},
                              "x-kubernetes-list-map-keys": "k", "x-kubernetes-list-type": 1}),
        );
    }
}
