//! JSON patch (RFC 6902) as kube-apiserver applies it (issue 49): the patches kube-runtime's
//! `finalizer()` sends, and the edge cases where kube-apiserver's library
//! (gopkg.in/evanphx/json-patch.v4) and a strict reading of the RFC part ways: a `test` of
//! `null` against a missing path, `add` over an existing key, `replace` of a missing key, the
//! `-` index, negative and zero-padded indices, `~0`/`~1` escapes, moves into a child of
//! themselves, copies from missing keys, operations through `null`, paths without their
//! leading `/`, how a `test` compares strings, and how a body that is not a patch is refused.
//!
//! Every answer is recorded whole: the code, the `Status` (message and details) of a
//! refusal, the `Warning` headers, and the object's data, labels, annotations and finalizers
//! after a patch that applied.

use anyhow::{ensure, Result};
use http::StatusCode;
use serde_json::{json, Value};

use super::{config_map, until_not_found, Namespace, EVENT_TIMEOUT, SCENARIO_LABEL};
use crate::client::{ApiClient, Response};
use crate::target::Target;
use crate::transcript::Transcript;

const JSON_PATCH: &str = "application/json-patch+json";
const ONE: &str = "e2e.kclient.dev/one";
const TWO: &str = "e2e.kclient.dev/two";
const THREE: &str = "e2e.kclient.dev/three";

/// What a patch answered, for the transcript: a refusal's `Status`, or the parts of the
/// ConfigMap the patches change.
fn answer(response: &Response) -> Value {
    let body = &response.body;
    let mut seen = if response.status.is_success() {
        let meta = &body["metadata"];
        json!({
            "code": response.status.as_u16(),
            "data": body["data"],
            "labels": meta["labels"],
            "annotations": meta["annotations"],
            "finalizers": meta["finalizers"],
        })
    } else {
        json!({
            "code": response.status.as_u16(),
            "reason": body["reason"],
            "message": body["message"],
            "details": body["details"],
        })
    };
    if !response.warnings.is_empty() {
        seen["warnings"] = json!(response.warnings);
    }
    seen
}

/// A patch body: operations, serialized; or bytes, sent as they are (what a serializer would
/// not write: escapes, keys out of order, malformed JSON).
enum Body {
    Ops(Value),
    Bytes(&'static str),
}

/// Sends one JSON patch and records its answer under `step`; returns the code.
async fn send(
    client: &ApiClient,
    item: &str,
    t: &mut Transcript,
    step: &str,
    body: &Body,
) -> Result<StatusCode> {
    let response = match body {
        Body::Ops(ops) => client.patch(item, JSON_PATCH, ops).await?,
        Body::Bytes(bytes) => {
            client
                .patch_bytes(item, JSON_PATCH, bytes.as_bytes())
                .await?
        }
    };
    t.record(step, answer(&response));
    Ok(response.status)
}

/// kube-runtime's `finalizer()` patches, then every edge case, on one ConfigMap; then the
/// finalizers removed as `finalizer()` removes them, which lets the deleted object go.
pub async fn json_patch_semantics(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "json-patch").await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");
    let item = format!("{path}/target");
    client
        .post(
            &path,
            &config_map(
                "target",
                "json-patch",
                json!({"a": "1", "b": "2", "html": "a<b"}),
            ),
        )
        .await?
        .expect(StatusCode::CREATED)?;

