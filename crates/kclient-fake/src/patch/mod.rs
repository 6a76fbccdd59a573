//! PATCH: the patch type from the Content-Type, and its application to the current object
//! (again to the new one when another write came first: a patch never races another write).
//!
//! - `application/json-patch+json`: [`json`] (RFC 6902)
//! - `application/merge-patch+json`: [`merge`] (RFC 7386)
//! - `application/strategic-merge-patch+json`: [`strategic`] (built-in types only, as on a
//!   real server; custom resources answer `415`)
//! - `application/apply-patch+yaml`: server-side apply, [`apply`]

pub mod apply;
pub mod json;
pub mod merge;
pub mod strategic;

use http::header;
use kclient_core::{ApiError, FieldError, GroupResource, PatchType, Status, StatusReason};
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::call::Call;
use crate::registry::{Part, WriteOptions};
use crate::request::ApiRequest;

fn unsupported(custom: bool) -> ApiError {
    let accepted = if custom {
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    } else {
        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
    };
    Status::failure(
        StatusReason::UnsupportedMediaType,
        415,
        format!(
            "the body of the request was in an unknown format - accepted media types include: {accepted}"
        ),
    )
    .into()
}

/// The patch type of a request, from its Content-Type.
pub fn patch_type(req: &ApiRequest) -> Result<PatchType, ApiError> {
    let ct = req
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = ct.split(';').next().unwrap_or("").trim();
    PatchType::from_content_type(media).ok_or_else(|| unsupported(false))
}

/// Refuses a body that is not JSON, for every patch type but apply (whose YAML is read
/// where it is applied): kube-apiserver checks this before it reads the object, so a
/// missing object is not what a client hears about first.
pub fn check_json_body(patch_type: PatchType, body: &[u8]) -> Result<(), ApiError> {
    if patch_type == PatchType::Apply || serde_json::from_slice::<IgnoredAny>(body).is_ok() {
        return Ok(());
    }
    Err(ApiError::bad_request("invalid JSON patch"))
}

/// Applies a non-apply patch document to `target`, with the request's options
/// (`fieldValidation` and where warnings go).
pub fn apply_simple(
    patch_type: PatchType,
    target: &Value,
    body: &[u8],
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    match patch_type {
        PatchType::Json => json::apply(target, body, opts),
        PatchType::Merge => merge::apply(target, body),
        PatchType::StrategicMerge => strategic::apply(target, body),
        _ => Err(unsupported(false)),
    }
}

/// Serves a PATCH of an object or its status: returns the object and whether it was created.
pub async fn handle(
    call: &Call<'_>,
    name: &str,
    part: Part,
    opts: &WriteOptions,
) -> Result<(Value, bool), ApiError> {
    let (shared, req, info, q) = (call.shared, call.req, call.info, call.q);
    let namespace = call.namespace_or_all();
    let patch_type = patch_type(req)?;
    if patch_type == PatchType::StrategicMerge && info.custom {
        return Err(unsupported(true));
    }
    if patch_type == PatchType::Apply {
        return apply::handle(call, name, part, opts).await;
    }
    if q.get("force").is_some() {
        // Even `force=false`, as kube-apiserver's PatchOptions validation.
        return Err(ApiError::invalid(
            &GroupResource::new("meta.k8s.io", "PatchOptions"),
            "",
            vec![FieldError::forbidden(
                "force",
                "may not be specified for non-apply patch",
            )],
        ));
    }
    check_json_body(patch_type, &req.body)?;
    let gr = info.group_resource();
    let opts = WriteOptions {
        patch: true,
        ..opts.clone()
    };
    shared
        .registry
        .update_with(info, namespace, name, part, &opts, |cur| {
            let Some(cur) = cur else {
                return Err(ApiError::not_found(&gr, name));
            };
            apply_simple(patch_type, cur, &req.body, &opts)
        })
        .await
}
