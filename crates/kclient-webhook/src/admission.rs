//! Validating and defaulting admission webhooks for a type `K`, in controller-runtime's shape:
//! a [`CustomValidator`] says whether a create, update or delete may go on; a
//! [`CustomDefaulter`] fills in what the object leaves out, and the patch the API server
//! applies is computed from what it changed.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::UserInfo;
use kclient_core::admission::{AdmissionRequest, AdmissionResponse, Operation};
use kclient_core::{
    ApiError, ApiStatus, FieldError, GroupKind, GroupResource, Status, StatusReason,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// What a validator or defaulter learns of the request besides the object: controller-runtime's
/// `admission.RequestFromContext`.
#[derive(Debug, Clone)]
pub struct AdmissionContext {
    /// The request's uid (logged with everything the webhook says of it).
    pub uid: String,
    /// The operation.
    pub operation: Operation,
    /// The object's name (empty on a create with `generateName`).
    pub name: String,
    /// Its namespace (empty for cluster-scoped objects).
    pub namespace: String,
    /// The subresource written (`status`, `scale`), if any.
    pub sub_resource: Option<String>,
    /// Who asks.
    pub user_info: UserInfo,
    /// Whether nothing will be stored: the handler must have no side effects then.
    pub dry_run: bool,
}

impl AdmissionContext {
    fn of<T>(request: &AdmissionRequest<T>) -> Self {
        Self {
            uid: request.uid.clone(),
            operation: request.operation,
            name: request.name.clone(),
            namespace: request.namespace.clone(),
            sub_resource: request.sub_resource.clone(),
            user_info: request.user_info.clone(),
            dry_run: request.is_dry_run(),
        }
    }
}

/// Why a request is refused: the `Status` the client sees (in kube-apiserver's words,
/// `admission webhook "<name>" denied the request: <message>`).
#[derive(Debug, Clone, PartialEq)]
pub struct Denial(Box<Status>);

impl Denial {
    /// `403 Forbidden` with `message` (controller-runtime's `admission.Denied`, what a
    /// validator's plain error becomes).
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::with_code(StatusReason::Forbidden, 403, message)
    }

    /// `422 Invalid` with the field errors, as the API server's own validation answers
    /// (apimachinery's `NewInvalid`): `<Kind>.<group> "<name>" is invalid: <causes>`.
    pub fn invalid(kind: &GroupKind, name: &str, errors: Vec<FieldError>) -> Self {
        // apimachinery names the kind the way it names a resource: `Kind.group`.
        let qualified = GroupResource::new(&kind.group, &kind.kind);
        let error = ApiError::invalid(&qualified, name, errors);
        Self(Box::new(error.api_status().cloned().unwrap_or_default()))
    }

    /// The `Status` the client sees.
    pub fn status(&self) -> &Status {
        &self.0
    }

    /// The `Status`, owned.
    pub fn into_status(self) -> Status {
        *self.0
    }

    /// `400 BadRequest` with `message` (a request the webhook cannot read).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::with_code(StatusReason::BadRequest, 400, message)
    }

    fn with_code(reason: StatusReason, code: u16, message: impl Into<String>) -> Self {
        Self(Box::new(Status {
            status: Status::FAILURE.into(),
            message: message.into(),
            reason,
            code,
            details: None,
        }))
    }
}

impl From<String> for Denial {
    fn from(message: String) -> Self {
        Self::forbidden(message)
    }
}

impl From<&str> for Denial {
    fn from(message: &str) -> Self {
        Self::forbidden(message)
    }
}

impl From<Status> for Denial {
    fn from(status: Status) -> Self {
        Self(Box::new(status))
    }
}

impl From<ApiError> for Denial {
    /// The API error's `Status`, as controller-runtime passes an `APIStatus` error through.
    fn from(error: ApiError) -> Self {
        Self(Box::new(error.api_status().cloned().unwrap_or_default()))
    }
}

/// Warnings for the client (`Warning` headers): kept by the API server whatever the verdict.
pub type Warnings = Vec<String>;

