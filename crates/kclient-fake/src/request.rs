//! The ground floor of the handlers: a request as they see it ([`ApiRequest`]), what it
//! asks for (its body, its write and delete options, its user and admission, the container
//! of an exec). It imports none of the handler modules (`handler`, `verbs`, `pods`,
//! `connect`, `patch`, `scale`, ...), which all import it.

use std::sync::Arc;

use bytes::Bytes;
use http::{header, HeaderMap, Method, Request};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use kclient_core::{
    ApiError, DeleteOptions, DeletionPropagation, FieldError, FieldValidation, Status,
};
use serde::Deserialize;
use serde_json::Value;

use crate::catalogue::ResourceInfo;
use crate::query::Query;
use crate::registry::WriteOptions;

/// The largest request body accepted (kube-apiserver's default, 3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// A request as the handler sees it: method, path, query, headers and the whole body.
#[derive(Debug, Clone)]
pub struct ApiRequest {
    /// The method.
    pub method: Method,
    /// The path.
    pub path: String,
    /// The query string.
    pub query: Option<String>,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
    /// Who sent it (`authentication.k8s.io/v1` `UserInfo`), when the connection says so (a
    /// client certificate); see [`user_info`].
    pub user: Option<Arc<Value>>,
}

/// Reads a hyper request into an [`ApiRequest`], refusing bodies over [`MAX_BODY`].
pub async fn read_request(req: Request<Incoming>) -> Result<ApiRequest, ApiError> {
    let (parts, body) = req.into_parts();
    let user = parts.extensions.get::<Arc<Value>>().cloned();
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    let body = match limited.collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                let mut err: ApiError = Status::failure(
                    kclient_core::StatusReason::RequestEntityTooLarge,
                    413,
                    format!("Request entity too large: limit is {MAX_BODY}"),
                )
                .into();
                err.status.details = None;
                return Err(err);
            }
            return Err(ApiError::bad_request(format!(
                "unable to read the request body: {e}"
            )));
        }
    };
    Ok(ApiRequest {
        method: parts.method,
        path: parts.uri.path().to_string(),
        query: parts.uri.query().map(str::to_string),
        headers: parts.headers,
        body,
        user,
    })
}

pub(crate) fn header_str(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// Whether a request's body is Kubernetes protobuf (by its Content-Type).
pub(crate) fn protobuf_body(req: &ApiRequest) -> bool {
    let content_type = header_str(&req.headers, header::CONTENT_TYPE);
    content_type.split(';').next().unwrap_or("").trim() == crate::protobuf::PROTOBUF
}

/// Parses a request body as JSON (or YAML, or Kubernetes protobuf, when the Content-Type
/// says so: a protobuf body is read into JSON, see [`crate::protobuf::decode_body`]).
pub fn parse_body(req: &ApiRequest, info: &ResourceInfo) -> Result<Value, ApiError> {
    let content_type = header_str(&req.headers, header::CONTENT_TYPE);
    let media = content_type.split(';').next().unwrap_or("").trim();
    if media == crate::protobuf::PROTOBUF {
        return crate::protobuf::decode_body(&req.body, info);
    }
    if media.contains("protobuf") || media.contains("cbor") {
        return Err(Status::failure(
            kclient_core::StatusReason::UnsupportedMediaType,
            415,
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        )
        .into());
    }
    let parsed: Result<Value, String> =
        if media == "application/yaml" || media == "application/apply-patch+yaml" {
            crate::manifests::parse_yaml_body(&req.body)
        } else {
            serde_json::from_slice::<Value>(&req.body).map_err(|e| e.to_string())
        };
    match parsed {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: json: cannot unmarshal non-object into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }} ({})",
            info.kind(),
            summarize(&req.body)
        ))),
        Err(e) => Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: {e} ({})",
            info.kind(),
            summarize(&req.body)
        ))),
    }
}

fn summarize(body: &[u8]) -> String {
    let end = body.len().min(30);
    let mut s: String = body[..end].iter().map(|b| format!("{b:02x}")).collect();
    if body.len() > end {
        s.push_str(" ...");
    }
    s
}

