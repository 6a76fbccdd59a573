//! Shared setup: an in-process kclient-fake server and a clientset pointed at it.
#![allow(dead_code)]

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, ReplicaSet, ReplicaSetSpec, StatefulSet, StatefulSetSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kclient_fake::FakeApiServer;
use kclient_rest::{Config, RestClient};
use kclient_typed::Clientset;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

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

/// A pod template of one nginx container, labelled `app=<name>`.
pub fn pod_template(name: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(BTreeMap::from([("app".to_owned(), name.to_owned())])),
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
    }
}

/// An object from its JSON form.
///
/// The workload kinds are built this way because k8s-openapi models their `spec` as
/// `Option<Spec>` up to Kubernetes 1.36 and as `Spec` from 1.37 on: the JSON reads the same
/// for every version kclient-typed supports.
pub fn from_json<K: DeserializeOwned>(value: Value) -> K {
    serde_json::from_value(value).expect("a valid object")
}

/// A Deployment of `replicas` nginx pods labelled `app=<name>`.
pub fn deployment(name: &str, replicas: i32) -> Deployment {
    from_json(json!({
        "metadata": meta(name, &[("app", name)]),
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": pod_template(name),
        }
    }))
}

/// A workload's `spec`, however k8s-openapi models it: `Option<Spec>` up to Kubernetes 1.36,
/// `Spec` from 1.37 on (`Option::from` takes a reference to either).
pub trait SpecOf {
    /// The spec type.
    type Spec;
    /// The spec, `None` only where the model has it optional and it is unset.
    fn spec_of(&self) -> Option<&Self::Spec>;
}

macro_rules! spec_of {
    ($($kind:ty => $spec:ty),* $(,)?) => {$(
        impl SpecOf for $kind {
            type Spec = $spec;
            fn spec_of(&self) -> Option<&$spec> {
                Option::from(&self.spec)
            }
        }
    )*};
}

spec_of!(
    Deployment => DeploymentSpec,
    ReplicaSet => ReplicaSetSpec,
    StatefulSet => StatefulSetSpec,
);
