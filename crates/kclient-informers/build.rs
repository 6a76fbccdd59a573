//! Finds the Kubernetes version k8s-openapi was built for and exposes it to this crate as
//! `cfg(kclient_k8s = "1.NN")`, so that the generated informers offer exactly the resources
//! of that version (the same script as kclient-typed's, whose Clientset the informers
//! mirror; a build script cannot be shared between published crates).
//!
//! k8s-openapi publishes the enabled version to the build scripts of its dependents as
//! `DEP_K8S_OPENAPI_<crate version>_VERSION` (its `links` metadata), encoded as
//! `0x00_MM_mm_00`. The version is whichever feature enabled it: this crate's `v1_NN`
//! features, or the user's own dependency on k8s-openapi.

use std::env;

/// The Kubernetes minor versions the checked-in generated code covers.
const SUPPORTED: &[u32] = &[35, 36, 37];

fn main() {
    let values: Vec<String> = SUPPORTED.iter().map(|v| format!("\"1.{v}\"")).collect();
    println!(
        "cargo::rustc-check-cfg=cfg(kclient_k8s, values({}))",
        values.join(", ")
    );
    println!("cargo::rustc-check-cfg=cfg(kclient_k8s_unsupported)");

    let encoded = env::vars().find_map(|(key, value)| {
        (key.starts_with("DEP_K8S_OPENAPI_") && key.ends_with("_VERSION")).then_some(value)
    });
    // Without the metadata k8s-openapi's own build script has already failed with its
    // explanation of how to pick a version; nothing to add here.
    let Some(encoded) = encoded else { return };
    let Ok(encoded) = encoded.trim().parse::<u32>() else {
        println!("cargo::rustc-cfg=kclient_k8s_unsupported");
        return;
    };
    let (major, minor) = ((encoded >> 16) & 0xff, (encoded >> 8) & 0xff);
    if major == 1 && SUPPORTED.contains(&minor) {
        println!("cargo::rustc-cfg=kclient_k8s=\"1.{minor}\"");
    } else {
        println!("cargo::rustc-cfg=kclient_k8s_unsupported");
    }
}
