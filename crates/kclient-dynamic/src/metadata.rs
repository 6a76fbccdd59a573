//! The metadata-only client (client-go's `metadata` package): get, list, watch, patch,
//! delete and delete-collection on any resource, built-in or custom, reading only each
//! object's [`PartialObjectMetadata`] — names, labels, annotations, owners, finalizers,
//! resourceVersions — never its spec or status.
//!
//! Every request asks the API server to convert its answer with
//! `Accept: application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`
//! (`…;as=PartialObjectMetadataList;…` for lists; watch events carry `PartialObjectMetadata`),
//! protobuf first as client-go's metadata client asks (for custom resources too: the server
//! converts), JSON only when the REST client
//! [speaks only JSON](kclient_rest::RestClient::speaks_protobuf); deletes ask for JSON. So a
//! 5 KB Pod arrives as its 1 KB of metadata and an informer caches only that. A server
//! or resource that cannot convert answers `406 Not Acceptable`, reported as
//! [`Error::MetadataNotAcceptable`].
//!
//! A [`MetadataResource`] (or a [`FilteredListWatch`] over one) is a
//! [`ListerWatcher`](kclient_core::ListerWatcher), and the [`MetadataClient`] makes them for
//! an informer factory through kclient-core's
//! [`DynamicListerWatcherFor`]: kclient-cache's
//! `SharedInformerFactory::new(metadata_client, resync)` with `for_resource(&api_resource)`
//! is client-go's `metadatainformer` factory, its informers' listers (by namespace, by index)
//! client-go's `metadatalister` (kclient-informers shows it whole). The factory strips
//! `metadata.managedFields` by default, as for every informer.
//!
//! ```no_run
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_core::{ListOptions, Resource, ResourceExt};
//! use kclient_dynamic::MetadataClient;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = MetadataClient::for_config(kclient_rest::Config::infer()?)?;
//! let pods = Pod::api_resource(&());
//!
//! // One request: the metadata of every Pod in `prod`.
//! let list = client.resource(&pods).namespace("prod").list(&ListOptions::default()).await?;
//! for pod in &list {
//!     println!("{} owned by {:?}", pod.name_any(), pod.owner_references().first().map(|o| &o.name));
//! }
//! # Ok(()) }
//! ```

use futures::TryStreamExt as _;
use kclient_core::{
    ApiResource, ApiStatus, DeleteOptions, DeleteResponse, DynamicListerWatcherFor, FetchedList,
    FilteredListWatch, GetOptions, ListOptions, ListPager, PartialObjectMetadata,
    PartialObjectMetadataList, Patch, PatchOptions, TweakListOptions, WatchStream,
};
use kclient_rest::{Config, Request, RestClient};
use serde::Serialize;

use crate::client::{DynamicClient, DynamicResource, ResourceRef};
use crate::error::Error;

/// The `Accept` header of requests for one object and of watches.
pub const ACCEPT_PARTIAL_OBJECT_METADATA: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/// The `Accept` header of requests for lists.
pub const ACCEPT_PARTIAL_OBJECT_METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// The `Accept` header of requests for one object and of watches while the client speaks
/// protobuf (client-go's metadata client's, less its last, unconverted `application/json`:
/// kclient reports a server that cannot convert rather than reading whole objects).
pub const ACCEPT_PARTIAL_OBJECT_METADATA_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/// The `Accept` header of requests for lists while the client speaks protobuf.
pub const ACCEPT_PARTIAL_OBJECT_METADATA_LIST_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// A client reading only the metadata of any resource (client-go's `metadata.Interface`,
/// `metadata.NewForConfig`). Cheap to clone: clones share the REST client's connection pool
/// and rate limiter.
///
/// ```no_run
/// use kclient_core::{GetOptions, GroupVersionResource};
/// use kclient_dynamic::MetadataClient;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = MetadataClient::for_config(kclient_rest::Config::infer()?)?;
/// let crontabs = GroupVersionResource::new("stable.example.com", "v1", "crontabs");
/// let nightly = client.resource(&crontabs).namespace("default").get("nightly", &GetOptions::default()).await?;
/// println!("finalizers: {:?}", nightly.metadata.finalizers);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct MetadataClient {
    dynamic: DynamicClient,
}

impl MetadataClient {
    /// A metadata client over `rest` (client-go's `metadata.NewForConfigAndClient`).
    pub fn new(rest: RestClient) -> Self {
        Self {
            dynamic: DynamicClient::new(rest),
        }
    }

    /// A metadata client for `config` (client-go's `metadata.NewForConfig`), with a REST
    /// client of its own.
    pub fn for_config(config: Config) -> Result<Self, kclient_rest::Error> {
        RestClient::new(config).map(Self::new)
    }

    /// The REST client underneath.
    pub fn rest_client(&self) -> &RestClient {
        self.dynamic.rest_client()
    }

    /// The metadata of one resource, across all namespaces until
    /// [`namespace`](MetadataResource::namespace) narrows it (client-go's `Resource(gvr)`).
    /// Scope and names are handled as [`DynamicClient::resource`] handles them.
    pub fn resource(&self, resource: impl Into<ResourceRef>) -> MetadataResource {
        MetadataResource {
            resource: self.dynamic.resource(resource),
        }
    }
}

