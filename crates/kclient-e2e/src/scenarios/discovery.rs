//! Discovery: what a server says about the resources kclient-fake serves, in aggregated
//! discovery (`/api` and `/apis` as `apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`) and in
//! legacy discovery (`/api`, `/apis`, `/api/v1`, `/apis/{group}/{version}`).
//!
//! The scope is the fake's: the group versions and resources a fresh kclient-fake lists in its
//! own aggregated discovery. kube-apiserver serves many more (and the real cluster may hold
//! other suites' CustomResourceDefinitions); those are left out, so the transcripts of both
//! targets cover the same resources, and a resource of the fake's that the real server does
//! not serve shows up as `not served`.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{ensure, Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use crate::client::ApiClient;
use crate::target::{Target, TargetKind};
use crate::transcript::Transcript;

/// The `Accept` header (and response content type) of aggregated discovery v2.
pub const AGGREGATED_DISCOVERY: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// `(group, version, resource)`.
type Key = (String, String, String);

/// One server's discovery, reduced to what the scenario compares.
#[derive(Debug, Default)]
struct View {
    /// Group (`""` for core) → preferred version.
    preferred: BTreeMap<String, String>,
    /// The named groups in the order served (priority order).
    order: Vec<String>,
    /// Every resource, normalised (see [`normalised`]).
    resources: BTreeMap<Key, Value>,
}

impl View {
    fn group_versions(&self) -> BTreeSet<(String, String)> {
        self.resources
            .keys()
            .map(|(g, v, _)| (g.clone(), v.clone()))
            .collect()
    }
}

fn str_of(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().into_iter().flatten().map(str_of).collect()
}

fn sorted(value: &Value) -> Vec<String> {
    let mut out = strings(value);
    out.sort();
    out
}

/// `{group, version, kind}` as the server wrote them, absent parts as `""`. Both shapes leave
/// the group and version empty where they are the resource's own (kube-apiserver's built-in
/// resources do; custom resources name them), so that is recorded as served.
fn response_kind(value: &Value) -> Value {
    json!({
        "group": str_of(&value["group"]),
        "version": str_of(&value["version"]),
        "kind": str_of(&value["kind"]),
    })
}

/// The comparable form of one resource: kind, singular name, scope, sorted verbs, short
/// names, categories and the subresources (sorted by name) with their kinds and sorted verbs.
fn normalised(
    kind: Value,
    singular: String,
    namespaced: bool,
    main: &Value,
    subresources: BTreeMap<String, Value>,
) -> Value {
    json!({
        "kind": kind,
        "singularName": singular,
        "scope": if namespaced { "Namespaced" } else { "Cluster" },
        "verbs": sorted(&main["verbs"]),
        "shortNames": strings(&main["shortNames"]),
        "categories": strings(&main["categories"]),
        "subresources": subresources,
    })
}

/// Aggregated discovery of `/api` and `/apis`.
async fn aggregated(client: &ApiClient) -> Result<View> {
    let mut view = View::default();
    for path in ["/api", "/apis"] {
        let response = client
            .get_accepting(path, &format!("{AGGREGATED_DISCOVERY},application/json"))
            .await?
            .expect(StatusCode::OK)?;
        let content_type = response.content_type.clone().unwrap_or_default();
        ensure!(
            content_type.starts_with(AGGREGATED_DISCOVERY),
            "{path} answered aggregated discovery as {content_type:?}"
        );
        let body = response.body;
        ensure!(
            body["kind"] == "APIGroupDiscoveryList"
                && body["apiVersion"] == "apidiscovery.k8s.io/v2",
            "{path} is not an APIGroupDiscoveryList: {body}"
        );
        for item in body["items"].as_array().into_iter().flatten() {
            let group = str_of(&item["metadata"]["name"]);
            if path == "/apis" {
                view.order.push(group.clone());
            }
            let versions = item["versions"].as_array().cloned().unwrap_or_default();
            if let Some(first) = versions.first() {
                view.preferred
                    .insert(group.clone(), str_of(&first["version"]));
            }
            for version in &versions {
                let v = str_of(&version["version"]);
                for r in version["resources"].as_array().into_iter().flatten() {
                    let subresources = r["subresources"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|s| {
                            (
                                str_of(&s["subresource"]),
                                json!({"kind": response_kind(&s["responseKind"]),
                                       "verbs": sorted(&s["verbs"])}),
                            )
                        })
                        .collect();
                    view.resources.insert(
                        (group.clone(), v.clone(), str_of(&r["resource"])),
                        normalised(
                            response_kind(&r["responseKind"]),
                            str_of(&r["singularResource"]),
                            r["scope"] == "Namespaced",
                            r,
                            subresources,
                        ),
                    );
                }
            }
        }
    }
    Ok(view)
}

