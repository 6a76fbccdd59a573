//! Ready-made [`Condition`]s: an object deleted, a status condition with a given status
//! (`kubectl wait --for=condition=Ready`), the latest generation observed by its
//! controller, a Deployment available.
//!
//! Conditions look at every event they are offered; restrict the events to one object with
//! the lister (a `metadata.name` field selector, as `kubectl wait` does) or with [`named`].
//! The status readers work on any object that serializes to the usual shape
//! (`status.conditions[].type/status`, `status.observedGeneration`, `metadata.generation`):
//! k8s-openapi types, `DynamicObject`s and custom resources alike.
//!
//! ```
//! use k8s_openapi::api::apps::v1::Deployment;
//! use kclient_tools::watch::conditions::{deleted, has_condition, named};
//! use kclient_tools::watch::Condition;
//!
//! let ready: Condition<Deployment> = named("default", "web", has_condition("Available", "True"));
//! let gone: Condition<Deployment> = named("default", "web", deleted());
//! # let _ = (ready, gone);
//! ```

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use kclient_core::{Resource, ResourceExt, WatchEvent};
use serde::Serialize;
use serde_json::Value;

use super::{condition, Condition, ConditionError};

/// Met by a `Deleted` event (`kubectl wait --for=delete`).
pub fn deleted<K: 'static>() -> Condition<K> {
    condition(|event: &WatchEvent<Arc<K>>| Ok(matches!(event, WatchEvent::Deleted(_))))
}

/// Met when the object's `status.conditions` has one of type `condition_type` with status
/// `status` (`"True"`, `"False"`, `"Unknown"`) — `kubectl wait --for=condition=TYPE=STATUS`.
/// A deletion of the object is an error: it will never meet the condition.
pub fn has_condition<K: Serialize + Resource + 'static>(
    condition_type: &str,
    status: &str,
) -> Condition<K> {
    let (condition_type, status) = (condition_type.to_owned(), status.to_owned());
    condition(move |event: &WatchEvent<Arc<K>>| {
        let object = live_object(event)?;
        let Some(object) = object else {
            return Ok(false);
        };
        Ok(condition_status(&serialized(object)?, &condition_type).as_deref() == Some(&*status))
    })
}

/// Met when the object's controller has observed its latest spec:
/// `status.observedGeneration >= metadata.generation` (an object without a generation has
/// nothing to observe). A deletion is an error.
pub fn generation_observed<K: Serialize + Resource + 'static>() -> Condition<K> {
    condition(|event: &WatchEvent<Arc<K>>| {
        let Some(object) = live_object(event)? else {
            return Ok(false);
        };
        Ok(generation_is_observed(&serialized(object)?))
    })
}

/// Met when a Deployment is available at its latest spec: its controller observed the
/// latest generation and reports the `Available` condition `True` (what
/// `kubectl wait --for=condition=Available` waits for, without being fooled by a status
/// written for an older spec). A deletion is an error, and so is a rollout that exceeded its
/// progress deadline (`Progressing` with reason `ProgressDeadlineExceeded`).
pub fn deployment_available() -> Condition<Deployment> {
    condition(|event: &WatchEvent<Arc<Deployment>>| {
        let Some(deployment) = live_object(event)? else {
            return Ok(false);
        };
        let json = serialized(deployment)?;
        if !generation_is_observed(&json) {
            return Ok(false);
        }
        if condition_field(&json, "Progressing", "reason").as_deref()
            == Some("ProgressDeadlineExceeded")
        {
            return Err(format!(
                "deployment {:?} exceeded its progress deadline",
                deployment.name_any()
            )
            .into());
        }
        Ok(condition_status(&json, "Available").as_deref() == Some("True"))
    })
}

/// `inner`, offered only the events of the object `namespace/name` (an empty namespace for
/// cluster-scoped objects); other objects' events do not meet it.
pub fn named<K: Resource + 'static>(
    namespace: &str,
    name: &str,
    mut inner: Condition<K>,
) -> Condition<K> {
    let (namespace, name) = (namespace.to_owned(), name.to_owned());
    condition(move |event: &WatchEvent<Arc<K>>| match event.object() {
        Some(object)
            if object.name_any() != name || object.namespace().unwrap_or_default() != namespace =>
        {
            Ok(false)
        }
        _ => inner(event),
    })
}

/// The object of an added or modified event; `None` for bookmarks; an error for a deletion
/// (the object will never meet a status condition) or a watch error.
fn live_object<K: Resource>(event: &WatchEvent<Arc<K>>) -> Result<Option<&K>, ConditionError> {
    match event {
        WatchEvent::Added(o) | WatchEvent::Modified(o) => Ok(Some(o)),
        WatchEvent::Bookmark(_) => Ok(None),
        WatchEvent::Deleted(o) => Err(format!("{:?} was deleted", o.name_any()).into()),
        WatchEvent::Error(status) => Err(format!("watch error: {}", status.message).into()),
    }
}

fn serialized<K: Serialize>(object: &K) -> Result<Value, ConditionError> {
    Ok(kclient_core::json_value::to_value(object)?)
}

/// `status.conditions[type == condition_type].status`.
fn condition_status(object: &Value, condition_type: &str) -> Option<String> {
    condition_field(object, condition_type, "status")
}

/// A field of the condition of type `condition_type`.
fn condition_field(object: &Value, condition_type: &str, field: &str) -> Option<String> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(condition_type))?
        .get(field)?
        .as_str()
        .map(str::to_owned)
}

fn generation_is_observed(object: &Value) -> bool {
    let generation = object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    let observed = object
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64);
    match (generation, observed) {
        (None, _) => true,
        (Some(generation), Some(observed)) => observed >= generation,
        (Some(_), None) => false,
    }
}
