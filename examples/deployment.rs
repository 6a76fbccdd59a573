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
//!
//! The dynamic counterpart, with no Rust type for the object, is
//! `examples/dynamic_deployment.rs`.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use kclient_core::{
    ApiStatus, CreateOptions, DeleteOptions, DeleteResponse, ErrorReport, ListOptions,
    UpdateOptions,
};
use kclient_fake::FakeApiServer;
use kclient_rest::Config;
use kclient_typed::{Clientset, ResourceClient};
use serde_json::json;

const NAME: &str = "demo-deployment";

fn demo_deployment() -> Deployment {
    // Built from JSON, which reads the same for every Kubernetes version: k8s-openapi models
    // `Deployment.spec` as `Option<DeploymentSpec>` up to 1.36 and as `DeploymentSpec` from
    // 1.37 on (see `spec` below).
    serde_json::from_value(json!({
        "metadata": { "name": NAME },
        "spec": {
            "replicas": 2,
            "selector": { "matchLabels": { "app": "demo" } },
            "template": {
                "metadata": { "labels": { "app": "demo" } },
                "spec": {
                    "containers": [{
                        "name": "web",
                        "image": "nginx:1.12",
                        "ports": [{ "name": "http", "containerPort": 80 }]
                    }]
                }
            }
        }
    }))
    .expect("a valid Deployment")
}

/// The Deployment's spec for every Kubernetes version: `Option::from` turns a reference to
/// either model (`Option<DeploymentSpec>` up to 1.36, `DeploymentSpec` from 1.37 on) into an
/// `Option<&DeploymentSpec>`. A program written for one version just uses `d.spec`.
fn spec(d: &Deployment) -> Option<&DeploymentSpec> {
    Option::from(&d.spec)
}

/// [`spec`], mutable.
fn spec_mut(d: &mut Deployment) -> Option<&mut DeploymentSpec> {
    Option::from(&mut d.spec)
}

/// Changes the image with a read-modify-write, retrying when another writer got there first
/// (client-go's `retry.RetryOnConflict`).
async fn update_image(
    deployments: &ResourceClient<Deployment>,
    image: &str,
) -> Result<Deployment, kclient_typed::Error> {
    loop {
        let mut current = deployments.get(NAME).await?;
        let spec = spec_mut(&mut current).expect("the API server returns the spec");
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

/// What the example did, for its test.
#[derive(Debug, PartialEq)]
struct Outcome {
    /// The image after the update.
    image: Option<String>,
    /// `spec.replicas` of the scale after scaling.
    scaled: Option<i32>,
    /// The Deployments listed, with their replicas.
    listed: Vec<(String, i32)>,
}

/// Creates, updates, scales, lists and deletes the Deployment in `namespace`.
async fn run(clientset: &Clientset, namespace: &str) -> Result<Outcome, kclient_typed::Error> {
    let deployments = clientset.apps_v1().deployments(namespace);

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
    let image = spec(&updated)
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers[0].image.clone());
    println!("Updated deployment: image is now {image:?}");

    println!("Scaling to 5 replicas through the scale subresource...");
    let scale = deployments.scale_to(NAME, 5).await?;
    let scaled = scale.spec.and_then(|s| s.replicas);
    println!("Scaled: spec.replicas = {scaled:?}");

    println!("Listing deployments in {namespace}:");
    let mut listed = Vec::new();
    for d in deployments.list_all(&ListOptions::default()).await? {
        let replicas = spec(&d).and_then(|s| s.replicas).unwrap_or(1);
        let name = d.metadata.name.clone().unwrap_or_default();
        println!(" * {name} ({replicas} replicas)");
        listed.push((name, replicas));
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
    Ok(Outcome {
        image,
        scaled,
        listed,
    })
}

#[tokio::main]
async fn main() -> Result<(), ErrorReport> {
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
    run(&Clientset::new(config)?, &namespace).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kclient_core::GroupResource;

    #[tokio::test]
    async fn create_update_scale_list_delete_against_kclient_fake(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let server = FakeApiServer::builder().start().await?;
        let clientset = Clientset::new(Config::new(server.url()))?;
        let outcome = run(&clientset, "default").await?;
        assert_eq!(
            outcome,
            Outcome {
                image: Some("nginx:1.13".into()),
                scaled: Some(5),
                listed: vec![(NAME.to_owned(), 5)],
            }
        );
        // Foreground deletion of a Deployment without dependents: gone at once.
        assert!(server
            .get_value(&GroupResource::new("apps", "deployments"), "default", NAME)
            .is_none());
        Ok(())
    }
}
