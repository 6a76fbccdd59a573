//! The fields one field manager applied, read back from an object's `managedFields`: client-go's
//! `Extract<Kind>` / `Extract<Kind>From` / `Extract<Kind>Status` (on apimachinery's
//! `managedfields.ExtractInto`), for the extract / modify / apply workflow of server-side apply.
//!
//! A controller that applies its intent each time needs the intent it applied last, not the
//! whole object (applying the whole object would take ownership of every field in it). The
//! server records, per manager, the set of fields each apply owns (`fieldsV1`); extracting
//! keeps only those fields of the object, so that the result, changed and applied again
//! under the same manager, says exactly what that manager means.
//!
//! The result is JSON — what [`apply`](crate::Patch::Apply) sends — rather than a k8s-openapi
//! object: k8s-openapi's types write their required fields even when empty (a Pod's
//! `spec.containers`, a Deployment's `spec.selector`), and applying those would claim fields
//! the manager never set. client-go avoids this with apply configurations, whose every field
//! is optional; the JSON value is that here. Decode it into a type to read it
//! (`serde_json::from_value::<Pod>`), but apply the value.
//!
//! ```
//! use k8s_openapi::api::apps::v1::Deployment;
//! use kclient_core::extract::extract;
//! use serde_json::json;
//!
//! let deployment: Deployment = serde_json::from_value(json!({
//!     "metadata": {"name": "web", "namespace": "default", "managedFields": [
//!         {"manager": "deployer", "operation": "Apply", "fieldsType": "FieldsV1",
//!          "fieldsV1": {"f:spec": {"f:replicas": {}}}},
//!         {"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
//!          "fieldsV1": {"f:spec": {"f:paused": {}}}}
//!     ]},
//!     "spec": {"replicas": 3, "paused": true, "selector": {}, "template": {}}
//! })).unwrap();
//! let applied = extract(&deployment, "deployer").unwrap();
//! assert_eq!(applied, json!({
//!     "apiVersion": "apps/v1", "kind": "Deployment",
//!     "metadata": {"name": "web", "namespace": "default"},
//!     "spec": {"replicas": 3}
//! }));
//! ```

use serde::Serialize;
use serde_json::{Map, Value};

use crate::Resource;

/// Why the applied fields could not be extracted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    /// The object did not serialize to a JSON object.
    #[error("the object does not encode as a JSON object: {0}")]
    Encode(#[source] serde_json::Error),
    /// The manager's `fieldsV1` is not a field set (not an object, or an element key that
    /// is not the JSON it should be).
    #[error("the managedFields entry of {manager:?} is not a valid fieldsV1 set: {reason}")]
    FieldsV1 {
        /// The field manager.
        manager: String,
        /// What is wrong.
        reason: String,
    },
}

/// The fields `field_manager` applied to `object` (client-go's `Extract<Kind>`): its
/// `managedFields` entry with operation `Apply` and no subresource, as JSON, with the
/// object's `apiVersion`, `kind`, name and namespace. A manager with no such entry gives
/// just those four.
pub fn extract<K: Resource + Serialize>(
    object: &K,
    field_manager: &str,
) -> Result<Value, ExtractError> {
    extract_from(object, field_manager, "")
}

/// The fields `field_manager` applied to the `status` subresource of `object` (client-go's
/// `Extract<Kind>Status`).
pub fn extract_status<K: Resource + Serialize>(
    object: &K,
    field_manager: &str,
) -> Result<Value, ExtractError> {
    extract_from(object, field_manager, "status")
}

/// The fields `field_manager` applied to `object` through `subresource` (`""` for the object
/// itself; client-go's `Extract<Kind>From`), with the object's `apiVersion`, `kind`, name and
/// namespace.
pub fn extract_from<K: Resource + Serialize>(
    object: &K,
    field_manager: &str,
    subresource: &str,
) -> Result<Value, ExtractError> {
    let value = crate::json_value::to_value(object).map_err(ExtractError::Encode)?;
    let mut applied = match extract_into(&value, field_manager, subresource)? {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    for field in ["apiVersion", "kind"] {
        if let Some(v) = value.get(field) {
            applied.insert(field.to_owned(), v.clone());
        }
    }
    let meta = object.meta();
    let metadata = applied
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(metadata) = metadata {
        if let Some(name) = &meta.name {
            metadata.insert("name".to_owned(), Value::String(name.clone()));
        }
        if let Some(namespace) = &meta.namespace {
            metadata.insert("namespace".to_owned(), Value::String(namespace.clone()));
        }
    }
    Ok(Value::Object(applied))
}

/// The fields of `object` (an object's JSON) that `field_manager` applied through
/// `subresource` (apimachinery's `managedfields.ExtractInto`): only what its `fieldsV1` set
/// names, and nothing else (an empty object when the manager has no such entry).
pub fn extract_into(
    object: &Value,
    field_manager: &str,
    subresource: &str,
) -> Result<Value, ExtractError> {
    let Some(fields) = applied_fields(object, field_manager, subresource) else {
        return Ok(Value::Object(Map::new()));
    };
    let set = fields.as_object().ok_or_else(|| ExtractError::FieldsV1 {
        manager: field_manager.to_owned(),
        reason: "not a JSON object".to_owned(),
    })?;
    select(object, set).map_err(|reason| ExtractError::FieldsV1 {
        manager: field_manager.to_owned(),
        reason,
    })
}

/// The `fieldsV1` of the manager's `Apply` entry for `subresource`, if the object has one.
fn applied_fields<'a>(
    object: &'a Value,
    field_manager: &str,
    subresource: &str,
) -> Option<&'a Value> {
    let entries = object.get("metadata")?.get("managedFields")?.as_array()?;
    entries
        .iter()
        .find(|entry| {
            let text = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or_default();
            text("manager") == field_manager
                && text("operation") == "Apply"
                && text("subresource") == subresource
        })?
        .get("fieldsV1")
}

