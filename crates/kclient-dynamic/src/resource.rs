//! [`DynamicResource`]: one resource, in one namespace or all (client-go's
//! `NamespaceableResourceInterface` and `ResourceInterface`), with the verbs both views share
//! — get, list, watch, patch, delete, delete-collection — written once over kclient-rest's
//! [`ResourceRequests`], whatever the view reads its objects as ([`ObjectView`]).

use std::marker::PhantomData;

use futures::TryStreamExt as _;
use kclient_core::{
    ApiResource, DeleteOptions, DeleteResponse, DynamicObject, FetchedList, GetOptions,
    GroupVersionResource, ListOptions, ObjectList, Patch, PatchOptions, WatchStream,
};
use kclient_rest::{Request, ResourceRequests, RestClient};
use serde::Serialize;

use crate::error::Error;
use crate::view::{Answer, ObjectView};

/// What [`DynamicClient::resource`](crate::DynamicClient::resource) and
/// [`MetadataClient::resource`](crate::MetadataClient::resource) address: a
/// group-version-resource (scope unknown) or an [`ApiResource`] (scope and kind known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceRef {
    /// A group-version-resource.
    Gvr(GroupVersionResource),
    /// A fully described resource.
    Api(ApiResource),
}

impl From<GroupVersionResource> for ResourceRef {
    fn from(gvr: GroupVersionResource) -> Self {
        ResourceRef::Gvr(gvr)
    }
}

impl From<&GroupVersionResource> for ResourceRef {
    fn from(gvr: &GroupVersionResource) -> Self {
        ResourceRef::Gvr(gvr.clone())
    }
}

impl From<ApiResource> for ResourceRef {
    fn from(api: ApiResource) -> Self {
        ResourceRef::Api(api)
    }
}

impl From<&ApiResource> for ResourceRef {
    fn from(api: &ApiResource) -> Self {
        ResourceRef::Api(api.clone())
    }
}

/// One resource, in one namespace or all (client-go's `NamespaceableResourceInterface` and
/// `ResourceInterface`), its objects read as `T`: whole [`DynamicObject`]s (the default, made
/// by [`DynamicClient::resource`](crate::DynamicClient::resource)), or their
/// [`PartialObjectMetadata`](kclient_core::PartialObjectMetadata) (a
/// [`MetadataResource`](crate::MetadataResource), made by
/// [`MetadataClient::resource`](crate::MetadataClient::resource)). Cheap to clone.
///
/// Every view reads: [`get`](Self::get), [`list`](Self::list) (and the paged lists of
/// [`pager`](Self::pager)), [`watch`](Self::watch); and writes what it reads back:
/// [`patch`](Self::patch), [`delete`](Self::delete),
/// [`delete_collection`](Self::delete_collection). Whole objects also have
/// [`create`](Self::create), [`update`](Self::update), [`apply`](Self::apply) and the
/// subresources. Objects round-trip losslessly: fields kclient does not know are kept and
/// sent back as they came.
#[derive(Debug)]
pub struct DynamicResource<T = DynamicObject> {
    rest: RestClient,
    resource: ApiResource,
    scope_known: bool,
    namespace: Option<String>,
    _view: PhantomData<fn() -> T>,
}

impl<T> Clone for DynamicResource<T> {
    fn clone(&self) -> Self {
        Self {
            rest: self.rest.clone(),
            resource: self.resource.clone(),
            scope_known: self.scope_known,
            namespace: self.namespace.clone(),
            _view: PhantomData,
        }
    }
}

impl<T: ObjectView> DynamicResource<T> {
    /// `resource` over `rest`, across all namespaces. A [`GroupVersionResource`] leaves the
    /// scope unknown: requests address the namespace when there is one and the cluster-wide
    /// path otherwise, as in client-go. An [`ApiResource`] knows it: a namespace is ignored
    /// for a cluster-scoped resource, and a call on one object of a namespaced resource
    /// without a namespace is refused before sending.
    pub(crate) fn new(rest: RestClient, resource: ResourceRef) -> Self {
        let (resource, scope_known) = match resource {
            ResourceRef::Gvr(gvr) => (
                ApiResource {
                    api_version: gvr.group_version().api_version(),
                    group: gvr.group,
                    version: gvr.version,
                    plural: gvr.resource,
                    namespaced: true,
                    ..ApiResource::default()
                },
                false,
            ),
            ResourceRef::Api(api) => (api, true),
        };
        Self {
            rest,
            resource,
            scope_known,
            namespace: None,
            _view: PhantomData,
        }
    }

