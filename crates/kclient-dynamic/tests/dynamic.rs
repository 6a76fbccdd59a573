//! The dynamic client against kclient-fake over HTTP: every verb on a custom resource and on
//! built-ins, lossless round trips of unknown fields, list type filling, watch, the
//! ListerWatcher implementations, the shared pager, scope checks and typed errors.

use crate::common;

use std::collections::BTreeSet;

use futures::StreamExt;
use kclient_core::{
    ApiResource, ApiStatus, CreateOptions, DeleteOptions, DeleteResponse, DynamicObject,
    GetOptions, GroupVersionKind, GroupVersionResource, JsonPatch, ListOptions, ListerWatcher,
    Patch, PatchOptions, ResourceExt, TypeMeta, UpdateOptions, WatchEvent,
};
use kclient_dynamic::{DynamicClient, DynamicResource, Error};
use kclient_fake::FakeApiServer;
use kclient_rest::{Config, RefusedRequest, RestClient};
use serde_json::{json, Value};

use common::setup;

fn crontabs_gvr() -> GroupVersionResource {
    GroupVersionResource::new("stable.example.com", "v1", "crontabs")
}

fn crontabs_api() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::new("stable.example.com", "v1", "CronTab"),
        "crontabs",
        true,
    )
}

async fn install_crd(client: &DynamicClient) {
    let crds = client.resource(GroupVersionResource::new(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
    ));
    let crd: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com", "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab",
                      "listKind": "CronTabList", "shortNames": ["ct"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object",
                                     "x-kubernetes-preserve-unknown-fields": true}},
                          "subresources": {"status": {}}}]
        }
    }))
    .unwrap();
    crds.create(&crd, &CreateOptions::default()).await.unwrap();
}

/// A CronTab with fields no schema in kclient knows: nested, numeric, null, unicode, empty.
fn crontab(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": name, "labels": {"app": "backup"}},
        "spec": {
            "cronSpec": "*/5 * * * *",
            "image": "backup:1",
            "replicas": 3,
            "ratio": 0.25,
            "huge": 9007199254740993u64,
            "negative": -42,
            "nothing": null,
            "emptyObject": {},
            "emptyList": [],
            "unicode": "größe ✓ 日本",
            "nested": {"deeper": [{"a": 1}, [true, false], "x"]}
        },
        "x-vendor-extension": {"keep": ["me", 1, {"too": null}]},
        "status": {"ignored": "on create"}
    }))
    .unwrap()
}

/// The non-metadata fields of an object as JSON.
fn fields(obj: &DynamicObject) -> Value {
    obj.data.clone()
}

#[tokio::test]
async fn custom_resources_round_trip_unknown_fields_losslessly() {
    let (_server, client) = setup().await;
    install_crd(&client).await;
    let cts = client.resource(crontabs_gvr()).namespace("default");
    let original = crontab("nightly");

    let created = cts
        .create(&original, &CreateOptions::default())
        .await
        .unwrap();
    let mut expected = fields(&original);
    expected
        .as_object_mut()
        .unwrap()
        .remove("status")
        .expect("status was sent");
    let mut got = fields(&created);
    got.as_object_mut().unwrap().remove("status");
    assert_eq!(got, expected, "create keeps every unknown field");
    assert_eq!(created.data["spec"]["huge"], json!(9007199254740993u64));
    assert_eq!(
        created.types,
        Some(TypeMeta::new("stable.example.com/v1", "CronTab"))
    );
    assert_eq!(created.namespace(), Some("default"));
    assert!(created.uid().is_some() && created.resource_version().is_some());

    let read = cts.get("nightly", &GetOptions::default()).await.unwrap();
    assert_eq!(read, created, "get returns what create stored");

    // The whole object round-trips through serde exactly as the server sent it.
    let as_json = serde_json::to_value(&read).unwrap();
    let back: DynamicObject = serde_json::from_value(as_json.clone()).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), as_json);

    // Update sends unknown fields back unchanged, and changes what it changes.
    let mut changed = read.clone();
    changed.data["spec"]["image"] = json!("backup:2");
    changed.data["x-vendor-extension"]["added"] = json!([1.5, "two"]);
    let updated = cts
        .update(&changed, &UpdateOptions::default())
        .await
        .unwrap();
    assert_eq!(updated.data["spec"], changed.data["spec"]);
    assert_eq!(
        updated.data["x-vendor-extension"],
        changed.data["x-vendor-extension"]
    );
    assert_ne!(updated.resource_version(), read.resource_version());
}

