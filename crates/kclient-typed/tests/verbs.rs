//! Every verb of `ResourceClient` against kclient-fake over HTTP.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Namespace, Node, Pod, PodSpec};
use kclient_core::{
    ApiStatus, CreateOptions, DeleteOptions, DeleteResponse, DynamicListerWatcherFor,
    DynamicObject, GetOptions, JsonPatch, ListOptions, ListerWatcher, PartialObjectMetadata, Patch,
    PatchOptions, Resource, ResourceExt, ResourceVersionMatch, TweakListOptions, UpdateOptions,
    WatchEvent,
};
use kclient_rest::RefusedRequest;
use kclient_typed::{ApplyOptions, Error, ResourceClient};
use serde_json::json;

use common::{config_map, deployment, fake, meta, SpecOf};

fn pod(name: &str) -> Pod {
    Pod {
        metadata: meta(name, &[("app", "web")]),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some("nginx".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

#[tokio::test]
async fn create_get_update_delete_round_trip() {
    let (server, clientset) = fake().await;
    let cms = clientset.namespaced::<ConfigMap>("default");

    let created = cms
        .create(
            &config_map("settings", &[("app", "web")], "v1"),
            &CreateOptions::default(),
        )
        .await
        .unwrap();
    assert!(created.uid().is_some(), "the server sets the uid");
    assert_eq!(created.namespace(), Some("default"));
    let rv1 = created.resource_version().unwrap().to_owned();

    let got = cms.get("settings").await.unwrap();
    assert_eq!(got, created);
    let pinned = cms
        .get_with("settings", &GetOptions::default().resource_version("0"))
        .await
        .unwrap();
    assert_eq!(pinned.data, created.data);
    assert_eq!(cms.get_opt("missing").await.unwrap(), None);
    assert!(cms.get("missing").await.unwrap_err().is_not_found());

    let mut changed = got.clone();
    changed.data = Some(BTreeMap::from([("key".into(), "v2".into())]));
    let updated = cms
        .update(&changed, &UpdateOptions::default())
        .await
        .unwrap();
    assert_eq!(updated.data.as_ref().unwrap()["key"], "v2");
    assert_ne!(updated.resource_version(), Some(rv1.as_str()));

    // A stale resourceVersion makes the update a failed compare-and-swap.
    let stale = cms
        .update(&changed, &UpdateOptions::default())
        .await
        .unwrap_err();
    assert!(stale.is_conflict(), "{stale}");

    // ConfigMaps answer a delete with a Status.
    let deleted = cms
        .delete("settings", &DeleteOptions::default())
        .await
        .unwrap();
    assert!(
        matches!(&deleted, DeleteResponse::Status(s) if s.is_success()),
        "{deleted:?}"
    );
    assert_eq!(cms.get_opt("settings").await.unwrap(), None);
    assert!(server.get::<ConfigMap>("default", "settings").is_none());
}

#[tokio::test]
async fn delete_returns_the_object_when_the_server_does() {
    let (_server, clientset) = fake().await;
    // Pods answer a delete with the object.
    let pods = clientset.namespaced::<Pod>("default");
    pods.create(&pod("web-0"), &CreateOptions::default())
        .await
        .unwrap();
    let deleted = pods
        .delete("web-0", &DeleteOptions::default())
        .await
        .unwrap();
    assert_eq!(deleted.object().map(|p| p.name_any()), Some("web-0"));

    // An object held by a finalizer comes back with its deletionTimestamp set.
    let cms = clientset.namespaced::<ConfigMap>("default");
    let mut held = config_map("held", &[], "x");
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&held, &CreateOptions::default()).await.unwrap();
    let deleted = cms
        .delete("held", &DeleteOptions::foreground())
        .await
        .unwrap();
    let object = deleted.into_object().expect("the object, still present");
    assert!(object.is_being_deleted());
    assert!(cms.get("held").await.unwrap().is_being_deleted());
}

#[tokio::test]
async fn dry_run_writes_nothing() {
    let (_server, clientset) = fake().await;
    let cms = clientset.namespaced::<ConfigMap>("default");
    let answered = cms
        .create(
            &config_map("dry", &[], "x"),
            &CreateOptions::default().dry_run(),
        )
        .await
        .unwrap();
    assert_eq!(answered.name_any(), "dry");
    assert_eq!(cms.get_opt("dry").await.unwrap(), None);
}

#[tokio::test]
async fn every_patch_type() {
    let (_server, clientset) = fake().await;
    let deployments = clientset.namespaced::<Deployment>("default");
    deployments
        .create(&deployment("web", 1), &CreateOptions::default())
        .await
        .unwrap();
    let none = PatchOptions::default();

    // JSON patch, with a test operation guarding the change.
    let json_patch = Patch::json(
        JsonPatch::new()
            .test("/spec/replicas", 1)
            .replace("/spec/replicas", 2),
    );
    let d = deployments.patch("web", &json_patch, &none).await.unwrap();
    assert_eq!(d.spec_of().unwrap().replicas, Some(2));
    let failed = deployments
        .patch("web", &json_patch, &none)
        .await
        .unwrap_err();
    assert!(
        failed.status_code().is_some(),
        "a failed test operation: {failed}"
    );

    // Merge patch: null removes a key.
    let merge = Patch::Merge(json!({ "metadata": { "labels": { "app": null, "tier": "fe" } } }));
    let d = deployments.patch("web", &merge, &none).await.unwrap();
    assert_eq!(d.labels().get("tier").map(String::as_str), Some("fe"));
    assert!(!d.labels().contains_key("app"));

    // Strategic merge patch: containers merge by name instead of being replaced.
    let strategic = Patch::Strategic(json!({
        "spec": { "template": { "spec": { "containers": [
            { "name": "sidecar", "image": "busybox" }
        ] } } }
    }));
    let d = deployments.patch("web", &strategic, &none).await.unwrap();
    let names: Vec<String> = d
        .spec_of()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&"web".to_owned()) && names.contains(&"sidecar".to_owned()));

    // Apply through patch(): a field manager is required, before anything is sent.
    let apply = Patch::Apply(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": "web", "annotations": { "owner": "a" } }
    }));
    assert!(matches!(
        deployments.patch("web", &apply, &none).await,
        Err(Error::Refused(RefusedRequest::Options(_)))
    ));
    let d = deployments
        .patch("web", &apply, &PatchOptions::apply("manager-a"))
        .await
        .unwrap();
    assert_eq!(d.annotations()["owner"], "a");
}

