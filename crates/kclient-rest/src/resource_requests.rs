//! [`ResourceRequests`]: the requests of the standard verbs on one resource — get, list,
//! watch, create, update, patch, apply, delete, delete-collection, on the resource or a
//! subresource — with the checks made before anything is sent ([`RefusedRequest`]).
//!
//! The typed client (kclient-typed's `ResourceClient`) and the dynamic and metadata clients
//! (kclient-dynamic) build every request here, so they address, validate and refuse the same
//! things the same way: options the server would reject, a call on one object without its
//! name or (for a namespaced resource) its namespace, and an apply configuration that
//! already carries `metadata.managedFields` (client-go refuses it: the server would take them
//! as the fields to own).
//!
//! ```
//! use kclient_core::{ApiResource, GroupVersionKind, ListOptions};
//! use kclient_rest::{Config, Method, RefusedRequest, ResourceRequests, RestClient};
//!
//! let client = RestClient::new(Config::new("https://example.com")).unwrap();
//! let crontabs = ApiResource::from_gvk_with_plural(
//!     &GroupVersionKind::new("stable.example.com", "v1", "CronTab"),
//!     "crontabs",
//!     true,
//! );
//! let prod = ResourceRequests::new(&client, &crontabs, Some("prod"), true);
//! assert_eq!(
//!     prod.list(&ListOptions::default()).unwrap().path(),
//!     "/apis/stable.example.com/v1/namespaces/prod/crontabs"
//! );
//! let everywhere = ResourceRequests::new(&client, &crontabs, None, true);
//! assert!(matches!(
//!     everywhere.object("get", Method::GET, "nightly", None),
//!     Err(RefusedRequest::NamespaceRequired { verb: "get", .. })
//! ));
//! ```

use kclient_core::{
    ApiResource, CreateOptions, DeleteOptions, GetOptions, GroupResource, ListOptions,
    OptionsError, Patch, PatchOptions, Resource, ResourceExt, UpdateOptions,
};
use serde::Serialize;

use crate::client::RestClient;
use crate::request::Request;
use crate::Method;

/// Why a request on a resource was refused before it was sent (the server would have
/// refused it, or, for managed fields, misread it). The typed and dynamic clients carry it
/// whole, as their `Error::Refused`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RefusedRequest {
    /// The options would be rejected by the server.
    #[error("invalid options: {0}")]
    Options(#[from] OptionsError),

    /// The call addresses one object of a namespaced resource (or creates one), but no
    /// namespace was given.
    #[error("{verb} of a {resource} object needs a namespace: this client addresses all namespaces; bind it to one")]
    NamespaceRequired {
        /// The verb (`create`, `get`, `update`, `update_status` ...).
        verb: &'static str,
        /// The resource.
        resource: GroupResource,
    },

    /// The call needs an object name, and none was given (an empty name, or an object
    /// without `metadata.name`).
    #[error("{verb} needs the object's metadata.name, which is not set")]
    MissingName {
        /// The verb.
        verb: &'static str,
    },

    /// An apply configuration carries `metadata.managedFields` (as in client-go: the server
    /// would take them as the fields to own).
    #[error("cannot apply an object with managed fields already set; remove metadata.managedFields (or extract the apply configuration of your field manager) first")]
    ManagedFieldsSet,

    /// A body could not be serialized.
    #[error("cannot serialize the request body: {0}")]
    Serialize(#[source] serde_json::Error),
}

/// The name of an object about to be written (its `metadata.name`), refused when empty.
pub fn object_name<K: Resource>(object: &K, verb: &'static str) -> Result<String, RefusedRequest> {
    object
        .name()
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .ok_or(RefusedRequest::MissingName { verb })
}

/// The requests of the standard verbs on one resource, in one namespace or all; see the
/// [module docs](self). Cheap: it borrows the client and the resource.
#[derive(Debug, Clone, Copy)]
pub struct ResourceRequests<'a> {
    client: &'a RestClient,
    resource: &'a ApiResource,
    namespace: Option<&'a str>,
    namespace_required: bool,
    protobuf: bool,
}