#[tokio::test]
async fn lists_carry_item_types_and_apply_selectors() {
    let (server, client) = setup().await;
    install_crd(&client).await;
    let cts = client.resource(crontabs_gvr()).namespace("default");
    for name in ["a", "b", "c"] {
        cts.create(&crontab(name), &CreateOptions::default())
            .await
            .unwrap();
    }
    let raw: Value = raw_get(
        &server,
        "/apis/stable.example.com/v1/namespaces/default/crontabs",
    )
    .await;
    assert_eq!(raw["kind"], "CronTabList");

    let list = cts.list(&ListOptions::default()).await.unwrap();
    assert_eq!(list.items.len(), 3);
    assert!(list.resource_version().is_some());
    for item in &list {
        assert_eq!(
            item.types,
            Some(TypeMeta::new("stable.example.com/v1", "CronTab"))
        );
        assert_eq!(item.data["spec"]["unicode"], "größe ✓ 日本");
    }
    let names: Vec<&str> = list.iter().map(|o| o.name_any()).collect();
    assert_eq!(names, ["a", "b", "c"]);

    // Selectors and all namespaces.
    let cm = client.resource(GroupVersionResource::new("", "v1", "configmaps"));
    for (ns, name, tier) in [
        ("default", "one", "web"),
        ("kube-public", "two", "db"),
        ("kube-public", "three", "web"),
    ] {
        cm.clone()
            .namespace(ns)
            .create(
                &serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "labels": {"tier": tier}}}))
                .unwrap(),
                &CreateOptions::default(),
            )
            .await
            .unwrap();
    }
    let web = cm
        .list(&ListOptions::default().labels("tier=web"))
        .await
        .unwrap();
    let keys: BTreeSet<String> = web
        .iter()
        .map(|o| format!("{}/{}", o.namespace().unwrap(), o.name_any()))
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from(["default/one".to_string(), "kube-public/three".to_string()])
    );
    assert!(web
        .iter()
        .all(|o| o.types == Some(TypeMeta::new("v1", "ConfigMap"))));
}

async fn raw_get(server: &FakeApiServer, path: &str) -> Value {
    RestClient::new(Config::new(server.url()))
        .unwrap()
        .get()
        .abs_path(path)
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn built_in_list_items_get_their_type_from_the_list() {
    let (server, client) = setup().await;
    let cms = client
        .resource(GroupVersionResource::new("", "v1", "configmaps"))
        .namespace("default");
    cms.create(
        &serde_json::from_value(json!({"metadata": {"name": "cm"}})).unwrap(),
        &CreateOptions::default(),
    )
    .await
    .unwrap();
    let raw = raw_get(&server, "/api/v1/namespaces/default/configmaps").await;
    assert!(raw["items"][0].get("kind").is_none(), "{}", raw["items"][0]);
    let list = cms.list(&ListOptions::default()).await.unwrap();
    assert_eq!(list.items[0].types, Some(TypeMeta::new("v1", "ConfigMap")));
}

#[tokio::test]
async fn status_subresource_updates_patches_and_applies() {
    let (_server, client) = setup().await;
    install_crd(&client).await;
    let cts = client.resource(crontabs_api()).namespace("default");
    let created = cts
        .create(&crontab("nightly"), &CreateOptions::default())
        .await
        .unwrap();
    assert!(
        created.data.get("status").is_none(),
        "status is ignored on create"
    );

    let mut with_status = created.clone();
    with_status.data["status"] = json!({"lastRun": "2025-01-01T00:00:00Z", "runs": 7});
    with_status.data["spec"]["image"] = json!("ignored:by-status");
    let updated = cts
        .update_status(&with_status, &UpdateOptions::default())
        .await
        .unwrap();
    assert_eq!(updated.data["status"]["runs"], 7);
    assert_eq!(
        updated.data["spec"]["image"], "backup:1",
        "spec is not changed by a status update"
    );

    let patched = cts
        .patch_status(
            "nightly",
            &Patch::Merge(json!({"status": {"runs": 8}})),
            &PatchOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["status"]["runs"], 8);
    assert_eq!(patched.data["status"]["lastRun"], "2025-01-01T00:00:00Z");

    let status: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "nightly"},
        "status": {"phase": "Healthy"}
    }))
    .unwrap();
    let applied = cts
        .apply_status("nightly", &status, &PatchOptions::apply("status-writer"))
        .await
        .unwrap();
    assert_eq!(applied.data["status"]["phase"], "Healthy");
    let read = cts
        .get_subresource("nightly", "status", &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(read.data["status"]["phase"], "Healthy");
}