/// The metadata of one resource, in one namespace or all (client-go's metadata
/// `Getter`/`ResourceInterface`). Made by [`MetadataClient::resource`]; cheap to clone.
#[derive(Clone, Debug)]
pub struct MetadataResource {
    resource: DynamicResource,
}

impl MetadataResource {
    /// The same resource in `namespace` (client-go's `Namespace(ns)`); `""` means all
    /// namespaces.
    pub fn namespace(self, namespace: impl Into<String>) -> Self {
        Self {
            resource: self.resource.namespace(namespace),
        }
    }

    /// The same resource across all namespaces.
    pub fn all_namespaces(self) -> Self {
        Self {
            resource: self.resource.all_namespaces(),
        }
    }

    /// The namespace requests address, if any.
    pub fn namespace_name(&self) -> Option<&str> {
        self.resource.namespace_name()
    }

    /// The resource addressed.
    pub fn api_resource(&self) -> &ApiResource {
        self.resource.api_resource()
    }

    /// A 406 from the server becomes [`Error::MetadataNotAcceptable`].
    fn refused(&self, error: kclient_rest::Error) -> Error {
        if error.is_not_acceptable() {
            Error::MetadataNotAcceptable {
                resource: self.resource.api_resource().gvr(),
                source: Box::new(error),
            }
        } else {
            Error::Rest(error)
        }
    }

    async fn object(&self, request: Request) -> Result<PartialObjectMetadata, Error> {
        request
            .negotiate(
                ACCEPT_PARTIAL_OBJECT_METADATA_PROTOBUF,
                ACCEPT_PARTIAL_OBJECT_METADATA,
            )
            .decode()
            .await
            .map_err(|e| self.refused(e))
    }

    /// Reads the metadata of one object (client-go's `Get`).
    pub async fn get(
        &self,
        name: &str,
        options: &GetOptions,
    ) -> Result<PartialObjectMetadata, Error> {
        self.object(self.resource.get_request(name, options)?).await
    }

    /// Lists the objects' metadata: one request, so one page if `options.limit` is set
    /// (client-go's `List`). For every page, use [`list_all`](Self::list_all) or a
    /// [`pager`](Self::pager).
    pub async fn list(&self, options: &ListOptions) -> Result<PartialObjectMetadataList, Error> {
        self.fetch_list(options).await?.decode()
    }

    /// [`list`](Self::list) without decoding the items yet (see
    /// [`ListerWatcher::fetch_list`](kclient_core::ListerWatcher::fetch_list)): a pager
    /// requests the next page while this one decodes.
    pub async fn fetch_list(
        &self,
        options: &ListOptions,
    ) -> Result<FetchedList<PartialObjectMetadata, Error>, Error> {
        let fetched = self
            .resource
            .list_request(options)?
            .negotiate(
                ACCEPT_PARTIAL_OBJECT_METADATA_LIST_PROTOBUF,
                ACCEPT_PARTIAL_OBJECT_METADATA_LIST,
            )
            .fetch_list::<PartialObjectMetadata>()
            .await
            .map_err(|e| self.refused(e))?;
        Ok(fetched.map_err(Error::Rest))
    }

    /// Watches the objects' metadata from `options.resource_version` (client-go's `Watch`):
    /// events carry [`PartialObjectMetadata`] (bookmarks too); the server's errors arrive as
    /// `WatchEvent::Error`, a broken stream as an `Err` item.
    pub async fn watch(
        &self,
        options: &ListOptions,
    ) -> Result<WatchStream<PartialObjectMetadata, Error>, Error> {
        let stream = self
            .resource
            .watch_request(options)?
            .negotiate(
                ACCEPT_PARTIAL_OBJECT_METADATA_PROTOBUF,
                ACCEPT_PARTIAL_OBJECT_METADATA,
            )
            .watch::<PartialObjectMetadata>()
            .await
            .map_err(|e| self.refused(e))?;
        Ok(Box::pin(stream.map_err(Error::Rest)))
    }

    /// Patches an object (any [`Patch`] kind the resource accepts; a merge patch of
    /// `metadata` is the usual one) and returns its metadata after the patch (client-go's
    /// `Patch`).
    pub async fn patch<P: Serialize>(
        &self,
        name: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
    ) -> Result<PartialObjectMetadata, Error> {
        self.object(self.resource.patch_request(name, patch, options, None)?)
            .await
    }