/// What of `value` the field-set node `set` names: in an object, the fields `f:<name>`; in a
/// list, the elements `k:{key fields}` (an associative list), `v:<value>` (a set) or
/// `i:<index>`. A node with no children but `.` names the whole value.
fn select(value: &Value, set: &Map<String, Value>) -> Result<Value, String> {
    match value {
        Value::Object(fields) => {
            let mut selected = Map::new();
            for (key, child) in set {
                let Some(name) = key.strip_prefix("f:") else {
                    continue;
                };
                if let Some(field) = fields.get(name) {
                    selected.insert(name.to_owned(), select_child(field, key, child)?);
                }
            }
            Ok(Value::Object(selected))
        }
        Value::Array(elements) => {
            let mut selected = Vec::new();
            for (index, element) in elements.iter().enumerate() {
                for (key, child) in set {
                    if names_element(key, element, index)? {
                        selected.push(select_child(element, key, child)?);
                        break;
                    }
                }
            }
            Ok(Value::Array(selected))
        }
        scalar => Ok(scalar.clone()),
    }
}

/// `value` whole when `child` is a leaf of the set, else what `child` names of it.
fn select_child(value: &Value, key: &str, child: &Value) -> Result<Value, String> {
    let node = child
        .as_object()
        .ok_or_else(|| format!("{key} is not a JSON object"))?;
    if node.keys().all(|k| k == ".") {
        Ok(value.clone())
    } else {
        select(value, node)
    }
}

