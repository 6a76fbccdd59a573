//! [`merge_crds`]: one CRD from the CRDs of several versions of a kind.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// Why CRDs could not be merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// No CRD was given.
    #[error("no CustomResourceDefinition to merge")]
    NoCrds,
    /// Two CRDs disagree on something all versions of a kind share (the name, group, names,
    /// scope, conversion, labels or annotations).
    #[error("the CustomResourceDefinitions to merge differ in {property}: {first} against {other} (version {version})")]
    Mismatch {
        /// What differs (`spec.group`, `spec.names`, `spec.scope` …).
        property: &'static str,
        /// The first CRD's value.
        first: String,
        /// The other CRD's value.
        other: String,
        /// The version of the CRD that differs from the first.
        version: String,
    },
    /// A version appears twice.
    #[error("version {0} is defined twice")]
    DuplicateVersion(String),
    /// The storage version named is none of the versions.
    #[error("the storage version {storage} is not among the versions {versions:?}")]
    MissingStorageVersion {
        /// The version asked to be stored.
        storage: String,
        /// The versions there are.
        versions: Vec<String>,
    },
}

/// Merges the CRDs of several versions of one kind (each from its own type, e.g.
/// `v1::Foo::crd()` and `v2::Foo::crd()`) into one, whose storage version is
/// `storage_version` and only it (kube-rs's `merge_crds`). The versions keep the order
/// given; everything the versions share must agree.
///
/// ```
/// use kclient_core::crd::{merge_crds, Definition};
///
/// let version = |v: &str| Definition {
///     group: "example.com".into(), version: v.into(), kind: "Widget".into(),
///     plural: "widgets".into(), ..Definition::default()
/// }.to_crd(None, None);
/// let crd = merge_crds(vec![version("v1"), version("v2")], "v2").unwrap();
/// let stored: Vec<_> = crd.spec.versions.iter().map(|v| (v.name.as_str(), v.storage)).collect();
/// assert_eq!(stored, [("v1", false), ("v2", true)]);
/// ```
pub fn merge_crds(
    crds: Vec<CustomResourceDefinition>,
    storage_version: &str,
) -> Result<CustomResourceDefinition, MergeError> {
    let mut crds = crds.into_iter();
    let mut merged = crds.next().ok_or(MergeError::NoCrds)?;
    for crd in crds {
        agree_on_shared(&mut merged, &crd)?;
        for v in crd.spec.versions {
            if merged.spec.versions.iter().any(|m| m.name == v.name) {
                return Err(MergeError::DuplicateVersion(v.name));
            }
            merged.spec.versions.push(v);
        }
    }
    if !merged
        .spec
        .versions
        .iter()
        .any(|v| v.name == storage_version)
    {
        return Err(MergeError::MissingStorageVersion {
            storage: storage_version.to_owned(),
            versions: merged
                .spec
                .versions
                .iter()
                .map(|v| v.name.clone())
                .collect(),
        });
    }
    for v in &mut merged.spec.versions {
        v.storage = v.name == storage_version;
    }
    Ok(merged)
}

/// Checks that `crd` says what `merged` says of everything the versions share (taking its
/// conversion if `merged` has none).
fn agree_on_shared(
    merged: &mut CustomResourceDefinition,
    crd: &CustomResourceDefinition,
) -> Result<(), MergeError> {
    let version = crd
        .spec
        .versions
        .first()
        .map(|v| v.name.clone())
        .unwrap_or_default();
    let agree = |property: &'static str, first: String, other: String| {
        if first == other {
            Ok(())
        } else {
            Err(MergeError::Mismatch {
                property,
                first,
                other,
                version: version.clone(),
            })
        }
    };
    let debug = |v: &dyn std::fmt::Debug| format!("{v:?}");
    agree(
        "metadata.name",
        debug(&merged.metadata.name),
        debug(&crd.metadata.name),
    )?;
    agree(
        "metadata.labels",
        debug(&merged.metadata.labels),
        debug(&crd.metadata.labels),
    )?;
    agree(
        "metadata.annotations",
        debug(&merged.metadata.annotations),
        debug(&crd.metadata.annotations),
    )?;
    agree(
        "spec.group",
        merged.spec.group.clone(),
        crd.spec.group.clone(),
    )?;
    agree(
        "spec.names",
        debug(&merged.spec.names),
        debug(&crd.spec.names),
    )?;
    agree(
        "spec.scope",
        merged.spec.scope.clone(),
        crd.spec.scope.clone(),
    )?;
    match (&merged.spec.conversion, &crd.spec.conversion) {
        (_, None) => Ok(()),
        (None, Some(conversion)) => {
            merged.spec.conversion = Some(conversion.clone());
            Ok(())
        }
        (Some(first), Some(other)) => agree("spec.conversion", debug(first), debug(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::Definition;

    fn crd(version: &str, kind: &str) -> CustomResourceDefinition {
        Definition {
            group: "example.com".into(),
            version: version.into(),
            kind: kind.into(),
            plural: "widgets".into(),
            ..Definition::default()
        }
        .to_crd(None, None)
    }

    #[test]
    fn refusals() {
        assert_eq!(merge_crds(vec![], "v1"), Err(MergeError::NoCrds));
        assert_eq!(
            merge_crds(vec![crd("v1", "Widget"), crd("v1", "Widget")], "v1"),
            Err(MergeError::DuplicateVersion("v1".into()))
        );
        assert!(matches!(
            merge_crds(vec![crd("v1", "Widget"), crd("v2", "Gadget")], "v1"),
            Err(MergeError::Mismatch { property: "spec.names", version, .. }) if version == "v2"
        ));
        assert_eq!(
            merge_crds(vec![crd("v1", "Widget")], "v3"),
            Err(MergeError::MissingStorageVersion {
                storage: "v3".into(),
                versions: vec!["v1".into()]
            })
        );
    }
}
