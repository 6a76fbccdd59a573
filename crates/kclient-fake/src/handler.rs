//! The HTTP handler: authentication, injected faults, routing to discovery or to a resource,
//! the request options the verbs share, and the `status`, `scale` and `finalize`
//! subresources. Each verb on a resource (get, list, watch, create, update, patch, delete,
//! deletecollection) is a function of [`crate::verbs`].

use std::sync::Arc;

use bytes::Bytes;
use http::{header, HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use kclient_core::{ApiError, DeleteOptions, DeletionPropagation, FieldError, Status};
use serde::Deserialize;
use serde_json::Value;

use crate::actions::Action;
use crate::catalogue::ResourceInfo;
use crate::discovery;
use crate::errors;
use crate::query::Query;
use crate::registry::{FieldValidation, Part, WriteOptions};
use crate::response::{self, Body};
use crate::router::{route, ResourcePath, Route};
use crate::server::Shared;
use crate::verbs::{self, Call};

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

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// What happens to every request before it is served: it is recorded, delayed by the
/// injected latency and sent down the reactor chain, whose answer, if any, is the response.
pub(crate) async fn intercept(shared: &Shared, req: &ApiRequest) -> Option<Response<Body>> {
    let action = Action::from_request(req, Some(&shared.registry.catalogue));
    shared.actions.record(action.clone());
    let latency = shared.faults.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    shared.faults.reactors.react(&action).await
}

/// Serves one request: records it, delays it by the injected latency, sends it down the
/// reactor chain, and serves it if no reactor answered.
pub async fn handle(shared: Arc<Shared>, req: ApiRequest) -> Response<Body> {
    if let Some(answer) = intercept(&shared, &req).await {
        return answer;
    }
    match route(&req.path) {
        Route::Version => response::json(StatusCode::OK, &discovery::version()),
        Route::Health => response::text(StatusCode::OK, "ok"),
        Route::OpenApiRoot => response::json(
            StatusCode::OK,
            &crate::openapi::root(&shared.registry.catalogue),
        ),
        Route::OpenApiGroupVersion(path) => {
            match crate::openapi::group_version(&shared.registry.catalogue, &path) {
                Some(doc) => response::json(StatusCode::OK, &doc),
                None => response::text(StatusCode::NOT_FOUND, "404 page not found\n"),
            }
        }
        Route::LegacyApis => {
            let accept = header_str(&req.headers, header::ACCEPT);
            if discovery::wants_aggregated(accept) {
                aggregated(&shared, true)
            } else {
                response::json(
                    StatusCode::OK,
                    &discovery::legacy_api_versions(&shared.address()),
                )
            }
        }
        Route::Apis => {
            let accept = header_str(&req.headers, header::ACCEPT);
            if discovery::wants_aggregated(accept) {
                aggregated(&shared, false)
            } else {
                response::json(
                    StatusCode::OK,
                    &discovery::api_group_list(&shared.registry.catalogue),
                )
            }
        }
        Route::ApiGroup(group) => match discovery::api_group(&shared.registry.catalogue, &group) {
            Some(v) => response::json(StatusCode::OK, &v),
            None => not_served(&shared, &req.headers, &group),
        },
        Route::ResourceList { group, version } => {
            match discovery::resource_list(&shared.registry.catalogue, &group, &version) {
                Some(v) => response::json(StatusCode::OK, &v),
                None => not_served(&shared, &req.headers, &group),
            }
        }
        Route::Resource(path) => {
            let result = resource(&shared, &req, path).await;
            shared.registry.settle();
            match result {
                Ok(res) => res,
                Err(e) => response::error_negotiated(&req.headers, &e),
            }
        }
        Route::NotFound => response::text(StatusCode::NOT_FOUND, "404 page not found\n"),
    }
}

/// The 404 for a path that no served resource answers: inside kube-apiserver's built-in
/// groups a `NotFound` (negotiated as errors are); elsewhere (a group only CRDs serve, or
/// nothing) the plain `404 page not found` of its mux, as after a CRD is deleted.
fn not_served(shared: &Shared, headers: &HeaderMap, group: &str) -> Response<Body> {
    let built_in = group.is_empty()
        || shared
            .registry
            .catalogue
            .all()
            .iter()
            .any(|r| !r.custom && r.api.group == group);
    if built_in {
        response::error_negotiated(headers, &errors::resource_not_found())
    } else {
        response::text(StatusCode::NOT_FOUND, "404 page not found\n")
    }
}

fn aggregated(shared: &Shared, legacy: bool) -> Response<Body> {
    let body = discovery::aggregated(&shared.registry.catalogue, legacy);
    let mut res = response::json(StatusCode::OK, &body);
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(discovery::AGGREGATED_V2),
    );
    res.headers_mut()
        .insert(header::VARY, header::HeaderValue::from_static("Accept"));
    res
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

/// A write's answer, or its error, with the write's warnings (webhooks' warnings go with
/// their refusals too).
pub(crate) fn answer_write(
    req: &ApiRequest,
    opts: &WriteOptions,
    answer: Result<Response<Body>, ApiError>,
) -> Result<Response<Body>, ApiError> {
    let res = match answer {
        Ok(res) => res,
        Err(e) => response::error_negotiated(&req.headers, &e),
    };
    Ok(with_warnings(res, opts))
}

/// Adds a write's warnings to its response (`Warning: 299 - "text"`).
pub(crate) fn with_warnings(mut res: Response<Body>, opts: &WriteOptions) -> Response<Body> {
    for text in opts.warnings.take() {
        let value = format!("299 - {}", kclient_core::go_format::quote(&text));
        if let Ok(v) = header::HeaderValue::from_str(&value) {
            res.headers_mut().append(header::WARNING, v);
        }
    }
    res
}

/// A request on a resource: found in the catalogue, then handed to its subresource or to
/// the function of its verb (`crate::verbs`).
async fn resource(
    shared: &Arc<Shared>,
    req: &ApiRequest,
    path: ResourcePath,
) -> Result<Response<Body>, ApiError> {
    let Some(info) = shared
        .registry
        .catalogue
        .get(&path.group, &path.version, &path.resource)
    else {
        return Ok(not_served(shared, &req.headers, &path.group));
    };
    if path.namespace.is_some() && !info.namespaced() {
        return Err(errors::resource_not_found());
    }
    let q = Query::parse(req.query.as_deref());
    let call = Call {
        shared,
        req,
        info: &info,
        q: &q,
        namespace: path.namespace.as_deref(),
        watch_prefix: path.watch_prefix,
    };
    if let Some(sub) = path.subresource.as_deref() {
        let name = path.name.as_deref().unwrap_or_default();
        return subresource(shared, req, &info, call.namespace_or_all(), name, sub, &q).await;
    }
    match (&req.method, path.name.as_deref()) {
        (&Method::GET, Some(name)) if path.watch_prefix || q.bool("watch")?.unwrap_or(false) => {
            verbs::watch_one(&call, name).await
        }
        (&Method::GET, Some(name)) => verbs::get(&call, name).await,
        (&Method::GET, None) => verbs::list_or_watch(&call).await,
        (&Method::POST, None) => verbs::create(&call).await,
        (&Method::PUT, Some(name)) => verbs::update(&call, name).await,
        (&Method::PATCH, Some(name)) => verbs::patch(&call, name).await,
        (&Method::DELETE, Some(name)) => verbs::delete(&call, name).await,
        (&Method::DELETE, None) => verbs::delete_collection(&call).await,
        (method, _) => {
            let verb = match *method {
                Method::POST => "create",
                Method::PUT => "update",
                Method::PATCH => "patch",
                _ => "method",
            };
            Err(ApiError::method_not_supported(&info.group_resource(), verb))
        }
    }
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

/// Serves a subresource of an object: the parts of the object written on their own
/// (`status`, the pod's `ephemeralcontainers` and `resize`), the pod and service-account
/// subresources, the connect ones, `scale` and `namespaces/finalize`.
async fn subresource(
    shared: &Arc<Shared>,
    req: &ApiRequest,
    info: &Arc<ResourceInfo>,
    namespace: &str,
    name: &str,
    sub: &str,
    q: &Query,
) -> Result<Response<Body>, ApiError> {
    if let Some(part) = object_part(info, sub) {
        let opts = for_subresource(write_options(req, q)?, info, sub);
        return part_subresource(shared, req, info, namespace, name, part, q, &opts).await;
    }
    let extra = !info.custom && info.extra_subresources.iter().any(|e| e.name == sub);
    if extra {
        match (info.api.group.as_str(), info.kind(), sub) {
            ("", "Pod", "log" | "eviction" | "binding") => {
                return crate::pods::handle(shared, req, info, namespace, name, sub, q).await;
            }
            ("", "ServiceAccount", "token") => {
                return crate::connect::token(shared, req, info, namespace, name);
            }
            ("", "Namespace", "finalize") => {}
            _ => return crate::connect::handle(shared, req, info, namespace, name, sub, q),
        }
    }
    let served = match sub {
        "scale" => info.scale.is_some(),
        "finalize" => extra,
        _ => false,
    };
    if !served {
        return Err(errors::resource_not_found());
    }
    let opts = write_options(req, q)?;
    match (sub, &req.method) {
        ("scale", _) => scale_subresource(shared, req, info, namespace, name, opts).await,
        ("finalize", &Method::PUT) => {
            let body = parse_body(req, info)?;
            let keep: Vec<Value> = body
                .pointer("/spec/finalizers")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let obj = shared.registry.finalize_namespace(info, name, keep)?;
            subresource_answer(req, info, StatusCode::OK, &obj)
        }
        (_, _) => Err(errors::method_not_allowed()),
    }
}

/// The part of the object a subresource reads and writes on its own, if it is one.
fn object_part(info: &ResourceInfo, sub: &str) -> Option<Part> {
    let builtin =
        |group: &str, kind: &str| !info.custom && info.api.group == group && info.kind() == kind;
    match sub {
        "status" if info.status_subresource => Some(Part::Status),
        "ephemeralcontainers" if builtin("", "Pod") => Some(Part::EphemeralContainers),
        "resize" if builtin("", "Pod") => Some(Part::Resize),
        _ => None,
    }
}

/// `GET`, `PUT` or `PATCH` of a part of the object ([`object_part`]).
#[allow(clippy::too_many_arguments)]
async fn part_subresource(
    shared: &Arc<Shared>,
    req: &ApiRequest,
    info: &Arc<ResourceInfo>,
    namespace: &str,
    name: &str,
    part: Part,
    q: &Query,
    opts: &WriteOptions,
) -> Result<Response<Body>, ApiError> {
    let written = match req.method {
        Method::GET => {
            let obj = shared.registry.get_converted(info, namespace, name).await?;
            return subresource_answer(req, info, StatusCode::OK, &obj);
        }
        Method::PUT => {
            let body = parse_body(req, info)?;
            shared
                .registry
                .update_with(info, namespace, name, part, opts, |_| Ok(body.clone()))
                .await
        }
        Method::PATCH => {
            crate::patch::handle(shared, req, info, namespace, name, part, q, opts).await
        }
        _ => return Err(errors::method_not_allowed()),
    };
    answer_write(
        req,
        opts,
        written.and_then(|(obj, _)| subresource_answer(req, info, StatusCode::OK, &obj)),
    )
}

/// `GET`, `PUT` or `PATCH` of the `scale` subresource.
async fn scale_subresource(
    shared: &Arc<Shared>,
    req: &ApiRequest,
    info: &Arc<ResourceInfo>,
    namespace: &str,
    name: &str,
    opts: WriteOptions,
) -> Result<Response<Body>, ApiError> {
    // Webhooks see the `Scale` a write of the subresource writes.
    let opts = for_subresource(opts, info, "scale");
    let written = match req.method {
        Method::GET => {
            let obj = shared.registry.get_converted(info, namespace, name).await?;
            let scale = crate::scale::to_scale(info, &obj);
            return subresource_answer(req, info, StatusCode::OK, &scale);
        }
        Method::PUT => {
            let body: Value = if protobuf_body(req) {
                crate::protobuf::decode_body(&req.body, info)?
            } else {
                serde_json::from_slice(&req.body)
                    .map_err(|e| ApiError::bad_request(e.to_string()))?
            };
            crate::scale::update(shared, info, namespace, name, body, &opts).await
        }
        Method::PATCH => crate::scale::patch(shared, req, info, namespace, name, &opts).await,
        _ => return Err(errors::method_not_allowed()),
    };
    answer_write(
        req,
        &opts,
        written.and_then(|obj| {
            let scale = crate::scale::to_scale(info, &obj);
            subresource_answer(req, info, StatusCode::OK, &scale)
        }),
    )
}

/// The answer of a subresource (`status`, `scale`, `finalize`): `obj` in protobuf, with the
/// codec of its own kind (a `Scale` is `autoscaling/v1`), when the request negotiates
/// protobuf for the resource's objects; JSON otherwise (the subresources convert nothing,
/// and answer JSON to an `Accept` the resource's own verbs refuse, as they always did).
fn subresource_answer(
    req: &ApiRequest,
    info: &ResourceInfo,
    code: StatusCode,
    obj: &Value,
) -> Result<Response<Body>, ApiError> {
    let protobuf = matches!(
        crate::negotiate::negotiate(req, info, crate::negotiate::Endpoint::Object),
        Ok(crate::negotiate::Negotiated {
            conversion: crate::negotiate::Conversion::None,
            wire: crate::negotiate::Wire::Protobuf(Some(_)),
            ..
        })
    );
    let str_of = |field: &str| obj.get(field).and_then(Value::as_str).unwrap_or("");
    match kclient_protobuf::registry::by_kind(str_of("apiVersion"), str_of("kind")) {
        Some(codec) if protobuf => Ok(crate::protobuf::response(
            code,
            crate::protobuf::object(codec, obj)?,
        )),
        _ => Ok(response::json(code, obj)),
    }
}
