//! The catalogue of resources the fake server serves: the built-in ones (pods, deployments,
//! leases, …) and any registered at run time, by [`crate::FakeApiServer::register`] or by
//! creating a CustomResourceDefinition through the API.
//!
//! Each entry is a [`ResourceInfo`]: kind, plural, singular, scope, short names, verbs,
//! categories, subresources and the few per-type rules the server applies (which fields are
//! selectable, whether `metadata.generation` is tracked, what a delete returns).

mod builtin;

use std::collections::BTreeMap;
use std::sync::Arc;

use kclient_core::{ApiResource, GroupResource, GroupVersion, GroupVersionKind};
use parking_lot::RwLock;

/// The verbs of an ordinary read-write resource, in the order kube-apiserver lists them.
pub const STANDARD_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The verbs of a custom resource, in the order kube-apiserver lists them.
pub const CUSTOM_RESOURCE_VERBS: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// Where the `scale` subresource reads and writes a workload's replica count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleSpec {
    /// JSON path (dotted) of the desired replicas, e.g. `spec.replicas`.
    pub spec_replicas_path: String,
    /// JSON path of the observed replicas, e.g. `status.replicas`.
    pub status_replicas_path: String,
    /// JSON path of the label selector string in the status, if any (`status.selector`).
    pub label_selector_path: Option<String>,
}

impl ScaleSpec {
    /// The paths the built-in workloads use.
    pub fn workload() -> Self {
        Self {
            spec_replicas_path: "spec.replicas".into(),
            status_replicas_path: "status.replicas".into(),
            label_selector_path: None,
        }
    }
}

/// A subresource other than `status` and `scale` (`pods/log`, `pods/exec`,
/// `namespaces/finalize`, `serviceaccounts/token`, ...), as discovery describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraSubresource {
    /// The name (`log`).
    pub name: String,
    /// The group of the kind it takes or returns (`""`, `policy`).
    pub group: String,
    /// Its version.
    pub version: String,
    /// The kind (`Pod`, `Eviction`, `Binding`).
    pub kind: String,
    /// The verbs (`get`, `create`).
    pub verbs: Vec<String>,
}

impl ExtraSubresource {
    /// A subresource taking or returning `group/version` `kind`, served for `verbs`.
    pub fn new(name: &str, group: &str, version: &str, kind: &str, verbs: &[&str]) -> Self {
        Self {
            name: name.into(),
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
        }
    }
}

/// What bumps a tracked `metadata.generation` (kube-apiserver's strategies differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GenerationBumps {
    /// Any change outside `metadata` and `status` (most types).
    #[default]
    Spec,
    /// That, or a change of the labels (EndpointSlices: their labels tie them to a Service).
    SpecOrLabels,
    /// Nothing: the generation stays 1 (PriorityClasses).
    Never,
}

/// Everything the server knows about one resource in one group version.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    /// Group, version, kind, plural, scope and verbs.
    pub api: ApiResource,
    /// The singular name (`pod`).
    pub singular: String,
    /// Short names (`po`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Whether the `status` subresource is served (and the main resource ignores status
    /// changes, as kube-apiserver's strategies do).
    pub status_subresource: bool,
    /// The `scale` subresource, if served.
    pub scale: Option<ScaleSpec>,
    /// Whether `metadata.generation` is set (to 1) on create; when it is bumped is
    /// [`ResourceInfo::generation_bumps`].
    pub tracks_generation: bool,
    /// What bumps a tracked `metadata.generation`.
    pub generation_bumps: GenerationBumps,
    /// Whether an update (PUT) of a missing object creates it (events, leases, endpoints).
    pub allow_create_on_update: bool,
    /// Whether a delete answers with the deleted object (otherwise a `Status` of success).
    pub returns_deleted_object: bool,
    /// Field selectors this resource supports besides `metadata.name` and
    /// `metadata.namespace`.
    pub selectable_fields: Vec<String>,
    /// Whether the resource comes from a CustomResourceDefinition.
    pub custom: bool,
    /// The version objects are stored in (the apiVersion they carry).
    pub storage_version: String,
    /// Subresources besides `status` and `scale`.
    pub extra_subresources: Vec<ExtraSubresource>,
    /// The `openAPIV3Schema` of this version of a custom resource, read once when its CRD
    /// is written (`None` for built-in resources and those registered without a CRD).
    pub(crate) schema: Option<Arc<crate::schema::Schema>>,
    /// The conversion webhook of a custom resource whose CRD converts with one
    /// (`spec.conversion.strategy: Webhook`); `None`: the `None` strategy.
    pub(crate) conversion_webhook: Option<Arc<crate::webhook_client::ConversionWebhook>>,
}

