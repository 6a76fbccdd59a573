//! Admission webhooks' wire format (`admission.k8s.io/v1` `AdmissionReview`): the request
//! kube-apiserver sends a validating or mutating webhook, and the response it expects —
//! shared by kclient-webhook (which serves webhooks) and kclient-fake (which calls them).
//!
//! ```
//! use kclient_core::admission::{AdmissionResponse, AdmissionReview};
//! use serde_json::json;
//!
//! let review: AdmissionReview = serde_json::from_value(json!({
//!     "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
//!     "request": {
//!         "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
//!         "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
//!         "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
//!         "namespace": "default", "name": "web", "operation": "CREATE",
//!         "userInfo": {"username": "admin"},
//!         "object": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}},
//!     },
//! })).unwrap();
//! let request = review.request.unwrap();
//! let response = AdmissionResponse::deny(&request.uid, "replicas must be odd").into_review();
//! assert_eq!(serde_json::to_value(&response).unwrap()["response"]["status"]["code"], 403);
//! ```

use std::collections::BTreeMap;

use base64::Engine as _;
use k8s_openapi::api::authentication::v1::UserInfo;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::gvk::{GroupVersionKind, GroupVersionResource};
use crate::status::{Status, StatusReason};

/// The `apiVersion` of the reviews kube-apiserver 1.16+ sends (and kclient speaks).
pub const ADMISSION_REVIEW_API_VERSION: &str = "admission.k8s.io/v1";
/// The review's `kind`.
pub const ADMISSION_REVIEW_KIND: &str = "AdmissionReview";
/// The one patch type a mutating webhook may answer with.
pub const JSON_PATCH_TYPE: &str = "JSONPatch";

/// An `AdmissionReview`: a [`request`](Self::request) from the API server, or a
/// [`response`](Self::response) to it. `T` is what the request's objects decode into.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionReview<T = Value> {
    /// `admission.k8s.io/v1`.
    pub api_version: String,
    /// `AdmissionReview`.
    pub kind: String,
    /// What is being admitted (set by the API server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<AdmissionRequest<T>>,
    /// The verdict (set by the webhook).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<AdmissionResponse>,
}

/// The operation being admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// A create.
    Create,
    /// An update (a patch or an apply too).
    Update,
    /// A delete.
    Delete,
    /// A connect (`pods/exec`, `pods/portforward` …).
    Connect,
}

impl Operation {
    /// The name in the wire format and in webhook rules (`CREATE` …).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// What the API server asks a webhook about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest<T = Value> {
    /// Identifies this call; the response carries it back.
    pub uid: String,
    /// The kind of the object, in the version the webhook asked for.
    pub kind: GroupVersionKind,
    /// The resource being written.
    pub resource: GroupVersionResource,
    /// The subresource (`status`, `scale`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    /// The kind as the client wrote it (with `matchPolicy: Equivalent`, another version's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_kind: Option<GroupVersionKind>,
    /// The resource as the client wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_resource: Option<GroupVersionResource>,
    /// The subresource as the client wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_sub_resource: Option<String>,
    /// The object's name (empty on a create with `generateName`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Its namespace (empty for cluster-scoped objects).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The operation.
    pub operation: Operation,
    /// Who asks.
    #[serde(default)]
    pub user_info: UserInfo,
    /// The new object (`CREATE`, `UPDATE`; the options of a `CONNECT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<T>,
    /// The old object (`UPDATE`, `DELETE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_object: Option<T>,
    /// Whether nothing will be stored (`dryRun`): a webhook with side effects must not have
    /// any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// The operation's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

impl<T> AdmissionRequest<T> {
    /// Whether this is a dry run.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run == Some(true)
    }
}

/// A webhook's verdict.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    /// The request's uid, echoed.
    pub uid: String,
    /// Whether the request may go on.
    pub allowed: bool,
    /// Why not (or a success `Status`); its message is what the client sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// A JSON patch (RFC 6902) of the object, base64-encoded (mutating webhooks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// `JSONPatch` when there is a patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// Annotations for the audit log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_annotations: Option<BTreeMap<String, String>>,
    /// Warnings for the client (`Warning` headers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

impl AdmissionResponse {
    /// Allows request `uid` (controller-runtime's `Allowed("")`: a `200` status).
    pub fn allow(uid: &str) -> Self {
        Self {
            uid: uid.to_owned(),
            allowed: true,
            status: Some(Status {
                code: 200,
                ..Status::default()
            }),
            ..Self::default()
        }
    }

    /// Denies request `uid` with `message` (controller-runtime's `Denied`: `403 Forbidden`);
    /// the client sees `admission webhook "<name>" denied the request: <message>`.
    pub fn deny(uid: &str, message: impl Into<String>) -> Self {
        Self::deny_with(
            uid,
            Status {
                status: Status::FAILURE.into(),
                message: message.into(),
                reason: StatusReason::Forbidden,
                code: 403,
                details: None,
            },
        )
    }

    /// Denies request `uid` with `status` (its code, reason, message and causes reach the
    /// client as the webhook wrote them).
    pub fn deny_with(uid: &str, status: Status) -> Self {
        Self {
            uid: uid.to_owned(),
            allowed: false,
            status: Some(status),
            ..Self::default()
        }
    }

    /// This response with `patch` (a JSON patch) to apply to the object; an empty patch is
    /// left out.
    pub fn with_patch(mut self, patch: &crate::patch::JsonPatch) -> Self {
        if patch.0.is_empty() {
            return self;
        }
        let bytes = serde_json::to_vec(patch).unwrap_or_default();
        self.patch = Some(base64::engine::general_purpose::STANDARD.encode(bytes));
        self.patch_type = Some(JSON_PATCH_TYPE.to_owned());
        self
    }

    /// The patch, decoded: `None` without one; an error for one that is not base64 JSON.
    pub fn decoded_patch(&self) -> Option<Result<Value, String>> {
        let encoded = self.patch.as_ref()?;
        Some(
            base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| format!("the patch is not base64: {e}"))
                .and_then(|bytes| {
                    serde_json::from_slice(&bytes)
                        .map_err(|e| format!("the patch is not JSON: {e}"))
                }),
        )
    }

    /// This response with `warnings` for the client (none is left out).
    pub fn with_warnings(mut self, warnings: Vec<String>) -> Self {
        if !warnings.is_empty() {
            self.warnings = Some(warnings);
        }
        self
    }

    /// The response as a whole `AdmissionReview` (what the webhook answers).
    pub fn into_review(self) -> AdmissionReview<Value> {
        AdmissionReview {
            api_version: ADMISSION_REVIEW_API_VERSION.to_owned(),
            kind: ADMISSION_REVIEW_KIND.to_owned(),
            request: None,
            response: Some(self),
        }
    }
}
