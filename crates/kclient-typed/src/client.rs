//! [`ResourceClient`]: the one typed client for every resource (client-go's `gentype`).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use kclient_core::{
    ApiResource, CreateOptions, DeleteOptions, DeleteResponse, FetchedList, GetOptions,
    ListOptions, ObjectList, Patch, PatchOptions, Resource, UpdateOptions, WatchStream,
};
use kclient_rest::{Method, RefusedRequest, Request, ResourceRequests, RestClient};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::apply::ApplyOptions;
use crate::error::Error;

/// A typed client for one resource, in one namespace, across all namespaces, or cluster-wide:
/// get, list (paged or not), watch, create, update, patch, server-side apply, delete and
/// delete-collection, plus the `status` and `scale` subresources where the resource has them
/// ([`HasStatus`](crate::HasStatus), [`HasScale`](crate::HasScale)).
///
/// This is client-go's `gentype.ClientWithListAndApply[T]`, the generic core behind every
/// `PodInterface`, `DeploymentInterface` ...: the generated [`Clientset`](crate::Clientset)
/// only picks the type and scope (`clientset.core_v1().pods("ns")` is a
/// `ResourceClient<Pod>`), and all behaviour lives here, once. (kube-rs users know it as
/// `Api<K>`.) It works for any [`Resource`] known at compile time: k8s-openapi's types and
/// types generated from a CustomResourceDefinition. Resources chosen at run time are
/// kclient-dynamic's `DynamicClient`'s (`DynamicObject`) and `MetadataClient`'s
/// (`PartialObjectMetadata`); its verbs, like this client's, are kclient-rest's
/// [`ResourceRequests`].
///
/// Cloning is cheap; clones share the transport and the rate limiter of the
/// [`RestClient`] they were made from.
///
/// ```no_run
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kclient_core::{ListOptions, PatchOptions, Patch};
/// use kclient_typed::ResourceClient;
///
/// # async fn run(rest: kclient_rest::RestClient) -> Result<(), kclient_typed::Error> {
/// let configmaps = ResourceClient::<ConfigMap>::namespaced(rest, "default");
/// let cm = configmaps.get("settings").await?;
/// let everything = configmaps.list_all(&ListOptions::default().labels("app=web")).await?;
/// let patch = Patch::Merge(serde_json::json!({ "data": { "mode": "fast" } }));
/// configmaps.patch("settings", &patch, &PatchOptions::default()).await?;
/// # let _ = (cm, everything); Ok(()) }
/// ```
pub struct ResourceClient<K: Resource> {
    client: RestClient,
    resource: Arc<ApiResource>,
    namespace: Option<String>,
    _kind: PhantomData<fn() -> K>,
}

impl<K: Resource> Clone for ResourceClient<K> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            _kind: PhantomData,
        }
    }
}

impl<K: Resource> fmt::Debug for ResourceClient<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceClient")
            .field("resource", &self.resource.gvr().to_string())
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl<K: Resource<DynamicType = ()>> ResourceClient<K> {
    /// A client for the objects of `K` in `namespace` (client-go's `Pods(namespace)`).
    ///
    /// The empty namespace means all namespaces, as `metav1.NamespaceAll` does in client-go.
    /// For a cluster-scoped resource the namespace is ignored.
    pub fn namespaced(client: RestClient, namespace: impl Into<String>) -> Self {
        Self::build(client, K::api_resource(&()), namespace.into())
    }

    /// A client for the objects of a namespaced `K` across all namespaces: lists, watches
    /// and delete-collection see every namespace; calls on one object need a namespace and
    /// fail with [`Error::Refused`] (`RefusedRequest::NamespaceRequired`).
    pub fn all_namespaces(client: RestClient) -> Self {
        Self::build(client, K::api_resource(&()), String::new())
    }

    /// A client for a cluster-scoped `K` (nodes, namespaces, cluster roles ...).
    pub fn cluster_scoped(client: RestClient) -> Self {
        Self::build(client, K::api_resource(&()), String::new())
    }
}

