//! Admission webhooks, called as kube-apiserver's `MutatingAdmissionWebhook` and
//! `ValidatingAdmissionWebhook` plugins call them, from the `MutatingWebhookConfiguration`
//! and `ValidatingWebhookConfiguration` objects stored in the server.
//!
//! A write of the API (create, update, patch and apply, their subresources, delete and each
//! object of a delete-collection) goes through, as on kube-apiserver:
//!
//! 1. the namespace's lifecycle (a missing or terminating namespace refuses it first);
//! 2. the **mutating** webhooks that match ([`matching`]), one after the other, configurations
//!    by name, then each one's webhooks in order; a JSON patch a webhook answers with is
//!    applied (a custom resource is then defaulted by its schema), and the next webhook sees
//!    the result; with `reinvocationPolicy: IfNeeded`, a webhook called before an object was
//!    changed by a later webhook is called once more, as the server's reinvocation round;
//! 3. the object's own rules (names, system fields, the strategy, the schema, immutable
//!    fields);
//! 4. the **validating** webhooks that match, all at once;
//! 5. storage.
//!
//! A delete calls both kinds with the stored object as `oldObject` (mutating webhooks may not
//! patch it). Each call sends an `AdmissionReview` ([`call`]) with a fresh uid, the kind and
//! resource (and those the client wrote), the subresource, name (empty for a create with
//! `generateName` and for the objects of a delete-collection), namespace (a namespace's own
//! name for requests on namespaces), operation, the user, `object`/`oldObject` as the
//! operation has them, `dryRun` and the operation's options. A scale subresource sends
//! `autoscaling/v1` `Scale` objects.
//!
//! What a webhook answers becomes the server's answer: a denial its `Status` as
//! `admission webhook "<name>" denied the request: <message>` (code 400 at least); a webhook
//! that cannot be called, times out (`timeoutSeconds`, 10 by default, on tokio's clock) or
//! answers badly (not JSON, a wrong uid or `apiVersion`, a patch without `patchType` ...)
//! `500 Internal error occurred: failed calling webhook "<name>": ...` under
//! `failurePolicy: Fail` (the default), nothing under `Ignore`; a patch that does not apply
//! `500 Internal error occurred: ...` whatever the policy; a dry run a webhook with
//! `sideEffects` `Some` or `Unknown` cannot take `400 admission webhook "<name>" does not
//! support dry run`. Warnings become `Warning` headers. Requests on the webhook
//! configurations themselves are never sent to webhooks.
//!
//! Where the fake differs: `matchConditions` (CEL) are not evaluated (the webhook is called
//! as if they held); `matchPolicy: Equivalent` knows the other versions of custom resources
//! only (the built-in resources the fake serves have one version each); validating webhooks
//! are called at once, but the error answered is the first in configuration order where
//! kube-apiserver answers the first to arrive; the text of a transport failure is the
//! closest Go wording of the Rust one (see [`crate::webhook_client`]); objects written by
//! the fake itself (garbage collection, namespace deletion, seeding, `modify`) are not
//! admitted.

mod call;
pub mod configuration;
mod hooks;
mod matching;

use std::collections::HashSet;
use std::sync::Arc;

use kclient_core::admission::Operation;
use kclient_core::{ApiError, GroupVersionKind};
use serde_json::Value;

use crate::catalogue::ResourceInfo;
use crate::registry::{Registry, Warnings};

use call::HookError;
use hooks::{hooks, Hook, HookType};
use matching::{should_call, Invocation};

/// What admission knows of a request besides the objects: who sends it, its options, and
/// what it writes.
#[derive(Debug, Clone)]
pub struct Request {
    /// The user (`authentication.k8s.io/v1` `UserInfo`).
    pub user: Value,
    /// The operation's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`).
    pub options: Value,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// The subresource written (`""` for the resource itself).
    pub subresource: String,
    /// The write is a `scale` subresource's: webhooks see `Scale` objects.
    pub scale: bool,
    /// The kind of what a subresource writes when it is not the resource's (`autoscaling/v1`
    /// `Scale`, `policy/v1` `Eviction`, `v1` `Binding`).
    pub kind: Option<GroupVersionKind>,
    /// The request is a delete-collection: each object's admission has no name.
    pub collection: bool,
    /// Where the webhooks' warnings go.
    pub warnings: Warnings,
}

/// What a write admits: the operation on the object `name` of `info`'s resource.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// The operation.
    pub operation: Operation,
    /// The resource, in the request's version.
    pub info: &'a Arc<ResourceInfo>,
    /// The request's namespace.
    pub namespace: &'a str,
    /// The object's name (`""` for a create with `generateName`).
    pub name: &'a str,
}