#[tokio::test]
async fn server_side_apply_with_field_managers_and_force() {
    let (_server, clientset) = fake().await;
    let cms = clientset.namespaced::<ConfigMap>("default");
    let config = |value: &str| {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": "shared" },
            "data": { "mode": value }
        })
    };
    // Apply creates.
    let first = cms
        .apply("shared", &config("fast"), &ApplyOptions::new("alice"))
        .await
        .unwrap();
    assert_eq!(first.data.as_ref().unwrap()["mode"], "fast");
    let managers: Vec<String> = first
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert_eq!(managers, ["alice"]);

    // Another manager changing the same field conflicts, unless it forces.
    let conflict = cms
        .apply("shared", &config("slow"), &ApplyOptions::new("bob"))
        .await
        .unwrap_err();
    assert!(conflict.is_conflict(), "{conflict}");
    let forced = cms
        .apply("shared", &config("slow"), &ApplyOptions::new("bob").force())
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["mode"], "slow");

    // A typed object applies too (k8s-openapi writes apiVersion and kind).
    let mut typed = ConfigMap {
        metadata: meta("typed", &[]),
        ..ConfigMap::default()
    };
    typed.data = Some(BTreeMap::from([("k".into(), "v".into())]));
    let applied = cms
        .apply("typed", &typed, &ApplyOptions::new("carol").force())
        .await
        .unwrap();
    assert_eq!(applied.data, typed.data);

    // Dry-run apply answers without persisting.
    let dry = cms
        .apply(
            "shared",
            &config("dry"),
            &ApplyOptions::new("bob").force().dry_run(),
        )
        .await
        .unwrap();
    assert_eq!(dry.data.unwrap()["mode"], "dry");
    assert_eq!(
        cms.get("shared").await.unwrap().data.unwrap()["mode"],
        "slow"
    );
}

