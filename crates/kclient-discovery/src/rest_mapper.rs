//! [`RestMapper`]: from the names people type (`po`, `deploy`, `Deployment`,
//! `crontabs.stable.example.com`, `deployments.v1.apps`) and the kinds objects carry to the
//! resources URLs address, and back, over a snapshot of discovery (client-go's
//! `restmapper.NewDiscoveryRESTMapper` with its `PriorityRESTMapper`, the shortcut expander for
//! short names and the discovery category expander).
//!
//! # How names resolve
//!
//! A partial resource (any of group and version may be empty) matches every resource whose
//! plural or singular name equals it (case-insensitively); with a group, an exact group match is
//! preferred, else a group prefix matches (`storageclasses.storage` finds
//! `storageclasses.storage.k8s.io`). A name that is no resource's plural or singular is first
//! expanded as a short name (`po` → `pods`, `deploy` → `deployments.apps`).
//!
//! Among several matches, the one in the highest-priority group-version wins: the core `v1`
//! first, then the groups in discovery order, each with its preferred version first and its
//! other versions after. So `events` is the core `events`, not `events.events.k8s.io`, as in
//! kubectl. Two matches in the same group-version are [`MapperError::AmbiguousResource`]; a
//! short name shared by resources of several groups resolves to the highest-priority one, and
//! [`RestMapper::expand_short_name`] reports the others (kubectl warns about them).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use kclient_core::{
    ApiResource, GroupKind, GroupResource, GroupVersion, GroupVersionKind, GroupVersionResource,
};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIResource, APIResourceList};

use crate::discovery::{Discovery, ServerResources};
use crate::error::Error;

/// Parses a resource argument as kubectl does (apimachinery's `ParseResourceArg`): with two
/// dots or more, `resource.version.group` is a fully specified resource (returned first); in
/// every case, `resource.group` (split at the first dot) is the group-resource.
pub fn parse_resource_arg(arg: &str) -> (Option<GroupVersionResource>, GroupResource) {
    let full = (arg.matches('.').count() >= 2).then(|| {
        let mut parts = arg.splitn(3, '.');
        let resource = parts.next().unwrap_or_default();
        let version = parts.next().unwrap_or_default();
        let group = parts.next().unwrap_or_default();
        GroupVersionResource::new(group, version, resource)
    });
    (full, GroupResource::parse(arg))
}

/// Parses a kind argument as kubectl does (apimachinery's `ParseKindArg`): `Kind.version.group`
/// with two dots or more, and `Kind.group` in every case.
pub fn parse_kind_arg(arg: &str) -> (Option<GroupVersionKind>, GroupKind) {
    let full = (arg.matches('.').count() >= 2).then(|| {
        let mut parts = arg.splitn(3, '.');
        let kind = parts.next().unwrap_or_default();
        let version = parts.next().unwrap_or_default();
        let group = parts.next().unwrap_or_default();
        GroupVersionKind::new(group, version, kind)
    });
    (full, GroupKind::parse(arg))
}

/// Whether objects of a resource live in namespaces (apimachinery's `RESTScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Objects live in a namespace (`pods`).
    Namespaced,
    /// Objects are cluster-wide (`nodes`).
    Cluster,
}

/// Everything known about one resource in one group-version (apimachinery's `RESTMapping`,
/// with the names, verbs and subresources discovery gave).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestMapping {
    /// The resource (`apps/v1, Resource=deployments`).
    pub resource: GroupVersionResource,
    /// The kind of its objects (`apps/v1, Kind=Deployment`).
    pub gvk: GroupVersionKind,
    /// Its scope.
    pub scope: Scope,
    /// The singular name (`deployment`).
    pub singular: String,
    /// Short names (`deploy`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Verbs (`get`, `list`, ...).
    pub verbs: Vec<String>,
    /// Subresources (`status`, `scale`).
    pub subresources: Vec<String>,
}