fn user_agent_manager(headers: &HeaderMap) -> String {
    let ua = header_str(headers, header::USER_AGENT);
    let prefix = ua.split('/').next().unwrap_or("").trim();
    prefix.chars().take(128).collect()
}

/// The options kind of a write verb, as the server names it in option errors.
fn options_kind(method: &Method) -> &'static str {
    match *method {
        Method::PUT => "UpdateOptions",
        Method::PATCH => "PatchOptions",
        _ => "CreateOptions",
    }
}

pub(crate) fn write_options(req: &ApiRequest, q: &Query) -> Result<WriteOptions, ApiError> {
    let (headers, method) = (&req.headers, &req.method);
    let field_validation = match q.get("fieldValidation") {
        None | Some("") | Some("Warn") => FieldValidation::Warn,
        Some("Ignore") => FieldValidation::Ignore,
        Some("Strict") => FieldValidation::Strict,
        Some(other) => {
            return Err(ApiError::invalid(
                &kclient_core::GroupResource::new("meta.k8s.io", options_kind(method)),
                "",
                vec![FieldError::not_supported(
                    "fieldValidation",
                    other,
                    &["", "Ignore", "Strict", "Warn"],
                )],
            ))
        }
    };
    let dry_run = match q.get("dryRun") {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::invalid(
                &kclient_core::GroupResource::new("meta.k8s.io", "CreateOptions"),
                "",
                vec![FieldError::not_supported("dryRun", other, &["All"])],
            ))
        }
    };
    let field_manager = match q.get("fieldManager") {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => user_agent_manager(headers),
    };
    // The options as admission webhooks see them: what the query gave.
    let mut options = serde_json::Map::new();
    if dry_run {
        options.insert("dryRun".into(), serde_json::json!(["All"]));
    }
    for key in ["fieldManager", "fieldValidation"] {
        if let Some(v) = q.get(key).filter(|v| !v.is_empty()) {
            options.insert(key.into(), Value::String(v.to_string()));
        }
    }
    let warnings = crate::registry::Warnings::default();
    Ok(WriteOptions {
        dry_run,
        field_manager,
        field_validation,
        admission: Some(admission(req, Value::Object(options), dry_run, &warnings)),
        warnings,
        ..WriteOptions::default()
    })
}

/// Who a request acts as, for admission webhooks: the user and groups of its client
/// certificate (and `system:authenticated`), as kube-apiserver's x509 authenticator says;
/// otherwise (no authentication, a bearer token) the fake's one user, a member of
/// `system:masters` (the identity of the client certificate its kubeconfigs carry).
pub(crate) fn user_info(certificate: Option<(String, Vec<String>)>) -> Value {
    let (username, mut groups) = certificate.unwrap_or_else(|| {
        let masters = vec!["system:masters".to_string()];
        ("kclient-fake-admin".to_string(), masters)
    });
    groups.push("system:authenticated".to_string());
    serde_json::json!({"username": username, "groups": groups})
}

/// The admission of a write of the API on the resource itself, with `options` (without
/// their `kind`).
pub(crate) fn admission(
    req: &ApiRequest,
    options: Value,
    dry_run: bool,
    warnings: &crate::registry::Warnings,
) -> Arc<crate::admission::Request> {
    let user = match &req.user {
        Some(user) => (**user).clone(),
        None => user_info(None),
    };
    Arc::new(crate::admission::Request {
        user,
        options,
        dry_run,
        subresource: String::new(),
        scale: false,
        kind: None,
        collection: false,
        warnings: warnings.clone(),
    })
}

