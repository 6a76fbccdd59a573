//! etcd: its flags, its health probe, and the revisions written before the apiserver starts.
//! Plain HTTP on loopback (client and peer ports), a throwaway store without fsync.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How many revisions [`seed`] writes.
const SEED_REVISIONS: usize = 16;
/// The bound of one request to etcd.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// etcd's flags: one member named `envtest`, data in `data_dir`.
pub(crate) fn args(data_dir: &Path, client_port: u16, peer_port: u16) -> Vec<String> {
    let client = format!("http://127.0.0.1:{client_port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    vec![
        "--name=envtest".into(),
        format!("--data-dir={}", data_dir.display()),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster=envtest={peer}"),
        "--initial-cluster-state=new".into(),
        "--log-level=warn".into(),
        // A throwaway test store: durability is not worth the fsync latency.
        "--unsafe-no-fsync=true".into(),
    ]
}

/// etcd's `/health`.
pub(crate) async fn probe(port: u16) -> Result<(), String> {
    let response = http(port, "GET", "/health", "").await?;
    if response.contains("\"health\":\"true\"") {
        Ok(())
    } else {
        Err(format!(
            "/health: {}",
            response.lines().last().unwrap_or_default()
        ))
    }
}

/// Moves etcd's revision past 1 before the apiserver starts, with writes to a key outside the
/// apiserver's `/registry` prefix. A new etcd starts at revision 1, and the apiserver's watch
/// caches start from the revision they first list at; without this, a watch cache started on
/// a brand-new etcd can still serve "resourceVersion 1", where any cluster that has lived
/// answers 410 Gone (Expired) — and kclient-fake does too. With it, resourceVersion 1 is too
/// old on every resource.
pub(crate) async fn seed(port: u16) -> Result<(), String> {
    // etcd's JSON gateway takes base64 keys and values: "/kclient-envtest/seed" and "1".
    let body = r#"{"key":"L2tjbGllbnQtZW52dGVzdC9zZWVk","value":"MQ=="}"#;
    for _ in 0..SEED_REVISIONS {
        let response = http(port, "POST", "/v3/kv/put", body).await?;
        if !response.contains("\"revision\"") {
            return Err(format!("etcd did not accept a write: {response}"));
        }
    }
    Ok(())
}

/// One plain HTTP/1.0 request to etcd on loopback, bounded; the whole response.
async fn http(port: u16, method: &str, path: &str, body: &str) -> Result<String, String> {
    let exchange = async {
        let mut stream = TcpStream::connect(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await?;
        let request = format!(
            "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await?;
        Ok::<_, std::io::Error>(response)
    };
    match tokio::time::timeout(REQUEST_TIMEOUT, exchange).await {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(e)) => Err(format!("{method} {path}: {e}")),
        Err(_) => Err(format!(
            "{method} {path}: no answer within {REQUEST_TIMEOUT:?}"
        )),
    }
}
