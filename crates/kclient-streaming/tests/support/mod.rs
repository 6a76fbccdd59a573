//! A scripted server for the suites: each connection's request head is read, then the test's
//! script decides what the server does with the socket (accept the WebSocket, refuse, break
//! the protocol on purpose).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// A request head as the server read it.
#[derive(Debug, Clone)]
pub struct RequestHead {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
}

impl RequestHead {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn query_values(&self, name: &str) -> Vec<&str> {
        self.query
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// A server on 127.0.0.1 running `script` for each connection.
pub struct ScriptedServer {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ScriptedServer {
    pub async fn start<F, Fut>(script: F) -> Self
    where
        F: Fn(RequestHead, TcpStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let script = Arc::new(script);
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut tcp, _)) = listener.accept().await else {
                    return;
                };
                let script = script.clone();
                tokio::spawn(async move {
                    let head = read_head(&mut tcp).await;
                    script(head, tcp).await;
                });
            }
        });
        Self { addr, task }
    }

    /// A client of this server: plain HTTP, no rate limit, no proxy.
    pub fn client(&self) -> kclient_rest::RestClient {
        let mut config = kclient_rest::Config::new(format!("http://{}", self.addr));
        config.qps = None;
        config.proxy = kclient_rest::Proxy::Direct;
        kclient_rest::RestClient::new(config).unwrap()
    }
}

async fn read_head(tcp: &mut TcpStream) -> RequestHead {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    // Byte by byte, so nothing after the head is consumed.
    while !raw.ends_with(b"\r\n\r\n") {
        if tcp.read(&mut byte).await.unwrap_or(0) == 0 {
            break;
        }
        raw.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&raw);
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query = form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    RequestHead {
        method,
        path: path.to_string(),
        query,
        headers,
    }
}

/// Answers `101` with `protocol` and the right accept key, and speaks WebSocket as the
/// server.
pub async fn accept_websocket(
    head: &RequestHead,
    mut tcp: TcpStream,
    protocol: Option<&str>,
) -> WebSocketStream<TcpStream> {
    switch_to_websocket(head, &mut tcp, protocol).await;
    WebSocketStream::from_raw_socket(tcp, Role::Server, None).await
}

/// Answers `101` with `protocol` and the right accept key, and leaves the socket raw: the
/// test writes its frames byte by byte (to break them on purpose).
pub async fn switch_to_websocket(head: &RequestHead, tcp: &mut TcpStream, protocol: Option<&str>) {
    let accept = derive_accept_key(head.header("Sec-WebSocket-Key").unwrap().as_bytes());
    let mut response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n"
    );
    if let Some(p) = protocol {
        response.push_str(&format!("Sec-WebSocket-Protocol: {p}\r\n"));
    }
    response.push_str("\r\n");
    tcp.write_all(response.as_bytes()).await.unwrap();
}

/// Answers with a plain HTTP response.
pub async fn respond(mut tcp: TcpStream, status: &str, content_type: &str, body: &str) {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tcp.write_all(response.as_bytes()).await;
    let _ = tcp.shutdown().await;
}

/// The `Status` kube-apiserver ends a successful session with.
pub const SUCCESS: &str = r#"{"metadata":{},"status":"Success"}"#;

/// The `Status` of an exit with `code`.
pub fn exit_status(code: u8) -> String {
    format!(
        r#"{{"metadata":{{}},"status":"Failure","message":"command terminated with non-zero exit code: command terminated with exit code {code}","reason":"NonZeroExitCode","details":{{"causes":[{{"reason":"ExitCode","message":"{code}"}}]}}}}"#
    )
}

/// Sends `data` on `channel`.
pub async fn send(ws: &mut WebSocketStream<TcpStream>, channel: u8, data: &[u8]) {
    let mut frame = vec![channel];
    frame.extend_from_slice(data);
    ws.send(Message::Binary(frame.into())).await.unwrap();
}

/// Ends a session as kube-apiserver does: the status on the error channel, then the close.
pub async fn finish(ws: &mut WebSocketStream<TcpStream>, status: &str) {
    send(ws, 3, status.as_bytes()).await;
    let _ = ws.close(None).await;
    // Until the client's close arrives (the server waits for it).
    while let Some(Ok(_)) = ws.next().await {}
}

/// Answers a SPDY upgrade with `protocol` (`X-Stream-Protocol-Version`).
pub async fn accept_spdy(mut tcp: TcpStream, protocol: &str) -> TcpStream {
    let response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: {protocol}\r\n\r\n"
    );
    tcp.write_all(response.as_bytes()).await.unwrap();
    tcp
}
