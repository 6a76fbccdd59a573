//! [`DynamicObject`]: an object of any kind, with typed metadata and every other field kept as
//! JSON, for resources not known at compile time (custom resources, generic tools).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::api_resource::ApiResource;
use crate::gvk::{GroupVersionKind, GroupVersionParseError};
use crate::resource::Resource;
use crate::type_meta::TypeMeta;

/// An object of any kind: `apiVersion` and `kind`, typed `metadata`, and the rest as JSON.
///
/// Round trips are lossless for everything outside `metadata`: fields kclient has never heard
/// of are kept in [`data`](Self::data) and written back as they came. Inside `metadata`, the
/// fields of `ObjectMeta` are kept (that is every field the API server sets).
///
/// ```
/// use kclient_core::{DynamicObject, ResourceExt};
///
/// let json = r#"{"apiVersion":"stable.example.com/v1","kind":"CronTab",
///     "metadata":{"name":"every-minute","namespace":"default"},
///     "spec":{"cronSpec":"* * * * *","image":"busybox"},"x-unknown":[1,2]}"#;
/// let obj: DynamicObject = serde_json::from_str(json).unwrap();
/// assert_eq!(obj.name_any(), "every-minute");
/// assert_eq!(obj.data["spec"]["image"], "busybox");
/// let back: serde_json::Value = serde_json::to_value(&obj).unwrap();
/// assert_eq!(back, serde_json::from_str::<serde_json::Value>(json).unwrap());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DynamicObject {
    /// `apiVersion` and `kind`, when the serialised form carried both as strings (items of a
    /// list often carry neither). Anything else (one without the other, a number, a `null`)
    /// stays in [`data`](Self::data) as it came, so that it is written back unchanged.
    #[serde(flatten)]
    pub types: Option<TypeMeta>,
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// Every other top-level field (`spec`, `status`, `data`, ...), as a JSON object.
    #[serde(flatten)]
    pub data: serde_json::Value,
}

/// Reads the object as a JSON map, takes `metadata`, and takes `apiVersion` and `kind` only
/// when both are strings; everything else is kept in `data`, so nothing is silently lost.
impl<'de> Deserialize<'de> for DynamicObject {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        use serde_json::Value;
        let mut map = serde_json::Map::<String, Value>::deserialize(deserializer)?;
        let metadata = match map.remove("metadata") {
            None | Some(Value::Null) => ObjectMeta::default(),
            Some(v) => serde_json::from_value(v)
                .map_err(|e| D::Error::custom(format_args!("metadata: {e}")))?,
        };
        let types = match (map.get("apiVersion"), map.get("kind")) {
            (Some(Value::String(api_version)), Some(Value::String(kind))) => {
                let types = TypeMeta::new(api_version.clone(), kind.clone());
                map.remove("apiVersion");
                map.remove("kind");
                Some(types)
            }
            _ => None,
        };
        Ok(Self {
            types,
            metadata,
            data: Value::Object(map),
        })
    }
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

impl Default for DynamicObject {
    fn default() -> Self {
        Self {
            types: None,
            metadata: ObjectMeta::default(),
            data: empty_object(),
        }
    }
}

impl DynamicObject {
    /// A new object of the resource's kind with the given name and no other fields.
    pub fn new(name: impl Into<String>, resource: &ApiResource) -> Self {
        Self {
            types: Some(TypeMeta::new(
                resource.api_version.clone(),
                resource.kind.clone(),
            )),
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            data: empty_object(),
        }
    }

    /// The same object placed in `namespace`.
    pub fn within(mut self, namespace: impl Into<String>) -> Self {
        self.metadata.namespace = Some(namespace.into());
        self
    }

    /// The same object with `data` replaced (`data` should be a JSON object).
    pub fn data(mut self, data: serde_json::Value) -> Self {
        self.data = data;
        self
    }

    /// The object's group-version-kind, if it carries type information.
    pub fn gvk(&self) -> Option<Result<GroupVersionKind, GroupVersionParseError>> {
        self.types.as_ref().map(TypeMeta::gvk)
    }

    /// Converts into a static type `K` (for example a k8s-openapi type) through JSON.
    ///
    /// Fails when the fields do not fit `K`, or when `apiVersion`/`kind` name another type.
    pub fn try_parse<K: serde::de::DeserializeOwned>(&self) -> Result<K, serde_json::Error> {
        // By way of the text, as K is read from every response (one Deserialize per type).
        serde_json::from_slice(&serde_json::to_vec(self)?)
    }

    /// Converts a static object (for example a k8s-openapi type) into a `DynamicObject`.
    pub fn from_typed<K: Serialize>(obj: &K) -> Result<Self, serde_json::Error> {
        // By way of the text, as K is written into every request (one Serialize per type).
        serde_json::from_slice(&serde_json::to_vec(obj)?)
    }
}

