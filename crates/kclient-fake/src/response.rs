//! HTTP responses, the ground floor every answer is built on: JSON objects and lists
//! (assembled from stored bytes, never re-encoded), JSON `Status` errors, the body type
//! shared by every handler, and the forms a single object is served in ([`ObjectForm`]).
//! An error in protobuf where the request negotiates it is
//! [`crate::negotiate::error_negotiated`]'s.

use std::convert::Infallible;

use bytes::{Bytes, BytesMut};
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use kclient_core::ApiError;
use serde_json::Value;

use crate::errors::status_json;

/// The body of every response.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// The content type of JSON responses.
pub const JSON: &str = "application/json";

/// A body from bytes.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

/// A response with `code` and a JSON body.
pub fn json_bytes(code: StatusCode, bytes: impl Into<Bytes>) -> Response<Body> {
    let mut res = Response::new(full(bytes));
    *res.status_mut() = code;
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    res
}

/// A response with `code` and `value` as JSON.
pub fn json(code: StatusCode, value: &Value) -> Response<Body> {
    json_bytes(code, serde_json::to_vec(value).unwrap_or_default())
}

/// The `Status` response for an error, in JSON.
pub fn error(err: &ApiError) -> Response<Body> {
    let code = StatusCode::from_u16(err.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    with_retry_after(json(code, &status_json(&err.status)), err)
}

/// `err`'s `Retry-After`, if it suggests a delay, on `res`.
pub(crate) fn with_retry_after(mut res: Response<Body>, err: &ApiError) -> Response<Body> {
    if let Some(d) = err.details() {
        // As kube-apiserver's responsewriters: any status that suggests a delay says so.
        if d.retry_after_seconds > 0 {
            if let Ok(v) = HeaderValue::from_str(&d.retry_after_seconds.to_string()) {
                res.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
    }
    res
}

/// A plain-text response (for paths outside the API, as the real server's `404 page not found`).
pub fn text(code: StatusCode, text: &'static str) -> Response<Body> {
    let mut res = Response::new(full(Bytes::from_static(text.as_bytes())));
    *res.status_mut() = code;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}

/// Assembles a list body: `{"kind":…,"apiVersion":…,"metadata":{…},"items":[…]}` from the
/// stored bytes of each item.
pub fn list_body<'a>(
    kind: &str,
    api_version: &str,
    metadata: &Value,
    items: impl Iterator<Item = &'a [u8]>,
    size_hint: usize,
) -> Bytes {
    let mut out = BytesMut::with_capacity(size_hint + 256);
    out.extend_from_slice(b"{\"kind\":");
    out.extend_from_slice(serde_json::to_string(kind).unwrap_or_default().as_bytes());
    out.extend_from_slice(b",\"apiVersion\":");
    out.extend_from_slice(
        serde_json::to_string(api_version)
            .unwrap_or_default()
            .as_bytes(),
    );
    out.extend_from_slice(b",\"metadata\":");
    out.extend_from_slice(
        serde_json::to_string(metadata)
            .unwrap_or_default()
            .as_bytes(),
    );
    out.extend_from_slice(b",\"items\":[");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.extend_from_slice(b",");
        }
        out.extend_from_slice(item);
    }
    out.extend_from_slice(b"]}");
    out.freeze()
}

/// The version of `meta.k8s.io` a conversion produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaVersion {
    /// `meta.k8s.io/v1`.
    V1,
    /// `meta.k8s.io/v1beta1`.
    V1beta1,
}

impl MetaVersion {
    pub(crate) fn parse(version: &str) -> Option<Self> {
        match version {
            "v1" => Some(Self::V1),
            "v1beta1" => Some(Self::V1beta1),
            _ => None,
        }
    }

    /// The `apiVersion` of what the conversion produces.
    pub fn api_version(self) -> &'static str {
        match self {
            Self::V1 => "meta.k8s.io/v1",
            Self::V1beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// What a single object (not a list) is served as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectForm {
    /// The object as it is (or as a Table, by the caller; a `Status` is never converted).
    AsIs,
    /// Its `PartialObjectMetadata` in this version.
    Metadata(MetaVersion),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_bodies_are_valid_json() {
        let items: Vec<&[u8]> = vec![br#"{"a":1}"#, br#"{"b":2}"#];
        let body = list_body(
            "PodList",
            "v1",
            &serde_json::json!({"resourceVersion": "5"}),
            items.into_iter(),
            0,
        );
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["items"][1]["b"], 2);
        assert_eq!(v["metadata"]["resourceVersion"], "5");
        let empty = list_body("X", "v1", &serde_json::json!({}), std::iter::empty(), 0);
        assert_eq!(
            serde_json::from_slice::<Value>(&empty).unwrap()["items"],
            serde_json::json!([])
        );
    }

    #[test]
    fn injected_failures_carry_the_retry_after_asked_for() {
        for (code, seconds) in [(502, 2), (503, 0), (429, 1)] {
            let res = crate::reactors::Failure::status(code)
                .retry_after(seconds)
                .response();
            assert_eq!(res.status().as_u16(), code);
            assert_eq!(
                res.headers()[header::RETRY_AFTER],
                seconds.to_string().as_str()
            );
        }
        let res = crate::reactors::Failure::status(502).response();
        assert!(res.headers().get(header::RETRY_AFTER).is_none());
    }

    #[test]
    fn errors_carry_retry_after() {
        let err = ApiError::too_many_requests("slow down", 3);
        let res = error(&err);
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(res.headers()[header::RETRY_AFTER], "3");
    }
}
