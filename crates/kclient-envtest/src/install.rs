//! What an environment installs (feature `clientset`): CRDs, through kclient-tools'
//! [`install_crds`] (applied, then waited for until served), and webhook configurations
//! (applied); asked of the builder, installed when the environment starts, or later with
//! the environment's methods. And the admin [`Clientset`].

use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kclient_core::{Resource, ResourceExt};
use kclient_tools::crd::install_crds;
use kclient_typed::{ApplyOptions, Clientset};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Environment, EnvironmentBuilder, Error};

/// The field manager webhook configurations are applied as.
pub const FIELD_MANAGER: &str = "kclient-envtest";
/// How long the CRDs may take to be served, unless told otherwise.
pub const DEFAULT_INSTALL_TIMEOUT: Duration = Duration::from_secs(30);

/// What the builder was asked to install.
#[derive(Debug, Clone)]
pub(crate) struct Install {
    crds: Vec<CustomResourceDefinition>,
    validating: Vec<ValidatingWebhookConfiguration>,
    mutating: Vec<MutatingWebhookConfiguration>,
    timeout: Duration,
}

impl Default for Install {
    fn default() -> Self {
        Install {
            crds: Vec::new(),
            validating: Vec::new(),
            mutating: Vec::new(),
            timeout: DEFAULT_INSTALL_TIMEOUT,
        }
    }
}

impl Install {
    pub(crate) async fn run(&self, env: &Environment) -> Result<(), Error> {
        if !self.crds.is_empty() {
            env.install_crds(&self.crds, self.timeout).await?;
        }
        env.install_webhook_configurations(&self.validating, &self.mutating)
            .await
    }
}

impl EnvironmentBuilder {
    /// Installs `crd` once the API server is ready (a derived type's `Kind::crd()`).
    pub fn crd(mut self, crd: CustomResourceDefinition) -> Self {
        self.install.crds.push(crd);
        self
    }

    /// Installs `crds` once the API server is ready.
    pub fn crds(mut self, crds: impl IntoIterator<Item = CustomResourceDefinition>) -> Self {
        self.install.crds.extend(crds);
        self
    }

    /// Installs a `ValidatingWebhookConfiguration` (kclient-webhook's
    /// `WebhookServer::validating_webhook_configuration` makes one) after the CRDs.
    pub fn validating_webhook_configuration(
        mut self,
        configuration: ValidatingWebhookConfiguration,
    ) -> Self {
        self.install.validating.push(configuration);
        self
    }

    /// Installs a `MutatingWebhookConfiguration` after the CRDs.
    pub fn mutating_webhook_configuration(
        mut self,
        configuration: MutatingWebhookConfiguration,
    ) -> Self {
        self.install.mutating.push(configuration);
        self
    }

    /// How long the CRDs may take to be served ([`DEFAULT_INSTALL_TIMEOUT`]).
    pub fn install_timeout(mut self, timeout: Duration) -> Self {
        self.install.timeout = timeout;
        self
    }
}

impl Environment {
    /// A new admin client (see [`config`](Self::config)) for the calling tokio runtime.
    pub fn clientset(&self) -> Result<Clientset, Error> {
        Ok(Clientset::new(self.config())?)
    }

    /// Installs `crds` and waits, at most `timeout`, until each is served; returns them as
    /// the server has them.
    pub async fn install_crds(
        &self,
        crds: &[CustomResourceDefinition],
        timeout: Duration,
    ) -> Result<Vec<CustomResourceDefinition>, Error> {
        Ok(install_crds(&self.clientset()?, crds, timeout).await?)
    }

    /// Applies webhook configurations (server-side apply, as [`FIELD_MANAGER`]). The API
    /// server calls the webhooks from then on: start their server first, or make their
    /// failure policy `Ignore`.
    pub async fn install_webhook_configurations(
        &self,
        validating: &[ValidatingWebhookConfiguration],
        mutating: &[MutatingWebhookConfiguration],
    ) -> Result<(), Error> {
        if validating.is_empty() && mutating.is_empty() {
            return Ok(());
        }
        let clientset = self.clientset()?;
        apply_all(&clientset, validating).await?;
        apply_all(&clientset, mutating).await
    }
}

/// Applies each of `configurations` as [`FIELD_MANAGER`].
async fn apply_all<K>(clientset: &Clientset, configurations: &[K]) -> Result<(), Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    let client = clientset.cluster_scoped::<K>();
    let options = ApplyOptions::new(FIELD_MANAGER).force();
    for configuration in configurations {
        let name = configuration.name_any();
        client
            .apply(name, configuration, &options)
            .await
            .map_err(|source| Error::InstallWebhook {
                name: name.to_owned(),
                source,
            })?;
    }
    Ok(())
}
