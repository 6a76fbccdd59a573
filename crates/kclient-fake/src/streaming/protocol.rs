//! The protocols' shared pieces of the streaming routes: upgrades to WebSocket (with
//! kube-apiserver's subprotocol negotiation) and to SPDY, plain-text refusals, repeated
//! query parameters. Below the routes and the kubelet stand-in, which both use them.

use http::{header, HeaderMap, Response, StatusCode};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

use crate::response::{self, Body};

/// Every value of a repeated query parameter, in order (`command`).
pub(super) fn all_values(query: Option<&str>, name: &str) -> Vec<String> {
    query
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .filter(|(k, _)| crate::query::percent_decode(k) == name)
        .map(|(_, v)| crate::query::percent_decode(v))
        .collect()
}

/// A plain-text answer (what the kubelet writes, passed through by kube-apiserver).
pub(super) fn text(code: StatusCode, message: String) -> Response<Body> {
    let mut res = Response::new(response::full(message));
    *res.status_mut() = code;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}

/// Whether the request asks for `Upgrade: <protocol>` with `Connection: Upgrade`.
pub(super) fn upgrade_to(headers: &HeaderMap, protocol: &str) -> bool {
    let has_token = |name: header::HeaderName, token: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str()
                .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        })
    };
    has_token(header::CONNECTION, "upgrade") && has_token(header::UPGRADE, protocol)
}

/// httpstream's `Handshake` on a SPDY upgrade: the first protocol the client offers in
/// `X-Stream-Protocol-Version` that `supported` has, with httpstream's refusals (`400`
/// without the header, `403` with `X-Accepted-Stream-Protocol-Versions` when none fits); the
/// `101` and the protocol chosen.
pub(super) fn spdy_handshake(
    headers: &HeaderMap,
    supported: &[&str],
) -> Result<(Response<Body>, String), Response<Body>> {
    use kclient_streaming::spdy::{HEADER_PROTOCOL_VERSION, HEADER_SPDY31};
    if !upgrade_to(headers, HEADER_SPDY31) {
        return Err(text(
            StatusCode::BAD_REQUEST,
            "unable to upgrade: missing upgrade headers in request".into(),
        ));
    }
    let offered: Vec<String> = headers
        .get_all(HEADER_PROTOCOL_VERSION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    if offered.is_empty() {
        return Err(text(
            StatusCode::BAD_REQUEST,
            format!(
                "unable to upgrade: header {HEADER_PROTOCOL_VERSION} does not exist in request"
            ),
        ));
    }
    let Some(chosen) = offered
        .iter()
        .find(|p| supported.contains(&p.as_str()))
        .cloned()
    else {
        let mut refusal = text(
            StatusCode::FORBIDDEN,
            format!(
                "unable to upgrade: unable to negotiate protocol: client supports {offered:?}, server accepts {supported:?}"
            ),
        );
        for accepted in supported {
            if let Ok(v) = header::HeaderValue::from_str(accepted) {
                refusal
                    .headers_mut()
                    .append("X-Accepted-Stream-Protocol-Versions", v);
            }
        }
        return Err(refusal);
    };
    let mut res = Response::new(response::full(""));
    *res.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = res.headers_mut();
    h.insert(
        header::CONNECTION,
        header::HeaderValue::from_static("Upgrade"),
    );
    h.insert(
        header::UPGRADE,
        header::HeaderValue::from_static(HEADER_SPDY31),
    );
    if let Ok(v) = header::HeaderValue::from_str(&chosen) {
        h.insert(HEADER_PROTOCOL_VERSION, v);
    }
    Ok((res, chosen))
}

/// The subprotocols a WebSocket request offers, in its order.
pub(super) fn offered_protocols(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The `101` of a WebSocket handshake choosing `protocol`, or why the handshake is refused.
pub(super) fn websocket_accept(
    headers: &HeaderMap,
    protocol: &str,
) -> Result<Response<Body>, Response<Body>> {
    let version = headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if version.trim() != "13" {
        return Err(text(
            StatusCode::BAD_REQUEST,
            "websocket: unsupported version: 13 not found in 'Sec-Websocket-Version' header".into(),
        ));
    }
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY) else {
        return Err(text(
            StatusCode::BAD_REQUEST,
            "websocket: not a websocket handshake: 'Sec-WebSocket-Key' header is missing".into(),
        ));
    };
    let mut res = Response::new(response::full(""));
    *res.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = res.headers_mut();
    h.insert(
        header::UPGRADE,
        header::HeaderValue::from_static("websocket"),
    );
    h.insert(
        header::CONNECTION,
        header::HeaderValue::from_static("Upgrade"),
    );
    if let Ok(accept) = header::HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    if let Ok(p) = header::HeaderValue::from_str(protocol) {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, p);
    }
    Ok(res)
}
