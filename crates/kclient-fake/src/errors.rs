//! The failures the fake server answers with, as kube-apiserver words them, on top of
//! [`kclient_core::ApiError`]'s constructors (which word `Invalid`, `NotFound`,
//! `MethodNotAllowed` and `Too large resource version` exactly as kube-apiserver): the generic
//! `NotFound` for unknown paths, stale-resourceVersion conflicts, and the JSON rendering of a
//! `Status` (with `kind`, `apiVersion` and `metadata`).

use kclient_core::{ApiError, GroupResource, Status, StatusDetails, StatusReason};
use serde_json::{json, Value};

/// The 404 for a path inside an API group that names no served resource.
pub fn resource_not_found() -> ApiError {
    Status::failure(
        StatusReason::NotFound,
        404,
        "the server could not find the requested resource",
    )
    .with_details(StatusDetails::default())
    .into()
}

/// The 405 for a method a (sub)resource path does not serve (`GET .../finalize`).
pub fn method_not_allowed() -> ApiError {
    Status::failure(
        StatusReason::MethodNotAllowed,
        405,
        "the server does not allow this method on the requested resource",
    )
    .with_details(StatusDetails::default())
    .into()
}

/// `Operation cannot be fulfilled on ...: the object has been modified; ...` (409).
pub fn stale_resource_version(resource: &GroupResource, name: &str) -> ApiError {
    ApiError::conflict(
        resource,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// A 500 `Internal error occurred: {why}`, with `why` as its cause (apimachinery's
/// `NewInternalError`).
pub fn internal(why: impl std::fmt::Display) -> ApiError {
    let why = why.to_string();
    Status::failure(
        StatusReason::InternalError,
        500,
        format!("Internal error occurred: {why}"),
    )
    .with_details(StatusDetails {
        causes: vec![kclient_core::StatusCause {
            cause_type: String::new(),
            message: why,
            field: String::new(),
        }],
        ..StatusDetails::default()
    })
    .into()
}

/// A 401 `Unauthorized`.
pub fn unauthorized() -> ApiError {
    ApiError::unauthorized("Unauthorized")
}

/// The JSON body of a `Status`, with the `kind`, `apiVersion` and empty `metadata` the server
/// adds.
pub fn status_json(status: &Status) -> Value {
    let mut value = serde_json::to_value(status).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut value {
        map.insert("kind".into(), json!("Status"));
        map.insert("apiVersion".into(), json!("v1"));
        map.insert("metadata".into(), json!({}));
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_large_matches_the_storage_layer() {
        let err = ApiError::too_large_resource_version(10, 5, 1);
        assert_eq!(
            err.message(),
            "Timeout: Too large resource version: 10, current: 5"
        );
        assert_eq!(err.code(), 504);
        let body = status_json(&err.status);
        assert_eq!(
            body["details"]["causes"][0]["reason"],
            "ResourceVersionTooLarge"
        );
        assert_eq!(body["kind"], "Status");
    }
}
