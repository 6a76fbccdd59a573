//! [`ApplyOptions`]: the options of server-side apply.

use kclient_core::{FieldValidation, PatchOptions};

/// Options of a server-side apply (client-go's `metav1.ApplyOptions`): the field manager is
/// required, so it is the constructor's argument.
///
/// ```
/// use kclient_typed::ApplyOptions;
///
/// let opts = ApplyOptions::new("my-controller").force();
/// assert_eq!(
///     opts.to_patch_options().query_pairs(),
///     [("force", "true".to_string()), ("fieldManager", "my-controller".to_string())]
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyOptions {
    /// The field manager that owns the applied fields (at most 128 printable bytes).
    pub field_manager: String,
    /// Take ownership of fields another manager owns instead of failing with
    /// `409 Conflict` (client-go's `Force: true`, what controllers usually want).
    pub force: bool,
    /// Run every stage but do not persist the result (`dryRun=All`).
    pub dry_run: bool,
    /// How unknown or duplicate fields are treated; the server's default when unset.
    pub field_validation: Option<FieldValidation>,
}

impl ApplyOptions {
    /// Options applying as `field_manager`, without force.
    pub fn new(field_manager: impl Into<String>) -> Self {
        Self {
            field_manager: field_manager.into(),
            force: false,
            dry_run: false,
            field_validation: None,
        }
    }

    /// Sets `force=true`: conflicts with other managers are resolved in this one's favour.
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }

    /// Sets `dryRun=All`.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// Sets `fieldValidation`.
    pub fn field_validation(mut self, validation: FieldValidation) -> Self {
        self.field_validation = Some(validation);
        self
    }

    /// The equivalent patch options (`force` is always sent, as client-go does).
    pub fn to_patch_options(&self) -> PatchOptions {
        let mut options = PatchOptions::apply(self.field_manager.clone()).force(self.force);
        options.dry_run = self.dry_run;
        options.field_validation = self.field_validation;
        options
    }
}
