//! [`Clientset`]: one accessor per group-version over one shared REST client.

use kclient_core::Resource;
use kclient_rest::{Config, RestClient};

use crate::client::ResourceClient;

/// Typed clients for every built-in group-version (client-go's `kubernetes.Clientset`):
/// `core_v1()`, `apps_v1()`, `batch_v1()` ... each with one method per resource
/// (`pods("ns")`, `nodes()`, `deployments("ns")`), returning a [`ResourceClient`].
///
/// Every client it hands out shares one connection pool and one client-side rate limiter
/// (client-go shares one token bucket across all group-versions the same way), and cloning is
/// cheap. The accessors are generated from the resource table of the Kubernetes version this
/// build targets ([`KUBERNETES_VERSION`](crate::KUBERNETES_VERSION)).
///
/// ```no_run
/// use kclient_core::ListOptions;
/// use kclient_typed::Clientset;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let clientset = Clientset::new(kclient_rest::Config::infer()?)?;
/// let deployment = clientset.apps_v1().deployments("default").get("web").await?;
/// let nodes = clientset.core_v1().nodes().list(&ListOptions::default()).await?;
/// # let _ = (deployment, nodes); Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Clientset {
    pub(crate) client: RestClient,
}

impl Clientset {
    /// A clientset for the server and identity of `config` (client-go's `NewForConfig`): one
    /// transport and one rate limiter for every client.
    pub fn new(config: Config) -> Result<Self, kclient_rest::Error> {
        Ok(Self::from_client(RestClient::new(config)?))
    }

    /// A clientset over an existing REST client (client-go's `New(restClient)`), sharing its
    /// transport and rate limiter.
    pub fn from_client(client: RestClient) -> Self {
        Self { client }
    }

    /// The REST client underneath, for requests the typed clients do not cover.
    pub fn rest_client(&self) -> &RestClient {
        &self.client
    }

    /// A client for any namespaced `K` in `namespace` (the empty namespace is all), including
    /// types generated from CustomResourceDefinitions.
    pub fn namespaced<K: Resource<DynamicType = ()>>(&self, namespace: &str) -> ResourceClient<K> {
        ResourceClient::namespaced(self.client.clone(), namespace)
    }

    /// A client for a namespaced `K` across all namespaces.
    pub fn all_namespaces<K: Resource<DynamicType = ()>>(&self) -> ResourceClient<K> {
        ResourceClient::all_namespaces(self.client.clone())
    }

    /// A client for a cluster-scoped `K`.
    pub fn cluster_scoped<K: Resource<DynamicType = ()>>(&self) -> ResourceClient<K> {
        ResourceClient::cluster_scoped(self.client.clone())
    }
}
