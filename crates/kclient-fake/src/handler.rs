//! The HTTP handler: authentication, injected faults, routing, and the verbs (get, list,
//! watch, create, update, patch, delete, deletecollection) on resources and their `status`,
//! `scale` and `finalize` subresources.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use kclient_core::{
    ApiError, DeleteOptions, DeletionPropagation, FieldError, Status, StatusDetails,
};
use serde_json::{json, Value};

use crate::catalogue::ResourceInfo;
use crate::discovery;
use crate::errors::{self, status_json};
use crate::meta::meta_str;
use crate::negotiate::{self, Conversion, Endpoint, Negotiated};
use crate::query::{ListParams, Query, RvMatch};
use crate::registry::{FieldValidation, ListError, Part, WriteOptions};
use crate::response::{self, Body};
use crate::router::{route, ResourcePath, Route};
use crate::selectors::Predicate;
use crate::server::Shared;
use crate::watch;

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
}

/// Reads a hyper request into an [`ApiRequest`], refusing bodies over [`MAX_BODY`].
pub async fn read_request(req: Request<Incoming>) -> Result<ApiRequest, ApiError> {
    let (parts, body) = req.into_parts();
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
    })
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// Serves one request.
pub async fn handle(shared: Arc<Shared>, req: ApiRequest) -> Response<Body> {
    let latency = shared.faults.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if let Some(failure) = shared.faults.next_failure() {
        return failure.response();
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
            None => not_served(&shared, &group),
        },
        Route::ResourceList { group, version } => {
            match discovery::resource_list(&shared.registry.catalogue, &group, &version) {
                Some(v) => response::json(StatusCode::OK, &v),
                None => not_served(&shared, &group),
            }
        }
        Route::Resource(path) => {
            let result = resource(&shared, &req, path).await;
            shared.registry.settle();
            match result {
                Ok(res) => res,
                Err(e) => response::error(&e),
            }
        }
        Route::NotFound => response::text(StatusCode::NOT_FOUND, "404 page not found\n"),
    }
}

