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
//! A [`MetadataResource`] is a [`DynamicResource`] reading [`PartialObjectMetadata`]: the
//! dynamic client's verbs, written once for both. It (or a
//! [`FilteredListWatch`](kclient_core::FilteredListWatch) over one) is a
//! [`ListerWatcher`](kclient_core::ListerWatcher), and the [`MetadataClient`] makes them for
//! an informer factory through kclient-core's
//! [`DynamicListerWatcherFor`](kclient_core::DynamicListerWatcherFor): kclient-cache's
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

use kclient_core::PartialObjectMetadata;

use crate::client::ViewClient;
use crate::resource::DynamicResource;
pub use crate::view::{
    ACCEPT_PARTIAL_OBJECT_METADATA, ACCEPT_PARTIAL_OBJECT_METADATA_LIST,
    ACCEPT_PARTIAL_OBJECT_METADATA_LIST_PROTOBUF, ACCEPT_PARTIAL_OBJECT_METADATA_PROTOBUF,
};
#[cfg(doc)]
use crate::Error;

/// The metadata of one resource, in one namespace or all (client-go's metadata
/// `Getter`/`ResourceInterface`): a [`DynamicResource`] that reads [`PartialObjectMetadata`]
/// — [`get`](DynamicResource::get), [`list`](DynamicResource::list),
/// [`watch`](DynamicResource::watch), [`patch`](DynamicResource::patch),
/// [`delete`](DynamicResource::delete),
/// [`delete_collection`](DynamicResource::delete_collection) and the paged lists. Made by
/// [`MetadataClient::resource`]; cheap to clone.
pub type MetadataResource = DynamicResource<PartialObjectMetadata>;

/// A client reading only the metadata of any resource (client-go's `metadata.Interface`,
/// `metadata.NewForConfig`): a [`ViewClient`] whose resources are [`MetadataResource`]s.
/// Cheap to clone: clones share the REST client's connection pool and rate limiter.
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
pub type MetadataClient = ViewClient<PartialObjectMetadata>;

#[cfg(test)]
mod tests {
    use kclient_core::GroupVersionResource;
    use kclient_rest::{Config, RestClient};

    use super::*;

    fn client() -> MetadataClient {
        MetadataClient::new(RestClient::new(Config::new("https://h")).unwrap())
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