impl RestMapping {
    /// Whether objects live in namespaces.
    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    /// The group-resource (`deployments.apps`).
    pub fn group_resource(&self) -> GroupResource {
        self.resource.group_resource()
    }

    /// The [`ApiResource`] to address it with (for the dynamic client), verbs and
    /// subresources included.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &self.gvk,
            self.resource.resource.clone(),
            self.namespaced(),
        )
        .with_verbs(self.verbs.iter().cloned())
        .with_subresources(self.subresources.iter().cloned())
    }
}

fn list<T: fmt::Display>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(ToString::to_string).collect();
    format!("[{}]", items.join("; "))
}

fn kind_search(group_kind: &GroupKind, versions: &[String]) -> String {
    let mut gvs: Vec<String> = versions
        .iter()
        .map(|v| GroupVersion::new(group_kind.group.clone(), v.clone()).to_string())
        .collect();
    gvs.sort();
    gvs.dedup();
    match gvs.as_slice() {
        [] => format!(
            "no matches for kind {:?} in group {:?}",
            group_kind.kind, group_kind.group
        ),
        [one] => format!(
            "no matches for kind {:?} in version {one:?}",
            group_kind.kind
        ),
        many => format!(
            "no matches for kind {:?} in versions {many:?}",
            group_kind.kind
        ),
    }
}

/// Why a name, resource or kind could not be mapped.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum MapperError {
    /// No resource matches (apimachinery's `NoResourceMatchError`).
    #[error("no matches for {partial}")]
    NoResourceMatch {
        /// What was asked for.
        partial: GroupVersionResource,
    },

    /// No kind matches (apimachinery's `NoKindMatchError`).
    #[error("{}", kind_search(.group_kind, .searched_versions))]
    NoKindMatch {
        /// The kind asked for.
        group_kind: GroupKind,
        /// The versions it was looked for in (empty: any).
        searched_versions: Vec<String>,
    },

    /// A name matched no resource and no kind (kubectl's message for `kubectl get <name>`).
    #[error("the server doesn't have a resource type {name:?}")]
    UnknownResourceType {
        /// The name given.
        name: String,
    },

    /// Several resources match with the same priority (apimachinery's
    /// `AmbiguousResourceError`).
    #[error("{partial} matches multiple resources {}", list(.matching))]
    AmbiguousResource {
        /// What was asked for.
        partial: GroupVersionResource,
        /// Every match.
        matching: Vec<GroupVersionResource>,
    },

    /// Several kinds match with the same priority (apimachinery's `AmbiguousKindError`).
    #[error("{partial} matches multiple kinds {}", list(.matching))]
    AmbiguousKind {
        /// What was asked for (the version empty when none was given).
        partial: GroupVersionKind,
        /// Every match.
        matching: Vec<GroupVersionKind>,
    },

    /// A resource must be named (apimachinery: `a resource must be present`).
    #[error("a resource must be present, got: {0}")]
    EmptyResource(GroupVersionResource),

    /// Discovery failed, so nothing could be mapped (deferred mapper).
    #[error("discovery failed: {0}")]
    Discovery(#[source] Arc<Error>),
}

impl MapperError {
    /// Whether nothing matched (apimachinery's `IsNoMatchError`): the case a refreshed
    /// discovery may cure.
    pub fn is_no_match(&self) -> bool {
        matches!(
            self,
            MapperError::NoResourceMatch { .. }
                | MapperError::NoKindMatch { .. }
                | MapperError::UnknownResourceType { .. }
        )
    }

    /// Whether several matches tied.
    pub fn is_ambiguous(&self) -> bool {
        matches!(
            self,
            MapperError::AmbiguousResource { .. } | MapperError::AmbiguousKind { .. }
        )
    }
}

/// The result of [`RestMapper::expand_short_name`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShortNameExpansion {
    /// The resource with the short name replaced (unchanged when it was no short name).
    pub resource: GroupVersionResource,
    /// Lower-priority resources with the same short name, which it does not resolve to
    /// (kubectl warns: `short name "x" could also match lower priority resource y`).
    pub also_matches: Vec<GroupResource>,
}