/// The 404 for a path that no served resource answers: inside kube-apiserver's built-in
/// groups a JSON `NotFound`; elsewhere (a group only CRDs serve, or nothing) the plain
/// `404 page not found` of its mux, as after a CRD is deleted.
fn not_served(shared: &Shared, group: &str) -> Response<Body> {
    let built_in = group.is_empty()
        || shared
            .registry
            .catalogue
            .all()
            .iter()
            .any(|r| !r.custom && r.api.group == group);
    if built_in {
        response::error(&errors::resource_not_found())
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

/// Parses a request body as JSON (or YAML, when the Content-Type says so).
pub fn parse_body(req: &ApiRequest, info: &ResourceInfo) -> Result<Value, ApiError> {
    let content_type = header_str(&req.headers, header::CONTENT_TYPE);
    let media = content_type.split(';').next().unwrap_or("").trim();
    if media.contains("protobuf") || media.contains("cbor") {
        return Err(Status::failure(
            kclient_core::StatusReason::UnsupportedMediaType,
            415,
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
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

fn write_options(
    q: &Query,
    headers: &HeaderMap,
    method: &Method,
) -> Result<WriteOptions, ApiError> {
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
    Ok(WriteOptions {
        dry_run,
        field_manager,
        field_validation,
        ..WriteOptions::default()
    })
}

/// Adds a write's warnings to its response (`Warning: 299 - "text"`).
fn with_warnings(mut res: Response<Body>, opts: &WriteOptions) -> Response<Body> {
    for text in opts.warnings.take() {
        let value = format!("299 - {}", kclient_core::go_format::quote(&text));
        if let Ok(v) = header::HeaderValue::from_str(&value) {
            res.headers_mut().append(header::WARNING, v);
        }
    }
    res
}

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
        return Ok(not_served(shared, &path.group));
    };
    if path.namespace.is_some() && !info.namespaced() {
        return Err(errors::resource_not_found());
    }
    let q = Query::parse(req.query.as_deref());
    let namespace = path.namespace.clone().unwrap_or_default();
    let gr = info.group_resource();
    if let Some(sub) = path.subresource.as_deref() {
        let name = path.name.as_deref().unwrap_or_default();
        return subresource(shared, req, &info, &namespace, name, sub, &q).await;
    }
    match (&req.method, path.name.as_deref()) {
        (&Method::GET, Some(name)) => {
            if path.watch_prefix || q.bool("watch")?.unwrap_or(false) {
                let endpoint = if path.watch_prefix {
                    Endpoint::ListOrWatch
                } else {
                    Endpoint::Object
                };
                let negotiated = negotiate::negotiate(req, &info, endpoint)?;
                let mut params = ListParams::from_query(&q, true)?;
                params.field_selector = if params.field_selector.is_empty() {
                    format!("metadata.name={name}")
                } else {
                    format!("{},metadata.name={name}", params.field_selector)
                };
                let namespace = path.namespace.as_deref();
                return watch_collection(shared, &info, namespace, params, negotiated).await;
            }
            require(&info, "get")?;
            let negotiated = negotiate::negotiate(req, &info, Endpoint::Object)?;
            if let Some(rv) = crate::query::parse_rv(q.str("resourceVersion"))? {
                shared.registry.wait_for_rv(rv).await?;
            }
            let obj = shared.registry.get(&info, &namespace, name)?;
            respond(req, &info, negotiated, StatusCode::OK, &obj)
        }
        (&Method::GET, None) => {
            let negotiated = negotiate::negotiate(req, &info, Endpoint::ListOrWatch)?;
            let params = ListParams::from_query(&q, path.watch_prefix)?;
            let namespace = path.namespace.as_deref();
            if params.watch {
                return watch_collection(shared, &info, namespace, params, negotiated).await;
            }
            require(&info, "list")?;
            list(shared, &info, namespace, params, negotiated).await
        }
        (&Method::POST, None) => {
            require(&info, "create")?;
            let negotiated = negotiate::negotiate(req, &info, Endpoint::Collection)?;
            if info.namespaced() && path.namespace.is_none() {
                return Err(ApiError::method_not_supported(&gr, "create"));
            }
            let body = parse_body(req, &info)?;
            let opts = write_options(&q, &req.headers, &req.method)?;
            let obj = shared.registry.create(&info, &namespace, body, &opts)?;
            let response = respond(req, &info, negotiated, StatusCode::CREATED, &obj)?;
            Ok(with_warnings(response, &opts))
        }
        (&Method::PUT, Some(name)) => {
            require(&info, "update")?;
            let negotiated = negotiate::negotiate(req, &info, Endpoint::Object)?;
            let body = parse_body(req, &info)?;
            let opts = write_options(&q, &req.headers, &req.method)?;
            let (obj, created) =
                shared
                    .registry
                    .update_with(&info, &namespace, name, Part::Main, &opts, |_| Ok(body))?;
            let code = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(with_warnings(
                respond(req, &info, negotiated, code, &obj)?,
                &opts,
            ))
        }
        (&Method::PATCH, Some(name)) => {
            require(&info, "patch")?;
            let negotiated = negotiate::negotiate(req, &info, Endpoint::Object)?;
            let opts = write_options(&q, &req.headers, &req.method)?;
            let (obj, created) =
                crate::patch::handle(shared, req, &info, &namespace, name, Part::Main, &q, &opts)?;
            let code = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(with_warnings(
                respond(req, &info, negotiated, code, &obj)?,
                &opts,
            ))
        }
        (&Method::DELETE, Some(name)) => {
            require(&info, "delete")?;
            let negotiated = negotiate::negotiate(req, &info, Endpoint::Object)?;
            let (opts, orphan_dependents) = delete_options(req, &q)?;
            let deleted = shared.registry.delete(
                &info,
                &namespace,
                name,
                opts.preconditions.as_ref(),
                opts.propagation_policy,
                opts.dry_run,
            )?;
            if info.returns_deleted_object || !deleted.removed {
                // kube-apiserver answers 202 only to the deprecated `orphanDependents: false`
                // when the object stays (a foreground deletion still answers 200).
                let code = if !deleted.removed && orphan_dependents == Some(false) {
                    StatusCode::ACCEPTED
                } else {
                    StatusCode::OK
                };
                // A Table is not made of a deleted object (as before): the object itself.
                let conversion = negotiated.conversion;
                match negotiate::convert_object(&info, conversion, &deleted.object)? {
                    Some(converted) => Ok(response::json_bytes(code, converted)),
                    None => Ok(response::json(code, &deleted.object)),
                }
            } else {
                let status = Status {
                    status: Status::SUCCESS.into(),
                    details: Some(StatusDetails {
                        name: meta_str(&deleted.object, "name").to_string(),
                        group: info.api.group.clone(),
                        kind: info.api.plural.clone(),
                        uid: meta_str(&deleted.object, "uid").to_string(),
                        ..StatusDetails::default()
                    }),
                    ..Status::default()
                };
                Ok(response::json(StatusCode::OK, &status_json(&status)))
            }
        }
        (&Method::DELETE, None) => {
            require(&info, "deletecollection")?;
            let negotiated = negotiate::negotiate(req, &info, Endpoint::Collection)?;
            let (opts, _) = delete_options(req, &q)?;
            let params = ListParams::from_query(&q, false)?;
            let namespace = path.namespace.as_deref();
            delete_collection(shared, &info, namespace, params, opts, negotiated)
        }
        (method, _) => {
            let verb = match *method {
                Method::POST => "create",
                Method::PUT => "update",
                Method::PATCH => "patch",
                _ => "method",
            };
            Err(ApiError::method_not_supported(&gr, verb))
        }
    }
}

/// The answer of a verb on one object: the object converted as negotiated (a `Table`,
/// `PartialObjectMetadata`), or the conversion's error (after the verb did its work, as on
/// kube-apiserver).
fn respond(
    req: &ApiRequest,
    info: &ResourceInfo,
    negotiated: Negotiated,
    code: StatusCode,
    obj: &Value,
) -> Result<Response<Body>, ApiError> {
    if negotiated.conversion == Conversion::Table {
        return Ok(crate::table::respond(req, info, code, obj));
    }
    Ok(
        match negotiate::convert_object(info, negotiated.conversion, obj)? {
            Some(converted) => response::json_bytes(code, converted),
            None => response::json(code, obj),
        },
    )
}

fn require(info: &ResourceInfo, verb: &str) -> Result<(), ApiError> {
    if info.supports(verb) {
        Ok(())
    } else {
        Err(ApiError::method_not_supported(&info.group_resource(), verb))
    }
}

/// The delete options of a request (body and query), and the deprecated `orphanDependents`
/// when given (it also sets the propagation policy when there is none).
fn delete_options(req: &ApiRequest, q: &Query) -> Result<(DeleteOptions, Option<bool>), ApiError> {
    let blank = req.body.iter().all(u8::is_ascii_whitespace);
    let mut opts = if blank {
        DeleteOptions::default()
    } else {
        serde_json::from_slice::<DeleteOptions>(&req.body)
            .map_err(|e| ApiError::bad_request(e.to_string()))?
    };
    let in_body = if blank {
        None
    } else {
        serde_json::from_slice::<Value>(&req.body)
            .ok()
            .and_then(|b| b.get("orphanDependents").and_then(Value::as_bool))
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

async fn list(
    shared: &Arc<Shared>,
    info: &Arc<ResourceInfo>,
    namespace: Option<&str>,
    params: ListParams,
    negotiated: Negotiated,
) -> Result<Response<Body>, ApiError> {
    let predicate = Predicate::new(info.clone(), &params.label_selector, &params.field_selector)?;
    if params.rv_match == RvMatch::NotOlderThan
        || (params.rv_match == RvMatch::Unset && params.limit == 0)
    {
        if let Some(rv) = crate::query::parse_rv(&params.resource_version)?.filter(|r| *r > 0) {
            if params.continue_token.is_empty() {
                shared.registry.wait_for_rv(rv).await?;
            }
        }
    }
    let page = match shared.registry.list(info, namespace, &params, &predicate) {
        Ok(p) => p,
        Err(ListError::Api(e)) => return Err(e),
        Err(ListError::ExpiredContinue(e)) => {
            let mut body = status_json(&e.error.status);
            body["metadata"] = json!({"continue": e.continue_token});
            return Ok(response::json(StatusCode::GONE, &body));
        }
    };
    let mut metadata = json!({"resourceVersion": page.rv.to_string()});
    if let Some(c) = &page.continue_token {
        metadata["continue"] = json!(c);
    }
    if let Some(r) = page.remaining {
        metadata["remainingItemCount"] = json!(r);
    }
    match negotiated.conversion {
        Conversion::Table => return Ok(crate::table::list_table(info, &page)),
        Conversion::Metadata(_) => return Err(negotiate::list_as_object(info)),
        Conversion::MetadataList(version) => {
            let items = page.items.iter().map(|i| &i.value);
            let body = negotiate::partial_list(version, &metadata, items);
            return Ok(response::json_bytes(StatusCode::OK, body));
        }
        Conversion::None => {}
    }

    // Built-in types' lists leave the items' apiVersion and kind out, as kube-apiserver's
    // typed lists do; custom resources' (unstructured) keep them.
    let custom = info.custom;
    fn item(i: &crate::store::StoredObject, custom: bool) -> &[u8] {
        if custom {
            &i.json
        } else {
            &i.item_json
        }
    }
    let size: usize = page.items.iter().map(|i| item(i, custom).len() + 1).sum();
    let rewrite = page
        .items
        .first()
        .is_some_and(|i| crate::registry::needs_version_rewrite(info, &i.value));
    let body = if rewrite {
        let items: Vec<Vec<u8>> = page
            .items
            .iter()
            .map(|i| {
                let mut value = crate::registry::for_version(info, &i.value);
                if !info.custom {
                    if let Some(map) = value.as_object_mut() {
                        map.remove("apiVersion");
                        map.remove("kind");
                    }
                }
                serde_json::to_vec(&value).unwrap_or_default()
            })
            .collect();
        response::list_body(
            &info.list_kind(),
            info.api_version(),
            &metadata,
            items.iter().map(Vec::as_slice),
            size,
        )
    } else {
        response::list_body(
            &info.list_kind(),
            info.api_version(),
            &metadata,
            page.items.iter().map(|i| item(i, custom)),
            size,
        )
    };
    Ok(response::json_bytes(StatusCode::OK, body))
}

async fn watch_collection(
    shared: &Arc<Shared>,
    info: &Arc<ResourceInfo>,
    namespace: Option<&str>,
    params: ListParams,
    negotiated: Negotiated,
) -> Result<Response<Body>, ApiError> {
    require(info, "watch")?;
    let predicate = Predicate::new(info.clone(), &params.label_selector, &params.field_selector)?;
    let start = watch::start_of(
        &params.resource_version,
        params.send_initial_events,
        params.allow_watch_bookmarks,
    )?;
    if let watch::Start::Initial { .. } = start {
        // A streaming list at NotOlderThan N waits (three seconds at most) for N, as the
        // watch cache does.
        if let Some(rv) = crate::query::parse_rv(&params.resource_version)?.filter(|r| *r > 0) {
            shared.registry.wait_for_rv(rv).await?;
        }
    }
    // As the API server: a positive timeoutSeconds bounds the watch, anything else gets the
    // server's default.
    let timeout = match params.timeout_seconds {
        Some(s) if s > 0 => Duration::from_secs(s as u64),
        _ => shared.settings.watch_timeout,
    };
    negotiated.check_stream()?;
    let spec = watch::WatchSpec {
        info: info.clone(),
        namespace: namespace.map(str::to_string),
        predicate,
        start,
        bookmarks: params.allow_watch_bookmarks,
        timeout,
        conversion: negotiated.conversion,
    };
    let body = watch::stream(shared.clone(), spec);
    let mut res = Response::new(body);
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(response::JSON),
    );
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache, private"),
    );
    Ok(res)
}

fn delete_collection(
    shared: &Arc<Shared>,
    info: &Arc<ResourceInfo>,
    namespace: Option<&str>,
    params: ListParams,
    opts: DeleteOptions,
    negotiated: Negotiated,
) -> Result<Response<Body>, ApiError> {
    let predicate = Predicate::new(info.clone(), &params.label_selector, &params.field_selector)?;
    let all = ListParams {
        limit: 0,
        continue_token: String::new(),
        resource_version: String::new(),
        rv_match: RvMatch::Unset,
        ..params
    };
    let page = match shared.registry.list(info, namespace, &all, &predicate) {
        Ok(p) => p,
        Err(ListError::Api(e)) => return Err(e),
        Err(ListError::ExpiredContinue(e)) => return Err(e.error),
    };
    let mut items = Vec::new();
    for item in &page.items {
        let ns = meta_str(&item.value, "namespace").to_string();
        let name = meta_str(&item.value, "name").to_string();
        match shared.registry.delete(
            info,
            &ns,
            &name,
            opts.preconditions.as_ref(),
            opts.propagation_policy,
            opts.dry_run,
        ) {
            Ok(d) => items.push(d.object),
            Err(e) if e.code() == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let rv = shared.registry.store.read().current_rv();
    let metadata = json!({"resourceVersion": rv.to_string()});
    // The conversion comes after the deletion: a refused one still deleted (a Table of the
    // deleted objects is not made, as before).
    match negotiated.conversion {
        Conversion::Metadata(_) => Err(negotiate::list_as_object(info)),
        Conversion::MetadataList(version) => {
            let body = negotiate::partial_list(version, &metadata, items.iter());
            Ok(response::json_bytes(StatusCode::OK, body))
        }
        Conversion::None | Conversion::Table => Ok(response::json(
            StatusCode::OK,
            &json!({
                "kind": info.list_kind(),
                "apiVersion": info.api_version(),
                "metadata": metadata,
                "items": items,
            }),
        )),
    }
}

async fn subresource(
    shared: &Arc<Shared>,
    req: &ApiRequest,
    info: &Arc<ResourceInfo>,
    namespace: &str,
    name: &str,
    sub: &str,
    q: &Query,
) -> Result<Response<Body>, ApiError> {
    let builtin =
        |group: &str, kind: &str| !info.custom && info.api.group == group && info.kind() == kind;
    let part = match sub {
        "status" if info.status_subresource => Some(Part::Status),
        "ephemeralcontainers" if builtin("", "Pod") => Some(Part::EphemeralContainers),
        "resize" if builtin("", "Pod") => Some(Part::Resize),
        _ => None,
    };
    if let Some(part) = part {
        let opts = write_options(q, &req.headers, &req.method)?;
        return match req.method {
            Method::GET => {
                let obj = shared.registry.get(info, namespace, name)?;
                Ok(response::json(StatusCode::OK, &obj))
            }
            Method::PUT => {
                let body = parse_body(req, info)?;
                let (obj, _) =
                    shared
                        .registry
                        .update_with(info, namespace, name, part, &opts, |_| Ok(body))?;
                Ok(with_warnings(response::json(StatusCode::OK, &obj), &opts))
            }
            Method::PATCH => {
                let (obj, _) =
                    crate::patch::handle(shared, req, info, namespace, name, part, q, &opts)?;
                Ok(with_warnings(response::json(StatusCode::OK, &obj), &opts))
            }
            _ => Err(errors::method_not_allowed()),
        };
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
    let opts = write_options(q, &req.headers, &req.method)?;
    match (sub, &req.method) {
        ("scale", &Method::GET) => {
            let obj = shared.registry.get(info, namespace, name)?;
            Ok(response::json(
                StatusCode::OK,
                &crate::scale::to_scale(info, &obj),
            ))
        }
        ("scale", &Method::PUT) => {
            let body: Value = serde_json::from_slice(&req.body)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            let obj = crate::scale::update(shared, info, namespace, name, body, &opts)?;
            Ok(response::json(
                StatusCode::OK,
                &crate::scale::to_scale(info, &obj),
            ))
        }
        ("scale", &Method::PATCH) => {
            let obj = crate::scale::patch(shared, req, info, namespace, name, &opts)?;
            Ok(response::json(
                StatusCode::OK,
                &crate::scale::to_scale(info, &obj),
            ))
        }
        ("finalize", &Method::PUT) => {
            let body = parse_body(req, info)?;
            let keep: Vec<Value> = body
                .pointer("/spec/finalizers")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let obj = shared.registry.finalize_namespace(info, name, keep)?;
            Ok(response::json(StatusCode::OK, &obj))
        }
        (_, _) => Err(errors::method_not_allowed()),
    }
}
