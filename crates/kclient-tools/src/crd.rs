//! Installing CustomResourceDefinitions: each applied (server-side apply), then waited for
//! until the API server serves it — `Established`, its names accepted, its resource in
//! discovery for every served version (controller-runtime's `envtest.InstallCRDs` and
//! `WaitForCRDs`). The wait is bounded, and a CRD the server refuses, or whose names clash
//! with another's, fails at once with a typed error.
//!
//! ```no_run
//! use std::time::Duration;
//! use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
//! use kclient_tools::crd::install_crds;
//! use kclient_typed::Clientset;
//!
//! # async fn run(clientset: Clientset, crd: CustomResourceDefinition) -> Result<(), kclient_tools::crd::InstallCrdError> {
//! // With kclient-derive: `install_crds(&clientset, &[Memcached::crd()], ..)`.
//! let installed = install_crds(&clientset, &[crd], Duration::from_secs(30)).await?;
//! # let _ = installed; Ok(()) }
//! ```

use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kclient_core::ApiStatus;
use kclient_typed::{ApplyOptions, Clientset};
use tokio::time::Instant;

/// The field manager the CRDs are applied as.
pub const FIELD_MANAGER: &str = "kclient-install-crds";

/// How often the CRD and discovery are read while waiting.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Why a CRD was not installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallCrdError {
    /// The CRD has no name.
    #[error("a CustomResourceDefinition to install has no metadata.name")]
    NoName,
    /// The server refused the CRD (`422 Invalid` with the schema's errors, `403 Forbidden`
    /// …), or reading it or discovery failed.
    #[error("CustomResourceDefinition {name}: {source}")]
    Request {
        /// The CRD.
        name: String,
        /// The server's answer.
        #[source]
        source: Box<kclient_typed::Error>,
    },
    /// The server did not accept the CRD's names (another CRD of the group has its kind, a
    /// short name …): its `NamesAccepted` condition is `False`.
    #[error("CustomResourceDefinition {name}: names not accepted ({reason}): {message}")]
    NamesNotAccepted {
        /// The CRD.
        name: String,
        /// The condition's reason.
        reason: String,
        /// The condition's message.
        message: String,
    },
    /// The CRD was not served within the time given.
    #[error("CustomResourceDefinition {name} was not served within {timeout:?} (last seen: {last_seen})")]
    Timeout {
        /// The CRD.
        name: String,
        /// The time given.
        timeout: Duration,
        /// What was last seen of it: its conditions and what discovery served.
        last_seen: String,
    },
}

impl ApiStatus for InstallCrdError {
    fn api_status(&self) -> Option<&kclient_core::Status> {
        match self {
            InstallCrdError::Request { source, .. } => source.api_status(),
            _ => None,
        }
    }
}

/// Installs `crd` and waits, at most `timeout`, until it is served; returns it as the server
/// has it.
pub async fn install_crd(
    clientset: &Clientset,
    crd: &CustomResourceDefinition,
    timeout: Duration,
) -> Result<CustomResourceDefinition, InstallCrdError> {
    let mut installed = install_crds(clientset, std::slice::from_ref(crd), timeout).await?;
    Ok(installed.remove(0))
}

/// Installs `crds` (all applied first, then waited for together), each served within
/// `timeout` of the start; returns them as the server has them.
pub async fn install_crds(
    clientset: &Clientset,
    crds: &[CustomResourceDefinition],
    timeout: Duration,
) -> Result<Vec<CustomResourceDefinition>, InstallCrdError> {
    apply_and_wait(clientset, crds, timeout).await
}

/// [`install_crds`]' body, boxed in this crate so that it is compiled here once: an `async
/// fn`'s body is compiled in each crate that awaits it ("Compiled once" in
/// docs/architecture.md).
#[inline(never)]
fn apply_and_wait<'a>(
    clientset: &'a Clientset,
    crds: &'a [CustomResourceDefinition],
    timeout: Duration,
) -> BoxFuture<'a, Result<Vec<CustomResourceDefinition>, InstallCrdError>> {
    Box::pin(async move {
        let client = clientset.cluster_scoped::<CustomResourceDefinition>();
        let options = ApplyOptions::new(FIELD_MANAGER).force();
        let mut names = Vec::with_capacity(crds.len());
        for crd in crds {
            let name = crd.metadata.name.clone().ok_or(InstallCrdError::NoName)?;
            client
                .apply(&name, &ApplyConfiguration::of(crd), &options)
                .await
                .map_err(|source| InstallCrdError::Request {
                    name: name.clone(),
                    source: Box::new(source),
                })?;
            names.push(name);
        }
        let deadline = Instant::now() + timeout;
        let mut installed = Vec::with_capacity(names.len());
        for name in names {
            let left = deadline.saturating_duration_since(Instant::now());
            installed.push(wait_until_served(clientset, &name, left, timeout).await?);
        }
        Ok(installed)
    })
}

