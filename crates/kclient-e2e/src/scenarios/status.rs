//! The status subresource: writes to `/status` change only the status, writes to the object
//! only the rest; `/status` serves the whole object; a resource without the subresource has no
//! `/status`.

use anyhow::{ensure, Result};
use http::StatusCode;
use serde_json::{json, Value};

use super::{
    config_map, default_service_account, outcome, resource_version, Namespace, SCENARIO_LABEL,
};
use crate::target::Target;
use crate::transcript::Transcript;

const CONDITION: &str = "e2e.kclient.dev/Checked";

fn condition_types(pod: &Value) -> Value {
    Value::Array(
        pod["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["type"].clone())
            .collect(),
    )
}

/// A Pod (nothing schedules or runs it on either server) and its status.
pub async fn status_subresource(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "status").await?;
    let mut t = Transcript::new();
    default_service_account(target, &client, &ns).await?;
    let path = ns.core("pods");
    let item = format!("{path}/p");
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {SCENARIO_LABEL: "status"}},
        "spec": {
            "automountServiceAccountToken": false,
            "containers": [{"name": "c", "image": "registry.invalid/c:1"}],
        },
    });
    let created = client.post(&path, &pod).await?;
    t.record("create", outcome(&created));
    let created = created.expect(StatusCode::CREATED)?;
    t.record("initial phase", created.body["status"]["phase"].clone());
    let first_rv = resource_version(&created.body)?;

    // A status write that also tries to change the spec and the labels.
    let mut body = created.body.clone();
    body["status"]["conditions"] = json!([{"type": CONDITION, "status": "True"}]);
    body["spec"]["activeDeadlineSeconds"] = json!(100);
    body["metadata"]["labels"]["via"] = json!("status");
    let written = client.put(&format!("{item}/status"), &body).await?;
    t.record("update status", outcome(&written));
    let written = written.expect(StatusCode::OK)?;
    let observed = json!({
        "conditions": condition_types(&written.body),
        "activeDeadlineSeconds": written.body["spec"]["activeDeadlineSeconds"],
        "label via": written.body["metadata"]["labels"]["via"],
    });
    t.record("after the status update", observed.clone());
    // Pods' status writes keep the spec but, unlike most resources', take label changes (a
    // kubelet legacy in kube-apiserver's pod status strategy): the transcript pins it.
    ensure!(
        observed["conditions"] == json!([CONDITION]) && observed["activeDeadlineSeconds"].is_null(),
        "a status update changed the spec or lost the status: {observed}"
    );

    // An update of the object that also tries to change the status.
    let mut body = written.body.clone();
    body["status"]["conditions"] = json!([]);
    body["metadata"]["labels"]["via"] = json!("main");
    let updated = client.put(&item, &body).await?;
    t.record("update object", outcome(&updated));
    let updated = updated.expect(StatusCode::OK)?;
    let observed = json!({
        "conditions": condition_types(&updated.body),
        "label via": updated.body["metadata"]["labels"]["via"],
    });
    t.record("after the object update", observed.clone());
    ensure!(
        observed == json!({"conditions": [CONDITION], "label via": "main"}),
        "an object update changed the status or lost the label: {observed}"
    );

    let patched = client
        .patch(
            &format!("{item}/status"),
            "application/merge-patch+json",
            &json!({"status": {"message": "checked"}, "metadata": {"labels": {"via": "patch"}}}),
        )
        .await?;
    t.record("patch status", outcome(&patched));
    let patched = patched.expect(StatusCode::OK)?;
    let observed = json!({
        "message": patched.body["status"]["message"],
        "label via": patched.body["metadata"]["labels"]["via"],
    });
    t.record("after the status patch", observed.clone());
    ensure!(observed["message"] == "checked");

    let got = client.get(&format!("{item}/status")).await?;
    t.record("get status", outcome(&got));
    let got = got.expect(StatusCode::OK)?;
    t.record("get status kind", got.body["kind"].clone());
    ensure!(got.body["kind"] == "Pod" && got.body["spec"]["containers"].is_array());

    let mut stale = got.body.clone();
    stale["metadata"]["resourceVersion"] = json!(first_rv);
    let stale = client.put(&format!("{item}/status"), &stale).await?;
    t.record(
        "status update with a stale resourceVersion",
        outcome(&stale),
    );
    ensure!(stale.status == StatusCode::CONFLICT && stale.reason() == Some("Conflict"));

    // ConfigMaps have no status subresource.
    let cm_path = ns.core("configmaps");
    client
        .post(&cm_path, &config_map("cm", "status", json!({})))
        .await?
        .expect(StatusCode::CREATED)?;
    let none = client.get(&format!("{cm_path}/cm/status")).await?;
    t.record("status of a ConfigMap", outcome(&none));
    ensure!(none.status == StatusCode::NOT_FOUND);

    ns.delete().await?;
    Ok(t)
}
