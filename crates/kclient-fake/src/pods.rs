//! The pod subresources a client calls: `log` (logs scripted by the test with
//! [`FakeApiServer::set_pod_log`](crate::FakeApiServer::set_pod_log); `tailLines` and
//! `limitBytes` apply; `follow` sends what there is and ends), `eviction` (deletes the pod
//! when its PodDisruptionBudget allows, see [`check_disruption_budget`]) and `binding` (sets
//! `spec.nodeName`, once).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Response, StatusCode};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kclient_core::labels::Selector;
use kclient_core::{ApiError, FieldError, GroupResource, Status, StatusCause};
use serde_json::{json, Value};

use crate::call::Call;
use crate::catalogue::ResourceInfo;
use crate::errors::status_json;
use crate::meta::{self, meta_str};
use crate::registry::{Part, WriteOptions};
use crate::request::{parse_body, ApiRequest};
use crate::response::{self, Body};
use crate::state::Shared;

fn created_status() -> Response<Body> {
    let status = Status {
        status: Status::SUCCESS.into(),
        code: 201,
        ..Status::default()
    };
    response::json(StatusCode::CREATED, &status_json(&status))
}

/// Serves `pods/{name}/{log|eviction|binding}`.
pub async fn handle(call: &Call<'_>, name: &str, sub: &str) -> Result<Response<Body>, ApiError> {
    match (sub, &call.req.method) {
        ("log", &Method::GET) => pod_log(call, name),
        ("eviction", &Method::POST) => evict(call, name).await,
        ("binding", &Method::POST) => bind(call, name).await,
        _ => Err(crate::errors::method_not_allowed()),
    }
}

/// `GET pods/{name}/log`: the scripted log of the container the query names (or of the only
/// one), cut by `tailLines` and `limitBytes`.
fn pod_log(call: &Call<'_>, name: &str) -> Result<Response<Body>, ApiError> {
    let (shared, info, q) = (call.shared, call.info, call.q);
    let namespace = call.namespace_or_all();
    let pod = shared.registry.get(info, namespace, name)?;
    let containers = meta::container_names(&pod, "containers");
    let container = match q.get("container").filter(|c| !c.is_empty()) {
        Some(c) if containers.iter().any(|n| n == c) => c.to_string(),
        Some(c) => {
            return Err(ApiError::bad_request(format!(
                "container {c} is not valid for pod {name}"
            )))
        }
        None if containers.len() == 1 => containers[0].clone(),
        None => {
            return Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                containers.join(" ")
            )))
        }
    };
    let mut text = shared.pod_logs.get(namespace, name, &container);
    if let Some(n) = q.int("tailLines")?.filter(|n| *n >= 0) {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let start = lines.len().saturating_sub(n as usize);
        text = lines[start..].concat();
    }
    if let Some(limit) = q.int("limitBytes")?.filter(|n| *n > 0) {
        let mut end = (limit as usize).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    let mut res = Response::new(response::full(Bytes::from(text)));
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(res)
}

/// `POST pods/{name}/eviction`: the pod deleted if its disruption budget allows.
async fn evict(call: &Call<'_>, name: &str) -> Result<Response<Body>, ApiError> {
    let (shared, info) = (call.shared, call.info);
    let namespace = call.namespace_or_all();
    let body = parse_eviction(call.req)?;
    let body = admit_created(call, name, "eviction", body).await?;
    let body_name = meta_str(&body, "name");
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let uid = body
        .pointer("/deleteOptions/preconditions/uid")
        .and_then(Value::as_str)
        .map(|u| kclient_core::Preconditions {
            uid: Some(u.to_string()),
            resource_version: None,
        });
    let options = kclient_core::DeleteOptions {
        preconditions: uid,
        ..kclient_core::DeleteOptions::default()
    };
    let pod = shared.registry.get(info, namespace, name)?;
    if let Some(refusal) = check_disruption_budget(shared, namespace, name, &pod).await? {
        return Ok(refusal);
    }
    shared
        .registry
        .delete(info, namespace, name, &options, None)
        .await?;
    Ok(created_status())
}

