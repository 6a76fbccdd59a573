//! Forwarding a local port to a pod (`kubectl port-forward`) and making an HTTP request
//! through it.
//!
//! `pods.forward(pod, local, remote)` dials the pod's `portforward` subresource (SPDY through
//! a WebSocket tunnel, or a SPDY upgrade where the server has no tunnel), listens on
//! `localhost` (local port 0: any free port) and returns the running forward, whose
//! `local_addr` is where to connect; each connection accepted there is forwarded on streams
//! of its own.
//!
//! With a kubeconfig (`KUBECONFIG` or `~/.kube/config`) it forwards to a real pod's port.
//! Without one it starts kclient-fake, whose port handler connects every forwarded
//! connection to a small HTTP server this program runs, so the same code path runs.
//!
//! ```text
//! cargo run -p kclient --features fake,streaming --example port_forward                    # kclient-fake
//! cargo run -p kclient --features fake,streaming --example port_forward -- -n default web 80
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;

use kclient::core::ErrorReport;
use kclient::fake::{forward_to_address, FakeApiServer};
use kclient::rest::Config;
use kclient::typed::Clientset;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The command line: `[-n NAMESPACE] [POD [PORT]]`.
#[derive(Debug, PartialEq)]
struct Args {
    namespace: Option<String>,
    pod: String,
    port: u16,
}

fn parse_args(args: &[String]) -> Result<Args, Error> {
    let mut namespace = None;
    let mut positional = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-n" | "--namespace" => {
                namespace = Some(args.next().ok_or("-n needs a namespace")?.clone())
            }
            other if other.starts_with('-') => {
                return Err(format!(
                    "unknown option {other:?} (usage: [-n NAMESPACE] [POD [PORT]])"
                )
                .into())
            }
            other => positional.push(other.to_owned()),
        }
    }
    let mut positional = positional.into_iter();
    let pod = positional.next().unwrap_or_else(|| "web".to_owned());
    let port = match positional.next() {
        Some(p) => p.parse().map_err(|_| format!("{p:?} is not a port"))?,
        None => 80,
    };
    if positional.next().is_some() {
        return Err("usage: [-n NAMESPACE] [POD [PORT]]".into());
    }
    Ok(Args {
        namespace,
        pod,
        port,
    })
}

/// Forwards a free local port to `port` of `pod`, sends `GET /` through it, and returns the
/// answer (status line, headers and body, as the pod's server wrote them).
async fn run(config: Config, namespace: &str, pod: &str, port: u16) -> Result<String, Error> {
    let pods = Clientset::new(config)?.core_v1().pods(namespace);
    let forward = pods.forward(pod, 0, port).await?;
    let local = forward
        .local_addr(port)
        .ok_or("the forward listens on no address")?;
    println!("Forwarding from {local} -> {port}");
    let mut conn = TcpStream::connect(local).await?;
    conn.write_all(format!("GET / HTTP/1.0\r\nHost: {pod}\r\n\r\n").as_bytes())
        .await?;
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer).await?;
    forward.stop().await?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// A minimal HTTP server on 127.0.0.1 (standing in for the pod's web server): every request
/// gets `200 OK` and a greeting.
async fn http_server() -> Result<SocketAddr, Error> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = [0u8; 1024];
                let _ = conn.read(&mut request).await;
                let body = "hello from the pod\n";
                let answer = format!(
                    "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(answer.as_bytes()).await;
            });
        }
    });
    Ok(address)
}

/// kclient-fake with a running pod `default/web` whose ports all lead to `http_server`.
async fn fake() -> Result<FakeApiServer, Error> {
    let server = FakeApiServer::builder()
        .object(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "nginx",
                     "ports": [{"containerPort": 80}]}]},
            "status": {"phase": "Running"},
        }))
        .start()
        .await?;
    server.set_port_forward_handler(forward_to_address(http_server().await?));
    Ok(server)
}

fn kubeconfig_available() -> bool {
    std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty())
        || std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".kube/config").exists())
            .unwrap_or(false)
}

#[tokio::main]
async fn main() -> Result<(), ErrorReport> {
    let args = parse_args(&std::env::args().skip(1).collect::<Vec<_>>())?;
    let (_server, config) = if kubeconfig_available() {
        (None, Config::infer()?)
    } else {
        let server = fake().await?;
        eprintln!("No kubeconfig found: running against kclient-fake");
        let config = server.config()?;
        (Some(server), config)
    };
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| config.namespace().to_owned());
    let answer = run(config, &namespace, &args.pod, args.port).await?;
    print!("{answer}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() -> Result<(), Error> {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_args(&args(&[]))?,
            Args {
                namespace: None,
                pod: "web".into(),
                port: 80
            }
        );
        let parsed = parse_args(&args(&["-n", "ns", "db", "5432"]))?;
        assert_eq!(
            (
                parsed.namespace.as_deref(),
                parsed.pod.as_str(),
                parsed.port
            ),
            (Some("ns"), "db", 5432)
        );
        assert!(parse_args(&args(&["web", "http"])).is_err());
        assert!(parse_args(&args(&["a", "1", "2"])).is_err());
        Ok(())
    }

    #[tokio::test]
    async fn a_request_through_the_forward_reaches_the_pod_s_server() -> Result<(), Error> {
        let server = fake().await?;
        let answer = run(server.config()?, "default", "web", 80).await?;
        assert!(answer.starts_with("HTTP/1.0 200 OK\r\n"), "{answer}");
        assert!(answer.ends_with("\r\n\r\nhello from the pod\n"), "{answer}");
        let missing = run(server.config()?, "default", "nope", 80)
            .await
            .unwrap_err();
        assert!(
            missing.to_string().contains("pods \"nope\" not found"),
            "{missing}"
        );
        Ok(())
    }
}