#[tokio::test]
async fn every_patch_type() {
    let (_server, client) = setup().await;
    install_crd(&client).await;
    let cts = client.resource(crontabs_gvr()).namespace("default");
    cts.create(&crontab("p"), &CreateOptions::default())
        .await
        .unwrap();

    let json_patch = Patch::json(
        JsonPatch::new()
            .test("/spec/replicas", 3)
            .replace("/spec/replicas", 5)
            .add("/spec/nested/deeper/-", json!({"b": 2}))
            .remove("/spec/nothing"),
    );
    let p = cts
        .patch("p", &json_patch, &PatchOptions::default())
        .await
        .unwrap();
    assert_eq!(p.data["spec"]["replicas"], 5);
    assert_eq!(p.data["spec"]["nested"]["deeper"][3], json!({"b": 2}));
    assert!(p.data["spec"].get("nothing").is_none());
    assert_eq!(
        p.data["x-vendor-extension"],
        crontab("p").data["x-vendor-extension"]
    );

    let merge = Patch::Merge(json!({"spec": {"image": "backup:9", "ratio": null}}));
    let p = cts
        .patch("p", &merge, &PatchOptions::default())
        .await
        .unwrap();
    assert_eq!(p.data["spec"]["image"], "backup:9");
    assert!(
        p.data["spec"].get("ratio").is_none(),
        "null deletes in a merge patch"
    );

    // Strategic merge patch: refused for custom resources, as by kube-apiserver...
    let strategic = Patch::Strategic(json!({"spec": {"image": "x"}}));
    let err = cts
        .patch("p", &strategic, &PatchOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), Some(415), "{err}");
    // ...and merging lists by key for built-ins.
    let deployments = client
        .resource(GroupVersionResource::new("apps", "v1", "deployments"))
        .namespace("default");
    deployments
        .create(&deployment("web"), &CreateOptions::default())
        .await
        .unwrap();
    let strategic = Patch::Strategic(json!({"spec": {"template": {"spec": {
        "containers": [{"name": "sidecar", "image": "envoy:1"}]}}}}));
    let d = deployments
        .patch("web", &strategic, &PatchOptions::default())
        .await
        .unwrap();
    let containers: Vec<&str> = d.data["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(containers.len(), 2, "merged by name: {containers:?}");
    assert!(containers.contains(&"web") && containers.contains(&"sidecar"));

    // Apply, through `patch` too.
    let apply = Patch::Apply(json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "p"}, "spec": {"owner": "team-a"}
    }));
    let p = cts
        .patch("p", &apply, &PatchOptions::apply("team-a"))
        .await
        .unwrap();
    assert_eq!(p.data["spec"]["owner"], "team-a");
    assert_eq!(p.data["spec"]["image"], "backup:9", "other fields stay");

    // Scale of a built-in, as a subresource of another kind.
    let scale = deployments
        .get_subresource("web", "scale", &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(scale.types, Some(TypeMeta::new("autoscaling/v1", "Scale")));
    assert_eq!(scale.data["spec"]["replicas"], 1);
    let scaled = deployments
        .patch_subresource(
            "web",
            "scale",
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
            &PatchOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(scaled.data["spec"]["replicas"], 4);
    let mut scale = scaled;
    scale.data["spec"]["replicas"] = json!(2);
    let updated = deployments
        .update_subresource("scale", &scale, &UpdateOptions::default())
        .await
        .unwrap();
    assert_eq!(updated.data["spec"]["replicas"], 2);
    let d = deployments
        .get("web", &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(d.data["spec"]["replicas"], 2);
}

fn deployment(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": name, "image": "nginx:1"}]}}
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn server_side_apply_with_field_managers() {
    let (_server, client) = setup().await;
    install_crd(&client).await;
    let cts = client.resource(crontabs_gvr()).namespace("default");
    let mine: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "applied"},
        "spec": {"cronSpec": "0 * * * *", "image": "a:1", "x-unknown": {"deep": [1, 2]}}
    }))
    .unwrap();
    let created = cts
        .apply("applied", &mine, &PatchOptions::apply("alice"))
        .await
        .unwrap();
    assert_eq!(created.data["spec"]["x-unknown"], json!({"deep": [1, 2]}));
    let managers: Vec<String> = created
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert_eq!(managers, ["alice"]);

    let theirs: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "applied"}, "spec": {"image": "b:2"}
    }))
    .unwrap();
    let err = cts
        .apply("applied", &theirs, &PatchOptions::apply("bob"))
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    let forced = cts
        .apply("applied", &theirs, &PatchOptions::apply("bob").force(true))
        .await
        .unwrap();
    assert_eq!(forced.data["spec"]["image"], "b:2");

    // Refused before sending.
    let err = cts
        .apply("applied", &theirs, &PatchOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Refused(RefusedRequest::Options(_))),
        "{err}"
    );
    let err = cts
        .apply("applied", &forced, &PatchOptions::apply("bob"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Refused(RefusedRequest::ManagedFieldsSet)),
        "{err}"
    );
}

