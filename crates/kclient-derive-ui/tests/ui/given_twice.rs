use kclient_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "cache.example.com", version = "v1")]
#[kube(group = "storage.example.com")]
struct MemcachedSpec {
    size: i32,
}

fn main() {}
