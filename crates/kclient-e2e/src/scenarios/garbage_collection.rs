//! Owner references and the three propagation policies: a dependent goes with its owner
//! (`Background`), outlives it without the reference (`Orphan`), or holds the owner, marked
//! with the `foregroundDeletion` finalizer, until it is gone (`Foreground`). On the real server
//! kube-controller-manager's garbage collector does the work, asynchronously; the scenario
//! polls for the end states and records only those.

use std::time::Duration;

use anyhow::{Context, Result};
use http::{Method, StatusCode};
use serde_json::{json, Value};

use super::{config_map, outcome, poll, until_not_found, Namespace};
use crate::target::Target;
use crate::transcript::Transcript;

/// How long the garbage collector may take.
const COLLECTED: Duration = Duration::from_secs(60);

fn dependent_of(name: &str, owner: &Value) -> Value {
    let mut dependent = config_map(name, "gc", json!({}));
    dependent["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": true,
    }]);
    dependent
}

/// One owner and one dependent per policy.
pub async fn garbage_collection(target: &Target) -> Result<Transcript> {
    let client = target.client()?;
    let ns = Namespace::create(&client, "gc").await?;
    let mut t = Transcript::new();
    let path = ns.core("configmaps");

    for policy in ["Background", "Orphan", "Foreground"] {
        let lower = policy.to_lowercase();
        let (owner_name, dependent_name) = (format!("owner-{lower}"), format!("dep-{lower}"));
        let owner = client
            .post(&path, &config_map(&owner_name, "gc", json!({})))
            .await?
            .expect(StatusCode::CREATED)?;
        client
            .post(&path, &dependent_of(&dependent_name, &owner.body))
            .await?
            .expect(StatusCode::CREATED)?;
        let owner_path = format!("{path}/{owner_name}");
        let dependent_path = format!("{path}/{dependent_name}");

        let options = json!({
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": policy,
        });
        let deleted = client
            .request(
                Method::DELETE,
                &owner_path,
                Some(("application/json", &options)),
            )
            .await?;
        t.record(format!("{policy}: delete the owner"), outcome(&deleted));
        let deleted = deleted.expect(StatusCode::OK)?;
        // What the delete answers: a Status once the owner is gone, or the owner, marked.
        t.record(
            format!("{policy}: the delete answers"),
            json!({
                "kind": deleted.body["kind"],
                "finalizers": deleted.body["metadata"]["finalizers"],
            }),
        );

        until_not_found(&client, &owner_path, COLLECTED).await?;
        match policy {
            "Orphan" => {
                let (client, dependent_path) = (&client, &dependent_path);
                let references = poll(COLLECTED, move || async move {
                    let dependent = client.get(dependent_path).await?.expect(StatusCode::OK)?;
                    let references = dependent.body["metadata"]["ownerReferences"].clone();
                    Ok(references.is_null().then_some(references))
                })
                .await
                .context("the orphan kept its owner reference")?;
                t.record(
                    format!("{policy}: the dependent stays, its ownerReferences"),
                    references,
                );
            }
            _ => {
                until_not_found(&client, &dependent_path, COLLECTED).await?;
                t.record(format!("{policy}: the dependent is deleted"), true);
            }
        }
    }
    ns.delete().await?;
    Ok(t)
}
