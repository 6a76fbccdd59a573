//! [`Response`]: a complete successful response, and the decoding of failed ones into typed
//! errors (a `Status` body becomes [`Error::Api`], anything else [`Error::HttpStatus`]).

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use kclient_core::{snippet, ApiError, DeleteResponse, Status};
use serde::de::DeserializeOwned;

use crate::error::{Error, DECODE_SNIPPET_LEN};
use crate::warnings::Warning;

/// A successful (2xx) response with its whole body (client-go's `rest.Result`).
#[derive(Debug, Clone)]
pub struct Response {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) warnings: Vec<Warning>,
}

impl Response {
    /// The status code.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// Whether the server created something (201), as client-go's `WasCreated`.
    pub fn was_created(&self) -> bool {
        self.status == StatusCode::CREATED
    }

    /// The response headers.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The `Content-Type`, if any.
    pub fn content_type(&self) -> Option<&str> {
        self.headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
    }

    /// The `Warning` headers the server sent (they were also given to the warning handler).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The body.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The body, by value.
    pub fn into_body(self) -> Bytes {
        self.body
    }

    /// Decodes the body as JSON.
    pub fn json<K: DeserializeOwned>(&self) -> Result<K, Error> {
        decode_json(&self.body)
    }

    /// Whether the body is Kubernetes protobuf (by its `Content-Type`).
    pub fn is_protobuf(&self) -> bool {
        crate::protobuf::is_protobuf(self.content_type(), &self.body)
    }

    /// Decodes the body by its `Content-Type`: protobuf with `K`'s codec (kclient-protobuf's
    /// registry; an [`Error::ProtobufDecode`] for a type without one), JSON otherwise.
    pub fn decode<K: DeserializeOwned + 'static>(&self) -> Result<K, Error> {
        if self.is_protobuf() {
            crate::protobuf::decode_object(&self.body)
        } else {
            decode_json(&self.body)
        }
    }

    /// Decodes the body of a successful delete (or delete-collection): a `Status` when it is
    /// one — kind `Status` in the core or `meta.k8s.io` `v1`, or with no apiVersion — and the
    /// object (or list) `T` otherwise, so that a custom resource whose kind happens to be
    /// `Status` stays an object.
    ///
    /// ```
    /// # fn demo(response: kclient_rest::Response) -> Result<(), kclient_rest::Error> {
    /// use k8s_openapi::api::core::v1::Pod;
    /// match response.delete_response::<Pod>()? {
    ///     kclient_core::DeleteResponse::Object(pod) => println!("terminating: {:?}", pod.metadata.name),
    ///     kclient_core::DeleteResponse::Status(status) => println!("gone: {}", status.status),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn delete_response<T: DeserializeOwned>(&self) -> Result<DeleteResponse<T>, Error> {
        #[derive(serde::Deserialize)]
        struct TypeMeta {
            #[serde(default)]
            kind: Option<String>,
            #[serde(default, rename = "apiVersion")]
            api_version: Option<String>,
        }
        let meta: TypeMeta = decode_json(&self.body)?;
        let is_status = meta.kind.as_deref() == Some("Status")
            && matches!(
                meta.api_version.as_deref(),
                None | Some("" | "v1" | "meta.k8s.io/v1")
            );
        if is_status {
            decode_json(&self.body).map(DeleteResponse::Status)
        } else {
            decode_json(&self.body).map(DeleteResponse::Object)
        }
    }
}

/// Decodes `body` as `K`, with a typed error that quotes the start of the body.
pub(crate) fn decode_json<K: DeserializeOwned>(body: &[u8]) -> Result<K, Error> {
    serde_json::from_slice(body).map_err(|source| decode_error::<K>(body, source))
}

/// A failure to decode JSON as a `K`, quoting the start of the bytes it was about.
pub(crate) fn decode_error<K>(body: &[u8], source: serde_json::Error) -> Error {
    Error::Decode {
        what: std::any::type_name::<K>(),
        snippet: snippet(body, DECODE_SNIPPET_LEN),
        source,
    }
}

