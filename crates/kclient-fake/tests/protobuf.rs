//! Kubernetes protobuf, as kube-apiserver 1.37 serves it to client-go's typed clients
//! (`Accept: application/vnd.kubernetes.protobuf,application/json`): objects, lists (paged
//! and not), watches, the writes' answers and `Status` errors in protobuf for the built-in
//! kinds, protobuf request bodies read, and the JSON that stays JSON (custom resources,
//! Tables, a JSON `Accept`). Every protobuf answer is decoded with kclient-protobuf and
//! compared with the JSON answer to the same request.

use crate::common;

use std::fmt::Debug;
use std::time::Duration;

use common::*;
use http::{header, Method, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    DeleteOptions, ListMeta, ObjectMeta, Preconditions,
};
use kclient_core::{PartialObjectMetadata, StatusReason, WatchEvent};
use kclient_protobuf::envelope::{self, FrameDecoder};
use kclient_protobuf::registry::{self, Codec};
use kclient_protobuf::{core_types, Ctx, Decode};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

/// Protobuf, alone.
const PB: &str = "application/vnd.kubernetes.protobuf";
/// What client-go's typed clients ask for.
const PB_FIRST: &str = "application/vnd.kubernetes.protobuf,application/json";
/// The content type of a protobuf watch.
const PB_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// client-go's metadata client, on one object and on lists.
const META_PB: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
const META_LIST_PB: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// A built-in kind with a protobuf codec.
trait Kind:
    k8s_openapi::Resource
    + k8s_openapi::Metadata<Ty = ObjectMeta>
    + Serialize
    + DeserializeOwned
    + PartialEq
    + Debug
    + Clone
    + Decode
    + 'static
{
}
impl<T> Kind for T where
    T: k8s_openapi::Resource
        + k8s_openapi::Metadata<Ty = ObjectMeta>
        + Serialize
        + DeserializeOwned
        + PartialEq
        + Debug
        + Clone
        + Decode
        + 'static
{
}

fn codec<K: 'static>() -> &'static Codec<K> {
    registry::codec::<K>().expect("a built-in kind")
}

fn accepting(c: &Client, accept: &str) -> Client {
    c.clone().with_header("accept", accept)
}

fn content_type(r: &Reply) -> &str {
    r.headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// A protobuf object answer, decoded.
fn pb_object<K: Kind>(r: &Reply) -> K {
    assert_eq!(content_type(r), PB, "{} {:?}", r.status, r.body);
    assert!(r.raw.starts_with(b"k8s\0"));
    codec::<K>()
        .decode_body(&r.raw, Ctx::default())
        .unwrap_or_else(|e| panic!("a protobuf {}: {e}", K::KIND))
}

/// A JSON object answer, decoded.
fn json_object<K: Kind>(r: &Reply) -> K {
    assert_eq!(content_type(r), JSON, "{} {:?}", r.status, r.body);
    serde_json::from_slice(&r.raw).unwrap_or_else(|e| panic!("a JSON {}: {e}", K::KIND))
}

/// A protobuf list answer: envelope typed `K`'s list kind, metadata, items.
fn pb_list<K: Kind>(r: &Reply) -> (ListMeta, Vec<K>) {
    assert_eq!(content_type(r), PB, "{} {:?}", r.status, r.body);
    let unknown = envelope::decode_envelope(&r.raw).expect("an envelope");
    assert_eq!(
        (unknown.api_version.as_str(), unknown.kind.as_str()),
        (K::API_VERSION, format!("{}List", K::KIND).as_str())
    );
    let mut items = Vec::new();
    let meta = envelope::decode_list(unknown.raw, Ctx::default(), &mut |k: K| items.push(k))
        .expect("a list");
    (meta, items)
}

/// A JSON list answer: metadata, items.
fn json_list<K: Kind>(r: &Reply) -> (ListMeta, Vec<K>) {
    assert_eq!(content_type(r), JSON, "{} {:?}", r.status, r.body);
    let meta = serde_json::from_value(r.body["metadata"].clone()).expect("list metadata");
    let items = r.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| serde_json::from_value(i.clone()).expect("an item"))
        .collect();
    (meta, items)
}

