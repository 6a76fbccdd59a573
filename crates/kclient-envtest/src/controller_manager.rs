//! kube-controller-manager: its flags and its readiness probe. It authenticates as
//! `system:kube-controller-manager` (a client certificate), with a service account per
//! controller, no HTTPS endpoint of its own and no leader election.

use std::path::Path;
use std::time::Duration;

use kclient_rest::RestClient;

use crate::pki::{Pki, SERVICE_CLUSTER_IP_RANGE};

/// The bound of one readiness probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// kube-controller-manager's flags.
pub(crate) fn args(pki: &Pki, kubeconfig: &Path) -> Vec<String> {
    let path = |p: &Path| p.display().to_string();
    vec![
        format!("--kubeconfig={}", path(kubeconfig)),
        "--bind-address=127.0.0.1".into(),
        // No HTTPS endpoint of its own: nothing scrapes it.
        "--secure-port=0".into(),
        "--leader-elect=false".into(),
        "--use-service-account-credentials=true".into(),
        format!(
            "--service-account-private-key-file={}",
            path(&pki.service_account_key)
        ),
        format!("--root-ca-file={}", path(&pki.ca_cert)),
        format!("--cluster-signing-cert-file={}", path(&pki.ca_cert)),
        format!("--cluster-signing-key-file={}", path(&pki.ca_key)),
        format!("--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}"),
        "--profiling=false".into(),
    ]
}

/// Ready once its service-account controller has made the `default` ServiceAccount of the
/// `default` namespace (its controllers run by then).
pub(crate) async fn probe(client: &RestClient) -> Result<(), String> {
    client
        .get()
        .abs_path("/api/v1/namespaces/default/serviceaccounts/default")
        .timeout(PROBE_TIMEOUT)
        .max_retries(0)
        .bytes()
        .await
        .map(|_| ())
        .map_err(|e| format!("the default ServiceAccount: {e}"))
}
