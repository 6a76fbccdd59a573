//! The in-cluster configuration, with the service-account files in a temporary directory and
//! the environment given explicitly.

use crate::support;

use kclient_rest::incluster::{
    InCluster, SERVICE_ACCOUNT_CA_FILE, SERVICE_ACCOUNT_NAMESPACE_FILE, SERVICE_ACCOUNT_TOKEN_FILE,
};
use kclient_rest::{ConfigError, Error, RestClient};

fn pod(dir: &std::path::Path) -> InCluster {
    InCluster {
        service_host: Some("127.0.0.1".into()),
        service_port: Some("6443".into()),
        ..InCluster::at_dir(dir)
    }
}

#[test]
fn paths_and_variables_are_client_go_s() {
    assert_eq!(
        SERVICE_ACCOUNT_TOKEN_FILE,
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    );
    assert_eq!(
        SERVICE_ACCOUNT_CA_FILE,
        "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
    );
    assert_eq!(
        SERVICE_ACCOUNT_NAMESPACE_FILE,
        "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    );
    assert_eq!(
        kclient_rest::incluster::SERVICE_HOST_ENV,
        "KUBERNETES_SERVICE_HOST"
    );
    assert_eq!(
        kclient_rest::incluster::SERVICE_PORT_ENV,
        "KUBERNETES_SERVICE_PORT"
    );
    assert_eq!(kclient_rest::incluster::POD_NAMESPACE_ENV, "POD_NAMESPACE");
}

#[test]
fn a_pod_gets_host_token_ca_and_namespace() {
    let pki = support::Pki::new();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "sa-token").unwrap();
    std::fs::write(dir.path().join("ca.crt"), &pki.ca_pem).unwrap();
    std::fs::write(dir.path().join("namespace"), "team-a\n").unwrap();
    let c = pod(dir.path()).load().unwrap();
    assert_eq!(c.host, "https://127.0.0.1:6443");
    assert_eq!(c.bearer_token.as_deref(), Some("sa-token"));
    assert_eq!(
        c.bearer_token_file,
        Some(dir.path().join("token")),
        "the token is reloaded"
    );
    assert_eq!(c.tls.ca_file, Some(dir.path().join("ca.crt")));
    assert_eq!(c.namespace(), "team-a");
}

#[test]
fn pod_namespace_wins_over_the_file_and_default_is_last() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "t").unwrap();
    std::fs::write(dir.path().join("namespace"), "from-file").unwrap();
    let with_env = InCluster {
        pod_namespace: Some("from-env".into()),
        ..pod(dir.path())
    };
    assert_eq!(with_env.load().unwrap().namespace(), "from-env");
    std::fs::remove_file(dir.path().join("namespace")).unwrap();
    assert_eq!(pod(dir.path()).load().unwrap().namespace(), "default");
}

#[test]
fn outside_a_pod_it_is_not_in_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let err = InCluster::at_dir(dir.path()).load().unwrap_err();
    assert!(
        matches!(err, Error::Config(ConfigError::NotInCluster)),
        "{err:?}"
    );
    let half = InCluster {
        service_host: Some("10.0.0.1".into()),
        ..InCluster::at_dir(dir.path())
    };
    assert!(!half.possible());
    assert!(matches!(
        half.load(),
        Err(Error::Config(ConfigError::NotInCluster))
    ));
}

#[test]
fn a_missing_token_is_an_error_and_a_missing_ca_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let err = pod(dir.path()).load().unwrap_err();
    assert!(
        matches!(err, Error::Config(ConfigError::ReadFile { .. })),
        "{err:?}"
    );
    std::fs::write(dir.path().join("token"), "t").unwrap();
    std::fs::write(dir.path().join("ca.crt"), "not a certificate").unwrap();
    let c = pod(dir.path()).load().unwrap();
    assert_eq!(
        c.tls.ca_file, None,
        "an unusable CA file is skipped, as client-go does"
    );
}

#[test]
fn ipv6_hosts_are_bracketed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "t").unwrap();
    let c = InCluster {
        service_host: Some("fd00::1".into()),
        ..pod(dir.path())
    }
    .load()
    .unwrap();
    assert_eq!(c.host, "https://[fd00::1]:6443");
    RestClient::new(c).unwrap();
}

#[tokio::test]
async fn the_in_cluster_client_authenticates_with_the_token() {
    let pki = support::Pki::new();
    let server = support::TestServer::https(pki.server_config(), |r| async move {
        support::json(200, serde_json::json!({"auth": r.header("authorization")}))
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "sa-token").unwrap();
    std::fs::write(dir.path().join("ca.crt"), &pki.ca_pem).unwrap();
    let mut c = InCluster {
        service_port: Some(server.addr.port().to_string()),
        ..pod(dir.path())
    }
    .load()
    .unwrap();
    c.proxy = kclient_rest::Proxy::Direct;
    let v: serde_json::Value = RestClient::new(c)
        .unwrap()
        .get()
        .abs_path("/api")
        .json()
        .await
        .unwrap();
    assert_eq!(v["auth"], "Bearer sa-token");
}