/// `opts` for a write of `info`'s subresource: webhooks see the kind it writes (`scale`:
/// `Scale` objects).
pub(crate) fn for_subresource(
    mut opts: WriteOptions,
    info: &ResourceInfo,
    subresource: &str,
) -> WriteOptions {
    let scale = subresource == "scale";
    let kind = if scale {
        Some(kclient_core::GroupVersionKind::new(
            "autoscaling",
            "v1",
            "Scale",
        ))
    } else {
        info.extra_subresources
            .iter()
            .find(|e| e.name == subresource)
            .map(|e| kclient_core::GroupVersionKind::new(&e.group, &e.version, &e.kind))
    };
    if let Some(admission) = opts.admission.take() {
        opts.admission = Some(Arc::new(crate::admission::Request {
            subresource: subresource.to_string(),
            scale,
            kind,
            ..(*admission).clone()
        }));
    }
    opts
}

/// The delete options of a request (body and query), and the deprecated `orphanDependents`
/// when given (it also sets the propagation policy when there is none).
pub(crate) fn delete_options(
    req: &ApiRequest,
    q: &Query,
) -> Result<(DeleteOptions, Option<bool>), ApiError> {
    let blank = req.body.iter().all(u8::is_ascii_whitespace);
    // client-go sends its delete options in protobuf (as its other bodies).
    let protobuf = if blank || !protobuf_body(req) {
        None
    } else {
        Some(crate::protobuf::decode_delete_options(&req.body)?)
    };
    let mut opts = match &protobuf {
        _ if blank => DeleteOptions::default(),
        Some(body) => {
            DeleteOptions::deserialize(body).map_err(|e| ApiError::bad_request(e.to_string()))?
        }
        None => serde_json::from_slice::<DeleteOptions>(&req.body)
            .map_err(|e| ApiError::bad_request(e.to_string()))?,
    };
    let in_body = match &protobuf {
        _ if blank => None,
        Some(body) => body.get("orphanDependents").and_then(Value::as_bool),
        None => serde_json::from_slice::<Value>(&req.body)
            .ok()
            .and_then(|b| b.get("orphanDependents").and_then(Value::as_bool)),
    };
    if let Some(p) = q.get("propagationPolicy").filter(|p| !p.is_empty()) {
        opts.propagation_policy = Some(match p {
            "Orphan" => DeletionPropagation::Orphan,
            "Background" => DeletionPropagation::Background,
            "Foreground" => DeletionPropagation::Foreground,
            other => {
                return Err(ApiError::invalid(
                    &kclient_core::GroupResource::new("meta.k8s.io", "DeleteOptions"),
                    "",
                    vec![FieldError::not_supported(
                        "propagationPolicy",
                        other,
                        &["Foreground", "Background", "Orphan", "nil"],
                    )],
                ))
            }
        });
    }
    if let Some(g) = q.int("gracePeriodSeconds")? {
        opts.grace_period_seconds = Some(g);
    }
    if q.get("dryRun") == Some("All") {
        opts.dry_run = true;
    }
    let orphan_dependents = q.bool("orphanDependents")?.or(in_body);
    if let Some(orphan) = orphan_dependents {
        if opts.propagation_policy.is_none() {
            opts.propagation_policy = Some(if orphan {
                DeletionPropagation::Orphan
            } else {
                DeletionPropagation::Background
            });
        }
    }
    Ok((opts, orphan_dependents))
}

/// kube-apiserver's choice of container for exec and attach: the named one must exist, and
/// a pod with several needs one named. The container chosen.
pub(crate) fn validate_container(
    pod: &Value,
    name: &str,
    container: &str,
) -> Result<String, ApiError> {
    let names = |list: &str| crate::meta::container_names(pod, list);
    let containers = names("containers");
    if container.is_empty() {
        return match containers.as_slice() {
            [only] => Ok(only.clone()),
            [] => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            _ => {
                let all: Vec<String> = ["initContainers", "containers", "ephemeralContainers"]
                    .iter()
                    .flat_map(|l| names(l))
                    .collect();
                Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    all.join(" ")
                )))
            }
        };
    }
    let known = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .any(|l| names(l).iter().any(|n| n == container));
    if !known {
        return Err(ApiError::bad_request(format!(
            "container {container} is not valid for pod {name}"
        )));
    }
    Ok(container.to_owned())
}
