//! A webhook server on 127.0.0.1 for a test, and a client that trusts its CA.

use kclient_core::CancellationToken;
use kclient_rest::{Config, RestClient};
use kclient_webhook::certs::SelfSignedCertificates;
use kclient_webhook::{WebhookServer, WebhookServerBuilder};
use serde_json::Value;

/// A running server and a client of it.
pub struct Running {
    pub client: RestClient,
    stop: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A client of `https://address` trusting `ca_pem`.
pub fn client(address: std::net::SocketAddr, ca_pem: &str) -> RestClient {
    let mut config = Config::new(format!("https://{address}"));
    config.tls.ca_data = Some(ca_pem.as_bytes().to_vec());
    config.qps = Some(-1.0);
    RestClient::new(config).unwrap()
}

/// Binds `builder` on a free port with new certificates and runs it.
pub async fn start(builder: WebhookServerBuilder) -> Running {
    let certs =
        SelfSignedCertificates::generate(&["localhost"], &["127.0.0.1".parse().unwrap()]).unwrap();
    let server = builder
        .bind("127.0.0.1:0".parse().unwrap(), certs.serving())
        .await
        .unwrap();
    let address = server.local_addr().unwrap();
    let stop = CancellationToken::new();
    tokio::spawn(WebhookServer::run(server, stop.clone()));
    Running {
        client: client(address, &certs.ca_pem),
        stop,
    }
}

impl Running {
    /// POSTs `body` as JSON to `path`; the answer's JSON.
    pub async fn post(&self, path: &str, body: &Value) -> Value {
        self.client
            .post()
            .abs_path(path)
            .json_body(body)
            .json::<Value>()
            .await
            .unwrap()
    }
}
