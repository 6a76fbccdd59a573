//! What updates may not change: the immutable fields of the common built-in kinds, refused
//! with `422 Invalid` (the same message, details and causes on both servers), next to the
//! changes the same kinds allow.
//!
//! Two parts of a refusal are not compared: the diff that follows a pod's `pod updates may
//! not change fields other than ...` (the server's diffs its internal Go types; only the
//! first line of each message is recorded), and the value shown for a Job's pod template
//! (`Invalid value: <value>: field is immutable`, the server's internal Go type marshalled).

use anyhow::{ensure, Result};
use http::StatusCode;
use serde_json::{json, Value};

use super::{default_service_account, outcome, Namespace, SCENARIO_LABEL};
use crate::client::{ApiClient, Response};
use crate::target::Target;
use crate::transcript::Transcript;

const MERGE: &str = "application/merge-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";

/// Whether the values in `Invalid value: <value>: detail` are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Values {
    Compared,
    /// Left out: the server shows an internal Go type.
    Hidden,
}

/// The first line of `text`, with `Invalid value: <value>` cut to `Invalid value: …` when the
/// values are hidden, and the words of `masks` replaced (run-specific values such as
/// cluster IPs).
fn comparable(text: &str, values: Values, masks: &[(&str, &str)]) -> String {
    let mut line = text.lines().next().unwrap_or_default().to_string();
    for (word, mask) in masks {
        line = line.replace(word, mask);
    }
    const INVALID: &str = "Invalid value: ";
    if values == Values::Hidden {
        if let Some(start) = line.find(INVALID) {
            let value_start = start + INVALID.len();
            if let Some(detail) = line.rfind(": ").filter(|at| *at >= value_start) {
                line.replace_range(value_start..detail, "…");
            }
        }
    }
    line
}

/// A refusal, for the transcript: code, reason, details and causes, each message made
/// [`comparable`].
fn refusal(response: &Response, values: Values, masks: &[(&str, &str)]) -> Value {
    let body = &response.body;
    let causes: Vec<Value> = body["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            json!({
                "reason": c["reason"],
                "field": c["field"],
                "message": comparable(c["message"].as_str().unwrap_or_default(), values, masks),
            })
        })
        .collect();
    json!({
        "code": response.status.as_u16(),
        "reason": response.reason(),
        "message": comparable(body["message"].as_str().unwrap_or_default(), values, masks),
        "details": {"kind": body["details"]["kind"], "group": body["details"]["group"],
                    "name": body["details"]["name"]},
        "causes": causes,
    })
}

/// Sends a patch and records its outcome under `step`: the refusal when it is one
/// (`expected` 422), the code and reason otherwise.
async fn patch_step(
    t: &mut Transcript,
    client: &ApiClient,
    step: &str,
    (path, content_type, body): (&str, &str, Value),
    expected: StatusCode,
    values: Values,
) -> Result<Response> {
    let response = client.patch(path, content_type, &body).await?;
    record(t, step, &response, expected, values, &[])?;
    Ok(response)
}

/// Records `response` under `step`, failing unless its status is `expected`.
fn record(
    t: &mut Transcript,
    step: &str,
    response: &Response,
    expected: StatusCode,
    values: Values,
    masks: &[(&str, &str)],
) -> Result<()> {
    if response.status == StatusCode::UNPROCESSABLE_ENTITY {
        t.record(step, refusal(response, values, masks));
    } else {
        t.record(step, outcome(response));
    }
    ensure!(
        response.status == expected,
        "{step}: expected HTTP {expected}, got {}: {}",
        response.status,
        response.body
    );
    Ok(())
}

fn labelled(mut object: Value, scenario: &str) -> Value {
    object["metadata"]["labels"][SCENARIO_LABEL] = json!(scenario);
    object
}

