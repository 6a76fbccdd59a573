//! The verbs on a resource, one function each, as kube-apiserver serves them: [`get`],
//! [`watch_one`], [`list_or_watch`], [`create`], [`update`], [`patch`], [`delete`] and
//! [`delete_collection`]. The handler finds the resource and calls the verb's function with
//! the [`Call`]; the object writes (update, patch) share [`write_one`]. What the verbs do to
//! the stored objects is the registry's.

use std::sync::Arc;
use std::time::Duration;

use http::{header, Response, StatusCode};
use kclient_core::{ApiError, DeleteOptions, Status, StatusDetails};
use serde_json::{json, Value};

use crate::call::Call;
use crate::catalogue::ResourceInfo;
use crate::errors::status_json;
use crate::meta::meta_str;
use crate::negotiate::{self, answer_write, Conversion, Endpoint, Negotiated, ObjectForm, Wire};
use crate::protobuf;
use crate::query::{ListParams, RvMatch};
use crate::registry::{ExpiredContinue, ListError, ListPage, Part, Warnings, WriteOptions};
use crate::request::{delete_options, parse_body, write_options, ApiRequest};
use crate::response::{self, Body};
use crate::selectors::Predicate;
use crate::state::Shared;
use crate::watch;

/// GET of one object.
pub(crate) async fn get(call: &Call<'_>, name: &str) -> Result<Response<Body>, ApiError> {
    require(call.info, "get")?;
    let negotiated = negotiate::negotiate(call.req, call.info, Endpoint::Object)?;
    if let Some(rv) = crate::query::parse_rv(call.q.str("resourceVersion"))? {
        call.shared.registry.wait_for_rv(rv).await?;
    }
    let obj = call
        .shared
        .registry
        .get_converted(call.info, call.namespace_or_all(), name)
        .await?;
    respond(call.req, call.info, negotiated, StatusCode::OK, &obj)
}

/// A watch of one object (`?watch=true` on its path, or the deprecated `/watch/` prefix): a
/// watch of the collection narrowed to its name.
pub(crate) async fn watch_one(call: &Call<'_>, name: &str) -> Result<Response<Body>, ApiError> {
    let endpoint = if call.watch_prefix {
        Endpoint::ListOrWatch
    } else {
        Endpoint::Object
    };
    let negotiated = negotiate::negotiate(call.req, call.info, endpoint)?;
    let mut params = ListParams::from_query(call.q, true)?;
    params.field_selector = if params.field_selector.is_empty() {
        format!("metadata.name={name}")
    } else {
        format!("{},metadata.name={name}", params.field_selector)
    };
    watch_collection(call, params, negotiated).await
}

/// GET of the collection: a list, or a watch when asked for.
pub(crate) async fn list_or_watch(call: &Call<'_>) -> Result<Response<Body>, ApiError> {
    let negotiated = negotiate::negotiate(call.req, call.info, Endpoint::ListOrWatch)?;
    let params = ListParams::from_query(call.q, call.watch_prefix)?;
    if params.watch {
        return watch_collection(call, params, negotiated).await;
    }
    require(call.info, "list")?;
    list_page(call, params, negotiated).await
}

/// POST to the collection.
pub(crate) async fn create(call: &Call<'_>) -> Result<Response<Body>, ApiError> {
    require(call.info, "create")?;
    let negotiated = negotiate::negotiate(call.req, call.info, Endpoint::Collection)?;
    if call.info.namespaced() && call.namespace.is_none() {
        return Err(ApiError::method_not_supported(
            &call.info.group_resource(),
            "create",
        ));
    }
    let body = parse_body(call.req, call.info)?;
    let opts = write_options(call.req, call.q)?;
    let created = call
        .shared
        .registry
        .create(call.info, call.namespace_or_all(), body, &opts)
        .await;
    let response =
        created.and_then(|obj| respond(call.req, call.info, negotiated, StatusCode::CREATED, &obj));
    answer_write(call.req, &opts, response)
}

/// PUT of one object: replaces it (or creates it, where the resource allows).
pub(crate) async fn update(call: &Call<'_>, name: &str) -> Result<Response<Body>, ApiError> {
    require(call.info, "update")?;
    let negotiated = negotiate::negotiate(call.req, call.info, Endpoint::Object)?;
    let body = parse_body(call.req, call.info)?;
    let opts = write_options(call.req, call.q)?;
    let written = call
        .shared
        .registry
        .update_with(
            call.info,
            call.namespace_or_all(),
            name,
            Part::Main,
            &opts,
            |_| Ok(body.clone()),
        )
        .await;
    answer_one(call, negotiated, &opts, written)
}

