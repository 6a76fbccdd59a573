//! Protobuf negotiation against a test server: what a request that prefers protobuf asks
//! for, decoding whatever comes back by its `Content-Type`, the `406` fallback to JSON for the
//! client's lifetime, the force-JSON option, protobuf watches and errors, and protobuf lists
//! decoded as their bytes arrive.

use crate::support;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Status};
use kclient_core::{ApiStatus, GroupVersion, WatchEvent};
use kclient_protobuf::core_types::encode_event_frame;
use kclient_protobuf::registry;
use kclient_rest::{Error, RestClient, PROTOBUF_ACCEPT};
use support::{config, full, json, pieces, Recorded, TestServer};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn configmap(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            resource_version: Some("7".into()),
            ..Default::default()
        },
        data: Some([("k".to_owned(), "v".to_owned())].into()),
        ..Default::default()
    }
}

fn protobuf(status: u16, content_type: &str, body: Vec<u8>) -> http::Response<support::Body> {
    http::Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(full(body))
        .unwrap()
}

/// Answers as kube-apiserver does: protobuf when the `Accept` header allows it.
fn negotiating(request: &Recorded) -> http::Response<support::Body> {
    let cm = configmap("a");
    if request
        .header("accept")
        .is_some_and(|a| a.contains(PROTOBUF))
    {
        let body = registry::codec::<ConfigMap>().unwrap().encode_body(&cm);
        protobuf(200, PROTOBUF, body)
    } else {
        json(200, serde_json::to_value(&cm).unwrap())
    }
}

fn get_a(client: &RestClient) -> kclient_rest::Request {
    support::configmaps(client).name("a")
}

#[tokio::test]
async fn a_request_preferring_protobuf_decodes_either_answer() {
    let server = TestServer::http(|r| async move { negotiating(&r) }).await;
    let client = RestClient::new(config(&server.url())).unwrap();
    assert!(client.speaks_protobuf());
    let got: ConfigMap = get_a(&client).accept_protobuf().decode().await.unwrap();
    assert_eq!(got, configmap("a"));
    let got: ConfigMap = get_a(&client).decode().await.unwrap();
    assert_eq!(got, configmap("a"));
    let seen = server.requests();
    assert_eq!(seen[0].header("accept"), Some(PROTOBUF_ACCEPT));
    assert_eq!(seen[1].header("accept"), Some("application/json, */*"));

    // An Accept header set on the request wins.
    let _: ConfigMap = get_a(&client)
        .accept_protobuf()
        .header("Accept", "application/json")
        .decode()
        .await
        .unwrap();
    assert_eq!(
        server.requests()[2].header("accept"),
        Some("application/json")
    );
}

#[tokio::test]
async fn disable_protobuf_forces_json() {
    let server = TestServer::http(|r| async move { negotiating(&r) }).await;
    let mut config = config(&server.url());
    config.disable_protobuf = true;
    let client = RestClient::new(config).unwrap();
    assert!(!client.speaks_protobuf());
    let got: ConfigMap = get_a(&client).accept_protobuf().decode().await.unwrap();
    assert_eq!(got, configmap("a"));
    assert_eq!(
        server.requests()[0].header("accept"),
        Some("application/json, */*")
    );
}

