//! CEL rules (on the object and on fields), list types, selectable fields, deprecation,
//! labels and annotations on the CRD.

use std::collections::BTreeMap;

use kclient_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A resource its rules guard.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "rules.example.com",
    version = "v1beta1",
    kind = "Guarded",
    namespaced
)]
#[kube(validation = "self.spec.minReplicas <= self.spec.maxReplicas")]
#[kube(validation(
    rule = "self.metadata.name.startsWith('g-')",
    message = "the name starts with g-",
    reason = "FieldValueForbidden",
    field_path = ".spec"
))]
#[kube(
    selectable = ".spec.color",
    deprecated = "rules.example.com/v1beta1 Guarded is deprecated; use v1"
)]
#[kube(
    annotation("example.com/owner", "team-a"),
    label("example.com/tier", "gold")
)]
#[kube(shortname = "gd", shortname = "guard", category = "rules")]
#[serde(rename_all = "camelCase")]
pub struct GuardedSpec {
    /// The least number of replicas.
    pub min_replicas: i32,
    /// The most.
    pub max_replicas: i32,
    /// A color, immutable once set.
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "color is immutable"}]))]
    pub color: String,
    /// Tags, a set.
    #[serde(default)]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
    /// Limits, atomic.
    #[serde(default)]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub limits: BTreeMap<String, i64>,
    /// A value with its own rule on its length (bounded, so that the rule's cost is).
    #[serde(default)]
    #[schemars(length(max = 64))]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "size(self) <= 10", "messageExpression": "'too long: ' + self"}]))]
    pub note: String,
}
