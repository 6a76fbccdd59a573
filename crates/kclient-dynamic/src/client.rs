//! [`DynamicClient`] and [`DynamicResource`]: every verb on any resource, over
//! [`DynamicObject`] (client-go's `dynamic.DynamicClient` and its `ResourceInterface`).

use futures::TryStreamExt as _;
use kclient_core::{
    ApiResource, CreateOptions, DeleteOptions, DeleteResponse, DynamicObject, FetchedList,
    GetOptions, GroupVersionResource, ListOptions, ObjectList, Patch, PatchOptions, TypeMeta,
    UpdateOptions, WatchEvent, WatchStream,
};
use kclient_rest::{object_name, Method, Request, ResourceRequests, RestClient};
use serde::Serialize;

use crate::error::Error;

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
#[derive(Clone, Debug)]
pub struct DynamicClient {
    rest: RestClient,
}

impl DynamicClient {
    /// A dynamic client over `rest` (client-go's `dynamic.New`).
    pub fn new(rest: RestClient) -> Self {
        Self { rest }
    }

    /// The REST client underneath.
    pub fn rest_client(&self) -> &RestClient {
        &self.rest
    }

    /// A client for one resource, across all namespaces until
    /// [`namespace`](DynamicResource::namespace) narrows it (client-go's `Resource(gvr)`).
    ///
    /// Given a [`GroupVersionResource`], the scope is unknown: with a namespace, requests
    /// address it; without, they address the cluster-wide path, as in client-go. Given an
    /// [`ApiResource`] (from a `RestMapper`, or `Resource::api_resource`), the scope is known:
    /// a namespace is ignored for cluster-scoped resources, and calls on one object of a
    /// namespaced resource without a namespace fail early with [`Error::Refused`]
    /// (`RefusedRequest::NamespaceRequired`).
    /// Its kind also fills in `apiVersion` and `kind` where the server leaves them out.
    pub fn resource(&self, resource: impl Into<ResourceRef>) -> DynamicResource {
        let (resource, scope_known) = match resource.into() {
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
        DynamicResource {
            rest: self.rest.clone(),
            resource,
            scope_known,
            namespace: None,
        }
    }
}

/// What [`DynamicClient::resource`] addresses: a group-version-resource (scope unknown) or an
/// [`ApiResource`] (scope and kind known).
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
/// `ResourceInterface`). Made by [`DynamicClient::resource`]; cheap to clone.
///
/// Objects go in and out as [`DynamicObject`]s, losslessly: fields kclient does not know are
/// kept and sent back as they came.
#[derive(Clone, Debug)]
pub struct DynamicResource {
    rest: RestClient,
    resource: ApiResource,
    scope_known: bool,
    namespace: Option<String>,
}

impl DynamicResource {
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
    fn requests(&self) -> ResourceRequests<'_> {
        ResourceRequests::new(
            &self.rest,
            &self.resource,
            self.namespace_name(),
            self.scope_known && self.resource.namespaced,
        )
    }

    /// A request to the collection (the unit tests check the paths the scope gives).
    #[cfg(test)]
    fn collection(&self, method: Method) -> Request {
        self.requests().collection(method)
    }

    /// A request on one object (and maybe a subresource), checking the name and scope.
    fn object(
        &self,
        verb_name: &'static str,
        method: Method,
        name: &str,
        subresource: Option<&str>,
    ) -> Result<Request, Error> {
        Ok(self
            .requests()
            .object(verb_name, method, name, subresource)?)
    }

    /// Fills in `apiVersion` and `kind` of an object that lacks both, from the resource.
    fn fill_type(&self, mut object: DynamicObject) -> DynamicObject {
        if object.types.is_none() && !self.resource.kind.is_empty() {
            object.types = Some(TypeMeta::new(
                self.resource.api_version.clone(),
                self.resource.kind.clone(),
            ));
        }
        object
    }