/// `POST pods/{name}/binding`: `spec.nodeName` set, once.
async fn bind(call: &Call<'_>, name: &str) -> Result<Response<Body>, ApiError> {
    let (shared, req, info) = (call.shared, call.req, call.info);
    let namespace = call.namespace_or_all();
    let pods = info.group_resource();
    let body = parse_body(req, info).or_else(|_| {
        serde_json::from_slice::<Value>(&req.body).map_err(|e| ApiError::bad_request(e.to_string()))
    })?;
    let body = admit_created(call, name, "binding", body).await?;
    let node = body
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if node.is_empty() {
        return Err(ApiError::invalid(
            &GroupResource::new("", "Binding"),
            name,
            vec![FieldError::required("target.name", "")],
        ));
    }
    let binding = GroupResource::new("", "pods/binding");
    // The binding storage writes the pod directly, past the pod update validation that
    // forbids changing spec.nodeName.
    let direct = WriteOptions {
        bypass_update_validation: true,
        ..WriteOptions::default()
    };
    shared
        .registry
        .update_with(info, namespace, name, Part::Main, &direct, |cur| {
            let Some(cur) = cur else {
                return Err(ApiError::not_found(&pods, name));
            };
            let assigned = cur
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !assigned.is_empty() {
                return Err(ApiError::conflict(
                    &binding,
                    name,
                    &format!("pod {name} is already assigned to node {assigned:?}"),
                ));
            }
            let mut new = cur.clone();
            meta::set_path(&mut new, "spec.nodeName", json!(node));
            Ok(new)
        })
        .await?;
    Ok(created_status())
}

/// The PodDisruptionBudgets of the pod's namespace whose selector selects it (policy/v1: an
/// empty selector selects every pod, a missing one none).
fn budgets_of(
    shared: &Arc<Shared>,
    info: &ResourceInfo,
    namespace: &str,
    pod: &Value,
) -> Vec<Value> {
    let labels: BTreeMap<String, String> = pod
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let state = shared.registry.store.read();
    state
        .range(&info.group_resource(), Some(namespace), None)
        .map(|(_, o)| o.value.clone())
        .filter(|pdb| {
            let Some(selector) = pdb.pointer("/spec/selector") else {
                return false;
            };
            serde_json::from_value::<LabelSelector>(selector.clone())
                .ok()
                .and_then(|s| Selector::from_label_selector(Some(&s)).ok())
                .is_some_and(|s| s.matches(&labels))
        })
        .collect()
}

fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

fn budget_refusal(cause: String, retry_after_seconds: i32) -> ApiError {
    let mut err = ApiError::too_many_requests(
        "Cannot evict pod as it would violate the pod's disruption budget.",
        retry_after_seconds,
    );
    if let Some(details) = err.status.details.as_mut() {
        details.causes.push(StatusCause {
            cause_type: "DisruptionBudget".into(),
            message: cause,
            field: String::new(),
        });
    }
    err
}

/// kube-apiserver's eviction rules: a pod that is pending, finished or already terminating
/// goes regardless; otherwise its one PodDisruptionBudget (more is a `500`) must have been
/// observed by the disruption controller (`status.observedGeneration`) and allow a disruption,
/// which the eviction uses up (`disruptionsAllowed` down by one, the pod recorded in
/// `disruptedPods`). There is no disruption controller: a test writes the budget's status.
/// Returns the refusal to answer with, if any.
async fn check_disruption_budget(
    shared: &Arc<Shared>,
    namespace: &str,
    name: &str,
    pod: &Value,
) -> Result<Option<Response<Body>>, ApiError> {
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    if matches!(phase, "Pending" | "Succeeded" | "Failed") || meta::is_terminating(pod) {
        return Ok(None);
    }
    let Some(pdbs) = shared
        .registry
        .catalogue
        .get("policy", "v1", "poddisruptionbudgets")
    else {
        return Ok(None);
    };
    let budgets = budgets_of(shared, &pdbs, namespace, pod);
    let pdb = match budgets.as_slice() {
        [] => return Ok(None),
        [one] => one,
        _ => return Ok(Some(more_than_one_budget())),
    };
    if !pod_ready(pod) && unhealthy_pod_may_go(pdb) {
        return Ok(None);
    }
    let allowed = disruptions_allowed(pdb)?;
    use_up_disruption(
        shared,
        &pdbs,
        namespace,
        meta_str(pdb, "name"),
        name,
        allowed,
    )
    .await?;
    Ok(None)
}

