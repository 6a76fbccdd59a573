use kclient_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(version = "v1", namespaced)]
struct MemcachedSpec {
    size: i32,
}

fn main() {}
