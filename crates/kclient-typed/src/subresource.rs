//! The `status` and `scale` subresources, offered on the types that have them.
//!
//! Whether a resource has a subresource is a fact of the API server, recorded in the
//! generator's resource table and turned into impls of [`HasStatus`] and [`HasScale`] (in
//! `generated/`), so that `update_status` on a ConfigMap, or `get_scale` on a Pod, does not
//! compile (client-go's `+genclient:noStatus` and its scale markers). Types generated from a
//! CustomResourceDefinition implement them when the CRD enables the subresource.

use k8s_openapi::api::autoscaling::v1::Scale;
use kclient_core::{Patch, PatchOptions, Resource, UpdateOptions};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::apply::ApplyOptions;
use kclient_rest::Method;

use crate::client::{name_of, ResourceClient};
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
        options.validate()?;
        let name = name_of(object, "update_status")?;
        Ok(self
            .object_request("update_status", Method::PUT, &name)?
            .subresource("status")
            .params(options.query_pairs())
            .json_body(object)
            .json()
            .await?)
    }

    /// Patches the object's status with any [`Patch`] kind.
    pub async fn patch_status<P: Serialize>(
        &self,
        name: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
    ) -> Result<K, Error> {
        Ok(self
            .patch_request("patch_status", name, patch, options)?
            .subresource("status")
            .json()
            .await?)
    }

    /// Server-side apply of the status (client-go's `ApplyStatus`).
    pub async fn apply_status<P: Serialize>(
        &self,
        name: &str,
        configuration: &P,
        options: &ApplyOptions,
    ) -> Result<K, Error> {
        self.patch_status(
            name,
            &Patch::Apply(configuration),
            &options.to_patch_options(),
        )
        .await
    }
}

impl<K> ResourceClient<K>
where
    K: HasScale + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    /// Reads the object's scale (client-go's `GetScale`).
    pub async fn get_scale(&self, name: &str) -> Result<Scale, Error> {
        Ok(self
            .object_request("get_scale", Method::GET, name)?
            .subresource("scale")
            .json()
            .await?)
    }

    /// Replaces the object's scale (client-go's `UpdateScale`); the desired replicas in
    /// `scale.spec.replicas` are written to the object.
    pub async fn update_scale(
        &self,
        name: &str,
        scale: &Scale,
        options: &UpdateOptions,
    ) -> Result<Scale, Error> {
        options.validate()?;
        Ok(self
            .object_request("update_scale", Method::PUT, name)?
            .subresource("scale")
            .params(options.query_pairs())
            .json_body(scale)
            .json()
            .await?)
    }

    /// Patches the object's scale with any [`Patch`] kind.
    pub async fn patch_scale<P: Serialize>(
        &self,
        name: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
    ) -> Result<Scale, Error> {
        Ok(self
            .patch_request("patch_scale", name, patch, options)?
            .subresource("scale")
            .json()
            .await?)
    }

    /// Sets the desired replicas through the scale subresource (a merge patch of
    /// `spec.replicas`), and returns the new scale: `kubectl scale`.
    pub async fn scale_to(&self, name: &str, replicas: i32) -> Result<Scale, Error> {
        let patch = Patch::Merge(serde_json::json!({ "spec": { "replicas": replicas } }));
        self.patch_scale(name, &patch, &PatchOptions::default())
            .await
    }
}