impl ResourceInfo {
    /// A namespaced or cluster-scoped resource with the standard verbs and nothing else.
    pub fn new(gvk: GroupVersionKind, plural: &str, namespaced: bool) -> Self {
        let singular = gvk.kind.to_lowercase();
        let storage_version = gvk.version.clone();
        Self {
            api: ApiResource::from_gvk_with_plural(&gvk, plural, namespaced)
                .with_verbs(STANDARD_VERBS.iter().copied()),
            singular,
            short_names: Vec::new(),
            categories: Vec::new(),
            status_subresource: false,
            scale: None,
            tracks_generation: false,
            generation_bumps: GenerationBumps::Spec,
            allow_create_on_update: false,
            returns_deleted_object: false,
            selectable_fields: Vec::new(),
            custom: false,
            storage_version,
            extra_subresources: Vec::new(),
            schema: None,
            conversion_webhook: None,
        }
    }

    /// The same resource with these short names.
    pub fn short_names(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// The same resource in these categories.
    pub fn categories(mut self, categories: &[&str]) -> Self {
        self.categories = categories.iter().map(|s| s.to_string()).collect();
        self
    }

    /// The same resource with the `status` subresource.
    pub fn with_status(mut self) -> Self {
        self.status_subresource = true;
        self.refresh_subresources();
        self
    }

    /// The same resource with the `scale` subresource.
    pub fn with_scale(mut self, scale: ScaleSpec) -> Self {
        self.scale = Some(scale);
        self.refresh_subresources();
        self
    }

    /// The same resource with `metadata.generation` tracking: 1 on create, bumped by every
    /// change outside `metadata` and `status`.
    pub fn tracking_generation(mut self) -> Self {
        self.tracks_generation = true;
        self.generation_bumps = GenerationBumps::Spec;
        self
    }

    /// The same resource with `metadata.generation` tracking, bumped as `bumps` says.
    pub fn tracking_generation_by(mut self, bumps: GenerationBumps) -> Self {
        self.tracks_generation = true;
        self.generation_bumps = bumps;
        self
    }

    /// The same resource, creatable by an update.
    pub fn creatable_on_update(mut self) -> Self {
        self.allow_create_on_update = true;
        self
    }

    /// The same resource, answering deletes with the deleted object.
    pub fn returning_deleted_object(mut self) -> Self {
        self.returns_deleted_object = true;
        self
    }

    /// The same resource with these extra selectable fields.
    pub fn selectable(mut self, fields: &[&str]) -> Self {
        self.selectable_fields = fields.iter().map(|s| s.to_string()).collect();
        self
    }

    /// The same resource, served as custom resources are: generation tracked, a delete that
    /// removes the object answered with a `Status` (apiextensions-apiserver's store does not
    /// return deleted objects; kube-apiserver 1.37 checked), only
    /// `metadata.name`/`metadata.namespace` selectable by default, no strategic merge patch.
    pub fn custom_resource(mut self) -> Self {
        self.custom = true;
        self.tracks_generation = true;
        self
    }

    /// The same resource with these extra subresources.
    pub fn with_extra_subresources(mut self, extra: Vec<ExtraSubresource>) -> Self {
        self.extra_subresources = extra;
        self
    }

    /// The same resource with these verbs.
    pub fn verbs(mut self, verbs: &[&str]) -> Self {
        self.api.verbs = verbs.iter().map(|s| s.to_string()).collect();
        self
    }

    fn refresh_subresources(&mut self) {
        let mut subs = Vec::new();
        if self.scale.is_some() {
            subs.push("scale".to_string());
        }
        if self.status_subresource {
            subs.push("status".to_string());
        }
        self.api.subresources = subs;
    }

    /// The group and plural, the key objects are stored under.
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(self.api.group.clone(), self.api.plural.clone())
    }

