//! Lists and watches: selectors, pagination over snapshots, resourceVersion semantics,
//! watch resumption, 410s, selector transitions, bookmarks, streaming lists, timeouts, fan-out.

use crate::common;

use common::*;
use http::StatusCode;
use kclient_fake::FakeApiServer;
use serde_json::json;

const PODS: &str = "/api/v1/namespaces/default/pods";

async fn create_pods(c: &Client, n: usize) {
    for i in 0..n {
        let r = c.post(PODS, &pod(&format!("p{i}"))).await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
}

#[tokio::test]
async fn label_and_field_selectors() {
    let (_server, c) = server().await;
    let mut a = labelled(pod("a"), json!({"app": "web", "tier": "front"}));
    a["spec"]["nodeName"] = json!("n1");
    c.post(PODS, &a).await;
    c.post(PODS, &labelled(pod("b"), json!({"app": "db"})))
        .await;
    c.post("/api/v1/namespaces/kube-system/pods", &pod("c"))
        .await;

    let r = c.get(&format!("{PODS}?labelSelector=app%3Dweb")).await;
    assert_eq!(names(&r.body), ["a"]);
    let r = c
        .get("/api/v1/pods?labelSelector=app%20in%20(web,db)")
        .await;
    assert_eq!(names(&r.body), ["a", "b"]);
    let r = c.get("/api/v1/pods?labelSelector=!app").await;
    assert_eq!(names(&r.body), ["c"]);
    let r = c.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1").await;
    assert_eq!(names(&r.body), ["a"]);
    let r = c
        .get("/api/v1/pods?fieldSelector=metadata.namespace!%3Ddefault")
        .await;
    assert_eq!(names(&r.body), ["c"]);
    let r = c
        .get("/api/v1/pods?fieldSelector=metadata.name%3Db,status.phase%3DPending")
        .await;
    assert_eq!(names(&r.body), ["b"]);

    let r = c.get("/api/v1/pods?fieldSelector=spec.foo%3Dx").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "field label not supported: spec.foo", "reason": "BadRequest", "code": 400})
    );
    let r = c.get("/api/v1/pods?labelSelector=a%20in%20(").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn per_type_field_selectors() {
    let (_server, c) = server().await;
    let ev = |name: &str, kind: &str, reason: &str, ty: &str| {
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
               "involvedObject": {"kind": kind, "name": "x", "namespace": "default"},
               "reason": reason, "type": ty})
    };
    c.post(
        "/api/v1/namespaces/default/events",
        &ev("e1", "Pod", "Started", "Normal"),
    )
    .await;
    c.post(
        "/api/v1/namespaces/default/events",
        &ev("e2", "Node", "Failed", "Warning"),
    )
    .await;
    let r = c
        .get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.kind%3DPod")
        .await;
    assert_eq!(names(&r.body), ["e1"]);
    let r = c
        .get("/api/v1/namespaces/default/events?fieldSelector=type%3DWarning,reason%3DFailed")
        .await;
    assert_eq!(names(&r.body), ["e2"]);

    c.post(
        "/api/v1/namespaces/default/secrets",
        &json!({"metadata": {"name": "tls"}, "type": "kubernetes.io/tls"}),
    )
    .await;
    c.post(
        "/api/v1/namespaces/default/secrets",
        &json!({"metadata": {"name": "plain"}}),
    )
    .await;
    let r = c.get("/api/v1/secrets?fieldSelector=type%3DOpaque").await;
    assert_eq!(names(&r.body), ["plain"]);

    c.post(
        "/api/v1/nodes",
        &json!({"metadata": {"name": "n1"}, "spec": {"unschedulable": true}}),
    )
    .await;
    c.post("/api/v1/nodes", &json!({"metadata": {"name": "n2"}}))
        .await;
    let r = c
        .get("/api/v1/nodes?fieldSelector=spec.unschedulable%3Dfalse")
        .await;
    assert_eq!(names(&r.body), ["n2"]);
    let r = c
        .get("/api/v1/namespaces?fieldSelector=status.phase%3DActive,metadata.name%3Ddefault")
        .await;
    assert_eq!(names(&r.body), ["default"]);
}