#[tokio::test]
async fn a_406_makes_the_client_speak_json_and_repeats_a_read() {
    // A server (or an aggregated API) that refuses protobuf.
    let server = TestServer::http(|r| async move {
        if r.header("accept").is_some_and(|a| a.contains(PROTOBUF)) {
            support::status(406, "NotAcceptable", "only application/json is accepted")
        } else {
            negotiating(&r)
        }
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let clone = client.clone();
    let got: ConfigMap = get_a(&client).accept_protobuf().decode().await.unwrap();
    assert_eq!(got, configmap("a"));
    assert!(!client.speaks_protobuf() && !clone.speaks_protobuf());
    let _: ConfigMap = get_a(&clone).accept_protobuf().decode().await.unwrap();
    let accepts: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.header("accept").unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        accepts,
        [
            PROTOBUF_ACCEPT,
            "application/json, */*",
            "application/json, */*"
        ]
    );
}

#[tokio::test]
async fn a_406_on_a_write_is_not_repeated() {
    let server = TestServer::http(|_| async {
        support::status(406, "NotAcceptable", "cannot encode the answer")
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let err = client
        .post()
        .group_version(&GroupVersion::new("", "v1"))
        .namespace("ns")
        .resource("configmaps")
        .json_body(&configmap("a"))
        .accept_protobuf()
        .decode::<ConfigMap>()
        .await
        .unwrap_err();
    assert_eq!(err.http_code(), Some(406));
    assert_eq!(server.requests().len(), 1, "a write must not be sent twice");
    assert!(!client.speaks_protobuf());
}

#[tokio::test]
async fn protobuf_errors_are_api_errors() {
    let server = TestServer::http(|_| async {
        let status = Status {
            status: Some("Failure".into()),
            message: Some("configmaps \"a\" not found".into()),
            reason: Some("NotFound".into()),
            code: Some(404),
            ..Default::default()
        };
        protobuf(
            404,
            PROTOBUF,
            registry::codec::<Status>().unwrap().encode_body(&status),
        )
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let err = get_a(&client)
        .accept_protobuf()
        .decode::<ConfigMap>()
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
    assert!(matches!(err, Error::Api(_)));
    assert!(client.speaks_protobuf());
}

#[tokio::test]
async fn a_protobuf_answer_for_a_type_without_codec_is_a_typed_error() {
    let server = TestServer::http(|r| async move { negotiating(&r) }).await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let err = get_a(&client)
        .accept_protobuf()
        .decode::<serde_json::Value>()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ProtobufDecode { .. }), "{err:?}");
}

#[tokio::test]
async fn protobuf_watches_decode_frame_by_frame() {
    let codec = registry::codec::<ConfigMap>().unwrap();
    let mut body = Vec::new();
    for (ty, name) in [("ADDED", "a"), ("MODIFIED", "b"), ("DELETED", "a")] {
        body.extend_from_slice(&encode_event_frame(
            ty,
            &codec.encode_body(&configmap(name)),
        ));
    }
    let chunks: Vec<Vec<u8>> = body.chunks(5).map(<[u8]>::to_vec).collect();
    let server = TestServer::http(move |_| {
        let mut response = support::chunked(chunks.clone());
        response.headers_mut().insert(
            "content-type",
            http::HeaderValue::from_static("application/vnd.kubernetes.protobuf;stream=watch"),
        );
        async move { response }
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let events: Vec<_> = client
        .get()
        .group_version(&GroupVersion::new("", "v1"))
        .resource("configmaps")
        .param("watch", "true")
        .accept_protobuf()
        .watch::<ConfigMap>()
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(
        events,
        [
            WatchEvent::Added(configmap("a")),
            WatchEvent::Modified(configmap("b")),
            WatchEvent::Deleted(configmap("a")),
        ]
    );
}

fn list_body(names: &[&str], continue_token: &str) -> Vec<u8> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
    let metadata = ListMeta {
        resource_version: Some("9".into()),
        continue_: Some(continue_token.into()),
        ..Default::default()
    };
    let items: Vec<ConfigMap> = names.iter().map(|n| configmap(n)).collect();
    kclient_protobuf::envelope::encode_list("v1", "ConfigMapList", &metadata, &items)
}

fn list_configmaps(client: &RestClient) -> kclient_rest::Request {
    support::configmaps(client).accept_protobuf()
}

#[tokio::test]
async fn protobuf_lists_in_any_pieces_gzipped_or_not_decode_to_the_same_list() {
    let names = ["a", "b", "c", "d"];
    let body = list_body(&names, "next");
    for (split, gzipped, content_type) in [
        (1, false, Some(PROTOBUF)),
        (7, false, None),
        (body.len(), false, Some(PROTOBUF)),
        (3, true, Some(PROTOBUF)),
        (body.len(), true, None),
    ] {
        let body = body.clone();
        let server = TestServer::http(move |_| {
            std::future::ready(pieces(&body, split, gzipped, content_type))
        })
        .await;
        let client = RestClient::new(config(&server.url())).unwrap();
        let fetched = list_configmaps(&client)
            .fetch_list::<ConfigMap>()
            .await
            .unwrap();
        let case = format!("split {split}, gzip {gzipped}, content type {content_type:?}");
        assert_eq!(fetched.continue_token(), Some("next"), "{case}");
        let list = fetched.decode().await.unwrap();
        let expected: Vec<ConfigMap> = names.iter().map(|n| configmap(n)).collect();
        assert_eq!(list.items, expected, "{case}");
        assert_eq!(
            list.metadata.resource_version.as_deref(),
            Some("9"),
            "{case}"
        );
        assert_eq!(list.types.unwrap().kind, "ConfigMapList", "{case}");
        let accept_encoding = server.requests()[0]
            .header("accept-encoding")
            .map(str::to_owned);
        assert_eq!(accept_encoding.as_deref(), Some("gzip"), "{case}");
    }
}

#[tokio::test]
async fn a_protobuf_list_hands_out_its_metadata_and_items_before_its_body_ends() {
    let body = list_body(&["a", "b", "c"], "next");
    // The body up to the middle of the third item: the metadata and two items.
    let third = registry::codec::<ConfigMap>()
        .unwrap()
        .encode_message(&configmap("c"));
    let at = body
        .windows(third.len())
        .position(|w| w == third)
        .expect("the third item in the body");
    let (head, tail) = body.split_at(at + third.len() / 2);
    let (head, tail) = (
        bytes::Bytes::copy_from_slice(head),
        bytes::Bytes::copy_from_slice(tail),
    );
    let (feed, response) = support::streaming(http::StatusCode::OK);
    let response = std::sync::Mutex::new(Some(response));
    let server = TestServer::http(move |_| {
        let mut response = response.lock().unwrap().take().expect("one request");
        response
            .headers_mut()
            .insert("content-type", http::HeaderValue::from_static(PROTOBUF));
        std::future::ready(response)
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    feed.send(head).unwrap();
    let fetched = list_configmaps(&client)
        .fetch_list::<ConfigMap>()
        .await
        .unwrap();
    assert_eq!(
        fetched.continue_token(),
        Some("next"),
        "before the body ended"
    );
    let (decoded_tx, mut decoded) = tokio::sync::mpsc::unbounded_channel();
    let decoding = tokio::spawn(
        fetched
            .map(move |cm| {
                decoded_tx.send(cm.metadata.name.clone()).unwrap();
                cm
            })
            .decode(),
    );
    for name in ["a", "b"] {
        assert_eq!(decoded.recv().await.flatten().as_deref(), Some(name));
    }
    assert!(!decoding.is_finished());
    feed.send(tail).unwrap();
    drop(feed);
    let list = decoding.await.unwrap().unwrap();
    assert_eq!(list.items.len(), 3);
    assert_eq!(decoded.recv().await.flatten().as_deref(), Some("c"));
}

#[tokio::test]
async fn a_protobuf_list_cut_short_is_a_typed_error_not_a_short_list() {
    let body = list_body(&["a", "b", "c"], "");
    for cut in [10, body.len() / 2, body.len() - 5] {
        let piece = body[..cut].to_vec();
        let server =
            TestServer::http(move |_| std::future::ready(pieces(&piece, 9, false, Some(PROTOBUF))))
                .await;
        let client = RestClient::new(config(&server.url())).unwrap();
        let result = match list_configmaps(&client).fetch_list::<ConfigMap>().await {
            Ok(fetched) => fetched.decode().await.map(|_| ()),
            Err(e) => Err(e),
        };
        let error = result.expect_err("a cut body");
        assert!(
            matches!(error, Error::ProtobufDecode { .. }),
            "cut at {cut}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_protobuf_list_item_over_the_bound_is_refused() {
    let body = list_body(&["a", "b"], "");
    let server =
        TestServer::http(move |_| std::future::ready(pieces(&body, 4, false, Some(PROTOBUF))))
            .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let result = match list_configmaps(&client)
        .max_watch_frame_len(16)
        .fetch_list::<ConfigMap>()
        .await
    {
        Ok(fetched) => fetched.decode().await.map(|_| ()),
        Err(e) => Err(e),
    };
    let error = result.expect_err("items of more than 16 bytes");
    assert!(error.to_string().contains("exceeds the limit"), "{error}");
}
