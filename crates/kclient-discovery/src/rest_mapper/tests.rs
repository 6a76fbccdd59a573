//! The RestMapper's unit tests.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIGroup, APIResource, APIResourceList, GroupVersionForDiscovery,
};

use super::*;

struct R {
    name: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    categories: &'static [&'static str],
}

fn r(name: &'static str, singular: &'static str, kind: &'static str) -> R {
    R {
        name,
        singular,
        kind,
        namespaced: true,
        short: &[],
        categories: &[],
    }
}

impl R {
    fn short(mut self, s: &'static [&'static str]) -> Self {
        self.short = s;
        self
    }
    fn cats(mut self, c: &'static [&'static str]) -> Self {
        self.categories = c;
        self
    }
    fn cluster(mut self) -> Self {
        self.namespaced = false;
        self
    }
    fn to_api(&self) -> APIResource {
        APIResource {
            name: self.name.into(),
            singular_name: self.singular.into(),
            kind: self.kind.into(),
            namespaced: self.namespaced,
            short_names: Some(self.short.iter().map(|s| s.to_string()).collect()),
            categories: Some(self.categories.iter().map(|s| s.to_string()).collect()),
            verbs: vec!["get".into(), "list".into()],
            ..APIResource::default()
        }
    }
}

/// (version, resources)
type Version<'a> = (&'a str, Vec<R>);