/// What is applied of a CRD: its type, its metadata without the server's fields
/// (`managedFields`, `resourceVersion`) and its spec, borrowed; never its status.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ApplyConfiguration<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: ObjectMeta,
    spec: &'a CustomResourceDefinitionSpec,
}

impl<'a> ApplyConfiguration<'a> {
    fn of(crd: &'a CustomResourceDefinition) -> Self {
        let mut metadata = crd.metadata.clone();
        metadata.managed_fields = None;
        metadata.resource_version = None;
        Self {
            api_version: <CustomResourceDefinition as k8s_openapi::Resource>::API_VERSION,
            kind: <CustomResourceDefinition as k8s_openapi::Resource>::KIND,
            metadata,
            spec: &crd.spec,
        }
    }
}

/// What one look at a CRD found.
enum Served {
    Yes(Box<CustomResourceDefinition>),
    Not(String),
}

/// Waits until `name` is served, at most `left` (a read that hangs included).
async fn wait_until_served(
    clientset: &Clientset,
    name: &str,
    left: Duration,
    timeout: Duration,
) -> Result<CustomResourceDefinition, InstallCrdError> {
    let deadline = Instant::now() + left;
    let mut last_seen = String::from("nothing yet");
    loop {
        match tokio::time::timeout_at(deadline, look(clientset, name)).await {
            Ok(Ok(Served::Yes(crd))) => return Ok(*crd),
            Ok(Ok(Served::Not(why))) => last_seen = why,
            Ok(Err(e)) => return Err(e),
            Err(_) => break,
        }
        if Instant::now() + POLL_INTERVAL > deadline {
            tokio::time::sleep_until(deadline).await;
            break;
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
    Err(InstallCrdError::Timeout {
        name: name.to_owned(),
        timeout,
        last_seen,
    })
}

/// Reads the CRD and, once it is established, discovery for each served version.
async fn look(clientset: &Clientset, name: &str) -> Result<Served, InstallCrdError> {
    let request_error = |source| InstallCrdError::Request {
        name: name.to_owned(),
        source: Box::new(source),
    };
    let crd = clientset
        .cluster_scoped::<CustomResourceDefinition>()
        .get(name)
        .await
        .map_err(request_error)?;
    let conditions = crd
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let condition = |t: &str| conditions.iter().find(|c| c.type_ == t);
    if let Some(names) = condition("NamesAccepted").filter(|c| c.status == "False") {
        return Err(InstallCrdError::NamesNotAccepted {
            name: name.to_owned(),
            reason: names.reason.clone().unwrap_or_default(),
            message: names.message.clone().unwrap_or_default(),
        });
    }
    let described: Vec<String> = conditions
        .iter()
        .map(|c| format!("{}={}", c.type_, c.status))
        .collect();
    if condition("Established").is_none_or(|c| c.status != "True") {
        return Ok(Served::Not(format!(
            "conditions [{}]",
            described.join(", ")
        )));
    }
    for version in crd.spec.versions.iter().filter(|v| v.served) {
        let path = format!("/apis/{}/{}", crd.spec.group, version.name);
        let resources = clientset
            .rest_client()
            .get()
            .abs_path(path.as_str())
            .json::<serde_json::Value>()
            .await;
        let listed = match &resources {
            Ok(list) => list["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["name"] == crd.spec.names.plural.as_str()),
            // Not served yet.
            Err(e) if e.is_not_found() => false,
            Err(_) => {
                return resources
                    .map(|_| Served::Not(String::new()))
                    .map_err(|e| request_error(e.into()))
            }
        };
        if !listed {
            return Ok(Served::Not(format!(
                "conditions [{}], {path} does not serve {} yet",
                described.join(", "),
                crd.spec.names.plural
            )));
        }
    }
    Ok(Served::Yes(Box::new(crd)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The configuration is the CRD as it serializes, less status, managedFields and
    /// resourceVersion.
    #[test]
    fn apply_configuration_is_the_crd_without_the_server_s_fields() {
        let crd: CustomResourceDefinition = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com", "labels": {"app": "w"},
                         "resourceVersion": "7", "managedFields": [{"manager": "kubectl"}]},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}]},
            "status": {"conditions": [{"type": "Established", "status": "True"}],
                       "acceptedNames": {"plural": "widgets", "kind": "Widget"}}
        }))
        .unwrap();
        let mut expected = serde_json::to_value(&crd).unwrap();
        let object = expected.as_object_mut().unwrap();
        object.remove("status");
        let metadata = object["metadata"].as_object_mut().unwrap();
        metadata.remove("managedFields");
        metadata.remove("resourceVersion");
        let configuration = serde_json::to_value(ApplyConfiguration::of(&crd)).unwrap();
        assert_eq!(configuration, expected);
        assert_eq!(configuration["metadata"]["labels"]["app"], "w");
    }
}
