//! [`TypeMeta`]: the `apiVersion` and `kind` fields every serialised object carries.

use serde::{Deserialize, Serialize};

use crate::gvk::{GroupVersionKind, GroupVersionParseError};

/// The `apiVersion` and `kind` of a serialised object or list.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct TypeMeta {
    /// The versioned schema of the object, such as `apps/v1`.
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// The kind of the object, such as `Deployment`.
    pub kind: String,
}

impl TypeMeta {
    /// Type information from its parts.
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            api_version: api_version.into(),
            kind: kind.into(),
        }
    }

    /// The group-version-kind these fields name.
    pub fn gvk(&self) -> Result<GroupVersionKind, GroupVersionParseError> {
        GroupVersionKind::from_api_version_kind(&self.api_version, self.kind.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_with_api_server_field_names() {
        let tm = TypeMeta::new("apps/v1", "Deployment");
        assert_eq!(
            serde_json::to_value(&tm).unwrap(),
            serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment"})
        );
        assert_eq!(
            tm.gvk().unwrap(),
            GroupVersionKind::new("apps", "v1", "Deployment")
        );
        assert!(TypeMeta::new("a/b/c", "X").gvk().is_err());
    }
}