/// How well a kind candidate fits: (position of its version among the requested ones,
/// priority of its group-version); lower is better.
type CandidateKey = (usize, usize);

#[derive(Debug, Clone)]
struct Entry {
    mapping: RestMapping,
    /// Priority of the group-version: lower wins.
    rank: usize,
}

impl Entry {
    fn names_match(&self, name: &str) -> bool {
        self.mapping.resource.resource == name || self.mapping.singular == name
    }
}

/// Maps kinds to resources and back, resolves short names and categories, over a snapshot of
/// discovery. See the module documentation for the resolution rules.
///
/// Build one from a discovery client with [`from_discovery`](Self::from_discovery), or from
/// discovery results with [`new`](Self::new). A snapshot never changes; for one that refreshes
/// when a name is missing, use [`DeferredRestMapper`](crate::DeferredRestMapper).
///
/// ```
/// use kclient_discovery::{RestMapper, ServerResources};
/// use kclient_core::GroupVersionResource;
/// # use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroup, APIResource, APIResourceList, GroupVersionForDiscovery};
/// # let gvd = |gv: &str, v: &str| GroupVersionForDiscovery { group_version: gv.into(), version: v.into() };
/// # let discovery = ServerResources {
/// #     groups: vec![APIGroup { name: "apps".into(), versions: vec![gvd("apps/v1", "v1")],
/// #                             preferred_version: Some(gvd("apps/v1", "v1")), ..Default::default() }],
/// #     resources: vec![APIResourceList { group_version: "apps/v1".into(), resources: vec![APIResource {
/// #         name: "deployments".into(), singular_name: "deployment".into(), kind: "Deployment".into(),
/// #         namespaced: true, short_names: Some(vec!["deploy".into()]), verbs: vec!["list".into()],
/// #         ..Default::default() }] }],
/// #     failed: Default::default(),
/// # };
/// // `discovery` came from `DiscoveryClient::server_groups_and_resources()`.
/// let mapper = RestMapper::new(&discovery);
/// for name in ["deploy", "deployments", "Deployment", "deployments.apps", "deployments.v1.apps"] {
///     let mapping = mapper.find(name).unwrap();
///     assert_eq!(mapping.resource, GroupVersionResource::new("apps", "v1", "deployments"));
///     assert!(mapping.namespaced());
/// }
/// assert!(mapper.find("nosuchthing").unwrap_err().is_no_match());
/// ```
#[derive(Debug, Clone, Default)]
pub struct RestMapper {
    /// Every resource, in priority order (stable within a group-version).
    entries: Vec<Entry>,
    /// Category memberships in discovery order.
    categories: Vec<(String, GroupResource)>,
    /// Group-versions discovery could not reach.
    failed: Vec<GroupVersion>,
}

/// The priority of each group-version discovery answered for: core v1 first, then each
/// group's preferred version and its other versions, in discovery order.
fn group_version_ranks(discovery: &ServerResources) -> HashMap<GroupVersion, usize> {
    let mut ranks: HashMap<GroupVersion, usize> = HashMap::new();
    let mut rank = |gv: GroupVersion| {
        if discovery.resources_for(&gv).is_some() {
            let next = ranks.len();
            ranks.entry(gv).or_insert(next);
        }
    };
    rank(GroupVersion::new("", "v1"));
    for group in &discovery.groups {
        if let Some(p) = &group.preferred_version {
            rank(GroupVersion::new(group.name.clone(), p.version.clone()));
        }
        for v in &group.versions {
            rank(GroupVersion::new(group.name.clone(), v.version.clone()));
        }
    }
    ranks
}

