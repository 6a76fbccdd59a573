//! The upgrades streams start with: a WebSocket handshake (exec, attach, the port-forward
//! tunnel; client-go's `transport/websocket`) or a SPDY upgrade (port-forward's fallback;
//! `transport/spdy`), both on kclient-rest's [`Request::upgrade`](kclient_rest::Request::upgrade),
//! and [`UpgradeError`], how they fail.

use std::time::Duration;

use http::HeaderMap;
use kclient_core::{ApiStatus, Status};
use kclient_rest::{Request, UpgradedConnection};
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

use crate::spdy;

/// How long an upgrade may take, from sending the request to the `101` (or the refusal), when
/// the client's configuration sets no timeout. (client-go's dialers wait as long as their
/// context allows; a bound here keeps a server that never answers from hanging the caller.)
pub const DEFAULT_UPGRADE_TIMEOUT: Duration = Duration::from_secs(60);

/// The WebSocket subprotocol header (`Sec-WebSocket-Protocol`).
pub const WEBSOCKET_PROTOCOL_HEADER: &str = "Sec-WebSocket-Protocol";

/// Why an upgrade failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpgradeError {
    /// The server answered, but did not switch protocols (client-go's
    /// `httpstream.UpgradeFailureError`; with its `Status` when it sent one, so
    /// `is_not_found()`, `is_bad_request()` and friends work on the source). client-go falls
    /// back to SPDY on this error (port-forward does here too).
    #[error("unable to upgrade connection: {0}")]
    Refused(#[source] kclient_rest::Error),
    /// The request failed without an answer: building it, connecting, TLS, credentials.
    #[error(transparent)]
    Request(kclient_rest::Error),
    /// The server switched to a protocol this side did not ask for, or the WebSocket
    /// handshake's proof is wrong (also an upgrade failure in client-go).
    #[error("unable to upgrade connection: {0}")]
    Handshake(String),
    /// No answer within the upgrade timeout.
    #[error("no answer to the upgrade request within {0:?}")]
    Timeout(Duration),
}

impl UpgradeError {
    /// client-go's `httpstream.IsUpgradeFailure`: the server answered but did not upgrade
    /// (the case a caller may retry with another protocol).
    pub fn is_upgrade_failure(&self) -> bool {
        matches!(self, UpgradeError::Refused(_) | UpgradeError::Handshake(_))
    }
}

/// The server's refusal, as every kclient error answers it: its `Status` (a missing pod is
/// `404 NotFound`, a missing container `400 BadRequest`; a body that is no `Status` is
/// judged by its code), or the refused connection.
impl ApiStatus for UpgradeError {
    fn api_status(&self) -> Option<&Status> {
        match self {
            UpgradeError::Refused(e) => e.api_status(),
            _ => None,
        }
    }

    fn is_connection_refused(&self) -> bool {
        match self {
            UpgradeError::Request(e) => e.is_connection_refused(),
            _ => false,
        }
    }
}

/// Sends `request` as an upgrade and waits for the `101`, at most `timeout` (the client's
/// own timeout, when it has one, bounds it too).
async fn upgrade(
    request: Request,
    timeout: Duration,
) -> Result<(HeaderMap, UpgradedConnection), UpgradeError> {
    match tokio::time::timeout(timeout, request.upgrade()).await {
        Err(_) => Err(UpgradeError::Timeout(timeout)),
        Ok(Ok(upgraded)) => Ok(upgraded.into_parts()),
        Ok(Err(e)) if e.http_code().is_some() => Err(UpgradeError::Refused(e)),
        Ok(Err(e)) => Err(UpgradeError::Request(e)),
    }
}

/// A WebSocket connection and the subprotocol the server chose.
pub(crate) type WebSocket = WebSocketStream<UpgradedConnection>;

/// Opens a WebSocket with `request` (client-go's `websocket.Negotiate`), offering
/// `protocols` in order of preference; the server must choose one of them. Messages (and
/// frames) over `max_message_len` bytes are refused.
pub(crate) async fn websocket(
    request: Request,
    protocols: &[&str],
    max_message_len: usize,
    timeout: Duration,
) -> Result<(WebSocket, String), UpgradeError> {
    let key = generate_key();
    let request = request
        .header("Upgrade", "websocket")
        .header("Sec-WebSocket-Version", "13")
        .header("Sec-WebSocket-Key", &key)
        .header(WEBSOCKET_PROTOCOL_HEADER, protocols.join(", "));
    let (headers, connection) = upgrade(request, timeout).await?;
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .trim()
    };
    if !header("Upgrade").eq_ignore_ascii_case("websocket") {
        return Err(UpgradeError::Handshake(format!(
            "the server switched to {:?}, not to websocket",
            header("Upgrade")
        )));
    }
    if header("Sec-WebSocket-Accept") != derive_accept_key(key.as_bytes()) {
        return Err(UpgradeError::Handshake(
            "the server's Sec-WebSocket-Accept does not match the key sent".into(),
        ));
    }
    let chosen = header(WEBSOCKET_PROTOCOL_HEADER).to_owned();
    if !protocols.contains(&chosen.as_str()) {
        return Err(UpgradeError::Handshake(format!(
            "invalid protocol, expected one of {protocols:?}, got {chosen:?}"
        )));
    }
    let config = WebSocketConfig::default()
        .max_message_size(Some(max_message_len))
        .max_frame_size(Some(max_message_len));
    let socket = WebSocketStream::from_raw_socket(connection, Role::Client, Some(config)).await;
    Ok((socket, chosen))
}

/// Upgrades `request` to SPDY/3.1 (client-go's `spdy.SpdyRoundTripper`), offering
/// `protocols` in `X-Stream-Protocol-Version`; returns the byte stream and the protocol the
/// server chose (empty when it named none).
pub(crate) async fn spdy(
    mut request: Request,
    protocols: &[&str],
    timeout: Duration,
) -> Result<(UpgradedConnection, String), UpgradeError> {
    request = request.header("Upgrade", spdy::HEADER_SPDY31);
    // One header line with the protocols comma-separated is the same list to Go's
    // `req.Header[...]` reader as repeated lines.
    request = request.header(spdy::HEADER_PROTOCOL_VERSION, protocols.join(", "));
    let (headers, connection) = upgrade(request, timeout).await?;
    let upgrade_header = headers
        .get("Upgrade")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !upgrade_header
        .to_ascii_lowercase()
        .contains(&spdy::HEADER_SPDY31.to_ascii_lowercase())
    {
        return Err(UpgradeError::Handshake(format!(
            "the server switched to {upgrade_header:?}, not to {}",
            spdy::HEADER_SPDY31
        )));
    }
    let chosen = headers
        .get(spdy::HEADER_PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_owned();
    Ok((connection, chosen))
}