#[tokio::test]
async fn delete_and_delete_collection() {
    let (_server, client) = setup().await;
    install_crd(&client).await;
    let cts = client.resource(crontabs_gvr()).namespace("default");
    for (name, app) in [("a", "x"), ("b", "x"), ("c", "y"), ("d", "x")] {
        let mut ct = crontab(name);
        ct.metadata.labels = Some([("app".to_string(), app.to_string())].into());
        cts.create(&ct, &CreateOptions::default()).await.unwrap();
    }

    // A custom resource deleted at once is answered with a Status, as kube-apiserver does.
    let deleted = cts.delete("a", &DeleteOptions::default()).await.unwrap();
    assert!(
        matches!(deleted, DeleteResponse::Status(ref s) if s.is_success()),
        "{deleted:?}"
    );
    assert!(cts
        .get("a", &GetOptions::default())
        .await
        .unwrap_err()
        .is_not_found());

    // A finalizer keeps the object, now with a deletionTimestamp.
    let mut pinned = crontab("f");
    pinned.metadata.finalizers = Some(vec!["example.com/keep".into()]);
    cts.create(&pinned, &CreateOptions::default())
        .await
        .unwrap();
    let kept = cts.delete("f", &DeleteOptions::default()).await.unwrap();
    assert!(kept.object().unwrap().is_being_deleted());
    cts.patch(
        "f",
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        &PatchOptions::default(),
    )
    .await
    .unwrap();

    // Config maps answer with a Status.
    let cms = client
        .resource(GroupVersionResource::new("", "v1", "configmaps"))
        .namespace("default");
    cms.create(
        &serde_json::from_value(json!({"metadata": {"name": "cm"}})).unwrap(),
        &CreateOptions::default(),
    )
    .await
    .unwrap();
    let gone = cms.delete("cm", &DeleteOptions::default()).await.unwrap();
    assert!(
        matches!(gone, DeleteResponse::Status(ref s) if s.is_success()),
        "{gone:?}"
    );

    let response = cts
        .delete_collection(
            &DeleteOptions::background(),
            &ListOptions::default().labels("app=x"),
        )
        .await
        .unwrap();
    let list = response.into_object().expect("the deleted objects");
    let mut names: Vec<&str> = list.iter().map(|o| o.name_any()).collect();
    names.sort();
    assert_eq!(names, ["b", "d"]);
    assert!(list
        .iter()
        .all(|o| o.types.as_ref().is_some_and(|t| t.kind == "CronTab")));
    let left: Vec<String> = cts
        .list(&ListOptions::default())
        .await
        .unwrap()
        .iter()
        .map(|o| o.name_any().to_string())
        .collect();
    assert_eq!(left, ["c"]);
}

