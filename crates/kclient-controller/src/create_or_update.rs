//! [`create_or_update`] and [`create_or_patch`]: make an object what it should be, whether it
//! exists or not (controller-runtime's `controllerutil.CreateOrUpdate` and `CreateOrPatch`).
//!
//! Both read the object; if it is not there, `mutate` fills in the new object and it is
//! created. If it is, `mutate` changes what was read, and only a real change is written — an
//! update (`create_or_update`, which conflicts if the object changed meanwhile) or merge
//! patches of the object and of its status (`create_or_patch`, which does not). A change is
//! found by comparing the object's JSON before and after `mutate`, so the object is never
//! cloned. `mutate` may not change the name or the namespace.

use std::fmt;

use kclient_core::patch::create_merge_patch;
use kclient_core::{
    ApiStatus, CreateOptions, Patch, PatchOptions, Resource, ResourceExt, UpdateOptions,
};
use kclient_typed::ResourceClient;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// What [`create_or_update`] or [`create_or_patch`] did (controller-runtime's
/// `OperationResult`; its `Display` is controller-runtime's word, completing "… has been").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OperationResult {
    /// Nothing: the object was already what it should be.
    Unchanged,
    /// The object was created.
    Created,
    /// The object was updated (patched).
    Updated,
    /// The object and its status were patched.
    UpdatedStatus,
    /// Only the status was patched.
    UpdatedStatusOnly,
}

impl fmt::Display for OperationResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OperationResult::Unchanged => "unchanged",
            OperationResult::Created => "created",
            OperationResult::Updated => "updated",
            OperationResult::UpdatedStatus => "updatedStatus",
            OperationResult::UpdatedStatusOnly => "updatedStatusOnly",
        })
    }
}

/// Why [`create_or_update`] or [`create_or_patch`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CreateOrUpdateError<E: std::error::Error + 'static> {
    /// A read or a write failed.
    #[error(transparent)]
    Request(#[from] kclient_typed::Error),
    /// `mutate` failed.
    #[error("the mutate function failed: {0}")]
    Mutate(#[source] E),
    /// `mutate` changed the name or the namespace (controller-runtime's wording).
    #[error("MutateFn cannot mutate object name and/or object namespace")]
    KeyChanged,
    /// The object has no name.
    #[error("the object has no name")]
    Unnamed,
    /// The object could not be turned into JSON to compare.
    #[error("cannot encode the object: {0}")]
    Encode(#[source] serde_json::Error),
}

impl<E: std::error::Error + 'static> ApiStatus for CreateOrUpdateError<E> {
    fn api_status(&self) -> Option<&kclient_core::Status> {
        match self {
            CreateOrUpdateError::Request(e) => e.api_status(),
            _ => None,
        }
    }
}

impl<E: std::error::Error + 'static> CreateOrUpdateError<E> {
    /// The same error with `mutate`'s error converted by `f` (into a program's own error
    /// type, say); the other errors are kept.
    pub fn map_mutate_error<F: std::error::Error + 'static>(
        self,
        f: impl FnOnce(E) -> F,
    ) -> CreateOrUpdateError<F> {
        match self {
            Self::Request(e) => CreateOrUpdateError::Request(e),
            Self::Mutate(e) => CreateOrUpdateError::Mutate(f(e)),
            Self::KeyChanged => CreateOrUpdateError::KeyChanged,
            Self::Unnamed => CreateOrUpdateError::Unnamed,
            Self::Encode(e) => CreateOrUpdateError::Encode(e),
        }
    }
}

/// `(namespace, name)` of `obj`.
fn key_of<K: Resource>(obj: &K) -> (Option<String>, Option<String>) {
    (
        obj.namespace().map(str::to_owned),
        obj.name().map(str::to_owned),
    )
}

/// Runs `mutate` on `obj` and checks that it left the key alone.
fn mutated<K: Resource, E: std::error::Error + 'static>(
    obj: &mut K,
    mutate: impl FnOnce(&mut K) -> Result<(), E>,
) -> Result<(), CreateOrUpdateError<E>> {
    let key = key_of(obj);
    mutate(obj).map_err(CreateOrUpdateError::Mutate)?;
    if key_of(obj) != key {
        return Err(CreateOrUpdateError::KeyChanged);
    }
    Ok(())
}

/// Where both helpers start: `obj` created after `mutate` when nothing of its name is stored
/// (read through `client`), else what `snapshot` took of the stored object before `mutate`
/// changed it, and the object `mutate` made of it.
enum Start<K, S> {
    Created(K),
    Stored { before: S, desired: K },
}

