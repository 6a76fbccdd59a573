use kclient_core::crd::CustomResourceExt;
use kclient_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cache.example.com",
    version = "v1alpha1",
    namespaced,
    status = "MemcachedStatus"
)]
pub struct MemcachedSpec {
    #[schemars(range(min = 1, max = 5))]
    pub size: i32,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct MemcachedStatus {
    pub replicas: i32,
}

#[test]
fn it_builds() {
    let crd = Memcached::crd();
    println!("{}", serde_json::to_string_pretty(&crd).unwrap());
    let mc = Memcached::new("x", MemcachedSpec { size: 2 });
    let v = serde_json::to_value(&mc).unwrap();
    let back: Memcached = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), v);
}
