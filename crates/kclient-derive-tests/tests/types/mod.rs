//! The custom resource types the suites derive: one per shape of Rust type a schema must
//! describe, each with golden CRD in `tests/golden/`.

pub mod cel;
pub mod enums;
pub mod fields;
pub mod memcached;
pub mod versions;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kclient_core::crd::CustomResourceExt;

/// Every golden CRD, by file name.
pub fn golden() -> Vec<(&'static str, CustomResourceDefinition)> {
    vec![
        ("memcached", memcached::Memcached::crd()),
        ("fields", fields::Fields::crd()),
        ("enums", enums::Choice::crd()),
        ("cel", cel::Guarded::crd()),
        ("versions", versions::merged()),
    ]
}