#[tokio::test]
async fn list_shape_and_resource_versions() {
    let (server, c) = server().await;
    create_pods(&c, 2).await;
    let r = c.get(PODS).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["kind"], "PodList");
    assert_eq!(r.body["apiVersion"], "v1");
    assert_eq!(
        r.body["metadata"]["resourceVersion"],
        server.resource_version().to_string()
    );
    assert!(r.body["metadata"].get("continue").is_none());

    let r = c.get(&format!("{PODS}?resourceVersion=0")).await;
    assert_eq!(names(&r.body), ["p0", "p1"]);

    let r = c
        .get(&format!("{PODS}?resourceVersionMatch=NotOlderThan"))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.body["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
    );
    let r = c
        .get(&format!(
            "{PODS}?resourceVersion=0&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let r = c.get(&format!("{PODS}?sendInitialEvents=true")).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("sendInitialEvents is forbidden for list"));
}

#[tokio::test]
async fn exact_lists_read_the_past() {
    let (_server, c) = server().await;
    create_pods(&c, 2).await;
    let before = c.get(PODS).await.body;
    let old_rv = rv(&before);
    c.delete(&format!("{PODS}/p0")).await;
    c.post(PODS, &pod("p9")).await;
    let mut p1 = c.get(&format!("{PODS}/p1")).await.body;
    p1["metadata"]["labels"] = json!({"changed": "yes"});
    c.put(&format!("{PODS}/p1"), &p1).await;

    let r = c
        .get(&format!(
            "{PODS}?resourceVersion={old_rv}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["metadata"]["resourceVersion"], old_rv.to_string());
    assert_eq!(r.body["items"], before["items"], "the list as it was");
    let r = c
        .get(&format!(
            "{PODS}?resourceVersion={old_rv}&resourceVersionMatch=NotOlderThan"
        ))
        .await;
    assert_eq!(names(&r.body), ["p1", "p9"]);
}

#[tokio::test(start_paused = true)]
async fn resource_versions_from_the_future() {
    let (server, c) = server().await;
    let future = server.resource_version() + 100;
    let r = c
        .get(&format!(
            "{PODS}?resourceVersion={future}&resourceVersionMatch=NotOlderThan"
        ))
        .await;
    assert_eq!(r.status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("Timeout: Too large resource version: {future}, current: {}", server.resource_version()),
               "reason": "Timeout",
               "details": {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                           "retryAfterSeconds": 1},
               "code": 504})
    );
    assert_eq!(r.headers["retry-after"], "1");
    let r = c
        .get(&format!(
            "/api/v1/namespaces/default/pods/x?resourceVersion={future}"
        ))
        .await;
    assert_eq!(r.status, StatusCode::GATEWAY_TIMEOUT);
}

#[tokio::test]
async fn pagination_over_a_consistent_snapshot() {
    let (_server, c) = server().await;
    create_pods(&c, 5).await;
    let page1 = c.get(&format!("{PODS}?limit=2")).await.body;
    assert_eq!(names(&page1), ["p0", "p1"]);
    assert_eq!(page1["metadata"]["remainingItemCount"], 3);
    let token = page1["metadata"]["continue"].as_str().unwrap().to_string();

    // Changes after the first page do not show in the next ones.
    c.delete(&format!("{PODS}/p3")).await;
    c.post(PODS, &pod("p25")).await;
    let page2 = c
        .get(&format!("{PODS}?limit=2&continue={token}"))
        .await
        .body;
    assert_eq!(names(&page2), ["p2", "p3"]);
    assert_eq!(
        page2["metadata"]["resourceVersion"],
        page1["metadata"]["resourceVersion"]
    );
    let token = page2["metadata"]["continue"].as_str().unwrap().to_string();
    let page3 = c
        .get(&format!("{PODS}?limit=2&continue={token}"))
        .await
        .body;
    assert_eq!(names(&page3), ["p4"]);
    assert!(page3["metadata"].get("continue").is_none());

    // With a selector, no remainingItemCount.
    let sel = c
        .get(&format!("{PODS}?limit=1&labelSelector=!x"))
        .await
        .body;
    assert!(sel["metadata"].get("remainingItemCount").is_none());
    assert!(sel["metadata"]["continue"].is_string());

    let r = c
        .get(&format!(
            "{PODS}?limit=1&continue={token}&resourceVersion=5"
        ))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "specifying resource version is not allowed when using continue"
    );
    let r = c.get(&format!("{PODS}?limit=1&continue=garbage!")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .starts_with("continue key is not valid"));
}

