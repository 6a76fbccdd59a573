//! Fields of every common shape: maps, options, lists of structs, Kubernetes' own scalar
//! types, free-form and embedded objects, flattened and renamed fields, defaults.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kclient_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A shape with a field of every kind.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "shapes.example.com",
    version = "v1",
    kind = "Fields",
    plural = "fieldsets"
)]
#[kube(
    derive = "PartialEq",
    doc = "Fields has a field of every common shape."
)]
#[serde(rename_all = "camelCase")]
pub struct FieldsSpec {
    /// A required string.
    #[schemars(length(min = 1, max = 63), regex(pattern = "^[a-z][a-z0-9-]*$"))]
    pub name: String,
    /// A renamed, optional string.
    #[serde(
        rename = "displayName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub display: Option<String>,
    /// A map of strings.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// A list of structs.
    #[serde(default)]
    pub ports: Vec<Port>,
    /// A map of structs.
    #[serde(default)]
    pub backends: HashMap<String, Port>,
    /// Kubernetes quantities.
    #[serde(default)]
    pub limits: BTreeMap<String, Quantity>,
    /// A port number or name.
    pub target: IntOrString,
    /// A time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Time>,
    /// Any JSON value.
    #[serde(default)]
    pub settings: serde_json::Value,
    /// An object with any fields.
    #[serde(default)]
    pub annotations: BTreeMap<String, serde_json::Value>,
    /// A whole Kubernetes object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "object", "x-kubernetes-embedded-resource" = true, "x-kubernetes-preserve-unknown-fields" = true))]
    pub template: Option<serde_json::Value>,
    /// A defaulted number.
    #[serde(default = "default_replicas")]
    pub replicas: i32,
    /// A small unsigned number.
    #[serde(default)]
    pub weight: u8,
    /// A float.
    #[serde(default)]
    pub ratio: f64,
    /// An optional flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// A list of lists.
    #[serde(default)]
    pub matrix: Vec<Vec<i64>>,
    /// Flattened fields.
    #[serde(flatten)]
    pub tuning: Tuning,
}

fn default_replicas() -> i32 {
    1
}

/// A port.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Port {
    /// Its name.
    pub name: String,
    /// Its number.
    #[schemars(range(min = 1, max = 65535))]
    pub container_port: i32,
    /// Its protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

/// Fields flattened into the spec.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tuning {
    /// Flattened: a timeout in seconds.
    #[serde(default)]
    pub timeout_seconds: i64,
}
