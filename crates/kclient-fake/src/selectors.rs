//! Label and field selectors applied to stored objects, with the per-type selectable fields
//! of kube-apiserver (pods `spec.nodeName`, events `involvedObject.*`, secrets `type`, …).
//!
//! Parsing is [`kclient_core::labels`] and [`kclient_core::fields`]; this module decides which
//! fields a resource supports (an unknown field is a `400 BadRequest`, worded as kube-apiserver
//! 1.37 words it: `field label not supported: spec.foo` for built-in types with selectable
//! fields of their own, `field label "spec.foo" not supported for Job` for Jobs, and
//! `"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"` for
//! custom resources and for the built-in types without such fields, such as ConfigMaps) and
//! reads them from JSON objects.

use std::collections::BTreeMap;
use std::sync::Arc;

use kclient_core::sharding::{ShardKey, ShardSelector};
use kclient_core::status::{Status, StatusReason};
use kclient_core::{fields, labels, ApiError};
use serde_json::Value;

use crate::catalogue::ResourceInfo;

/// Label, field and shard selectors of one list or watch, ready to match objects.
#[derive(Debug, Clone)]
pub struct Predicate {
    labels: labels::Selector,
    fields: fields::Selector,
    shards: Option<ShardSelector>,
    info: Arc<ResourceInfo>,
}

impl Predicate {
    /// Parses and validates the selectors for `info`.
    pub fn new(
        info: Arc<ResourceInfo>,
        label_selector: &str,
        field_selector: &str,
    ) -> Result<Self, ApiError> {
        let labels = labels::parse(label_selector)
            .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))?;
        let fields = fields::parse(field_selector)
            .map_err(|e| ApiError::bad_request(format!("invalid field selector: {e}")))?;
        for req in fields.requirements() {
            let f = req.field();
            if f == "metadata.name" || f == "metadata.namespace" {
                continue;
            }
            if !info.selectable_fields.iter().any(|s| s == f) {
                // Types with field label conversions of their own word it as those do;
                // every other type (custom or built-in) as the default conversion.
                let msg = if info.custom || info.selectable_fields.is_empty() {
                    format!(
                        "{f:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                    )
                } else if info.api.group == "batch" && info.kind() == "Job" {
                    format!("field label {f:?} not supported for Job")
                } else {
                    format!("field label not supported: {f}")
                };
                return Err(ApiError::bad_request(msg));
            }
        }
        Ok(Self {
            labels,
            fields,
            shards: None,
            info,
        })
    }

    /// Adds the `shardSelector` of the request when the `ShardedListAndWatch` gate is on
    /// (`enabled`), as kube-apiserver's registry does after the label and field selectors: an
    /// expression it cannot read is a `500` without a reason, `invalid shard selector: …`.
    pub fn with_shards(mut self, expression: &str, enabled: bool) -> Result<Self, ApiError> {
        if enabled && !expression.is_empty() {
            let shards = ShardSelector::parse(expression).map_err(|e| {
                ApiError::from(Status::failure(
                    StatusReason::Unknown,
                    500,
                    format!("invalid shard selector: {e}"),
                ))
            })?;
            self.shards = Some(shards);
        }
        Ok(self)
    }

    /// The shard selector applied, if any (what a list echoes in `metadata.shardInfo`).
    pub fn shards(&self) -> Option<&ShardSelector> {
        self.shards.as_ref()
    }

    /// Whether the predicate selects everything.
    pub fn is_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty() && self.shards.is_none()
    }

    /// The name the field selector pins, if any (`metadata.name=x`).
    pub fn exact_name(&self) -> Option<&str> {
        self.fields.requires_exact_match("metadata.name")
    }

    /// Whether `obj` is selected.
    pub fn matches(&self, obj: &Value) -> bool {
        if self.is_everything() {
            return true;
        }
        if let Some(shards) = &self.shards {
            let field = match shards.key() {
                ShardKey::Uid => "/metadata/uid",
                ShardKey::Namespace => "/metadata/namespace",
            };
            let value = obj.pointer(field).and_then(Value::as_str).unwrap_or("");
            if !shards.matches_value(value) {
                return false;
            }
        }
        let obj_labels = obj.pointer("/metadata/labels");
        let labels_ok = self
            .labels
            .matches_fn(|k| obj_labels.and_then(|l| l.get(k)).and_then(Value::as_str));
        if !labels_ok {
            return false;
        }
        if self.fields.is_empty() {
            return true;
        }
        let mut values: BTreeMap<&str, String> = BTreeMap::new();
        for req in self.fields.requirements() {
            if let Some(v) = field_value(&self.info, obj, req.field()) {
                values.insert(req.field(), v);
            }
        }
        self.fields.matches(&values)
    }
}

