//! Binding: `POST .../pods/{name}/binding`, how a scheduler assigns a pod to a node.

use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kclient_core::CreateOptions;
use kclient_rest::Method;

use crate::client::ResourceClient;
use crate::error::Error;

impl ResourceClient<Pod> {
    /// Binds a pod to a node (what a scheduler does; client-go's `Bind`).
    pub async fn bind_to_node(&self, name: &str, node: &str) -> Result<(), Error> {
        let binding = Binding {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: self.namespace().map(str::to_owned),
                ..ObjectMeta::default()
            },
            target: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(node.to_owned()),
                ..ObjectReference::default()
            },
        };
        self.bind(&binding, &CreateOptions::default()).await
    }

    /// Posts a `Binding` for the pod named in `binding.metadata.name` (client-go's `Bind`).
    pub async fn bind(&self, binding: &Binding, options: &CreateOptions) -> Result<(), Error> {
        options.validate()?;
        // Refused without a name, as every call on one object is.
        let name = binding.metadata.name.as_deref().unwrap_or_default();
        self.object_request("bind", Method::POST, name)?
            .subresource("binding")
            .params(options.query_pairs())
            .json_body(binding)
            .send()
            .await?;
        Ok(())
    }
}
