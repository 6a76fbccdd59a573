//! Objects the unit tests of several modules build.

use k8s_openapi::api::core::v1::Pod;

/// A pod with only its namespace and name set.
pub(crate) fn pod(ns: &str, name: &str) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.namespace = Some(ns.into());
    pod.metadata.name = Some(name.into());
    pod
}