/// The `500` of a pod under more than one budget.
fn more_than_one_budget() -> Response<Body> {
    let status = Status {
        status: Status::FAILURE.into(),
        code: 500,
        message: "This pod has more than one PodDisruptionBudget, which the eviction \
                  subresource does not support."
            .into(),
        ..Status::default()
    };
    response::json(StatusCode::INTERNAL_SERVER_ERROR, &status_json(&status))
}

/// A budget's integer at `pointer` (0 when absent).
fn budget_int(pdb: &Value, pointer: &str) -> i64 {
    pdb.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// Whether a pod that is not ready may go regardless of the disruptions allowed: the budget
/// says `AlwaysAllow`, or it has its desired healthy pods.
fn unhealthy_pod_may_go(pdb: &Value) -> bool {
    let always = pdb.pointer("/spec/unhealthyPodEvictionPolicy") == Some(&json!("AlwaysAllow"));
    let desired = budget_int(pdb, "/status/desiredHealthy");
    always || (desired > 0 && budget_int(pdb, "/status/currentHealthy") >= desired)
}

/// The disruptions the budget allows (at least one), or why the eviction is refused.
fn disruptions_allowed(pdb: &Value) -> Result<i64, ApiError> {
    let pdb_name = meta_str(pdb, "name");
    if budget_int(pdb, "/status/observedGeneration") < budget_int(pdb, "/metadata/generation") {
        return Err(budget_refusal(
            format!("The disruption budget {pdb_name} is still being processed by the server."),
            10,
        ));
    }
    let allowed = budget_int(pdb, "/status/disruptionsAllowed");
    let forbidden = |why: &str, cause: &str| {
        let mut err = ApiError::forbidden(
            &GroupResource::new("policy", "poddisruptionbudget"),
            pdb_name,
            why,
        );
        if let Some(details) = err.status.details.as_mut() {
            details.causes.push(StatusCause {
                cause_type: "DisruptionBudget".into(),
                message: format!(
                    "The disruption budget {pdb_name} does not allow evicting pods currently: {cause}"
                ),
                field: String::new(),
            });
        }
        err
    };
    if allowed < 0 {
        return Err(forbidden(
            "pdb disruptions allowed is negative",
            "pdb disruptions allowed is negative",
        ));
    }
    let disrupted = pdb
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, |m| m.len());
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(forbidden(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            "too many pending evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(budget_refusal(no_disruption_cause(pdb), 0));
    }
    Ok(allowed)
}

/// Why a budget allowing no disruption refuses, in the server's words (from its
/// `DisruptionAllowed` condition, or its healthy counts).
fn no_disruption_cause(pdb: &Value) -> String {
    let pdb_name = meta_str(pdb, "name");
    let condition = pdb
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "DisruptionAllowed"))
        .filter(|c| c["status"] == "False" && c["message"].as_str().is_some_and(|m| !m.is_empty()));
    let current = budget_int(pdb, "/status/currentHealthy");
    let desired = budget_int(pdb, "/status/desiredHealthy");
    let text = |c: &Value, field: &str| c[field].as_str().unwrap_or("").to_string();
    match condition {
        Some(c) if c["reason"] == "SyncFailed" => format!(
            "The disruption budget {pdb_name} does not allow evicting pods currently because it failed sync: {}",
            text(c, "message")
        ),
        _ if current <= desired => format!(
            "The disruption budget {pdb_name} needs {desired} healthy pods and has {current} currently"
        ),
        Some(c) => format!(
            "The disruption budget {pdb_name} does not allow evicting pods currently ({}): {}",
            text(c, "reason"),
            text(c, "message")
        ),
        None => format!("The disruption budget {pdb_name} does not allow evicting pods currently"),
    }
}

