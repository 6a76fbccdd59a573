//! The built-in resources as data: one row per resource, as kube-apiserver 1.37's
//! discovery describes it, with the per-type rules of its strategies.

use kclient_core::GroupVersionKind;

use super::{ExtraSubresource, GenerationBumps, ResourceInfo, ScaleSpec};

/// The verbs of a connect subresource that proxies (`pods/proxy`, `services/proxy`).
const PROXY_VERBS: &[&str] = &["create", "delete", "get", "patch", "update"];

/// One subresource besides `status` and `scale`, as a row of [`BUILTIN`].
struct SubresourceRow {
    name: &'static str,
    group: &'static str,
    kind: &'static str,
    verbs: &'static [&'static str],
}

/// A subresource whose kind is in core/v1 (`pods/log` takes a `Pod`).
const fn core_sub(
    name: &'static str,
    kind: &'static str,
    verbs: &'static [&'static str],
) -> SubresourceRow {
    SubresourceRow {
        name,
        group: "",
        kind,
        verbs,
    }
}

/// One built-in resource as data: what discovery says of it and which of kube-apiserver's
/// per-type rules apply. A table rather than code, so that the catalogue reads as the
/// discovery document it mirrors.
pub(super) struct BuiltinRow {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    /// `None`: [`STANDARD_VERBS`](super::STANDARD_VERBS).
    verbs: Option<&'static [&'static str]>,
    status: bool,
    /// The workload `scale` subresource ([`ScaleSpec::workload`]).
    scale: bool,
    /// `None`: `metadata.generation` is not tracked.
    generation: Option<GenerationBumps>,
    create_on_update: bool,
    returns_deleted_object: bool,
    selectable: &'static [&'static str],
    subresources: &'static [SubresourceRow],
}

/// The defaults every row of [`BUILTIN`] starts from (`..ROW`): a namespaced core/v1
/// resource with the standard verbs and no per-type rule.
const ROW: BuiltinRow = BuiltinRow {
    group: "",
    version: "v1",
    kind: "",
    plural: "",
    namespaced: true,
    short_names: &[],
    categories: &[],
    verbs: None,
    status: false,
    scale: false,
    generation: None,
    create_on_update: false,
    returns_deleted_object: false,
    selectable: &[],
    subresources: &[],
};

/// `metadata.generation` tracked and bumped by spec changes (most types that track it).
const SPEC_GENERATION: Option<GenerationBumps> = Some(GenerationBumps::Spec);

/// What the scalable apps/v1 workloads (Deployment, ReplicaSet, StatefulSet) start from: in
/// category `all`, with `status` and the workload `scale`, generation bumped by the spec.
const SCALED_APPS_WORKLOAD: BuiltinRow = BuiltinRow {
    group: "apps",
    categories: &["all"],
    status: true,
    scale: true,
    generation: SPEC_GENERATION,
    ..ROW
};

impl BuiltinRow {
    /// The [`ResourceInfo`] this row describes.
    pub(super) fn resource_info(&self) -> ResourceInfo {
        let gvk = GroupVersionKind::new(self.group, self.version, self.kind);
        let mut info = ResourceInfo::new(gvk, self.plural, self.namespaced)
            .short_names(self.short_names)
            .categories(self.categories)
            .selectable(self.selectable)
            .with_extra_subresources(
                self.subresources
                    .iter()
                    .map(|s| ExtraSubresource::new(s.name, s.group, "v1", s.kind, s.verbs))
                    .collect(),
            );
        if let Some(verbs) = self.verbs {
            info = info.verbs(verbs);
        }
        if self.status {
            info = info.with_status();
        }
        if self.scale {
            info = info.with_scale(ScaleSpec::workload());
        }
        if let Some(bumps) = self.generation {
            info = info.tracking_generation_by(bumps);
        }
        info.allow_create_on_update = self.create_on_update;
        info.returns_deleted_object = self.returns_deleted_object;
        info
    }
}