/// A pod's spec: only images, a lower `activeDeadlineSeconds` and added tolerations may
/// change; `nodeName` (outside the binding subresource) and the containers may not.
pub async fn immutable_pods(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "immutable-pods").await?;
    default_service_account(target, &client, &ns).await?;
    let mut t = Transcript::new();
    let path = ns.core("pods");
    let item = format!("{path}/web");
    let pod = labelled(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
               "spec": {"automountServiceAccountToken": false,
                        "containers": [{"name": "main", "image": "registry.invalid/main:1"}],
                        "tolerations": [{"key": "e2e", "operator": "Exists"}]}}),
        "immutable-pods",
    );
    let created = client.post(&path, &pod).await?;
    record(
        &mut t,
        "create",
        &created,
        StatusCode::CREATED,
        Values::Compared,
        &[],
    )?;

    let steps = [
        (
            "set spec.nodeName",
            MERGE,
            json!({"spec": {"nodeName": "node-a"}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "change an image",
            MERGE,
            json!({"spec": {"containers": [{"name": "main", "image": "registry.invalid/main:2"}]}}),
            StatusCode::OK,
        ),
        (
            "set activeDeadlineSeconds",
            MERGE,
            json!({"spec": {"activeDeadlineSeconds": 600}}),
            StatusCode::OK,
        ),
        (
            "raise activeDeadlineSeconds",
            MERGE,
            json!({"spec": {"activeDeadlineSeconds": 1200}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "lower activeDeadlineSeconds",
            MERGE,
            json!({"spec": {"activeDeadlineSeconds": 300}}),
            StatusCode::OK,
        ),
        (
            "add a toleration",
            JSON_PATCH,
            json!([{"op": "add", "path": "/spec/tolerations/-",
                    "value": {"key": "extra", "operator": "Exists", "effect": "NoSchedule"}}]),
            StatusCode::OK,
        ),
        (
            "change an existing toleration",
            JSON_PATCH,
            json!([{"op": "replace", "path": "/spec/tolerations/0/key", "value": "other"}]),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "add a container",
            STRATEGIC,
            json!({"spec": {"containers": [{"name": "side", "image": "registry.invalid/side:1"}]}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "change a container's command",
            STRATEGIC,
            json!({"spec": {"containers": [{"name": "main", "command": ["sleep", "1"]}]}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
    ];
    for (step, content_type, body, expected) in steps {
        patch_step(
            &mut t,
            &client,
            step,
            (&item, content_type, body),
            expected,
            Values::Compared,
        )
        .await?;
    }

    // The binding subresource sets spec.nodeName; the pod's own updates still cannot.
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
                         "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"}});
    let bound = client.post(&format!("{item}/binding"), &binding).await?;
    record(
        &mut t,
        "bind to node-a",
        &bound,
        StatusCode::CREATED,
        Values::Compared,
        &[],
    )?;
    let stored = client.get(&item).await?.expect(StatusCode::OK)?;
    t.record(
        "nodeName after binding",
        stored.body["spec"]["nodeName"].clone(),
    );
    patch_step(
        &mut t,
        &client,
        "move to node-b",
        (&item, MERGE, json!({"spec": {"nodeName": "node-b"}})),
        StatusCode::UNPROCESSABLE_ENTITY,
        Values::Compared,
    )
    .await?;
    ns.delete().await?;
    Ok(t)
}

/// A Service's cluster IP, once set: an update that moves it is refused; one that leaves it
/// out keeps it.
pub async fn immutable_service_cluster_ip(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "immutable-service").await?;
    let mut t = Transcript::new();
    let path = ns.core("services");
    let item = format!("{path}/web");
    // Addresses of the e2e cluster's service range (10.0.0.0/24), different in every run
    // (an address is taken until its Service is deleted); masked in the transcript.
    let hash = ns
        .name
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    let octet = 100 + hash % 150;
    let (first, second) = (format!("10.0.0.{octet}"), format!("10.0.0.{}", octet + 1));
    let masks = [
        (second.as_str(), "<second IP>"),
        (first.as_str(), "<first IP>"),
    ];
    let service = labelled(
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"clusterIP": first, "ports": [{"port": 80}],
                        "selector": {"app": "web"}}}),
        "immutable-service",
    );
    let created = client.post(&path, &service).await?;
    record(
        &mut t,
        "create",
        &created,
        StatusCode::CREATED,
        Values::Compared,
        &masks,
    )?;
    let created = created.expect(StatusCode::CREATED)?;
    t.record(
        "clusterIPs follow clusterIP",
        created.body["spec"]["clusterIPs"] == json!([first]),
    );

    let mut moved = created.body.clone();
    moved["spec"]["clusterIP"] = json!(second);
    let refused = client.put(&item, &moved).await?;
    record(
        &mut t,
        "update clusterIP",
        &refused,
        StatusCode::UNPROCESSABLE_ENTITY,
        Values::Compared,
        &masks,
    )?;

    // A client that leaves the cluster IPs out keeps them.
    let mut without = created.body.clone();
    let spec = without["spec"].as_object_mut();
    if let Some(spec) = spec {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
        spec.insert("ports".into(), json!([{"port": 8080}]));
    }
    let kept = client.put(&item, &without).await?;
    record(
        &mut t,
        "update without clusterIP",
        &kept,
        StatusCode::OK,
        Values::Compared,
        &masks,
    )?;
    let kept = kept.expect(StatusCode::OK)?;
    t.record(
        "clusterIP kept",
        kept.body["spec"]["clusterIP"] == json!(first)
            && kept.body["spec"]["clusterIPs"] == json!([first]),
    );
    ns.delete().await?;
    Ok(t)
}

fn pod_template(labels: Value) -> Value {
    json!({"metadata": {"labels": labels},
           "spec": {"containers": [{"name": "main", "image": "registry.invalid/main:1"}]}})
}

/// The selector of a Deployment, ReplicaSet, DaemonSet and StatefulSet, and a StatefulSet's
/// `serviceName`: refused; the replicas and the template: taken.
pub async fn immutable_workload_selectors(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "immutable-workloads").await?;
    default_service_account(target, &client, &ns).await?;
    let mut t = Transcript::new();
    let labels = json!({"app": "web", "tier": "front"});
    let spec = json!({"selector": {"matchLabels": {"app": "web"}},
                      "template": pod_template(labels)});
    for (plural, kind) in [
        ("deployments", "Deployment"),
        ("replicasets", "ReplicaSet"),
        ("daemonsets", "DaemonSet"),
        ("statefulsets", "StatefulSet"),
    ] {
        let path = format!("/apis/apps/v1/namespaces/{}/{plural}", ns.name);
        let item = format!("{path}/web");
        let mut body = labelled(
            json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "web"},
                   "spec": spec.clone()}),
            "immutable-workloads",
        );
        if kind == "StatefulSet" {
            body["spec"]["serviceName"] = json!("web");
        }
        let created = client.post(&path, &body).await?;
        record(
            &mut t,
            &format!("create the {kind}"),
            &created,
            StatusCode::CREATED,
            Values::Compared,
            &[],
        )?;
        let mut steps = vec![
            (
                "narrow the selector",
                json!({"spec": {"selector": {"matchLabels": {"tier": "front"}}}}),
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                "change the template",
                json!({"spec": {"template": {"metadata": {"annotations": {"e2e": "yes"}}}}}),
                StatusCode::OK,
            ),
        ];
        if kind != "DaemonSet" {
            steps.push(("scale", json!({"spec": {"replicas": 0}}), StatusCode::OK));
        }
        if kind == "StatefulSet" {
            steps.push((
                "rename the service",
                json!({"spec": {"serviceName": "other"}}),
                StatusCode::UNPROCESSABLE_ENTITY,
            ));
        }
        for (step, patch, expected) in steps {
            patch_step(
                &mut t,
                &client,
                &format!("{kind}: {step}"),
                (&item, MERGE, patch),
                expected,
                Values::Compared,
            )
            .await?;
        }
    }
    ns.delete().await?;
    Ok(t)
}