impl<K: Resource> ResourceClient<K> {
    /// [`namespaced`](Self::namespaced) for a type whose resource is known at run time
    /// (`DynamicObject` with its [`ApiResource`]).
    #[deprecated(
        since = "0.1.0",
        note = "a second dynamic client: use kclient-dynamic's \
                `DynamicClient::new(rest).resource(&api_resource).namespace(ns)`"
    )]
    pub fn namespaced_with(
        client: RestClient,
        namespace: impl Into<String>,
        dynamic_type: &K::DynamicType,
    ) -> Self {
        Self::build(client, K::api_resource(dynamic_type), namespace.into())
    }

    /// [`all_namespaces`](Self::all_namespaces) for a type whose resource is known at run
    /// time.
    #[deprecated(
        since = "0.1.0",
        note = "a second dynamic client: use kclient-dynamic's \
                `DynamicClient::new(rest).resource(&api_resource)`"
    )]
    pub fn all_namespaces_with(client: RestClient, dynamic_type: &K::DynamicType) -> Self {
        Self::build(client, K::api_resource(dynamic_type), String::new())
    }

    /// [`cluster_scoped`](Self::cluster_scoped) for a type whose resource is known at run
    /// time.
    #[deprecated(
        since = "0.1.0",
        note = "a second dynamic client: use kclient-dynamic's \
                `DynamicClient::new(rest).resource(&api_resource)`"
    )]
    pub fn cluster_scoped_with(client: RestClient, dynamic_type: &K::DynamicType) -> Self {
        Self::build(client, K::api_resource(dynamic_type), String::new())
    }

    /// A client of `resource` bound to `namespace` (none when empty, or for a cluster-scoped
    /// resource).
    fn build(client: RestClient, resource: ApiResource, namespace: String) -> Self {
        Self {
            namespace: bound_namespace(namespace, &resource),
            client,
            resource: Arc::new(resource),
            _kind: PhantomData,
        }
    }

    /// The same client, bound to another namespace (the empty namespace means all).
    pub fn within(&self, namespace: impl Into<String>) -> Self {
        Self {
            namespace: bound_namespace(namespace.into(), &self.resource),
            ..self.clone()
        }
    }

    /// The resource this client addresses.
    pub fn api_resource(&self) -> &ApiResource {
        &self.resource
    }

    /// The namespace this client is bound to; `None` for all namespaces or a cluster-scoped
    /// resource.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The REST client underneath (its transport and rate limiter are shared).
    pub fn rest_client(&self) -> &RestClient {
        &self.client
    }

    /// The requests of this client's verbs, with the checks before sending: kclient-rest's
    /// [`ResourceRequests`], shared with the dynamic client.
    pub(crate) fn requests(&self) -> ResourceRequests<'_> {
        ResourceRequests::new(
            &self.client,
            &self.resource,
            self.namespace.as_deref(),
            self.resource.namespaced,
        )
    }

    /// A request addressed to one object (`.../{plural}/{name}`), for the verbs of the
    /// expansions (logs, eviction, binding).
    pub(crate) fn object_request(
        &self,
        verb: &'static str,
        method: Method,
        name: &str,
    ) -> Result<Request, Error> {
        Ok(self.requests().object(verb, method, name, None)?)
    }
}

/// Sends one of the verbs' requests (or reports why it was refused before sending) and
/// decodes the answer.
pub(crate) async fn send<T: DeserializeOwned + 'static>(
    request: Result<Request, RefusedRequest>,
) -> Result<T, Error> {
    Ok(request?.decode().await?)
}

/// The namespace a client of `resource` addresses: none for all namespaces (the empty one) or
/// a cluster-scoped resource.
fn bound_namespace(namespace: String, resource: &ApiResource) -> Option<String> {
    Some(namespace).filter(|ns| !ns.is_empty() && resource.namespaced)
}