#[tokio::test]
async fn watch_sees_every_change_with_types() {
    let (_server, client) = setup().await;
    install_crd(&client).await;
    let cts = client.resource(crontabs_gvr()).namespace("default");
    let rv = cts
        .list(&ListOptions::default())
        .await
        .unwrap()
        .resource_version()
        .unwrap()
        .to_string();
    let mut events = cts
        .watch(
            &ListOptions::default()
                .resource_version(rv)
                .timeout_seconds(30),
        )
        .await
        .unwrap();
    let created = cts
        .create(&crontab("w"), &CreateOptions::default())
        .await
        .unwrap();
    cts.patch(
        "w",
        &Patch::Merge(json!({"spec": {"image": "new"}})),
        &PatchOptions::default(),
    )
    .await
    .unwrap();
    cts.delete("w", &DeleteOptions::default()).await.unwrap();

    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = events.next().await.expect("an event").unwrap();
        seen.push(event);
    }
    match &seen[0] {
        WatchEvent::Added(o) => {
            assert_eq!(o.uid(), created.uid());
            assert_eq!(o.data["spec"]["huge"], json!(9007199254740993u64));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(&seen[1], WatchEvent::Modified(o) if o.data["spec"]["image"] == "new"));
    assert!(matches!(&seen[2], WatchEvent::Deleted(o) if o.name_any() == "w"));
    for e in &seen {
        assert_eq!(
            e.object().unwrap().types,
            Some(TypeMeta::new("stable.example.com/v1", "CronTab"))
        );
    }

    let refused = cts
        .watch(
            &ListOptions::default()
                .resource_version_match(kclient_core::ResourceVersionMatch::Exact),
        )
        .await;
    assert!(matches!(
        refused,
        Err(Error::Refused(RefusedRequest::Options(_)))
    ));
}

async fn lw_list<L: ListerWatcher<DynamicObject>>(lw: &L) -> Vec<String> {
    let mut names: Vec<String> = lw
        .list(&ListOptions::default())
        .await
        .unwrap()
        .iter()
        .map(|o| o.name_any().to_string())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn lister_watchers_for_informers() {
    let (_server, client) = setup().await;
    install_crd(&client).await;
    let cts = client.resource(crontabs_gvr()).namespace("default");
    for (name, app) in [("a", "x"), ("b", "y")] {
        let mut ct = crontab(name);
        ct.metadata.labels = Some([("app".to_string(), app.to_string())].into());
        cts.create(&ct, &CreateOptions::default()).await.unwrap();
    }
    assert_eq!(lw_list(&cts).await, ["a", "b"]);
    let only_x = cts.filtered_list_watch(|o| o.label_selector = Some("app=x".into()));
    assert_eq!(lw_list(&only_x).await, ["a"]);
    assert_eq!(lw_list(&std::sync::Arc::new(only_x.clone())).await, ["a"]);

    let rv = ListerWatcher::list(&only_x, &ListOptions::default())
        .await
        .unwrap()
        .resource_version()
        .unwrap()
        .to_string();
    let mut events = ListerWatcher::watch(
        &only_x,
        &ListOptions::default()
            .resource_version(rv)
            .allow_watch_bookmarks(true)
            .timeout_seconds(30),
    )
    .await
    .unwrap();
    let mut other = crontab("c");
    other.metadata.labels = Some([("app".to_string(), "y".to_string())].into());
    cts.create(&other, &CreateOptions::default()).await.unwrap();
    let mut matching = crontab("d");
    matching.metadata.labels = Some([("app".to_string(), "x".to_string())].into());
    cts.create(&matching, &CreateOptions::default())
        .await
        .unwrap();
    let first = loop {
        match events.next().await.expect("an event").unwrap() {
            WatchEvent::Bookmark(_) => continue,
            e => break e,
        }
    };
    assert!(
        matches!(&first, WatchEvent::Added(o) if o.name_any() == "d"),
        "the selector applies to the watch: {first:?}"
    );
}

#[tokio::test]
async fn the_shared_pager_pages_a_dynamic_resource() {
    let (_server, client) = setup().await;
    let cms = client
        .resource(GroupVersionResource::new("", "v1", "configmaps"))
        .namespace("default");
    for i in 0..23 {
        let cm: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i:02}")}, "data": {"i": i.to_string()}
        }))
        .unwrap();
        cms.create(&cm, &CreateOptions::default()).await.unwrap();
    }
    let pager = kclient_core::ListPager::new(cms.clone()).page_size(5);
    let all = pager.list(&ListOptions::default()).await.unwrap();
    assert_eq!(all.items.len(), 23);
    assert_eq!(all.continue_token(), None);
    assert!(all
        .iter()
        .all(|o| o.types == Some(TypeMeta::new("v1", "ConfigMap"))));
    let pages: Vec<_> = pager
        .pages(&ListOptions::default())
        .collect::<Vec<_>>()
        .await;
    let sizes: Vec<usize> = pages
        .iter()
        .map(|p| p.as_ref().unwrap().items.len())
        .collect();
    assert_eq!(sizes, [5, 5, 5, 5, 3]);

    // One page by hand.
    let page = cms.list(&ListOptions::default().limit(10)).await.unwrap();
    assert_eq!(page.items.len(), 10);
    assert!(page.continue_token().is_some());
}