    // kube-runtime's finalizer(): the first finalizer, where there are none (a `test` of null
    // passes on a missing path), then another controller's, after the list it saw.
    let first_finalizer = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": [ONE]},
    ]);
    for (step, ops) in [
        ("finalizer(): the first finalizer", first_finalizer.clone()),
        (
            "finalizer(): a second finalizer",
            json!([
                {"op": "test", "path": "/metadata/finalizers", "value": [ONE]},
                {"op": "add", "path": "/metadata/finalizers/-", "value": TWO},
            ]),
        ),
    ] {
        let code = send(&client, &item, &mut t, step, &Body::Ops(ops)).await?;
        ensure!(
            code == StatusCode::OK,
            "kube-runtime's patch `{step}` was refused ({code})"
        );
    }

    let cases = vec![
        (
            "finalizer(): the first-finalizer patch, finalizers present",
            Body::Ops(first_finalizer),
        ),
        (
            "finalizer(): a stale list",
            Body::Ops(json!([
                {"op": "test", "path": "/metadata/finalizers", "value": [ONE]},
                {"op": "add", "path": "/metadata/finalizers/-", "value": THREE},
            ])),
        ),
        // test
        (
            "test of a missing key, no value",
            Body::Ops(json!([
                {"op": "test", "path": "/data/missing"},
                {"op": "add", "path": "/data/c", "value": "3"},
            ])),
        ),
        (
            "test of null under a missing parent",
            Body::Ops(json!([
                {"op": "test", "path": "/metadata/annotations/x", "value": null},
            ])),
        ),
        (
            "test of null on a key that has a value",
            Body::Ops(json!([
                {"op": "test", "path": "/data/a", "value": null},
            ])),
        ),
        (
            "test of a key that has a value, no value",
            Body::Ops(json!([
                {"op": "test", "path": "/data/a"},
            ])),
        ),
        (
            "test of a number against a string",
            Body::Ops(json!([
                {"op": "test", "path": "/data/a", "value": 1},
            ])),
        ),
        (
            "test of an object holding a string with '<'",
            Body::Ops(json!([
                {"op": "test", "path": "/metadata/labels", "value": {SCENARIO_LABEL: "json-patch"}},
                {"op": "test", "path": "/data", "value": {"html": "a<b", "c": "3", "b": "2", "a": "1"}},
                {"op": "add", "path": "/data/objects", "value": "equal"},
            ])),
        ),
        // kube-apiserver compares a string's JSON as its encoder writes it, `<` as `\u003c`.
        (
            "test of a string with '<' as written",
            Body::Ops(json!([
                {"op": "test", "path": "/data/html", "value": "a<b"},
            ])),
        ),
        (
            "test of a string with '<' escaped",
            Body::Bytes(
                r#"[{"op": "test", "path": "/data/html", "value": "a\u003cb"}, {"op": "add", "path": "/data/escaped", "value": "equal"}]"#,
            ),
        ),
        // add, replace, remove
        (
            "add over an existing key",
            Body::Ops(json!([
                {"op": "add", "path": "/data/a", "value": "10"},
            ])),
        ),
        (
            "replace of a missing key",
            Body::Ops(json!([
                {"op": "replace", "path": "/data/new", "value": "v"},
            ])),
        ),
        (
            "remove of a missing key",
            Body::Ops(json!([
                {"op": "remove", "path": "/data/nope"},
            ])),
        ),
        (
            "add under a missing parent",
            Body::Ops(json!([
                {"op": "add", "path": "/metadata/annotations/x/y", "value": "1"},
            ])),
        ),
        (
            "add at a path without its leading slash",
            Body::Ops(json!([
                {"op": "add", "path": "ignored/data/k", "value": "k"},
            ])),
        ),
        (
            "add at the empty path",
            Body::Ops(json!([
                {"op": "add", "path": "", "value": {}},
            ])),
        ),
        // Indices, on the finalizers [one, two].
        (
            "add at the index one past the end",
            Body::Ops(json!([
                {"op": "add", "path": "/metadata/finalizers/2", "value": THREE},
            ])),
        ),
        (
            "add beyond the end",
            Body::Ops(json!([
                {"op": "add", "path": "/metadata/finalizers/5", "value": THREE},
            ])),
        ),
        (
            "remove at '-'",
            Body::Ops(json!([
                {"op": "remove", "path": "/metadata/finalizers/-"},
            ])),
        ),
        (
            "test at '-'",
            Body::Ops(json!([
                {"op": "test", "path": "/metadata/finalizers/-", "value": THREE},
            ])),
        ),
        (
            "remove at -1",
            Body::Ops(json!([
                {"op": "remove", "path": "/metadata/finalizers/-1"},
            ])),
        ),
        (
            "remove at 01",
            Body::Ops(json!([
                {"op": "remove", "path": "/metadata/finalizers/01"},
            ])),
        ),
        (
            "remove at an index too large for an integer",
            Body::Ops(json!([
                {"op": "remove", "path": "/metadata/finalizers/99999999999999999999"},
            ])),
        ),
        (
            "replace at -2, beyond the start",
            Body::Ops(json!([
                {"op": "replace", "path": "/metadata/finalizers/-2", "value": TWO},
            ])),
        ),
        (
            "add at -1",
            Body::Ops(json!([
                {"op": "add", "path": "/metadata/finalizers/-1", "value": TWO},
            ])),
        ),
        (
            "move of the first element to the end",
            Body::Ops(json!([
                {"op": "move", "from": "/metadata/finalizers/0", "path": "/metadata/finalizers/-"},
            ])),
        ),
        // Escapes: `~1` is `/`, `~0` is `~`, decoded in one pass (`~01` is `~1`, not `/`).
        (
            "add of a label whose key has a '/'",
            Body::Ops(json!([
                {"op": "add", "path": "/metadata/labels/e2e.kclient.dev~1tier", "value": "web"},
            ])),
        ),
        (
            "test of null at '~01': a key '~1', missing",
            Body::Ops(json!([
                {"op": "test", "path": "/metadata/labels/e2e.kclient.dev~01tier", "value": null},
                {"op": "test", "path": "/metadata/labels/e2e.kclient.dev~1tier", "value": "web"},
            ])),
        ),
        // Sent as written: a serializer would put the keys in order.
        (
            "test of an object, keys in another order",
            Body::Bytes(
                r#"[{"op": "test", "path": "/metadata/labels", "value": {"e2e.kclient.dev/tier": "web", "e2e.kclient.dev/scenario": "json-patch"}}, {"op": "add", "path": "/data/objects", "value": "equal"}]"#,
            ),
        ),
        // move and copy
        (
            "move into a child of itself",
            Body::Ops(json!([
                {"op": "move", "from": "/metadata/labels", "path": "/metadata/labels/x"},
            ])),
        ),
        (
            "move of a missing key",
            Body::Ops(json!([
                {"op": "move", "from": "/data/nope", "path": "/data/moved"},
            ])),
        ),
        (
            "copy",
            Body::Ops(json!([
                {"op": "copy", "from": "/data/b", "path": "/data/copied"},
            ])),
        ),
        (
            "copy of a missing key",
            Body::Ops(json!([
                {"op": "copy", "from": "/data/nope", "path": "/data/from-nothing"},
            ])),
        ),
        (
            "copy from under a missing parent",
            Body::Ops(json!([
                {"op": "copy", "from": "/metadata/annotations/x", "path": "/data/x"},
            ])),
        ),
        // null
        (
            "an operation through a null",
            Body::Ops(json!([
                {"op": "add", "path": "/data/n", "value": null},
                {"op": "test", "path": "/data/n", "value": null},
                {"op": "add", "path": "/data/n/x", "value": "1"},
            ])),
        ),
        (
            "add of a null",
            Body::Ops(json!([
                {"op": "add", "path": "/metadata/annotations", "value": null},
            ])),
        ),
        // Bodies that are not patches, and operations that are not operations.
        ("a body that is an object", Body::Ops(json!({"op": "add"}))),
        (
            "an operation whose op is a number",
            Body::Ops(json!([{"op": 1}])),
        ),
        (
            "an operation whose path is a number",
            Body::Ops(json!([
                {"op": "add", "path": 1, "value": "1"},
            ])),
        ),
        ("an operation that is a string", Body::Ops(json!(["add"]))),
        (
            "an unknown op",
            Body::Ops(json!([{"op": "frobnicate", "path": "/data/a"}])),
        ),
        (
            "an operation without op",
            Body::Ops(json!([{"path": "/data/a"}])),
        ),
        (
            "an operation without path",
            Body::Ops(json!([{"op": "add", "value": "1"}])),
        ),
        ("a null operation", Body::Ops(json!([null]))),
        ("a body that is not JSON", Body::Bytes("[{\"op\": \"add\"")),
        (
            "an operation with an unknown and a repeated field",
            Body::Bytes(
                r#"[{"op": "add", "path": "/data/w", "value": "1", "extra": true, "op": "add"}]"#,
            ),
        ),
        ("an empty patch", Body::Ops(json!([]))),
    ];
    for (step, body) in &cases {
        send(&client, &item, &mut t, step, body).await?;
    }

    // Deleted, then kube-runtime's finalizer() removes each finalizer after its cleanup.
    let deleted = client.delete(&item).await?;
    t.record(
        "delete",
        json!({
            "code": deleted.status.as_u16(),
            "terminating": deleted.body["metadata"]["deletionTimestamp"].is_string(),
            "finalizers": deleted.body["metadata"]["finalizers"],
        }),
    );
    loop {
        let current = client.get(&item).await?;
        if current.status == StatusCode::NOT_FOUND {
            break;
        }
        let current = current.expect(StatusCode::OK)?;
        let finalizers = current.body["metadata"]["finalizers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let Some(last) = finalizers.last() else {
            break;
        };
        let index = finalizers.len() - 1;
        let removal = Body::Ops(json!([
            {"op": "test", "path": format!("/metadata/finalizers/{index}"), "value": last},
            {"op": "remove", "path": format!("/metadata/finalizers/{index}")},
        ]));
        let step = "finalizer(): a finalizer removed after its cleanup";
        let code = send(&client, &item, &mut t, step, &removal).await?;
        ensure!(code == StatusCode::OK, "removing finalizer {last}: {code}");
    }
    until_not_found(&client, &item, EVENT_TIMEOUT).await?;
    t.record("after the last finalizer", "gone");

    ns.delete().await?;
    Ok(t)
}
