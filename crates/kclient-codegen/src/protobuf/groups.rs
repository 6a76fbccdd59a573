//! API groups as cargo features: which proto package file belongs to which group, and which
//! groups a group's codecs need (a Deployment holds a core/v1 `PodTemplateSpec`, so
//! `group-apps` turns on `group-core`).
//!
//! kclient-protobuf compiles a group's codecs only with its feature (`group-apps`), so that a
//! program pays to build and link only the groups it speaks; `apimachinery`'s `meta/v1` is
//! always compiled (every kind has an `ObjectMeta`). The features, with what each one needs,
//! are written into kclient-protobuf's `Cargo.toml`, and forwarded by the facade's, by
//! `cargo xtask codegen`.

use std::collections::{BTreeMap, BTreeSet};

use super::ProtobufInput;

/// The group of a generated file (`api_apps_v1` → `apps`,
/// `apiextensions_apiserver_pkg_apis_apiextensions_v1` → `apiextensions`), or `None` for
/// apimachinery's files, which every group needs.
pub fn group_of(file: &str) -> Option<&str> {
    if file.starts_with("apimachinery_") {
        return None;
    }
    let group_and_version = match file.strip_prefix("api_") {
        Some(rest) => rest,
        None => file.split_once("_pkg_apis_")?.1,
    };
    group_and_version.rsplit_once('_').map(|(group, _)| group)
}

/// The cargo feature of a group: `group-apps`.
pub fn feature(group: &str) -> String {
    format!("group-{group}")
}

/// The generated file of a proto package (`k8s.io.api.apps.v1` → `api_apps_v1`).
pub fn file_of_package(package: &str) -> String {
    package.trim_start_matches("k8s.io.").replace('.', "_")
}

/// The file of a message's full name (`k8s.io.api.apps.v1.Deployment` → `api_apps_v1`).
pub fn file_of_message(name: &str) -> String {
    file_of_package(name.rsplit_once('.').map_or("", |(package, _)| package))
}

/// Every group of the inputs, with the other groups its messages' fields reach.
pub fn group_needs(inputs: &[&ProtobufInput]) -> BTreeMap<String, BTreeSet<String>> {
    let mut needs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for input in inputs {
        for (name, fields) in &input.messages {
            let file = file_of_message(name);
            let Some(group) = group_of(&file) else {
                continue;
            };
            let reached = needs.entry(group.to_owned()).or_default();
            for field in fields {
                if !input.messages.contains_key(field.type_name()) {
                    continue;
                }
                let other = file_of_message(field.type_name());
                match group_of(&other) {
                    Some(other) if other != group => {
                        reached.insert(other.to_owned());
                    }
                    _ => {}
                }
            }
        }
    }
    needs
}

/// The `[features]` lines of the groups in kclient-protobuf's manifest: `all-groups`, and one
/// feature per group turning on the groups it needs.
pub fn protobuf_features(needs: &BTreeMap<String, BTreeSet<String>>) -> String {
    features(needs, |group| {
        let reached: Vec<String> = needs[group]
            .iter()
            .map(|g| format!("{:?}", feature(g)))
            .collect();
        (format!("The codecs of the `{group}` API group."), reached)
    })
}

/// The `[features]` lines of the groups in the facade's manifest: each forwards to
/// kclient-protobuf's feature of the same name.
pub fn facade_features(needs: &BTreeMap<String, BTreeSet<String>>) -> String {
    features(needs, |group| {
        (
            format!("The protobuf codecs of the `{group}` API group."),
            vec![format!("\"kclient-protobuf?/{}\"", feature(group))],
        )
    })
}

/// `all-groups`, then each group's feature as `define` gives its doc line and its list.
fn features(
    needs: &BTreeMap<String, BTreeSet<String>>,
    define: impl Fn(&str) -> (String, Vec<String>),
) -> String {
    let all: Vec<String> = needs.keys().map(|g| format!("{:?}", feature(g))).collect();
    let mut out = format!("## Every API group.\nall-groups = [{}]\n", all.join(", "));
    for group in needs.keys() {
        let (doc, list) = define(group);
        out.push_str(&format!(
            "## {doc}\n{} = [{}]\n",
            feature(group),
            list.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_belong_to_their_groups() {
        assert_eq!(group_of("api_apps_v1"), Some("apps"));
        assert_eq!(
            group_of("api_admissionregistration_v1alpha1"),
            Some("admissionregistration")
        );
        assert_eq!(
            group_of("apiextensions_apiserver_pkg_apis_apiextensions_v1"),
            Some("apiextensions")
        );
        assert_eq!(
            group_of("kube_aggregator_pkg_apis_apiregistration_v1"),
            Some("apiregistration")
        );
        assert_eq!(group_of("apimachinery_pkg_apis_meta_v1"), None);
        assert_eq!(
            file_of_message("k8s.io.api.apps.v1.Deployment"),
            "api_apps_v1"
        );
    }
}