    /// Deletes an object (client-go's `Delete`): the answer is the object's metadata when
    /// the server returns the object (finalizers or graceful deletion keep it, or the
    /// resource always returns it), or the server's `Status`.
    pub async fn delete(
        &self,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<DeleteResponse<PartialObjectMetadata>, Error> {
        let response = self
            .resource
            .delete_request(name, options)?
            .header("Accept", ACCEPT_PARTIAL_OBJECT_METADATA)
            .send()
            .await
            .map_err(|e| self.refused(e))?;
        Ok(response.delete_response()?)
    }

    /// Deletes every object the list options select (client-go's `DeleteCollection`): the
    /// answer is the metadata of the deleted objects, or the server's `Status`.
    pub async fn delete_collection(
        &self,
        delete_options: &DeleteOptions,
        list_options: &ListOptions,
    ) -> Result<DeleteResponse<PartialObjectMetadataList>, Error> {
        let response = self
            .resource
            .delete_collection_request(delete_options, list_options)?
            .header("Accept", ACCEPT_PARTIAL_OBJECT_METADATA_LIST)
            .send()
            .await
            .map_err(|e| self.refused(e))?;
        Ok(response.delete_response()?)
    }

    /// A [`ListPager`] over this resource, with client-go's defaults.
    pub fn pager(&self) -> ListPager<PartialObjectMetadata, MetadataResource> {
        ListPager::new(self.clone())
    }

    /// Lists every object's metadata in pages of
    /// [`DEFAULT_PAGE_SIZE`](kclient_core::DEFAULT_PAGE_SIZE) (or `options.limit`), falling
    /// back to one full list if the continue token expires: [`ListPager::list`].
    pub async fn list_all(
        &self,
        options: &ListOptions,
    ) -> Result<PartialObjectMetadataList, Error> {
        Ok(self.pager().list(options).await?)
    }

    /// A [`FilteredListWatch`] over this resource: a
    /// [`ListerWatcher`](kclient_core::ListerWatcher) that applies `tweak` to the options of
    /// every list and watch (selectors, say).
    pub fn filtered_list_watch(
        &self,
        tweak: impl Fn(&mut ListOptions) + Send + Sync + 'static,
    ) -> FilteredListWatch<MetadataResource> {
        FilteredListWatch::new(self.clone(), std::sync::Arc::new(tweak))
    }
}

/// A metadata resource lists and watches in its namespace (or all namespaces), sending the
/// reflector's options as they are.
impl kclient_core::ListerWatcher<PartialObjectMetadata> for MetadataResource {
    type Error = Error;

    async fn list(&self, options: &ListOptions) -> Result<PartialObjectMetadataList, Error> {
        MetadataResource::list(self, options).await
    }

    async fn watch(
        &self,
        options: &ListOptions,
    ) -> Result<WatchStream<PartialObjectMetadata, Error>, Error> {
        MetadataResource::watch(self, options).await
    }

    async fn fetch_list(
        &self,
        options: &ListOptions,
    ) -> Result<FetchedList<PartialObjectMetadata, Error>, Error> {
        MetadataResource::fetch_list(self, options).await
    }
}

/// The metadata client lists and watches any resource for the informer factory's
/// `for_resource` (client-go's `metadatainformer`), in the factory's namespace when the
/// resource is namespaced, with its list-options tweak.
impl DynamicListerWatcherFor<PartialObjectMetadata> for MetadataClient {
    type ListerWatcher = FilteredListWatch<MetadataResource>;

    fn dynamic_lister_watcher(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        tweak: Option<TweakListOptions>,
    ) -> Self::ListerWatcher {
        let mut client = self.resource(resource);
        if let Some(namespace) = namespace.filter(|_| resource.namespaced) {
            client = client.namespace(namespace);
        }
        FilteredListWatch::with_optional_tweak(client, tweak)
    }
}

#[cfg(test)]
mod tests {
    use kclient_core::{ApiError, GroupVersionKind, GroupVersionResource, Status, StatusReason};

    use super::*;

    fn client() -> MetadataClient {
        MetadataClient::new(RestClient::new(Config::new("https://h")).unwrap())
    }

    #[test]
    fn a_406_names_the_resource_and_keeps_the_status() {
        let widgets = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::new("example.com", "v1", "Widget"),
            "widgets",
            true,
        );
        let resource = client().resource(&widgets);
        let status = Status::failure(
            StatusReason::NotAcceptable,
            406,
            "only the following media types are accepted: application/json",
        );
        let err = resource.refused(kclient_rest::Error::from(ApiError::from(status)));
        assert!(matches!(err, Error::MetadataNotAcceptable { .. }));
        assert!(err.is_not_acceptable());
        assert_eq!(
            err.to_string(),
            "the server refused to serve example.com/v1, Resource=widgets as PartialObjectMetadata (406 Not Acceptable)"
        );
        let source = std::error::Error::source(&err).unwrap().to_string();
        assert!(
            source.contains("only the following media types are accepted"),
            "{source}"
        );
        let other = resource.refused(kclient_rest::Error::from(ApiError::bad_request("x")));
        assert!(matches!(other, Error::Rest(_)));
    }

    #[test]
    fn resources_keep_the_dynamic_clients_scope_rules() {
        let by_gvr = client()
            .resource(GroupVersionResource::new("apps", "v1", "deployments"))
            .namespace("prod");
        assert_eq!(by_gvr.namespace_name(), Some("prod"));
        assert_eq!(by_gvr.clone().all_namespaces().namespace_name(), None);
        assert_eq!(by_gvr.api_resource().plural, "deployments");
    }
}
