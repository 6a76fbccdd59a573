use kclient_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "cache.example.com", version = "v1")]
enum MemcachedSpec {
    Small,
}

fn main() {}