    /// The request of [`get`](Self::get) (the metadata client sends it too).
    pub(crate) fn get_request(&self, name: &str, options: &GetOptions) -> Result<Request, Error> {
        Ok(self.requests().get("get", name, options, None)?)
    }

    /// The request of [`list`](Self::list) and [`fetch_list`](Self::fetch_list).
    pub(crate) fn list_request(&self, options: &ListOptions) -> Result<Request, Error> {
        Ok(self.requests().list(options)?)
    }

    /// The request of [`watch`](Self::watch).
    pub(crate) fn watch_request(&self, options: &ListOptions) -> Result<Request, Error> {
        Ok(self.requests().watch(options)?)
    }

    /// Reads one object (client-go's `Get`).
    pub async fn get(&self, name: &str, options: &GetOptions) -> Result<DynamicObject, Error> {
        let object = self.get_request(name, options)?.json().await?;
        Ok(self.fill_type(object))
    }

    /// Reads a subresource of one object (`status`, `scale` ...). The answer may be of another
    /// kind (`autoscaling/v1 Scale`), which a `DynamicObject` holds as well.
    pub async fn get_subresource(
        &self,
        name: &str,
        subresource: &str,
        options: &GetOptions,
    ) -> Result<DynamicObject, Error> {
        Ok(self
            .requests()
            .get("get", name, options, Some(subresource))?
            .json()
            .await?)
    }

    /// Lists objects: one request, so one page if `options.limit` is set (client-go's `List`).
    ///
    /// Items without `apiVersion` and `kind` (the API server leaves them out of list items)
    /// get the list's, with the `List` suffix dropped from the kind, as client-go's
    /// `UnstructuredList` does.
    ///
    /// For every page of a large list, use [`list_all`](Self::list_all) or
    /// [`list_pages`](Self::list_pages) (kclient-core's [`ListPager`](kclient_core::ListPager),
    /// which works over any [`ListerWatcher`](kclient_core::ListerWatcher)).
    pub async fn list(&self, options: &ListOptions) -> Result<ObjectList<DynamicObject>, Error> {
        let mut list = self
            .list_request(options)?
            .fetch_list::<DynamicObject>()
            .await?
            .decode()?;
        fill_item_types(&mut list, &self.resource);
        Ok(list)
    }

    /// [`list`](Self::list), handing each object to `f` as it is decoded (see
    /// [`ListerWatcher::list_mapped`](kclient_core::ListerWatcher::list_mapped)).
    pub async fn list_mapped<T>(
        &self,
        options: &ListOptions,
        f: impl FnMut(DynamicObject) -> T,
    ) -> Result<ObjectList<T>, Error> {
        self.fetch_list(options).await?.decode_mapped(f)
    }

    /// [`list`](Self::list) without decoding the items yet (see
    /// [`ListerWatcher::fetch_list`](kclient_core::ListerWatcher::fetch_list)): the pager
    /// requests the next page while this one decodes. Items that carry no type get the
    /// resource's, as in `list`; when the resource's kind is not known (a bare
    /// group/version/resource), the list is decoded at once, as `list` does, since the items'
    /// type comes from the list itself.
    pub async fn fetch_list(
        &self,
        options: &ListOptions,
    ) -> Result<FetchedList<DynamicObject, Error>, Error> {
        let resource = &self.resource;
        if resource.api_version.is_empty() || resource.kind.is_empty() {
            return Ok(FetchedList::decoded(self.list(options).await?));
        }
        let (api_version, kind) = (resource.api_version.clone(), resource.kind.clone());
        Ok(self
            .list_request(options)?
            .fetch_list::<DynamicObject>()
            .await?
            .map(move |mut item| {
                fill_item_type(&mut item, &api_version, &kind);
                item
            })
            .map_err(Error::from))
    }

