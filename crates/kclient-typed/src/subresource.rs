//! The `status` and `scale` subresources, offered on the types that have them.
//!
//! Whether a resource has a subresource is a fact of the API server, recorded in the
//! generator's resource table and turned into impls of [`HasStatus`] and [`HasScale`] (in
//! `generated/`), so that `update_status` on a ConfigMap, or `get_scale` on a Pod, does not
//! compile (client-go's `+genclient:noStatus` and its scale markers). Types generated from a
//! CustomResourceDefinition implement them when the CRD enables the subresource.

use k8s_openapi::api::autoscaling::v1::Scale;
use kclient_core::{GetOptions, Patch, PatchOptions, Resource, UpdateOptions};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::apply::ApplyOptions;
use crate::client::{send, ResourceClient};
use crate::error::Error;

/// A resource with the `status` subresource: its status is written through
/// `.../{name}/status`, and writes to the main resource leave it alone.
pub trait HasStatus: Resource {}

/// A resource with the `scale` subresource (`autoscaling/v1` `Scale`): deployments, replica
/// sets, stateful sets, replication controllers, and custom resources that enable it.
pub trait HasScale: Resource {}

impl<K> ResourceClient<K>
where
    K: HasStatus + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    /// Replaces the object's status (a `PUT` to `status`); only the status is written. The
    /// name comes from `object.metadata.name`, and a set `resourceVersion` is checked.
    pub async fn update_status(&self, object: &K, options: &UpdateOptions) -> Result<K, Error> {
        send(
            self.verbs()
                .update_object("update_status", object, options, Some("status")),
        )
        .await
    }

    /// Patches the object's status with any [`Patch`] kind.
    pub async fn patch_status<P: Serialize>(
        &self,
        name: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
    ) -> Result<K, Error> {
        send(
            self.verbs()
                .patch("patch_status", name, patch, options, Some("status")),
        )
        .await
    }

    /// Server-side apply of the status (client-go's `ApplyStatus`); a configuration carrying
    /// `metadata.managedFields` is refused, as by [`apply`](Self::apply).
    pub async fn apply_status<P: Serialize>(
        &self,
        name: &str,
        configuration: &P,
        options: &ApplyOptions,
    ) -> Result<K, Error> {
        let options = options.to_patch_options();
        send(self.verbs().apply(
            "patch_status",
            name,
            configuration,
            &options,
            Some("status"),
        ))
        .await
    }
}

impl<K> ResourceClient<K>
where
    K: HasScale + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    /// Reads the object's scale (client-go's `GetScale`).
    pub async fn get_scale(&self, name: &str) -> Result<Scale, Error> {
        send(
            self.verbs()
                .get("get_scale", name, &GetOptions::default(), Some("scale")),
        )
        .await
    }

    /// Replaces the object's scale (client-go's `UpdateScale`); the desired replicas in
    /// `scale.spec.replicas` are written to the object.
    pub async fn update_scale(
        &self,
        name: &str,
        scale: &Scale,
        options: &UpdateOptions,
    ) -> Result<Scale, Error> {
        send(
            self.verbs()
                .update("update_scale", name, scale, options, Some("scale")),
        )
        .await
    }

    /// Patches the object's scale with any [`Patch`] kind.
    pub async fn patch_scale<P: Serialize>(
        &self,
        name: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
    ) -> Result<Scale, Error> {
        send(
            self.verbs()
                .patch("patch_scale", name, patch, options, Some("scale")),
        )
        .await
    }

    /// Sets the desired replicas through the scale subresource (a merge patch of
    /// `spec.replicas`), and returns the new scale: `kubectl scale`.
    pub async fn scale_to(&self, name: &str, replicas: i32) -> Result<Scale, Error> {
        let patch = Patch::Merge(serde_json::json!({ "spec": { "replicas": replicas } }));
        self.patch_scale(name, &patch, &PatchOptions::default())
            .await
    }
}