/// The mapping of resource `r` of group-version `gv`, with its subresources (the entries of
/// `list` named `r/…`).
fn mapping(gv: &GroupVersion, r: &APIResource, list: &APIResourceList) -> RestMapping {
    let plural = r.name.to_ascii_lowercase();
    let singular = if r.singular_name.is_empty() {
        // Old servers do not say; guess as apimachinery does.
        r.kind.to_ascii_lowercase()
    } else {
        r.singular_name.to_ascii_lowercase()
    };
    let prefix = format!("{}/", r.name);
    let subresources = list
        .resources
        .iter()
        .filter_map(|s| s.name.strip_prefix(&prefix))
        .map(str::to_owned)
        .collect();
    RestMapping {
        resource: gv.with_resource(plural),
        gvk: gv.with_kind(r.kind.clone()),
        scope: if r.namespaced {
            Scope::Namespaced
        } else {
            Scope::Cluster
        },
        singular,
        short_names: r
            .short_names
            .iter()
            .flatten()
            .map(|s| s.to_ascii_lowercase())
            .collect(),
        categories: r.categories.clone().unwrap_or_default(),
        verbs: r.verbs.clone(),
        subresources,
    }
}

impl RestMapper {
    /// A mapper over discovery results (client-go's `NewDiscoveryRESTMapper` over
    /// `GetAPIGroupResources`). Group-versions that failed are left out and remembered
    /// ([`failed_group_versions`](Self::failed_group_versions)).
    pub fn new(discovery: &ServerResources) -> Self {
        let ranks = group_version_ranks(discovery);
        let mut entries: Vec<Entry> = Vec::new();
        let mut categories: Vec<(String, GroupResource)> = Vec::new();
        for group in &discovery.groups {
            for v in &group.versions {
                let gv = GroupVersion::new(group.name.clone(), v.version.clone());
                let (Some(list), Some(&rank)) = (discovery.resources_for(&gv), ranks.get(&gv))
                else {
                    continue;
                };
                let mut seen: HashSet<&str> = HashSet::new();
                for r in list.resources.iter().filter(|r| !r.name.contains('/')) {
                    if !seen.insert(r.name.as_str()) {
                        continue;
                    }
                    let mapping = mapping(&gv, r, list);
                    for c in &mapping.categories {
                        categories.push((c.clone(), mapping.resource.group_resource()));
                    }
                    entries.push(Entry { mapping, rank });
                }
            }
        }
        entries.sort_by_key(|e| e.rank);
        Self {
            entries,
            categories,
            failed: discovery.failed.keys().cloned().collect(),
        }
    }

    /// A mapper over everything `discovery` finds (client-go's `GetAPIGroupResources` +
    /// `NewDiscoveryRESTMapper`). Group-versions that fail are left out, not an error.
    pub async fn from_discovery<D: Discovery + ?Sized>(discovery: &D) -> Result<Self, Error> {
        Ok(Self::new(&discovery.server_groups_and_resources().await?))
    }

    /// The group-versions discovery could not reach when this mapper was built: names in them
    /// cannot be mapped.
    pub fn failed_group_versions(&self) -> &[GroupVersion] {
        &self.failed
    }

    /// Every mapping, highest priority first.
    pub fn mappings(&self) -> impl Iterator<Item = &RestMapping> {
        self.entries.iter().map(|e| &e.mapping)
    }

