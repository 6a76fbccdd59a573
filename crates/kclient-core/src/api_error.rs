//! [`ApiError`], the typed error for a request the API server refused, and [`ApiStatus`], the
//! predicates (`is_not_found()`, `is_conflict()`, `is_gone()` ...) every kclient error offers.
//!
//! The predicates follow apimachinery's `k8s.io/apimachinery/pkg/api/errors`: a status matches
//! a reason when it carries that reason, or when it carries no reason the API defines and has
//! the reason's HTTP code.
//!
//! ```
//! use kclient_core::{ApiError, ApiStatus, GroupResource};
//!
//! let err = ApiError::not_found(&GroupResource::new("", "pods"), "web");
//! assert!(err.is_not_found());
//! assert_eq!(err.to_string(), r#"pods "web" not found (reason NotFound, code 404)"#);
//! ```

use std::time::Duration;

use crate::field_error::FieldError;
use crate::gvk::GroupResource;
use crate::status::{Status, StatusCause, StatusDetails, StatusReason};

/// A request the API server answered with a failure [`Status`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}")]
pub struct ApiError {
    /// The status the server sent (or, for errors made on the client, the one it would send).
    pub status: Status,
}

impl From<Status> for ApiError {
    fn from(status: Status) -> Self {
        Self { status }
    }
}

impl ApiError {
    /// The reason.
    pub fn reason(&self) -> &StatusReason {
        &self.status.reason
    }

    /// The HTTP status code (0 when not set).
    pub fn code(&self) -> u16 {
        self.status.code
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.status.message
    }

    /// The details, if any.
    pub fn details(&self) -> Option<&StatusDetails> {
        self.status.details.as_ref()
    }

    fn about(
        reason: StatusReason,
        code: u16,
        message: String,
        resource: &GroupResource,
        name: &str,
    ) -> Self {
        Status::failure(reason, code, message)
            .with_details(StatusDetails {
                name: name.to_owned(),
                group: resource.group.clone(),
                kind: resource.resource.clone(),
                ..StatusDetails::default()
            })
            .into()
    }

    /// `{resource} "{name}" not found` (404), as the API server says it.
    pub fn not_found(resource: &GroupResource, name: &str) -> Self {
        let message = format!("{resource} {name:?} not found");
        Self::about(StatusReason::NotFound, 404, message, resource, name)
    }

    /// `{resource} "{name}" already exists` (409).
    pub fn already_exists(resource: &GroupResource, name: &str) -> Self {
        let message = format!("{resource} {name:?} already exists");
        Self::about(StatusReason::AlreadyExists, 409, message, resource, name)
    }

    /// `Operation cannot be fulfilled on {resource} "{name}": {why}` (409).
    pub fn conflict(resource: &GroupResource, name: &str, why: &str) -> Self {
        let message = format!("Operation cannot be fulfilled on {resource} {name:?}: {why}");
        Self::about(StatusReason::Conflict, 409, message, resource, name)
    }

    /// `{resource} "{name}" is invalid: {errors}` (422), as apimachinery's `NewInvalid`: one
    /// error is written bare, several in brackets (an error repeated word for word is written
    /// once), and each becomes a cause.
    pub fn invalid(resource: &GroupResource, name: &str, errors: Vec<FieldError>) -> Self {
        let mut distinct: Vec<String> = Vec::with_capacity(errors.len());
        for e in &errors {
            let full = e.full();
            if !distinct.contains(&full) {
                distinct.push(full);
            }
        }
        let summary = match distinct.as_slice() {
            [] => String::new(),
            [one] => format!(": {one}"),
            many => format!(": [{}]", many.join(", ")),
        };
        let message = format!("{resource} {name:?} is invalid{summary}");
        let mut err = Self::about(StatusReason::Invalid, 422, message, resource, name);
        if let Some(details) = err.status.details.as_mut() {
            details.causes = errors
                .into_iter()
                .map(|e| StatusCause {
                    cause_type: e.cause_type.to_owned(),
                    message: e.body,
                    field: e.field,
                })
                .collect();
        }
        err
    }

    /// `{resource} "{name}" is forbidden: {why}` (403).
    pub fn forbidden(resource: &GroupResource, name: &str, why: &str) -> Self {
        let message = format!("{resource} {name:?} is forbidden: {why}");
        Self::about(StatusReason::Forbidden, 403, message, resource, name)
    }