impl<K> ResourceClient<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    /// [`requests`](Self::requests) asking for protobuf when `K` is a built-in kind (see
    /// [`ResourceRequests::prefer_protobuf_for`]).
    pub(crate) fn verbs(&self) -> ResourceRequests<'_> {
        self.requests().prefer_protobuf_for::<K>()
    }

    /// Reads one object (client-go's `Get(ctx, name, metav1.GetOptions{})`).
    pub async fn get(&self, name: &str) -> Result<K, Error> {
        self.get_with(name, &GetOptions::default()).await
    }

    /// Reads one object with options (`resourceVersion`).
    pub async fn get_with(&self, name: &str, options: &GetOptions) -> Result<K, Error> {
        send(self.verbs().get("get", name, options, None)).await
    }

    /// Reads one object, or `None` if it does not exist (a `404 NotFound`).
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>, Error> {
        use kclient_core::ApiStatus as _;
        match self.get(name).await {
            Ok(object) => Ok(Some(object)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Lists objects: one request, one page if `options.limit` is set. See
    /// [`list_all`](Self::list_all), [`list_pages`](Self::list_pages) and
    /// [`pager`](Self::pager) for paged lists.
    pub async fn list(&self, options: &ListOptions) -> Result<ObjectList<K>, Error> {
        self.fetch_list(options).await?.decode().await
    }

    /// [`list`](Self::list), handing each object to `f` as it is decoded.
    #[deprecated(
        since = "0.1.0",
        note = "the same as `ListerWatcher::list_mapped` (kclient_core::ListerWatcher), which \
                ResourceClient implements: import the trait and call it"
    )]
    pub async fn list_mapped<T>(
        &self,
        options: &ListOptions,
        f: impl FnMut(K) -> T,
    ) -> Result<ObjectList<T>, Error> {
        self.fetch_list(options).await?.decode_mapped(f).await
    }

    /// [`list`](Self::list) without decoding the items yet: the primitive of
    /// [`ListerWatcher::fetch_list`](kclient_core::ListerWatcher::fetch_list), so that the
    /// pager requests the next page while this one decodes.
    pub async fn fetch_list(&self, options: &ListOptions) -> Result<FetchedList<K, Error>, Error> {
        Ok(self
            .verbs()
            .list(options)?
            .fetch_list::<K>()
            .await?
            .map_err(Error::from))
    }

    /// Watches objects from `options.resource_version`: a stream of
    /// [`WatchEvent`](kclient_core::WatchEvent)s that ends when the server closes the watch.
    /// The server's errors (`410 Gone` for a resourceVersion too old) arrive as
    /// `WatchEvent::Error`; a broken stream as an `Err` item.
    pub async fn watch(&self, options: &ListOptions) -> Result<WatchStream<K, Error>, Error> {
        use futures::TryStreamExt as _;
        let stream = self.verbs().watch(options)?.watch::<K>().await?;
        Ok(Box::pin(stream.map_err(Error::from)))
    }

    /// Creates an object and returns it as stored.
    pub async fn create(&self, object: &K, options: &CreateOptions) -> Result<K, Error> {
        send(self.verbs().create(object, options)).await
    }

    /// Replaces an object (a `PUT`); the name comes from `object.metadata.name`, and the
    /// object's `resourceVersion`, when set, makes it a compare-and-swap (`409 Conflict` if
    /// the object changed meanwhile).
    pub async fn update(&self, object: &K, options: &UpdateOptions) -> Result<K, Error> {
        send(self.verbs().update_object("update", object, options, None)).await
    }

    /// Patches an object with any [`Patch`] kind (JSON patch, merge, strategic merge or
    /// apply) and returns the result.
    pub async fn patch<P: Serialize>(
        &self,
        name: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
    ) -> Result<K, Error> {
        send(self.verbs().patch("patch", name, patch, options, None)).await
    }

    /// Server-side apply (client-go's `Apply`): sends `configuration`, the fields this field
    /// manager wants to own (a `K` with only those fields set, or any serializable value with
    /// `apiVersion`, `kind` and `metadata.name`), and returns the merged object. A
    /// configuration carrying `metadata.managedFields` is refused
    /// ([`Error::Refused`], `RefusedRequest::ManagedFieldsSet`), as by the dynamic client and
    /// client-go.
    pub async fn apply<P: Serialize>(
        &self,
        name: &str,
        configuration: &P,
        options: &ApplyOptions,
    ) -> Result<K, Error> {
        let options = options.to_patch_options();
        send(
            self.verbs()
                .apply("patch", name, configuration, &options, None),
        )
        .await
    }

    /// Deletes an object. The server answers with the object (when finalizers or graceful
    /// deletion keep it around, and for resources that always return it) or with a `Status`
    /// (when it is gone at once): see [`DeleteResponse`].
    pub async fn delete(
        &self,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<DeleteResponse<K>, Error> {
        let response = self.verbs().delete(name, options)?.send().await?;
        Ok(response.delete_response()?)
    }

    /// Deletes every object the list options select (in the client's namespace, or across
    /// all namespaces). The server answers with the list of deleted objects or a `Status`.
    pub async fn delete_collection(
        &self,
        delete_options: &DeleteOptions,
        list_options: &ListOptions,
    ) -> Result<DeleteResponse<ObjectList<K>>, Error> {
        let response = self
            .verbs()
            .delete_collection(delete_options, list_options)?
            .send()
            .await?;
        Ok(response.delete_response()?)
    }
}
