//! Authenticating inside the cluster (client-go's `examples/in-cluster-client-configuration`):
//! a program running in a pod builds its configuration from the pod's service account with
//! `Config::incluster()` (the API server's service address from `KUBERNETES_SERVICE_HOST`
//! and `KUBERNETES_SERVICE_PORT`, the token re-read every minute, the cluster CA, the pod's
//! namespace), then lists the pods of the cluster and looks for one that does not exist,
//! telling a `NotFound` from other errors.
//!
//! In a pod it loops every 10 seconds, as client-go's example does. Anywhere else it
//! simulates a pod against kclient-fake: the same service-account files (token, `ca.crt`,
//! `namespace`) are written to a temporary directory and the same code reads them through
//! `InCluster`, the testable form of `Config::incluster()`.
//!
//! ```text
//! cargo run -p kclient --features fake --example in_cluster_config               # a simulated pod
//! cargo run -p kclient --features fake --example in_cluster_config -- --times 3  # three rounds
//! ```
//!
//! In a real pod the service account needs `list` on pods at cluster scope (a
//! ClusterRoleBinding to the `view` ClusterRole will do).

use std::path::PathBuf;
use std::time::Duration;

use kclient::core::{ApiStatus, ErrorReport, ListOptions};
use kclient::fake::FakeApiServer;
use kclient::rest::incluster::InCluster;
use kclient::rest::Config;
use kclient::typed::Clientset;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The pod the example looks for and does not expect to find (client-go's example does the
/// same, to show the handling of a `NotFound`).
const MISSING_POD: &str = "example-xxxxx";

/// What one round found.
#[derive(Debug, PartialEq)]
struct Round {
    pods: usize,
    missing_pod_found: bool,
}

/// One round of client-go's loop: count the pods of the cluster, look for [`MISSING_POD`]
/// in the configuration's namespace.
async fn round(clientset: &Clientset, namespace: &str) -> Result<Round, Error> {
    let pods = clientset
        .core_v1()
        .pods("")
        .list(&ListOptions::default())
        .await?;
    println!("There are {} pods in the cluster", pods.items.len());
    let missing_pod_found = match clientset.core_v1().pods(namespace).get(MISSING_POD).await {
        Ok(_) => {
            println!("Found pod {MISSING_POD} in namespace {namespace}");
            true
        }
        Err(e) if e.is_not_found() => {
            println!("Pod {MISSING_POD} not found in namespace {namespace}");
            false
        }
        Err(e) => return Err(e.into()),
    };
    Ok(Round {
        pods: pods.items.len(),
        missing_pod_found,
    })
}

/// A pod's view of kclient-fake: the service-account files a pod gets, in `dir`, and the
/// service environment pointing at the server.
fn simulated_pod(server: &FakeApiServer, dir: &std::path::Path) -> Result<InCluster, Error> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("token"), "in-cluster-token")?;
    std::fs::write(
        dir.join("ca.crt"),
        server
            .ca_certificate_pem()
            .ok_or("the server must serve HTTPS")?,
    )?;
    std::fs::write(dir.join("namespace"), "default")?;
    Ok(InCluster {
        service_host: Some(server.address().ip().to_string()),
        service_port: Some(server.address().port().to_string()),
        pod_namespace: None,
        ..InCluster::at_dir(dir)
    })
}

/// A server with the pod's token accepted and a few pods to count.
async fn start_fake() -> Result<FakeApiServer, Error> {
    let pod = |ns: &str, name: &str| {
        serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}})
    };
    Ok(FakeApiServer::builder()
        .https()
        .token("in-cluster-token")
        .objects([
            pod("default", "web-0"),
            pod("default", "web-1"),
            pod("kube-system", "dns-0"),
        ])
        .start()
        .await?)
}

/// Runs `times` rounds (forever when `None`) against `config`.
async fn run(config: Config, times: Option<usize>) -> Result<Vec<Round>, Error> {
    let namespace = config.namespace().to_owned();
    let clientset = Clientset::new(config)?;
    let mut rounds = Vec::new();
    loop {
        rounds.push(round(&clientset, &namespace).await?);
        if times.is_some_and(|t| rounds.len() >= t) {
            return Ok(rounds);
        }
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
}

fn service_account_dir() -> PathBuf {
    std::env::temp_dir().join(format!("kclient-in-cluster-{}", std::process::id()))
}

#[tokio::main]
async fn main() -> Result<(), ErrorReport> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let times = match args.iter().position(|a| a == "--times") {
        Some(i) => Some(args.get(i + 1).ok_or("--times needs a number")?.parse()?),
        None => None,
    };
    let in_pod = InCluster::from_env();
    if in_pod.possible() {
        // Client-go's `rest.InClusterConfig()`.
        run(Config::incluster()?, times).await?;
        return Ok(());
    }
    println!(
        "Not in a pod (KUBERNETES_SERVICE_HOST is not set): simulating one against kclient-fake"
    );
    let server = start_fake().await?;
    let dir = service_account_dir();
    let config = simulated_pod(&server, &dir)?.load()?;
    println!(
        "In-cluster configuration: {} (service account files in {})",
        config.host,
        dir.display()
    );
    let result = run(config, times.or(Some(1))).await;
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_simulated_pod_reaches_the_server_with_its_service_account() -> Result<(), Error> {
        let server = start_fake().await?;
        let dir = service_account_dir().join("test");
        let config = simulated_pod(&server, &dir)?.load()?;
        assert_eq!(config.host, server.url());
        assert_eq!(config.namespace(), "default");
        let rounds = run(config, Some(1)).await;
        std::fs::remove_dir_all(&dir)?;
        assert_eq!(
            rounds?,
            [Round {
                pods: 3,
                missing_pod_found: false
            }]
        );
        Ok(())
    }

    #[tokio::test]
    async fn a_wrong_token_is_refused() -> Result<(), Error> {
        let server = start_fake().await?;
        let dir = service_account_dir().join("wrong-token");
        let mut in_cluster = simulated_pod(&server, &dir)?;
        std::fs::write(dir.join("token"), "stolen")?;
        in_cluster.pod_namespace = Some("elsewhere".into());
        let config = in_cluster.load()?;
        assert_eq!(config.namespace(), "elsewhere", "POD_NAMESPACE wins");
        let result = run(config, Some(1)).await;
        std::fs::remove_dir_all(&dir)?;
        let error = result.unwrap_err();
        assert!(
            error.to_string().contains("Unauthorized") || error.to_string().contains("401"),
            "{error}"
        );
        Ok(())
    }
}
