//! Shared setup: an in-process kclient-fake server and a clientset pointed at it.
#![allow(dead_code)]

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kclient_fake::FakeApiServer;
use kclient_rest::{Config, RestClient};
use kclient_typed::Clientset;

/// A fake API server and a clientset for it (no client-side rate limit, so tests are not
/// throttled).
pub async fn fake() -> (FakeApiServer, Clientset) {
    let server = FakeApiServer::builder()
        .start()
        .await
        .expect("fake server starts");
    let clientset = Clientset::from_client(rest_client(&server));
    (server, clientset)
}

/// A REST client for `server` without a rate limit.
pub fn rest_client(server: &FakeApiServer) -> RestClient {
    let mut config = Config::new(server.url());
    config.qps = None;
    RestClient::new(config).expect("client builds")
}

/// Object metadata with a name and labels.
pub fn meta(name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        labels: (!labels.is_empty()).then(|| {
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        }),
        ..ObjectMeta::default()
    }
}

/// A ConfigMap with one data entry.
pub fn config_map(name: &str, labels: &[(&str, &str)], value: &str) -> ConfigMap {
    ConfigMap {
        metadata: meta(name, labels),
        data: Some(BTreeMap::from([("key".to_owned(), value.to_owned())])),
        ..ConfigMap::default()
    }
}

/// A Deployment of `replicas` nginx pods labelled `app=<name>`.
pub fn deployment(name: &str, replicas: i32) -> Deployment {
    let labels = BTreeMap::from([("app".to_owned(), name.to_owned())]);
    Deployment {
        metadata: meta(name, &[("app", name)]),
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "web".into(),
                        image: Some("nginx".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    }
}
