//! kclient-rest against the fake server: `FakeApiServer::config()` and the kubeconfig the
//! server writes, over plain HTTP and HTTPS with both kinds of authentication.

use kclient_core::ApiStatus;
use kclient_fake::FakeApiServer;
use kclient_rest::{Config, RestClient};
use serde_json::{json, Value};

async fn namespaces(config: Config) -> Result<Value, kclient_rest::Error> {
    RestClient::new(config)?
        .get()
        .abs_path("/api/v1/namespaces")
        .json::<Value>()
        .await
}

#[tokio::test]
async fn config_for_each_kind_of_server() {
    let plain = FakeApiServer::builder().start().await.unwrap();
    let list = namespaces(plain.config().unwrap()).await.unwrap();
    assert_eq!(list["kind"], "NamespaceList");

    let token = FakeApiServer::builder()
        .https()
        .token("t0k3n")
        .start()
        .await
        .unwrap();
    let list = namespaces(token.config().unwrap()).await.unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 4);
    let mut wrong = token.config().unwrap();
    wrong.bearer_token = Some("nope".into());
    let err = namespaces(wrong).await.unwrap_err();
    assert!(err.is_unauthorized(), "{err}");

    let certs = FakeApiServer::builder()
        .client_cert_auth()
        .start()
        .await
        .unwrap();
    let list = namespaces(certs.config().unwrap()).await.unwrap();
    assert_eq!(list["kind"], "NamespaceList");
}

#[tokio::test]
async fn kclient_rest_reads_the_kubeconfig() {
    let server = FakeApiServer::builder()
        .https()
        .token("abc")
        .start()
        .await
        .unwrap();
    let path = std::env::temp_dir().join(format!(
        "kclient-fake-rest-kubeconfig-{}",
        std::process::id()
    ));
    server.write_kubeconfig(&path).unwrap();
    let config = Config::from_kubeconfig_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(config.host, server.url());
    assert_eq!(config.namespace(), "default");
    let client = RestClient::new(config).unwrap();
    let created: Value = client
        .post()
        .abs_path("/api/v1/namespaces/default/configmaps")
        .json_body(&json!({"metadata": {"name": "via-rest"}, "data": {"a": "b"}}))
        .json()
        .await
        .unwrap();
    assert_eq!(created["metadata"]["name"], "via-rest");
    let err = client
        .post()
        .abs_path("/api/v1/namespaces/default/configmaps")
        .json_body(&json!({"metadata": {"name": "via-rest"}}))
        .json::<Value>()
        .await
        .unwrap_err();
    assert!(err.is_already_exists(), "{err}");
}
