//! [`Response`]: a complete successful response, and the decoding of failed ones into typed
//! errors (a `Status` body becomes [`Error::Api`], anything else [`Error::HttpStatus`]).

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use kclient_core::{snippet, ApiError, Status};
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
}

/// Decodes `body` as `K`, with a typed error that quotes the start of the body.
pub(crate) fn decode_json<K: DeserializeOwned>(body: &[u8]) -> Result<K, Error> {
    serde_json::from_slice(body).map_err(|source| Error::Decode {
        what: std::any::type_name::<K>(),
        snippet: snippet(body, DECODE_SNIPPET_LEN),
        source,
    })
}

/// The error for a non-2xx response: the `Status` it carries (client-go's `Result.Error`), or an
/// unstructured error with the code and the start of the body.
pub(crate) fn error_from_response(status: StatusCode, body: &[u8]) -> Error {
    if let Some(mut s) = Status::from_failure_body(body) {
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
