//! What updates may not change: the immutable fields of the common built-in kinds, refused
//! with `422 Invalid` (the same message, details and causes on both servers), next to the
//! changes the same kinds allow.
//!
//! Two parts of a refusal are not compared: the diff that follows a pod's `pod updates may
//! not change fields other than ...` (the server's diffs its internal Go types; only the
//! first line of each message is recorded), and the value shown for a Job's pod template
//! (`Invalid value: <value>: field is immutable`, the server's internal Go type marshalled).

use anyhow::{ensure, Context, Result};
use http::{Method, StatusCode};
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

/// One write of a scenario and the status it must get.
struct Step {
    /// The transcript's name for it.
    name: String,
    method: Method,
    path: String,
    /// The patch type, for a `PATCH`.
    content_type: &'static str,
    body: Value,
    expected: StatusCode,
    values: Values,
}

impl Step {
    /// A patch of `path`.
    fn patch(name: impl Into<String>, path: &str, content_type: &'static str, body: Value) -> Step {
        Step {
            name: name.into(),
            method: Method::PATCH,
            path: path.to_string(),
            content_type,
            body,
            expected: StatusCode::OK,
            values: Values::Compared,
        }
    }

    /// A create (`POST`) into `path`, answered `201`.
    fn create(name: impl Into<String>, path: &str, body: Value) -> Step {
        Step {
            method: Method::POST,
            expected: StatusCode::CREATED,
            ..Step::patch(name, path, "", body)
        }
    }

    /// A replacement (`PUT`) of `path`.
    fn put(name: impl Into<String>, path: &str, body: Value) -> Step {
        Step {
            method: Method::PUT,
            ..Step::patch(name, path, "", body)
        }
    }

    /// The same step refused with `422 Invalid`.
    fn refused(self) -> Step {
        Step {
            expected: StatusCode::UNPROCESSABLE_ENTITY,
            ..self
        }
    }

    /// The same step with the values of its refusal left out of the transcript.
    fn hiding_values(self) -> Step {
        Step {
            values: Values::Hidden,
            ..self
        }
    }
}

/// Runs `steps` in order, recording each one's outcome (its refusal, when it is one; `masks`
/// applied), failing at the first whose status is not the expected one; the last answer.
async fn run_steps(
    t: &mut Transcript,
    client: &ApiClient,
    steps: Vec<Step>,
    masks: &[(&str, &str)],
) -> Result<Option<Response>> {
    let mut last = None;
    for step in steps {
        let response = match step.method {
            Method::POST => client.post(&step.path, &step.body).await?,
            Method::PUT => client.put(&step.path, &step.body).await?,
            _ => {
                client
                    .patch(&step.path, step.content_type, &step.body)
                    .await?
            }
        };
        if response.status == StatusCode::UNPROCESSABLE_ENTITY {
            t.record(step.name.as_str(), refusal(&response, step.values, masks));
        } else {
            t.record(step.name.as_str(), outcome(&response));
        }
        ensure!(
            response.status == step.expected,
            "{}: expected HTTP {}, got {}: {}",
            step.name,
            step.expected,
            response.status,
            response.body
        );
        last = Some(response);
    }
    Ok(last)
}

