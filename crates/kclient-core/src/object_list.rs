//! [`ObjectList`]: the response to a list request, with the list metadata a client needs to
//! page (`continue`) and to start a watch where the list ended (`resourceVersion`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use serde::{Deserialize, Deserializer, Serialize};

use crate::type_meta::TypeMeta;

/// A list of objects of one kind, as the API server returns it (`PodList`, `ConfigMapList`...).
///
/// `items: null`, which the API server sends for some empty lists, reads as an empty list.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kclient_core::ObjectList;
///
/// let json = r#"{"kind":"PodList","apiVersion":"v1",
///     "metadata":{"resourceVersion":"42","continue":"abc","remainingItemCount":3},
///     "items":[{"metadata":{"name":"a"}}]}"#;
/// let list: ObjectList<Pod> = serde_json::from_str(json).unwrap();
/// assert_eq!(list.resource_version(), Some("42"));
/// assert_eq!(list.continue_token(), Some("abc"));
/// assert_eq!(list.remaining_item_count(), Some(3));
/// assert_eq!(list.items.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound(deserialize = "K: Deserialize<'de>", serialize = "K: Serialize"))]
pub struct ObjectList<K> {
    /// `apiVersion` and `kind` of the list, when present.
    #[serde(flatten, default)]
    pub types: Option<TypeMeta>,
    /// List metadata: resourceVersion, continue token, remaining item count.
    #[serde(default)]
    pub metadata: ListMeta,
    /// The objects.
    #[serde(default = "Vec::new", deserialize_with = "null_as_empty")]
    pub items: Vec<K>,
}

fn null_as_empty<'de, D, K>(deserializer: D) -> Result<Vec<K>, D::Error>
where
    D: Deserializer<'de>,
    K: Deserialize<'de>,
{
    Ok(Option::<Vec<K>>::deserialize(deserializer)?.unwrap_or_default())
}

impl<K> Default for ObjectList<K> {
    fn default() -> Self {
        Self {
            types: None,
            metadata: ListMeta::default(),
            items: Vec::new(),
        }
    }
}

impl<K> ObjectList<K> {
    /// A list of `items` with the given resourceVersion.
    pub fn new(items: Vec<K>, resource_version: impl Into<String>) -> Self {
        Self {
            types: None,
            metadata: ListMeta {
                resource_version: Some(resource_version.into()),
                ..ListMeta::default()
            },
            items,
        }
    }

    /// The resourceVersion the list was served at: where a watch should start.
    pub fn resource_version(&self) -> Option<&str> {
        self.metadata
            .resource_version
            .as_deref()
            .filter(|rv| !rv.is_empty())
    }

    /// The token that fetches the next page, if there is one.
    pub fn continue_token(&self) -> Option<&str> {
        self.metadata.continue_.as_deref().filter(|c| !c.is_empty())
    }

    /// How many items remain after this page, when the server says.
    pub fn remaining_item_count(&self) -> Option<i64> {
        self.metadata.remaining_item_count
    }

    /// Iterates over the items.
    pub fn iter(&self) -> std::slice::Iter<'_, K> {
        self.items.iter()
    }
}

impl<K> IntoIterator for ObjectList<K> {
    type Item = K;
    type IntoIter = std::vec::IntoIter<K>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a, K> IntoIterator for &'a ObjectList<K> {
    type Item = &'a K;
    type IntoIter = std::slice::Iter<'a, K>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::*;
    use crate::dynamic_object::DynamicObject;

    #[test]
    fn null_and_missing_items_read_as_empty() {
        let l: ObjectList<ConfigMap> =
            serde_json::from_value(json!({"metadata": {"resourceVersion": "1"}, "items": null}))
                .unwrap();
        assert!(l.items.is_empty());
        let l: ObjectList<ConfigMap> = serde_json::from_value(json!({})).unwrap();
        assert!(l.items.is_empty());
        assert_eq!(l.resource_version(), None);
        assert_eq!(l.continue_token(), None);
    }

    #[test]
    fn empty_continue_means_last_page() {
        let l: ObjectList<DynamicObject> =
            serde_json::from_value(json!({"metadata": {"continue": ""}, "items": []})).unwrap();
        assert_eq!(l.continue_token(), None);
    }

    #[test]
    fn bad_items_are_errors() {
        let r: Result<ObjectList<ConfigMap>, _> =
            serde_json::from_value(json!({"items": [{"metadata": {"name": 1}}]}));
        assert!(r.is_err());
        let r: Result<ObjectList<ConfigMap>, _> = serde_json::from_value(json!({"items": {}}));
        assert!(r.is_err());
    }

    #[test]
    fn round_trips() {
        let l = ObjectList::new(vec![DynamicObject::default()], "9");
        let v = serde_json::to_value(&l).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "9");
        let back: ObjectList<DynamicObject> = serde_json::from_value(v).unwrap();
        assert_eq!(back, l);
        assert_eq!(back.into_iter().count(), 1);
    }
}
