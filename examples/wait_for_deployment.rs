//! `kubectl wait --for=condition=Available deployment/NAME` in kclient: wait until a
//! Deployment is available at its latest spec, with kclient-tools' `until_with_sync`.
//!
//! * the wait is informer-backed: it lists and watches only this Deployment (a
//!   `metadata.name` field selector, as kubectl does) and survives dropped watches and
//!   expired resourceVersions by relisting;
//! * `deployment_available` is met once the Deployment controller has observed the latest
//!   generation and reports `Available=True` — a status written for an older spec does not
//!   count — and fails if the rollout exceeded its progress deadline;
//! * a precondition fails at once if the Deployment does not exist; the wait has a timeout.
//!
//! ```text
//! cargo run -p kclient --features fake,tools --example wait_for_deployment       # kclient-fake, a scripted rollout
//! cargo run -p kclient --features fake,tools --example wait_for_deployment -- \
//!     --kubeconfig ~/.kube/config --namespace default --name web [--timeout 300]
//! ```
//!
//! kclient-fake runs no controllers, so against it the example plays the Deployment
//! controller itself: it creates the Deployment and writes its status in two steps.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kclient::core::{CreateOptions, ErrorReport, FilteredListWatch, ListOptions, UpdateOptions};
use kclient::fake::FakeApiServer;
use kclient::rest::{Config, KubeconfigOptions, RestClient};
use kclient::tools::watch::{conditions, until_with_sync, Precondition};
use kclient::typed::Clientset;
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Waits until `namespace/name` is available, at most `timeout`; returns the Deployment as
/// it was when it became available.
async fn wait_available(
    clientset: &Clientset,
    namespace: &str,
    name: &str,
    timeout: Duration,
) -> Result<Arc<Deployment>, Error> {
    let selector = format!("metadata.name={name}");
    let one_deployment = FilteredListWatch::new(
        clientset.apps_v1().deployments(namespace),
        Arc::new(move |options: &mut ListOptions| options.field_selector = Some(selector.clone())),
    );
    let key = format!("{namespace}/{name}");
    let exists: Precondition<Deployment> = Box::new(move |cache| match cache.get_by_key(&key) {
        Some(_) => Ok(false),
        None => Err(format!("deployment {key} not found").into()),
    });
    let available = conditions::named(namespace, name, conditions::deployment_available());
    let event = tokio::time::timeout(
        timeout,
        until_with_sync(one_deployment, Some(exists), [available]),
    )
    .await
    .map_err(|_| {
        format!("timed out after {timeout:?} waiting for deployment {name} to be available")
    })??;
    let deployment = event
        .and_then(|e| e.object().cloned())
        .ok_or("the wait ended without an event")?;
    Ok(deployment)
}

/// kclient-fake has no Deployment controller: create the Deployment, then, on a task of its
/// own, write what the controller would — first a status for the previous generation, then
/// the current one.
async fn scripted_rollout(clientset: &Clientset) -> Result<(), Error> {
    let deployments = clientset.apps_v1().deployments("default");
    let web: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}
    }))?;
    let mut web = deployments.create(&web, &CreateOptions::default()).await?;
    tokio::spawn(async move {
        let generation = web.metadata.generation;
        for (observed, available) in [(generation.map(|g| g - 1), "False"), (generation, "True")] {
            tokio::time::sleep(Duration::from_millis(300)).await;
            println!(
                "  (controller) status: observedGeneration={observed:?} Available={available}"
            );
            web.status = serde_json::from_value(json!({
                "observedGeneration": observed, "replicas": 2, "updatedReplicas": 2,
                "availableReplicas": if available == "True" { 2 } else { 0 },
                "conditions": [{"type": "Available", "status": available,
                                "reason": "MinimumReplicasAvailable"}]
            }))
            .ok();
            match deployments
                .update_status(&web, &UpdateOptions::default())
                .await
            {
                Ok(updated) => web = updated,
                Err(e) => return eprintln!("scripted rollout failed: {e}"),
            }
        }
    });
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), ErrorReport> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let timeout = Duration::from_secs(flag("--timeout").map_or(Ok(300), |t| t.parse())?);
    let (clientset, namespace, name, _server) = match flag("--kubeconfig") {
        Some(path) => {
            let config = Config::from_kubeconfig(&KubeconfigOptions {
                path: Some(path.into()),
                ..Default::default()
            })?;
            let namespace = flag("--namespace").unwrap_or_else(|| "default".into());
            let name = flag("--name").ok_or("--name NAME: the Deployment to wait for")?;
            (Clientset::new(config)?, namespace, name, None)
        }
        None => {
            let server = FakeApiServer::builder().start().await?;
            println!(
                "Started kclient-fake at {} (pass --kubeconfig for a cluster)",
                server.url()
            );
            let clientset = Clientset::from_client(RestClient::new(Config::new(server.url()))?);
            scripted_rollout(&clientset).await?;
            (
                clientset,
                "default".to_owned(),
                "web".to_owned(),
                Some(server),
            )
        }
    };
    println!("Waiting for deployment {namespace}/{name} to be available (timeout {timeout:?})");
    let deployment = wait_available(&clientset, &namespace, &name, timeout).await?;
    let status = deployment.status.as_ref();
    println!(
        "deployment.apps/{name} condition met (observedGeneration {:?}, {} available replicas)",
        status.and_then(|s| s.observed_generation),
        status
            .and_then(|s| s.available_replicas)
            .unwrap_or_default()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waits_for_the_status_of_the_latest_generation() -> Result<(), Error> {
        let server = FakeApiServer::builder().start().await?;
        let clientset = Clientset::from_client(RestClient::new(Config::new(server.url()))?);
        scripted_rollout(&clientset).await?;
        let deployment =
            wait_available(&clientset, "default", "web", Duration::from_secs(30)).await?;
        let status = deployment.status.as_ref().unwrap();
        assert_eq!(status.observed_generation, deployment.metadata.generation);
        assert_eq!(status.available_replicas, Some(2));

        let missing =
            wait_available(&clientset, "default", "absent", Duration::from_secs(30)).await;
        assert!(missing.unwrap_err().to_string().contains("not found"));
        Ok(())
    }
}