#[tokio::test]
async fn scope_is_checked_before_sending() {
    let (_server, client) = setup().await;
    install_crd(&client).await;
    let cts = client.resource(crontabs_api());
    let err = cts.get("x", &GetOptions::default()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Refused(RefusedRequest::NamespaceRequired { verb: "get", .. })
        ),
        "{err}"
    );
    let err = cts
        .create(&crontab("x"), &CreateOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Refused(RefusedRequest::NamespaceRequired { verb: "create", .. })
    ));
    assert!(
        cts.list(&ListOptions::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "listing across namespaces needs none"
    );
    let err = cts
        .clone()
        .namespace("default")
        .update(&DynamicObject::default(), &UpdateOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Refused(RefusedRequest::MissingName { verb: "update" })
    ));

    // Cluster-scoped resources ignore a namespace.
    let namespaces = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::new("", "v1", "Namespace"),
        "namespaces",
        false,
    );
    let ns = client.resource(&namespaces).namespace("ignored");
    let created = ns
        .create(
            &serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": "team-a"}}))
            .unwrap(),
            &CreateOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(created.name_any(), "team-a");
    assert!(ns
        .get("team-a", &GetOptions::default())
        .await
        .unwrap()
        .namespace()
        .is_none());
}

#[tokio::test]
async fn server_errors_are_typed() {
    let (_server, client) = setup().await;
    install_crd(&client).await;
    let cts: DynamicResource = client.resource(crontabs_gvr()).namespace("default");
    assert!(cts
        .get("missing", &GetOptions::default())
        .await
        .unwrap_err()
        .is_not_found());
    let created = cts
        .create(&crontab("dup"), &CreateOptions::default())
        .await
        .unwrap();
    assert!(cts
        .create(&crontab("dup"), &CreateOptions::default())
        .await
        .unwrap_err()
        .is_already_exists());
    let mut stale = created.clone();
    cts.patch(
        "dup",
        &Patch::Merge(json!({"spec": {"image": "moved-on"}})),
        &PatchOptions::default(),
    )
    .await
    .unwrap();
    stale.data["spec"]["image"] = json!("stale");
    assert!(cts
        .update(&stale, &UpdateOptions::default())
        .await
        .unwrap_err()
        .is_conflict());
    let unknown = client
        .resource(GroupVersionResource::new(
            "nope.example.com",
            "v1",
            "things",
        ))
        .namespace("default");
    assert!(unknown
        .list(&ListOptions::default())
        .await
        .unwrap_err()
        .is_not_found());
    let err = cts
        .list(&ListOptions::default().limit(-1))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Refused(RefusedRequest::Options(_))),
        "{err}"
    );
    let err = cts
        .create(&crontab("dry"), &CreateOptions::default().dry_run())
        .await
        .unwrap();
    assert_eq!(err.name_any(), "dry");
    assert!(
        cts.get("dry", &GetOptions::default())
            .await
            .unwrap_err()
            .is_not_found(),
        "dry run stores nothing"
    );
}

#[tokio::test]
async fn create_subresource_evicts_a_pod() {
    let (_server, client) = setup().await;
    let pods = client
        .resource(GroupVersionResource::new("", "v1", "pods"))
        .namespace("default");
    pods.create(
        &serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "victim"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}))
        .unwrap(),
        &CreateOptions::default(),
    )
    .await
    .unwrap();
    let eviction: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": "victim", "namespace": "default"}
    }))
    .unwrap();
    pods.create_subresource("eviction", &eviction, &CreateOptions::default())
        .await
        .unwrap();
    match pods.get("victim", &GetOptions::default()).await {
        Err(e) if e.is_not_found() => {}
        Ok(pod) => assert!(pod.is_being_deleted(), "evicted: {pod:?}"),
        Err(e) => panic!("{e}"),
    }
    let err = pods
        .create_subresource(
            "eviction",
            &DynamicObject::default(),
            &CreateOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Refused(RefusedRequest::MissingName { verb: "create" })
        ),
        "{err}"
    );
}