/// Reads `obj` by its name; creates it after `mutate` if it is not there, else takes
/// `snapshot` of what is stored and runs `mutate` on it. (The snapshot, not a copy of the
/// object, is what the change is found by: no object is cloned.)
async fn start<K, E, S>(
    client: &ResourceClient<K>,
    mut obj: K,
    mutate: impl FnOnce(&mut K) -> Result<(), E>,
    snapshot: impl Fn(&K) -> Result<S, CreateOrUpdateError<E>>,
) -> Result<Start<K, S>, CreateOrUpdateError<E>>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
    E: std::error::Error + 'static,
{
    let name = obj
        .name()
        .filter(|n| !n.is_empty())
        .ok_or(CreateOrUpdateError::Unnamed)?;
    let Some(mut desired) = client.get_opt(name).await? else {
        mutated(&mut obj, mutate)?;
        let created = client.create(&obj, &CreateOptions::default()).await?;
        return Ok(Start::Created(created));
    };
    let before = snapshot(&desired)?;
    mutated(&mut desired, mutate)?;
    Ok(Start::Stored { before, desired })
}

/// Creates `obj` after `mutate`, or updates what is stored with `mutate`'s changes; the
/// object as stored and what was done. An update carries the `resourceVersion` read, so a
/// change made meanwhile is a `409 Conflict` (retry with kclient-tools' `retry_on_conflict`).
/// Changes `mutate` makes to the status are not written (the status is a subresource).
pub async fn create_or_update<K, E>(
    client: &ResourceClient<K>,
    obj: K,
    mutate: impl FnOnce(&mut K) -> Result<(), E>,
) -> Result<(K, OperationResult), CreateOrUpdateError<E>>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
    E: std::error::Error + 'static,
{
    let json = |o: &K| kclient_core::json_value::to_value(o).map_err(CreateOrUpdateError::Encode);
    let (before, desired) = match start(client, obj, mutate, json).await? {
        Start::Created(created) => return Ok((created, OperationResult::Created)),
        Start::Stored { before, desired } => (before, desired),
    };
    if json(&desired)? == before {
        return Ok((desired, OperationResult::Unchanged));
    }
    let updated = client.update(&desired, &UpdateOptions::default()).await?;
    Ok((updated, OperationResult::Updated))
}

/// Creates `obj` after `mutate`, or patches what is stored with `mutate`'s changes: a merge
/// patch of the object if anything but the status changed, then one of the status if the
/// status changed (a status on a new object is not written: requeue to set it).
pub async fn create_or_patch<K, E>(
    client: &ResourceClient<K>,
    obj: K,
    mutate: impl FnOnce(&mut K) -> Result<(), E>,
) -> Result<(K, OperationResult), CreateOrUpdateError<E>>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
    E: std::error::Error + 'static,
{
    let split = |o: &K| -> Result<(Value, Value), CreateOrUpdateError<E>> {
        let mut json =
            kclient_core::json_value::to_value(o).map_err(CreateOrUpdateError::Encode)?;
        let status = json
            .as_object_mut()
            .and_then(|m| m.remove("status"))
            .unwrap_or(Value::Null);
        Ok((json, status))
    };
    let ((before, before_status), desired) = match start(client, obj, mutate, split).await? {
        Start::Created(created) => return Ok((created, OperationResult::Created)),
        Start::Stored { before, desired } => (before, desired),
    };
    let (after, after_status) = split(&desired)?;
    let name = desired.name().unwrap_or_default().to_owned();
    let mut result = OperationResult::Unchanged;
    let mut current = desired;
    if before != after {
        let patch = Patch::Merge(create_merge_patch(&before, &after));
        current = client
            .patch(&name, &patch, &PatchOptions::default())
            .await?;
        result = OperationResult::Updated;
    }
    if before_status != after_status {
        let patch = create_merge_patch(
            &serde_json::json!({"status": before_status}),
            &serde_json::json!({"status": after_status}),
        );
        current = patch_status(client, &name, &patch).await?;
        result = if result == OperationResult::Updated {
            OperationResult::UpdatedStatus
        } else {
            OperationResult::UpdatedStatusOnly
        };
    }
    Ok((current, result))
}

/// A merge patch of the `status` subresource of `name`.
async fn patch_status<K>(
    client: &ResourceClient<K>,
    name: &str,
    patch: &Value,
) -> Result<K, kclient_typed::Error>
where
    K: Resource + DeserializeOwned + 'static,
{
    let body = serde_json::to_vec(patch)
        .map_err(|e| kclient_typed::Error::from(kclient_rest::RefusedRequest::Serialize(e)))?;
    let request = client
        .rest_client()
        .patch(kclient_core::PatchType::Merge)
        .api_resource(client.api_resource())
        .namespace_opt(client.namespace())
        .name(name)
        .subresource("status")
        .body(body);
    Ok(request.json::<K>().await?)
}
