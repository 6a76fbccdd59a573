//! What the tests against kclient-fake share: ConfigMaps in `default` seeded and changed
//! directly in the server's store, and a REST client without client-side throttling.
#![allow(dead_code)] // each test binary uses part of it

use kclient_core::GroupResource;
use kclient_fake::FakeApiServer;
use kclient_rest::{Config, RestClient};
use serde_json::json;

pub fn configmaps() -> GroupResource {
    GroupResource::new("", "configmaps")
}

/// Creates ConfigMap `default/name` with `data.v = value` in the server's store.
pub fn seed(server: &FakeApiServer, name: &str, value: &str) {
    server
        .seed(json!({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": name, "namespace": "default"},
                     "data": {"v": value}}))
        .unwrap();
}

/// Sets `data.v` of ConfigMap `default/name` in the server's store.
pub fn change(server: &FakeApiServer, name: &str, value: &str) {
    server
        .modify(&configmaps(), "default", name, |o| {
            o["data"]["v"] = json!(value)
        })
        .unwrap();
}

/// A REST client for `server` with client-side rate limiting off.
pub fn rest(server: &FakeApiServer) -> RestClient {
    let mut config = Config::new(server.url());
    config.qps = None;
    RestClient::new(config).unwrap()
}
