//! The verbs only whole objects have: create, update and server-side apply, of the object or
//! of a subresource (`status`, `scale`, `eviction` ...), and reading a subresource. A
//! metadata view reads and patches metadata; it writes no whole objects.

use kclient_core::{
    CreateOptions, DynamicObject, GetOptions, ListOptions, ObjectList, Patch, PatchOptions,
    UpdateOptions,
};
use kclient_rest::{object_name, Method, Request};
use serde::Serialize;

use crate::error::Error;
use crate::resource::DynamicResource;

impl DynamicResource<DynamicObject> {
    /// Sends `request` and decodes the object it answers with.
    async fn send(request: Request) -> Result<DynamicObject, Error> {
        Ok(request.decode().await?)
    }

    /// Reads a subresource of one object (`status`, `scale` ...). The answer may be of another
    /// kind (`autoscaling/v1 Scale`), which a `DynamicObject` holds as well.
    pub async fn get_subresource(
        &self,
        name: &str,
        subresource: &str,
        options: &GetOptions,
    ) -> Result<DynamicObject, Error> {
        Self::send(
            self.requests()
                .get("get", name, options, Some(subresource))?,
        )
        .await
    }

    /// [`list`](Self::list), handing each object to `f` as it is decoded.
    #[deprecated(
        since = "0.1.0",
        note = "the same as `ListerWatcher::list_mapped` (kclient_core::ListerWatcher), which \
                DynamicResource implements: import the trait and call it"
    )]
    pub async fn list_mapped<T>(
        &self,
        options: &ListOptions,
        f: impl FnMut(DynamicObject) -> T,
    ) -> Result<ObjectList<T>, Error> {
        self.fetch_list(options).await?.decode_mapped(f).await
    }

    /// Creates an object and returns it as stored (client-go's `Create`).
    pub async fn create(
        &self,
        object: &DynamicObject,
        options: &CreateOptions,
    ) -> Result<DynamicObject, Error> {
        Self::send(self.requests().create(object, options)?).await
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
        let request = self
            .requests()
            .object("create", Method::POST, &name, Some(subresource))?
            .params(options.query_pairs())
            .json_body(object);
        Self::send(request).await
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
        Self::send(
            self.requests()
                .update_object("update", object, options, subresource)?,
        )
        .await
    }

    /// Patches an object's status.
    pub async fn patch_status<P: Serialize>(
        &self,
        name: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
    ) -> Result<DynamicObject, Error> {
        self.patch_subresource(name, "status", patch, options).await
    }

    /// Patches a subresource (`scale` ...).
    pub async fn patch_subresource<P: Serialize>(
        &self,
        name: &str,
        subresource: &str,
        patch: &Patch<P>,
        options: &PatchOptions,
    ) -> Result<DynamicObject, Error> {
        Self::send(
            self.requests()
                .patch("patch", name, patch, options, Some(subresource))?,
        )
        .await
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
        Self::send(
            self.requests()
                .apply("patch", name, configuration, options, subresource)?,
        )
        .await
    }
}