/// PATCH of one object, in any of the patch types (server-side apply included).
pub(crate) async fn patch(call: &Call<'_>, name: &str) -> Result<Response<Body>, ApiError> {
    require(call.info, "patch")?;
    let negotiated = negotiate::negotiate(call.req, call.info, Endpoint::Object)?;
    let opts = write_options(call.req, call.q)?;
    let written = crate::patch::handle(call, name, Part::Main, &opts).await;
    answer_one(call, negotiated, &opts, written)
}

/// The answer of an update or a patch: the object (`201 Created` when the write created it,
/// `200 OK` otherwise) or the error, with the write's warnings.
fn answer_one(
    call: &Call<'_>,
    negotiated: Negotiated,
    opts: &WriteOptions,
    written: Result<(Value, bool), ApiError>,
) -> Result<Response<Body>, ApiError> {
    let response = written.and_then(|(obj, created)| {
        let code = if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        respond(call.req, call.info, negotiated, code, &obj)
    });
    answer_write(call.req, opts, response)
}

/// DELETE of one object: the deleted object, or a `Status` for resources that answer with
/// one; `202 Accepted` only for the deprecated `orphanDependents: false` when the object
/// stays.
pub(crate) async fn delete(call: &Call<'_>, name: &str) -> Result<Response<Body>, ApiError> {
    let info = call.info;
    require(info, "delete")?;
    let negotiated = negotiate::negotiate(call.req, info, Endpoint::Object)?;
    let (opts, orphan_dependents) = delete_options(call.req, call.q)?;
    let warnings = Warnings::default();
    let admission = delete_admission(call.req, &opts, false, &warnings);
    let deleted = call
        .shared
        .registry
        .delete(info, call.namespace_or_all(), name, &opts, Some(&admission))
        .await;
    let write = WriteOptions {
        warnings,
        ..WriteOptions::default()
    };
    let response =
        deleted.and_then(|deleted| delete_answer(call, negotiated, orphan_dependents, deleted));
    answer_write(call.req, &write, response)
}

/// The admission of a delete (`collection`: of each object of a delete-collection).
fn delete_admission(
    req: &ApiRequest,
    opts: &DeleteOptions,
    collection: bool,
    warnings: &Warnings,
) -> crate::admission::Request {
    let options = serde_json::to_value(opts).unwrap_or_else(|_| json!({}));
    crate::admission::Request {
        collection,
        ..(*crate::request::admission(req, options, opts.dry_run, warnings)).clone()
    }
}

/// The answer of a delete: the deleted object, or a `Status` for resources that answer with
/// one.
fn delete_answer(
    call: &Call<'_>,
    negotiated: Negotiated,
    orphan_dependents: Option<bool>,
    deleted: crate::registry::Deleted,
) -> Result<Response<Body>, ApiError> {
    let info = call.info;
    if info.returns_deleted_object || !deleted.removed {
        // kube-apiserver answers 202 only to the deprecated `orphanDependents: false`
        // when the object stays (a foreground deletion still answers 200).
        let code = if !deleted.removed && orphan_dependents == Some(false) {
            StatusCode::ACCEPTED
        } else {
            StatusCode::OK
        };
        // A Table is not made of a deleted object (as before): the object itself.
        let form = negotiate::object_form(info, negotiated.conversion, &deleted.object)?;
        answer(negotiated.wire, form, code, &deleted.object)
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
        Ok(match negotiated.wire {
            Wire::Protobuf(_) => {
                protobuf::response(StatusCode::OK, protobuf::status(&status_json(&status)))
            }
            Wire::Json => response::json(StatusCode::OK, &status_json(&status)),
        })
    }
}

/// DELETE of the collection (deletecollection).
pub(crate) async fn delete_collection(call: &Call<'_>) -> Result<Response<Body>, ApiError> {
    require(call.info, "deletecollection")?;
    let negotiated = negotiate::negotiate(call.req, call.info, Endpoint::Collection)?;
    let (opts, _) = delete_options(call.req, call.q)?;
    let params = ListParams::from_query(call.q, false)?;
    let warnings = Warnings::default();
    let admission = delete_admission(call.req, &opts, true, &warnings);
    let response = delete_matching(
        call.shared,
        call.info,
        call.namespace,
        params,
        opts,
        negotiated,
        &admission,
    )
    .await;
    let write = WriteOptions {
        warnings,
        ..WriteOptions::default()
    };
    answer_write(call.req, &write, response)
}