/// A protobuf `Status` answer, decoded (a failure's).
fn pb_status(r: &Reply) -> kclient_core::Status {
    assert_eq!(content_type(r), PB, "{} {:?}", r.status, r.body);
    let status = core_types::decode_failure_status(&r.raw).expect("a protobuf failure Status");
    assert_eq!(status.code, r.status.as_u16());
    status
}

/// What protobuf cannot tell apart, removed: Go writes its non-pointer structs even when
/// empty, with the zero values of their non-pointer fields (a Deployment's `status: {}`, a
/// Node's `status.nodeInfo` of empty strings and `daemonEndpoints.kubeletEndpoint.Port: 0`,
/// as kube-apiserver's JSON does too), and an empty list or map is no list or map. The fake's
/// JSON keeps what the client sent (no status at all for a new Node), so the two answers are
/// compared without nulls, empty objects and arrays, and zero scalars (`""`, `0`, `false`).
fn normal<K: Serialize>(k: &K) -> Value {
    fn prune(v: Value) -> Value {
        match v {
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (k, prune(v)))
                    .filter(|(_, v)| !is_empty(v))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.into_iter().map(prune).collect()),
            other => other,
        }
    }
    fn is_empty(v: &Value) -> bool {
        match v {
            Value::Null => true,
            Value::Object(m) => m.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::String(s) => s.is_empty(),
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::Bool(b) => !b,
        }
    }
    prune(serde_json::to_value(k).expect("serialisable"))
}

fn assert_same<K: Kind>(pb: &K, json: &K, what: &str) {
    assert_eq!(normal(pb), normal(json), "{} {what}", K::KIND);
}

/// The seeds: two objects of each of the five kinds the issue names, with the special
/// representations (IntOrString, Quantity, bytes, managedFields' FieldsV1, times).
fn pod_object(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"app": "web"}},
           "spec": {"containers": [{"name": "main", "image": "nginx",
                                    "ports": [{"containerPort": 80}],
                                    "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}}]}})
}

fn configmap_object(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "annotations": {"a": "b"}},
           "data": {"k": name}, "binaryData": {"bin": "AAEC"}})
}

