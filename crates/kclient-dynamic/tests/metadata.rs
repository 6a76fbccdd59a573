//! The metadata client against kclient-fake over HTTP: every verb on built-in and custom
//! resources answered with `PartialObjectMetadata` (so sent with the `as=` Accept header),
//! paged lists fetched ahead, watches, the lister-watchers the informer factory makes, and
//! the typed 406.

use crate::common;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_core::{
    ApiResource, ApiStatus, DeleteOptions, DeleteResponse, DynamicListerWatcherFor, GetOptions,
    GroupVersionKind, GroupVersionResource, ListOptions, ListerWatcher, PartialObjectMetadata,
    Patch, PatchOptions, Resource, ResourceExt, TypeMeta, WatchEvent,
};
use kclient_dynamic::{Error, MetadataClient, MetadataResource};
use kclient_fake::{Failure, FakeApiServer};
use kclient_rest::RefusedRequest;
use serde_json::json;

/// A fake server with ConfigMaps `cm-00`..`cm-{n-1}` in `default` (label `app=web` on the
/// even ones) and a CronTab CRD with `nightly`, and a metadata client for it.
async fn setup(n: usize) -> (FakeApiServer, MetadataClient) {
    let (server, dynamic) = common::setup().await;
    for i in 0..n {
        let app = if i % 2 == 0 { "web" } else { "db" };
        server
            .seed(json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": format!("cm-{i:02}"), "namespace": "default",
                                      "labels": {"app": app}},
                         "data": {"big": "x".repeat(1000)}}))
            .unwrap();
    }
    server
        .seed(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {"group": "stable.example.com", "scope": "Namespaced",
                     "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
        }))
        .unwrap();
    server
        .seed(json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                     "metadata": {"name": "nightly", "namespace": "default", "finalizers": ["example.com/keep"]},
                     "spec": {"cronSpec": "0 3 * * *"}}))
        .unwrap();
    let client = MetadataClient::new(dynamic.rest_client().clone());
    (server, client)
}

fn configmaps() -> ApiResource {
    ConfigMap::api_resource(&())
}

fn crontabs() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::new("stable.example.com", "v1", "CronTab"),
        "crontabs",
        true,
    )
}

fn partial_type() -> Option<TypeMeta> {
    Some(TypeMeta::new("meta.k8s.io/v1", "PartialObjectMetadata"))
}