/// The answer of a verb on one object: the object converted as negotiated (a `Table`,
/// `PartialObjectMetadata`), or the conversion's error (after the verb did its work, as on
/// kube-apiserver).
pub(crate) fn respond(
    req: &ApiRequest,
    info: &ResourceInfo,
    negotiated: Negotiated,
    code: StatusCode,
    obj: &Value,
) -> Result<Response<Body>, ApiError> {
    if negotiated.conversion == Conversion::Table {
        return Ok(crate::table::respond(req, info, code, obj));
    }
    let form = negotiate::object_form(info, negotiated.conversion, obj)?;
    answer(negotiated.wire, form, code, obj)
}

/// `obj` served as `form`, written in `wire`.
fn answer(
    wire: Wire,
    form: ObjectForm,
    code: StatusCode,
    obj: &Value,
) -> Result<Response<Body>, ApiError> {
    Ok(match (wire, form) {
        (Wire::Protobuf(codec), form) => return protobuf::object_response(codec, form, code, obj),
        (Wire::Json, ObjectForm::AsIs) => response::json(code, obj),
        (Wire::Json, ObjectForm::Metadata(version)) => {
            response::json_bytes(code, negotiate::partial_object(obj, version))
        }
    })
}

/// Refuses a verb the resource does not serve (`405 MethodNotSupported`).
fn require(info: &ResourceInfo, verb: &str) -> Result<(), ApiError> {
    if info.supports(verb) {
        Ok(())
    } else {
        Err(ApiError::method_not_supported(&info.group_resource(), verb))
    }
}

/// A page of the collection, as a list or converted as negotiated.
async fn list_page(
    call: &Call<'_>,
    params: ListParams,
    negotiated: Negotiated,
) -> Result<Response<Body>, ApiError> {
    let (shared, info, namespace) = (call.shared, call.info, call.namespace);
    let predicate = Predicate::new(info.clone(), &params.label_selector, &params.field_selector)?
        .with_shards(
        &params.shard_selector,
        shared.settings.sharded_list_and_watch,
    )?;
    wait_for_requested_rv(shared, &params).await?;
    let page = match shared.registry.list(info, namespace, &params, &predicate) {
        Ok(p) => p,
        Err(ListError::Api(e)) => return Err(e),
        Err(ListError::ExpiredContinue(e)) => return Ok(expired_continue(&e, &negotiated)),
    };
    let metadata = list_metadata(&page, &predicate);
    match negotiated.conversion {
        Conversion::Table => return Ok(crate::table::list_table(info, &page)),
        Conversion::Metadata(_) => return Err(negotiate::list_as_object(info)),
        Conversion::MetadataList(version) => {
            let items = page.items.iter().map(|i| &i.value);
            return Ok(match negotiated.wire {
                Wire::Protobuf(_) => protobuf::response(
                    StatusCode::OK,
                    protobuf::partial_list(version, &metadata, items)?,
                ),
                Wire::Json => response::json_bytes(
                    StatusCode::OK,
                    negotiate::partial_list(version, &metadata, items),
                ),
            });
        }
        Conversion::None => {}
    }
    if let Wire::Protobuf(codec) = negotiated.wire {
        let items = page.items.iter().map(|i| &**i);
        let body = protobuf::stored_list(protobuf::require(codec)?, info, &metadata, items)?;
        return Ok(protobuf::response(StatusCode::OK, body));
    }
    json_list(shared, info, &page, &metadata).await
}

/// Waits until the store reaches the resourceVersion a list asks for when any newer one
/// will do (`NotOlderThan`, or unset without a limit), as kube-apiserver's watch cache does.
async fn wait_for_requested_rv(shared: &Arc<Shared>, params: &ListParams) -> Result<(), ApiError> {
    if params.rv_match == RvMatch::NotOlderThan
        || (params.rv_match == RvMatch::Unset && params.limit == 0)
    {
        if let Some(rv) = crate::query::parse_rv(&params.resource_version)?.filter(|r| *r > 0) {
            if params.continue_token.is_empty() {
                shared.registry.wait_for_rv(rv).await?;
            }
        }
    }
    Ok(())
}

/// The `410 Gone` of an expired continue token, carrying the token that lists on from now.
fn expired_continue(e: &ExpiredContinue, negotiated: &Negotiated) -> Response<Body> {
    let mut body = status_json(&e.error.status);
    body["metadata"] = json!({"continue": e.continue_token});
    if negotiated.protobuf_errors {
        protobuf::response(StatusCode::GONE, protobuf::status(&body))
    } else {
        response::json(StatusCode::GONE, &body)
    }
}