fn deployment_object(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": name},
           "spec": {"replicas": 2,
                    "selector": {"matchLabels": {"app": name}},
                    "strategy": {"type": "RollingUpdate",
                                 "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

fn service_object(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name},
           "spec": {"selector": {"app": name},
                    "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                              {"name": "named", "port": 81, "targetPort": "web", "protocol": "TCP"}]}})
}

fn node_object(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
           "spec": {"podCIDR": "10.0.0.0/24", "taints": [{"key": "k", "effect": "NoSchedule"}]}})
}

/// A kind's collection path, its seed, and the paths of its objects.
struct Case {
    collection: &'static str,
    seed: fn(&str) -> Value,
}

impl Case {
    fn object(&self, name: &str) -> String {
        format!("{}/{name}", self.collection)
    }
}

const PODS: Case = Case {
    collection: "/api/v1/namespaces/default/pods",
    seed: pod_object,
};
const CONFIGMAPS: Case = Case {
    collection: "/api/v1/namespaces/default/configmaps",
    seed: configmap_object,
};
const DEPLOYMENTS: Case = Case {
    collection: "/apis/apps/v1/namespaces/default/deployments",
    seed: deployment_object,
};
const SERVICES: Case = Case {
    collection: "/api/v1/namespaces/default/services",
    seed: service_object,
};
const NODES: Case = Case {
    collection: "/api/v1/nodes",
    seed: node_object,
};

/// Seeds `a`, `b` and `c` (created in JSON, as another client would).
async fn seed(c: &Client, case: &Case) {
    for name in ["a", "b", "c"] {
        let r = c.post(case.collection, &(case.seed)(name)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    }
}

/// Get, list unpaged and paged (following the continue tokens): the protobuf answers decode
/// to what the JSON answers say.
async fn reads_agree<K: Kind>(c: &Client, case: &Case) {
    let pb = accepting(c, PB_FIRST);
    let path = case.object("a");
    let from_pb: K = pb_object(&pb.get(&path).await);
    let from_json: K = json_object(&c.get(&path).await);
    assert_same(&from_pb, &from_json, "get");
    // Protobuf alone, and a higher q for JSON (JSON wins), are honoured.
    assert_eq!(pb_object::<K>(&accepting(c, PB).get(&path).await), from_pb);
    let json_wins = accepting(
        c,
        "application/vnd.kubernetes.protobuf;q=0.5,application/json",
    )
    .get(&path)
    .await;
    assert_eq!(content_type(&json_wins), JSON);

    let (pb_meta, pb_items) = pb_list::<K>(&pb.get(case.collection).await);
    let (json_meta, json_items) = json_list::<K>(&c.get(case.collection).await);
    assert_eq!(pb_meta, json_meta, "{} list metadata", K::KIND);
    assert_eq!(pb_items.len(), 3);
    for (p, j) in pb_items.iter().zip(&json_items) {
        assert_same(p, j, "list item");
    }

    let mut token = String::new();
    let mut pages = 0;
    loop {
        let query = if token.is_empty() {
            "?limit=2".to_owned()
        } else {
            format!("?limit=2&continue={token}")
        };
        let url = format!("{}{query}", case.collection);
        let (pb_meta, pb_items) = pb_list::<K>(&pb.get(&url).await);
        let (json_meta, json_items) = json_list::<K>(&c.get(&url).await);
        assert_eq!(pb_meta, json_meta, "{} page metadata", K::KIND);
        assert_eq!(pb_items.len(), json_items.len());
        for (p, j) in pb_items.iter().zip(&json_items) {
            assert_same(p, j, "page item");
        }
        pages += 1;
        match pb_meta.continue_ {
            Some(next) if !next.is_empty() => {
                assert_eq!(pb_meta.remaining_item_count, Some(1));
                token = next;
            }
            _ => break,
        }
    }
    assert_eq!(pages, 2, "{} pages", K::KIND);
}

#[tokio::test]
async fn gets_and_lists_in_protobuf_say_what_json_says() {
    let (_server, c) = server().await;
    for case in [&PODS, &CONFIGMAPS, &DEPLOYMENTS, &SERVICES, &NODES] {
        seed(&c, case).await;
    }
    reads_agree::<Pod>(&c, &PODS).await;
    reads_agree::<ConfigMap>(&c, &CONFIGMAPS).await;
    reads_agree::<Deployment>(&c, &DEPLOYMENTS).await;
    reads_agree::<Service>(&c, &SERVICES).await;
    reads_agree::<Node>(&c, &NODES).await;

    // The special representations survive: bytes, IntOrString, Quantity, FieldsV1.
    let pb = accepting(&c, PB_FIRST);
    let cm: ConfigMap = pb_object(&pb.get(&CONFIGMAPS.object("a")).await);
    assert_eq!(
        cm.binary_data.unwrap()["bin"].0,
        vec![0u8, 1, 2],
        "binaryData"
    );
    assert!(cm.metadata.managed_fields.is_some_and(|m| !m.is_empty()));
    let svc: Service = pb_object(&pb.get(&SERVICES.object("a")).await);
    let ports = svc.spec.unwrap().ports.unwrap();
    assert_eq!(
        serde_json::to_value(&ports[1].target_port).unwrap(),
        json!("web")
    );
    let pod: Pod = pb_object(&pb.get(&PODS.object("a")).await);
    let limits = pod.spec.unwrap().containers[0]
        .resources
        .clone()
        .unwrap()
        .limits
        .unwrap();
    assert_eq!(limits["cpu"].0, "500m");
}

/// Create and update with protobuf bodies, patch, and delete: each answer in protobuf is the
/// object the JSON GET shows afterwards.
async fn writes_agree<K: Kind>(c: &Client, case: &Case, returns_object: bool) {
    let pb = accepting(c, PB_FIRST);
    let codec = codec::<K>();
    let mut object: K = serde_json::from_value((case.seed)("w")).unwrap();
    let created = pb
        .send(
            Method::POST,
            case.collection,
            PB,
            codec.encode_body(&object),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.body);
    let created: K = pb_object(&created);
    let path = case.object("w");
    assert_same(&created, &json_object(&c.get(&path).await), "create");

    // An update with a protobuf body (client-go's Update).
    let mut meta = created.metadata().clone();
    meta.labels
        .get_or_insert_with(Default::default)
        .insert("updated".into(), "yes".into());
    *object.metadata_mut() = meta;
    let updated = pb
        .send(Method::PUT, &path, PB, codec.encode_body(&object))
        .await;
    assert_eq!(updated.status, StatusCode::OK, "{:?}", updated.body);
    let updated: K = pb_object(&updated);
    assert_eq!(
        updated.metadata().labels.as_ref().unwrap()["updated"],
        "yes"
    );
    assert_same(&updated, &json_object(&c.get(&path).await), "update");

    // A patch (its body is the patch type's; the answer is protobuf).
    let patched = pb
        .patch(
            &path,
            MERGE,
            r#"{"metadata":{"annotations":{"patched":"yes"}}}"#,
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{:?}", patched.body);
    let patched: K = pb_object(&patched);
    assert_same(&patched, &json_object(&c.get(&path).await), "patch");

    // A stale update is a 409 in protobuf.
    let stale = pb
        .send(Method::PUT, &path, PB, codec.encode_body(&updated))
        .await;
    assert_eq!(stale.status, StatusCode::CONFLICT);
    assert_eq!(pb_status(&stale).reason, StatusReason::Conflict);

    // A delete with protobuf DeleteOptions (as client-go sends them): a wrong precondition
    // first, then the deletion.
    let options = |uid: &str| {
        envelope::encode_envelope(
            "meta.k8s.io/v1",
            "DeleteOptions",
            &DeleteOptions {
                preconditions: Some(Preconditions {
                    uid: Some(uid.into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
    };
    let refused = pb.send(Method::DELETE, &path, PB, options("nope")).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{:?}", refused.body);
    assert!(pb_status(&refused).message.contains("Precondition failed"));
    let uid = patched.metadata().uid.clone().unwrap();
    let deleted = pb.send(Method::DELETE, &path, PB, options(&uid)).await;
    assert_eq!(deleted.status, StatusCode::OK);
    if returns_object {
        let gone: K = pb_object(&deleted);
        assert_eq!(gone.metadata().name.as_deref(), Some("w"));
    } else {
        let unknown = envelope::decode_envelope(&deleted.raw).unwrap();
        assert_eq!(
            (unknown.api_version.as_str(), unknown.kind.as_str()),
            ("v1", "Status")
        );
        let status = k8s_openapi::apimachinery::pkg::apis::meta::v1::Status::decode(
            unknown.raw,
            Ctx::default(),
        )
        .unwrap();
        assert_eq!(status.status.as_deref(), Some("Success"));
        assert_eq!(status.details.unwrap().name.as_deref(), Some("w"));
    }
    assert_eq!(c.get(&path).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn writes_take_and_answer_protobuf() {
    let (_server, c) = server().await;
    writes_agree::<Pod>(&c, &PODS, true).await;
    writes_agree::<ConfigMap>(&c, &CONFIGMAPS, false).await;
    writes_agree::<Deployment>(&c, &DEPLOYMENTS, false).await;
    writes_agree::<Service>(&c, &SERVICES, true).await;
    writes_agree::<Node>(&c, &NODES, true).await;
}

#[tokio::test]
async fn subresources_answer_protobuf() {
    let (_server, c) = server().await;
    seed(&c, &DEPLOYMENTS).await;
    let pb = accepting(&c, PB_FIRST);
    let path = format!("{}/scale", DEPLOYMENTS.object("a"));
    let scale: Scale = pb_object(&pb.get(&path).await);
    assert_eq!(scale, json_object::<Scale>(&c.get(&path).await));
    let mut wanted = scale.clone();
    wanted.spec.get_or_insert_with(Default::default).replicas = Some(5);
    let r = pb
        .send(
            Method::PUT,
            &path,
            PB,
            codec::<Scale>().encode_body(&wanted),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(pb_object::<Scale>(&r).spec.unwrap().replicas, Some(5));

    let status_path = format!("{}/status", DEPLOYMENTS.object("a"));
    let mut deployment: Deployment = pb_object(&pb.get(&status_path).await);
    deployment.status = Some(k8s_openapi::api::apps::v1::DeploymentStatus {
        replicas: Some(5),
        ready_replicas: Some(4),
        ..Default::default()
    });
    let r = pb
        .send(
            Method::PUT,
            &status_path,
            PB,
            codec::<Deployment>().encode_body(&deployment),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let updated: Deployment = pb_object(&r);
    assert_eq!(updated.status.unwrap().ready_replicas, Some(4));
}

/// A protobuf watch: `len(4, big-endian) + WatchEvent` frames.
struct PbWatch {
    body: Incoming,
    frames: FrameDecoder,
}

impl PbWatch {
    async fn open(c: &Client, path: &str) -> Self {
        let res = c.raw(Method::GET, path, JSON, Vec::new()).await;
        assert_eq!(res.status(), StatusCode::OK, "watch {path}");
        assert_eq!(res.headers()[header::CONTENT_TYPE], PB_WATCH);
        Self {
            body: res.into_body(),
            frames: FrameDecoder::new(FrameDecoder::DEFAULT_MAX_FRAME_LEN),
        }
    }

    /// The next frame, `None` when the stream ends.
    async fn frame(&mut self) -> Option<Vec<u8>> {
        let next = async {
            loop {
                if let Some(frame) = self.frames.next_frame() {
                    return Some(frame.expect("a frame within bounds"));
                }
                match self.body.frame().await {
                    Some(Ok(f)) => {
                        if let Ok(data) = f.into_data() {
                            self.frames.push(&data);
                        }
                    }
                    Some(Err(_)) | None => {
                        assert!(!self.frames.has_partial(), "stream ended inside a frame");
                        return None;
                    }
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(20), next)
            .await
            .expect("a frame in time")
    }

    async fn event<K: 'static>(&mut self) -> Option<WatchEvent<K>> {
        let frame = self.frame().await?;
        Some(core_types::decode_event(&frame, codec::<K>(), Ctx::default()).expect("an event"))
    }
}

/// A watch's ADDED, MODIFIED and DELETED objects are what JSON shows.
async fn watch_agrees<K: Kind>(c: &Client, case: &Case) {
    let list = c.get(case.collection).await;
    let rv = list.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut w = PbWatch::open(
        &accepting(c, PB_FIRST),
        &format!("{}?watch=1&resourceVersion={rv}", case.collection),
    )
    .await;
    let path = case.object("x");
    c.post(case.collection, &(case.seed)("x")).await;
    let Some(WatchEvent::Added(added)) = w.event::<K>().await else {
        panic!("{} ADDED", K::KIND)
    };
    let now: K = json_object(&c.get(&path).await);
    assert_same(&added, &now, "ADDED");
    c.patch(&path, MERGE, r#"{"metadata":{"labels":{"m":"1"}}}"#)
        .await;
    let Some(WatchEvent::Modified(modified)) = w.event::<K>().await else {
        panic!("{} MODIFIED", K::KIND)
    };
    let now: K = json_object(&c.get(&path).await);
    assert_same(&modified, &now, "MODIFIED");
    let deleted_json = c.delete(&path).await;
    assert!(deleted_json.status.is_success());
    let Some(WatchEvent::Deleted(deleted)) = w.event::<K>().await else {
        panic!("{} DELETED", K::KIND)
    };
    assert_eq!(deleted.metadata().name.as_deref(), Some("x"));
    assert_eq!(deleted.metadata().uid, now.metadata().uid);
}

#[tokio::test]
async fn watches_send_protobuf_events() {
    let (_server, c) = server().await;
    watch_agrees::<Pod>(&c, &PODS).await;
    watch_agrees::<ConfigMap>(&c, &CONFIGMAPS).await;
    watch_agrees::<Deployment>(&c, &DEPLOYMENTS).await;
    watch_agrees::<Service>(&c, &SERVICES).await;
    watch_agrees::<Node>(&c, &NODES).await;
}

#[tokio::test]
async fn watch_bookmarks_and_errors_in_protobuf() {
    let server = kclient_fake::FakeApiServer::builder()
        .bookmark_interval(Duration::from_millis(300))
        .start()
        .await
        .unwrap();
    let c = Client::new(&server);
    seed(&c, &CONFIGMAPS).await;
    let pb = accepting(&c, PB_FIRST);

    // A streaming list: the objects, then the initial-events-end bookmark, whose object is
    // a ConfigMap with only metadata.
    let mut w = PbWatch::open(
        &pb,
        &format!(
            "{}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
            CONFIGMAPS.collection
        ),
    )
    .await;
    let json_items = json_list::<ConfigMap>(&c.get(CONFIGMAPS.collection).await).1;
    for want in &json_items {
        let Some(WatchEvent::Added(got)) = w.event::<ConfigMap>().await else {
            panic!("ADDED")
        };
        assert_same(&got, want, "initial ADDED");
    }
    let frame = w.frame().await.unwrap();
    let (event_type, body) = envelope::decode_watch_event(&frame).unwrap();
    assert_eq!(event_type, "BOOKMARK");
    let bookmark: ConfigMap = codec::<ConfigMap>()
        .decode_body(body, Ctx::default())
        .expect("a ConfigMap");
    assert!(bookmark.data.is_none());
    assert!(bookmark.metadata.name.is_none());
    let WatchEvent::Bookmark(b) =
        core_types::decode_event::<ConfigMap>(&frame, codec::<ConfigMap>(), Ctx::default())
            .unwrap()
    else {
        panic!("a bookmark")
    };
    assert!(b.is_initial_events_end());
    let list_rv = json_list::<ConfigMap>(&c.get(CONFIGMAPS.collection).await)
        .0
        .resource_version
        .unwrap();
    assert_eq!(b.resource_version, list_rv);
    // Then the periodic bookmarks.
    let Some(WatchEvent::Bookmark(periodic)) = w.event::<ConfigMap>().await else {
        panic!("a periodic BOOKMARK")
    };
    assert!(!periodic.is_initial_events_end());
    drop(w);

    // Too old a resourceVersion: one ERROR event with a protobuf Status (410), then the end.
    server.faults().compact_history();
    let mut w = PbWatch::open(
        &pb,
        &format!("{}?watch=1&resourceVersion=1", CONFIGMAPS.collection),
    )
    .await;
    let Some(WatchEvent::Error(status)) = w.event::<ConfigMap>().await else {
        panic!("an ERROR")
    };
    assert_eq!(status.code, 410);
    assert_eq!(status.reason, StatusReason::Expired);
    assert!(status.message.starts_with("too old resource version: 1 ("));
    assert!(w.frame().await.is_none());
}

#[tokio::test]
async fn errors_are_protobuf_status_where_protobuf_is_accepted() {
    let (server, c) = server().await;
    seed(&c, &CONFIGMAPS).await;
    let pb = accepting(&c, PB_FIRST);
    let missing = CONFIGMAPS.object("zz");
    let r = pb.get(&missing).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let status = pb_status(&r);
    assert_eq!(status.reason, StatusReason::NotFound);
    assert_eq!(status.message, "configmaps \"zz\" not found");
    assert_eq!(status.details.as_ref().map(|d| d.name.as_str()), Some("zz"));
    // The same request in JSON says the same.
    let json = c.get(&missing).await;
    assert_eq!(content_type(&json), JSON);
    assert_eq!(json.body["message"], status.message);

    // Creation errors: 409 AlreadyExists, 422 Invalid.
    let r = pb.post(CONFIGMAPS.collection, &configmap_object("a")).await;
    assert_eq!(pb_status(&r).reason, StatusReason::AlreadyExists);
    let r = pb
        .post(CONFIGMAPS.collection, &configmap_object("Not_A_Name"))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(pb_status(&r).reason, StatusReason::Invalid);
    // An unknown resource in a built-in group.
    let r = pb.get("/api/v1/namespaces/default/nothings").await;
    assert_eq!(pb_status(&r).code, 404);

    // An expired continue token: 410 with the token to restart from in the Status's list
    // metadata.
    let first = c.get(&format!("{}?limit=1", CONFIGMAPS.collection)).await;
    let token = first.body["metadata"]["continue"]
        .as_str()
        .unwrap()
        .to_owned();
    c.post(CONFIGMAPS.collection, &configmap_object("d")).await;
    server.faults().compact_history();
    let r = pb
        .get(&format!(
            "{}?limit=1&continue={token}",
            CONFIGMAPS.collection
        ))
        .await;
    assert_eq!(r.status, StatusCode::GONE);
    assert_eq!(pb_status(&r).reason, StatusReason::Expired);
    let unknown = envelope::decode_envelope(&r.raw).unwrap();
    let status =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Status::decode(unknown.raw, Ctx::default())
            .unwrap();
    assert!(status.metadata.continue_.is_some_and(|c| !c.is_empty()));

    // Errors are negotiated without conversions: the metadata client's protobuf clause names
    // one, so its errors are JSON (its last clause).
    let r = accepting(&c, META_PB).get(&missing).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(content_type(&r), JSON);
    // A 406 nothing could be written for stays JSON.
    let r = accepting(
        &c,
        "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v2",
    )
    .get(&CONFIGMAPS.object("a"))
    .await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(content_type(&r), JSON);
}

#[tokio::test]
async fn json_stays_json() {
    let (_server, c) = server().await;
    seed(&c, &PODS).await;
    for accept in [
        None,
        Some("application/json"),
        Some("*/*"),
        Some("application/yaml"),
    ] {
        let client = match accept {
            Some(a) => accepting(&c, a),
            None => c.clone(),
        };
        let r = client.get(&PODS.object("a")).await;
        assert_eq!(content_type(&r), JSON, "{accept:?}");
        assert_eq!(r.body["kind"], "Pod");
        let r = client.get(PODS.collection).await;
        assert_eq!(content_type(&r), JSON, "{accept:?}");
        assert_eq!(r.body["kind"], "PodList");
    }
    let mut w = accepting(&c, "application/json")
        .watch(&format!("{}?watch=1&resourceVersion=0", PODS.collection))
        .await;
    assert_eq!(w.next_summary().await.unwrap().0, "ADDED");
    // A Table is JSON only, whatever else the header offers.
    let r = accepting(
        &c,
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/vnd.kubernetes.protobuf,application/json",
    )
    .get(PODS.collection)
    .await;
    assert_eq!(content_type(&r), JSON);
    assert_eq!(r.body["kind"], "Table");
}

async fn with_widgets(c: &Client) {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let r = c
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    for name in ["w1", "w2"] {
        let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                            "metadata": {"name": name, "labels": {"app": "x"}}, "spec": {"size": 3}});
        assert_eq!(c.post(WIDGETS, &widget).await.status, StatusCode::CREATED);
    }
}

#[tokio::test]
async fn custom_resources_answer_json_and_refuse_protobuf_bodies() {
    let (_server, c) = server().await;
    with_widgets(&c).await;
    let pb = accepting(&c, PB_FIRST);
    let r = pb.get(&format!("{WIDGETS}/w1")).await;
    assert_eq!(content_type(&r), JSON);
    assert_eq!(r.body["spec"]["size"], 3);
    let r = pb.get(WIDGETS).await;
    assert_eq!(content_type(&r), JSON);
    assert_eq!(names(&r.body), ["w1", "w2"]);
    let res = pb
        .raw(
            Method::GET,
            &format!("{WIDGETS}?watch=1&resourceVersion=0"),
            JSON,
            Vec::new(),
        )
        .await;
    assert_eq!(res.headers()[header::CONTENT_TYPE], JSON);

    // A protobuf body fails decoding: 400, as kube-apiserver's decoder into an Unstructured.
    let body = envelope::encode_envelope_with("example.com/v1", "Widget", 0, |_| {});
    let r = c.send(Method::POST, WIDGETS, PB, body).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.body["reason"], "BadRequest");
    assert_eq!(
        r.body["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: object *unstructured.Unstructured does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message"
    );
    // CBOR is not served at all: 415.
    let r = c
        .send(Method::POST, WIDGETS, "application/cbor", vec![0xa0])
        .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let r = c
        .send(
            Method::POST,
            CONFIGMAPS.collection,
            "application/cbor",
            vec![0xa0],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // Garbage in a protobuf body of a built-in kind: 400.
    let r = c
        .send(
            Method::POST,
            CONFIGMAPS.collection,
            PB,
            b"{\"kind\":1}".to_vec(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("provided data does not appear to be a protobuf message"));
}

/// `PartialObjectMetadata` of one object, in protobuf: envelope `meta.k8s.io/v1`.
fn pb_metadata(r: &Reply) -> PartialObjectMetadata {
    assert_eq!(content_type(r), PB, "{} {:?}", r.status, r.body);
    let unknown = envelope::decode_envelope(&r.raw).unwrap();
    assert_eq!(
        (unknown.api_version.as_str(), unknown.kind.as_str()),
        ("meta.k8s.io/v1", "PartialObjectMetadata")
    );
    codec::<PartialObjectMetadata>()
        .decode_body(&r.raw, Ctx::default())
        .unwrap()
}

fn pb_metadata_list(r: &Reply) -> (ListMeta, Vec<PartialObjectMetadata>) {
    assert_eq!(content_type(r), PB, "{} {:?}", r.status, r.body);
    let unknown = envelope::decode_envelope(&r.raw).unwrap();
    assert_eq!(
        (unknown.api_version.as_str(), unknown.kind.as_str()),
        ("meta.k8s.io/v1", "PartialObjectMetadataList")
    );
    let mut items = Vec::new();
    let meta = envelope::decode_list(unknown.raw, Ctx::default(), &mut |p| items.push(p)).unwrap();
    (meta, items)
}

#[tokio::test]
async fn metadata_in_protobuf_for_built_in_and_custom_resources() {
    let (_server, c) = server().await;
    seed(&c, &CONFIGMAPS).await;
    with_widgets(&c).await;
    for (object, collection) in [
        (CONFIGMAPS.object("a"), CONFIGMAPS.collection),
        (format!("{WIDGETS}/w1"), WIDGETS),
    ] {
        let full = c.get(&object).await.body;
        let meta = pb_metadata(&accepting(&c, META_PB).get(&object).await);
        assert_eq!(
            serde_json::to_value(&meta.metadata).unwrap(),
            full["metadata"],
            "{object}"
        );

        let lists = accepting(&c, META_LIST_PB);
        let (list_meta, items) = pb_metadata_list(&lists.get(collection).await);
        let json = c.get(collection).await.body;
        assert_eq!(
            list_meta.resource_version.as_deref(),
            json["metadata"]["resourceVersion"].as_str()
        );
        let item_names: Vec<String> = items
            .iter()
            .map(|i| i.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(item_names, names(&json));
        // Paged.
        let (first_meta, first) =
            pb_metadata_list(&lists.get(&format!("{collection}?limit=1")).await);
        assert_eq!(first.len(), 1);
        let token = first_meta.continue_.unwrap();
        let (_, rest) = pb_metadata_list(
            &lists
                .get(&format!("{collection}?limit=1&continue={token}"))
                .await,
        );
        assert_eq!(rest[0].metadata.name, items[1].metadata.name);

        // A watch of metadata.
        let mut w = PbWatch::open(
            &accepting(&c, META_PB),
            &format!("{collection}?watch=1&resourceVersion=0"),
        )
        .await;
        let Some(WatchEvent::Added(added)) = w.event::<PartialObjectMetadata>().await else {
            panic!("ADDED metadata")
        };
        assert_eq!(added.metadata, items[0].metadata);
    }
}
