//! operator-sdk's memcached tutorial's API, as an operator author writes it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kclient_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// MemcachedSpec defines the desired state of Memcached.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cache.example.com",
    version = "v1alpha1",
    kind = "Memcached",
    namespaced
)]
#[kube(
    status = "MemcachedStatus",
    shortname = "mc",
    category = "all",
    derive = "PartialEq"
)]
#[kube(printcolumn(name = "Size", type = "integer", json_path = ".spec.size"))]
#[kube(
    printcolumn = r#"{"name": "Ready", "type": "integer", "jsonPath": ".status.replicas", "description": "Pods running"}"#
)]
#[kube(scale(
    spec_replicas_path = ".spec.size",
    status_replicas_path = ".status.replicas",
    label_selector_path = ".status.selector"
))]
#[serde(rename_all = "camelCase")]
pub struct MemcachedSpec {
    /// Size defines the number of Memcached instances.
    #[schemars(range(min = 1, max = 5))]
    pub size: i32,
    /// The port memcached listens on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub container_port: Option<i32>,
}

/// MemcachedStatus defines the observed state of Memcached.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedStatus {
    /// The conditions of the Memcached (`Available`, `Degraded`), one per type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// How many Pods run.
    #[serde(default)]
    pub replicas: i32,
    /// The label selector of the Pods, for the scale subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// The names of the Pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
}
