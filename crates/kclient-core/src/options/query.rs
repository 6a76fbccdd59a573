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
pub(super) fn push_dry_run(pairs: &mut QueryPairs, dry_run: bool) {
    if dry_run {
        pairs.push(("dryRun", "All".to_string()));
    }
}