/// One admission of a request (kube-apiserver's `admission.Attributes`).
#[derive(Debug, Clone)]
pub struct Attributes {
    /// The operation.
    pub operation: Operation,
    /// The resource, in the request's version.
    pub info: Arc<ResourceInfo>,
    /// The subresource.
    pub subresource: String,
    /// The namespace (a namespace's own name for requests on namespaces).
    pub namespace: String,
    /// The object's name (empty when not known yet).
    pub name: String,
    /// The new object (create, update).
    pub object: Option<Value>,
    /// The old object (update, delete).
    pub old_object: Option<Value>,
}

pub use crate::errors::internal as internal_error;

/// The error of a webhook that could not be called under `failurePolicy: Fail`.
fn calling_error(hook: &Hook, why: &str) -> ApiError {
    internal_error(format!("failed calling webhook {:?}: {why}", hook.name))
}

/// Requests on the admission configurations themselves are never sent to webhooks
/// (`IsExemptAdmissionConfigurationResource`).
fn exempt(info: &ResourceInfo) -> bool {
    info.api.group == "admissionregistration.k8s.io"
        && matches!(
            info.kind(),
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}

/// What a failed call does: nothing under `failurePolicy: Ignore` (for a call failure), the
/// request's error otherwise.
fn settle(hook: &Hook, error: HookError) -> Result<(), ApiError> {
    match error {
        HookError::Calling(why) if hook.ignore_failures => {
            tracing::warn!(
                "kclient-fake: failed calling webhook, failing open {}: failed calling webhook {:?}: {why}",
                hook.name,
                hook.name
            );
            Ok(())
        }
        HookError::Calling(why) => Err(calling_error(hook, &why)),
        HookError::Refused(e) => Err(e),
    }
}

impl Request {
    /// Runs the mutating webhooks; returns the object they leave.
    pub async fn mutate(
        &self,
        registry: &Registry,
        mut attrs: Attributes,
    ) -> Result<Option<Value>, ApiError> {
        if exempt(&attrs.info) {
            return Ok(attrs.object);
        }
        let hooks = hooks(registry, HookType::Mutating);
        // The webhooks called (with `IfNeeded`) since the object last changed, and those to
        // call again in the reinvocation round.
        let mut invoked: HashSet<(String, usize)> = HashSet::new();
        let mut reinvoke: HashSet<(String, usize)> = HashSet::new();
        for round in 0..2 {
            if round == 1 && reinvoke.is_empty() {
                break;
            }
            for hook in &hooks {
                let Some(invocation) = should_call(registry, hook, &attrs)? else {
                    continue;
                };
                let id = (hook.configuration.clone(), hook.index);
                if round == 1 && !reinvoke.contains(&id) {
                    continue;
                }
                let outcome = self
                    .call_mutating(registry, hook, &attrs, &invocation)
                    .await;
                let mut failure = None;
                match outcome {
                    Ok(Some(patched)) if attrs.object.as_ref() != Some(&patched) => {
                        attrs.object = Some(patched);
                        reinvoke.extend(invoked.drain());
                    }
                    Ok(_) => {}
                    Err(e) => failure = Some(e),
                }
                if hook.reinvoke_if_needed {
                    invoked.insert(id);
                }
                if let Some(e) = failure {
                    settle(hook, e)?;
                }
            }
        }
        Ok(attrs.object)
    }

    /// One mutating webhook: the object it leaves, if it patched it.
    async fn call_mutating(
        &self,
        registry: &Registry,
        hook: &Hook,
        attrs: &Attributes,
        invocation: &Invocation,
    ) -> Result<Option<Value>, HookError> {
        let (object, old) = self.versioned(registry, attrs, invocation).await?;
        let objects = (object.as_ref(), old.as_ref());
        let verdict = call::call(registry, hook, true, attrs, self, invocation, objects).await?;
        let Some(patch) = verdict.patch.filter(|p| !p.0.is_empty()) else {
            return Ok(None);
        };
        let Some(mut patched) = object else {
            return Err(HookError::Refused(internal_error(format!(
                "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                hook.name
            ))));
        };
        json_patch::patch(&mut patched, &patch.0)
            .map_err(|e| HookError::Refused(internal_error(e)))?;
        if !self.scale {
            if let Some(schema) = &invocation.info.schema {
                crate::schema::default(schema, &mut patched);
            }
        }
        if invocation.info.api.version != attrs.info.api.version {
            patched = registry
                .convert_one(&attrs.info, patched)
                .await
                .map_err(HookError::Refused)?;
        }
        Ok(Some(patched))
    }

    /// The objects in the version the invocation names (another version of a custom
    /// resource, with `matchPolicy: Equivalent`).
    async fn versioned(
        &self,
        registry: &Registry,
        attrs: &Attributes,
        invocation: &Invocation,
    ) -> Result<(Option<Value>, Option<Value>), HookError> {
        if invocation.info.api.version == attrs.info.api.version || self.scale {
            return Ok((attrs.object.clone(), attrs.old_object.clone()));
        }
        let mut out = [None, None];
        for (slot, value) in out.iter_mut().zip([&attrs.object, &attrs.old_object]) {
            if let Some(v) = value {
                *slot = Some(
                    registry
                        .convert_one(&invocation.info, v.clone())
                        .await
                        .map_err(HookError::Refused)?,
                );
            }
        }
        let [object, old] = out;
        Ok((object, old))
    }

    /// Runs the validating webhooks (all at once).
    pub async fn validate(&self, registry: &Registry, attrs: &Attributes) -> Result<(), ApiError> {
        if exempt(&attrs.info) {
            return Ok(());
        }
        let mut calls = Vec::new();
        for hook in hooks(registry, HookType::Validating) {
            if let Some(invocation) = should_call(registry, &hook, attrs)? {
                calls.push((hook, invocation));
            }
        }
        let outcomes =
            futures::future::join_all(calls.iter().map(|(hook, invocation)| async move {
                let (object, old) = self.versioned(registry, attrs, invocation).await?;
                let objects = (object.as_ref(), old.as_ref());
                call::call(registry, hook, false, attrs, self, invocation, objects)
                    .await
                    .map(|_| ())
            }))
            .await;
        for ((hook, _), outcome) in calls.iter().zip(outcomes) {
            if let Err(e) = outcome {
                settle(hook, e)?;
            }
        }
        Ok(())
    }
}

impl Request {
    /// The attributes of admitting `object` (and `old`) of `info`'s resource: a scale
    /// subresource's webhooks see their `Scale`, requests on namespaces carry the namespace's
    /// own name as their namespace.
    pub fn attributes(
        &self,
        subject: Subject<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Attributes {
        let Subject {
            operation,
            info,
            namespace,
            name,
        } = subject;
        let is_namespace = info.api.group.is_empty() && info.api.plural == "namespaces";
        let view = |o: &Value| {
            if self.scale {
                crate::scale::view::to_scale(info, o)
            } else {
                o.clone()
            }
        };
        Attributes {
            operation,
            info: info.clone(),
            subresource: self.subresource.clone(),
            namespace: if is_namespace { name } else { namespace }.to_string(),
            name: if self.collection { "" } else { name }.to_string(),
            object: object.map(view),
            old_object: old.map(view),
        }
    }

    /// Runs the mutating webhooks on the object of a create or an update; returns it as they
    /// leave it (a `Scale` they patch gives the object its replicas).
    pub async fn admit_write(
        &self,
        registry: &Registry,
        subject: Subject<'_>,
        mut object: Value,
        old: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let info = subject.info;
        let attrs = self.attributes(subject, Some(&object), old);
        let before = attrs.object.clone();
        let after = self.mutate(registry, attrs).await?;
        if after == before {
            return Ok(object);
        }
        match (self.scale, after, &info.scale) {
            (true, Some(scale), Some(spec)) => {
                let replicas = scale.pointer("/spec/replicas").cloned().unwrap_or_default();
                crate::meta::set_path(&mut object, &spec.spec_replicas_path, replicas);
                Ok(object)
            }
            (_, Some(mutated), _) => Ok(mutated),
            (_, None, _) => Ok(object),
        }
    }

    /// Runs the validating webhooks on the object of a create or an update.
    pub async fn validate_write(
        &self,
        registry: &Registry,
        subject: Subject<'_>,
        object: &Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let attrs = self.attributes(subject, Some(object), old);
        self.validate(registry, &attrs).await
    }

    /// Runs the mutating, then the validating webhooks on what a subresource creates (an
    /// `Eviction`, a `Binding`); returns it as they leave it.
    pub async fn admit_created(
        &self,
        registry: &Registry,
        subject: Subject<'_>,
        object: Value,
    ) -> Result<Value, ApiError> {
        let object = self.admit_write(registry, subject, object, None).await?;
        self.validate_write(registry, subject, &object, None)
            .await?;
        Ok(object)
    }

    /// Runs the mutating, then the validating webhooks on a delete of `old`.
    pub async fn admit_delete(
        &self,
        registry: &Registry,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        old: &Value,
    ) -> Result<(), ApiError> {
        let subject = Subject {
            operation: Operation::Delete,
            info,
            namespace,
            name,
        };
        let attrs = self.attributes(subject, None, Some(old));
        self.mutate(registry, attrs.clone()).await?;
        self.validate(registry, &attrs).await
    }
}
