//! `PatchOptions`: the query options of a patch or apply call.

use serde::Serialize;

use super::field_manager::validate_field_manager;
use super::query::write_pairs;
use super::{FieldValidation, OptionsError};
use crate::patch::Patch;

/// Options of a patch call, server-side apply included (client-go's `metav1.PatchOptions`;
/// its `ApplyOptions` is [`PatchOptions::apply`]), sent as query parameters.
///
/// ```
/// use kclient_core::options::PatchOptions;
/// use kclient_core::patch::Patch;
/// use serde_json::json;
///
/// let patch = Patch::Apply(json!({
///     "apiVersion": "v1",
///     "kind": "ConfigMap",
///     "metadata": { "name": "settings" },
///     "data": { "mode": "fast" },
/// }));
/// let opts = PatchOptions::apply("my-controller").force(true);
/// opts.validate_for(&patch).unwrap();
/// assert_eq!(
///     opts.query_pairs(),
///     [
///         ("force", "true".to_string()),
///         ("fieldManager", "my-controller".to_string()),
///     ]
/// );
///
/// // Apply needs a field manager; force is for apply only.
/// assert!(PatchOptions::default().validate_for(&patch).is_err());
/// let merge = Patch::Merge(json!({ "data": { "mode": "slow" } }));
/// assert!(PatchOptions::default().force(false).validate_for(&merge).is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchOptions {
    /// `dryRun=All`: run every stage of the request but do not persist the result.
    pub dry_run: bool,
    /// `force` (apply only): take ownership of fields that conflict with other managers
    /// instead of failing with `409 Conflict`. Sent whenever it is `Some`, `false` included,
    /// and the server rejects it, `false` included, on any patch that is not an apply.
    pub force: Option<bool>,
    /// `fieldManager`: the name recorded in `managedFields`. Required for apply; at most 128
    /// bytes of printable characters.
    pub field_manager: Option<String>,
    /// `fieldValidation`: how unknown or duplicate fields are treated. Unset: the server's
    /// default (`Warn`).
    pub field_validation: Option<FieldValidation>,
}

impl PatchOptions {
    /// Options for server-side apply as `field_manager` (which apply requires).
    pub fn apply(field_manager: impl Into<String>) -> Self {
        PatchOptions::default().field_manager(field_manager)
    }

    /// Sets `dryRun=All`.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// Sets `force` (apply only).
    pub fn force(mut self, force: bool) -> Self {
        self.force = Some(force);
        self
    }

    /// Sets `fieldManager`.
    pub fn field_manager(mut self, field_manager: impl Into<String>) -> Self {
        self.field_manager = Some(field_manager.into());
        self
    }

    /// Sets `fieldValidation`.
    pub fn field_validation(mut self, field_validation: FieldValidation) -> Self {
        self.field_validation = Some(field_validation);
        self
    }

    /// The query parameters: `dryRun`, `force`, `fieldManager`, `fieldValidation`, each when
    /// set (an empty field manager counts as unset; `force` is sent as `true` or `false`).
    pub fn query_pairs(&self) -> Vec<(&'static str, String)> {
        write_pairs(
            self.dry_run,
            self.force,
            self.field_manager.as_deref(),
            self.field_validation.map(FieldValidation::as_str),
        )
    }

    /// Checks these options together with the patch they go with, as the server will: an
    /// apply patch requires a non-empty field manager; any other patch may not set `force`;
    /// the field manager must be at most 128 bytes of printable characters. Also checks the
    /// patch itself ([`Patch::validate`]: JSON pointers of a JSON patch).
    pub fn validate_for<T: Serialize>(&self, patch: &Patch<T>) -> Result<(), OptionsError> {
        if patch.is_apply() {
            if self.field_manager.as_deref().is_none_or(str::is_empty) {
                return Err(OptionsError::FieldManagerRequiredForApply);
            }
        } else if self.force.is_some() {
            return Err(OptionsError::ForceForNonApplyPatch {
                content_type: patch.content_type(),
            });
        }
        validate_field_manager(self.field_manager.as_deref())?;
        patch.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn apply_sets_the_field_manager_only() {
        let opts = PatchOptions::apply("mgr");
        assert_eq!(opts.field_manager.as_deref(), Some("mgr"));
        assert_eq!(opts.force, None);
        assert!(!opts.dry_run);
        assert_eq!(opts.query_pairs(), [("fieldManager", "mgr".to_string())]);
    }

    #[test]
    fn empty_field_manager_does_not_satisfy_apply() {
        let patch = Patch::Apply(json!({}));
        assert_eq!(
            PatchOptions::apply("").validate_for(&patch),
            Err(OptionsError::FieldManagerRequiredForApply)
        );
    }
}
