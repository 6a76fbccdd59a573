//! Creates, updates, scales and deletes a Deployment with the typed Clientset, the shape of
//! client-go's `examples/create-update-delete-deployment`.
//!
//! By default it runs against kclient-fake, started in-process; with `KUBECONFIG` set it runs
//! against that cluster instead (in the kubeconfig context's namespace):
//!
//! ```text
//! cargo run -p kclient-typed --example deployment
//! KUBECONFIG=~/.kube/config cargo run -p kclient-typed --example deployment
//! ```

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, ContainerPort, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kclient_core::{ApiStatus, CreateOptions, DeleteOptions, ListOptions, UpdateOptions};
use kclient_fake::FakeApiServer;
use kclient_rest::Config;
use kclient_typed::{Clientset, DeleteResponse, ResourceClient};

const NAME: &str = "demo-deployment";

fn demo_deployment() -> Deployment {
    let labels = BTreeMap::from([("app".to_owned(), "demo".to_owned())]);
    Deployment {
        metadata: ObjectMeta {
            name: Some(NAME.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(2),
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
                        image: Some("nginx:1.12".into()),
                        ports: Some(vec![ContainerPort {
                            name: Some("http".into()),
                            container_port: 80,
                            ..ContainerPort::default()
                        }]),
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

/// Changes the image with a read-modify-write, retrying when another writer got there first
/// (client-go's `retry.RetryOnConflict`).
async fn update_image(
    deployments: &ResourceClient<Deployment>,
    image: &str,
) -> Result<Deployment, kclient_typed::Error> {
    loop {
        let mut current = deployments.get(NAME).await?;
        let spec = current.spec.get_or_insert_with(Default::default);
        let pod = spec.template.spec.get_or_insert_with(Default::default);
        pod.containers[0].image = Some(image.to_owned());
        match deployments
            .update(&current, &UpdateOptions::default())
            .await
        {
            Err(e) if e.is_conflict() => continue,
            other => return other,
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A cluster when KUBECONFIG says so, else a fake API server in this process.
    let (_fake, config) = if std::env::var_os("KUBECONFIG").is_some() {
        (None, Config::infer()?)
    } else {
        let server = FakeApiServer::builder().start().await?;
        println!("Started kclient-fake at {}", server.url());
        let config = Config::new(server.url());
        (Some(server), config)
    };
    let namespace = config.namespace().to_owned();
    let clientset = Clientset::new(config)?;
    let deployments = clientset.apps_v1().deployments(&namespace);

    println!("Creating deployment {NAME} in {namespace}...");
    let created = deployments
        .create(&demo_deployment(), &CreateOptions::default())
        .await?;
    println!(
        "Created deployment {:?} (resourceVersion {:?})",
        created.metadata.name.as_deref().unwrap_or_default(),
        created
            .metadata
            .resource_version
            .as_deref()
            .unwrap_or_default()
    );

    println!("Updating the image to nginx:1.13...");
    let updated = update_image(&deployments, "nginx:1.13").await?;
    let image = updated
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers[0].image.clone());
    println!("Updated deployment: image is now {image:?}");

    println!("Scaling to 5 replicas through the scale subresource...");
    let scale = deployments.scale_to(NAME, 5).await?;
    println!(
        "Scaled: spec.replicas = {:?}",
        scale.spec.and_then(|s| s.replicas)
    );

    println!("Listing deployments in {namespace}:");
    for d in deployments.list_all(&ListOptions::default()).await? {
        let replicas = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        println!(
            " * {} ({replicas} replicas)",
            d.metadata.name.as_deref().unwrap_or_default()
        );
    }

    println!("Deleting deployment {NAME}...");
    match deployments
        .delete(NAME, &DeleteOptions::foreground())
        .await?
    {
        DeleteResponse::Object(d) => println!(
            "Deletion in progress (deletionTimestamp {:?})",
            d.metadata.deletion_timestamp.map(|t| t.0.to_string())
        ),
        DeleteResponse::Status(s) => println!("Deleted ({})", s.status),
    }
    Ok(())
}
