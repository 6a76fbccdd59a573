//! Helpers that append query parameters the way apimachinery's query-parameter conversion
//! does: plain values are omitted when empty or false, pointer values are sent whenever set.

use super::QueryPairs;

/// Appends `name=value` unless the value is unset or empty (Go: `string` with `omitempty`).
pub(super) fn push_str(pairs: &mut QueryPairs, name: &'static str, value: Option<&str>) {
    if let Some(value) = value.filter(|value| !value.is_empty()) {
        pairs.push((name, value.to_string()));
    }
}

/// Appends `name=true` when set (Go: `bool` with `omitempty`).
pub(super) fn push_bool(pairs: &mut QueryPairs, name: &'static str, value: bool) {
    if value {
        pairs.push((name, "true".to_string()));
    }
}

/// Appends `name=true` or `name=false` whenever set (Go: `*bool`).
pub(super) fn push_opt_bool(pairs: &mut QueryPairs, name: &'static str, value: Option<bool>) {
    if let Some(value) = value {
        pairs.push((name, value.to_string()));
    }
}

/// Appends `name=<decimal>` whenever set, zero included (Go: `*int64`).
pub(super) fn push_opt_i64(pairs: &mut QueryPairs, name: &'static str, value: Option<i64>) {
    if let Some(value) = value {
        pairs.push((name, value.to_string()));
    }
}

/// Appends `dryRun=All` when set (Go: `[]string` holding `metav1.DryRunAll`).
fn push_dry_run(pairs: &mut QueryPairs, dry_run: bool) {
    if dry_run {
        pairs.push(("dryRun", "All".to_string()));
    }
}

/// The query of a write (create, update, patch): `dryRun`, `force` (patch only),
/// `fieldManager` and `fieldValidation`, in that order, each when set (an empty field
/// manager counts as unset; `field_validation` is [`FieldValidation::as_str`]'s).
///
/// [`FieldValidation::as_str`]: super::FieldValidation::as_str
pub(super) fn write_pairs(
    dry_run: bool,
    force: Option<bool>,
    field_manager: Option<&str>,
    field_validation: Option<&str>,
) -> QueryPairs {
    let mut pairs = Vec::new();
    push_dry_run(&mut pairs, dry_run);
    push_opt_bool(&mut pairs, "force", force);
    push_str(&mut pairs, "fieldManager", field_manager);
    push_str(&mut pairs, "fieldValidation", field_validation);
    pairs
}
