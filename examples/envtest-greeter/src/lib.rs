//! A tiny operator: for each `Greeting`, a ConfigMap of the same name holding its message,
//! and a status saying it was greeted. Its test (`tests/greeter.rs`) runs it against a real
//! kube-apiserver with kclient-envtest.

use std::sync::Arc;

use kclient::controller::owner::new_controlled_by;
use kclient::core::{CancellationToken, Patch};
use kclient::k8s_openapi::api::core::v1::ConfigMap;
use kclient::prelude::*;
use kclient::typed::ApplyOptions;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whom to greet. kube-apiserver refuses a Greeting of `nobody` (a CEL rule).
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "greeter.example.com",
    version = "v1",
    kind = "Greeting",
    namespaced
)]
#[kube(status = "GreetingStatus")]
#[kube(validation(rule = "self.spec.name != 'nobody'", message = "nobody is not greeted"))]
pub struct GreetingSpec {
    /// The name in the greeting.
    #[schemars(length(max = 40))]
    pub name: String,
}

/// What the operator did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GreetingStatus {
    /// Whether the ConfigMap holds the greeting.
    #[serde(default)]
    pub greeted: bool,
}

struct Greeter {
    clientset: Clientset,
}

impl Reconciler<Greeting> for Greeter {
    type Error = kclient::Error;

    async fn reconcile(
        &self,
        greeting: Arc<Greeting>,
        _: &ReconcileContext,
    ) -> kclient::Result<Action> {
        let namespace = greeting.namespace().unwrap_or_default();
        let mut config_map: ConfigMap = new_controlled_by(&*greeting, greeting.name_any())?;
        let message = format!("Hello, {}!", greeting.spec.name);
        config_map.data = Some([("message".to_owned(), message)].into());
        self.clientset
            .core_v1()
            .config_maps(namespace)
            .apply(
                greeting.name_any(),
                &config_map,
                &ApplyOptions::new("greeter").force(),
            )
            .await?;
        if !greeting.status.as_ref().is_some_and(|s| s.greeted) {
            let status = Patch::Merge(serde_json::json!({"status": {"greeted": true}}));
            self.clientset
                .namespaced::<Greeting>(namespace)
                .patch_status(greeting.name_any(), &status, &Default::default())
                .await?;
        }
        Ok(Action::await_change())
    }
}

/// Runs the operator in every namespace until `cancel` fires.
pub async fn run(clientset: Clientset, cancel: CancellationToken) -> kclient::Result<()> {
    let factory = SharedInformerFactory::builder(clientset.clone()).build();
    Controller::<Greeting, _>::new("greeter", &factory)
        .owns::<ConfigMap>()
        .run(Greeter { clientset }, cancel)
        .await?;
    factory.shutdown().await;
    Ok(())
}