/// Legacy discovery: `/api` and `/apis` for the preferred versions, and the resource lists of
/// `group_versions`.
async fn legacy(client: &ApiClient, group_versions: &BTreeSet<(String, String)>) -> Result<View> {
    let mut view = View::default();
    let api = client
        .get_accepting("/api", "application/json")
        .await?
        .expect(StatusCode::OK)?
        .body;
    ensure!(api["kind"] == "APIVersions", "/api: {api}");
    if let Some(first) = api["versions"].as_array().and_then(|v| v.first()) {
        view.preferred.insert(String::new(), str_of(first));
    }
    let apis = client
        .get_accepting("/apis", "application/json")
        .await?
        .expect(StatusCode::OK)?
        .body;
    ensure!(apis["kind"] == "APIGroupList", "/apis: {apis}");
    for group in apis["groups"].as_array().into_iter().flatten() {
        view.order.push(str_of(&group["name"]));
        view.preferred.insert(
            str_of(&group["name"]),
            str_of(&group["preferredVersion"]["version"]),
        );
    }
    for (group, version) in group_versions {
        let path = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let response = client.get_accepting(&path, "application/json").await?;
        if response.status == StatusCode::NOT_FOUND {
            continue;
        }
        let list = response.expect(StatusCode::OK)?.body;
        ensure!(list["kind"] == "APIResourceList", "{path}: {list}");
        let entries = list["resources"].as_array().cloned().unwrap_or_default();
        let kind_of = |entry: &Value| response_kind(entry);
        for main in entries.iter().filter(|e| !str_of(&e["name"]).contains('/')) {
            let name = str_of(&main["name"]);
            let prefix = format!("{name}/");
            let subresources = entries
                .iter()
                .filter_map(|e| {
                    let sub = str_of(&e["name"]).strip_prefix(&prefix)?.to_string();
                    Some((
                        sub,
                        json!({"kind": kind_of(e), "verbs": sorted(&e["verbs"])}),
                    ))
                })
                .collect();
            view.resources.insert(
                (group.clone(), version.clone(), name),
                normalised(
                    kind_of(main),
                    str_of(&main["singularName"]),
                    main["namespaced"] == true,
                    main,
                    subresources,
                ),
            );
        }
    }
    Ok(view)
}

/// For every group and resource kclient-fake serves: the preferred version, and each
/// resource's kind, singular name, scope, verbs, short names, categories and subresources, as
/// aggregated and as legacy discovery describe them (which must agree on any server).
pub async fn discovery(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    // The scope: what a fresh kclient-fake serves, from its own discovery.
    let scope = match target.kind {
        TargetKind::Fake => aggregated(&client).await?,
        TargetKind::Real => {
            let fake = Target::fake().await?;
            aggregated(&fake.client()?)
                .await
                .context("reading kclient-fake's discovery for the scope")?
        }
    };
    ensure!(
        !scope.resources.is_empty(),
        "kclient-fake's aggregated discovery lists no resources"
    );
    let mut t = Transcript::new();
    let aggregated = aggregated(&client).await?;
    let legacy = legacy(&client, &scope.group_versions()).await?;

    let in_scope = |order: &[String]| -> Vec<String> {
        order
            .iter()
            .filter(|g| scope.preferred.contains_key(*g))
            .cloned()
            .collect()
    };
    t.record(
        "group order",
        json!({"aggregated": in_scope(&aggregated.order), "legacy": in_scope(&legacy.order)}),
    );
    for group in scope.preferred.keys() {
        let name = if group.is_empty() { "core" } else { group };
        let in_aggregated = aggregated.preferred.get(group);
        let in_legacy = legacy.preferred.get(group);
        t.record(
            format!("{name}: preferred version"),
            json!({"aggregated": in_aggregated, "legacy": in_legacy}),
        );
    }
    for key in scope.resources.keys() {
        let (group, version, resource) = key;
        let gv = if group.is_empty() {
            version.clone()
        } else {
            format!("{group}/{version}")
        };
        let not_served = json!("not served");
        let in_aggregated = aggregated.resources.get(key).unwrap_or(&not_served);
        let in_legacy = legacy.resources.get(key).unwrap_or(&not_served);
        t.record(
            format!("{gv} {resource}: aggregated"),
            in_aggregated.clone(),
        );
        t.record(format!("{gv} {resource}: legacy"), in_legacy.clone());
        ensure!(
            in_aggregated == in_legacy,
            "aggregated and legacy discovery disagree about {gv} {resource}: \
             {in_aggregated} versus {in_legacy}"
        );
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_verbs_and_fills_in_defaults() {
        let kind = response_kind(&json!({"kind": "Deployment"}));
        assert_eq!(
            kind,
            json!({"group": "", "version": "", "kind": "Deployment"})
        );
        let normal = normalised(
            kind,
            "deployment".into(),
            true,
            &json!({"verbs": ["watch", "get"], "shortNames": ["deploy"]}),
            BTreeMap::new(),
        );
        assert_eq!(normal["verbs"], json!(["get", "watch"]));
        assert_eq!(normal["categories"], json!([]));
        assert_eq!(normal["scope"], "Namespaced");
    }
}
