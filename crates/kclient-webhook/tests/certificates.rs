//! The serving certificate reloaded from its files: a new pair served to new connections
//! without a restart, a request in flight through the change answered, a half-written pair
//! never served.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kclient_core::CancellationToken;
use kclient_webhook::admission::{AdmissionContext, Warnings};
use kclient_webhook::certs::SelfSignedCertificates;
use kclient_webhook::{CustomValidator, Denial, ServingCertificate, WebhookServer};
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::support::client;

/// For a ConfigMap named `slow`: says when it is entered, answers once `release` is
/// notified. Others at once.
struct Slow {
    entered: Arc<Notify>,
    release: Arc<Notify>,
}

impl CustomValidator<ConfigMap> for Slow {
    async fn validate_create(
        &self,
        cm: &ConfigMap,
        _: &AdmissionContext,
    ) -> Result<Warnings, Denial> {
        if cm.metadata.name.as_deref() != Some("slow") {
            return Ok(vec![]);
        }
        let released = self.release.notified();
        self.entered.notify_one();
        released.await;
        Ok(vec![])
    }
}

fn review(name: &str) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "r", "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
        "operation": "CREATE", "userInfo": {},
        "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}}})
}

/// Whether a new connection's handshake succeeds for a client trusting only `ca` (pooled
/// connections keep the certificate they were opened with, as they should).
async fn trusted(address: std::net::SocketAddr, ca: &str) -> bool {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    connector.connect(name, tcp).await.is_ok()
}

#[tokio::test]
async fn a_changed_pair_is_served_without_a_restart_or_a_dropped_request() {
    let dir = tempfile::tempdir().unwrap();
    let names: (&[&str], &[std::net::IpAddr]) = (&["localhost"], &["127.0.0.1".parse().unwrap()]);
    let first = SelfSignedCertificates::generate(names.0, names.1).unwrap();
    first.write_to(dir.path()).unwrap();
    let source = ServingCertificate::Files {
        cert: dir.path().join("tls.crt"),
        key: dir.path().join("tls.key"),
        reload_interval: Duration::from_millis(50),
    };
    let (entered, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let metrics = kclient_webhook::WebhookMetrics::default();
    let slow = Slow {
        entered: Arc::clone(&entered),
        release: Arc::clone(&release),
    };
    let server = WebhookServer::builder()
        .metrics(metrics.clone())
        .validator::<ConfigMap, _>(slow)
        .bind("127.0.0.1:0".parse().unwrap(), source)
        .await
        .unwrap();
    let address = server.local_addr().unwrap();
    let stop = CancellationToken::new();
    tokio::spawn(server.run(stop.clone()));
    assert!(trusted(address, &first.ca_pem).await);

    // A request in flight (its handler waits) while the pair changes.
    let in_flight = tokio::spawn({
        let ca = first.ca_pem.clone();
        async move {
            client(address, &ca)
                .post()
                .abs_path("/validate--v1-configmap")
                .json_body(&review("slow"))
                .json::<Value>()
                .await
        }
    });
    entered.notified().await;

    // Half written: a certificate without its key's match is read, refused, never served.
    let second = SelfSignedCertificates::generate(names.0, names.1).unwrap();
    std::fs::write(dir.path().join("tls.crt"), &second.cert_pem).unwrap();
    let mut refused = false;
    for _ in 0..100 {
        if metrics.certificate_reads().1 >= 1 {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        refused,
        "the half-written pair was not looked at within 5 s"
    );
    assert!(
        trusted(address, &first.ca_pem).await,
        "the old pair is still served"
    );

    // The key follows: the new pair is served to new connections.
    std::fs::write(dir.path().join("tls.key"), &second.key_pem).unwrap();
    let mut switched = false;
    for _ in 0..100 {
        if trusted(address, &second.ca_pem).await {
            switched = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(switched, "the new certificate was not served within 5 s");
    assert!(
        !trusted(address, &first.ca_pem).await,
        "the old one is no longer served"
    );

    release.notify_one();
    let answer = in_flight
        .await
        .unwrap()
        .expect("the request in flight was answered");
    assert_eq!(answer["response"]["allowed"], true);
    stop.cancel();
}

#[tokio::test]
async fn a_certificate_that_does_not_load_fails_the_bind_with_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = WebhookServer::builder()
        .bind(
            "127.0.0.1:0".parse().unwrap(),
            ServingCertificate::from_dir(dir.path()),
        )
        .await;
    assert!(
        matches!(missing, Err(kclient_webhook::WebhookError::Certificate(m)) if m.contains("cannot read"))
    );
    let garbage = ServingCertificate::Pem {
        cert: "junk".into(),
        key: "junk".into(),
    };
    let refused = WebhookServer::builder()
        .bind("127.0.0.1:0".parse().unwrap(), garbage)
        .await;
    assert!(
        matches!(refused, Err(kclient_webhook::WebhookError::Certificate(m)) if m.contains("no CERTIFICATE"))
    );
}