    /// A 400 Bad Request with `message`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Status::failure(StatusReason::BadRequest, 400, message).into()
    }

    /// A 401 with `message` (the API server says `Unauthorized`).
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Status::failure(StatusReason::Unauthorized, 401, message).into()
    }

    /// A 405 for a verb the resource does not support.
    pub fn method_not_supported(resource: &GroupResource, verb: &str) -> Self {
        let message = format!(
            "{verb} is not supported on resources of kind {:?}",
            resource.to_string()
        );
        Self::about(StatusReason::MethodNotAllowed, 405, message, resource, "")
    }

    /// A 410 with reason `Gone`.
    pub fn gone(message: impl Into<String>) -> Self {
        Status::failure(StatusReason::Gone, 410, message).into()
    }

    /// A 410 with reason `Expired`: a resourceVersion or continue token too old to serve
    /// (`too old resource version: 5 (120)`).
    pub fn resource_expired(message: impl Into<String>) -> Self {
        Status::failure(StatusReason::Expired, 410, message).into()
    }

    /// A 429 asking the client to wait `retry_after_seconds`.
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: i32) -> Self {
        Status::failure(StatusReason::TooManyRequests, 429, message)
            .with_details(StatusDetails {
                retry_after_seconds,
                ..StatusDetails::default()
            })
            .into()
    }

    /// A 504 `Timeout` (`Timeout: {message}`, as apimachinery's `NewTimeoutError` words it),
    /// optionally suggesting when to retry.
    pub fn timeout(message: impl std::fmt::Display, retry_after_seconds: i32) -> Self {
        Status::failure(StatusReason::Timeout, 504, format!("Timeout: {message}"))
            .with_details(StatusDetails {
                retry_after_seconds,
                ..StatusDetails::default()
            })
            .into()
    }

    /// A 500 `InternalError`: `Internal error occurred: {why}`.
    pub fn internal_error(why: &str) -> Self {
        Status::failure(
            StatusReason::InternalError,
            500,
            format!("Internal error occurred: {why}"),
        )
        .into()
    }

    /// A 504 for a list or watch at a resourceVersion the server has not reached yet
    /// (`Timeout: Too large resource version: {requested}, current: {current}`), with the
    /// `ResourceVersionTooLarge` cause, as kube-apiserver sends it.
    pub fn too_large_resource_version(
        requested: u64,
        current: u64,
        retry_after_seconds: i32,
    ) -> Self {
        let mut err = Self::timeout(
            format!("Too large resource version: {requested}, current: {current}"),
            retry_after_seconds,
        );
        if let Some(details) = err.status.details.as_mut() {
            details.causes.push(StatusCause {
                cause_type: RESOURCE_VERSION_TOO_LARGE.to_owned(),
                message: "Too large resource version".to_owned(),
                field: String::new(),
            });
        }
        err
    }
}

/// The status-cause type the API server uses for a resourceVersion newer than it has.
pub const RESOURCE_VERSION_TOO_LARGE: &str = "ResourceVersionTooLarge";

/// How a failed request failed: the API's [`Status`] if the server sent one, and the
/// predicates of apimachinery's `errors` package over it.
///
/// Implemented by [`ApiError`] and by the error types of every kclient client crate, so
/// `err.is_not_found()` works on whatever error a call returned.
pub trait ApiStatus {
    /// The server's status, if the failure came from the server.
    fn api_status(&self) -> Option<&Status>;

    /// Whether the connection to the server was refused (nothing listening). Transport errors
    /// answer this; the default is `false`. The reflector re-watches instead of relisting on it.
    fn is_connection_refused(&self) -> bool {
        false
    }

    /// The reason, or [`StatusReason::Unknown`] when there is no status.
    fn status_reason(&self) -> StatusReason {
        self.api_status()
            .map(|s| s.reason.clone())
            .unwrap_or_default()
    }

    /// The HTTP code of the status, if any.
    fn status_code(&self) -> Option<u16> {
        self.api_status().map(|s| s.code).filter(|c| *c != 0)
    }

    /// `NotFound`, or 404 with no known reason.
    fn is_not_found(&self) -> bool {
        has(self.api_status(), StatusReason::NotFound, 404)
    }

    /// `AlreadyExists` (409).
    fn is_already_exists(&self) -> bool {
        self.api_status()
            .is_some_and(|s| s.reason == StatusReason::AlreadyExists)
    }

    /// `Conflict`, or 409 with no known reason.
    fn is_conflict(&self) -> bool {
        has(self.api_status(), StatusReason::Conflict, 409)
    }