/// Whether the set's element key `key` names `element` (at `index` of its list).
fn names_element(key: &str, element: &Value, index: usize) -> Result<bool, String> {
    if let Some(fields) = key.strip_prefix("k:") {
        let fields: Map<String, Value> = serde_json::from_str(fields)
            .map_err(|e| format!("the element key {key} is not a JSON object: {e}"))?;
        return Ok(fields.iter().all(|(name, v)| element.get(name) == Some(v)));
    }
    if let Some(v) = key.strip_prefix("v:") {
        let v: Value =
            serde_json::from_str(v).map_err(|e| format!("the set value {key} is not JSON: {e}"))?;
        return Ok(*element == v);
    }
    if let Some(i) = key.strip_prefix("i:") {
        let i: usize = i
            .parse()
            .map_err(|e| format!("the index {key} is not a number: {e}"))?;
        return Ok(i == index);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(manager: &str, fields: Value, subresource: &str) -> Value {
        json!({"manager": manager, "operation": "Apply", "apiVersion": "v1",
               "fieldsType": "FieldsV1", "fieldsV1": fields, "subresource": subresource})
    }

    fn with_managed_fields(mut object: Value, entries: Vec<Value>) -> Value {
        object["metadata"] = json!({"managedFields": entries});
        object
    }

    /// apimachinery v0.37.1 `pkg/util/managedfields/extract_test.go`, `TestExtractInto`:
    /// its cases (the unstructured and structured forms are one form here, JSON).
    #[test]
    fn extract_into_follows_apimachinery() {
        let spec = |fields: Value| json!({"f:spec": fields});
        let cases = [
            (
                "no matching manager",
                json!({"spec": {"replicas": 1}}),
                vec![entry("mgr999", spec(json!({"f:replicas": {}})), "")],
                "mgr1",
                "",
                json!({}),
            ),
            (
                "one manager",
                json!({"spec": {"replicas": 1}}),
                vec![entry("mgr1", spec(json!({"f:replicas": {}})), "")],
                "mgr1",
                "",
                json!({"spec": {"replicas": 1}}),
            ),
            (
                "multiple manager",
                json!({"spec": {"replicas": 1, "paused": true}}),
                vec![
                    entry("mgr1", spec(json!({"f:replicas": {}})), ""),
                    entry("mgr2", spec(json!({"f:paused": {}})), ""),
                ],
                "mgr2",
                "",
                json!({"spec": {"paused": true}}),
            ),
            (
                "subresource",
                json!({"status": {"replicas": 1}}),
                vec![entry(
                    "mgr1",
                    json!({"f:status": {"f:replicas": {}}}),
                    "status",
                )],
                "mgr1",
                "status",
                json!({"status": {"replicas": 1}}),
            ),
        ];
        for (name, object, entries, manager, subresource, expected) in cases {
            let object = with_managed_fields(object, entries);
            let got = extract_into(&object, manager, subresource).unwrap();
            assert_eq!(got, expected, "{name}");
        }
    }

    #[test]
    fn an_update_entry_or_another_subresource_is_not_the_managers_apply() {
        let mut update = entry("mgr1", json!({"f:spec": {"f:replicas": {}}}), "");
        update["operation"] = json!("Update");
        let object = with_managed_fields(
            json!({"spec": {"replicas": 1}}),
            vec![
                update,
                entry("mgr1", json!({"f:spec": {"f:replicas": {}}}), "scale"),
            ],
        );
        assert_eq!(extract_into(&object, "mgr1", "").unwrap(), json!({}));
        assert_eq!(
            extract_into(&object, "mgr1", "scale").unwrap(),
            json!({"spec": {"replicas": 1}})
        );
    }

    /// Associative lists by their keys, sets by value, atomic lists and maps whole, `.` for a
    /// whole element: what kube-apiserver writes for a Deployment applied with two containers
    /// of which the manager owns one.
    #[test]
    fn list_elements_are_chosen_by_their_keys() {
        let object = with_managed_fields(
            json!({"spec": {"template": {"spec": {
                "containers": [
                    {"name": "web", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                    {"name": "sidecar", "image": "envoy"}
                ],
                "finalizers": ["a", "b"],
                "nodeSelector": {"disk": "ssd"}
            }}}}),
            vec![entry(
                "mgr1",
                json!({"f:spec": {"f:template": {"f:spec": {
                    "f:containers": {"k:{\"name\":\"web\"}": {
                        ".": {}, "f:name": {}, "f:image": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                    }},
                    "f:finalizers": {"v:\"b\"": {}},
                    "f:nodeSelector": {}
                }}}}),
                "",
            )],
        );
        let got = extract_into(&object, "mgr1", "").unwrap();
        assert_eq!(
            got,
            json!({"spec": {"template": {"spec": {
                "containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]}],
                "finalizers": ["b"],
                "nodeSelector": {"disk": "ssd"}
            }}}})
        );
    }

    #[test]
    fn a_field_the_object_no_longer_has_is_left_out() {
        let object = with_managed_fields(
            json!({"spec": {}}),
            vec![entry(
                "mgr1",
                json!({"f:spec": {"f:replicas": {}}, "f:data": {}}),
                "",
            )],
        );
        assert_eq!(
            extract_into(&object, "mgr1", "").unwrap(),
            json!({"spec": {}})
        );
    }

    #[test]
    fn a_malformed_set_is_a_typed_error() {
        let object = with_managed_fields(
            json!({"spec": {"ports": [{"port": 1}]}}),
            vec![entry(
                "mgr1",
                json!({"f:spec": {"f:ports": {"k:{not json": {}}}}),
                "",
            )],
        );
        let err = extract_into(&object, "mgr1", "").unwrap_err();
        assert!(
            matches!(&err, ExtractError::FieldsV1 { manager, .. } if manager == "mgr1"),
            "{err}"
        );
        let object = with_managed_fields(json!({}), vec![entry("mgr1", json!([1]), "")]);
        assert!(extract_into(&object, "mgr1", "").is_err());
    }

    /// client-go's generated `ExtractPod` / `ExtractPodStatus` (applyconfigurations/core/v1
    /// pod.go): the applied fields plus the name, namespace, kind and apiVersion.
    #[test]
    fn extract_adds_the_type_and_the_name() {
        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "1", "b": "2"},
                         "managedFields": [
                entry("mgr1", json!({"f:metadata": {"f:labels": {"f:a": {}}}}), ""),
                entry("mgr1", json!({"f:status": {"f:phase": {}}}), "status")
            ]},
            "spec": {"containers": [{"name": "c"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1"}
        }))
        .unwrap();
        assert_eq!(
            extract(&pod, "mgr1").unwrap(),
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "1"}}})
        );
        assert_eq!(
            extract_status(&pod, "mgr1").unwrap(),
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "p", "namespace": "ns"},
                   "status": {"phase": "Running"}})
        );
        assert_eq!(
            extract(&pod, "nobody").unwrap(),
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "p", "namespace": "ns"}})
        );
    }
}
