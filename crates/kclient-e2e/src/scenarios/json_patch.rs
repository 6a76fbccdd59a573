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

/// One JSON patch, sent as `ops` serialized, recorded under `step`; returns the code.
async fn patch(
    client: &ApiClient,
    item: &str,
    t: &mut Transcript,
    step: &str,
    ops: Value,
) -> Result<StatusCode> {
    let response = client.patch(item, JSON_PATCH, &ops).await?;
    t.record(step, answer(&response));
    Ok(response.status)
}

/// One JSON patch sent as these bytes, as they are.
async fn patch_bytes(
    client: &ApiClient,
    item: &str,
    t: &mut Transcript,
    step: &str,
    body: &str,
) -> Result<StatusCode> {
    let response = client
        .patch_bytes(item, JSON_PATCH, body.as_bytes())
        .await?;
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
    let (c, i) = (&client, item.as_str());
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

    // kube-runtime's finalizer(): the first finalizer, where there are none.
    let first_finalizer = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": [ONE]},
    ]);
    let code = patch(
        c,
        i,
        &mut t,
        "finalizer(): the first finalizer",
        first_finalizer.clone(),
    )
    .await?;
    ensure!(
        code == StatusCode::OK,
        "kube-runtime's first finalizer patch was refused ({code}): a `test` of null passes on \
         a missing path"
    );
    // Another controller's, after the list it saw.
    let code = patch(
        c,
        i,
        &mut t,
        "finalizer(): a second finalizer",
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": [ONE]},
            {"op": "add", "path": "/metadata/finalizers/-", "value": TWO},
        ]),
    )
    .await?;
    ensure!(code == StatusCode::OK, "the second finalizer patch: {code}");
    patch(
        c,
        i,
        &mut t,
        "finalizer(): the first-finalizer patch, finalizers present",
        first_finalizer,
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "finalizer(): a stale list",
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": [ONE]},
            {"op": "add", "path": "/metadata/finalizers/-", "value": THREE},
        ]),
    )
    .await?;

    // test
    patch(
        c,
        i,
        &mut t,
        "test of a missing key, no value",
        json!([
            {"op": "test", "path": "/data/missing"},
            {"op": "add", "path": "/data/c", "value": "3"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "test of null under a missing parent",
        json!([
            {"op": "test", "path": "/metadata/annotations/x", "value": null},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "test of null on a key that has a value",
        json!([
            {"op": "test", "path": "/data/a", "value": null},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "test of a key that has a value, no value",
        json!([
            {"op": "test", "path": "/data/a"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "test of a number against a string",
        json!([
            {"op": "test", "path": "/data/a", "value": 1},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "test of an object holding a string with '<'",
        json!([
            {"op": "test", "path": "/metadata/labels", "value": {SCENARIO_LABEL: "json-patch"}},
            {"op": "test", "path": "/data", "value": {"html": "a<b", "c": "3", "b": "2", "a": "1"}},
            {"op": "add", "path": "/data/objects", "value": "equal"},
        ]),
    )
    .await?;
    // kube-apiserver compares a string's JSON as its encoder writes it, `<` as `\u003c`.
    patch(
        c,
        i,
        &mut t,
        "test of a string with '<' as written",
        json!([
            {"op": "test", "path": "/data/html", "value": "a<b"},
        ]),
    )
    .await?;
    patch_bytes(c, i, &mut t, "test of a string with '<' escaped",
        r#"[{"op": "test", "path": "/data/html", "value": "a\u003cb"}, {"op": "add", "path": "/data/escaped", "value": "equal"}]"#,
    )
    .await?;

    // add, replace, remove
    patch(
        c,
        i,
        &mut t,
        "add over an existing key",
        json!([
            {"op": "add", "path": "/data/a", "value": "10"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "replace of a missing key",
        json!([
            {"op": "replace", "path": "/data/new", "value": "v"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "remove of a missing key",
        json!([
            {"op": "remove", "path": "/data/nope"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "add under a missing parent",
        json!([
            {"op": "add", "path": "/metadata/annotations/x/y", "value": "1"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "add at a path without its leading slash",
        json!([
            {"op": "add", "path": "ignored/data/k", "value": "k"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "add at the empty path",
        json!([
            {"op": "add", "path": "", "value": {}},
        ]),
    )
    .await?;

    // Indices, on the finalizers [one, two].
    patch(
        c,
        i,
        &mut t,
        "add at the index one past the end",
        json!([
            {"op": "add", "path": "/metadata/finalizers/2", "value": THREE},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "add beyond the end",
        json!([
            {"op": "add", "path": "/metadata/finalizers/5", "value": THREE},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "remove at '-'",
        json!([
            {"op": "remove", "path": "/metadata/finalizers/-"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "test at '-'",
        json!([
            {"op": "test", "path": "/metadata/finalizers/-", "value": THREE},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "remove at -1",
        json!([
            {"op": "remove", "path": "/metadata/finalizers/-1"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "remove at 01",
        json!([
            {"op": "remove", "path": "/metadata/finalizers/01"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "remove at an index too large for an integer",
        json!([
            {"op": "remove", "path": "/metadata/finalizers/99999999999999999999"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "replace at -2, beyond the start",
        json!([
            {"op": "replace", "path": "/metadata/finalizers/-2", "value": TWO},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "add at -1",
        json!([
            {"op": "add", "path": "/metadata/finalizers/-1", "value": TWO},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "move of the first element to the end",
        json!([
            {"op": "move", "from": "/metadata/finalizers/0", "path": "/metadata/finalizers/-"},
        ]),
    )
    .await?;

    // Escapes: `~1` is `/`, `~0` is `~`, decoded in one pass (`~01` is `~1`, not `/`).
    patch(
        c,
        i,
        &mut t,
        "add of a label whose key has a '/'",
        json!([
            {"op": "add", "path": "/metadata/labels/e2e.kclient.dev~1tier", "value": "web"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "test of null at '~01': a key '~1', missing",
        json!([
            {"op": "test", "path": "/metadata/labels/e2e.kclient.dev~01tier", "value": null},
            {"op": "test", "path": "/metadata/labels/e2e.kclient.dev~1tier", "value": "web"},
        ]),
    )
    .await?;
    // Sent as written: a serializer would put the keys in order.
    patch_bytes(
        c,
        i,
        &mut t,
        "test of an object, keys in another order",
        r#"[{"op": "test", "path": "/metadata/labels", "value": {"e2e.kclient.dev/tier": "web", "e2e.kclient.dev/scenario": "json-patch"}}, {"op": "add", "path": "/data/objects", "value": "equal"}]"#,
    )
    .await?;

    // move and copy
    patch(
        c,
        i,
        &mut t,
        "move into a child of itself",
        json!([
            {"op": "move", "from": "/metadata/labels", "path": "/metadata/labels/x"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "move of a missing key",
        json!([
            {"op": "move", "from": "/data/nope", "path": "/data/moved"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "copy",
        json!([
            {"op": "copy", "from": "/data/b", "path": "/data/copied"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "copy of a missing key",
        json!([
            {"op": "copy", "from": "/data/nope", "path": "/data/from-nothing"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "copy from under a missing parent",
        json!([
            {"op": "copy", "from": "/metadata/annotations/x", "path": "/data/x"},
        ]),
    )
    .await?;

    // null
    patch(
        c,
        i,
        &mut t,
        "an operation through a null",
        json!([
            {"op": "add", "path": "/data/n", "value": null},
            {"op": "test", "path": "/data/n", "value": null},
            {"op": "add", "path": "/data/n/x", "value": "1"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "add of a null",
        json!([
            {"op": "add", "path": "/metadata/annotations", "value": null},
        ]),
    )
    .await?;

    // Bodies that are not patches, and operations that are not operations.
    patch(
        c,
        i,
        &mut t,
        "a body that is an object",
        json!({"op": "add"}),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "an operation whose op is a number",
        json!([{"op": 1}]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "an operation whose path is a number",
        json!([
            {"op": "add", "path": 1, "value": "1"},
        ]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "an operation that is a string",
        json!(["add"]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "an unknown op",
        json!([{"op": "frobnicate", "path": "/data/a"}]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "an operation without op",
        json!([{"path": "/data/a"}]),
    )
    .await?;
    patch(
        c,
        i,
        &mut t,
        "an operation without path",
        json!([{"op": "add", "value": "1"}]),
    )
    .await?;
    patch(c, i, &mut t, "a null operation", json!([null])).await?;
    patch_bytes(c, i, &mut t, "a body that is not JSON", "[{\"op\": \"add\"").await?;
    patch_bytes(
        c,
        i,
        &mut t,
        "an operation with an unknown and a repeated field",
        r#"[{"op": "add", "path": "/data/w", "value": "1", "extra": true, "op": "add"}]"#,
    )
    .await?;
    patch(c, i, &mut t, "an empty patch", json!([])).await?;

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
        let Some(last) = current.body["metadata"]["finalizers"]
            .as_array()
            .and_then(|f| f.last().cloned())
        else {
            break;
        };
        let index = current.body["metadata"]["finalizers"]
            .as_array()
            .map_or(0, Vec::len)
            - 1;
        let code = patch(
            c,
            i,
            &mut t,
            "finalizer(): a finalizer removed after its cleanup",
            json!([
                {"op": "test", "path": format!("/metadata/finalizers/{index}"), "value": last},
                {"op": "remove", "path": format!("/metadata/finalizers/{index}")},
            ]),
        )
        .await?;
        ensure!(code == StatusCode::OK, "removing finalizer {last}: {code}");
    }
    until_not_found(&client, &item, EVENT_TIMEOUT).await?;
    t.record("after the last finalizer", "gone");

    ns.delete().await?;
    Ok(t)
}
