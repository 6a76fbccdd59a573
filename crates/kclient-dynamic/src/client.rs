//! [`ViewClient`]: every verb on any resource, reading its objects as one view — whole, as
//! [`DynamicObject`]s ([`DynamicClient`], client-go's `dynamic.DynamicClient`), or their
//! metadata alone ([`MetadataClient`](crate::MetadataClient), client-go's `metadata`
//! client).

use std::marker::PhantomData;

use kclient_core::DynamicObject;
use kclient_rest::{Config, RestClient};

use crate::resource::{DynamicResource, ResourceRef};
use crate::view::ObjectView;

/// A client for any resource of one API server, reading its objects as `T`
/// ([`ObjectView`]): the one type behind [`DynamicClient`] (whole [`DynamicObject`]s) and
/// [`MetadataClient`](crate::MetadataClient) (their
/// [`PartialObjectMetadata`](kclient_core::PartialObjectMetadata)), which differ only in
/// the view of the [`DynamicResource`]s they make. Cheap to clone: clones share the REST
/// client's connection pool and rate limiter.
#[derive(Clone, Debug)]
pub struct ViewClient<T> {
    rest: RestClient,
    _view: PhantomData<fn() -> T>,
}

/// A client for any resource of one API server, over [`DynamicObject`]s (client-go's
/// `dynamic.NewForConfig`). Cheap to clone: clones share the REST client's connection pool and
/// rate limiter.
///
/// ```no_run
/// use kclient_core::{GroupVersionResource, ListOptions};
/// use kclient_dynamic::DynamicClient;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = DynamicClient::new(kclient_rest::RestClient::new(kclient_rest::Config::infer()?)?);
/// let crontabs = GroupVersionResource::new("stable.example.com", "v1", "crontabs");
/// let list = client.resource(&crontabs).namespace("default").list(&ListOptions::default()).await?;
/// for ct in &list {
///     println!("{} {}", ct.metadata.name.as_deref().unwrap_or(""), ct.data["spec"]["cronSpec"]);
/// }
/// # Ok(()) }
/// ```
pub type DynamicClient = ViewClient<DynamicObject>;

impl<T: ObjectView> ViewClient<T> {
    /// A client over `rest` (client-go's `dynamic.New`, `metadata.NewForConfigAndClient`).
    pub fn new(rest: RestClient) -> Self {
        Self {
            rest,
            _view: PhantomData,
        }
    }

    /// A client for `config` (client-go's `dynamic.NewForConfig`, `metadata.NewForConfig`),
    /// with a REST client of its own.
    pub fn for_config(config: Config) -> Result<Self, kclient_rest::Error> {
        RestClient::new(config).map(Self::new)
    }

    /// The REST client underneath.
    pub fn rest_client(&self) -> &RestClient {
        &self.rest
    }

    /// A client for one resource, across all namespaces until
    /// [`namespace`](DynamicResource::namespace) narrows it (client-go's `Resource(gvr)`).
    ///
    /// Given a [`GroupVersionResource`](kclient_core::GroupVersionResource), the scope is
    /// unknown: with a namespace, requests address it; without, they address the
    /// cluster-wide path, as in client-go. Given an [`ApiResource`](kclient_core::ApiResource)
    /// (from a `RestMapper`, or `Resource::api_resource`), the scope is known: a namespace is
    /// ignored for cluster-scoped resources, and calls on one object of a namespaced resource
    /// without a namespace fail early with [`Error::Refused`](crate::Error::Refused)
    /// (`RefusedRequest::NamespaceRequired`). For whole objects, its kind also fills in
    /// `apiVersion` and `kind` where the server leaves them out.
    pub fn resource(&self, resource: impl Into<ResourceRef>) -> DynamicResource<T> {
        DynamicResource::new(self.rest.clone(), resource.into())
    }
}