/// Validates objects of type `K` (controller-runtime's `CustomValidator`): `Ok` with warnings
/// allows the operation, `Err` refuses it. Each method has a default that allows, so a
/// validator implements only what it checks.
pub trait CustomValidator<K>: Send + Sync + 'static {
    /// A new object.
    fn validate_create(
        &self,
        obj: &K,
        ctx: &AdmissionContext,
    ) -> impl Future<Output = Result<Warnings, Denial>> + Send {
        let _ = (obj, ctx);
        async { Ok(Warnings::new()) }
    }

    /// An object changing from `old` to `new` (a status or scale write too, with
    /// [`AdmissionContext::sub_resource`] set).
    fn validate_update(
        &self,
        old: &K,
        new: &K,
        ctx: &AdmissionContext,
    ) -> impl Future<Output = Result<Warnings, Denial>> + Send {
        let _ = (old, new, ctx);
        async { Ok(Warnings::new()) }
    }

    /// An object being deleted (the webhook's rules must name `DELETE`).
    fn validate_delete(
        &self,
        obj: &K,
        ctx: &AdmissionContext,
    ) -> impl Future<Output = Result<Warnings, Denial>> + Send {
        let _ = (obj, ctx);
        async { Ok(Warnings::new()) }
    }
}

/// Fills in the defaults of objects of type `K` (controller-runtime's `CustomDefaulter`) on
/// create and update. The patch sent back is what `default` changed, computed on the fields
/// `K` knows: fields of the object that `K` does not know are left as they are.
pub trait CustomDefaulter<K>: Send + Sync + 'static {
    /// Sets the defaults of `obj`; `Err` refuses the request.
    fn default(
        &self,
        obj: &mut K,
        ctx: &AdmissionContext,
    ) -> impl Future<Output = Result<(), Denial>> + Send;
}

/// An admission handler of any kind, as the server keeps it.
pub(crate) trait AdmissionHandler: Send + Sync {
    fn handle(&self, request: AdmissionRequest<Value>) -> BoxFuture<'_, AdmissionResponse>;
}

/// The object of `request` (`object`, or `old_object` for a delete) decoded as `K`.
fn decode<K: DeserializeOwned>(value: Option<&Value>, what: &str) -> Result<K, Denial> {
    let value = value.ok_or_else(|| Denial::bad_request(format!("the request has no {what}")))?;
    serde_json::from_value(value.clone())
        .map_err(|e| Denial::bad_request(format!("cannot decode the {what}: {e}")))
}

/// The response to a verdict.
fn verdict(uid: &str, outcome: Result<Warnings, Denial>) -> AdmissionResponse {
    match outcome {
        Ok(warnings) => AdmissionResponse::allow(uid).with_warnings(warnings),
        Err(denial) => AdmissionResponse::deny_with(uid, denial.into_status()),
    }
}

/// A [`CustomValidator`] as a handler.
pub(crate) struct Validating<K, V> {
    validator: Arc<V>,
    _kind: PhantomData<fn() -> K>,
}

impl<K, V> Validating<K, V> {
    pub(crate) fn new(validator: V) -> Self {
        Self {
            validator: Arc::new(validator),
            _kind: PhantomData,
        }
    }
}

impl<K, V> AdmissionHandler for Validating<K, V>
where
    K: DeserializeOwned + Send + Sync + 'static,
    V: CustomValidator<K>,
{
    fn handle(&self, request: AdmissionRequest<Value>) -> BoxFuture<'_, AdmissionResponse> {
        Box::pin(async move {
            let ctx = AdmissionContext::of(&request);
            let outcome = async {
                match request.operation {
                    Operation::Create => {
                        let obj = decode::<K>(request.object.as_ref(), "object")?;
                        self.validator.validate_create(&obj, &ctx).await
                    }
                    Operation::Update => {
                        let new = decode::<K>(request.object.as_ref(), "object")?;
                        let old = decode::<K>(request.old_object.as_ref(), "old object")?;
                        self.validator.validate_update(&old, &new, &ctx).await
                    }
                    Operation::Delete => {
                        let old = decode::<K>(request.old_object.as_ref(), "old object")?;
                        self.validator.validate_delete(&old, &ctx).await
                    }
                    Operation::Connect => Ok(Warnings::new()),
                }
            }
            .await;
            verdict(&request.uid, outcome)
        })
    }
}

