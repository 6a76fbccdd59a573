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
pub mod formats;
pub mod list_type;
pub mod prune;
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