    /// Replaces a short name by the resource it stands for (kubectl's shortcut expander).
    ///
    /// A name that is some resource's plural or singular (in the given group, if any) is not a
    /// short name and stays. Otherwise the highest-priority resource with that short name (in
    /// the given group, or else a group starting with it) replaces it, and other group-resources
    /// with the same short name are listed in
    /// [`also_matches`](ShortNameExpansion::also_matches).
    pub fn expand_short_name(&self, resource: &GroupVersionResource) -> ShortNameExpansion {
        let mut out = ShortNameExpansion {
            resource: resource.clone(),
            also_matches: Vec::new(),
        };
        let name = resource.resource.to_ascii_lowercase();
        let in_group =
            |e: &Entry| resource.group.is_empty() || e.mapping.resource.group == resource.group;
        if self
            .entries
            .iter()
            .any(|e| in_group(e) && e.names_match(&name))
        {
            return out;
        }
        let mut found: Option<GroupResource> = None;
        for e in self.entries.iter().filter(|e| in_group(e)) {
            if !e.mapping.short_names.contains(&name) {
                continue;
            }
            let gr = e.mapping.group_resource();
            match &found {
                None => found = Some(gr),
                Some(first) if *first == gr => {}
                Some(_) => {
                    if !out.also_matches.contains(&gr) {
                        out.also_matches.push(gr);
                    }
                }
            }
        }
        if found.is_none() && !resource.group.is_empty() {
            found = self
                .entries
                .iter()
                .find(|e| {
                    e.mapping.resource.group.starts_with(&resource.group)
                        && e.mapping.short_names.contains(&name)
                })
                .map(|e| e.mapping.group_resource());
        }
        if let Some(gr) = found {
            out.resource.resource = gr.resource;
            out.resource.group = gr.group;
        }
        if !out.also_matches.is_empty() {
            tracing::warn!(
                short_name = %name,
                resolved = %out.resource.group_resource(),
                also = ?out.also_matches.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "short name could also match lower priority resources"
            );
        }
        out
    }

    /// The entries matching a partial resource, in priority order, short names expanded.
    fn matching(&self, partial: &GroupVersionResource) -> Result<Vec<&Entry>, MapperError> {
        let mut input = partial.clone();
        input.resource = input.resource.to_ascii_lowercase();
        if input.version == "*" {
            input.version.clear();
        }
        if input.resource.is_empty() {
            return Err(MapperError::EmptyResource(partial.clone()));
        }
        let input = self.expand_short_name(&input).resource;
        let name = input.resource.as_str();
        let (group, version) = (input.group.as_str(), input.version.as_str());
        let mut out: Vec<&Entry> = match (group.is_empty(), version.is_empty()) {
            (false, false) => self
                .entries
                .iter()
                .filter(|e| {
                    e.mapping.resource.group == group
                        && e.mapping.resource.version == version
                        && e.names_match(name)
                })
                .collect(),
            (false, true) => {
                let exact: Vec<&Entry> = self
                    .entries
                    .iter()
                    .filter(|e| e.mapping.resource.group == group && e.names_match(name))
                    .collect();
                if exact.is_empty() {
                    self.entries
                        .iter()
                        .filter(|e| {
                            e.mapping.resource.group.starts_with(group) && e.names_match(name)
                        })
                        .collect()
                } else {
                    exact
                }
            }
            (true, false) => self
                .entries
                .iter()
                .filter(|e| e.mapping.resource.version == version && e.names_match(name))
                .collect(),
            (true, true) => self
                .entries
                .iter()
                .filter(|e| e.names_match(name))
                .collect(),
        };
        let mut seen = HashSet::new();
        out.retain(|e| seen.insert(&e.mapping.resource));
        if out.is_empty() {
            return Err(MapperError::NoResourceMatch {
                partial: partial.clone(),
            });
        }
        Ok(out)
    }