    /// Watches objects from `options.resource_version` (client-go's `Watch`): a stream of
    /// events that ends when the server closes the watch. The server's errors (`410 Gone`
    /// for a resourceVersion too old) arrive as `WatchEvent::Error`; a broken stream as an
    /// `Err` item.
    pub async fn watch(
        &self,
        options: &ListOptions,
    ) -> Result<WatchStream<DynamicObject, Error>, Error> {
        let stream = self
            .watch_request(options)?
            .watch::<DynamicObject>()
            .await?;
        let this = self.clone();
        Ok(Box::pin(stream.map_err(Error::from).map_ok(
            move |event: WatchEvent<DynamicObject>| event.map(|o| this.fill_type(o)),
        )))
    }

    /// Creates an object and returns it as stored (client-go's `Create`).
    pub async fn create(
        &self,
        object: &DynamicObject,
        options: &CreateOptions,
    ) -> Result<DynamicObject, Error> {
        Ok(self.requests().create(object, options)?.json().await?)
    }

    /// Creates a subresource of an existing object (`pods/eviction`,
    /// `serviceaccounts/token` ...); the name comes from `object.metadata.name`, as in
    /// client-go.
    pub async fn create_subresource(
        &self,
        subresource: &str,
        object: &DynamicObject,
        options: &CreateOptions,
    ) -> Result<DynamicObject, Error> {
        options.validate()?;
        let name = object_name(object, "create")?;
        Ok(self
            .object("create", Method::POST, &name, Some(subresource))?
            .params(options.query_pairs())
            .json_body(object)
            .json()
            .await?)
    }

    /// Replaces an object (a `PUT`; client-go's `Update`). The name comes from
    /// `object.metadata.name`; a `resourceVersion` makes it a compare-and-swap (`409 Conflict`
    /// if the object changed meanwhile).
    pub async fn update(
        &self,
        object: &DynamicObject,
        options: &UpdateOptions,
    ) -> Result<DynamicObject, Error> {
        self.put(object, options, None).await
    }

    /// Replaces an object's status (the `status` subresource; client-go's `UpdateStatus`).
    pub async fn update_status(
        &self,
        object: &DynamicObject,
        options: &UpdateOptions,
    ) -> Result<DynamicObject, Error> {
        self.put(object, options, Some("status")).await
    }

    /// Replaces a subresource (`scale` ...) of the object named by `object.metadata.name`.
    pub async fn update_subresource(
        &self,
        subresource: &str,
        object: &DynamicObject,
        options: &UpdateOptions,
    ) -> Result<DynamicObject, Error> {
        self.put(object, options, Some(subresource)).await
    }

    async fn put(
        &self,
        object: &DynamicObject,
        options: &UpdateOptions,
        subresource: Option<&str>,
    ) -> Result<DynamicObject, Error> {
        Ok(self
            .requests()
            .update_object("update", object, options, subresource)?
            .json()
            .await?)
    }

    /// Patches an object with any [`Patch`] kind — JSON patch, merge patch, strategic merge
    /// patch (built-in types only; the server refuses it for custom resources) or apply — and
    /// returns the result (client-go's `Patch`).
    pub async fn patch<P: Serialize>(
        &self,
        name: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
    ) -> Result<DynamicObject, Error> {
        self.send_patch(name, patch, options, None).await
    }

    /// Patches an object's status.
    pub async fn patch_status<P: Serialize>(
        &self,
        name: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
    ) -> Result<DynamicObject, Error> {
        self.send_patch(name, patch, options, Some("status")).await
    }

    /// Patches a subresource (`scale` ...).
    pub async fn patch_subresource<P: Serialize>(
        &self,
        name: &str,
        subresource: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
    ) -> Result<DynamicObject, Error> {
        self.send_patch(name, patch, options, Some(subresource))
            .await
    }

    /// The request of a patch (of the object, or of a subresource).
    pub(crate) fn patch_request<P: Serialize>(
        &self,
        name: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
        subresource: Option<&str>,
    ) -> Result<Request, Error> {
        Ok(self
            .requests()
            .patch("patch", name, patch, options, subresource)?)
    }

