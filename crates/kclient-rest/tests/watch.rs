//! Watch streams over real HTTP: framing across chunk boundaries, clean ends, truncated and
//! malformed streams, huge objects and failed watch requests.

use crate::support;

use bytes::Bytes;
use futures::StreamExt;
use http::StatusCode;
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_core::{
    ApiStatus, DynamicObject, GroupVersion, ListOptions, WatchDecodeError, WatchEvent,
};
use kclient_rest::{Error, RestClient};
use serde_json::json;
use support::{chunked, config, status, streaming, TestServer};

fn event(kind: &str, name: &str, rv: &str) -> Vec<u8> {
    let mut v = serde_json::to_vec(&json!({
        "type": kind,
        "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}, "data": {"k": "a \"quoted\" } brace"}},
    }))
    .unwrap();
    v.push(b'\n');
    v
}

fn watch_request(client: &RestClient) -> kclient_rest::Request {
    client
        .get()
        .group_version(&GroupVersion::new("", "v1"))
        .namespace("ns")
        .resource("configmaps")
        .params(
            ListOptions::default()
                .resource_version("1")
                .allow_watch_bookmarks(true)
                .watch_query_pairs(),
        )
}

#[tokio::test]
async fn events_split_at_every_boundary_are_decoded() {
    let mut stream_bytes = Vec::new();
    stream_bytes.extend(event("ADDED", "a", "2"));
    stream_bytes.extend(event("MODIFIED", "a", "3"));
    stream_bytes.extend(
        serde_json::to_vec(&json!({"type": "BOOKMARK", "object": {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": "4"}}})).unwrap(),
    );
    stream_bytes.extend(event("DELETED", "a", "5"));
    // Cut the stream into chunks of every size from 1 to 7 bytes.
    let mut chunks = Vec::new();
    let mut rest = &stream_bytes[..];
    let mut size = 1;
    while !rest.is_empty() {
        let n = size.min(rest.len());
        chunks.push(rest[..n].to_vec());
        rest = &rest[n..];
        size = size % 7 + 1;
    }
    let server = TestServer::http(move |_| {
        let chunks = chunks.clone();
        async move { chunked(chunks) }
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let events: Vec<_> = watch_request(&client)
        .watch::<ConfigMap>()
        .await
        .unwrap()
        .collect()
        .await;
    let types: Vec<_> = events
        .iter()
        .map(|e| e.as_ref().unwrap().type_name())
        .collect();
    assert_eq!(types, ["ADDED", "MODIFIED", "BOOKMARK", "DELETED"]);
    let rvs: Vec<_> = events
        .iter()
        .map(|e| e.as_ref().unwrap().resource_version().unwrap().to_owned())
        .collect();
    assert_eq!(rvs, ["2", "3", "4", "5"]);
    let query = server.requests()[0].uri.query().unwrap().to_owned();
    assert!(
        query.contains("watch=true") && query.contains("allowWatchBookmarks=true"),
        "{query}"
    );
}

#[tokio::test]
async fn events_arrive_as_the_server_sends_them_and_the_stream_ends_on_close() {
    let (tx, response) = streaming(StatusCode::OK);
    let response = parking_lot::Mutex::new(Some(response));
    let server = TestServer::http(move |_| {
        let r = response.lock().take().unwrap();
        async move { r }
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let mut watch = watch_request(&client).watch::<ConfigMap>().await.unwrap();
    tx.send(Bytes::from(event("ADDED", "a", "2"))).unwrap();
    let first = watch.next().await.unwrap().unwrap();
    assert!(matches!(first, WatchEvent::Added(ref cm) if cm.metadata.name.as_deref() == Some("a")));
    let second = event("MODIFIED", "a", "3");
    tx.send(Bytes::copy_from_slice(&second[..20])).unwrap();
    tx.send(Bytes::copy_from_slice(&second[20..])).unwrap();
    assert_eq!(watch.next().await.unwrap().unwrap().type_name(), "MODIFIED");
    drop(tx);
    assert!(
        watch.next().await.is_none(),
        "a server close between frames is a clean end"
    );
}

#[tokio::test]
async fn truncated_streams_end_with_a_typed_error() {
    let server = TestServer::http(|_| async {
        let mut second = event("MODIFIED", "a", "3");
        second.truncate(30);
        chunked(vec![event("ADDED", "a", "2"), second])
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let events: Vec<_> = watch_request(&client)
        .watch::<ConfigMap>()
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(events.len(), 2);
    assert!(events[0].is_ok());
    assert!(
        matches!(
            events[1],
            Err(Error::Watch(WatchDecodeError::Truncated { .. }))
        ),
        "{:?}",
        events[1]
    );
}

#[tokio::test]
async fn malformed_json_ends_the_stream_with_a_typed_error() {
    let server = TestServer::http(|_| async {
        chunked(vec![
            event("ADDED", "a", "2"),
            br#"{"type":"ADDED","object":{"metadata":{"name":["not","a","string"]}}}"#.to_vec(),
            event("ADDED", "b", "3"),
        ])
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let events: Vec<_> = watch_request(&client)
        .watch::<ConfigMap>()
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(events.len(), 2, "nothing after the bad frame");
    match &events[1] {
        Err(Error::Watch(WatchDecodeError::Json { snippet, .. })) => {
            assert!(snippet.contains("not"))
        }
        other => panic!("{other:?}"),
    }

    let server =
        TestServer::http(|_| async { chunked(vec![b"<html>proxy error</html>".to_vec()]) }).await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let events: Vec<_> = watch_request(&client)
        .watch::<ConfigMap>()
        .await
        .unwrap()
        .collect()
        .await;
    assert!(matches!(
        events[..],
        [Err(Error::Watch(WatchDecodeError::UnexpectedByte {
            byte: b'<',
            ..
        }))]
    ));
}

#[tokio::test]
async fn huge_objects_pass_and_the_limit_is_enforced() {
    let big = "x".repeat(5 * 1024 * 1024);
    let frame = serde_json::to_vec(&json!({
        "type": "ADDED",
        "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "resourceVersion": "2"}, "data": {"blob": big}},
    }))
    .unwrap();
    let chunks: Vec<Vec<u8>> = frame.chunks(64 * 1024).map(<[u8]>::to_vec).collect();
    let server = TestServer::http(move |_| {
        let chunks = chunks.clone();
        async move { chunked(chunks) }
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let events: Vec<_> = watch_request(&client)
        .watch::<ConfigMap>()
        .await
        .unwrap()
        .collect()
        .await;
    match &events[..] {
        [Ok(WatchEvent::Added(cm))] => {
            assert_eq!(cm.data.as_ref().unwrap()["blob"].len(), 5 * 1024 * 1024)
        }
        other => panic!(
            "{:?}",
            other
                .iter()
                .map(|e| e.as_ref().map(|e| e.type_name()))
                .collect::<Vec<_>>()
        ),
    }
    let events: Vec<_> = watch_request(&client)
        .max_watch_frame_len(1024 * 1024)
        .watch::<ConfigMap>()
        .await
        .unwrap()
        .collect()
        .await;
    assert!(matches!(
        events[..],
        [Err(Error::Watch(WatchDecodeError::FrameTooLarge {
            limit: 1_048_576
        }))]
    ));
}

#[tokio::test]
async fn error_events_and_dynamic_objects() {
    let server = TestServer::http(|_| async {
        let error = serde_json::to_vec(&json!({"type": "ERROR", "object": {
            "kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": "too old resource version: 1 (20)", "reason": "Expired", "code": 410}}))
        .unwrap();
        chunked(vec![event("ADDED", "a", "2"), error])
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let events: Vec<_> = watch_request(&client)
        .watch::<DynamicObject>()
        .await
        .unwrap()
        .collect()
        .await;
    match &events[1] {
        Ok(WatchEvent::Error(s)) => assert!(s.is_gone()),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_refused_watch_request_is_a_typed_error() {
    let server =
        TestServer::http(|_| async { status(410, "Expired", "too old resource version: 1 (20)") })
            .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let err = watch_request(&client)
        .watch::<ConfigMap>()
        .await
        .err()
        .unwrap();
    assert!(err.is_gone(), "{err:?}");
    assert!(err.is_resource_expired());
}

#[tokio::test]
async fn a_watch_needs_200() {
    let server = TestServer::http(|_| async { support::json(202, json!({})) }).await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let err = watch_request(&client)
        .watch::<ConfigMap>()
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, Error::HttpStatus { code: 202, .. }),
        "{err:?}"
    );
}