#[tokio::test]
async fn get_reads_the_metadata_of_built_in_and_custom_resources() {
    let (server, client) = setup(2).await;
    let cm = client
        .resource(configmaps())
        .namespace("default")
        .get("cm-00", &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(cm.types, partial_type());
    let stored = server.list::<ConfigMap>(Some("default"));
    assert_eq!(cm.metadata, stored[0].metadata);
    // Addressed by group/version/resource as well.
    let ct = client
        .resource(GroupVersionResource::new(
            "stable.example.com",
            "v1",
            "crontabs",
        ))
        .namespace("default")
        .get("nightly", &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(ct.types, partial_type());
    assert_eq!(ct.finalizers(), ["example.com/keep"]);
    assert_eq!(ct.meta().generation, Some(1));

    let missing = client
        .resource(configmaps())
        .namespace("default")
        .get("nope", &GetOptions::default())
        .await
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    let unscoped = client
        .resource(crontabs())
        .get("nightly", &GetOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(
        unscoped,
        Error::Refused(RefusedRequest::NamespaceRequired { verb: "get", .. })
    ));
}

#[tokio::test]
async fn lists_page_fetching_ahead_and_apply_selectors() {
    let (_server, client) = setup(23).await;
    let cms = client.resource(configmaps()).namespace("default");
    let page = cms
        .fetch_list(&ListOptions::default().limit(10))
        .await
        .unwrap();
    assert!(page.is_encoded(), "the page's items are decoded later");
    assert!(page.continue_token().is_some());
    let page = page.decode().await.unwrap();
    assert_eq!(page.items.len(), 10);
    assert_eq!(
        page.types,
        Some(TypeMeta::new("meta.k8s.io/v1", "PartialObjectMetadataList"))
    );
    assert!(page.iter().all(|o| o.types == partial_type()));

    let all = cms
        .pager()
        .page_size(5)
        .list(&ListOptions::default())
        .await
        .unwrap();
    let names: Vec<_> = all.iter().map(|o| o.name_any().to_owned()).collect();
    let expected: Vec<_> = (0..23).map(|i| format!("cm-{i:02}")).collect();
    assert_eq!(names, expected);
    assert_eq!(
        cms.list_all(&ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        23
    );

    let web = cms
        .list(
            &ListOptions::default()
                .label_selector(&"app=web".parse().unwrap())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(web.items.len(), 12);
    let none = cms
        .list(
            &ListOptions::default()
                .label_selector(&"app=none".parse().unwrap())
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(none.items.is_empty(), "items: null reads as none");

    let crontabs = client.resource(crontabs()).all_namespaces();
    assert_eq!(
        crontabs
            .list(&ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
}

#[tokio::test]
async fn watches_carry_partial_object_metadata() {
    let (server, client) = setup(1).await;
    let cms = client.resource(configmaps()).namespace("default");
    let rv = cms
        .list(&ListOptions::default())
        .await
        .unwrap()
        .resource_version()
        .unwrap()
        .to_owned();
    let mut events = cms
        .watch(
            &ListOptions::default()
                .resource_version(rv)
                .timeout_seconds(30),
        )
        .await
        .unwrap();
    cms.patch(
        "cm-00",
        &Patch::Merge(json!({"metadata": {"labels": {"stage": "two"}}})),
        &PatchOptions::default(),
    )
    .await
    .unwrap();
    server
        .seed(json!({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "new", "namespace": "default"}}))
        .unwrap();
    cms.delete("new", &DeleteOptions::default()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        seen.push(events.next().await.expect("an event").unwrap());
    }
    assert!(matches!(&seen[0], WatchEvent::Modified(o) if o.labels()["stage"] == "two"));
    assert!(matches!(&seen[1], WatchEvent::Added(o) if o.name_any() == "new"));
    assert!(matches!(&seen[2], WatchEvent::Deleted(o) if o.name_any() == "new"));
    assert!(seen
        .iter()
        .all(|e| e.object().unwrap().types == partial_type()));

    // A streaming list: initial events, then the bookmark that ends them.
    let mut stream = cms
        .watch(
            &ListOptions::default()
                .send_initial_events(true)
                .allow_watch_bookmarks(true)
                .resource_version_match(kclient_core::ResourceVersionMatch::NotOlderThan)
                .timeout_seconds(30),
        )
        .await
        .unwrap();
    assert!(
        matches!(stream.next().await.unwrap().unwrap(), WatchEvent::Added(o) if o.name_any() == "cm-00")
    );
    match stream.next().await.unwrap().unwrap() {
        WatchEvent::Bookmark(b) => assert!(b.is_initial_events_end()),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn patch_delete_and_delete_collection_answer_with_metadata() {
    let (server, client) = setup(4).await;
    let cms = client.resource(configmaps()).namespace("default");
    let patched = cms
        .patch(
            "cm-01",
            &Patch::Merge(json!({"metadata": {"annotations": {"owner": "team-a"}}})),
            &PatchOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(patched.annotations()["owner"], "team-a");
    assert_eq!(patched.types, partial_type());

    // ConfigMaps answer a delete with a Status; a kept object (a finalizer) with itself.
    let gone = cms
        .delete("cm-00", &DeleteOptions::default())
        .await
        .unwrap();
    assert!(matches!(gone, DeleteResponse::Status(_)), "{gone:?}");
    let cts = client.resource(crontabs()).namespace("default");
    match cts
        .delete("nightly", &DeleteOptions::default())
        .await
        .unwrap()
    {
        DeleteResponse::Object(o) => {
            assert_eq!(o.types, partial_type());
            assert!(o.is_being_deleted());
        }
        other => panic!("{other:?}"),
    }

    let web = ListOptions::default()
        .label_selector(&"app=web".parse().unwrap())
        .unwrap();
    match cms
        .delete_collection(&DeleteOptions::default(), &web)
        .await
        .unwrap()
    {
        DeleteResponse::Object(list) => {
            let names: Vec<_> = list.iter().map(|o| o.name_any().to_owned()).collect();
            assert_eq!(names, ["cm-02"]);
            assert_eq!(list.items[0].types, partial_type());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.list::<ConfigMap>(Some("default")).len(), 2);

    let refused = cms
        .patch("", &Patch::Merge(json!({})), &PatchOptions::default())
        .await;
    assert!(matches!(
        refused,
        Err(Error::Refused(RefusedRequest::MissingName {
            verb: "patch"
        }))
    ));
}

#[tokio::test]
async fn a_server_refusing_the_conversion_is_a_typed_error() {
    let (server, client) = setup(1).await;
    let cms = client.resource(configmaps()).namespace("default");
    let refusal = || {
        Failure::status(406).message(
            "only the following media types are accepted: application/json, application/yaml",
        )
    };
    // The get asks for protobuf first: its 406 makes the client speak JSON and repeats the
    // get in JSON (a second 406); the list and the watch then ask for JSON only.
    server.faults().fail_next(4, refusal());
    let get = cms.get("cm-00", &GetOptions::default()).await.unwrap_err();
    let list = cms.list(&ListOptions::default()).await.unwrap_err();
    let watch = cms.watch(&ListOptions::default()).await.err().unwrap();
    for err in [&get, &list, &watch] {
        match err {
            Error::MetadataNotAcceptable { resource, .. } => {
                assert_eq!(resource, &GroupVersionResource::new("", "v1", "configmaps"))
            }
            other => panic!("{other:?}"),
        }
        assert!(err.is_not_acceptable());
        assert_eq!(err.status_code(), Some(406));
    }
    // Other failures stay what they are.
    server.faults().fail_next(1, Failure::status(500));
    let other = cms.get("cm-00", &GetOptions::default()).await.unwrap_err();
    assert!(matches!(other, Error::Rest(_)) && other.is_internal_error());
}

async fn names<L: ListerWatcher<PartialObjectMetadata>>(lw: &L) -> Vec<String> {
    let list = lw.list(&ListOptions::default()).await.unwrap();
    list.iter().map(|o| o.name_any().to_owned()).collect()
}

#[tokio::test]
async fn lister_watchers_for_the_informer_factory() {
    let (server, client) = setup(4).await;
    server
        .seed(json!({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "elsewhere", "namespace": "other"}}))
        .unwrap();
    let everywhere: MetadataResource = client.resource(configmaps());
    assert_eq!(names(&everywhere).await.len(), 5);
    let web = client
        .resource(configmaps())
        .namespace("default")
        .filtered_list_watch(|o| o.label_selector = Some("app=web".into()));
    assert_eq!(names(&web).await, ["cm-00", "cm-02"]);

    // What the factory's for_resource uses: the namespace (ignored for cluster-scoped
    // resources) and the tweak.
    let lw = client.dynamic_lister_watcher(
        &configmaps(),
        Some("default"),
        Some(std::sync::Arc::new(|o: &mut ListOptions| {
            o.label_selector = Some("app=db".into())
        })),
    );
    assert_eq!(names(&lw).await, ["cm-01", "cm-03"]);
    assert_eq!(lw.inner().namespace_name(), Some("default"));
    let namespaces = client.dynamic_lister_watcher(
        &k8s_openapi::api::core::v1::Namespace::api_resource(&()),
        Some("default"),
        None,
    );
    assert_eq!(namespaces.inner().namespace_name(), None);
    let events = lw.watch(&ListOptions::default()).await.unwrap();
    let initial: Vec<_> = events.take(2).collect().await;
    let names: Vec<_> = initial
        .iter()
        .map(|e| match e {
            Ok(WatchEvent::Added(o)) => o.name_any().to_owned(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(names, ["cm-01", "cm-03"], "the current objects, selected");
}

/// `ListOptions::omit_managed_fields` reaches the dynamic and the metadata clients' lists and
/// watches: their objects come without `metadata.managedFields`, the rest as sent.
#[tokio::test]
async fn dynamic_and_metadata_lists_and_watches_can_skip_managed_fields() {
    let (server, metadata) = setup(0).await;
    server
        .seed(json!({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "managed", "namespace": "default",
                                  "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
                     "data": {"k": "v"}}))
        .unwrap();
    let dynamic = kclient_dynamic::DynamicClient::new(metadata.rest_client().clone());
    let omit = ListOptions::default().omit_managed_fields(true);
    let dynamic_cms = dynamic.resource(configmaps()).namespace("default");
    let whole = dynamic_cms.list(&ListOptions::default()).await.unwrap();
    assert!(whole.items[0].metadata.managed_fields.is_some());
    let list = dynamic_cms.list(&omit).await.unwrap();
    assert!(list.items[0].metadata.managed_fields.is_none());
    assert_eq!(list.items[0].data["data"], json!({"k": "v"}));
    let meta_cms = metadata.resource(configmaps()).namespace("default");
    let partial = meta_cms.list(&omit).await.unwrap();
    assert_eq!(partial.items[0].metadata.name.as_deref(), Some("managed"));
    assert!(partial.items[0].metadata.managed_fields.is_none());

    let from = omit
        .clone()
        .resource_version(whole.resource_version().unwrap());
    let mut dynamic_events = dynamic_cms.watch(&from).await.unwrap();
    let mut metadata_events = meta_cms.watch(&from).await.unwrap();
    dynamic_cms
        .patch(
            "managed",
            &Patch::Merge(json!({"data": {"k": "w"}})),
            &PatchOptions::default(),
        )
        .await
        .unwrap();
    match dynamic_events.next().await.unwrap().unwrap() {
        WatchEvent::Modified(obj) => {
            assert!(obj.metadata.managed_fields.is_none());
            assert_eq!(obj.data["data"]["k"], "w");
        }
        other => panic!("unexpected {other:?}"),
    }
    match metadata_events.next().await.unwrap().unwrap() {
        WatchEvent::Modified(obj) => assert!(obj.metadata.managed_fields.is_none()),
        other => panic!("unexpected {other:?}"),
    }
}