    async fn send_patch<P: Serialize>(
        &self,
        name: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
        subresource: Option<&str>,
    ) -> Result<DynamicObject, Error> {
        let request = self.patch_request(name, patch, options, subresource)?;
        Ok(request.json().await?)
    }

    /// Server-side apply (client-go's `Apply`): sends `configuration`, the fields this field
    /// manager wants to own (with `apiVersion`, `kind` and `metadata.name`), and returns the
    /// merged object. `options` needs a field manager ([`PatchOptions::apply`]); set `force` to
    /// take over fields other managers own. A configuration carrying
    /// `metadata.managedFields` is refused ([`Error::Refused`],
    /// `RefusedRequest::ManagedFieldsSet`), as in client-go.
    pub async fn apply(
        &self,
        name: &str,
        configuration: &DynamicObject,
        options: &PatchOptions,
    ) -> Result<DynamicObject, Error> {
        self.send_apply(name, configuration, options, None).await
    }

    /// Server-side apply of an object's status (client-go's `ApplyStatus`).
    pub async fn apply_status(
        &self,
        name: &str,
        configuration: &DynamicObject,
        options: &PatchOptions,
    ) -> Result<DynamicObject, Error> {
        self.send_apply(name, configuration, options, Some("status"))
            .await
    }

    async fn send_apply(
        &self,
        name: &str,
        configuration: &DynamicObject,
        options: &PatchOptions,
        subresource: Option<&str>,
    ) -> Result<DynamicObject, Error> {
        let request = self
            .requests()
            .apply("patch", name, configuration, options, subresource)?;
        Ok(request.json().await?)
    }

    /// Deletes an object (client-go's `Delete`). The server answers with the object (when
    /// finalizers or graceful deletion keep it around, and for resources that always return
    /// it) or with a `Status`: see [`DeleteResponse`].
    pub async fn delete(
        &self,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<DeleteResponse<DynamicObject>, Error> {
        let response = self.delete_request(name, options)?.send().await?;
        Ok(response.delete_response()?)
    }

    /// The request of [`delete`](Self::delete): the options as a JSON body.
    pub(crate) fn delete_request(
        &self,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Request, Error> {
        Ok(self.requests().delete(name, options)?)
    }

    /// The request of [`delete_collection`](Self::delete_collection).
    pub(crate) fn delete_collection_request(
        &self,
        delete_options: &DeleteOptions,
        list_options: &ListOptions,
    ) -> Result<Request, Error> {
        Ok(self
            .requests()
            .delete_collection(delete_options, list_options)?)
    }

    /// Deletes every object the list options select, in the namespace or across all
    /// (client-go's `DeleteCollection`). The server answers with the list of deleted objects
    /// or a `Status`.
    pub async fn delete_collection(
        &self,
        delete_options: &DeleteOptions,
        list_options: &ListOptions,
    ) -> Result<DeleteResponse<ObjectList<DynamicObject>>, Error> {
        let response = self
            .delete_collection_request(delete_options, list_options)?
            .send()
            .await?;
        let mut response = response.delete_response()?;
        if let DeleteResponse::Object(list) = &mut response {
            fill_item_types(list, &self.resource);
        }
        Ok(response)
    }
}

/// Gives list items without `apiVersion` and `kind` the list's (its kind without the `List`
/// suffix), or else the resource's (client-go's `UnstructuredList` decoding).
pub(crate) fn fill_item_types(list: &mut ObjectList<DynamicObject>, resource: &ApiResource) {
    let (api_version, kind) = match &list.types {
        Some(t) if !t.api_version.is_empty() && !t.kind.is_empty() => (
            t.api_version.clone(),
            t.kind.strip_suffix("List").unwrap_or(&t.kind).to_owned(),
        ),
        _ => (resource.api_version.clone(), resource.kind.clone()),
    };
    if api_version.is_empty() || kind.is_empty() {
        return;
    }
    for item in &mut list.items {
        fill_item_type(item, &api_version, &kind);
    }
}

/// Gives an item without any type field the list's type (an item with one keeps its own).
fn fill_item_type(item: &mut DynamicObject, api_version: &str, kind: &str) {
    if api_version.is_empty() || kind.is_empty() {
        return;
    }
    let untyped = item.types.is_none()
        && item.data.get("apiVersion").is_none()
        && item.data.get("kind").is_none();
    if untyped {
        item.types = Some(TypeMeta::new(api_version, kind));
    }
}

#[cfg(test)]
mod tests {
    use kclient_core::GroupVersionKind;
    use kclient_rest::{Config, RefusedRequest};
    use serde_json::json;

    use super::*;

    fn client() -> DynamicClient {
        DynamicClient::new(RestClient::new(Config::new("https://h")).unwrap())
    }

    fn crontabs() -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::new("stable.example.com", "v1", "CronTab"),
            "crontabs",
            true,
        )
    }