#[tokio::test]
async fn expired_continue_tokens() {
    let (server, c) = server().await;
    create_pods(&c, 3).await;
    let page1 = c.get(&format!("{PODS}?limit=1")).await.body;
    let token = page1["metadata"]["continue"].as_str().unwrap().to_string();
    server.faults().compact_history();
    let r = c.get(&format!("{PODS}?limit=1&continue={token}")).await;
    assert_eq!(r.status, StatusCode::GONE);
    assert_eq!(r.body["reason"], "Expired");
    assert_eq!(r.body["code"], 410);
    assert!(r.body["message"].as_str().unwrap().starts_with(
        "The provided continue parameter is too old to display a consistent list result."
    ));
    let fresh = r.body["metadata"]["continue"].as_str().unwrap();
    let r = c.get(&format!("{PODS}?limit=5&continue={fresh}")).await;
    assert_eq!(
        names(&r.body),
        ["p1", "p2"],
        "the inconsistent continuation resumes after p0"
    );

    let old = rv(&page1);
    let r = c
        .get(&format!(
            "{PODS}?resourceVersion={old}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!(r.status, StatusCode::GONE);
    assert_eq!(
        r.body["message"],
        "The resourceVersion for the provided list is too old."
    );
}

#[tokio::test]
async fn watch_from_a_resource_version() {
    let (_server, c) = server().await;
    let a = c.post(PODS, &pod("a")).await.body;
    c.post(PODS, &pod("b")).await;
    let mut w = c
        .watch(&format!("{PODS}?watch=true&resourceVersion={}", rv(&a)))
        .await;
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("ADDED".into(), "b".into())
    );
    let mut a2 = a.clone();
    a2["metadata"]["labels"] = json!({"x": "1"});
    c.put(&format!("{PODS}/a"), &a2).await;
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "MODIFIED");
    assert_eq!(e["object"]["metadata"]["labels"]["x"], "1");
    let del = c.delete(&format!("{PODS}/a")).await.body;
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "DELETED");
    assert!(rv(&e["object"]) >= rv(&del));
}

#[tokio::test]
async fn watch_without_resource_version_sends_the_current_state() {
    let (_server, c) = server().await;
    create_pods(&c, 2).await;
    let mut w = c.watch(&format!("{PODS}?watch=1")).await;
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("ADDED".into(), "p0".into())
    );
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("ADDED".into(), "p1".into())
    );
    c.post(PODS, &pod("p2")).await;
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("ADDED".into(), "p2".into())
    );
    // The deprecated /watch/ prefix and a watch on one name.
    let mut w = c.watch("/api/v1/watch/namespaces/default/pods/p1").await;
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("ADDED".into(), "p1".into())
    );
    c.delete(&format!("{PODS}/p0")).await;
    c.delete(&format!("{PODS}/p1")).await;
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("DELETED".into(), "p1".into())
    );
}

#[tokio::test]
async fn watch_too_old_resource_version() {
    let server = FakeApiServer::builder()
        .history_window(3)
        .start()
        .await
        .unwrap();
    let c = Client::new(&server);
    let first = c.post(PODS, &pod("a")).await.body;
    create_pods(&c, 4).await;
    let mut w = c
        .watch(&format!("{PODS}?watch=true&resourceVersion={}", rv(&first)))
        .await;
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "ERROR");
    let compacted = server.resource_version() - 3;
    assert_eq!(
        e["object"],
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("too old resource version: {} ({compacted})", rv(&first)),
               "reason": "Expired", "code": 410})
    );
    assert!(w.next().await.is_none(), "the stream ends after the error");
}