impl<'a> ResourceRequests<'a> {
    /// The requests on `resource` in `namespace` (`None`: all namespaces, or a cluster-scoped
    /// resource), sent through `client`. With `namespace_required` (a namespaced resource
    /// whose scope is known), calls on one object and creates without a namespace are
    /// refused.
    pub fn new(
        client: &'a RestClient,
        resource: &'a ApiResource,
        namespace: Option<&'a str>,
        namespace_required: bool,
    ) -> Self {
        Self {
            client,
            resource,
            namespace,
            namespace_required,
            protobuf: false,
        }
    }

    /// Asks for protobuf answers ([`Request::accept_protobuf`]) to get, list, watch, create,
    /// update and patch (and apply) when `K` has a protobuf codec — a built-in kind — as
    /// client-go's generated clients do; custom resources and `DynamicObject` stay JSON.
    /// Request bodies stay JSON (see `docs/design/protobuf.md`); deletes, and the other
    /// subresources (logs, eviction), are JSON.
    pub fn prefer_protobuf_for<K: 'static>(mut self) -> Self {
        self.protobuf = kclient_protobuf::registry::codec::<K>().is_some();
        self
    }

    /// `request` with the query `query`, preferring protobuf if
    /// [`prefer_protobuf_for`](Self::prefer_protobuf_for) said so. Not generic, so that the
    /// verbs generic over their bodies share one copy (`docs/architecture.md`, "Compiled
    /// once").
    fn negotiated(&self, request: Request, query: Vec<(&'static str, String)>) -> Request {
        let request = request.params(query);
        if self.protobuf {
            request.accept_protobuf()
        } else {
            request
        }
    }

    /// Addresses `request` to the collection: the resource's group-version, the namespace
    /// and the plural.
    pub fn address(&self, request: Request) -> Request {
        request
            .group_version(&self.resource.group_version())
            .namespace_opt(self.namespace)
            .resource(&self.resource.plural)
    }

    /// A request to the collection (`.../namespaces/{ns}/{plural}`).
    pub fn collection(&self, method: Method) -> Request {
        self.address(self.client.request(method))
    }

    /// Refuses a call on one object (or a create) without the namespace it needs.
    pub fn check_scope(&self, verb: &'static str) -> Result<(), RefusedRequest> {
        if self.namespace_required && self.namespace.is_none() {
            return Err(RefusedRequest::NamespaceRequired {
                verb,
                resource: self.resource.gvr().group_resource(),
            });
        }
        Ok(())
    }

    /// A request to one object (`.../{plural}/{name}`), or to one of its subresources,
    /// refused without a name or the namespace it needs.
    pub fn object(
        &self,
        verb: &'static str,
        method: Method,
        name: &str,
        subresource: Option<&str>,
    ) -> Result<Request, RefusedRequest> {
        if name.is_empty() {
            return Err(RefusedRequest::MissingName { verb });
        }
        self.check_scope(verb)?;
        let request = self.collection(method).name(name);
        Ok(match subresource {
            Some(sub) => request.subresource(sub),
            None => request,
        })
    }

    /// `GET` of one object (or a subresource), with its options.
    pub fn get(
        &self,
        verb: &'static str,
        name: &str,
        options: &GetOptions,
        subresource: Option<&str>,
    ) -> Result<Request, RefusedRequest> {
        let request = self.object(verb, Method::GET, name, subresource)?;
        Ok(self.negotiated(request, options.query_pairs()))
    }

    /// `GET` of the collection: a list (a page of one with `options.limit`).
    pub fn list(&self, options: &ListOptions) -> Result<Request, RefusedRequest> {
        options.validate(false)?;
        Ok(self
            .negotiated(self.collection(Method::GET), options.query_pairs())
            .omit_managed_fields(options.omit_managed_fields))
    }

    /// A watch of the collection.
    pub fn watch(&self, options: &ListOptions) -> Result<Request, RefusedRequest> {
        options.validate(true)?;
        Ok(self
            .negotiated(self.collection(Method::GET), options.watch_query_pairs())
            .omit_managed_fields(options.omit_managed_fields))
    }

    /// `POST` of `object` to the collection.
    pub fn create<T: Serialize + ?Sized>(
        &self,
        object: &T,
        options: &CreateOptions,
    ) -> Result<Request, RefusedRequest> {
        options.validate()?;
        self.check_scope("create")?;
        Ok(self
            .negotiated(self.collection(Method::POST), options.query_pairs())
            .json_body(object))
    }

    /// `PUT` of `object` to one object named `name` (or to a subresource).
    pub fn update<T: Serialize + ?Sized>(
        &self,
        verb: &'static str,
        name: &str,
        object: &T,
        options: &UpdateOptions,
        subresource: Option<&str>,
    ) -> Result<Request, RefusedRequest> {
        options.validate()?;
        let request = self.object(verb, Method::PUT, name, subresource)?;
        Ok(self
            .negotiated(request, options.query_pairs())
            .json_body(object))
    }

    /// `PUT` of `object` to itself (or to its subresource), the name from its
    /// `metadata.name`: [`update`](Self::update) after checking the options and the name.
    pub fn update_object<K: Resource + Serialize>(
        &self,
        verb: &'static str,
        object: &K,
        options: &UpdateOptions,
        subresource: Option<&str>,
    ) -> Result<Request, RefusedRequest> {
        options.validate()?;
        let name = object_name(object, verb)?;
        self.update(verb, &name, object, options, subresource)
    }

    /// `PATCH` of one object (or a subresource) with any [`Patch`] kind: the options must
    /// suit the patch, and a JSON patch's pointers must be valid.
    pub fn patch<P: Serialize>(
        &self,
        verb: &'static str,
        name: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
        subresource: Option<&str>,
    ) -> Result<Request, RefusedRequest> {
        options.validate_for(patch)?;
        let request = self.client.patch(patch);
        self.patch_request(verb, name, request, options, subresource)
    }

    /// [`patch`](Self::patch) once the patch is in `request`: not generic over the patch
    /// ("Compiled once" in `docs/architecture.md`).
    fn patch_request(
        &self,
        verb: &'static str,
        name: &str,
        request: Request,
        options: &PatchOptions,
        subresource: Option<&str>,
    ) -> Result<Request, RefusedRequest> {
        if name.is_empty() {
            return Err(RefusedRequest::MissingName { verb });
        }
        self.check_scope(verb)?;
        let request = self.address(request).name(name);
        let request = match subresource {
            Some(sub) => request.subresource(sub),
            None => request,
        };
        Ok(self.negotiated(request, options.query_pairs()))
    }

    /// Server-side apply of `configuration` to one object (or a subresource): an apply
    /// patch, refused when the configuration carries `metadata.managedFields`.
    pub fn apply<P: Serialize>(
        &self,
        verb: &'static str,
        name: &str,
        configuration: &P,
        options: &PatchOptions,
        subresource: Option<&str>,
    ) -> Result<Request, RefusedRequest> {
        let value =
            kclient_core::json_value::to_value(configuration).map_err(RefusedRequest::Serialize)?;
        let managed = value
            .pointer("/metadata/managedFields")
            .and_then(serde_json::Value::as_array)
            .is_some_and(|fields| !fields.is_empty());
        if managed {
            return Err(RefusedRequest::ManagedFieldsSet);
        }
        self.patch(
            verb,
            name,
            &Patch::Apply(configuration),
            options,
            subresource,
        )
    }

    /// `DELETE` of one object, the options as a JSON body.
    pub fn delete(&self, name: &str, options: &DeleteOptions) -> Result<Request, RefusedRequest> {
        options.validate()?;
        let body = options.to_body().map_err(RefusedRequest::Serialize)?;
        Ok(self
            .object("delete", Method::DELETE, name, None)?
            .header("Content-Type", "application/json")
            .body(body))
    }

    /// `DELETE` of the collection (delete-collection): the objects `list_options` select.
    pub fn delete_collection(
        &self,
        delete_options: &DeleteOptions,
        list_options: &ListOptions,
    ) -> Result<Request, RefusedRequest> {
        delete_options.validate()?;
        list_options.validate(false)?;
        let body = delete_options
            .to_body()
            .map_err(RefusedRequest::Serialize)?;
        Ok(self
            .collection(Method::DELETE)
            .params(list_options.query_pairs())
            .header("Content-Type", "application/json")
            .body(body))
    }
}