/// Records the eviction of pod `name` in budget `pdb_name`'s status: one disruption fewer
/// allowed (of `allowed`), the pod in `disruptedPods`.
async fn use_up_disruption(
    shared: &Arc<Shared>,
    pdbs: &Arc<ResourceInfo>,
    namespace: &str,
    pdb_name: &str,
    name: &str,
    allowed: i64,
) -> Result<(), ApiError> {
    shared
        .registry
        .update_with(
            pdbs,
            namespace,
            pdb_name,
            Part::Status,
            &WriteOptions::default(),
            |cur| {
                let mut new = cur
                    .cloned()
                    .ok_or_else(|| ApiError::not_found(&pdbs.group_resource(), pdb_name))?;
                let status = new
                    .as_object_mut()
                    .map(|o| o.entry("status").or_insert_with(|| json!({})));
                if let Some(Value::Object(status)) = status {
                    status.insert("disruptionsAllowed".into(), json!(allowed - 1));
                    if allowed == 1 {
                        insufficient_pods(status);
                    }
                    let disrupted = status.entry("disruptedPods").or_insert_with(|| json!({}));
                    if let Some(map) = disrupted.as_object_mut() {
                        map.insert(name.to_string(), json!(meta::now_rfc3339()));
                    }
                }
                Ok(new)
            },
        )
        .await?;
    Ok(())
}

/// The most evictions a budget may have pending (kube-apiserver's `MaxDisruptedPodSize`).
const MAX_DISRUPTED_PODS: usize = 2000;

/// Sets a budget's `DisruptionAllowed` condition to `False`/`InsufficientPods`, as
/// apimachinery's `SetStatusCondition` does (the transition time moves only with the status).
fn insufficient_pods(status: &mut serde_json::Map<String, Value>) {
    let observed = status
        .get("observedGeneration")
        .cloned()
        .unwrap_or(json!(0));
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    let Some(conditions) = conditions.as_array_mut() else {
        return;
    };
    let now = meta::now_rfc3339();
    match conditions
        .iter_mut()
        .find(|c| c["type"] == "DisruptionAllowed")
    {
        Some(c) => {
            if c["status"] != "False" {
                c["status"] = json!("False");
                c["lastTransitionTime"] = json!(now);
            }
            c["reason"] = json!("InsufficientPods");
            c["message"] = json!("");
            c["observedGeneration"] = observed;
        }
        None => conditions.push(json!({
            "type": "DisruptionAllowed", "status": "False", "observedGeneration": observed,
            "lastTransitionTime": now, "reason": "InsufficientPods", "message": "",
        })),
    }
}

/// The object the subresource `sub` of pod `name` creates (an `Eviction`, a `Binding`), as
/// the admission webhooks leave it.
async fn admit_created(
    call: &Call<'_>,
    name: &str,
    sub: &str,
    body: Value,
) -> Result<Value, ApiError> {
    let opts = crate::request::write_options(call.req, call.q)?;
    let opts = crate::request::for_subresource(opts, call.info, sub);
    let Some(admission) = &opts.admission else {
        return Ok(body);
    };
    // A create on the subresource of the pod.
    let subject = crate::admission::Subject {
        operation: kclient_core::admission::Operation::Create,
        info: call.info,
        namespace: call.namespace_or_all(),
        name,
    };
    admission
        .admit_created(&call.shared.registry, subject, body)
        .await
}

fn parse_eviction(req: &ApiRequest) -> Result<Value, ApiError> {
    let v: Value = serde_json::from_slice(&req.body).map_err(|e| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type Eviction): {e}"
        ))
    })?;
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the object provided is unrecognized (must be of type Eviction)",
        ));
    }
    Ok(v)
}