    #[test]
    fn list_items_get_the_list_type() {
        let mut list: ObjectList<DynamicObject> = serde_json::from_value(json!({
            "apiVersion": "stable.example.com/v1", "kind": "CronTabList",
            "metadata": {"resourceVersion": "5"},
            "items": [
                {"metadata": {"name": "a"}},
                {"apiVersion": "stable.example.com/v2", "kind": "CronTab", "metadata": {"name": "b"}}
            ]
        }))
        .unwrap();
        fill_item_types(&mut list, &ApiResource::default());
        assert_eq!(
            list.items[0].types,
            Some(TypeMeta::new("stable.example.com/v1", "CronTab"))
        );
        assert_eq!(
            list.items[1].types.as_ref().unwrap().api_version,
            "stable.example.com/v2",
            "items that carry their type keep it"
        );
    }

    #[test]
    fn list_items_fall_back_to_the_resource_type() {
        let mut list: ObjectList<DynamicObject> =
            serde_json::from_value(json!({"items": [{"metadata": {"name": "a"}}]})).unwrap();
        fill_item_types(&mut list, &ApiResource::default());
        assert_eq!(list.items[0].types, None, "nothing to fill from");
        fill_item_types(&mut list, &crontabs());
        assert_eq!(
            list.items[0].types,
            Some(TypeMeta::new("stable.example.com/v1", "CronTab"))
        );
    }

    #[test]
    fn scope_decides_the_namespace_in_paths() {
        let c = client();
        let by_gvr = c.resource(GroupVersionResource::new("apps", "v1", "deployments"));
        assert_eq!(
            by_gvr.collection(Method::GET).path(),
            "/apis/apps/v1/deployments"
        );
        let by_gvr = by_gvr.namespace("prod");
        assert_eq!(
            by_gvr.collection(Method::GET).path(),
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
                .object("get", Method::GET, "n1", Some("status"))
                .unwrap()
                .path(),
            "/api/v1/nodes/n1/status"
        );

        let cts = c.resource(crontabs());
        assert!(matches!(
            cts.object("get", Method::GET, "x", None),
            Err(Error::Refused(RefusedRequest::NamespaceRequired {
                verb: "get",
                ..
            }))
        ));
        assert!(matches!(
            cts.clone()
                .namespace("a")
                .object("get", Method::GET, "", None),
            Err(Error::Refused(RefusedRequest::MissingName { verb: "get" }))
        ));
        assert_eq!(
            cts.clone().namespace("").namespace_name(),
            None,
            "an empty namespace is all namespaces"
        );
        assert_eq!(
            cts.namespace("a")
                .all_namespaces()
                .collection(Method::GET)
                .path(),
            "/apis/stable.example.com/v1/crontabs"
        );
    }

    #[test]
    fn watch_objects_get_the_resource_type() {
        let cts = client().resource(crontabs());
        let filled = cts.fill_type(DynamicObject::default());
        assert_eq!(
            filled.types,
            Some(TypeMeta::new("stable.example.com/v1", "CronTab"))
        );
        let by_gvr = client().resource(crontabs().gvr());
        assert_eq!(by_gvr.fill_type(DynamicObject::default()).types, None);
    }
}