    /// `Gone` or `Expired`, or 410 with no known reason: the resourceVersion or continue
    /// token is too old, and the client must start over with a fresh list.
    fn is_gone(&self) -> bool {
        has(self.api_status(), StatusReason::Gone, 410) || self.is_resource_expired()
    }

    /// `Expired`, or 410 with no known reason.
    fn is_resource_expired(&self) -> bool {
        has(self.api_status(), StatusReason::Expired, 410)
    }

    /// `TooManyRequests`, or 429 with no known reason.
    fn is_too_many_requests(&self) -> bool {
        has(self.api_status(), StatusReason::TooManyRequests, 429)
    }

    /// `Forbidden`, or 403 with no known reason.
    fn is_forbidden(&self) -> bool {
        has(self.api_status(), StatusReason::Forbidden, 403)
    }

    /// `Unauthorized`, or 401 with no known reason.
    fn is_unauthorized(&self) -> bool {
        has(self.api_status(), StatusReason::Unauthorized, 401)
    }

    /// `Invalid`, or 422 with no known reason.
    fn is_invalid(&self) -> bool {
        has(self.api_status(), StatusReason::Invalid, 422)
    }

    /// `BadRequest`, or 400 with no known reason.
    fn is_bad_request(&self) -> bool {
        has(self.api_status(), StatusReason::BadRequest, 400)
    }

    /// `Timeout`, or 504 with no known reason.
    fn is_timeout(&self) -> bool {
        has(self.api_status(), StatusReason::Timeout, 504)
    }

    /// `ServerTimeout` (the server gave up; the client may retry).
    fn is_server_timeout(&self) -> bool {
        self.api_status()
            .is_some_and(|s| s.reason == StatusReason::ServerTimeout)
    }

    /// `InternalError`, or 500 with no known reason.
    fn is_internal_error(&self) -> bool {
        has(self.api_status(), StatusReason::InternalError, 500)
    }

    /// `ServiceUnavailable`, or 503 with no known reason.
    fn is_service_unavailable(&self) -> bool {
        has(self.api_status(), StatusReason::ServiceUnavailable, 503)
    }

    /// `MethodNotAllowed`, or 405 with no known reason.
    fn is_method_not_supported(&self) -> bool {
        has(self.api_status(), StatusReason::MethodNotAllowed, 405)
    }

    /// `NotAcceptable`, or 406 with no known reason: the server cannot answer in any of the
    /// representations the `Accept` header asked for (apimachinery's `IsNotAcceptable`), as
    /// when a server or resource refuses `as=PartialObjectMetadata`.
    fn is_not_acceptable(&self) -> bool {
        has(self.api_status(), StatusReason::NotAcceptable, 406)
    }

    /// A resourceVersion newer than the server has, in every form API servers have said it
    /// (client-go's `isTooLargeResourceVersionError`): a cause of type
    /// `ResourceVersionTooLarge` (whatever the status); or, on a timeout, a cause whose message
    /// is `Too large resource version` (kube-apiserver 1.17.0–1.18.5) or a status message
    /// containing it (before 1.17).
    fn is_too_large_resource_version(&self) -> bool {
        let Some(s) = self.api_status() else {
            return false;
        };
        const MESSAGE: &str = "Too large resource version";
        let causes = || s.details.iter().flat_map(|d| d.causes.iter());
        if causes().any(|c| c.cause_type == RESOURCE_VERSION_TOO_LARGE) {
            return true;
        }
        self.is_timeout() && (causes().any(|c| c.message == MESSAGE) || s.message.contains(MESSAGE))
    }

    /// The delay the server suggests before retrying, as apimachinery's
    /// `SuggestsClientDelay`: `details.retryAfterSeconds` when it is positive, or when the
    /// reason is `ServerTimeout`/`Timeout` (which may suggest 0).
    fn retry_after(&self) -> Option<Duration> {
        let status = self.api_status()?;
        let details = status.details.as_ref()?;
        let seconds = u64::try_from(details.retry_after_seconds).unwrap_or(0);
        match status.reason {
            StatusReason::ServerTimeout | StatusReason::Timeout => {
                Some(Duration::from_secs(seconds))
            }
            _ if seconds > 0 => Some(Duration::from_secs(seconds)),
            _ => None,
        }
    }
}

fn has(status: Option<&Status>, reason: StatusReason, code: u16) -> bool {
    status.is_some_and(|s| s.has_reason_or_code(&reason, code))
}