impl Resource for DynamicObject {
    type DynamicType = ApiResource;

    fn api_resource(dt: &ApiResource) -> ApiResource {
        dt.clone()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use super::*;
    use crate::resource::ResourceExt;

    #[test]
    fn keeps_unknown_fields_losslessly() {
        let input = json!({
            "apiVersion": "example.com/v1alpha1",
            "kind": "Widget",
            "metadata": {"name": "w", "labels": {"a": "b"}, "resourceVersion": "7"},
            "spec": {"nested": {"deep": [1, 2.5, null, true, {"k": "v"}]}},
            "status": {"phase": "Ready"},
            "zzz": "last"
        });
        let obj: DynamicObject = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(
            obj.types,
            Some(TypeMeta::new("example.com/v1alpha1", "Widget"))
        );
        assert_eq!(obj.resource_version(), Some("7"));
        assert_eq!(obj.gvk().unwrap().unwrap().group, "example.com");
        assert_eq!(serde_json::to_value(&obj).unwrap(), input);
    }

    #[test]
    fn list_items_without_type_information() {
        let obj: DynamicObject =
            serde_json::from_value(json!({"metadata": {"name": "x"}, "spec": {}})).unwrap();
        assert_eq!(obj.types, None);
        assert_eq!(obj.gvk(), None);
        assert_eq!(
            serde_json::to_value(&obj).unwrap(),
            json!({"metadata": {"name": "x"}, "spec": {}})
        );
    }

    #[test]
    fn missing_metadata_reads_as_empty() {
        let obj: DynamicObject =
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "X"})).unwrap();
        assert_eq!(obj.name_any(), "");
        assert_eq!(obj.data, json!({}));
    }

    #[test]
    fn rejects_non_objects_and_bad_metadata() {
        assert!(serde_json::from_value::<DynamicObject>(json!([1, 2])).is_err());
        assert!(serde_json::from_value::<DynamicObject>(json!("pod")).is_err());
        assert!(serde_json::from_value::<DynamicObject>(json!({"metadata": {"name": 5}})).is_err());
    }

    /// Issue 19, item 8: type fields that are not a pair of strings are kept, not dropped.
    #[test]
    fn odd_type_fields_round_trip_unchanged() {
        for json in [
            r#"{"apiVersion":"v1","metadata":{"name":"a"}}"#,
            r#"{"kind":"Pod","metadata":{"name":"a"}}"#,
            r#"{"apiVersion":5,"kind":"Pod","metadata":{"name":"a"}}"#,
            r#"{"apiVersion":"v1","kind":null,"metadata":{"name":"a"}}"#,
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{}}"#,
            r#"{"metadata":null,"x":1}"#,
        ] {
            let obj: DynamicObject = serde_json::from_str(json).unwrap();
            let back = serde_json::to_value(&obj).unwrap();
            let mut want: serde_json::Value = serde_json::from_str(json).unwrap();
            if want["metadata"].is_null() {
                want["metadata"] = serde_json::json!({});
            }
            assert_eq!(back, want, "{json}");
        }
        let partial: DynamicObject =
            serde_json::from_str(r#"{"apiVersion":"v1","metadata":{}}"#).unwrap();
        assert_eq!(partial.types, None);
        assert_eq!(partial.data["apiVersion"], "v1");
        assert!(serde_json::from_str::<DynamicObject>("[1]").is_err());
        assert!(serde_json::from_str::<DynamicObject>(r#"{"metadata":5}"#).is_err());
    }

    #[test]
    fn converts_to_and_from_static_types() {
        let pods = Pod::api_resource(&());
        let obj = DynamicObject::new("web", &pods)
            .within("prod")
            .data(json!({"spec": {"containers": [{"name": "c", "image": "nginx"}]}}));
        assert_eq!(obj.namespace(), Some("prod"));
        let pod: Pod = obj.try_parse().unwrap();
        assert_eq!(
            pod.spec.as_ref().unwrap().containers[0].image.as_deref(),
            Some("nginx")
        );
        let back = DynamicObject::from_typed(&pod).unwrap();
        assert_eq!(back.data["spec"]["containers"][0]["name"], "c");
        assert_eq!(back.types, Some(TypeMeta::new("v1", "Pod")));

        let wrong_kind = DynamicObject::new("x", &pods).data(json!({}));
        let mut wrong_kind = wrong_kind;
        wrong_kind.types = Some(TypeMeta::new("v1", "ConfigMap"));
        assert!(
            wrong_kind.try_parse::<Pod>().is_err(),
            "kind mismatch must not parse"
        );
    }
}
