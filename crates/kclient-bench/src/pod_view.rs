//! A typed projection of Pods: an informer of a narrow type of the user's own, decoding only
//! the fields it names (here the name, the node and the images) from the Pods' endpoint —
//! the Rust answer to client-go's transforms that drop fields after decoding them all.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kclient_cache::IndexFuncError;
use kclient_core::{ApiResource, Resource};
use serde::{Deserialize, Serialize};

/// What a scheduler-like controller reads of a Pod.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct PodView {
    /// Only identity and version: the other metadata fields (labels, annotations,
    /// managedFields…) are skipped while decoding.
    #[serde(default, deserialize_with = "identity_only")]
    pub(crate) metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) spec: Option<PodViewSpec>,
}

/// The metadata fields a projection needs to be cached: its key and its version.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Identity {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
}

/// Decodes `metadata` keeping only its identity.
fn identity_only<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    let Identity {
        name,
        namespace,
        uid,
        resource_version,
    } = Identity::deserialize(d)?;
    Ok(ObjectMeta {
        name,
        namespace,
        uid,
        resource_version,
        ..ObjectMeta::default()
    })
}

/// The part of a Pod's spec the projection keeps.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodViewSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) node_name: Option<String>,
    #[serde(default)]
    pub(crate) containers: Vec<ContainerImage>,
}

/// A container's image, nothing else.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ContainerImage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) image: Option<String>,
}

/// Listed and watched at the Pods' endpoint.
impl Resource for PodView {
    type DynamicType = ();

    fn api_resource((): &()) -> ApiResource {
        Pod::api_resource(&())
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl PodView {
    /// The by-node index of the lookups scenario.
    pub(crate) fn node(view: &PodView) -> Result<Vec<String>, IndexFuncError> {
        Ok(view
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect())
    }
}