/// The built-in resources, as kube-apiserver 1.37 describes them in discovery (checked by the
/// e2e suite's `discovery` scenario), with the per-type rules of its strategies.
pub(super) const BUILTIN: &[BuiltinRow] = &[
    // core/v1
    BuiltinRow {
        kind: "Namespace",
        plural: "namespaces",
        namespaced: false,
        short_names: &["ns"],
        verbs: Some(&[
            "create", "delete", "get", "list", "patch", "update", "watch",
        ]),
        status: true,
        subresources: &[core_sub("finalize", "Namespace", &["update"])],
        returns_deleted_object: true,
        selectable: &["status.phase"],
        ..ROW
    },
    BuiltinRow {
        kind: "Pod",
        plural: "pods",
        short_names: &["po"],
        categories: &["all"],
        status: true,
        generation: SPEC_GENERATION,
        returns_deleted_object: true,
        subresources: &[
            core_sub("attach", "PodAttachOptions", &["create", "get"]),
            core_sub("binding", "Binding", &["create"]),
            core_sub("ephemeralcontainers", "Pod", &["get", "patch", "update"]),
            SubresourceRow {
                name: "eviction",
                group: "policy",
                kind: "Eviction",
                verbs: &["create"],
            },
            core_sub("exec", "PodExecOptions", &["create", "get"]),
            core_sub("log", "Pod", &["get"]),
            core_sub("portforward", "PodPortForwardOptions", &["create", "get"]),
            core_sub("proxy", "PodProxyOptions", PROXY_VERBS),
            core_sub("resize", "Pod", &["get", "patch", "update"]),
        ],
        selectable: &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        ..ROW
    },
    BuiltinRow {
        kind: "Service",
        plural: "services",
        short_names: &["svc"],
        categories: &["all"],
        status: true,
        subresources: &[core_sub("proxy", "ServiceProxyOptions", PROXY_VERBS)],
        returns_deleted_object: true,
        selectable: &["spec.clusterIP", "spec.type"],
        ..ROW
    },
    BuiltinRow {
        kind: "ConfigMap",
        plural: "configmaps",
        short_names: &["cm"],
        ..ROW
    },
    BuiltinRow {
        kind: "Secret",
        plural: "secrets",
        selectable: &["type"],
        ..ROW
    },
    BuiltinRow {
        kind: "ServiceAccount",
        plural: "serviceaccounts",
        short_names: &["sa"],
        subresources: &[SubresourceRow {
            name: "token",
            group: "authentication.k8s.io",
            kind: "TokenRequest",
            verbs: &["create"],
        }],
        returns_deleted_object: true,
        ..ROW
    },
    BuiltinRow {
        kind: "Node",
        plural: "nodes",
        namespaced: false,
        short_names: &["no"],
        status: true,
        subresources: &[core_sub("proxy", "NodeProxyOptions", PROXY_VERBS)],
        returns_deleted_object: true,
        selectable: &["spec.unschedulable"],
        ..ROW
    },
    BuiltinRow {
        kind: "Event",
        plural: "events",
        short_names: &["ev"],
        create_on_update: true,
        selectable: &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ..ROW
    },
    BuiltinRow {
        kind: "Endpoints",
        plural: "endpoints",
        short_names: &["ep"],
        create_on_update: true,
        ..ROW
    },
    BuiltinRow {
        kind: "PersistentVolumeClaim",
        plural: "persistentvolumeclaims",
        short_names: &["pvc"],
        status: true,
        returns_deleted_object: true,
        ..ROW
    },
    BuiltinRow {
        kind: "PersistentVolume",
        plural: "persistentvolumes",
        namespaced: false,
        short_names: &["pv"],
        status: true,
        returns_deleted_object: true,
        ..ROW
    },
    BuiltinRow {
        kind: "ResourceQuota",
        plural: "resourcequotas",
        short_names: &["quota"],
        status: true,
        returns_deleted_object: true,
        ..ROW
    },
    BuiltinRow {
        kind: "LimitRange",
        plural: "limitranges",
        short_names: &["limits"],
        create_on_update: true,
        ..ROW
    },
    BuiltinRow {
        kind: "ReplicationController",
        plural: "replicationcontrollers",
        short_names: &["rc"],
        categories: &["all"],
        status: true,
        scale: true,
        generation: SPEC_GENERATION,
        returns_deleted_object: true,
        selectable: &["status.replicas"],
        ..ROW
    },
    BuiltinRow {
        kind: "PodTemplate",
        plural: "podtemplates",
        generation: SPEC_GENERATION,
        returns_deleted_object: true,
        ..ROW
    },
    // apps/v1
    BuiltinRow {
        kind: "Deployment",
        plural: "deployments",
        short_names: &["deploy"],
        ..SCALED_APPS_WORKLOAD
    },
    BuiltinRow {
        kind: "ReplicaSet",
        plural: "replicasets",
        short_names: &["rs"],
        ..SCALED_APPS_WORKLOAD
    },
    BuiltinRow {
        kind: "StatefulSet",
        plural: "statefulsets",
        short_names: &["sts"],
        ..SCALED_APPS_WORKLOAD
    },
    BuiltinRow {
        group: "apps",
        kind: "DaemonSet",
        plural: "daemonsets",
        short_names: &["ds"],
        categories: &["all"],
        status: true,
        generation: SPEC_GENERATION,
        ..ROW
    },
    BuiltinRow {
        group: "apps",
        kind: "ControllerRevision",
        plural: "controllerrevisions",
        ..ROW
    },
    // batch/v1
    BuiltinRow {
        group: "batch",
        kind: "Job",
        plural: "jobs",
        categories: &["all"],
        status: true,
        generation: SPEC_GENERATION,
        selectable: &["status.successful"],
        ..ROW
    },
    BuiltinRow {
        group: "batch",
        kind: "CronJob",
        plural: "cronjobs",
        short_names: &["cj"],
        categories: &["all"],
        status: true,
        generation: SPEC_GENERATION,
        ..ROW
    },
    // autoscaling/v2 (not v1: the fake does not convert between versions)
    BuiltinRow {
        group: "autoscaling",
        version: "v2",
        kind: "HorizontalPodAutoscaler",
        plural: "horizontalpodautoscalers",
        short_names: &["hpa"],
        categories: &["all"],
        status: true,
        generation: SPEC_GENERATION,
        ..ROW
    },
    // coordination.k8s.io/v1
    BuiltinRow {
        group: "coordination.k8s.io",
        kind: "Lease",
        plural: "leases",
        create_on_update: true,
        ..ROW
    },
    // discovery.k8s.io/v1
    BuiltinRow {
        group: "discovery.k8s.io",
        kind: "EndpointSlice",
        plural: "endpointslices",
        generation: Some(GenerationBumps::SpecOrLabels),
        ..ROW
    },
    // events.k8s.io/v1
    BuiltinRow {
        group: "events.k8s.io",
        kind: "Event",
        plural: "events",
        short_names: &["ev"],
        create_on_update: true,
        selectable: &[
            "reason",
            "regarding.apiVersion",
            "regarding.fieldPath",
            "regarding.kind",
            "regarding.name",
            "regarding.namespace",
            "regarding.resourceVersion",
            "regarding.uid",
            "reportingController",
            "type",
        ],
        ..ROW
    },
    // networking.k8s.io/v1
    BuiltinRow {
        group: "networking.k8s.io",
        kind: "Ingress",
        plural: "ingresses",
        short_names: &["ing"],
        status: true,
        generation: SPEC_GENERATION,
        ..ROW
    },
    BuiltinRow {
        group: "networking.k8s.io",
        kind: "IngressClass",
        plural: "ingressclasses",
        namespaced: false,
        generation: SPEC_GENERATION,
        ..ROW
    },
    BuiltinRow {
        group: "networking.k8s.io",
        kind: "NetworkPolicy",
        plural: "networkpolicies",
        short_names: &["netpol"],
        generation: SPEC_GENERATION,
        ..ROW
    },
    // policy/v1
    BuiltinRow {
        group: "policy",
        kind: "PodDisruptionBudget",
        plural: "poddisruptionbudgets",
        short_names: &["pdb"],
        status: true,
        generation: SPEC_GENERATION,
        ..ROW
    },
    // rbac.authorization.k8s.io/v1
    BuiltinRow {
        group: "rbac.authorization.k8s.io",
        kind: "Role",
        plural: "roles",
        create_on_update: true,
        ..ROW
    },
    BuiltinRow {
        group: "rbac.authorization.k8s.io",
        kind: "RoleBinding",
        plural: "rolebindings",
        create_on_update: true,
        ..ROW
    },
    BuiltinRow {
        group: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        plural: "clusterroles",
        namespaced: false,
        create_on_update: true,
        ..ROW
    },
    BuiltinRow {
        group: "rbac.authorization.k8s.io",
        kind: "ClusterRoleBinding",
        plural: "clusterrolebindings",
        namespaced: false,
        create_on_update: true,
        ..ROW
    },
    // scheduling.k8s.io/v1
    BuiltinRow {
        group: "scheduling.k8s.io",
        kind: "PriorityClass",
        plural: "priorityclasses",
        namespaced: false,
        short_names: &["pc"],
        generation: Some(GenerationBumps::Never),
        ..ROW
    },
    // storage.k8s.io/v1
    BuiltinRow {
        group: "storage.k8s.io",
        kind: "StorageClass",
        plural: "storageclasses",
        namespaced: false,
        short_names: &["sc"],
        returns_deleted_object: true,
        ..ROW
    },
    // admissionregistration.k8s.io/v1 (the webhook configurations the server calls; see
    // `crate::admission`)
    BuiltinRow {
        group: "admissionregistration.k8s.io",
        kind: "MutatingWebhookConfiguration",
        plural: "mutatingwebhookconfigurations",
        namespaced: false,
        categories: &["api-extensions"],
        generation: SPEC_GENERATION,
        ..ROW
    },
    BuiltinRow {
        group: "admissionregistration.k8s.io",
        kind: "ValidatingWebhookConfiguration",
        plural: "validatingwebhookconfigurations",
        namespaced: false,
        categories: &["api-extensions"],
        generation: SPEC_GENERATION,
        ..ROW
    },
    // apiextensions.k8s.io/v1
    BuiltinRow {
        group: "apiextensions.k8s.io",
        kind: "CustomResourceDefinition",
        plural: "customresourcedefinitions",
        namespaced: false,
        short_names: &["crd", "crds"],
        categories: &["api-extensions"],
        status: true,
        generation: SPEC_GENERATION,
        returns_deleted_object: true,
        ..ROW
    },
];
