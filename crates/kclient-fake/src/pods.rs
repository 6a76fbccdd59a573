//! The pod subresources a client calls: `log` (logs scripted by the test with
//! [`FakeApiServer::set_pod_log`](crate::FakeApiServer::set_pod_log); `tailLines` and
//! `limitBytes` apply; `follow` sends what there is and ends), `eviction` (deletes the pod:
//! there are no PodDisruptionBudgets) and `binding` (sets `spec.nodeName`, once).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Response, StatusCode};
use kclient_core::{ApiError, FieldError, GroupResource, Status};
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::catalogue::ResourceInfo;
use crate::errors::status_json;
use crate::handler::{parse_body, ApiRequest};
use crate::meta::{self, meta_str};
use crate::query::Query;
use crate::registry::{Part, WriteOptions};
use crate::response::{self, Body};
use crate::server::Shared;

/// Logs scripted by tests, per (namespace, pod, container).
#[derive(Debug, Default)]
pub struct PodLogs {
    logs: Mutex<HashMap<(String, String, String), String>>,
}

impl PodLogs {
    /// Sets the log of a container.
    pub fn set(&self, namespace: &str, pod: &str, container: &str, text: &str) {
        self.logs.lock().insert(
            (namespace.into(), pod.into(), container.into()),
            text.into(),
        );
    }

    fn get(&self, namespace: &str, pod: &str, container: &str) -> String {
        self.logs
            .lock()
            .get(&(namespace.into(), pod.into(), container.into()))
            .cloned()
            .unwrap_or_default()
    }
}

fn created_status() -> Response<Body> {
    let status = Status {
        status: Status::SUCCESS.into(),
        code: 201,
        ..Status::default()
    };
    response::json(StatusCode::CREATED, &status_json(&status))
}

fn container_names(pod: &Value) -> Vec<String> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| c.get("name").and_then(Value::as_str).map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Serves `pods/{name}/{log|eviction|binding}`.
pub async fn handle(
    shared: &Arc<Shared>,
    req: &ApiRequest,
    info: &Arc<ResourceInfo>,
    namespace: &str,
    name: &str,
    sub: &str,
    q: &Query,
) -> Result<Response<Body>, ApiError> {
    let pods = info.group_resource();
    match (sub, &req.method) {
        ("log", &Method::GET) => {
            let pod = shared.registry.get(info, namespace, name)?;
            let containers = container_names(&pod);
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
        ("eviction", &Method::POST) => {
            let body = parse_eviction(req)?;
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
            shared
                .registry
                .delete(info, namespace, name, uid.as_ref(), None, false)?;
            Ok(created_status())
        }
        ("binding", &Method::POST) => {
            let body = parse_body(req, info).or_else(|_| {
                serde_json::from_slice::<Value>(&req.body)
                    .map_err(|e| ApiError::bad_request(e.to_string()))
            })?;
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
            shared.registry.update_with(
                info,
                namespace,
                name,
                Part::Main,
                &WriteOptions::default(),
                |cur| {
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
                },
            )?;
            Ok(created_status())
        }
        _ => Err(crate::errors::method_not_allowed()),
    }
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
