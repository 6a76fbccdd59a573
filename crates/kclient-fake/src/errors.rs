//! The failures the fake server answers with, as kube-apiserver words them, on top of
//! [`kclient_core::ApiError`]'s constructors: field errors and `Invalid` statuses,
//! `Too large resource version`, the generic `NotFound` for unknown paths, and the JSON
//! rendering of a `Status` (with `kind`, `apiVersion` and `metadata`).

use kclient_core::{ApiError, GroupResource, Status, StatusCause, StatusDetails, StatusReason};
use serde_json::{json, Value};

/// One validation failure of a field (apimachinery's `field.Error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The cause type (`FieldValueRequired`, `FieldValueInvalid`, `FieldValueForbidden`, ...).
    pub cause_type: &'static str,
    /// The field path, such as `metadata.name`.
    pub field: String,
    /// The message without the field (`Required value: name or generateName is required`).
    pub body: String,
}

impl FieldError {
    /// `Required value[: detail]`.
    pub fn required(field: &str, detail: &str) -> Self {
        Self {
            cause_type: "FieldValueRequired",
            field: field.into(),
            body: with_detail("Required value".into(), detail),
        }
    }

    /// `Invalid value: "value": detail`.
    pub fn invalid(field: &str, value: &Value, detail: &str) -> Self {
        let shown = match value {
            Value::String(s) => format!("{s:?}"),
            other => other.to_string(),
        };
        Self {
            cause_type: "FieldValueInvalid",
            field: field.into(),
            body: with_detail(format!("Invalid value: {shown}"), detail),
        }
    }

    /// `Forbidden: detail`.
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self {
            cause_type: "FieldValueForbidden",
            field: field.into(),
            body: with_detail("Forbidden".into(), detail),
        }
    }

    /// `Unsupported value: "value": supported values: "a", "b"`.
    pub fn not_supported(field: &str, value: &str, supported: &[&str]) -> Self {
        let list = supported
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        Self {
            cause_type: "FieldValueNotSupported",
            field: field.into(),
            body: format!("Unsupported value: {value:?}: supported values: {list}"),
        }
    }

    fn full(&self) -> String {
        if self.field.is_empty() {
            self.body.clone()
        } else {
            format!("{}: {}", self.field, self.body)
        }
    }
}

fn with_detail(head: String, detail: &str) -> String {
    if detail.is_empty() {
        head
    } else {
        format!("{head}: {detail}")
    }
}

/// `{Kind.group} "{name}" is invalid: {errors}` (422), as `errors.NewInvalid`: one error is
/// written bare, several in brackets.
pub fn invalid(qualified_kind: &GroupResource, name: &str, errors: Vec<FieldError>) -> ApiError {
    let summary = match errors.as_slice() {
        [] => String::new(),
        [one] => format!(": {}", one.full()),
        many => format!(
            ": [{}]",
            many.iter()
                .map(FieldError::full)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let message = format!("{qualified_kind} {name:?} is invalid{summary}");
    let causes = errors
        .into_iter()
        .map(|e| StatusCause {
            cause_type: e.cause_type.into(),
            message: e.body,
            field: e.field,
        })
        .collect();
    Status::failure(StatusReason::Invalid, 422, message)
        .with_details(StatusDetails {
            name: name.into(),
            group: qualified_kind.group.clone(),
            kind: qualified_kind.resource.clone(),
            causes,
            ..StatusDetails::default()
        })
        .into()
}

/// `Timeout: Too large resource version: {requested}, current: {current}` (504), with the
/// `ResourceVersionTooLarge` cause, as the storage layer's `NewTooLargeResourceVersionError`.
pub fn too_large_resource_version(requested: u64, current: u64) -> ApiError {
    Status::failure(
        StatusReason::Timeout,
        504,
        format!("Timeout: Too large resource version: {requested}, current: {current}"),
    )
    .with_details(StatusDetails {
        causes: vec![StatusCause {
            cause_type: kclient_core::RESOURCE_VERSION_TOO_LARGE.into(),
            message: "Too large resource version".into(),
            field: String::new(),
        }],
        retry_after_seconds: 1,
        ..StatusDetails::default()
    })
    .into()
}

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

/// A 405 for a verb the resource does not serve: `{verb} is not supported on resources of
/// kind "{resource}"` (core's constructor quotes the struct's debug form instead).
pub fn method_not_supported(resource: &GroupResource, verb: &str) -> ApiError {
    Status::failure(
        StatusReason::MethodNotAllowed,
        405,
        format!(
            "{verb} is not supported on resources of kind {:?}",
            resource.to_string()
        ),
    )
    .with_details(StatusDetails {
        group: resource.group.clone(),
        kind: resource.resource.clone(),
        ..StatusDetails::default()
    })
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
    fn invalid_formats_like_new_invalid() {
        let kind = GroupResource::new("", "Pod");
        let one = invalid(
            &kind,
            "",
            vec![FieldError::required(
                "metadata.name",
                "name or generateName is required",
            )],
        );
        assert_eq!(
            one.message(),
            r#"Pod "" is invalid: metadata.name: Required value: name or generateName is required"#
        );
        let two = invalid(
            &GroupResource::new("apps", "Deployment"),
            "d",
            vec![
                FieldError::required("spec.a", ""),
                FieldError::invalid("spec.b", &json!("X"), "bad"),
            ],
        );
        assert_eq!(
            two.message(),
            r#"Deployment.apps "d" is invalid: [spec.a: Required value, spec.b: Invalid value: "X": bad]"#
        );
        assert_eq!(two.details().unwrap().kind, "Deployment");
    }

    #[test]
    fn too_large_matches_the_storage_layer() {
        let err = too_large_resource_version(10, 5);
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