impl ApiStatus for ApiError {
    fn api_status(&self) -> Option<&Status> {
        Some(&self.status)
    }
}

impl ApiStatus for Status {
    fn api_status(&self) -> Option<&Status> {
        Some(self)
    }
}

/// A boxed error answers as the error inside (a large error such as [`ApiError`] is often
/// returned boxed).
impl<T: ApiStatus + ?Sized> ApiStatus for Box<T> {
    fn api_status(&self) -> Option<&Status> {
        (**self).api_status()
    }

    fn is_connection_refused(&self) -> bool {
        (**self).is_connection_refused()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> GroupResource {
        GroupResource::new("", "pods")
    }

    fn with_code(code: u16) -> Status {
        Status {
            code,
            ..Status::default()
        }
    }

    #[test]
    fn constructors_match_api_server_messages() {
        let deploy = GroupResource::new("apps", "deployments");
        assert_eq!(
            ApiError::not_found(&pods(), "web").message(),
            r#"pods "web" not found"#
        );
        assert_eq!(
            ApiError::already_exists(&deploy, "web").message(),
            r#"deployments.apps "web" already exists"#
        );
        let conflict = ApiError::conflict(
            &pods(),
            "web",
            "the object has been modified; please apply your changes to the latest version and try again",
        );
        assert!(conflict
            .message()
            .starts_with(r#"Operation cannot be fulfilled on pods "web": "#));
        assert_eq!(conflict.code(), 409);
        assert_eq!(conflict.details().unwrap().kind, "pods");
        let invalid = ApiError::invalid(
            &pods(),
            "web",
            vec![FieldError::required("spec.containers", "")],
        );
        assert_eq!(
            invalid.message(),
            r#"pods "web" is invalid: spec.containers: Required value"#
        );
        let cause = &invalid.details().unwrap().causes[0];
        assert_eq!(
            (
                cause.cause_type.as_str(),
                cause.field.as_str(),
                cause.message.as_str()
            ),
            ("FieldValueRequired", "spec.containers", "Required value")
        );
        let two = ApiError::invalid(
            &pods(),
            "web",
            vec![
                FieldError::required("a", ""),
                FieldError::forbidden("b", "no"),
            ],
        );
        assert_eq!(
            two.message(),
            r#"pods "web" is invalid: [a: Required value, b: Forbidden: no]"#
        );
        let repeated = ApiError::invalid(
            &pods(),
            "web",
            vec![
                FieldError::required("a", ""),
                FieldError::required("a", ""),
                FieldError::forbidden("b", "no"),
            ],
        );
        assert_eq!(
            repeated.message(),
            r#"pods "web" is invalid: [a: Required value, b: Forbidden: no]"#
        );
        assert_eq!(repeated.details().unwrap().causes.len(), 3);
        let twice = ApiError::invalid(
            &pods(),
            "web",
            vec![FieldError::required("a", ""), FieldError::required("a", "")],
        );
        assert_eq!(
            twice.message(),
            r#"pods "web" is invalid: a: Required value"#
        );
        assert_eq!(
            ApiError::invalid(&pods(), "web", vec![]).message(),
            r#"pods "web" is invalid"#
        );
        assert_eq!(
            ApiError::internal_error("boom").message(),
            "Internal error occurred: boom"
        );
    }

    #[test]
    fn predicates_by_reason() {
        assert!(ApiError::not_found(&pods(), "x").is_not_found());
        assert!(ApiError::already_exists(&pods(), "x").is_already_exists());
        assert!(
            !ApiError::already_exists(&pods(), "x").is_conflict(),
            "AlreadyExists is a known reason"
        );
        assert!(ApiError::conflict(&pods(), "x", "y").is_conflict());
        assert!(ApiError::gone("gone").is_gone());
        assert!(ApiError::resource_expired("too old resource version: 1 (5)").is_gone());
        assert!(ApiError::resource_expired("x").is_resource_expired());
        assert!(!ApiError::gone("x").is_resource_expired());
        assert!(ApiError::too_many_requests("slow down", 2).is_too_many_requests());
        assert!(ApiError::forbidden(&pods(), "x", "no").is_forbidden());
        assert!(ApiError::unauthorized("Unauthorized").is_unauthorized());
        assert!(ApiError::invalid(&pods(), "x", vec![]).is_invalid());
        assert!(ApiError::bad_request("x").is_bad_request());
        assert!(ApiError::timeout("x", 0).is_timeout());
        assert!(ApiError::internal_error("x").is_internal_error());
        let unsupported = ApiError::method_not_supported(&pods(), "patch");
        assert!(unsupported.is_method_not_supported());
        assert_eq!(
            unsupported.message(),
            r#"patch is not supported on resources of kind "pods""#
        );
        assert!(Status::failure(StatusReason::NotAcceptable, 406, "x").is_not_acceptable());
        assert!(!ApiError::bad_request("x").is_not_acceptable());
        let server_timeout = Status::failure(StatusReason::ServerTimeout, 500, "x");
        assert!(server_timeout.is_server_timeout());
        assert!(
            !server_timeout.is_internal_error(),
            "ServerTimeout is a known reason"
        );
    }

    #[test]
    fn predicates_fall_back_to_codes_without_a_known_reason() {
        assert!(with_code(404).is_not_found());
        assert!(with_code(409).is_conflict());
        assert!(
            !with_code(409).is_already_exists(),
            "apimachinery has no code fallback here"
        );
        assert!(with_code(410).is_gone());
        assert!(with_code(410).is_resource_expired());
        assert!(with_code(429).is_too_many_requests());
        assert!(with_code(403).is_forbidden());
        assert!(with_code(401).is_unauthorized());
        assert!(with_code(422).is_invalid());
        assert!(with_code(504).is_timeout());
        assert!(with_code(503).is_service_unavailable());
        assert!(with_code(406).is_not_acceptable());
        assert!(!with_code(500).is_not_found());
        let no_status: Option<&Status> = None;
        assert!(!has(no_status, StatusReason::NotFound, 404));
    }

    #[test]
    fn too_large_resource_version() {
        let err = ApiError::too_large_resource_version(100, 50, 1);
        assert_eq!(
            err.message(),
            "Timeout: Too large resource version: 100, current: 50"
        );
        assert_eq!(
            err.details().unwrap().causes[0].message,
            "Too large resource version"
        );
        assert_eq!(err.retry_after(), Some(Duration::from_secs(1)));
        assert!(err.is_timeout());
        assert!(err.is_too_large_resource_version());
        let by_message = Status::failure(
            StatusReason::Timeout,
            504,
            "Timeout: Too large resource version: 100, current: 50",
        );
        assert!(by_message.is_too_large_resource_version());
        assert!(!ApiError::timeout("slow", 0).is_too_large_resource_version());
    }

    /// client-go's `TestReflectorFullListIfTooLarge` and `isTooLargeResourceVersionError`:
    /// every form API servers have sent.
    #[test]
    fn too_large_resource_version_in_every_form() {
        let cause = |cause_type: &str, message: &str| StatusDetails {
            causes: vec![StatusCause {
                cause_type: cause_type.into(),
                message: message.into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        // The cause type, with or without a Timeout status.
        for (reason, code) in [
            (StatusReason::Timeout, 504),
            (StatusReason::InternalError, 500),
        ] {
            let s = Status::failure(reason, code, "x")
                .with_details(cause(RESOURCE_VERSION_TOO_LARGE, ""));
            assert!(s.is_too_large_resource_version(), "{s:?}");
        }
        // 1.17.0–1.18.5: a timeout whose cause's message says it.
        let old = Status::failure(StatusReason::Timeout, 504, "Timeout: x")
            .with_details(cause("", "Too large resource version"));
        assert!(old.is_too_large_resource_version());
        // The message alone counts only on a timeout.
        let not_timeout = Status::failure(StatusReason::InternalError, 500, "x")
            .with_details(cause("", "Too large resource version"));
        assert!(!not_timeout.is_too_large_resource_version());
        let not_timeout = Status::failure(
            StatusReason::InternalError,
            500,
            "Too large resource version",
        );
        assert!(!not_timeout.is_too_large_resource_version());
    }

    #[test]
    fn retry_after_follows_suggests_client_delay() {
        assert_eq!(
            ApiError::too_many_requests("x", 3).retry_after(),
            Some(Duration::from_secs(3))
        );
        assert_eq!(ApiError::too_many_requests("x", 0).retry_after(), None);
        assert_eq!(
            ApiError::timeout("x", 0).retry_after(),
            Some(Duration::ZERO)
        );
        assert_eq!(
            ApiError::timeout("x", -5).retry_after(),
            Some(Duration::ZERO)
        );
        assert_eq!(ApiError::not_found(&pods(), "x").retry_after(), None);
        assert_eq!(ApiError::bad_request("x").retry_after(), None);
    }
}