#[tokio::test]
async fn list_with_selectors_and_across_namespaces() {
    let (server, clientset) = fake().await;
    for (ns, name, app) in [
        ("a", "one", "web"),
        ("a", "two", "db"),
        ("b", "three", "web"),
    ] {
        server
            .seed(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": name, "namespace": ns, "labels": { "app": app } }
            }))
            .unwrap();
    }
    let in_a = clientset.namespaced::<ConfigMap>("a");
    let everything = clientset.all_namespaces::<ConfigMap>();

    let names = |list: kclient_core::ObjectList<ConfigMap>| {
        let mut names: Vec<String> = list.into_iter().map(|c| c.name_any().to_owned()).collect();
        names.sort();
        names
    };
    let all = everything
        .list(&ListOptions::default().labels("app"))
        .await
        .unwrap();
    assert!(all.resource_version().is_some());
    let all_names = names(all);
    assert!(all_names.contains(&"one".to_owned()) && all_names.contains(&"three".to_owned()));
    let web = everything
        .list(&ListOptions::default().labels("app=web"))
        .await
        .unwrap();
    assert_eq!(names(web), ["one", "three"]);
    let a_db = in_a
        .list(&ListOptions::default().labels("app=db"))
        .await
        .unwrap();
    assert_eq!(names(a_db), ["two"]);
    let by_field = in_a
        .list(&ListOptions::default().fields("metadata.name=one"))
        .await
        .unwrap();
    assert_eq!(names(by_field), ["one"]);
}

#[tokio::test]
async fn calls_on_one_object_need_a_namespace() {
    let (_server, clientset) = fake().await;
    let everywhere = clientset.all_namespaces::<ConfigMap>();
    assert!(everywhere.namespace().is_none());
    assert!(matches!(
        everywhere.get("x").await,
        Err(Error::Refused(RefusedRequest::NamespaceRequired {
            verb: "get",
            ..
        }))
    ));
    assert!(matches!(
        everywhere
            .create(&config_map("x", &[], "v"), &CreateOptions::default())
            .await,
        Err(Error::Refused(RefusedRequest::NamespaceRequired {
            verb: "create",
            ..
        }))
    ));
    assert!(matches!(
        everywhere.delete("x", &DeleteOptions::default()).await,
        Err(Error::Refused(RefusedRequest::NamespaceRequired {
            verb: "delete",
            ..
        }))
    ));
    // The empty namespace means all namespaces, as in client-go.
    assert!(clientset.namespaced::<ConfigMap>("").namespace().is_none());
    // Binding it to a namespace makes it usable.
    let cms = everywhere.within("default");
    cms.create(&config_map("x", &[], "v"), &CreateOptions::default())
        .await
        .unwrap();
    // An update needs the object's name.
    let nameless = ConfigMap::default();
    assert!(matches!(
        cms.update(&nameless, &UpdateOptions::default()).await,
        Err(Error::Refused(RefusedRequest::MissingName {
            verb: "update"
        }))
    ));
}

/// The checks before sending are the dynamic client's too (kclient-rest's
/// `ResourceRequests`): the refused resource is named by group and resource, a call on one
/// object needs a name, and an apply configuration carrying managedFields is refused before
/// anything is sent.
#[tokio::test]
async fn the_checks_before_sending_match_the_dynamic_clients() {
    let (_server, clientset) = fake().await;
    let everywhere = clientset.all_namespaces::<Deployment>();
    match everywhere.get("web").await {
        Err(Error::Refused(RefusedRequest::NamespaceRequired { verb, resource })) => {
            assert_eq!(verb, "get");
            assert_eq!(
                resource,
                kclient_core::GroupResource::new("apps", "deployments")
            );
        }
        other => panic!("expected NamespaceRequired, got {other:?}"),
    }
    let cms = clientset.namespaced::<ConfigMap>("default");
    assert!(matches!(
        cms.get("").await,
        Err(Error::Refused(RefusedRequest::MissingName { verb: "get" }))
    ));
    let configuration = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "applied", "managedFields": [{"manager": "someone-else"}]},
        "data": {"k": "v"}
    });
    assert!(matches!(
        cms.apply("applied", &configuration, &ApplyOptions::new("me"))
            .await,
        Err(Error::Refused(RefusedRequest::ManagedFieldsSet))
    ));
    assert!(
        cms.get_opt("applied").await.unwrap().is_none(),
        "nothing was sent"
    );
}

