//! The OpenAPI rules of a CRD schema (apiextensions'
//! `ValidateCustomResourceDefinitionOpenAPISchema`, without CEL): unsupported keywords,
//! forbidden defaults, and the `x-kubernetes-list-type`/`-map-type` extensions.

use kclient_core::FieldError;
use serde_json::{json, Map, Value};

use super::{flag, obj, properties, str_of, META_FIELDS, TYPES};

/// Where a node of the schema sits, for the rules that depend on it.
#[derive(Debug, Clone, Default)]
pub(super) struct Ctx {
    inside_meta: bool,
    forbid_defaults: Option<String>,
}

/// apiextensions' `ValidateCustomResourceDefinitionOpenAPISchema` (without CEL).
pub(super) fn openapi(s: &Value, path: &str, is_root: bool, ctx: &Ctx, errs: &mut Vec<FieldError>) {
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
