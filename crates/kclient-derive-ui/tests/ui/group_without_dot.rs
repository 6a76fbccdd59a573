use kclient_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "cache", version = "v1")]
struct MemcachedSpec {
    size: i32,
}

fn main() {}
