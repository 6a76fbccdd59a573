//! kube-apiserver: its flags and its readiness probe. HTTPS on 127.0.0.1 with the generated
//! serving certificate; client certificates and a static token; RBAC; a service-account
//! issuer with the generated signing key.

use std::path::Path;
use std::time::Duration;

use kclient_rest::RestClient;

use crate::pki::{Pki, SERVICE_CLUSTER_IP_RANGE};

/// The bound of one readiness probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// kube-apiserver's flags, then `extra`.
pub(crate) fn args(
    pki: &Pki,
    etcd_url: &str,
    port: u16,
    cert_dir: &Path,
    extra: &[String],
) -> Vec<String> {
    let path = |p: &Path| p.display().to_string();
    let mut args: Vec<String> = vec![
        "--bind-address=127.0.0.1".into(),
        "--advertise-address=127.0.0.1".into(),
        // The `kubernetes` Service's endpoints would be 127.0.0.1, which the endpoint
        // reconciler refuses (loopback); a test needs them no more than kclient's e2e suite.
        "--endpoint-reconciler-type=none".into(),
        format!("--secure-port={port}"),
        format!("--cert-dir={}", cert_dir.display()),
        format!("--tls-cert-file={}", path(&pki.serving_cert)),
        format!("--tls-private-key-file={}", path(&pki.serving_key)),
        format!("--client-ca-file={}", path(&pki.ca_cert)),
        format!("--token-auth-file={}", path(&pki.token_file)),
        format!("--etcd-servers={etcd_url}"),
        "--service-account-issuer=https://kubernetes.default.svc".into(),
        format!(
            "--service-account-key-file={}",
            path(&pki.service_account_public_key)
        ),
        format!(
            "--service-account-signing-key-file={}",
            path(&pki.service_account_key)
        ),
        "--authorization-mode=Node,RBAC".into(),
        format!("--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}"),
        "--allow-privileged=true".into(),
        "--profiling=false".into(),
    ];
    args.extend_from_slice(extra);
    args
}

/// `/readyz`, through the admin kubeconfig's client (which so gets checked too).
pub(crate) async fn probe(client: &RestClient) -> Result<(), String> {
    let body = client
        .get()
        .abs_path("/readyz")
        .timeout(PROBE_TIMEOUT)
        .max_retries(0)
        .bytes()
        .await
        .map_err(|e| format!("/readyz: {e}"))?;
    match &body[..] {
        b"ok" => Ok(()),
        other => Err(format!("/readyz: {}", String::from_utf8_lossy(other))),
    }
}
