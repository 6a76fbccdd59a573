//! Discovery: `/version`, `/api`, `/apis`, `/apis/{group}`, `/api/v1` and
//! `/apis/{group}/{version}` in the legacy shapes (`APIVersions`, `APIGroupList`, `APIGroup`,
//! `APIResourceList`), and aggregated discovery (`apidiscovery.k8s.io/v2`
//! `APIGroupDiscoveryList`) on `/api` and `/apis` when the `Accept` header asks for it.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{json, Value};

use crate::catalogue::{version_rank, Catalogue, ResourceInfo, CUSTOM_RESOURCE_VERBS};

/// The content type (and `Accept` entry) of aggregated discovery v2.
pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The version the fake server reports (the release its catalogue describes, the one the
/// workspace builds k8s-openapi for and the e2e suite's kube-apiserver runs).
pub const KUBERNETES_VERSION: (&str, &str) = ("1", "37");
/// The oldest minor release it claims compatibility with (kube-apiserver's: the previous one).
const MIN_COMPATIBILITY_MINOR: &str = "36";

/// Whether an `Accept` header asks for aggregated discovery v2.
pub fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|entry| {
        let params: Vec<&str> = entry.split(';').map(str::trim).collect();
        params
            .first()
            .is_some_and(|m| *m == "application/json" || *m == "*/*")
            && params.contains(&"g=apidiscovery.k8s.io")
            && params.contains(&"v=v2")
            && params.contains(&"as=APIGroupDiscoveryList")
    })
}