/// A Job's selector, completions and pod template: refused on a Job that runs; a Job
/// suspended before it started may change its template's scheduling directives and
/// resources, not its image.
pub async fn immutable_jobs(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "immutable-jobs").await?;
    default_service_account(target, &client, &ns).await?;
    let mut t = Transcript::new();
    let path = format!("/apis/batch/v1/namespaces/{}/jobs", ns.name);
    let job = |name: &str, suspend: bool| {
        let mut template = pod_template(json!({"app": name, "tier": "batch"}));
        template["spec"]["restartPolicy"] = json!("Never");
        labelled(
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                   "spec": {"manualSelector": true, "suspend": suspend,
                            "completions": 1, "parallelism": 1,
                            "selector": {"matchLabels": {"app": name}},
                            "template": template}}),
            "immutable-jobs",
        )
    };
    for (name, suspend) in [("running", false), ("suspended", true)] {
        let created = client.post(&path, &job(name, suspend)).await?;
        record(
            &mut t,
            &format!("create {name}"),
            &created,
            StatusCode::CREATED,
            Values::Compared,
            &[],
        )?;
    }
    let image = |tag: &str| {
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "main", "image": format!("registry.invalid/main:{tag}")}]}}}})
    };
    let running = format!("{path}/running");
    let suspended = format!("{path}/suspended");
    let steps = [
        (
            "running: narrow the selector",
            running.as_str(),
            json!({"spec": {"selector": {"matchLabels": {"tier": "batch"}}}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            Values::Compared,
        ),
        (
            "running: change completions",
            running.as_str(),
            json!({"spec": {"completions": 2}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            Values::Compared,
        ),
        (
            "running: change the image",
            running.as_str(),
            image("2"),
            StatusCode::UNPROCESSABLE_ENTITY,
            Values::Hidden,
        ),
        (
            "running: raise the backoff limit",
            running.as_str(),
            json!({"spec": {"backoffLimit": 7}}),
            StatusCode::OK,
            Values::Compared,
        ),
        (
            "suspended: add a node selector and a label",
            suspended.as_str(),
            json!({"spec": {"template": {"metadata": {"labels": {"extra": "yes"}},
                                         "spec": {"nodeSelector": {"zone": "a"}}}}}),
            StatusCode::OK,
            Values::Compared,
        ),
        (
            "suspended: change the resources",
            suspended.as_str(),
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "main", "resources": {"requests": {"cpu": "100m"}}}]}}}}),
            StatusCode::OK,
            Values::Compared,
        ),
        (
            "suspended: change the image",
            suspended.as_str(),
            image("2"),
            StatusCode::UNPROCESSABLE_ENTITY,
            Values::Hidden,
        ),
    ];
    for (step, item, patch, expected, values) in steps {
        patch_step(
            &mut t,
            &client,
            step,
            (item, STRATEGIC, patch),
            expected,
            values,
        )
        .await?;
    }
    ns.delete().await?;
    Ok(t)
}

