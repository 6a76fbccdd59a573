//! Custom resources against their CRD's `openAPIV3Schema`: pruning, defaulting and
//! validation, as apiextensions-apiserver does them, with the same messages and causes.
//!
//! A write of a custom resource goes through:
//!
//! 1. [`decode`] of the request body (or of the patched object), in the request's version:
//!    the unknown fields of `metadata` (root and embedded) are dropped, the fields the
//!    schema does not specify are [pruned](prune), `null`s the schema does not allow are
//!    dropped, and [defaults](defaulting) are applied. The dropped paths are returned: the
//!    server warns about them, or refuses them with `fieldValidation=Strict`.
//! 2. The registry's strategy (status reset, generation, ...).
//! 3. [`validate_create`], [`validate_update`] (ratcheting: errors in unchanged parts of
//!    the object are not reported) or [`validate_status_update`] (`status` only):
//!    [value validation](validation), [embedded resources](embedded) and
//!    [list types](list_type).
//! 4. [`default`] again, as the server's storage round trip does; an object written in a
//!    version other than the storage version is [converted](convert) to it (pruned by the
//!    storage version's schema) and defaulted by that schema, and reading it in another
//!    version prunes it by that version's schema, as the `None` conversion strategy does.
//!
//! CRDs themselves are [checked](crd_checks) for structural schemas. Server-side apply
//! first refuses [undeclared fields](apply) as structured-merge-diff does.
//!
//! Not implemented: CEL rules (`x-kubernetes-validations`) are not evaluated; when a
//! schema has some and the object has errors that would stop them, the server's
//! `some validation rules were not checked` error is added, as it is.

pub mod apply;
pub mod crd_checks;
pub mod defaulting;
pub mod embedded;
mod field_path;
pub mod formats;
pub mod list_type;
pub mod prune;
pub mod scale;
pub mod structural;
pub mod validation;

use kclient_core::FieldError;
use serde_json::Value;

pub use structural::Schema;
use validation::Root;

/// What the server does to a custom resource when it decodes it (see the module
/// documentation); returns the paths of the fields it dropped, in the server's order.
pub fn decode(schema: &Schema, obj: &mut Value) -> Vec<String> {
    let mut unknown = embedded::coerce_root_metadata(obj);
    unknown.extend(prune::prune(obj, schema));
    prune::drop_non_nullable_nulls(obj, Some(schema));
    unknown.extend(embedded::coerce(obj, schema));
    defaulting::apply(obj, schema);
    unknown
}

/// Applies the schema's defaults.
pub fn default(schema: &Schema, obj: &mut Value) {
    defaulting::apply(obj, schema);
    go_numbers(obj);
}