/// The list metadata of a page: its resourceVersion, continue token and remaining count.
fn list_metadata(page: &ListPage, predicate: &Predicate) -> Value {
    let mut metadata = json!({"resourceVersion": page.rv.to_string()});
    if let Some(c) = &page.continue_token {
        metadata["continue"] = json!(c);
    }
    if let Some(r) = page.remaining {
        metadata["remainingItemCount"] = json!(r);
    }
    if let Some(shards) = predicate.shards() {
        metadata["shardInfo"] = json!({"selector": shards.to_string()});
    }
    metadata
}

/// A page as a JSON list, from the stored items' JSON when they are in the requested
/// version, converted otherwise.
async fn json_list(
    shared: &Arc<Shared>,
    info: &Arc<ResourceInfo>,
    page: &ListPage,
    metadata: &Value,
) -> Result<Response<Body>, ApiError> {
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
        let values = page.items.iter().map(|i| i.value.clone()).collect();
        let converted = shared.registry.list_converted(info, values).await?;
        let items: Vec<Vec<u8>> = converted
            .into_iter()
            .map(|mut value| {
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
            metadata,
            items.iter().map(Vec::as_slice),
            size,
        )
    } else {
        response::list_body(
            &info.list_kind(),
            info.api_version(),
            metadata,
            page.items.iter().map(|i| item(i, custom)),
            size,
        )
    };
    Ok(response::json_bytes(StatusCode::OK, body))
}

/// A watch of the collection (or of one object, its name in the field selector).
async fn watch_collection(
    call: &Call<'_>,
    params: ListParams,
    negotiated: Negotiated,
) -> Result<Response<Body>, ApiError> {
    let (shared, info, namespace) = (call.shared, call.info, call.namespace);
    require(info, "watch")?;
    let predicate = Predicate::new(info.clone(), &params.label_selector, &params.field_selector)?
        .with_shards(
        &params.shard_selector,
        shared.settings.sharded_list_and_watch,
    )?;
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
        wire: negotiated.wire,
    };
    let body = watch::stream(shared.clone(), spec);
    let mut res = Response::new(body);
    let content_type = match negotiated.wire {
        Wire::Protobuf(_) => protobuf::PROTOBUF_WATCH,
        Wire::Json => response::JSON,
    };
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache, private"),
    );
    Ok(res)
}

/// Deletes the objects of the collection that match, one by one (as kube-apiserver's
/// deletecollection, each admitted), and answers with them.
async fn delete_matching(
    shared: &Arc<Shared>,
    info: &Arc<ResourceInfo>,
    namespace: Option<&str>,
    params: ListParams,
    opts: DeleteOptions,
    negotiated: Negotiated,
    admission: &crate::admission::Request,
) -> Result<Response<Body>, ApiError> {
    let predicate = Predicate::new(info.clone(), &params.label_selector, &params.field_selector)?
        .with_shards(
        &params.shard_selector,
        shared.settings.sharded_list_and_watch,
    )?;
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
        let deleted = shared
            .registry
            .delete(info, &ns, &name, &opts, Some(admission))
            .await;
        match deleted {
            Ok(d) => items.push(d.object),
            Err(e) if e.code() == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let rv = shared.registry.store.read().current_rv();
    let metadata = json!({"resourceVersion": rv.to_string()});
    // The conversion comes after the deletion: a refused one still deleted (a Table of the
    // deleted objects is not made, as before).
    match (negotiated.conversion, negotiated.wire) {
        (Conversion::Metadata(_), _) => Err(negotiate::list_as_object(info)),
        (Conversion::MetadataList(version), Wire::Protobuf(_)) => Ok(protobuf::response(
            StatusCode::OK,
            protobuf::partial_list(version, &metadata, items.iter())?,
        )),
        (Conversion::MetadataList(version), Wire::Json) => {
            let body = negotiate::partial_list(version, &metadata, items.iter());
            Ok(response::json_bytes(StatusCode::OK, body))
        }
        (Conversion::None | Conversion::Table, Wire::Protobuf(codec)) => Ok(protobuf::response(
            StatusCode::OK,
            protobuf::value_list(protobuf::require(codec)?, info, &metadata, &items)?,
        )),
        (Conversion::None | Conversion::Table, Wire::Json) => Ok(response::json(
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
