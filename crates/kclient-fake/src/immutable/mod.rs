//! What an update may not change of the common built-in kinds, refused as kube-apiserver's
//! validation refuses it (`k8s.io/kubernetes/pkg/apis/*/validation`, v1.37): `422 Invalid`
//! with its messages and causes, so that a test cannot pass against the fake server with a
//! write a cluster refuses.
//!
//! - Pods ([`pod`]): the spec beyond `containers[*].image`, `initContainers[*].image`,
//!   `activeDeadlineSeconds` (lowered only), `tolerations` (added only),
//!   `terminationGracePeriodSeconds` (to 1 from a negative value) and `schedulingGates`
//!   (removed only; while a pod is gated, `nodeSelector` and the required node affinity
//!   may also grow); no container added or removed.
//! - Services ([`service`]): `spec.clusterIPs` (and so `spec.clusterIP`) once set.
//! - Deployments, ReplicaSets, DaemonSets: `spec.selector`. StatefulSets: `spec.selector`,
//!   `volumeClaimTemplates`, `serviceName`, `podManagementPolicy` ([`workloads`]).
//! - Jobs ([`job`]): `spec.selector`, `completions` (of a non-indexed Job),
//!   `completionMode`, `podFailurePolicy`, `backoffLimitPerIndex`, `managedBy`,
//!   `successPolicy`, and the pod template (of a suspended Job that has not started, its
//!   scheduling directives, labels, annotations and container resources may change).
//! - ConfigMaps and Secrets ([`config`]) with `immutable: true`: `data`, `binaryData` and
//!   `immutable` itself; a Secret's `type` always.
//!
//! Values are compared as apimachinery's semantic equality compares the decoded objects,
//! approximated on their JSON: a `null`, an empty string, an empty list and an empty object
//! are the same as an absent field (Go's zero values, and the empty and nil slices and maps
//! `Semantic.DeepEqual` holds equal); numbers and booleans compare as they are.
//!
//! Where the wording cannot be the server's: an `Invalid value` of a pod template (a Job's)
//! is shown as the object's JSON, where kube-apiserver marshals its internal Go type (Go
//! field names, every zero value); the diff after `pod updates may not change fields other
//! than ...` is a unified diff of the JSON of the two pod specs (the server's diffs its
//! internal types). The first line of every message is the server's.

mod config;
mod diff;
mod job;
mod pod;
mod service;
mod workloads;

pub(crate) use service::{
    normalize_create as normalize_service_create, normalize_update as normalize_service_update,
};

use kclient_core::{ApiError, FieldError};
use serde_json::{Map, Value};

use crate::catalogue::ResourceInfo;
use crate::meta::meta_str;

/// `apimachinery`'s `FieldImmutableErrorMsg`.
const FIELD_IMMUTABLE: &str = "field is immutable";

/// Refuses an update of a built-in object that changes what its kind's validation forbids
/// changing (`old`: the stored object; `new`: the object about to be stored).
pub(crate) fn validate_update(
    info: &ResourceInfo,
    old: &Value,
    new: &Value,
) -> Result<(), ApiError> {
    if info.custom {
        return Ok(());
    }
    let errors = match (info.api.group.as_str(), info.kind()) {
        ("", "Pod") => pod::update(old, new),
        ("", "Service") => service::update(old, new),
        ("", "ConfigMap") => config::config_map_update(old, new),
        ("", "Secret") => config::secret_update(old, new),
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet") => workloads::selector_update(old, new),
        ("apps", "StatefulSet") => workloads::stateful_set_update(old, new),
        ("batch", "Job") => job::update(old, new),
        _ => Vec::new(),
    };
    if errors.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(
        &info.qualified_kind(),
        meta_str(old, "name"),
        errors,
    ))
}

/// The field at `path` (object keys), `None` when absent or `null`.
fn at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(obj, |v, key| v.get(*key))
        .filter(|v| !v.is_null())
}

/// `value` without what Go's zero values and semantic equality make the same as absent:
/// `null`, `""`, `[]` and `{}`, at every depth (`None` when `value` itself is one).
fn normalized(value: &Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(items) if items.is_empty() => None,
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .map(|i| normalized(i).unwrap_or(Value::Null))
                .collect(),
        )),
        Value::Object(map) => {
            let kept: Map<String, Value> = map
                .iter()
                .filter_map(|(k, v)| normalized(v).map(|v| (k.clone(), v)))
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other.clone()),
    }
}

/// Whether two fields are semantically equal (see the module documentation).
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    a.and_then(normalized) == b.and_then(normalized)
}

/// apimachinery's `ValidateImmutableField` of a pointer, slice, map or struct field:
/// `path: Invalid value: <new>: field is immutable` when the field changed (an absent value
/// shown as `null`).
fn immutable_field(path: &str, new: Option<&Value>, old: Option<&Value>) -> Option<FieldError> {
    (!same(new, old))
        .then(|| FieldError::invalid(path, new.unwrap_or(&Value::Null), FIELD_IMMUTABLE))
}

/// The same for a string field, whose absent value Go holds as `""`.
fn immutable_string(path: &str, new: Option<&Value>, old: Option<&Value>) -> Option<FieldError> {
    let empty = Value::String(String::new());
    immutable_field(path, Some(new.unwrap_or(&empty)), old)
}

/// Sets (or, for `None`, removes) `key` of the object `obj`.
fn put(obj: &mut Value, key: &str, value: Option<Value>) {
    if let Some(map) = obj.as_object_mut() {
        match value {
            Some(v) => map.insert(key.to_string(), v),
            None => map.remove(key),
        };
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn empty_values_are_the_same_as_absent_ones() {
        assert!(same(None, Some(&json!(null))));
        assert!(same(Some(&json!("")), None));
        assert!(same(Some(&json!({"a": [], "b": {}})), None));
        assert!(same(
            Some(&json!({"matchLabels": {"app": "web"}, "matchExpressions": []})),
            Some(&json!({"matchLabels": {"app": "web"}}))
        ));
        assert!(!same(Some(&json!(0)), None), "a number is kept");
        assert!(!same(Some(&json!(false)), None), "a boolean is kept");
        assert!(!same(
            Some(&json!({"matchLabels": {"app": "web"}})),
            Some(&json!({"matchLabels": {"app": "db"}}))
        ));
    }

    #[test]
    fn an_immutable_field_is_worded_as_apimachinery_words_it() {
        let err = immutable_field(
            "spec.selector",
            Some(&json!({"matchLabels": {"app": "web", "tier": "front"}})),
            Some(&json!({"matchLabels": {"app": "web"}})),
        )
        .unwrap();
        assert_eq!(
            err.full(),
            r#"spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"front"}}: field is immutable"#
        );
        assert_eq!(err.cause_type, "FieldValueInvalid");
        assert!(immutable_field("spec.x", Some(&json!([])), None).is_none());
        assert_eq!(
            immutable_field(
                "spec.selector",
                None,
                Some(&json!({"matchLabels": {"a": "b"}}))
            )
            .unwrap()
            .full(),
            "spec.selector: Invalid value: null: field is immutable"
        );
        assert_eq!(
            immutable_string("spec.serviceName", None, Some(&json!("web")))
                .unwrap()
                .full(),
            r#"spec.serviceName: Invalid value: "": field is immutable"#
        );
    }
}