/// ConfigMaps and Secrets marked `immutable: true` keep their data and the mark (their
/// metadata may change); a Secret's `type` never changes; `stringData` writes into `data`.
pub async fn immutable_config_and_secrets(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "immutable-config").await?;
    let mut t = Transcript::new();
    let scenario = "immutable-config";
    let config_maps = ns.core("configmaps");
    let secrets = ns.core("secrets");
    let config_map = labelled(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
               "immutable": true, "data": {"mode": "fast"}, "binaryData": {"blob": "AAE="}}),
        scenario,
    );
    let created = client.post(&config_maps, &config_map).await?;
    record(
        &mut t,
        "create the ConfigMap",
        &created,
        StatusCode::CREATED,
        Values::Compared,
        &[],
    )?;
    let settings = format!("{config_maps}/settings");
    let steps = [
        (
            "ConfigMap: change data",
            settings.as_str(),
            json!({"data": {"mode": "slow"}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "ConfigMap: change binaryData and unset immutable",
            settings.as_str(),
            json!({"immutable": false, "binaryData": {"blob": "AAI="}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "ConfigMap: label it",
            settings.as_str(),
            json!({"metadata": {"labels": {"checked": "yes"}}}),
            StatusCode::OK,
        ),
    ];
    for (step, item, patch, expected) in steps {
        patch_step(
            &mut t,
            &client,
            step,
            (item, MERGE, patch),
            expected,
            Values::Compared,
        )
        .await?;
    }

    let secret = |name: &str, immutable: bool| {
        labelled(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                   "immutable": immutable, "stringData": {"password": "one"}}),
            scenario,
        )
    };
    for (name, immutable) in [("locked", true), ("open", false)] {
        let created = client.post(&secrets, &secret(name, immutable)).await?;
        record(
            &mut t,
            &format!("create the Secret {name}"),
            &created,
            StatusCode::CREATED,
            Values::Compared,
            &[],
        )?;
        let created = created.expect(StatusCode::CREATED)?;
        t.record(
            format!("Secret {name}: stored data, type and stringData"),
            json!([
                created.body["data"],
                created.body["type"],
                created.body.get("stringData")
            ]),
        );
    }
    let locked = format!("{secrets}/locked");
    let open = format!("{secrets}/open");
    let steps = [
        (
            "Secret locked: write stringData",
            locked.as_str(),
            json!({"stringData": {"password": "two"}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "Secret open: write stringData",
            open.as_str(),
            json!({"stringData": {"password": "two"}}),
            StatusCode::OK,
        ),
        (
            "Secret open: change the type",
            open.as_str(),
            json!({"type": "example.com/other"}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
    ];
    for (step, item, patch, expected) in steps {
        patch_step(
            &mut t,
            &client,
            step,
            (item, MERGE, patch),
            expected,
            Values::Compared,
        )
        .await?;
    }
    let stored = client.get(&open).await?.expect(StatusCode::OK)?;
    t.record("Secret open: stored data", stored.body["data"].clone());
    ns.delete().await?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparable_messages() {
        let pod = "Pod \"web\" is invalid: spec: Forbidden: pod updates may not change fields\n@@ -1 +1 @@\n";
        assert_eq!(
            comparable(pod, Values::Compared, &[]),
            "Pod \"web\" is invalid: spec: Forbidden: pod updates may not change fields"
        );
        let job = r#"Job.batch "running" is invalid: spec.template: Invalid value: {"a": "b: c"}: field is immutable"#;
        assert_eq!(
            comparable(job, Values::Hidden, &[]),
            r#"Job.batch "running" is invalid: spec.template: Invalid value: …: field is immutable"#
        );
        assert_eq!(comparable(job, Values::Compared, &[]), job);
        assert_eq!(
            comparable(
                r#"spec.clusterIPs[0]: Invalid value: ["10.0.0.9"]: may not change once set"#,
                Values::Compared,
                &[("10.0.0.9", "<ip>")]
            ),
            r#"spec.clusterIPs[0]: Invalid value: ["<ip>"]: may not change once set"#
        );
    }
}
