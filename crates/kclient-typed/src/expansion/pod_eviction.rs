//! Eviction: `POST .../pods/{name}/eviction` (policy/v1), the disruption-budget-aware delete.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::Eviction;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, ObjectMeta};
use kclient_rest::Method;

use crate::client::ResourceClient;
use crate::error::Error;

impl ResourceClient<Pod> {
    /// Evicts a pod (client-go's `EvictV1`): the server deletes it unless that would violate
    /// a PodDisruptionBudget, in which case it answers `429 TooManyRequests`
    /// (`is_too_many_requests()`), to be retried later.
    pub async fn evict(
        &self,
        name: &str,
        delete_options: Option<DeleteOptions>,
    ) -> Result<(), Error> {
        let eviction = Eviction {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: self.namespace().map(str::to_owned),
                ..ObjectMeta::default()
            },
            delete_options,
        };
        self.evict_with(&eviction).await
    }

    /// Evicts the pod named in `eviction.metadata.name` with the full `Eviction` object.
    pub async fn evict_with(&self, eviction: &Eviction) -> Result<(), Error> {
        // Refused without a name, as every call on one object is.
        let name = eviction.metadata.name.as_deref().unwrap_or_default();
        self.object_request("evict", Method::POST, name)?
            .subresource("eviction")
            .json_body(eviction)
            .send()
            .await?;
        Ok(())
    }
}