/// The answer of the one step `step`.
async fn run_step(
    t: &mut Transcript,
    client: &ApiClient,
    step: Step,
    masks: &[(&str, &str)],
) -> Result<Response> {
    run_steps(t, client, vec![step], masks)
        .await?
        .context("a step was run")
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
    let merge = |name: &str, body: Value| Step::patch(name, &item, MERGE, body);
    let strategic = |name: &str, body: Value| Step::patch(name, &item, STRATEGIC, body);
    let json_patch = |name: &str, body: Value| Step::patch(name, &item, JSON_PATCH, body);
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
                         "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"}});
    let steps = vec![
        Step::create("create", &path, pod),
        merge("set spec.nodeName", json!({"spec": {"nodeName": "node-a"}})).refused(),
        merge(
            "change an image",
            json!({"spec": {"containers": [{"name": "main", "image": "registry.invalid/main:2"}]}}),
        ),
        merge(
            "set activeDeadlineSeconds",
            json!({"spec": {"activeDeadlineSeconds": 600}}),
        ),
        merge(
            "raise activeDeadlineSeconds",
            json!({"spec": {"activeDeadlineSeconds": 1200}}),
        )
        .refused(),
        merge(
            "lower activeDeadlineSeconds",
            json!({"spec": {"activeDeadlineSeconds": 300}}),
        ),
        json_patch(
            "add a toleration",
            json!([{"op": "add", "path": "/spec/tolerations/-",
                    "value": {"key": "extra", "operator": "Exists", "effect": "NoSchedule"}}]),
        ),
        json_patch(
            "change an existing toleration",
            json!([{"op": "replace", "path": "/spec/tolerations/0/key", "value": "other"}]),
        )
        .refused(),
        strategic(
            "add a container",
            json!({"spec": {"containers": [{"name": "side", "image": "registry.invalid/side:1"}]}}),
        )
        .refused(),
        strategic(
            "change a container's command",
            json!({"spec": {"containers": [{"name": "main", "command": ["sleep", "1"]}]}}),
        )
        .refused(),
        // The binding subresource sets spec.nodeName; the pod's own updates still cannot.
        Step::create("bind to node-a", &format!("{item}/binding"), binding),
    ];
    run_steps(&mut t, &client, steps, &[]).await?;
    let stored = client.get(&item).await?.expect(StatusCode::OK)?;
    t.record(
        "nodeName after binding",
        stored.body["spec"]["nodeName"].clone(),
    );
    let moved = merge("move to node-b", json!({"spec": {"nodeName": "node-b"}})).refused();
    run_step(&mut t, &client, moved, &[]).await?;
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
    let created = run_step(
        &mut t,
        &client,
        Step::create("create", &path, service),
        &masks,
    )
    .await?;
    t.record(
        "clusterIPs follow clusterIP",
        created.body["spec"]["clusterIPs"] == json!([first]),
    );
    let mut moved = created.body.clone();
    moved["spec"]["clusterIP"] = json!(second);
    // A client that leaves the cluster IPs out keeps them.
    let mut without = created.body.clone();
    if let Some(spec) = without["spec"].as_object_mut() {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
        spec.insert("ports".into(), json!([{"port": 8080}]));
    }
    let steps = vec![
        Step::put("update clusterIP", &item, moved).refused(),
        Step::put("update without clusterIP", &item, without),
    ];
    let kept = run_steps(&mut t, &client, steps, &masks)
        .await?
        .context("the steps ran")?;
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
        let merge =
            |step: &str, body: Value| Step::patch(format!("{kind}: {step}"), &item, MERGE, body);
        let mut steps = vec![
            Step::create(format!("create the {kind}"), &path, body),
            merge(
                "narrow the selector",
                json!({"spec": {"selector": {"matchLabels": {"tier": "front"}}}}),
            )
            .refused(),
            merge(
                "change the template",
                json!({"spec": {"template": {"metadata": {"annotations": {"e2e": "yes"}}}}}),
            ),
        ];
        if kind != "DaemonSet" {
            steps.push(merge("scale", json!({"spec": {"replicas": 0}})));
        }
        if kind == "StatefulSet" {
            steps.push(
                merge(
                    "rename the service",
                    json!({"spec": {"serviceName": "other"}}),
                )
                .refused(),
            );
        }
        run_steps(&mut t, &client, steps, &[]).await?;
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
    let image = |tag: &str| {
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "main", "image": format!("registry.invalid/main:{tag}")}]}}}})
    };
    let running = format!("{path}/running");
    let suspended = format!("{path}/suspended");
    let on_running = |step: &str, body: Value| {
        Step::patch(format!("running: {step}"), &running, STRATEGIC, body)
    };
    let on_suspended = |step: &str, body: Value| {
        Step::patch(format!("suspended: {step}"), &suspended, STRATEGIC, body)
    };
    let steps = vec![
        Step::create("create running", &path, job("running", false)),
        Step::create("create suspended", &path, job("suspended", true)),
        on_running(
            "narrow the selector",
            json!({"spec": {"selector": {"matchLabels": {"tier": "batch"}}}}),
        )
        .refused(),
        on_running("change completions", json!({"spec": {"completions": 2}})).refused(),
        on_running("change the image", image("2"))
            .refused()
            .hiding_values(),
        on_running(
            "raise the backoff limit",
            json!({"spec": {"backoffLimit": 7}}),
        ),
        on_suspended(
            "add a node selector and a label",
            json!({"spec": {"template": {"metadata": {"labels": {"extra": "yes"}},
                                         "spec": {"nodeSelector": {"zone": "a"}}}}}),
        ),
        on_suspended(
            "change the resources",
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "main", "resources": {"requests": {"cpu": "100m"}}}]}}}}),
        ),
        on_suspended("change the image", image("2"))
            .refused()
            .hiding_values(),
    ];
    run_steps(&mut t, &client, steps, &[]).await?;
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
    let settings = format!("{config_maps}/settings");
    let on_settings =
        |step: &str, body: Value| Step::patch(format!("ConfigMap: {step}"), &settings, MERGE, body);
    let steps = vec![
        Step::create("create the ConfigMap", &config_maps, config_map),
        on_settings("change data", json!({"data": {"mode": "slow"}})).refused(),
        on_settings(
            "change binaryData and unset immutable",
            json!({"immutable": false, "binaryData": {"blob": "AAI="}}),
        )
        .refused(),
        on_settings(
            "label it",
            json!({"metadata": {"labels": {"checked": "yes"}}}),
        ),
    ];
    run_steps(&mut t, &client, steps, &[]).await?;

    let secret = |name: &str, immutable: bool| {
        labelled(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                   "immutable": immutable, "stringData": {"password": "one"}}),
            scenario,
        )
    };
    for (name, immutable) in [("locked", true), ("open", false)] {
        let create = Step::create(
            format!("create the Secret {name}"),
            &secrets,
            secret(name, immutable),
        );
        let created = run_step(&mut t, &client, create, &[]).await?;
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
    let password = json!({"stringData": {"password": "two"}});
    let steps = vec![
        Step::patch(
            "Secret locked: write stringData",
            &locked,
            MERGE,
            password.clone(),
        )
        .refused(),
        Step::patch("Secret open: write stringData", &open, MERGE, password),
        Step::patch(
            "Secret open: change the type",
            &open,
            MERGE,
            json!({"type": "example.com/other"}),
        )
        .refused(),
    ];
    run_steps(&mut t, &client, steps, &[]).await?;
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
