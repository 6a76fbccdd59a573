//! The scenarios' view of an API server: JSON in, JSON out, over kclient-rest's
//! [`RestClient`]. Every request of the suite goes through kclient-rest (its transport, auth,
//! retries and watch decoding), so the suite tests it too; what a scenario sees is reduced to
//! what is observable on the wire (status code, `Status` reason, event types and objects).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use futures::StreamExt;
use http::{Method, StatusCode};
use kclient_core::{Status, WatchEvent as CoreWatchEvent};
use kclient_rest::{Error, RestClient};
use serde_json::{json, Value};

/// How long one ordinary request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A JSON response: status and body (`Value::Null` when the body is empty or not JSON). A
/// failure's body is the server's `Status`.
#[derive(Debug, Clone)]
pub struct Response {
    /// The HTTP status.
    pub status: StatusCode,
    /// The body, parsed.
    pub body: Value,
    /// The `Content-Type` of a successful response (`None` for a failure `Status`).
    pub content_type: Option<String>,
    /// The `Warning` headers of a successful response, as sent (`299 - "..."`).
    pub warnings: Vec<String>,
}

impl Response {
    /// The `reason` of a `Status` body (`NotFound`, `Conflict`, ...), if it is one.
    pub fn reason(&self) -> Option<&str> {
        (self.body["kind"] == "Status")
            .then(|| self.body["reason"].as_str())
            .flatten()
    }

    /// Fails unless the status is `expected`, showing the body.
    pub fn expect(self, expected: StatusCode) -> Result<Response> {
        if self.status != expected {
            bail!(
                "expected HTTP {expected}, got {}: {}",
                self.status,
                self.body
            );
        }
        Ok(self)
    }

    fn from_status(status: &Status) -> Result<Response> {
        let mut body = serde_json::to_value(status)?;
        body["kind"] = json!("Status");
        body["apiVersion"] = json!("v1");
        Ok(Response {
            status: StatusCode::from_u16(status.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            body,
            content_type: None,
            warnings: Vec::new(),
        })
    }
}

/// A client for one server with one identity, over kclient-rest.
#[derive(Debug, Clone)]
pub struct ApiClient {
    rest: RestClient,
}

/// Splits `path?query` into the path and the decoded query pairs (the scenarios write URLs as
/// they appear on the wire; kclient-rest encodes the parameters itself).
fn split_path(path_and_query: &str) -> (&str, Vec<(String, String)>) {
    match path_and_query.split_once('?') {
        Some((path, query)) => (
            path,
            form_urlencoded::parse(query.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        ),
        None => (path_and_query, Vec::new()),
    }
}

impl ApiClient {
    pub(crate) fn new(rest: RestClient) -> ApiClient {
        ApiClient { rest }
    }

    /// The underlying kclient-rest client.
    pub fn rest(&self) -> &RestClient {
        &self.rest
    }

    fn build(
        &self,
        method: Method,
        path_and_query: &str,
        body: Option<(&str, Vec<u8>)>,
        accept: Option<&str>,
    ) -> Result<kclient_rest::request::Request> {
        let (path, params) = split_path(path_and_query);
        let mut request = self.rest.request(method).abs_path(path).params(params);
        if let Some(accept) = accept {
            request = request.header("Accept", accept);
        }
        if let Some((content_type, bytes)) = body {
            request = request.header("Content-Type", content_type).body(bytes);
        }
        Ok(request)
    }

    /// Sends a request and reads the whole JSON response; a failure `Status` from the server
    /// is a [`Response`] too, other failures are errors.
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, &Value)>,
    ) -> Result<Response> {
        self.send(method, path, json_body(body)?, None).await
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
        accept: Option<&str>,
    ) -> Result<Response> {
        let request = self
            .build(method.clone(), path, body, accept)?
            .timeout(REQUEST_TIMEOUT);
        match request.send().await {
            Ok(response) => Ok(Response {
                content_type: response
                    .headers()
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string),
                warnings: response
                    .headers()
                    .get_all(http::header::WARNING)
                    .iter()
                    .filter_map(|v| v.to_str().ok())
                    .map(str::to_string)
                    .collect(),
                status: response.status(),
                body: serde_json::from_slice(response.body()).unwrap_or(Value::Null),
            }),
            Err(Error::Api(api)) => Response::from_status(&api.status),
            Err(Error::HttpStatus { code, snippet, .. }) => Ok(Response {
                status: StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                body: Value::String(snippet),
                content_type: None,
                warnings: Vec::new(),
            }),
            Err(other) => Err(anyhow::Error::new(other).context(format!("{method} {path}"))),
        }
    }

    /// `GET path`.
    pub async fn get(&self, path: &str) -> Result<Response> {
        self.request(Method::GET, path, None).await
    }

    /// `GET path` with this `Accept` header instead of kclient-rest's default (for
    /// aggregated discovery, say).
    pub async fn get_accepting(&self, path: &str, accept: &str) -> Result<Response> {
        self.send(Method::GET, path, None, Some(accept)).await
    }

    /// `POST path` with a JSON body.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Response> {
        self.request(Method::POST, path, Some(("application/json", body)))
            .await
    }

    /// `PUT path` with a JSON body.
    pub async fn put(&self, path: &str, body: &Value) -> Result<Response> {
        self.request(Method::PUT, path, Some(("application/json", body)))
            .await
    }

    /// `PATCH path` with a body of the given patch content type.
    pub async fn patch(&self, path: &str, content_type: &str, body: &Value) -> Result<Response> {
        self.request(Method::PATCH, path, Some((content_type, body)))
            .await
    }

    /// `PATCH path` with these bytes as the body, as they are (for bodies a [`Value`] cannot
    /// hold: malformed JSON, escapes a serializer would not write).
    pub async fn patch_bytes(
        &self,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> Result<Response> {
        self.send(
            Method::PATCH,
            path,
            Some((content_type, body.to_vec())),
            None,
        )
        .await
    }

    /// `DELETE path`.
    pub async fn delete(&self, path: &str) -> Result<Response> {
        self.request(Method::DELETE, path, None).await
    }

    /// Sends a request with this `Accept` header (and a body of the given content type).
    pub async fn request_accepting(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, &Value)>,
        accept: &str,
    ) -> Result<Response> {
        self.send(method, path, json_body(body)?, Some(accept))
            .await
    }

    /// Opens a watch (`path` must carry `watch=1`). A failure `Status` before the stream
    /// starts is returned as the error response instead of a stream.
    pub async fn watch(&self, path: &str) -> Result<std::result::Result<WatchStream, Response>> {
        self.open_watch(path, None).await
    }

    /// [`watch`](Self::watch) with this `Accept` header (`as=PartialObjectMetadata`, say).
    pub async fn watch_accepting(
        &self,
        path: &str,
        accept: &str,
    ) -> Result<std::result::Result<WatchStream, Response>> {
        self.open_watch(path, Some(accept)).await
    }

    async fn open_watch(
        &self,
        path: &str,
        accept: Option<&str>,
    ) -> Result<std::result::Result<WatchStream, Response>> {
        let request = self
            .build(Method::GET, path, None, accept)?
            .timeout(REQUEST_TIMEOUT);
        match request.watch::<Value>().await {
            Ok(events) => Ok(Ok(WatchStream { events })),
            Err(Error::Api(api)) => Ok(Err(Response::from_status(&api.status)?)),
            Err(other) => Err(anyhow::Error::new(other).context(format!("GET {path}"))),
        }
    }
}

