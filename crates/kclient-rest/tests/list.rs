//! JSON lists decoded as their bytes arrive (`Request::fetch_list`); the protobuf ones are in
//! `protobuf.rs`.

use crate::support;

use k8s_openapi::api::core::v1::ConfigMap;
use kclient_rest::{Error, RestClient};
use serde_json::json;
use support::{config, pieces, TestServer};

fn list_body(names: &[&str], metadata_first: bool) -> Vec<u8> {
    let items: Vec<_> = names
        .iter()
        .map(|n| json!({"metadata": {"name": n, "managedFields": [{"manager": "m"}]}, "data": {"k": "{\"}"}}))
        .collect();
    let items = serde_json::to_string(&items).unwrap();
    let metadata = r#""metadata":{"resourceVersion":"9","continue":"next"}"#;
    let body = if metadata_first {
        format!(r#"{{"kind":"ConfigMapList","apiVersion":"v1",{metadata},"items":{items}}}"#)
    } else {
        format!(r#"{{"kind":"ConfigMapList","apiVersion":"v1","items":{items},{metadata}}}"#)
    };
    body.into_bytes()
}

async fn fetch(
    body: Vec<u8>,
    split: usize,
    gzipped: bool,
    omit: bool,
) -> Result<(Option<String>, kclient_core::ObjectList<ConfigMap>), Error> {
    let server = TestServer::http(move |_| {
        std::future::ready(pieces(&body, split, gzipped, Some("application/json")))
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let fetched = support::configmaps(&client)
        .omit_managed_fields(omit)
        .fetch_list::<ConfigMap>()
        .await?;
    let token = fetched.continue_token().map(str::to_owned);
    Ok((token, fetched.decode().await?))
}

#[tokio::test]
async fn json_lists_in_any_pieces_gzipped_or_not_decode_to_the_same_list() {
    for metadata_first in [true, false] {
        let body = list_body(&["a", "b", "c"], metadata_first);
        let whole: kclient_core::ObjectList<ConfigMap> = serde_json::from_slice(&body).unwrap();
        for (split, gzipped) in [
            (1, false),
            (5, true),
            (body.len(), false),
            (body.len(), true),
        ] {
            let case = format!("metadata first {metadata_first}, split {split}, gzip {gzipped}");
            let (token, list) = fetch(body.clone(), split, gzipped, false)
                .await
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(token.as_deref(), Some("next"), "{case}");
            assert_eq!(list, whole, "{case}");
        }
    }
    let (_, list) = fetch(list_body(&["a"], true), 3, false, true)
        .await
        .unwrap();
    assert_eq!(list.items[0].metadata.managed_fields, None);
}

#[tokio::test]
async fn a_json_list_cut_short_or_malformed_is_a_decode_error() {
    let body = list_body(&["a", "b"], true);
    for cut in [0, 5, body.len() / 2, body.len() - 1] {
        let error = fetch(body[..cut].to_vec(), 4, false, false)
            .await
            .expect_err("a cut body");
        assert!(
            matches!(error, Error::Decode { .. }),
            "cut at {cut}: {error:?}"
        );
    }
    let error = fetch(br#"{"items":[1]}"#.to_vec(), 4, false, false)
        .await
        .expect_err("an item that is not an object");
    assert!(matches!(error, Error::Decode { .. }), "{error:?}");
}