#[tokio::test]
async fn history_starts_with_the_server() {
    // As kube-apiserver's watch cache starts from a list, the history starts with the state
    // the server started with: resourceVersion 1 is too old, the start is not.
    let server = FakeApiServer::builder()
        .object(pod("preloaded"))
        .start()
        .await
        .unwrap();
    let c = Client::new(&server);
    let start = server.resource_version();
    let mut w = c
        .watch(&format!("{PODS}?watch=true&resourceVersion=1"))
        .await;
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "ERROR");
    assert_eq!(
        e["object"]["message"],
        format!("too old resource version: 1 ({start})")
    );
    assert_eq!(e["object"]["code"], 410);
    let mut w = c
        .watch(&format!("{PODS}?watch=true&resourceVersion={start}"))
        .await;
    c.post(PODS, &pod("later")).await;
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("ADDED".into(), "later".into())
    );
}

#[tokio::test]
async fn compaction_ends_open_watches_with_410() {
    let (server, c) = server().await;
    let a = c.post(PODS, &pod("a")).await.body;
    let mut w = c
        .watch(&format!("{PODS}?watch=true&resourceVersion={}", rv(&a)))
        .await;
    server.faults().stall_watches();
    c.post(PODS, &pod("b")).await;
    server.faults().compact_history();
    server.faults().resume_watches();
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "ERROR", "{e}");
    assert_eq!(e["object"]["code"], 410);
    // A new watch from the old version fails too; a fresh list works.
    let mut w = c
        .watch(&format!("{PODS}?watch=true&resourceVersion={}", rv(&a)))
        .await;
    assert_eq!(w.next().await.unwrap()["type"], "ERROR");
    let list = c.get(PODS).await.body;
    let mut w = c
        .watch(&format!("{PODS}?watch=true&resourceVersion={}", rv(&list)))
        .await;
    c.post(PODS, &pod("c")).await;
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("ADDED".into(), "c".into())
    );
}

#[tokio::test]
async fn selectors_apply_to_events() {
    let (_server, c) = server().await;
    let start = c.get(PODS).await.body;
    let mut w = c
        .watch(&format!(
            "{PODS}?watch=true&labelSelector=app%3Dweb&resourceVersion={}",
            rv(&start)
        ))
        .await;
    let created = c
        .post(PODS, &labelled(pod("a"), json!({"app": "db"})))
        .await
        .body;
    let mut web = created.clone();
    web["metadata"]["labels"] = json!({"app": "web"});
    let web = c.put(&format!("{PODS}/a"), &web).await.body;
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "ADDED", "entering the selector");
    let mut db = web.clone();
    db["metadata"]["labels"] = json!({"app": "db"});
    let db = c.put(&format!("{PODS}/a"), &db).await.body;
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "DELETED", "leaving the selector");
    assert_eq!(
        e["object"]["metadata"]["labels"]["app"], "web",
        "the previous state"
    );
    assert_eq!(
        e["object"]["metadata"]["resourceVersion"],
        db["metadata"]["resourceVersion"]
    );
    // Field selectors too, and other namespaces are not seen.
    let mut w2 = c
        .watch(&format!(
            "{PODS}?watch=true&fieldSelector=metadata.name%3Dz&resourceVersion={}",
            rv(&db)
        ))
        .await;
    c.post("/api/v1/namespaces/kube-system/pods", &pod("z"))
        .await;
    c.post(PODS, &pod("y")).await;
    c.post(PODS, &pod("z")).await;
    let e = w2.next().await.unwrap();
    assert_eq!(e["object"]["metadata"]["namespace"], "default");
}

