//! The HTTP handler: injected faults, routing to discovery or to a resource, and the
//! `status`, `scale` and `finalize` subresources (the request and the options the verbs
//! share are [`crate::request`]'s). Each verb on a resource (get, list, watch, create, update, patch, delete,
//! deletecollection) is a function of [`crate::verbs`].

use std::sync::Arc;

use http::{header, HeaderMap, Method, Response, StatusCode};
use kclient_core::ApiError;
use serde_json::Value;

use crate::call::Call;
use crate::catalogue::ResourceInfo;
use crate::discovery;
use crate::errors;
use crate::negotiate::answer_write;
use crate::query::Query;
use crate::registry::{Part, WriteOptions};
use crate::request::{
    for_subresource, header_str, parse_body, protobuf_body, write_options, ApiRequest,
};
use crate::response::{self, Body};
use crate::router::{route, ResourcePath, Route};
use crate::state::Shared;
use crate::verbs;

/// Serves one request: records it, delays it by the injected latency, sends it down the
/// reactor chain, and serves it if no reactor answered.
pub async fn handle(shared: Arc<Shared>, req: ApiRequest) -> Response<Body> {
    if let Some(answer) = shared.intercept(&req).await {
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
                Err(e) => crate::negotiate::error_negotiated(&req.headers, &e),
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
        crate::negotiate::error_negotiated(headers, &errors::resource_not_found())
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
        return subresource(&call, name, sub).await;
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

/// Serves a subresource of an object: the parts of the object written on their own
/// (`status`, the pod's `ephemeralcontainers` and `resize`), the pod and service-account
/// subresources, the connect ones, `scale` and `namespaces/finalize`.
async fn subresource(call: &Call<'_>, name: &str, sub: &str) -> Result<Response<Body>, ApiError> {
    let (shared, req, info, q) = (call.shared, call.req, call.info, call.q);
    if let Some(part) = object_part(info, sub) {
        let opts = for_subresource(write_options(req, q)?, info, sub);
        return part_subresource(call, name, part, &opts).await;
    }
    let extra = !info.custom && info.extra_subresources.iter().any(|e| e.name == sub);
    if extra {
        match (info.api.group.as_str(), info.kind(), sub) {
            ("", "Pod", "log" | "eviction" | "binding") => {
                return crate::pods::handle(call, name, sub).await;
            }
            ("", "ServiceAccount", "token") => {
                return crate::connect::token(call, name);
            }
            ("", "Namespace", "finalize") => {}
            _ => return crate::connect::handle(call, name, sub),
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
        ("scale", _) => scale_subresource(call, name, opts).await,
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
async fn part_subresource(
    call: &Call<'_>,
    name: &str,
    part: Part,
    opts: &WriteOptions,
) -> Result<Response<Body>, ApiError> {
    let (shared, req, info) = (call.shared, call.req, call.info);
    let namespace = call.namespace_or_all();
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
        Method::PATCH => crate::patch::handle(call, name, part, opts).await,
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
    call: &Call<'_>,
    name: &str,
    opts: WriteOptions,
) -> Result<Response<Body>, ApiError> {
    let (shared, req, info) = (call.shared, call.req, call.info);
    let namespace = call.namespace_or_all();
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
            crate::scale::update(call, name, body, &opts).await
        }
        Method::PATCH => crate::scale::patch(call, name, &opts).await,
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