/// Numbers as a Go server holds an unstructured object's: a number with no fraction is an
/// integer (`1.0` is read as `float64(1)`, and Go writes it back as `1`), the others
/// `float64`. Applied to custom objects as they are read and after defaulting (a CRD's
/// `default: 0.0` is stored as `0`).
pub fn go_numbers(v: &mut Value) {
    match v {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64() {
                // Integral and within i64: Go prints it without a fraction.
                if f.fract() == 0.0 && f.abs() < 9.2e18 {
                    *v = Value::from(f as i64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(go_numbers),
        Value::Object(map) => map.values_mut().for_each(go_numbers),
        _ => {}
    }
}

/// What converting an object to another version does to it with the `None` strategy:
/// besides its `apiVersion`, it is pruned by the target version's schema (without
/// defaulting).
pub fn convert(schema: &Schema, obj: &mut Value) {
    prune::prune(obj, schema);
    prune::drop_non_nullable_nulls(obj, Some(schema));
    embedded::coerce(obj, schema);
}

/// The errors that keep CEL rules from running (`hasBlockingErr`).
fn cel_blocked(schema: &Schema, errs: &mut Vec<FieldError>) {
    let blocking = errs.iter().any(|e| {
        matches!(
            e.cause_type,
            "FieldValueNotSupported"
                | "FieldValueRequired"
                | "FieldValueTooLong"
                | "FieldValueTooMany"
                | "FieldValueTypeInvalid"
        )
    });
    if blocking && schema.has_rules_anywhere() {
        errs.push(FieldError::invalid(
            "<nil>",
            &Value::Null,
            "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ));
    }
}

/// Validation of a new object.
pub fn validate_create(schema: &Schema, obj: &Value) -> Vec<FieldError> {
    let mut errs = validation::validate(schema, obj, None, Root(None));
    errs.extend(embedded::validate(obj, schema));
    errs.extend(list_type::validate(schema, obj));
    cel_blocked(schema, &mut errs);
    errs
}

/// Validation of an update of the main resource, ratcheting against `old`.
pub fn validate_update(schema: &Schema, new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = validation::validate(schema, new, Some(old), Root(None));
    errs.extend(embedded::validate(new, schema));
    if list_type::validate(schema, old).is_empty() {
        errs.extend(list_type::validate(schema, new));
    }
    cel_blocked(schema, &mut errs);
    errs
}

/// Validation of an update of the `status` subresource: `status` against the schema of
/// the `status` property.
pub fn validate_status_update(schema: &Schema, new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let (Some(status), Some(status_schema)) =
        (new.get("status"), schema.properties.get("status"))
    {
        errs.extend(validation::validate(
            status_schema,
            status,
            old.get("status"),
            Root(Some("status")),
        ));
    }
    let lists = list_type::validate(schema, new);
    if !lists.is_empty() && list_type::validate(schema, old).is_empty() {
        errs.extend(lists);
    }
    cel_blocked(schema, &mut errs);
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_entry_point_takes_any_schema_and_any_object() {
        let schemas = [
            json!(null),
            json!({"type": "object"}),
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            json!({"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true}}),
            json!({"type": "object", "properties": {
                "spec": {"type": "object", "default": {"a": 1}, "nullable": true,
                         "additionalProperties": true, "required": ["x"],
                         "properties": {"l": {"type": "array", "x-kubernetes-list-type": "map",
                                              "x-kubernetes-list-map-keys": [], "items": {}}}},
                "status": {"type": "string", "enum": [], "pattern": "(["}}}),
            json!({"type": "object", "properties": {"metadata": {"type": "object",
                "properties": {"name": {"type": "string", "maxLength": 3}}}}}),
        ];
        let objects = [
            json!(null),
            json!([]),
            json!("x"),
            json!({"metadata": "not an object", "spec": [1], "status": {"a": null}}),
            json!({"metadata": {"name": "long-name", "junk": 1}, "spec": {"l": [null, 1, {"k": []}]},
                   "status": "x"}),
            json!({"apiVersion": 5, "kind": null, "spec": null}),
        ];
        for s in &schemas {
            let schema = Schema::from_json(s);
            let crd =
                json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": s}}]}});
            let _ = crd_checks::validate(&crd);
            for o in &objects {
                let mut decoded = o.clone();
                let _ = decode(&schema, &mut decoded);
                let _ = validate_create(&schema, &decoded);
                for old in &objects {
                    let _ = validate_update(&schema, &decoded, old);
                    let _ = validate_status_update(&schema, &decoded, old);
                }
                let mut converted = o.clone();
                convert(&schema, &mut converted);
                default(&schema, &mut converted);
                let _ = apply::undeclared_fields(&schema, o);
            }
        }
    }

    #[test]
    fn decoding_reports_what_it_dropped_in_the_servers_order() {
        let schema = Schema::from_json(&json!({"type": "object", "properties": {"spec": {
            "type": "object", "properties": {
                "a": {"type": "string", "default": "x"},
                "emb": {"type": "object", "x-kubernetes-embedded-resource": true,
                        "x-kubernetes-preserve-unknown-fields": true}}}}}));
        let mut obj = json!({"metadata": {"name": "n", "zz": 1}, "spec": {"b": 1, "a": null,
            "emb": {"metadata": {"junk": 1}, "free": 1}}, "extra": true});
        assert_eq!(
            decode(&schema, &mut obj),
            ["metadata.zz", "extra", "spec.b", "spec.emb.metadata.junk"]
        );
        assert_eq!(
            obj,
            json!({"metadata": {"name": "n"}, "spec": {"a": "x", "emb": {"metadata": {}, "free": 1}}})
        );
    }
}