fn scalar(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The value of a selectable field of `obj`, as the server's field-set functions compute it.
pub fn field_value(info: &ResourceInfo, obj: &Value, field: &str) -> Option<String> {
    match field {
        "metadata.name" => scalar(obj.pointer("/metadata/name")),
        "metadata.namespace" => {
            if info.namespaced() {
                scalar(obj.pointer("/metadata/namespace"))
            } else {
                Some(String::new())
            }
        }
        "spec.unschedulable" => Some(
            obj.pointer("/spec/unschedulable")
                .and_then(Value::as_bool)
                .unwrap_or(false)
                .to_string(),
        ),
        "spec.hostNetwork" => Some(
            obj.pointer("/spec/hostNetwork")
                .and_then(Value::as_bool)
                .unwrap_or(false)
                .to_string(),
        ),
        "status.successful" => Some(
            obj.pointer("/status/succeeded")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                .to_string(),
        ),
        "status.podIPs" => scalar(obj.pointer("/status/podIP")),
        "status.replicas" => Some(
            obj.pointer("/status/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                .to_string(),
        ),
        "source" => scalar(obj.pointer("/source/component")),
        "type" if info.api.kind == "Secret" => scalar(obj.get("type")),
        "type" if info.api.kind == "Event" => scalar(obj.get("type")),
        other => {
            let pointer = format!("/{}", other.replace('.', "/"));
            scalar(obj.pointer(&pointer))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalogue::Catalogue;

    fn pods() -> Arc<ResourceInfo> {
        Catalogue::builtin().get("", "v1", "pods").unwrap()
    }

    #[test]
    fn pod_fields() {
        let pod = json!({
            "metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1"},
            "status": {"phase": "Running"}
        });
        let p =
            Predicate::new(pods(), "app=web", "spec.nodeName=n1,status.phase!=Pending").unwrap();
        assert!(p.matches(&pod));
        let p = Predicate::new(pods(), "", "metadata.namespace=other").unwrap();
        assert!(!p.matches(&pod));
        let p = Predicate::new(pods(), "app in (db)", "").unwrap();
        assert!(!p.matches(&pod));
    }

    #[test]
    fn unknown_fields_are_bad_requests() {
        let err = Predicate::new(pods(), "", "spec.foo=x").unwrap_err();
        assert_eq!(err.code(), 400);
        assert_eq!(err.message(), "field label not supported: spec.foo");
        let mut custom = (*pods()).clone();
        custom.custom = true;
        let err = Predicate::new(Arc::new(custom), "", "spec.foo=x").unwrap_err();
        assert_eq!(
            err.message(),
            r#""spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace""#
        );
        assert_eq!(
            Predicate::new(pods(), "a in (", "").unwrap_err().code(),
            400
        );
        // Checked against kube-apiserver v1.37.1.
        let c = Catalogue::builtin();
        let message = |group: &str, version: &str, plural: &str| {
            let info = c.get(group, version, plural).unwrap();
            Predicate::new(info, "", "spec.foo=x")
                .unwrap_err()
                .message()
                .to_string()
        };
        assert_eq!(
            message("", "v1", "configmaps"),
            r#""spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace""#
        );
        assert_eq!(
            message("apps", "v1", "deployments"),
            message("", "v1", "configmaps")
        );
        assert_eq!(
            message("batch", "v1", "jobs"),
            r#"field label "spec.foo" not supported for Job"#
        );
        assert_eq!(
            message("events.k8s.io", "v1", "events"),
            "field label not supported: spec.foo"
        );
    }

    #[test]
    fn replication_controller_replicas_default_to_zero() {
        let rc = Catalogue::builtin()
            .get("", "v1", "replicationcontrollers")
            .unwrap();
        let p = Predicate::new(rc, "", "status.replicas=0").unwrap();
        assert!(p.matches(&json!({"metadata": {"name": "a", "namespace": "n"}})));
        assert!(!p.matches(&json!({"metadata": {"name": "a"}, "status": {"replicas": 2}})));
    }

    #[test]
    fn node_unschedulable_defaults_to_false() {
        let nodes = Catalogue::builtin().get("", "v1", "nodes").unwrap();
        let p = Predicate::new(nodes, "", "spec.unschedulable=false").unwrap();
        assert!(p.matches(&json!({"metadata": {"name": "n"}})));
    }
}
