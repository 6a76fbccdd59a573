use kclient_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "cache.example.com", version = "v1", status = "MemcachedStatus")]
#[kube(scale(spec_replicas_path = ".replicas", status_replicas_path = ".status.replicas"))]
struct MemcachedSpec {
    size: i32,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
struct MemcachedStatus {
    replicas: i32,
}

fn main() {}