    /// The group and version.
    pub fn group_version(&self) -> GroupVersion {
        self.api.group_version()
    }

    /// `apiVersion` as objects of this resource carry it.
    pub fn api_version(&self) -> &str {
        &self.api.api_version
    }

    /// The kind.
    pub fn kind(&self) -> &str {
        &self.api.kind
    }

    /// The kind of the list (`PodList`).
    pub fn list_kind(&self) -> String {
        format!("{}List", self.api.kind)
    }

    /// Whether objects live in namespaces.
    pub fn namespaced(&self) -> bool {
        self.api.namespaced
    }

    /// `Kind.group` (or `Kind` in the core group), as validation errors name the kind.
    pub fn qualified_kind(&self) -> GroupResource {
        GroupResource::new(self.api.group.clone(), self.api.kind.clone())
    }

    /// Whether `verb` is served.
    pub fn supports(&self, verb: &str) -> bool {
        self.api.verbs.iter().any(|v| v == verb)
    }
}

/// The set of served resources, keyed by group, version and plural.
#[derive(Debug, Default)]
pub struct Catalogue {
    inner: RwLock<BTreeMap<(String, String, String), Arc<ResourceInfo>>>,
}

impl Catalogue {
    /// A catalogue holding the built-in resources.
    pub fn builtin() -> Self {
        let catalogue = Self::default();
        for info in builtin_resources() {
            catalogue.register(info);
        }
        catalogue
    }

    /// Adds or replaces a resource.
    pub fn register(&self, info: ResourceInfo) {
        let key = (
            info.api.group.clone(),
            info.api.version.clone(),
            info.api.plural.clone(),
        );
        self.inner.write().insert(key, Arc::new(info));
    }

    /// Removes every version of `resource`, returning how many were removed.
    pub fn unregister(&self, resource: &GroupResource) -> usize {
        let mut inner = self.inner.write();
        let before = inner.len();
        inner.retain(|(g, _, p), _| !(g == &resource.group && p == &resource.resource));
        before - inner.len()
    }

    /// The resource `plural` in `group`/`version`.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.inner
            .read()
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// Any served version of `resource` (the storage version when there is one).
    pub fn any_version(&self, resource: &GroupResource) -> Option<Arc<ResourceInfo>> {
        let inner = self.inner.read();
        let mut found = None;
        for ((g, _, p), info) in inner.iter() {
            if g == &resource.group && p == &resource.resource {
                if info.api.version == info.storage_version {
                    return Some(info.clone());
                }
                found.get_or_insert_with(|| info.clone());
            }
        }
        found
    }

    /// The resource whose kind is `gvk`.
    pub fn by_kind(&self, gvk: &GroupVersionKind) -> Option<Arc<ResourceInfo>> {
        self.inner
            .read()
            .values()
            .find(|i| {
                i.api.group == gvk.group && i.api.version == gvk.version && i.api.kind == gvk.kind
            })
            .cloned()
    }

    /// Every served resource, ordered by group, version and plural.
    pub fn all(&self) -> Vec<Arc<ResourceInfo>> {
        self.inner.read().values().cloned().collect()
    }

    /// The resources served in `group`/`version`, ordered by plural (none when it is not
    /// served).
    pub(crate) fn in_group_version(&self, group: &str, version: &str) -> Vec<Arc<ResourceInfo>> {
        self.inner
            .read()
            .values()
            .filter(|i| i.api.group == group && i.api.version == version)
            .cloned()
            .collect()
    }

    /// The served group versions, core first, then groups in the order kube-apiserver
    /// lists them (built-in groups first, then custom ones alphabetically).
    pub fn group_versions(&self) -> Vec<GroupVersion> {
        let mut gvs: Vec<GroupVersion> = Vec::new();
        for info in self.inner.read().values() {
            let gv = info.group_version();
            if !gvs.contains(&gv) {
                gvs.push(gv);
            }
        }
        gvs.sort_by_key(|gv| {
            (
                group_rank(&gv.group),
                gv.group.clone(),
                version_rank(&gv.version),
            )
        });
        gvs
    }