#[tokio::test]
async fn invalid_options_are_refused_before_sending() {
    let (_server, clientset) = fake().await;
    let cms = clientset.namespaced::<ConfigMap>("default");
    let bad = ListOptions::default().resource_version_match(ResourceVersionMatch::Exact);
    assert!(matches!(
        cms.list(&bad).await,
        Err(Error::Refused(RefusedRequest::Options(_)))
    ));
    assert!(matches!(
        cms.watch(&ListOptions::default().send_initial_events(true))
            .await,
        Err(Error::Refused(RefusedRequest::Options(_)))
    ));
    assert!(matches!(
        cms.delete("x", &DeleteOptions::default().grace_period_seconds(-1))
            .await,
        Err(Error::Refused(RefusedRequest::Options(_)))
    ));
}

#[tokio::test]
async fn cluster_scoped_resources() {
    let (_server, clientset) = fake().await;
    let namespaces = clientset.cluster_scoped::<Namespace>();
    assert!(namespaces.namespace().is_none());
    let ns = namespaces
        .create(
            &Namespace {
                metadata: meta("team-a", &[]),
                ..Namespace::default()
            },
            &CreateOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(ns.name_any(), "team-a");
    assert!(namespaces.get("team-a").await.is_ok());

    // A namespace given for a cluster-scoped resource is ignored.
    let nodes = clientset.namespaced::<Node>("ignored");
    assert!(nodes.namespace().is_none());
    nodes
        .create(
            &Node {
                metadata: meta("node-1", &[("zone", "a")]),
                ..Node::default()
            },
            &CreateOptions::default(),
        )
        .await
        .unwrap();
    let listed = nodes
        .list(&ListOptions::default().labels("zone=a"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    assert!(nodes.get("node-1").await.is_ok());
}

#[tokio::test]
async fn delete_collection_deletes_what_the_selector_selects() {
    let (_server, clientset) = fake().await;
    let cms = clientset.namespaced::<ConfigMap>("default");
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        cms.create(
            &config_map(name, &[("app", app)], "x"),
            &CreateOptions::default(),
        )
        .await
        .unwrap();
    }
    let response = cms
        .delete_collection(
            &DeleteOptions::default(),
            &ListOptions::default().labels("app=web"),
        )
        .await
        .unwrap();
    if let DeleteResponse::Object(list) = &response {
        let mut names: Vec<&str> = list.iter().map(|c| c.name_any()).collect();
        names.sort();
        assert_eq!(names, ["a", "b"]);
    }
    let left = cms.list(&ListOptions::default()).await.unwrap();
    let names: Vec<&str> = left.iter().map(|c| c.name_any()).collect();
    assert_eq!(names, ["c"]);
}

#[tokio::test]
async fn watch_streams_every_change_in_order() {
    let (_server, clientset) = fake().await;
    let cms = clientset.namespaced::<ConfigMap>("default");
    let list = cms.list(&ListOptions::default()).await.unwrap();
    let rv = list.resource_version().unwrap().to_owned();
    let mut events = cms
        .watch(
            &ListOptions::default()
                .resource_version(rv)
                .timeout_seconds(30),
        )
        .await
        .unwrap();

    let created = cms
        .create(&config_map("w", &[], "1"), &CreateOptions::default())
        .await
        .unwrap();
    let mut changed = created.clone();
    changed.data = Some(BTreeMap::from([("key".into(), "2".into())]));
    cms.update(&changed, &UpdateOptions::default())
        .await
        .unwrap();
    cms.delete("w", &DeleteOptions::default()).await.unwrap();

    let mut seen = Vec::new();
    while seen.len() < 3 {
        match events
            .try_next()
            .await
            .unwrap()
            .expect("the watch stays open")
        {
            WatchEvent::Added(cm) => seen.push(("ADDED", cm.data.unwrap()["key"].clone())),
            WatchEvent::Modified(cm) => seen.push(("MODIFIED", cm.data.unwrap()["key"].clone())),
            WatchEvent::Deleted(cm) => seen.push(("DELETED", cm.data.unwrap()["key"].clone())),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(status) => panic!("{status}"),
        }
    }
    assert_eq!(
        seen,
        [
            ("ADDED", "1".to_owned()),
            ("MODIFIED", "2".to_owned()),
            ("DELETED", "2".to_owned())
        ]
    );
}

#[tokio::test]
async fn a_watch_from_a_compacted_version_gets_410() {
    let (server, clientset) = fake().await;
    let cms = clientset.namespaced::<ConfigMap>("default");
    let old = cms.list(&ListOptions::default()).await.unwrap();
    cms.create(&config_map("x", &[], "1"), &CreateOptions::default())
        .await
        .unwrap();
    server.faults().compact_history();
    let mut events = cms
        .watch(&ListOptions::default().resource_version(old.resource_version().unwrap()))
        .await
        .unwrap();
    match events.next().await {
        Some(Ok(WatchEvent::Error(status))) => assert!(status.is_gone(), "{status}"),
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}

#[tokio::test]
async fn server_errors_keep_their_status() {
    let (server, clientset) = fake().await;
    let cms = clientset.namespaced::<ConfigMap>("default");
    server
        .faults()
        .fail_next(1, kclient_fake::Failure::status(403).message("no"));
    let err = cms.list(&ListOptions::default()).await.unwrap_err();
    assert!(err.is_forbidden(), "{err}");
    assert_eq!(err.status_code(), Some(403));
}

/// Lists and starts a watch where the list ended, using only the `ListerWatcher` trait (as
/// the informer cache does); returns the listed names and the watch.
async fn list_then_watch<L: ListerWatcher<ConfigMap>>(
    lw: &L,
) -> (Vec<String>, kclient_core::WatchStream<ConfigMap, L::Error>)
where
    L::Error: std::fmt::Debug,
{
    let list = lw.list(&ListOptions::default()).await.unwrap();
    let names = list.iter().map(|c| c.name_any().to_owned()).collect();
    let rv = list.resource_version().unwrap().to_owned();
    let events = lw
        .watch(&ListOptions::default().resource_version(rv))
        .await
        .unwrap();
    (names, events)
}

#[tokio::test]
async fn resource_clients_are_lister_watchers() {
    let (_server, clientset) = fake().await;
    let cms = clientset.namespaced::<ConfigMap>("default");
    for (name, app) in [("a", "web"), ("b", "db")] {
        cms.create(
            &config_map(name, &[("app", app)], "x"),
            &CreateOptions::default(),
        )
        .await
        .unwrap();
    }
    let (names, mut all_events) = list_then_watch(&cms).await;
    assert_eq!(names, ["a", "b"]);

    // The filtered variant adds its selector to lists and watches.
    let web = cms.filtered_list_watch(|o| o.label_selector = Some("app=web".into()));
    assert_eq!(
        web.tweaked(&ListOptions::default())
            .label_selector
            .as_deref(),
        Some("app=web")
    );
    let (names, mut web_events) = list_then_watch(&web).await;
    assert_eq!(names, ["a"]);

    cms.create(
        &config_map("c", &[("app", "db")], "x"),
        &CreateOptions::default(),
    )
    .await
    .unwrap();
    cms.create(
        &config_map("d", &[("app", "web")], "x"),
        &CreateOptions::default(),
    )
    .await
    .unwrap();
    match web_events.try_next().await.unwrap() {
        Some(WatchEvent::Added(cm)) => assert_eq!(cm.name_any(), "d", "c is filtered out"),
        other => panic!("{other:?}"),
    }
    match all_events.try_next().await.unwrap() {
        Some(WatchEvent::Added(cm)) => assert_eq!(cm.name_any(), "c"),
        other => panic!("{other:?}"),
    }
}

/// The Clientset makes the lister-watchers of the factory's `for_resource` too: of whole
/// objects (`DynamicObject`) and of metadata alone (`PartialObjectMetadata`, which the server
/// converts), in the factory's namespace and with its tweak, over the Clientset's transport.
#[tokio::test]
async fn the_clientset_lists_and_watches_resources_chosen_at_run_time_whole_or_metadata_only() {
    let (_server, clientset) = fake().await;
    let mut other = config_map("elsewhere", &[("app", "web")], "x");
    other.metadata.namespace = Some("kube-system".into());
    clientset
        .namespaced::<ConfigMap>("kube-system")
        .create(&other, &CreateOptions::default())
        .await
        .unwrap();
    let cms = clientset.namespaced::<ConfigMap>("default");
    for (name, app) in [("a", "web"), ("b", "db")] {
        cms.create(
            &config_map(name, &[("app", app)], "x"),
            &CreateOptions::default(),
        )
        .await
        .unwrap();
    }
    let resource = ConfigMap::api_resource(&());
    let web: TweakListOptions = Arc::new(|o: &mut ListOptions| {
        o.label_selector = Some("app=web".into());
    });

    let objects = DynamicListerWatcherFor::<DynamicObject>::dynamic_lister_watcher(
        &clientset,
        &resource,
        Some("default"),
        Some(Arc::clone(&web)),
    );
    let list = objects.list(&ListOptions::default()).await.unwrap();
    let names: Vec<_> = list.iter().map(|o| o.name_any().to_owned()).collect();
    assert_eq!(names, ["a"], "in the namespace, with the tweak");
    assert_eq!(list.items[0].data["data"]["key"], "x", "whole objects");
    let mut events = objects
        .watch(&ListOptions::default().resource_version(list.resource_version().unwrap()))
        .await
        .unwrap();

    let metadata = DynamicListerWatcherFor::<PartialObjectMetadata>::dynamic_lister_watcher(
        &clientset, &resource, None, None,
    );
    let list = metadata.list(&ListOptions::default()).await.unwrap();
    let mut names: Vec<_> = list.iter().map(|o| o.name_any().to_owned()).collect();
    names.sort();
    assert_eq!(names, ["a", "b", "elsewhere"], "every namespace");
    assert!(list.iter().all(|o| o.labels().contains_key("app")));

    cms.create(
        &config_map("c", &[("app", "web")], "y"),
        &CreateOptions::default(),
    )
    .await
    .unwrap();
    match events.try_next().await.unwrap() {
        Some(WatchEvent::Added(o)) => assert_eq!(o.name_any(), "c"),
        other => panic!("{other:?}"),
    }
    assert!(objects
        .inner()
        .rest_client()
        .shares_state_with(clientset.rest_client()));
}

#[tokio::test]
async fn clones_share_one_transport() {
    let (_server, clientset) = fake().await;
    let a: ResourceClient<ConfigMap> = clientset.namespaced("default");
    let b = a.clone();
    assert!(a.rest_client().shares_state_with(b.rest_client()));
    assert!(a
        .rest_client()
        .shares_state_with(clientset.all_namespaces::<Pod>().rest_client()));
    assert!(format!("{a:?}").contains("configmaps"));
}

/// `ListOptions::omit_managed_fields` (client-side, never sent): lists and watches decode their
/// objects without `metadata.managedFields`; everything else is what the server sent.
#[tokio::test]
async fn lists_and_watches_can_skip_managed_fields_while_decoding() {
    let (server, clientset) = fake().await;
    let managed = json!([{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}}]);
    for name in ["a", "b"] {
        server
            .seed(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "default", "managedFields": managed},
                "data": {"k": name}}))
            .unwrap();
    }
    let cms = clientset.namespaced::<ConfigMap>("default");
    let whole = cms.list(&ListOptions::default()).await.unwrap();
    assert!(whole.iter().all(|cm| cm.metadata.managed_fields.is_some()));
    let omit = ListOptions::default().omit_managed_fields(true);
    for options in [omit.clone(), omit.clone().limit(1)] {
        let list = cms.list_all(&options).await.unwrap();
        assert_eq!(list.items.len(), 2);
        for (got, whole) in list.iter().zip(whole.iter()) {
            let mut expected = whole.clone();
            expected.metadata.managed_fields = None;
            assert_eq!(*got, expected);
        }
    }

    let watch = omit
        .clone()
        .resource_version(whole.resource_version().unwrap());
    let mut events = cms.watch(&watch).await.unwrap();
    let mut changed = cms.get("a").await.unwrap();
    changed.data = Some(BTreeMap::from([("k".to_owned(), "changed".to_owned())]));
    cms.update(&changed, &UpdateOptions::default())
        .await
        .unwrap();
    match events.try_next().await.unwrap().unwrap() {
        WatchEvent::Modified(cm) => {
            assert_eq!(cm.data.unwrap()["k"], "changed");
            assert!(cm.metadata.managed_fields.is_none());
        }
        other => panic!("unexpected {other:?}"),
    }
    let mut kept = cms
        .watch(&ListOptions::default().resource_version(whole.resource_version().unwrap()))
        .await
        .unwrap();
    match kept.try_next().await.unwrap().unwrap() {
        WatchEvent::Modified(cm) => assert!(cm.metadata.managed_fields.is_some()),
        other => panic!("unexpected {other:?}"),
    }
}