/// (group, preferred, versions)
fn discovery(groups: Vec<(&str, &str, Vec<Version<'_>>)>) -> ServerResources {
    let mut out = ServerResources::default();
    for (name, preferred, versions) in groups {
        let gvd = |v: &str| GroupVersionForDiscovery {
            group_version: GroupVersion::new(name, v).api_version(),
            version: v.into(),
        };
        out.groups.push(APIGroup {
            name: name.into(),
            versions: versions.iter().map(|(v, _)| gvd(v)).collect(),
            preferred_version: Some(gvd(preferred)),
            ..APIGroup::default()
        });
        for (v, resources) in versions {
            out.resources.push(APIResourceList {
                group_version: GroupVersion::new(name, v).api_version(),
                resources: resources.iter().map(R::to_api).collect(),
            });
        }
    }
    out
}

fn cluster() -> RestMapper {
    let mut d = discovery(vec![
        (
            "",
            "v1",
            vec![(
                "v1",
                vec![
                    r("pods", "pod", "Pod").short(&["po"]).cats(&["all"]),
                    r("pods/status", "", "Pod"),
                    r("pods/log", "", "Pod"),
                    r("services", "service", "Service")
                        .short(&["svc"])
                        .cats(&["all"]),
                    r("events", "event", "Event").short(&["ev"]),
                    r("nodes", "node", "Node").short(&["no"]).cluster(),
                    r("endpoints", "", "Endpoints").short(&["ep"]),
                ],
            )],
        ),
        (
            "apps",
            "v1",
            vec![
                (
                    "v1",
                    vec![
                        r("deployments", "deployment", "Deployment")
                            .short(&["deploy"])
                            .cats(&["all"]),
                        r("deployments/scale", "", "Scale"),
                    ],
                ),
                (
                    "v1beta1",
                    vec![
                        r("deployments", "deployment", "Deployment").short(&["deploy"]),
                        r("oldthings", "oldthing", "OldThing"),
                    ],
                ),
            ],
        ),
        (
            "events.k8s.io",
            "v1",
            vec![("v1", vec![r("events", "event", "Event").short(&["ev"])])],
        ),
        (
            "stable.example.com",
            "v2",
            vec![
                (
                    "v1",
                    vec![r("crontabs", "crontab", "CronTab")
                        .short(&["ct"])
                        .cats(&["all"])],
                ),
                (
                    "v2",
                    vec![r("crontabs", "crontab", "CronTab")
                        .short(&["ct"])
                        .cats(&["all"])],
                ),
            ],
        ),
        (
            "other.example.com",
            "v1",
            vec![(
                "v1",
                vec![
                    r("cthings", "cthing", "CThing").short(&["ct"]),
                    r("twins", "twin", "Twin").short(&["tw"]),
                    r("twins2", "twin", "Twin2"),
                ],
            )],
        ),
        (
            "storage.k8s.io",
            "v1",
            vec![(
                "v1",
                vec![r("storageclasses", "storageclass", "StorageClass")
                    .short(&["sc"])
                    .cluster()],
            )],
        ),
    ]);
    let gv = GroupVersion::new("metrics.k8s.io", "v1beta1");
    d.failed
        .insert(gv.clone(), Arc::new(Error::StaleGroupVersion(gv)));
    RestMapper::new(&d)
}

fn gvr(g: &str, v: &str, r: &str) -> GroupVersionResource {
    GroupVersionResource::new(g, v, r)
}

#[test]
fn resolves_plurals_singulars_short_names_and_kinds() {
    let m = cluster();
    let deployments = gvr("apps", "v1", "deployments");
    for name in [
        "deployments",
        "deployment",
        "deploy",
        "Deployments",
        "DEPLOY",
        "Deployment",
        "deployments.apps",
        "deploy.apps",
        "deployments.v1.apps",
        "Deployment.apps",
        "Deployment.v1.apps",
    ] {
        assert_eq!(m.find(name).unwrap().resource, deployments, "{name}");
    }
    assert_eq!(m.find("po").unwrap().resource, gvr("", "v1", "pods"));
    assert_eq!(
        m.find("Pod").unwrap().gvk,
        GroupVersionKind::new("", "v1", "Pod")
    );
    assert_eq!(
        m.find("deployments.v1beta1.apps").unwrap().resource,
        gvr("apps", "v1beta1", "deployments"),
        "an explicit version wins over the preferred one"
    );
    assert_eq!(
        m.find("oldthings").unwrap().resource,
        gvr("apps", "v1beta1", "oldthings"),
        "a resource only in a non-preferred version is found there"
    );
    assert_eq!(
        m.find("crontabs.stable.example.com").unwrap().resource,
        gvr("stable.example.com", "v2", "crontabs"),
        "resource.group with dots in the group; preferred version v2"
    );
    assert_eq!(
        m.find("crontabs.v1.stable.example.com").unwrap().resource,
        gvr("stable.example.com", "v1", "crontabs")
    );
    assert_eq!(
        m.find("CronTab").unwrap().gvk,
        GroupVersionKind::new("stable.example.com", "v2", "CronTab")
    );
    assert_eq!(
        m.find("storageclasses.storage").unwrap().resource,
        gvr("storage.k8s.io", "v1", "storageclasses"),
        "group prefixes match"
    );
    assert_eq!(
        m.find("endpoints").unwrap().singular,
        "endpoints",
        "a missing singular is guessed from the kind"
    );
    assert!(!m.find("nodes").unwrap().namespaced());
}

#[test]
fn core_group_has_priority() {
    let m = cluster();
    assert_eq!(m.find("events").unwrap().resource, gvr("", "v1", "events"));
    assert_eq!(m.find("ev").unwrap().resource, gvr("", "v1", "events"));
    assert_eq!(
        m.find("events.events.k8s.io").unwrap().resource,
        gvr("events.k8s.io", "v1", "events")
    );
    assert_eq!(
        m.resources_for(&gvr("", "", "events")).unwrap(),
        [
            gvr("", "v1", "events"),
            gvr("events.k8s.io", "v1", "events")
        ]
    );
    assert_eq!(
        m.kinds_for(&gvr("", "", "deployments")).unwrap(),
        [
            GroupVersionKind::new("apps", "v1", "Deployment"),
            GroupVersionKind::new("apps", "v1beta1", "Deployment")
        ],
        "preferred version first"
    );
}

#[test]
fn shared_short_names_resolve_by_priority_and_report_the_rest() {
    let m = cluster();
    let e = m.expand_short_name(&gvr("", "", "ct"));
    assert_eq!(e.resource, gvr("stable.example.com", "", "crontabs"));
    assert_eq!(
        e.also_matches,
        [GroupResource::new("other.example.com", "cthings")],
        "the same group-resource in two versions is no ambiguity"
    );
    assert_eq!(
        m.find("ct").unwrap().resource,
        gvr("stable.example.com", "v2", "crontabs")
    );
    assert_eq!(
        m.find("ct.other.example.com").unwrap().resource,
        gvr("other.example.com", "v1", "cthings"),
        "a group narrows a short name"
    );
    let plain = m.expand_short_name(&gvr("", "", "pods"));
    assert_eq!(plain.resource, gvr("", "", "pods"));
    assert!(plain.also_matches.is_empty());
}

#[test]
fn unknown_names_are_typed_errors() {
    let m = cluster();
    let e = m.find("nosuchthing").unwrap_err();
    assert!(matches!(&e, MapperError::UnknownResourceType { name } if name == "nosuchthing"));
    assert!(e.is_no_match());
    assert_eq!(
        e.to_string(),
        "the server doesn't have a resource type \"nosuchthing\""
    );

    let e = m
        .resource_for(&gvr("apps", "v9", "deployments"))
        .unwrap_err();
    assert!(e.is_no_match());
    assert_eq!(
        e.to_string(),
        "no matches for apps/v9, Resource=deployments"
    );

    let e = m
        .rest_mapping(&GroupKind::new("apps", "Nope"), &[])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "no matches for kind \"Nope\" in group \"apps\""
    );
    let e = m
        .rest_mapping(&GroupKind::new("apps", "Deployment"), &["v9"])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "no matches for kind \"Deployment\" in version \"apps/v9\""
    );
    let e = m
        .rest_mapping(&GroupKind::new("apps", "Deployment"), &["v9", "v8"])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "no matches for kind \"Deployment\" in versions [\"apps/v8\", \"apps/v9\"]"
    );
    let e = m.resource_for(&gvr("", "", "")).unwrap_err();
    assert!(matches!(e, MapperError::EmptyResource(_)));
    assert_eq!(
        m.failed_group_versions(),
        [GroupVersion::new("metrics.k8s.io", "v1beta1")]
    );
}

