//! The client crates against the real kube-apiserver: discovery (aggregated, as the real
//! server serves it) and the RestMapper, the dynamic client, and the typed Clientset with the
//! scale subresource. Without `KCLIENT_E2E_KUBECONFIG` each test says so and passes; run
//! `cargo xtask e2e test`.

use std::collections::BTreeMap;

use anyhow::{ensure, Context, Result};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kclient_core::{
    ApiStatus, CreateOptions, DeleteOptions, DynamicObject, GetOptions, GroupVersion, ListOptions,
    Resource, ResourceExt,
};
use kclient_discovery::{Discovery, DiscoveryClient, RestMapper};
use kclient_dynamic::DynamicClient;
use kclient_e2e::Target;
use kclient_rest::RestClient;
use kclient_typed::Clientset;
use serde_json::json;

/// The real server, or `None` (after saying why) when the suite runs without one.
fn real(test: &str) -> Result<Option<Target>> {
    let target = Target::real_from_env()?;
    if target.is_none() {
        eprintln!("kclient-e2e: {test}: SKIPPED (KCLIENT_E2E_KUBECONFIG is not set)");
    }
    Ok(target)
}

/// A name no earlier run on a reused cluster has taken.
fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{prefix}-{}-{nanos}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregated_discovery_and_the_rest_mapper() -> Result<()> {
    let Some(target) = real("aggregated_discovery_and_the_rest_mapper")? else {
        return Ok(());
    };
    let discovery = DiscoveryClient::for_config(&target.config)?;

    // The real server serves aggregated discovery: groups and resources in one answer.
    let all = discovery.groups_and_maybe_resources().await?;
    let resources = all
        .resources
        .as_ref()
        .context("kube-apiserver answered without resources: aggregated discovery was not used")?;
    let core = resources
        .get(&GroupVersion::new("", "v1"))
        .context("no core/v1 resources")?;
    ensure!(core
        .resources
        .iter()
        .any(|r| r.name == "pods" && r.namespaced));
    let apps = resources
        .get(&GroupVersion::new("apps", "v1"))
        .context("no apps/v1 resources")?;
    ensure!(apps.resources.iter().any(|r| r.name == "deployments/scale"));
    ensure!(
        all.failed.is_empty(),
        "failed group-versions: {:?}",
        all.failed.keys()
    );

    // The same answer through the legacy endpoints, one group-version at a time.
    let legacy = DiscoveryClient::for_config(&target.config)?
        .legacy_only(true)
        .server_groups_and_resources()
        .await?
        .complete()?;
    ensure!(legacy
        .resources_for(&GroupVersion::new("apps", "v1"))
        .is_some_and(|l| l.resources.iter().any(|r| r.name == "deployments")));

    // Names as kubectl resolves them.
    let mapper = RestMapper::from_discovery(&discovery).await?;
    let deploy = mapper.find("deploy")?;
    ensure!(
        deploy.gvk.to_string() == "apps/v1, Kind=Deployment",
        "{}",
        deploy.gvk
    );
    ensure!(mapper.find("po")?.resource.resource == "pods");
    ensure!(mapper.find("ConfigMap")?.resource.resource == "configmaps");
    ensure!(mapper.find("no-such-thing").is_err());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_client_round_trip() -> Result<()> {
    let Some(target) = real("dynamic_client_round_trip")? else {
        return Ok(());
    };
    let rest = RestClient::new(target.config.clone())?;
    let config_maps = DynamicClient::new(rest)
        .resource(ConfigMap::api_resource(&()))
        .namespace("default");
    let name = unique("kclient-e2e-dynamic");
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"kclient-e2e": "dynamic"}},
        "data": {"key": "value"}
    }))?;
    let created = config_maps
        .create(&object, &CreateOptions::default())
        .await?;
    ensure!(created.data["data"]["key"] == "value");
    let got = config_maps.get(&name, &GetOptions::default()).await?;
    ensure!(got.uid() == created.uid());

    let listed = config_maps
        .list(&ListOptions::default().labels("kclient-e2e=dynamic"))
        .await?;
    let item = listed
        .items
        .iter()
        .find(|o| o.name_any() == name)
        .context("the created ConfigMap is not listed")?;
    // The server leaves apiVersion/kind out of list items; the dynamic client fills them in.
    let types = item
        .types
        .as_ref()
        .context("list item without apiVersion/kind")?;
    ensure!(types.api_version == "v1" && types.kind == "ConfigMap");

    config_maps.delete(&name, &DeleteOptions::default()).await?;
    let gone = config_maps
        .get(&name, &GetOptions::default())
        .await
        .unwrap_err();
    ensure!(gone.is_not_found(), "{gone}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_deployment_and_scale() -> Result<()> {
    let Some(target) = real("typed_deployment_and_scale")? else {
        return Ok(());
    };
    let clientset = Clientset::from_client(RestClient::new(target.config.clone())?);
    let deployments = clientset.apps_v1().deployments("default");
    let name = unique("kclient-e2e-typed");
    let labels = BTreeMap::from([("app".to_owned(), name.clone())]);
    let deployment = Deployment {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some(1),
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
                        name: "app".into(),
                        image: Some("registry.k8s.io/pause:3.10".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    };
    let created = deployments
        .create(&deployment, &CreateOptions::default())
        .await?;
    ensure!(created.metadata.generation == Some(1));
    let duplicate = deployments
        .create(&deployment, &CreateOptions::default())
        .await
        .unwrap_err();
    ensure!(duplicate.is_already_exists(), "{duplicate}");

    let scale = deployments.scale_to(&name, 3).await?;
    ensure!(scale.spec.and_then(|s| s.replicas) == Some(3));
    let scale = deployments.get_scale(&name).await?;
    ensure!(scale.spec.and_then(|s| s.replicas) == Some(3));
    let got = deployments.get(&name).await?;
    ensure!(got.spec.replicas == Some(3));

    deployments.delete(&name, &DeleteOptions::default()).await?;
    // apps/v1 deletes in the background by default: the Deployment goes at once, and the
    // garbage collector removes its ReplicaSets afterwards.
    ensure!(deployments.get_opt(&name).await?.is_none());
    Ok(())
}
