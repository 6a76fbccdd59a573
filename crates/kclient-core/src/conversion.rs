//! CRD conversion webhooks' wire format (`apiextensions.k8s.io/v1` `ConversionReview`): the
//! objects kube-apiserver asks a webhook to convert to another version of a custom resource,
//! and the answer — shared by kclient-webhook and kclient-fake.
//!
//! ```
//! use kclient_core::conversion::{ConversionResponse, ConversionReview};
//! use serde_json::json;
//!
//! let review: ConversionReview = serde_json::from_value(json!({
//!     "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
//!     "request": {"uid": "1", "desiredAPIVersion": "example.com/v2", "objects": []},
//! })).unwrap();
//! let request = review.request.unwrap();
//! let answer = ConversionResponse::success(&request.uid, vec![]).into_review();
//! assert_eq!(serde_json::to_value(&answer).unwrap()["response"]["result"]["status"], "Success");
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::status::Status;

/// The `apiVersion` of the reviews kclient speaks (`conversionReviewVersions: ["v1"]`).
pub const CONVERSION_REVIEW_API_VERSION: &str = "apiextensions.k8s.io/v1";
/// The review's `kind`.
pub const CONVERSION_REVIEW_KIND: &str = "ConversionReview";

/// A `ConversionReview`: a [`request`](Self::request) from the API server or a
/// [`response`](Self::response) to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversionReview {
    /// `apiextensions.k8s.io/v1`.
    pub api_version: String,
    /// `ConversionReview`.
    pub kind: String,
    /// What to convert (set by the API server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<ConversionRequest>,
    /// The converted objects (set by the webhook).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ConversionResponse>,
}

/// Objects to convert, all to one version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversionRequest {
    /// Identifies this call; the response carries it back.
    pub uid: String,
    /// The `apiVersion` to convert to (`example.com/v2`).
    #[serde(rename = "desiredAPIVersion")]
    pub desired_api_version: String,
    /// The objects, each in its own version.
    #[serde(default)]
    pub objects: Vec<Value>,
}

/// The converted objects, or why they could not be.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversionResponse {
    /// The request's uid, echoed.
    pub uid: String,
    /// The objects in the desired version, in the request's order (all of them, or none).
    #[serde(default)]
    pub converted_objects: Vec<Value>,
    /// `Success`, or a `Failure` whose message says why.
    pub result: Status,
}

impl ConversionResponse {
    /// Every object converted.
    pub fn success(uid: &str, converted_objects: Vec<Value>) -> Self {
        Self {
            uid: uid.to_owned(),
            converted_objects,
            result: Status {
                status: Status::SUCCESS.into(),
                ..Status::default()
            },
        }
    }

    /// The conversion failed (for any object: the request fails whole).
    pub fn failure(uid: &str, message: impl Into<String>) -> Self {
        Self {
            uid: uid.to_owned(),
            converted_objects: Vec::new(),
            result: Status {
                status: Status::FAILURE.into(),
                message: message.into(),
                ..Status::default()
            },
        }
    }

    /// The response as a whole `ConversionReview`.
    pub fn into_review(self) -> ConversionReview {
        ConversionReview {
            api_version: CONVERSION_REVIEW_API_VERSION.to_owned(),
            kind: CONVERSION_REVIEW_KIND.to_owned(),
            request: None,
            response: Some(self),
        }
    }
}