#[tokio::test(start_paused = true)]
async fn periodic_bookmarks() {
    let server = FakeApiServer::builder()
        .bookmark_interval(std::time::Duration::from_secs(10))
        .start()
        .await
        .unwrap();
    let c = Client::new(&server);
    let a = c.post(PODS, &pod("a")).await.body;
    let mut w = c
        .watch(&format!(
            "{PODS}?watch=true&allowWatchBookmarks=true&resourceVersion={}",
            rv(&a)
        ))
        .await;
    c.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("other", json!({})),
    )
    .await;
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "BOOKMARK");
    assert_eq!(
        e["object"],
        json!({"kind": "Pod", "apiVersion": "v1",
               "metadata": {"resourceVersion": server.resource_version().to_string(), "creationTimestamp": null}})
    );
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "BOOKMARK", "again after another period");
    // Without allowWatchBookmarks, the stream ends at its timeout without any event.
    let mut quiet = c
        .watch(&format!(
            "{PODS}?watch=true&timeoutSeconds=30&resourceVersion={}",
            server.resource_version()
        ))
        .await;
    assert!(quiet.next().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_bookmark_comes_two_seconds_before_the_timeout() {
    let (server, c) = server().await;
    let start = tokio::time::Instant::now();
    let mut w = c
        .watch(&format!(
            "{PODS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=10&resourceVersion={}",
            server.resource_version()
        ))
        .await;
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "BOOKMARK");
    assert_eq!(start.elapsed(), std::time::Duration::from_secs(8));
    assert!(w.next().await.is_none(), "then the timeout ends it");
    assert_eq!(start.elapsed(), std::time::Duration::from_secs(10));
    // Too short a timeout for a bookmark two seconds before it: none.
    let mut short = c
        .watch(&format!(
            "{PODS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=2&resourceVersion={}",
            server.resource_version()
        ))
        .await;
    assert!(short.next().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn timeout_seconds_ends_the_stream() {
    let (_server, c) = server().await;
    let mut w = c
        .watch(&format!("{PODS}?watch=true&timeoutSeconds=5"))
        .await;
    assert!(w.next().await.is_none());
}

#[tokio::test]
async fn streaming_lists() {
    let (server, c) = server().await;
    create_pods(&c, 2).await;
    let path = format!(
        "{PODS}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&resourceVersion="
    );
    let mut w = c.watch(&path).await;
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("ADDED".into(), "p0".into())
    );
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("ADDED".into(), "p1".into())
    );
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "BOOKMARK");
    assert_eq!(
        e["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(
        e["object"]["metadata"]["resourceVersion"],
        server.resource_version().to_string()
    );
    c.post(PODS, &pod("p2")).await;
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("ADDED".into(), "p2".into())
    );

    let r = c
        .get(&format!(
            "{PODS}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true"
        ))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.body["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
    );
    let r = c
        .get(&format!(
            "{PODS}?watch=true&resourceVersionMatch=NotOlderThan"
        ))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn many_concurrent_watchers() {
    let (_server, c) = server().await;
    let start = rv(&c.get(PODS).await.body);
    let mut watches = Vec::new();
    for _ in 0..100 {
        watches.push(
            c.watch(&format!("{PODS}?watch=true&resourceVersion={start}"))
                .await,
        );
    }
    create_pods(&c, 3).await;
    for w in &mut watches {
        for i in 0..3 {
            assert_eq!(
                w.next_summary().await.unwrap(),
                ("ADDED".into(), format!("p{i}"))
            );
        }
    }
}

#[tokio::test]
async fn dropping_watches() {
    let (server, c) = server().await;
    let mut w = c
        .watch(&format!(
            "{PODS}?watch=true&resourceVersion={}",
            server.resource_version()
        ))
        .await;
    server.faults().drop_watches();
    assert!(w.next().await.is_none());
    let mut w = c
        .watch(&format!(
            "{PODS}?watch=true&resourceVersion={}",
            server.resource_version()
        ))
        .await;
    c.post(PODS, &pod("after")).await;
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("ADDED".into(), "after".into())
    );
}

#[tokio::test(start_paused = true)]
async fn streaming_lists_wait_for_their_resource_version() {
    let (server, c) = server().await;
    let future = server.resource_version() + 1;
    let path = format!(
        "{PODS}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&resourceVersion={future}"
    );
    let r = c.get(&path).await;
    assert_eq!(r.status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(
        r.body["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    // Reached while waiting: the watch starts.
    let c2 = c.clone();
    let waiting = tokio::spawn(async move { c2.watch(&path).await });
    tokio::task::yield_now().await;
    c.post(PODS, &pod("now")).await;
    let mut w = waiting.await.unwrap();
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("ADDED".into(), "now".into())
    );
    assert_eq!(w.next().await.unwrap()["type"], "BOOKMARK");
}