#[test]
fn ties_in_one_group_version_are_ambiguous() {
    let m = cluster();
    let e = m.find("twin").unwrap_err();
    assert!(e.is_ambiguous(), "{e}");
    match &e {
        MapperError::AmbiguousResource { matching, .. } => assert_eq!(
            matching,
            &[
                gvr("other.example.com", "v1", "twins"),
                gvr("other.example.com", "v1", "twins2")
            ]
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        e.to_string(),
        "/, Resource=twin matches multiple resources [other.example.com/v1, Resource=twins; \
         other.example.com/v1, Resource=twins2]"
    );
    assert!(m.kind_for(&gvr("", "", "twin")).unwrap_err().is_ambiguous());
    assert_eq!(
        m.find("twins").unwrap().gvk.kind,
        "Twin",
        "the plural is unique"
    );
}

#[test]
fn kinds_map_to_resources_in_the_right_version() {
    let m = cluster();
    let gk = GroupKind::new("apps", "Deployment");
    assert_eq!(
        m.rest_mapping(&gk, &[]).unwrap().resource,
        gvr("apps", "v1", "deployments")
    );
    assert_eq!(
        m.rest_mapping(&gk, &["v1beta1"]).unwrap().resource,
        gvr("apps", "v1beta1", "deployments")
    );
    assert_eq!(
        m.rest_mapping(&gk, &["v9", "v1beta1", "v1"])
            .unwrap()
            .gvk
            .version,
        "v1beta1",
        "the first listed version that has the kind"
    );
    assert_eq!(
        m.rest_mapping(&GroupKind::new("apps", "deployment"), &[])
            .unwrap()
            .gvk
            .kind,
        "Deployment",
        "lower-case kinds match too"
    );
    let all: Vec<String> = m
        .rest_mappings(&gk, &[])
        .unwrap()
        .iter()
        .map(|m| m.gvk.version.clone())
        .collect();
    assert_eq!(all, ["v1", "v1beta1"]);
    assert_eq!(
        m.kind_for(&gvr("", "", "po")).unwrap(),
        GroupVersionKind::new("", "v1", "Pod")
    );
    assert_eq!(m.resource_singularizer("pods").unwrap(), "pod");
    assert_eq!(m.resource_singularizer("deploy").unwrap(), "deployment");
}

#[test]
fn mappings_carry_subresources_and_api_resources() {
    let m = cluster();
    let pods = m.find("pods").unwrap();
    assert_eq!(pods.subresources, ["status", "log"]);
    assert_eq!(pods.short_names, ["po"]);
    let api = pods.api_resource();
    assert_eq!(
        api.collection_path(Some("ns")),
        "/api/v1/namespaces/ns/pods"
    );
    assert!(api.has_subresource("status"));
    assert!(api.supports_verb("list") && !api.supports_verb("delete"));
    let deploy = m.find("deploy").unwrap();
    assert_eq!(deploy.subresources, ["scale"]);
    assert!(
        m.mappings().all(|m| !m.resource.resource.contains('/')),
        "subresources are no mappings of their own"
    );
}

#[test]
fn categories_expand_in_discovery_order_once() {
    let m = cluster();
    assert_eq!(
        m.expand_category("all").unwrap(),
        [
            GroupResource::new("", "pods"),
            GroupResource::new("", "services"),
            GroupResource::new("apps", "deployments"),
            GroupResource::new("stable.example.com", "crontabs"),
        ]
    );
    let versions: Vec<String> = m
        .category_mappings("all")
        .unwrap()
        .iter()
        .map(|m| m.resource.to_string())
        .collect();
    assert_eq!(
        versions,
        [
            "/v1, Resource=pods",
            "/v1, Resource=services",
            "apps/v1, Resource=deployments",
            "stable.example.com/v2, Resource=crontabs"
        ]
    );
    assert_eq!(m.expand_category("nope"), None);
}

#[test]
fn parses_arguments_like_apimachinery() {
    assert_eq!(
        parse_resource_arg("deployments.v1.apps"),
        (
            Some(gvr("apps", "v1", "deployments")),
            GroupResource::new("v1.apps", "deployments")
        )
    );
    assert_eq!(
        parse_resource_arg("pods"),
        (None, GroupResource::new("", "pods"))
    );
    assert_eq!(
        parse_kind_arg("Deployment.apps"),
        (None, GroupKind::new("apps", "Deployment"))
    );
    assert_eq!(
        parse_kind_arg("CronTab.v1.stable.example.com").0,
        Some(GroupVersionKind::new("stable.example.com", "v1", "CronTab"))
    );
}

#[test]
fn empty_discovery_maps_nothing() {
    let m = RestMapper::new(&ServerResources {
        groups: vec![],
        resources: vec![],
        failed: BTreeMap::new(),
    });
    assert!(m.find("pods").unwrap_err().is_no_match());
    assert_eq!(m.mappings().count(), 0);
}