#[cfg(test)]
mod tests {
    use kclient_core::{DynamicObject, GroupVersionKind};
    use serde_json::json;

    use super::*;
    use crate::Config;

    fn client() -> RestClient {
        RestClient::new(Config::new("https://h")).unwrap()
    }

    fn crontabs() -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::new("stable.example.com", "v1", "CronTab"),
            "crontabs",
            true,
        )
    }

    #[test]
    fn names_and_namespaces_are_checked_before_sending() {
        let client = client();
        let resource = crontabs();
        let all = ResourceRequests::new(&client, &resource, None, true);
        for verb in ["get", "update_status"] {
            let refused = all.object(verb, Method::GET, "x", None).unwrap_err();
            assert!(
                matches!(&refused, RefusedRequest::NamespaceRequired { verb: v, resource }
                    if *v == verb && resource == &GroupResource::new("stable.example.com", "crontabs")),
                "{refused}"
            );
        }
        assert!(matches!(
            all.create(&json!({}), &CreateOptions::default()),
            Err(RefusedRequest::NamespaceRequired { verb: "create", .. })
        ));
        let unknown_scope = ResourceRequests::new(&client, &resource, None, false);
        assert_eq!(
            unknown_scope
                .object("get", Method::GET, "x", Some("status"))
                .unwrap()
                .path(),
            "/apis/stable.example.com/v1/crontabs/x/status"
        );
        let prod = ResourceRequests::new(&client, &resource, Some("prod"), true);
        assert!(matches!(
            prod.object("delete", Method::DELETE, "", None),
            Err(RefusedRequest::MissingName { verb: "delete" })
        ));
        assert!(matches!(
            prod.patch(
                "patch",
                "",
                &Patch::Merge(json!({})),
                &PatchOptions::default(),
                None
            ),
            Err(RefusedRequest::MissingName { verb: "patch" })
        ));
    }

    #[test]
    fn apply_refuses_managed_fields() {
        let client = client();
        let resource = crontabs();
        let prod = ResourceRequests::new(&client, &resource, Some("prod"), true);
        let options = PatchOptions::apply("me");
        let mut configuration: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": "nightly", "managedFields": [{"manager": "other"}]}
        }))
        .unwrap();
        assert!(matches!(
            prod.apply("apply", "nightly", &configuration, &options, None),
            Err(RefusedRequest::ManagedFieldsSet)
        ));
        configuration.metadata.managed_fields = Some(Vec::new());
        let request = prod
            .apply("apply", "nightly", &configuration, &options, None)
            .unwrap();
        assert_eq!(
            request.path(),
            "/apis/stable.example.com/v1/namespaces/prod/crontabs/nightly"
        );
    }

    #[test]
    fn object_names_come_from_metadata() {
        let mut object = DynamicObject::default();
        assert!(matches!(
            object_name(&object, "update"),
            Err(RefusedRequest::MissingName { verb: "update" })
        ));
        object.metadata.name = Some("web".into());
        assert_eq!(object_name(&object, "update").unwrap(), "web");
    }
}
