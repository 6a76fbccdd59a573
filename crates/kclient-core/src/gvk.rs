//! Group, version, kind and resource identifiers: `GroupVersion`, `GroupVersionKind`,
//! `GroupVersionResource`, `GroupResource` and `GroupKind`, the names every request and every
//! cached object is addressed by.
//!
//! The core group is the empty string: `"v1"` parses to group `""`, version `"v1"`, and
//! `apps/v1` to group `"apps"`, version `"v1"`, exactly as apimachinery's
//! `schema.ParseGroupVersion` does.
//!
//! ```
//! use kclient_core::{GroupVersion, GroupVersionKind};
//!
//! let gv: GroupVersion = "apps/v1".parse().unwrap();
//! assert_eq!(gv.group, "apps");
//! let gvk = gv.with_kind("Deployment");
//! assert_eq!(gvk.api_version(), "apps/v1");
//! assert_eq!(gvk.to_string(), "apps/v1, Kind=Deployment");
//! assert_eq!(GroupVersion::parse("v1").unwrap().api_version(), "v1");
//! ```

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An `apiVersion` string that does not have the form `version` or `group/version`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid apiVersion {input:?}: {reason}")]
pub struct GroupVersionParseError {
    /// The string that failed to parse.
    pub input: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// An API group and version, such as `apps/v1` or the core group's `v1`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct GroupVersion {
    /// The API group; empty for the core ("legacy") group.
    pub group: String,
    /// The version within the group, such as `v1` or `v1beta1`.
    pub version: String,
}

impl GroupVersion {
    /// A group-version from its parts.
    pub fn new(group: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
        }
    }

    /// Parses an `apiVersion` string: `"v1"` (core group) or `"group/version"`.
    ///
    /// Like apimachinery, the empty string parses to the empty group-version, and any other
    /// string with more than one `/`, or an empty part around the `/`, is an error.
    pub fn parse(api_version: &str) -> Result<Self, GroupVersionParseError> {
        let err = |reason| GroupVersionParseError {
            input: api_version.to_owned(),
            reason,
        };
        if api_version.is_empty() {
            return Ok(Self::default());
        }
        if api_version.chars().any(char::is_whitespace) {
            return Err(err("must not contain whitespace"));
        }
        match api_version.split_once('/') {
            None => Ok(Self::new("", api_version)),
            Some((group, version)) => {
                if version.contains('/') {
                    Err(err("must have at most one '/'"))
                } else if group.is_empty() || version.is_empty() {
                    Err(err("group and version around '/' must not be empty"))
                } else {
                    Ok(Self::new(group, version))
                }
            }
        }
    }

    /// The `apiVersion` string: `"v1"` for the core group, `"group/version"` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The kind `kind` in this group-version.
    pub fn with_kind(&self, kind: impl Into<String>) -> GroupVersionKind {
        GroupVersionKind::new(self.group.clone(), self.version.clone(), kind)
    }

    /// The resource `plural` in this group-version.
    pub fn with_resource(&self, plural: impl Into<String>) -> GroupVersionResource {
        GroupVersionResource::new(self.group.clone(), self.version.clone(), plural)
    }

    /// The URL prefix under which this group-version is served: `/api/v1` for the core group,
    /// `/apis/{group}/{version}` otherwise.
    pub fn url_prefix(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.version)
        } else {
            write!(f, "{}/{}", self.group, self.version)
        }
    }
}

impl FromStr for GroupVersion {
    type Err = GroupVersionParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// A kind in a group-version: the type of an object, such as `apps/v1, Kind=Deployment`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct GroupVersionKind {
    /// The API group; empty for the core group.
    pub group: String,
    /// The version within the group.
    pub version: String,
    /// The kind, in CamelCase (`Pod`, `Deployment`).
    pub kind: String,
}

impl GroupVersionKind {
    /// A group-version-kind from its parts.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// The kind named by an object's `apiVersion` and `kind` fields.
    pub fn from_api_version_kind(
        api_version: &str,
        kind: impl Into<String>,
    ) -> Result<Self, GroupVersionParseError> {
        Ok(GroupVersion::parse(api_version)?.with_kind(kind))
    }

    /// The group-version part.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group.clone(), self.version.clone())
    }

    /// The `apiVersion` string of objects of this kind.
    pub fn api_version(&self) -> String {
        self.group_version().api_version()
    }
}

/// Formats like apimachinery: `apps/v1, Kind=Deployment` (`/v1, Kind=Pod` for the core group).
impl fmt::Display for GroupVersionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// A resource in a group-version: what a URL addresses, such as `apps/v1, Resource=deployments`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct GroupVersionResource {
    /// The API group; empty for the core group.
    pub group: String,
    /// The version within the group.
    pub version: String,
    /// The resource: the lower-case plural used in URLs (`pods`, `deployments`).
    pub resource: String,
}

impl GroupVersionResource {
    /// A group-version-resource from its parts.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        resource: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    /// The group-version part.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group.clone(), self.version.clone())
    }

    /// The group-resource part (the version dropped).
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(self.group.clone(), self.resource.clone())
    }
}

/// Formats like apimachinery: `apps/v1, Resource=deployments`.
impl fmt::Display for GroupVersionResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}, Resource={}",
            self.group, self.version, self.resource
        )
    }
}

/// A resource in a group, independent of version: `deployments.apps`, or `pods` in the core
/// group. API errors name resources this way.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct GroupResource {
    /// The API group; empty for the core group.
    pub group: String,
    /// The resource (lower-case plural).
    pub resource: String,
}