/// A [`CustomDefaulter`] as a handler.
pub(crate) struct Defaulting<K, D> {
    defaulter: Arc<D>,
    _kind: PhantomData<fn() -> K>,
}

impl<K, D> Defaulting<K, D> {
    pub(crate) fn new(defaulter: D) -> Self {
        Self {
            defaulter: Arc::new(defaulter),
            _kind: PhantomData,
        }
    }
}

impl<K, D> AdmissionHandler for Defaulting<K, D>
where
    K: DeserializeOwned + Serialize + Send + Sync + 'static,
    D: CustomDefaulter<K>,
{
    fn handle(&self, request: AdmissionRequest<Value>) -> BoxFuture<'_, AdmissionResponse> {
        Box::pin(async move {
            if !matches!(request.operation, Operation::Create | Operation::Update) {
                return AdmissionResponse::allow(&request.uid);
            }
            let ctx = AdmissionContext::of(&request);
            let outcome = async {
                let raw = request
                    .object
                    .as_ref()
                    .ok_or_else(|| Denial::bad_request("the request has no object"))?;
                let mut obj = decode::<K>(Some(raw), "object")?;
                let before = to_json(&obj)?;
                self.defaulter.default(&mut obj, &ctx).await?;
                let after = to_json(&obj)?;
                Ok::<_, Denial>(patch_for(raw, &before, &after))
            }
            .await;
            match outcome {
                Ok(patch) => AdmissionResponse::allow(&request.uid).with_patch(&patch),
                Err(denial) => AdmissionResponse::deny_with(&request.uid, denial.into_status()),
            }
        })
    }
}

fn to_json<K: Serialize>(obj: &K) -> Result<Value, Denial> {
    kclient_core::json_value::to_value(obj).map_err(|e| {
        Denial::with_code(
            StatusReason::InternalError,
            500,
            format!("cannot encode the defaulted object: {e}"),
        )
    })
}

/// The patch of `raw` (the object as the API server sent it) that makes the changes the
/// defaulter made (`before` → `after`, both as `K` writes them): computed on `K`'s fields, so
/// fields `K` does not know stay; if those changes do not apply to `raw` (a container `K`
/// writes that `raw` lacks), the whole difference between `raw` and `after`.
pub(crate) fn patch_for(raw: &Value, before: &Value, after: &Value) -> json_patch::Patch {
    let changes = json_patch::diff(before, after);
    let mut applied = raw.clone();
    if json_patch::patch(&mut applied, &changes).is_ok() {
        return changes;
    }
    json_patch::diff(raw, after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_patch_keeps_fields_the_type_does_not_know() {
        let raw = json!({"spec": {"size": 0, "extra": "kept"}, "metadata": {"name": "a"}});
        let before = json!({"spec": {"size": 0}, "metadata": {"name": "a"}});
        let after = json!({"spec": {"size": 3}, "metadata": {"name": "a"}});
        let patch = serde_json::to_value(patch_for(&raw, &before, &after)).unwrap();
        assert_eq!(
            patch,
            json!([{"op": "replace", "path": "/spec/size", "value": 3}])
        );
    }

    #[test]
    fn a_change_the_raw_object_cannot_take_falls_back_to_the_whole_difference() {
        // `K` writes a `status: {}` the request did not have, and the defaulter fills it.
        let raw = json!({"spec": {}});
        let before = json!({"spec": {}, "status": {}});
        let after = json!({"spec": {}, "status": {"phase": "New"}});
        let patch = patch_for(&raw, &before, &after);
        let mut patched = raw.clone();
        json_patch::patch(&mut patched, &patch).unwrap();
        assert_eq!(patched, after);
    }
}
