//! Creates, updates, lists and deletes a Deployment with the dynamic client (client-go's
//! `examples/dynamic-create-update-delete-deployment`): no Rust type for the object, only
//! its group-version-resource and JSON, as a program does for a kind it learns at run time
//! (a CRD, a resource named on the command line). The typed counterpart is
//! `examples/deployment.rs` (kclient-typed).
//!
//! * **create** a `DynamicObject` built from JSON;
//! * **update** with a read-modify-write (replicas to 1, image to `nginx:1.13`), retried on
//!   `409 Conflict` with `kclient_tools::retry::retry_on_conflict` (client-go's
//!   `retry.RetryOnConflict`), reading the object afresh each try;
//! * **list** with the fields read from the untyped JSON;
//! * **delete** in the foreground (the ReplicaSets go first).
//!
//! ```text
//! cargo run -p kclient --features fake,tools --example dynamic_deployment                     # kclient-fake
//! cargo run -p kclient --features fake,tools --example dynamic_deployment -- --kubeconfig ~/.kube/config
//! ```

use kclient::core::{
    ApiStatus, CreateOptions, DeleteOptions, DeleteResponse, DynamicObject, ErrorReport,
    GetOptions, GroupVersionResource, ListOptions, UpdateOptions,
};
use kclient::dynamic::{DynamicClient, DynamicResource};
use kclient::fake::FakeApiServer;
use kclient::rest::{Config, KubeconfigOptions, RestClient};
use kclient::tools::retry::{retry_on_conflict, DEFAULT_RETRY};
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

const NAME: &str = "demo-deployment";

/// The Deployment as client-go's example writes it, as plain JSON.
fn demo_deployment() -> Result<DynamicObject, Error> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": NAME},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "demo"}},
            "template": {
                "metadata": {"labels": {"app": "demo"}},
                "spec": {"containers": [{
                    "name": "web",
                    "image": "nginx:1.12",
                    "ports": [{"name": "http", "protocol": "TCP", "containerPort": 80}]
                }]}
            }
        }
    }))?)
}

/// Replicas and image of a Deployment read from its JSON.
fn replicas_and_image(d: &DynamicObject) -> (i64, String) {
    let spec = &d.data["spec"];
    (
        spec["replicas"].as_i64().unwrap_or(1),
        spec["template"]["spec"]["containers"][0]["image"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// What the example did, for its test.
#[derive(Debug, PartialEq)]
struct Outcome {
    /// Replicas and image after the update.
    updated: (i64, String),
    /// The Deployments listed before the deletion.
    listed: Vec<String>,
    /// Whether a get after the deletion found nothing.
    gone: bool,
}

async fn run(deployments: DynamicResource) -> Result<Outcome, Error> {
    println!("Creating deployment...");
    let created = deployments
        .create(&demo_deployment()?, &CreateOptions::default())
        .await?;
    println!(
        "Created deployment {:?}.",
        created.metadata.name.as_deref().unwrap_or_default()
    );

    println!("Updating deployment...");
    // Read, modify, write; on a conflict (someone else changed it since the read), again
    // from a fresh read.
    let updated = retry_on_conflict(DEFAULT_RETRY, || async {
        let mut current = deployments.get(NAME, &GetOptions::default()).await?;
        current.data["spec"]["replicas"] = json!(1);
        current.data["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.13");
        deployments
            .update(&current, &UpdateOptions::default())
            .await
    })
    .await?;
    let (replicas, image) = replicas_and_image(&updated);
    println!("Updated deployment: {replicas} replica(s), image {image}");

    println!(
        "Listing deployments in namespace {}:",
        deployments.namespace_name().unwrap_or_default()
    );
    let list = deployments.list(&ListOptions::default()).await?;
    let mut listed = Vec::new();
    for d in list.items {
        let (replicas, _) = replicas_and_image(&d);
        let name = d.metadata.name.clone().unwrap_or_default();
        println!(" * {name} ({replicas} replicas)");
        listed.push(name);
    }

    println!("Deleting deployment...");
    match deployments
        .delete(NAME, &DeleteOptions::foreground())
        .await?
    {
        DeleteResponse::Object(_) => println!("Deletion in progress (foreground)."),
        DeleteResponse::Status(_) => println!("Deleted deployment."),
    }
    let gone = match deployments.get(NAME, &GetOptions::default()).await {
        Err(e) if e.is_not_found() => true,
        Err(e) => return Err(e.into()),
        // Foreground deletion: on a cluster the object stays, with a deletionTimestamp,
        // until its ReplicaSets are gone.
        Ok(_) => false,
    };
    Ok(Outcome {
        updated: (replicas, image),
        listed,
        gone,
    })
}

/// The Deployments of `config`'s namespace, addressed by group-version-resource.
fn deployments(config: Config) -> Result<DynamicResource, Error> {
    let namespace = config.namespace().to_owned();
    let client = DynamicClient::new(RestClient::new(config)?);
    let gvr = GroupVersionResource::new("apps", "v1", "deployments");
    Ok(client.resource(gvr).namespace(namespace))
}

#[tokio::main]
async fn main() -> Result<(), ErrorReport> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (_server, config) = match args.iter().position(|a| a == "--kubeconfig") {
        Some(i) => {
            let path = args.get(i + 1).ok_or("--kubeconfig needs a path")?;
            let options = KubeconfigOptions {
                path: Some(path.into()),
                ..Default::default()
            };
            (None, Config::from_kubeconfig(&options)?)
        }
        None => {
            let server = FakeApiServer::builder().start().await?;
            println!(
                "Started kclient-fake at {} (pass --kubeconfig for a cluster)",
                server.url()
            );
            let config = server.config()?;
            (Some(server), config)
        }
    };
    let outcome = run(deployments(config)?).await?;
    println!("{outcome:?}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn create_update_list_delete_through_the_dynamic_client() -> Result<(), Error> {
        let server = FakeApiServer::builder().start().await?;
        let outcome = run(deployments(server.config()?)?).await?;
        assert_eq!(
            outcome,
            Outcome {
                updated: (1, "nginx:1.13".into()),
                listed: vec![NAME.to_owned()],
                gone: true,
            }
        );
        Ok(())
    }

    #[tokio::test]
    async fn an_update_that_meets_a_conflict_is_retried_from_a_fresh_read() -> Result<(), Error> {
        let server = FakeApiServer::builder().start().await?;
        let deployments = deployments(server.config()?)?;
        deployments
            .create(&demo_deployment()?, &CreateOptions::default())
            .await?;
        let stale = deployments.get(NAME, &GetOptions::default()).await?;
        // Someone else writes in between: the stale copy's update is refused.
        let mut other = stale.clone();
        other.data["spec"]["replicas"] = json!(7);
        deployments
            .update(&other, &UpdateOptions::default())
            .await?;
        let refused = deployments.update(&stale, &UpdateOptions::default()).await;
        assert!(refused.unwrap_err().is_conflict());
        // The example's loop reads afresh and wins on the next try.
        let mut tries = 0;
        let updated = retry_on_conflict(DEFAULT_RETRY, || {
            tries += 1;
            let deployments = deployments.clone();
            let stale = stale.clone();
            async move {
                let mut current = if tries == 1 {
                    stale
                } else {
                    deployments.get(NAME, &GetOptions::default()).await?
                };
                current.data["spec"]["replicas"] = json!(1);
                deployments
                    .update(&current, &UpdateOptions::default())
                    .await
            }
        })
        .await?;
        assert_eq!(tries, 2);
        assert_eq!(replicas_and_image(&updated).0, 1);
        Ok(())
    }
}