impl GroupResource {
    /// A group-resource from its parts.
    pub fn new(group: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            resource: resource.into(),
        }
    }

    /// Parses `resource.group` (`deployments.apps`, `pods`): the first dot separates the resource
    /// from the group, as apimachinery's `ParseGroupResource` does.
    pub fn parse(s: &str) -> Self {
        match s.split_once('.') {
            Some((resource, group)) => Self::new(group, resource),
            None => Self::new("", s),
        }
    }
}

/// Formats like apimachinery: `deployments.apps`, or just `pods` for the core group.
impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// A kind in a group, independent of version: `Deployment.apps`, or `Pod` in the core group
/// (apimachinery's `schema.GroupKind`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct GroupKind {
    /// The API group; empty for the core group.
    pub group: String,
    /// The kind (`Deployment`).
    pub kind: String,
}

impl GroupKind {
    /// A group-kind from its parts.
    pub fn new(group: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            kind: kind.into(),
        }
    }

    /// The group-kind of a group-version-kind.
    pub fn of(gvk: &GroupVersionKind) -> Self {
        Self::new(gvk.group.clone(), gvk.kind.clone())
    }

    /// Parses `Kind.group` (`Deployment.apps`, `Pod`): the first dot separates the kind from
    /// the group, as apimachinery's `ParseGroupKind` does.
    pub fn parse(s: &str) -> Self {
        match s.split_once('.') {
            Some((kind, group)) => Self::new(group, kind),
            None => Self::new("", s),
        }
    }

    /// This kind in `version`.
    pub fn with_version(&self, version: impl Into<String>) -> GroupVersionKind {
        GroupVersionKind::new(self.group.clone(), version, self.kind.clone())
    }
}

/// Formats like apimachinery: `Deployment.apps`, or `Pod` for the core group.
impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.kind)
        } else {
            write!(f, "{}.{}", self.kind, self.group)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_core_and_named_groups() {
        assert_eq!(
            GroupVersion::parse("v1").unwrap(),
            GroupVersion::new("", "v1")
        );
        assert_eq!(
            GroupVersion::parse("apps/v1").unwrap(),
            GroupVersion::new("apps", "v1")
        );
        assert_eq!(
            GroupVersion::parse("apiextensions.k8s.io/v1").unwrap(),
            GroupVersion::new("apiextensions.k8s.io", "v1")
        );
        assert_eq!(GroupVersion::parse("").unwrap(), GroupVersion::default());
    }

    #[test]
    fn rejects_malformed_api_versions() {
        for bad in ["a/b/c", "/v1", "apps/", "/", "apps /v1", "a\tb"] {
            let err = GroupVersion::parse(bad).unwrap_err();
            assert_eq!(err.input, bad);
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
    }

    #[test]
    fn displays_like_apimachinery() {
        assert_eq!(GroupVersion::new("", "v1").to_string(), "v1");
        assert_eq!(GroupVersion::new("apps", "v1").to_string(), "apps/v1");
        assert_eq!(
            GroupVersionKind::new("", "v1", "Pod").to_string(),
            "/v1, Kind=Pod"
        );
        assert_eq!(
            GroupVersionResource::new("apps", "v1", "deployments").to_string(),
            "apps/v1, Resource=deployments"
        );
        assert_eq!(GroupResource::new("", "pods").to_string(), "pods");
        assert_eq!(
            GroupResource::new("apps", "deployments").to_string(),
            "deployments.apps"
        );
    }

    #[test]
    fn round_trips_through_strings() {
        for s in ["v1", "apps/v1", "batch/v1beta1"] {
            assert_eq!(s.parse::<GroupVersion>().unwrap().to_string(), s);
        }
        let gvk = GroupVersionKind::from_api_version_kind("apps/v1", "Deployment").unwrap();
        assert_eq!(gvk.api_version(), "apps/v1");
        assert_eq!(gvk.group_version().with_kind("Deployment"), gvk);
        assert_eq!(
            GroupResource::parse("deployments.apps"),
            GroupResource::new("apps", "deployments")
        );
        assert_eq!(GroupResource::parse("pods"), GroupResource::new("", "pods"));
    }

    #[test]
    fn group_kinds_like_apimachinery() {
        assert_eq!(
            GroupKind::new("apps", "Deployment").to_string(),
            "Deployment.apps"
        );
        assert_eq!(GroupKind::parse("Pod"), GroupKind::new("", "Pod"));
        assert_eq!(GroupKind::new("", "Pod").to_string(), "Pod");
        assert_eq!(
            GroupKind::parse("Deployment.apps"),
            GroupKind::new("apps", "Deployment")
        );
        assert_eq!(
            GroupKind::parse("CronTab.stable.example.com"),
            GroupKind::new("stable.example.com", "CronTab"),
            "the first dot separates the kind from the group"
        );
        let gvk = GroupVersionKind::new("apps", "v1", "Deployment");
        assert_eq!(GroupKind::of(&gvk), GroupKind::new("apps", "Deployment"));
        assert_eq!(GroupKind::of(&gvk).with_version("v1"), gvk);
    }

    #[test]
    fn url_prefixes() {
        assert_eq!(GroupVersion::new("", "v1").url_prefix(), "/api/v1");
        assert_eq!(
            GroupVersion::new("apps", "v1").url_prefix(),
            "/apis/apps/v1"
        );
    }
}
