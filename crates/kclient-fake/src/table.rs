//! Server-side printing (`meta.k8s.io/v1` `Table`) for `kubectl get`: when the `Accept`
//! header asks for `as=Table`, lists and gets answer with the default table convertor's
//! columns (`Name`, `Created At`), as kube-apiserver does for custom resources, and rows
//! carrying the object's metadata (`includeObject=Metadata`, the default), the whole object
//! (`Object`) or nothing (`None`). Watches always send plain objects (kubectl prints those
//! with its default printer).

use http::{header, Response, StatusCode};
use serde_json::{json, Value};

use crate::catalogue::ResourceInfo;
use crate::query::Query;
use crate::registry::ListPage;
use crate::request::ApiRequest;
use crate::response::{self, Body};

/// Whether the request asks for a `Table`.
pub fn wants_table(req: &ApiRequest) -> bool {
    let accept = req
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    accept.split(',').next().is_some_and(|first| {
        first.contains("as=Table") && first.contains("g=meta.k8s.io") && first.contains("v=v1")
    })
}

fn columns() -> Value {
    json!([
        {"name": "Name", "type": "string", "format": "name",
         "description": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
         "priority": 0},
        {"name": "Created At", "type": "date", "format": "",
         "description": "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
         "priority": 0}
    ])
}

fn row(obj: &Value, include: &str) -> Value {
    let meta = obj.get("metadata").cloned().unwrap_or(json!({}));
    let name = meta.get("name").cloned().unwrap_or(json!(""));
    let created = meta
        .get("creationTimestamp")
        .cloned()
        .unwrap_or(Value::Null);
    let mut r = json!({"cells": [name, created]});
    match include {
        "None" => {}
        "Object" => r["object"] = obj.clone(),
        _ => {
            r["object"] = json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": meta,
            });
        }
    }
    r
}

fn table(rows: Vec<Value>, metadata: Value) -> Response<Body> {
    let body = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns(),
        "rows": rows,
    });
    response::json(StatusCode::OK, &body)
}

fn include_object(req: &ApiRequest) -> String {
    Query::parse(req.query.as_deref())
        .get("includeObject")
        .unwrap_or("Metadata")
        .to_string()
}

/// The response for a single object: a `Table` if asked for, the object otherwise.
pub fn respond(
    req: &ApiRequest,
    _info: &ResourceInfo,
    code: StatusCode,
    obj: &Value,
) -> Response<Body> {
    if wants_table(req) && code == StatusCode::OK {
        let rv = obj
            .pointer("/metadata/resourceVersion")
            .cloned()
            .unwrap_or(json!(""));
        return table(
            vec![row(obj, &include_object(req))],
            json!({"resourceVersion": rv}),
        );
    }
    response::json(code, obj)
}

/// A list page as a `Table`.
pub fn list_table(_info: &ResourceInfo, page: &ListPage) -> Response<Body> {
    let rows = page
        .items
        .iter()
        .map(|i| row(&i.value, "Metadata"))
        .collect();
    let mut metadata = json!({"resourceVersion": page.rv.to_string()});
    if let Some(c) = &page.continue_token {
        metadata["continue"] = json!(c);
    }
    table(rows, metadata)
}