    /// The best of `entries` (sorted by priority): the only one of the highest priority.
    fn best<'a>(entries: &[&'a Entry]) -> Option<&'a Entry> {
        let first = entries.first()?;
        let tied = entries.iter().take_while(|e| e.rank == first.rank).count();
        (tied == 1).then_some(*first)
    }

    /// Every resource matching a partial resource, highest priority first (apimachinery's
    /// `ResourcesFor`).
    pub fn resources_for(
        &self,
        resource: &GroupVersionResource,
    ) -> Result<Vec<GroupVersionResource>, MapperError> {
        Ok(self
            .matching(resource)?
            .into_iter()
            .map(|e| e.mapping.resource.clone())
            .collect())
    }

    /// The resource a partial resource stands for (apimachinery's `ResourceFor`).
    pub fn resource_for(
        &self,
        resource: &GroupVersionResource,
    ) -> Result<GroupVersionResource, MapperError> {
        let matches = self.matching(resource)?;
        match Self::best(&matches) {
            Some(e) => Ok(e.mapping.resource.clone()),
            None => Err(MapperError::AmbiguousResource {
                partial: resource.clone(),
                matching: matches.iter().map(|e| e.mapping.resource.clone()).collect(),
            }),
        }
    }

    /// Every kind a partial resource may stand for, highest priority first (apimachinery's
    /// `KindsFor`).
    pub fn kinds_for(
        &self,
        resource: &GroupVersionResource,
    ) -> Result<Vec<GroupVersionKind>, MapperError> {
        Ok(self
            .matching(resource)?
            .into_iter()
            .map(|e| e.mapping.gvk.clone())
            .collect())
    }

    /// The kind of the objects of a partial resource (apimachinery's `KindFor`).
    pub fn kind_for(
        &self,
        resource: &GroupVersionResource,
    ) -> Result<GroupVersionKind, MapperError> {
        let matches = self.matching(resource)?;
        match Self::best(&matches) {
            Some(e) => Ok(e.mapping.gvk.clone()),
            None => Err(MapperError::AmbiguousResource {
                partial: resource.clone(),
                matching: matches.iter().map(|e| e.mapping.resource.clone()).collect(),
            }),
        }
    }

    /// The mapping of the resource a partial resource stands for.
    pub fn mapping_for_resource(
        &self,
        resource: &GroupVersionResource,
    ) -> Result<RestMapping, MapperError> {
        let matches = self.matching(resource)?;
        match Self::best(&matches) {
            Some(e) => Ok(e.mapping.clone()),
            None => Err(MapperError::AmbiguousResource {
                partial: resource.clone(),
                matching: matches.iter().map(|e| e.mapping.resource.clone()).collect(),
            }),
        }
    }

    /// Every mapping of a group-kind in `versions` (or in every version when `versions` is
    /// empty), best first (apimachinery's `RESTMappings`). The kind matches exactly or in
    /// lower case. With versions, the first listed version that has the kind wins.
    pub fn rest_mappings(
        &self,
        group_kind: &GroupKind,
        versions: &[&str],
    ) -> Result<Vec<RestMapping>, MapperError> {
        Ok(self
            .kind_candidates(group_kind, versions)?
            .into_iter()
            .map(|(_, e)| e.mapping.clone())
            .collect())
    }

    fn kind_candidates(
        &self,
        group_kind: &GroupKind,
        versions: &[&str],
    ) -> Result<Vec<(CandidateKey, &Entry)>, MapperError> {
        let versions: Vec<&str> = versions
            .iter()
            .copied()
            .filter(|v| !v.is_empty() && *v != "__internal")
            .collect();
        let mut seen = HashSet::new();
        let mut candidates: Vec<(CandidateKey, &Entry)> = self
            .entries
            .iter()
            .filter(|e| {
                e.mapping.gvk.group == group_kind.group
                    && (e.mapping.gvk.kind == group_kind.kind
                        || e.mapping.gvk.kind.to_ascii_lowercase() == group_kind.kind)
            })
            .filter(|e| seen.insert(&e.mapping.gvk))
            .filter_map(|e| {
                if versions.is_empty() {
                    return Some(((0, e.rank), e));
                }
                versions
                    .iter()
                    .position(|v| *v == e.mapping.gvk.version)
                    .map(|i| ((i, e.rank), e))
            })
            .collect();
        if candidates.is_empty() {
            return Err(MapperError::NoKindMatch {
                group_kind: group_kind.clone(),
                searched_versions: versions.iter().map(|v| v.to_string()).collect(),
            });
        }
        candidates.sort_by_key(|(key, _)| *key);
        Ok(candidates)
    }

    /// The mapping of a group-kind: in the first of `versions` that has it, or with no
    /// versions in the highest-priority version (apimachinery's `RESTMapping`).
    pub fn rest_mapping(
        &self,
        group_kind: &GroupKind,
        versions: &[&str],
    ) -> Result<RestMapping, MapperError> {
        let candidates = self.kind_candidates(group_kind, versions)?;
        let best_key = candidates[0].0;
        let best: Vec<&Entry> = candidates
            .iter()
            .filter(|(k, _)| *k == best_key)
            .map(|(_, e)| *e)
            .collect();
        match best.as_slice() {
            [one] => Ok(one.mapping.clone()),
            _ => Err(MapperError::AmbiguousKind {
                partial: group_kind.with_version(""),
                matching: candidates
                    .iter()
                    .map(|(_, e)| e.mapping.gvk.clone())
                    .collect(),
            }),
        }
    }

    /// The mapping of an exact group-version-kind.
    pub fn mapping_for_kind(&self, gvk: &GroupVersionKind) -> Result<RestMapping, MapperError> {
        self.rest_mapping(&GroupKind::of(gvk), &[&gvk.version])
    }

    /// The singular name of a resource (`pods` → `pod`; apimachinery's
    /// `ResourceSingularizer`).
    pub fn resource_singularizer(&self, resource: &str) -> Result<String, MapperError> {
        Ok(self
            .mapping_for_resource(&GroupVersionResource::new("", "", resource))?
            .singular)
    }

    /// Resolves what a user typed, as `kubectl get <name>` does (kubectl's `mappingFor`): a
    /// resource (`pods`, `po`, `pod`, `deployments.apps`, `deployments.v1.apps`,
    /// `crontabs.stable.example.com`) or else a kind (`Deployment`, `Deployment.apps`,
    /// `Deployment.v1.apps`).
    ///
    /// Unknown names are [`MapperError::UnknownResourceType`]; names that tie are
    /// [`MapperError::AmbiguousResource`] (kubectl would report them as unknown).
    pub fn find(&self, name: &str) -> Result<RestMapping, MapperError> {
        let (full, group_resource) = parse_resource_arg(name);
        if let Some(full) = &full {
            if let Ok(m) = self.mapping_for_resource(full) {
                return self.mapping_for_kind(&m.gvk).or(Ok(m));
            }
        }
        let partial = GroupVersionResource::new(
            group_resource.group.clone(),
            "",
            group_resource.resource.clone(),
        );
        match self.mapping_for_resource(&partial) {
            Ok(m) => return self.mapping_for_kind(&m.gvk).or(Ok(m)),
            Err(e) if e.is_ambiguous() => return Err(e),
            Err(_) => {}
        }
        let (full_kind, group_kind) = parse_kind_arg(name);
        if let Some(full_kind) = &full_kind {
            if let Ok(m) = self.mapping_for_kind(full_kind) {
                return Ok(m);
            }
        }
        match self.rest_mapping(&group_kind, &[]) {
            Ok(m) => Ok(m),
            Err(e) if e.is_no_match() => Err(MapperError::UnknownResourceType {
                name: group_resource.resource,
            }),
            Err(e) => Err(e),
        }
    }

    /// The group-resources in a category (`all`), in discovery order, each once
    /// (client-go's discovery category expander); `None` for a category no resource is in.
    pub fn expand_category(&self, category: &str) -> Option<Vec<GroupResource>> {
        let mut out: Vec<GroupResource> = Vec::new();
        for (c, gr) in &self.categories {
            if c == category && !out.contains(gr) {
                out.push(gr.clone());
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// The mappings of every resource in a category, in their highest-priority versions.
    pub fn category_mappings(&self, category: &str) -> Option<Vec<RestMapping>> {
        let resources = self.expand_category(category)?;
        Some(
            resources
                .iter()
                .filter_map(|gr| {
                    self.entries
                        .iter()
                        .find(|e| e.mapping.group_resource() == *gr)
                        .map(|e| e.mapping.clone())
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests;