/// A JSON body, serialized.
fn json_body<'a>(body: Option<(&'a str, &Value)>) -> Result<Option<(&'a str, Vec<u8>)>> {
    body.map(|(content_type, value)| Ok((content_type, serde_json::to_vec(value)?)))
        .transpose()
}

impl ApiClient {
    /// Opens a watch that must be accepted: a refusal is an error showing the `Status`.
    pub async fn watch_accepted(&self, path: &str) -> Result<WatchStream> {
        match self.watch(path).await? {
            Ok(stream) => Ok(stream),
            Err(response) => bail!(
                "the watch {path} was refused: {} {}",
                response.status,
                response.body
            ),
        }
    }
}

/// One watch event: `type` and `object`, as on the wire.
#[derive(Debug, Clone)]
pub struct WatchEvent {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub event_type: String,
    /// The object (a `Status` for `ERROR`; for `BOOKMARK`, only the resourceVersion and
    /// annotations, which is all a bookmark carries).
    pub object: Value,
}

impl WatchEvent {
    /// `metadata.name` of the object.
    pub fn name(&self) -> &str {
        self.object["metadata"]["name"].as_str().unwrap_or_default()
    }

    fn from_core(event: CoreWatchEvent<Value>) -> Result<WatchEvent> {
        let (event_type, object) = match event {
            CoreWatchEvent::Added(o) => ("ADDED", o),
            CoreWatchEvent::Modified(o) => ("MODIFIED", o),
            CoreWatchEvent::Deleted(o) => ("DELETED", o),
            CoreWatchEvent::Bookmark(b) => (
                "BOOKMARK",
                json!({"metadata": {
                    "resourceVersion": b.resource_version,
                    "annotations": b.annotations,
                }}),
            ),
            CoreWatchEvent::Error(status) => ("ERROR", Response::from_status(&status)?.body),
        };
        Ok(WatchEvent {
            event_type: event_type.to_string(),
            object,
        })
    }
}

/// An open watch, decoded by kclient-rest.
pub struct WatchStream {
    events: kclient_core::WatchStream<Value, Error>,
}

impl std::fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchStream").finish_non_exhaustive()
    }
}

impl WatchStream {
    /// The next event, `None` when the server closed the stream; fails after `limit` with no
    /// event.
    pub async fn next(&mut self, limit: Duration) -> Result<Option<WatchEvent>> {
        let next = tokio::time::timeout(limit, self.events.next())
            .await
            .with_context(|| format!("no watch event within {limit:?}"))?;
        match next {
            None => Ok(None),
            Some(event) => Ok(Some(WatchEvent::from_core(
                event.context("the watch stream failed")?,
            )?)),
        }
    }

    /// The next `n` events that are not bookmarks (the server sends bookmarks at its own
    /// pace, so they are skipped); fails if the watch closes first or `limit` passes with no
    /// event.
    pub async fn next_events(&mut self, n: usize, limit: Duration) -> Result<Vec<WatchEvent>> {
        let mut events = Vec::with_capacity(n);
        while events.len() < n {
            let event = self.next(limit).await?.context("the watch closed early")?;
            if event.event_type != "BOOKMARK" {
                events.push(event);
            }
        }
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_decodes_the_query() {
        let (path, params) = split_path("/api/v1/configmaps?labelSelector=a%3Db,c!%3Dd&limit=2");
        assert_eq!(path, "/api/v1/configmaps");
        assert_eq!(
            params,
            vec![
                ("labelSelector".to_string(), "a=b,c!=d".to_string()),
                ("limit".to_string(), "2".to_string())
            ]
        );
        assert_eq!(split_path("/version"), ("/version", Vec::new()));
    }
}
