//! `GetOptions`: the query options of a get call.

use super::query::push_str;

/// Options of a get call (client-go's `metav1.GetOptions`).
///
/// ```
/// use kclient_core::options::GetOptions;
///
/// let opts = GetOptions::default().resource_version("0");
/// assert_eq!(opts.query_pairs(), [("resourceVersion", "0".to_string())]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GetOptions {
    /// `resourceVersion`: unset (or empty) reads the most recent version from storage; `"0"`
    /// accepts any version (typically served from the watch cache); a specific version asks
    /// for data at least that new.
    pub resource_version: Option<String>,
}

impl GetOptions {
    /// Sets `resourceVersion`.
    pub fn resource_version(mut self, resource_version: impl Into<String>) -> Self {
        self.resource_version = Some(resource_version.into());
        self
    }

    /// The query parameters of the get: `resourceVersion` when set and non-empty.
    pub fn query_pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = Vec::new();
        push_str(
            &mut pairs,
            "resourceVersion",
            self.resource_version.as_deref(),
        );
        pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omits_unset_and_empty_resource_version() {
        assert!(GetOptions::default().query_pairs().is_empty());
        assert!(GetOptions::default()
            .resource_version("")
            .query_pairs()
            .is_empty());
        assert_eq!(
            GetOptions::default().resource_version("123").query_pairs(),
            [("resourceVersion", "123".to_string())]
        );
    }
}