/// The error for a non-2xx response: the `Status` it carries (client-go's `Result.Error`), or an
/// unstructured error with the code and the start of the body.
pub(crate) fn error_from_response(status: StatusCode, body: &[u8]) -> Error {
    let failure = if body.starts_with(&kclient_protobuf::envelope::MAGIC) {
        kclient_protobuf::core_types::decode_failure_status(body)
    } else {
        Status::from_failure_body(body)
    };
    if let Some(mut s) = failure {
        if s.code == 0 {
            s.code = status.as_u16();
        }
        return Error::Api(Box::new(ApiError::from(s)));
    }
    Error::unstructured(status.as_u16(), body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kclient_core::ApiStatus;

    #[test]
    fn status_bodies_become_api_errors() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"pods"},"code":404}"#;
        let err = error_from_response(StatusCode::NOT_FOUND, body);
        assert!(matches!(err, Error::Api(_)), "{err:?}");
        assert!(err.is_not_found());
        assert_eq!(
            err.to_string(),
            r#"pods "x" not found (reason NotFound, code 404)"#
        );
    }

    #[test]
    fn protobuf_status_bodies_become_api_errors() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
        let status = meta::Status {
            status: Some("Failure".into()),
            message: Some("pods \"x\" not found".into()),
            reason: Some("NotFound".into()),
            code: Some(404),
            ..Default::default()
        };
        let body = kclient_protobuf::registry::codec::<meta::Status>()
            .unwrap()
            .encode_body(&status);
        let err = error_from_response(StatusCode::NOT_FOUND, &body);
        assert!(err.is_not_found(), "{err:?}");
        // A protobuf body that is not a failure Status is an unstructured error.
        let err = error_from_response(StatusCode::BAD_GATEWAY, &body[..body.len() / 2]);
        assert!(
            matches!(err, Error::HttpStatus { code: 502, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn a_status_without_code_takes_the_http_code() {
        let err = error_from_response(
            StatusCode::CONFLICT,
            br#"{"kind":"Status","status":"Failure","message":"m"}"#,
        );
        assert!(err.is_conflict());
    }

    #[test]
    fn other_bodies_become_http_status_errors() {
        for body in [
            &b"<html><body>502 Bad Gateway</body></html>"[..],
            b"",
            b"{\"kind\":\"Pod\"}",
            b"{\"kind\":\"Status\",\"status\":\"Success\"}",
            b"\xff\xfe\x00",
        ] {
            let err = error_from_response(StatusCode::BAD_GATEWAY, body);
            assert!(
                matches!(err, Error::HttpStatus { code: 502, .. }),
                "{err:?}"
            );
        }
    }

    fn ok(body: &[u8]) -> Response {
        Response {
            status: StatusCode::OK,
            headers: HeaderMap::new(),
            body: Bytes::copy_from_slice(body),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn delete_responses_are_statuses_or_objects() {
        for status in [
            &br#"{"kind":"Status","apiVersion":"v1","status":"Success","details":{"name":"a"}}"#[..],
            br#"{"kind":"Status","apiVersion":"meta.k8s.io/v1","status":"Success"}"#,
            br#"{"kind":"Status","status":"Success"}"#,
        ] {
            let decoded = ok(status).delete_response::<serde_json::Value>().unwrap();
            assert!(
                decoded.status().is_some_and(Status::is_success),
                "{decoded:?}"
            );
        }
        for object in [
            &br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}"#[..],
            // A custom resource whose kind is Status is an object.
            br#"{"kind":"Status","apiVersion":"example.com/v1","metadata":{"name":"s"}}"#,
        ] {
            let decoded = ok(object).delete_response::<serde_json::Value>().unwrap();
            assert!(decoded.object().unwrap()["metadata"]["name"].is_string());
        }
        for bad in [&b"not json"[..], br#"{"kind":"Status","code":"x"}"#] {
            assert!(matches!(
                ok(bad).delete_response::<serde_json::Value>(),
                Err(Error::Decode { .. })
            ));
        }
    }

    #[test]
    fn decode_errors_quote_the_body() {
        let err = decode_json::<Vec<u32>>(b"{\"not\": \"a list\"}").unwrap_err();
        match &err {
            Error::Decode { snippet, what, .. } => {
                assert!(snippet.contains("not"));
                assert!(what.contains("Vec"));
            }
            other => panic!("{other:?}"),
        }
        assert!(std::error::Error::source(&err).is_some());
    }
}