    /// Whether any version of `group` is served.
    pub fn has_group(&self, group: &str) -> bool {
        self.inner.read().keys().any(|(g, _, _)| g == group)
    }
}

fn group_rank(group: &str) -> usize {
    // kube-apiserver 1.37's order (its groups' priorities), of the groups this catalogue has.
    const ORDER: &[&str] = &[
        "",
        "apps",
        "events.k8s.io",
        "autoscaling",
        "batch",
        "networking.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "storage.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "scheduling.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
    ];
    ORDER
        .iter()
        .position(|g| *g == group)
        .unwrap_or(ORDER.len())
}

/// Orders versions as Kubernetes does: GA before beta before alpha, higher numbers first.
pub fn version_rank(version: &str) -> (u8, std::cmp::Reverse<u32>, std::cmp::Reverse<u32>, String) {
    let parse = |s: &str| -> Option<(u32, u8, u32)> {
        let rest = s.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let major: u32 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((major, 0, 0));
        }
        for (word, stage) in [("beta", 1u8), ("alpha", 2u8)] {
            if let Some(n) = tail.strip_prefix(word) {
                let minor: u32 = n.parse().ok()?;
                return Some((major, stage, minor));
            }
        }
        None
    };
    match parse(version) {
        Some((major, stage, minor)) => (
            stage,
            std::cmp::Reverse(major),
            std::cmp::Reverse(minor),
            String::new(),
        ),
        None => (
            3,
            std::cmp::Reverse(0),
            std::cmp::Reverse(0),
            version.to_string(),
        ),
    }
}

/// The built-in resources, as kube-apiserver 1.37 describes them in discovery (checked by the
/// e2e suite's `discovery` scenario), with the per-type rules of its strategies.
pub fn builtin_resources() -> Vec<ResourceInfo> {
    builtin::BUILTIN
        .iter()
        .map(builtin::BuiltinRow::resource_info)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_like_kubernetes() {
        let mut v = vec!["v1beta1", "v2", "v1alpha1", "v1", "foo", "v1beta2"];
        v.sort_by_key(|s| version_rank(s));
        assert_eq!(v, ["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]);
    }

    #[test]
    fn builtin_catalogue_has_the_required_resources() {
        let c = Catalogue::builtin();
        for (g, p) in [
            ("", "namespaces"),
            ("", "pods"),
            ("", "services"),
            ("", "configmaps"),
            ("", "secrets"),
            ("", "serviceaccounts"),
            ("", "nodes"),
            ("", "events"),
            ("", "endpoints"),
            ("", "persistentvolumeclaims"),
            ("apps", "deployments"),
            ("apps", "replicasets"),
            ("apps", "statefulsets"),
            ("apps", "daemonsets"),
            ("batch", "jobs"),
            ("batch", "cronjobs"),
            ("coordination.k8s.io", "leases"),
            ("apiextensions.k8s.io", "customresourcedefinitions"),
            ("", "persistentvolumes"),
            ("", "resourcequotas"),
            ("", "limitranges"),
            ("", "replicationcontrollers"),
            ("", "podtemplates"),
            ("apps", "controllerrevisions"),
            ("autoscaling", "horizontalpodautoscalers"),
            ("networking.k8s.io", "ingresses"),
            ("networking.k8s.io", "ingressclasses"),
            ("networking.k8s.io", "networkpolicies"),
            ("policy", "poddisruptionbudgets"),
            ("rbac.authorization.k8s.io", "roles"),
            ("rbac.authorization.k8s.io", "rolebindings"),
            ("rbac.authorization.k8s.io", "clusterroles"),
            ("rbac.authorization.k8s.io", "clusterrolebindings"),
            ("storage.k8s.io", "storageclasses"),
            ("discovery.k8s.io", "endpointslices"),
            ("scheduling.k8s.io", "priorityclasses"),
        ] {
            assert!(
                c.any_version(&GroupResource::new(g, p)).is_some(),
                "{g}/{p}"
            );
        }
        let deploy = c.get("apps", "v1", "deployments").unwrap();
        assert_eq!(deploy.api.subresources, ["scale", "status"]);
        assert_eq!(c.group_versions()[0], GroupVersion::new("", "v1"));
    }
}