/// `/version`.
pub fn version() -> Value {
    let (major, minor) = KUBERNETES_VERSION;
    json!({
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": MIN_COMPATIBILITY_MINOR,
        "gitVersion": format!("v{major}.{minor}.0-kclient-fake"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-09-23T00:00:00Z",
        "goVersion": "go1.26.8",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// `/api` (legacy shape).
pub fn legacy_api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

/// The named groups with their versions, in preference order.
fn groups(catalogue: &Catalogue) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for gv in catalogue.group_versions() {
        if gv.group.is_empty() {
            continue;
        }
        match out.iter_mut().find(|(g, _)| *g == gv.group) {
            Some((_, versions)) => versions.push(gv.version),
            None => out.push((gv.group, vec![gv.version])),
        }
    }
    for (_, versions) in &mut out {
        versions.sort_by_key(|v| version_rank(v));
    }
    out
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({
        "name": group,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
    })
}

/// `/apis` (legacy shape).
pub fn api_group_list(catalogue: &Catalogue) -> Value {
    let groups: Vec<Value> = groups(catalogue)
        .iter()
        .map(|(g, vs)| group_json(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`, if served.
pub fn api_group(catalogue: &Catalogue, group: &str) -> Option<Value> {
    let (g, vs) = groups(catalogue).into_iter().find(|(g, _)| g == group)?;
    let mut v = group_json(&g, &vs);
    v["kind"] = json!("APIGroup");
    v["apiVersion"] = json!("v1");
    Some(v)
}

fn storage_version_hash(info: &ResourceInfo) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in format!(
        "{}/{}/{}",
        info.api.group,
        info.storage_version,
        info.kind()
    )
    .bytes()
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    base64::engine::general_purpose::STANDARD.encode(h.to_be_bytes())
}

const SUBRESOURCE_VERBS: &[&str] = &["get", "patch", "update"];

/// One subresource as discovery lists it: `group` and `version` are empty where they are the
/// resource's own (kube-apiserver leaves them out for built-in resources, in both shapes; it
/// names them for custom resources).
struct Subresource {
    name: String,
    group: String,
    version: String,
    kind: String,
    verbs: Vec<String>,
}

/// The group and version of a kind served by `info`, as discovery writes them.
fn own_group_version(info: &ResourceInfo, group: &str, version: &str) -> (String, String) {
    if !info.custom && group == info.api.group && version == info.api.version {
        (String::new(), String::new())
    } else {
        (group.to_string(), version.to_string())
    }
}

/// The verbs of `info` in the order kube-apiserver lists them (custom resources have an order
/// of their own).
fn verbs(info: &ResourceInfo) -> Vec<String> {
    let mut verbs = info.api.verbs.clone();
    if info.custom {
        verbs.sort_by_key(|v| {
            CUSTOM_RESOURCE_VERBS
                .iter()
                .position(|c| c == v)
                .unwrap_or(CUSTOM_RESOURCE_VERBS.len())
        });
    }
    verbs
}

/// The subresources of `info`: a built-in resource's sorted by name, a custom resource's
/// `status` then `scale`, as kube-apiserver lists them.
fn subresources(info: &ResourceInfo) -> Vec<Subresource> {
    let mut out = Vec::new();
    for sub in &info.api.subresources {
        let (group, version, kind) = if sub == "scale" {
            ("autoscaling", "v1", "Scale")
        } else {
            (
                info.api.group.as_str(),
                info.api.version.as_str(),
                info.kind(),
            )
        };
        let (group, version) = own_group_version(info, group, version);
        out.push(Subresource {
            name: sub.clone(),
            group,
            version,
            kind: kind.to_string(),
            verbs: SUBRESOURCE_VERBS.iter().map(|v| v.to_string()).collect(),
        });
    }
    for extra in &info.extra_subresources {
        let (group, version) = own_group_version(info, &extra.group, &extra.version);
        out.push(Subresource {
            name: extra.name.clone(),
            group,
            version,
            kind: extra.kind.clone(),
            verbs: extra.verbs.clone(),
        });
    }
    if info.custom {
        out.sort_by_key(|s| (s.name != "status", s.name.clone()));
    } else {
        out.sort_by(|a, b| a.name.cmp(&b.name));
    }
    out
}

/// `/api/v1` or `/apis/{group}/{version}` (legacy `APIResourceList`), if served.
pub fn resource_list(catalogue: &Catalogue, group: &str, version: &str) -> Option<Value> {
    let resources = catalogue.in_group_version(group, version);
    if resources.is_empty() {
        return None;
    }
    let mut list = Vec::new();
    for info in &resources {
        let mut r = json!({
            "name": info.api.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced(),
            "kind": info.kind(),
            "verbs": verbs(info),
        });
        if !info.short_names.is_empty() {
            r["shortNames"] = json!(info.short_names);
        }
        if !info.categories.is_empty() {
            r["categories"] = json!(info.categories);
        }
        r["storageVersionHash"] = json!(storage_version_hash(info));
        list.push(r);
        for sub in subresources(info) {
            let mut s = json!({
                "name": format!("{}/{}", info.api.plural, sub.name),
                "singularName": "",
                "namespaced": info.namespaced(),
                "kind": sub.kind,
                "verbs": sub.verbs,
            });
            if !sub.group.is_empty() || !sub.version.is_empty() {
                s["group"] = json!(sub.group);
                s["version"] = json!(sub.version);
            }
            list.push(s);
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let mut out = json!({"kind": "APIResourceList", "groupVersion": gv, "resources": list});
    if !group.is_empty() {
        out["apiVersion"] = json!("v1");
    }
    Some(out)
}

fn resource_discovery(info: &ResourceInfo) -> Value {
    let (group, version) = own_group_version(info, &info.api.group, &info.api.version);
    let mut r = json!({
        "resource": info.api.plural,
        "responseKind": {"group": group, "version": version, "kind": info.kind()},
        "scope": if info.namespaced() { "Namespaced" } else { "Cluster" },
        "singularResource": info.singular,
        "verbs": verbs(info),
    });
    if !info.short_names.is_empty() {
        r["shortNames"] = json!(info.short_names);
    }
    if !info.categories.is_empty() {
        r["categories"] = json!(info.categories);
    }
    let subs: Vec<Value> = subresources(info)
        .into_iter()
        .map(|s| {
            json!({"subresource": s.name,
                   "responseKind": {"group": s.group, "version": s.version, "kind": s.kind},
                   "verbs": s.verbs})
        })
        .collect();
    if !subs.is_empty() {
        r["subresources"] = json!(subs);
    }
    r
}

fn group_discovery(catalogue: &Catalogue, group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let resources: Vec<Value> = catalogue
                .in_group_version(group, v)
                .iter()
                .map(|i| resource_discovery(i))
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let metadata = if group.is_empty() {
        json!({})
    } else {
        json!({"name": group})
    };
    json!({"metadata": metadata, "versions": versions})
}

/// Aggregated discovery for `/api` (`legacy = true`) or `/apis`.
pub fn aggregated(catalogue: &Catalogue, legacy: bool) -> Value {
    let items: Vec<Value> = if legacy {
        vec![group_discovery(catalogue, "", &["v1".to_string()])]
    } else {
        let mut by_group: BTreeMap<usize, Value> = BTreeMap::new();
        for (i, (g, vs)) in groups(catalogue).iter().enumerate() {
            by_group.insert(i, group_discovery(catalogue, g, vs));
        }
        by_group.into_values().collect()
    };
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_negotiation() {
        assert!(wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
        ));
        assert!(!wants_aggregated("application/json"));
        assert!(!wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        ));
    }

    #[test]
    fn shapes() {
        let c = Catalogue::builtin();
        let core = resource_list(&c, "", "v1").unwrap();
        assert!(core.get("apiVersion").is_none());
        let pods = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "pods")
            .unwrap();
        assert_eq!(pods["shortNames"], json!(["po"]));
        let apps = resource_list(&c, "apps", "v1").unwrap();
        assert_eq!(apps["apiVersion"], "v1");
        assert!(apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "deployments/scale" && r["kind"] == "Scale"));
        let groups = api_group_list(&c);
        assert_eq!(groups["groups"][0]["name"], "apps");
        let agg = aggregated(&c, false);
        assert_eq!(agg["items"][0]["metadata"]["name"], "apps");
        assert!(resource_list(&c, "nope", "v1").is_none());
    }
}