    /// The same resource in `namespace` (client-go's `Namespace(ns)`); `""` means all
    /// namespaces.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        let namespace = namespace.into();
        self.namespace = Some(namespace).filter(|ns| !ns.is_empty());
        self
    }

    /// The same resource across all namespaces.
    pub fn all_namespaces(mut self) -> Self {
        self.namespace = None;
        self
    }

    /// The namespace requests address, if any (`None` for cluster-scoped resources and for
    /// all namespaces).
    pub fn namespace_name(&self) -> Option<&str> {
        if self.scope_known && !self.resource.namespaced {
            return None;
        }
        self.namespace.as_deref()
    }

    /// The resource addressed. For a resource given as a [`GroupVersionResource`], `kind` is
    /// empty and `namespaced` says nothing.
    pub fn api_resource(&self) -> &ApiResource {
        &self.resource
    }

    /// The REST client underneath.
    pub fn rest_client(&self) -> &RestClient {
        &self.rest
    }

    /// The requests of this resource's verbs, with the checks before sending: kclient-rest's
    /// [`ResourceRequests`], shared with the typed client. A namespace is required for calls
    /// on one object only when the resource is known to be namespaced.
    pub(crate) fn requests(&self) -> ResourceRequests<'_> {
        ResourceRequests::new(
            &self.rest,
            &self.resource,
            self.namespace_name(),
            self.scope_known && self.resource.namespaced,
        )
    }

    /// Sends `request`, asking for the view's representation of `answer`, and decodes it.
    async fn read<R: serde::de::DeserializeOwned + 'static>(
        &self,
        request: Request,
        answer: Answer,
    ) -> Result<R, Error> {
        T::accept(request, answer)
            .decode()
            .await
            .map_err(|e| T::refused(e, &self.resource))
    }

    /// Reads one object (client-go's `Get`).
    pub async fn get(&self, name: &str, options: &GetOptions) -> Result<T, Error> {
        let request = self.requests().get("get", name, options, None)?;
        let object: T = self.read(request, Answer::Object).await?;
        Ok(object.finish(&self.resource))
    }

    /// Lists objects: one request, so one page if `options.limit` is set (client-go's `List`).
    /// For every page of a large list, use [`list_all`](Self::list_all),
    /// [`list_pages`](Self::list_pages) or a [`pager`](Self::pager).
    ///
    /// Whole objects without `apiVersion` and `kind` (the API server leaves them out of list
    /// items) get the list's, with the `List` suffix dropped from the kind, as client-go's
    /// `UnstructuredList` does.
    pub async fn list(&self, options: &ListOptions) -> Result<ObjectList<T>, Error> {
        let list = self.fetch(options).await?.decode().await?;
        Ok(T::finish_list(list, &self.resource))
    }

    /// [`list`](Self::list) without decoding the items yet: the primitive of
    /// [`ListerWatcher::fetch_list`](kclient_core::ListerWatcher::fetch_list), so that a pager
    /// requests the next page while this one decodes. Whole objects that carry no type get
    /// the resource's; when the resource's kind is not known (a bare group/version/resource),
    /// the list is decoded at once, as `list` does, since the items' type comes from the list
    /// itself.
    pub async fn fetch_list(&self, options: &ListOptions) -> Result<FetchedList<T, Error>, Error> {
        let fetched = self.fetch(options).await?;
        if T::finished_whole(&self.resource) {
            let list = T::finish_list(fetched.decode().await?, &self.resource);
            return Ok(FetchedList::decoded(list));
        }
        Ok(T::finish_fetched(fetched, &self.resource))
    }

    /// The list request, sent, its items left undecoded.
    async fn fetch(&self, options: &ListOptions) -> Result<FetchedList<T, Error>, Error> {
        let request = T::accept(self.requests().list(options)?, Answer::List);
        let fetched = request
            .fetch_list::<T>()
            .await
            .map_err(|e| T::refused(e, &self.resource))?;
        Ok(fetched.map_err(Error::Rest))
    }

    /// Watches objects from `options.resource_version` (client-go's `Watch`): a stream of
    /// events that ends when the server closes the watch. The server's errors (`410 Gone`
    /// for a resourceVersion too old) arrive as `WatchEvent::Error`; a broken stream as an
    /// `Err` item.
    pub async fn watch(&self, options: &ListOptions) -> Result<WatchStream<T, Error>, Error> {
        let request = T::accept(self.requests().watch(options)?, Answer::Object);
        let stream = request
            .watch::<T>()
            .await
            .map_err(|e| T::refused(e, &self.resource))?;
        let resource = self.resource.clone();
        Ok(Box::pin(stream.map_err(Error::Rest).map_ok(move |event| {
            event.map(|object| object.finish(&resource))
        })))
    }

    /// Patches an object with any [`Patch`] kind — JSON patch, merge patch, strategic merge
    /// patch (built-in types only; the server refuses it for custom resources) or apply — and
    /// returns the result (client-go's `Patch`).
    pub async fn patch<P: Serialize>(
        &self,
        name: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
    ) -> Result<T, Error> {
        let request = self.requests().patch("patch", name, patch, options, None)?;
        self.read(request, Answer::Object).await
    }

    /// Deletes an object (client-go's `Delete`). The server answers with the object (when
    /// finalizers or graceful deletion keep it around, and for resources that always return
    /// it) or with a `Status`: see [`DeleteResponse`].
    pub async fn delete(
        &self,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<DeleteResponse<T>, Error> {
        let request = T::accept(self.requests().delete(name, options)?, Answer::Deleted);
        let response = request
            .send()
            .await
            .map_err(|e| T::refused(e, &self.resource))?;
        Ok(response.delete_response()?)
    }

    /// Deletes every object the list options select, in the namespace or across all
    /// (client-go's `DeleteCollection`). The server answers with the list of deleted objects
    /// or a `Status`.
    pub async fn delete_collection(
        &self,
        delete_options: &DeleteOptions,
        list_options: &ListOptions,
    ) -> Result<DeleteResponse<ObjectList<T>>, Error> {
        let request = self
            .requests()
            .delete_collection(delete_options, list_options)?;
        let response = T::accept(request, Answer::DeletedList)
            .send()
            .await
            .map_err(|e| T::refused(e, &self.resource))?;
        Ok(match response.delete_response()? {
            DeleteResponse::Object(list) => {
                DeleteResponse::Object(T::finish_list(list, &self.resource))
            }
            status => status,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use kclient_core::GroupVersionKind;
    use kclient_rest::{Config, Method, RefusedRequest};

    use super::*;
    use crate::DynamicClient;

    fn client() -> DynamicClient {
        DynamicClient::new(RestClient::new(Config::new("https://h")).unwrap())
    }

    /// The namespaced `stable.example.com/v1` `CronTab`s, the unit tests' custom resource.
    pub(crate) fn crontabs() -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::new("stable.example.com", "v1", "CronTab"),
            "crontabs",
            true,
        )
    }

    #[test]
    fn scope_decides_the_namespace_in_paths() {
        let c = client();
        let by_gvr = c.resource(GroupVersionResource::new("apps", "v1", "deployments"));
        assert_eq!(
            by_gvr.requests().collection(Method::GET).path(),
            "/apis/apps/v1/deployments"
        );
        let by_gvr = by_gvr.namespace("prod");
        assert_eq!(
            by_gvr.requests().collection(Method::GET).path(),
            "/apis/apps/v1/namespaces/prod/deployments"
        );
        assert_eq!(by_gvr.api_resource().api_version, "apps/v1");

        let nodes = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::new("", "v1", "Node"),
            "nodes",
            false,
        );
        let nodes = c.resource(&nodes).namespace("ignored");
        assert_eq!(nodes.namespace_name(), None);
        assert_eq!(
            nodes
                .requests()
                .object("get", Method::GET, "n1", Some("status"))
                .unwrap()
                .path(),
            "/api/v1/nodes/n1/status"
        );

        let cts = c.resource(crontabs());
        assert!(matches!(
            cts.requests().object("get", Method::GET, "x", None),
            Err(RefusedRequest::NamespaceRequired { verb: "get", .. })
        ));
        assert!(matches!(
            cts.clone()
                .namespace("a")
                .requests()
                .object("get", Method::GET, "", None),
            Err(RefusedRequest::MissingName { verb: "get" })
        ));
        assert_eq!(
            cts.clone().namespace("").namespace_name(),
            None,
            "an empty namespace is all namespaces"
        );
        assert_eq!(
            cts.namespace("a")
                .all_namespaces()
                .requests()
                .collection(Method::GET)
                .path(),
            "/apis/stable.example.com/v1/crontabs"
        );
    }
}
