//! `WriteOptions`: the query options of create and update calls (`CreateOptions` and
//! `UpdateOptions`, which apimachinery defines with the same three fields).

use super::field_manager::validate_field_manager;
use super::query::write_pairs;
use super::{FieldValidation, OptionsError};

/// Options of a create or update call, sent as query parameters. client-go has two types with
/// these same fields, `metav1.CreateOptions` and `metav1.UpdateOptions`; here both names are
/// aliases of this one type.
///
/// ```
/// use kclient_core::options::{CreateOptions, FieldValidation};
///
/// let opts = CreateOptions::default()
///     .dry_run()
///     .field_manager("my-controller")
///     .field_validation(FieldValidation::Strict);
/// opts.validate().unwrap();
/// assert_eq!(
///     opts.query_pairs(),
///     [
///         ("dryRun", "All".to_string()),
///         ("fieldManager", "my-controller".to_string()),
///         ("fieldValidation", "Strict".to_string()),
///     ]
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// `dryRun=All`: run every stage of the request (admission, validation, defaulting) but do
    /// not persist the result. `All` is the only dry-run mode the API defines.
    pub dry_run: bool,
    /// `fieldManager`: the name recorded in `managedFields` for this change. At most 128 bytes
    /// of printable characters. Unset: the server derives one from the user agent.
    pub field_manager: Option<String>,
    /// `fieldValidation`: how unknown or duplicate fields are treated. Unset: the server's
    /// default (`Warn`).
    pub field_validation: Option<FieldValidation>,
}

impl WriteOptions {
    /// Sets `dryRun=All`.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
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

    /// The query parameters: `dryRun`, `fieldManager`, `fieldValidation`, each when set
    /// (an empty field manager counts as unset).
    pub fn query_pairs(&self) -> Vec<(&'static str, String)> {
        write_pairs(
            self.dry_run,
            None,
            self.field_manager.as_deref(),
            self.field_validation.map(FieldValidation::as_str),
        )
    }

    /// Checks the options as the server will: the field manager must be at most 128 bytes of
    /// printable characters.
    pub fn validate(&self) -> Result<(), OptionsError> {
        validate_field_manager(self.field_manager.as_deref())
    }
}

/// Options of a create call (client-go's `metav1.CreateOptions`).
pub type CreateOptions = WriteOptions;

/// Options of an update (replace, `PUT`) call, including status and scale updates (client-go's
/// `metav1.UpdateOptions`).
pub type UpdateOptions = WriteOptions;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sends_nothing() {
        assert!(CreateOptions::default().query_pairs().is_empty());
        assert_eq!(CreateOptions::default().validate(), Ok(()));
    }

    #[test]
    fn rejects_bad_field_manager() {
        let opts = CreateOptions::default().field_manager("a\u{0}");
        assert!(matches!(
            opts.validate(),
            Err(OptionsError::FieldManagerNotPrintable { position: 1, .. })
        ));
    }
}
