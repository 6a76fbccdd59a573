use kclient_derive::CustomResource;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, Serialize, Deserialize)]
#[kube(group = "cache.example.com", version = "v1")]
struct MemcachedSpec {
    size: i32,
}

fn main() {}
