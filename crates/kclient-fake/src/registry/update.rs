//! Update (`PUT`, and the writes of `PATCH` and the subresources): resourceVersion
//! preconditions, the webhooks (mutating before the update rules, validating after the
//! object's validation), what clients cannot change (protected metadata, and the immutable
//! fields of built-in kinds: `crate::immutable`), the status subresource's rules,
//! `generation` on spec changes, no write when nothing changed.

use std::sync::Arc;

use kclient_core::admission::Operation;

use crate::admission::Subject;
use kclient_core::ApiError;
use serde_json::{json, Value};

use crate::catalogue::{GenerationBumps, ResourceInfo};
use crate::meta::meta_str;
use crate::store::object_key;
use crate::{errors, meta};

use super::create::{now, without_webhooks};
use super::{
    check_name, copy_managed_fields, keep_protected_metadata, namespace_finalizers_left,
    take_container_resources, Part, Registry, Work, WriteOptions,
};

/// How many times an update is tried when another write changes the object between its
/// read and its write (kube-apiserver's `GuaranteedUpdate` loop, bounded).
const ATTEMPTS: usize = 100;

impl Registry {
    /// Writes a new state of an existing object computed by `change` from the current one
    /// (`None` when it does not exist; `change` may then create it), after the admission
    /// webhooks of a write of the API (`opts.admission`). As kube-apiserver's
    /// `GuaranteedUpdate`, the object is read, changed, admitted and checked, then written
    /// only if nobody wrote it meanwhile; otherwise it all starts again from the new state
    /// (so `change` may be called more than once). Returns the object (in the request's
    /// version) and whether it was created.
    pub async fn update_with(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        part: Part,
        opts: &WriteOptions,
        mut change: impl FnMut(Option<&Value>) -> Result<Value, ApiError>,
    ) -> Result<(Value, bool), ApiError> {
        let gr = info.group_resource();
        for _ in 0..ATTEMPTS {
            let current = self.read_for_update(info, namespace, name).await?;
            let mut new = change(current.as_ref().map(|(v, _)| v))?;
            self.check_type(info, &mut new)?;
            self.decode_custom(info, &mut new, opts)?;
            check_name(&new, name, namespace, info)?;
            let Some((old, rv)) = current else {
                if !info.allow_create_on_update || part != Part::Main {
                    return Err(ApiError::not_found(&gr, name));
                }
                let created = self.create(info, namespace, new, opts).await?;
                return Ok((created, true));
            };
            let subject = Subject {
                operation: Operation::Update,
                info,
                namespace,
                name,
            };
            if let Some(admission) = &opts.admission {
                new = admission
                    .admit_write(self, subject, new, Some(&old))
                    .await?;
                self.decode_admitted(info, &mut new);
            }
            let new = self.plan_update(info, &old, new, part, opts, name)?;
            if let Some(admission) = &opts.admission {
                admission
                    .validate_write(self, subject, &new, Some(&old))
                    .await?;
            }
            if new == old {
                crate::crd::after_write(self, info, Some(&old));
                return Ok((old, false));
            }
            let new = self.to_storage(info, new).await?;
            if let Some(stored) = self.commit_update(info, namespace, name, rv, new, opts)? {
                crate::crd::after_write(self, info, Some(&stored));
                return Ok((self.convert_one(info, stored).await?, false));
            }
        }
        Err(errors::stale_resource_version(&gr, name))
    }

    /// [`update_with`](Self::update_with) for the fake's own writes (garbage collection,
    /// `modify`): no webhooks; the object must not need a conversion webhook.
    pub fn update_now(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        part: Part,
        opts: &WriteOptions,
        change: impl FnMut(Option<&Value>) -> Result<Value, ApiError>,
    ) -> Result<(Value, bool), ApiError> {
        let opts = without_webhooks(opts);
        now(
            info,
            self.update_with(info, namespace, name, part, &opts, change),
        )
    }

    /// The object as an update starts from: the stored one, defaulted by the storage
    /// version's schema (the server defaults what it reads from storage) and converted to
    /// `info`'s version; with its resourceVersion.
    async fn read_for_update(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
    ) -> Result<Option<(Value, u64)>, ApiError> {
        let stored = {
            let state = self.store.read();
            state
                .get(&info.group_resource(), &object_key(namespace, name))
                .map(|o| (o.value.clone(), o.rv))
        };
        let Some((mut value, rv)) = stored else {
            return Ok(None);
        };
        if let Some(schema) = self.storage_schema(info) {
            crate::schema::default(&schema, &mut value);
        }
        let read = crate::conversion_webhook::Read::Update;
        Ok(Some((self.read_converted(info, value, read).await?, rv)))
    }

    /// The update rules, then the object's validation: what would be stored.
    fn plan_update(
        &self,
        info: &ResourceInfo,
        old: &Value,
        new: Value,
        part: Part,
        opts: &WriteOptions,
        name: &str,
    ) -> Result<Value, ApiError> {
        let mut new = self.prepare_update(info, old, new, part, opts)?;
        if let Some(schema) = &info.schema {
            // Only custom resources have a schema; the pod-only parts never get here.
            let mut errs = match part {
                Part::Status => crate::schema::validate_status_update(schema, &new, old),
                Part::Main | Part::EphemeralContainers | Part::Resize => {
                    crate::schema::validate_update(schema, &new, old)
                }
            };
            if let Some(scale) = &info.scale {
                let spec = part != Part::Status;
                errs.extend(crate::schema::scale::validate(scale, &new, spec));
            }
            if !errs.is_empty() {
                return Err(ApiError::invalid(&info.qualified_kind(), name, errs));
            }
            crate::schema::default(schema, &mut new);
        }
        if part == Part::Main {
            crate::crd::validate_update(info, old, &new)?;
            crate::admission::configuration::validate(info, &new)?;
            if !opts.bypass_update_validation {
                crate::immutable::validate_update(info, old, &new)?;
            }
        }
        Ok(new)
    }

    /// Writes `new` (in the storage version) if the object is still at resourceVersion `rv`:
    /// the stored object (or, when its last finalizer went, the object as it was removed);
    /// `None` when another write came first.
    fn commit_update(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        rv: u64,
        new: Value,
        opts: &WriteOptions,
    ) -> Result<Option<Value>, ApiError> {
        let gr = info.group_resource();
        let key = object_key(namespace, name);
        self.store.mutate(|state| {
            if state.get(&gr, &key).map(|o| o.rv) != Some(rv) {
                return Ok(None);
            }
            if meta::is_terminating(&new)
                && meta::finalizers(&new).is_empty()
                && !namespace_finalizers_left(&gr, &new)
            {
                // The last finalizer went: the object goes, without storing the update
                // first (kube-apiserver's deleteWithoutFinalizers): watchers see one
                // DELETED event carrying the stored state, finalizers included; the
                // writer gets its update back.
                if opts.dry_run {
                    return Ok(Some(new));
                }
                let last = self.remove_object(state, &gr, namespace, &key);
                let mut answer = new;
                if let Some(rv) = last.pointer("/metadata/resourceVersion").cloned() {
                    meta::metadata_mut(&mut answer).insert("resourceVersion".into(), rv);
                }
                return Ok(Some(answer));
            }
            if opts.dry_run {
                return Ok(Some(new));
            }
            let stored = state.put(&gr, namespace, &key, new).value.clone();
            self.push_dangling_owners(state, &stored);
            if meta::is_terminating(&stored) {
                self.push_work(Work::Terminating {
                    resource: gr.clone(),
                    key: key.clone(),
                });
                if !namespace.is_empty() {
                    self.push_work(Work::Namespace(namespace.to_string()));
                }
            }
            Ok(Some(stored))
        })
    }

    /// Applies the update rules to `new` given `old`.
    fn prepare_update(
        &self,
        info: &ResourceInfo,
        old: &Value,
        mut new: Value,
        part: Part,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        crate::defaults::drop_empty(info, &mut new);
        check_preconditions(info, old, &new)?;
        let mut out = match part {
            Part::Status => status_update(info, old, new)?,
            Part::EphemeralContainers | Part::Resize => {
                pod_subresource_update(info, old, new, part)
            }
            Part::Main => main_update(info, old, new, opts)?,
        };
        if !opts.field_manager.is_empty() && out != *old {
            crate::patch::apply::record_update(
                info,
                &opts.field_manager,
                part,
                Some(old),
                &mut out,
            );
        }
        Ok(out)
    }
}

/// The resourceVersion and uid `new` carries, if any, must be `old`'s.
fn check_preconditions(info: &ResourceInfo, old: &Value, new: &Value) -> Result<(), ApiError> {
    let gr = info.group_resource();
    let name = meta_str(old, "name");
    let new_rv = meta_str(new, "resourceVersion");
    if !new_rv.is_empty() && new_rv != meta_str(old, "resourceVersion") {
        return Err(errors::stale_resource_version(&gr, name));
    }
    let new_uid = meta_str(new, "uid");
    if !new_uid.is_empty() && new_uid != meta_str(old, "uid") {
        return Err(ApiError::conflict(
            &gr,
            name,
            &format!(
                "Precondition failed: UID in precondition: {new_uid}, UID in object meta: {}",
                meta_str(old, "uid")
            ),
        ));
    }
    Ok(())
}

/// A write of the status subresource: only status changes, and, for built-in resources, the
/// metadata a client may change (kube-apiserver's status strategies reset the spec only; a
/// custom resource's resets everything but status and managedFields).
fn status_update(info: &ResourceInfo, old: &Value, mut new: Value) -> Result<Value, ApiError> {
    let mut out = old.clone();
    if !info.custom {
        if let Some(meta) = new.get("metadata").cloned() {
            if let Some(o) = out.as_object_mut() {
                o.insert("metadata".into(), meta);
            }
        }
        keep_protected_metadata(info, old, &mut out, meta_str(old, "name"))?;
        let meta = meta::metadata_mut(&mut out);
        // Per-resource exceptions of the status strategies.
        let kept: &[&str] = match (info.api.group.as_str(), info.api.plural.as_str()) {
            ("apps", "deployments") => &["labels"],
            ("", "pods") => &["ownerReferences"],
            _ => &[],
        };
        let old_meta = old.get("metadata");
        for field in kept {
            match old_meta.and_then(|m| m.get(*field)) {
                Some(v) => meta.insert((*field).into(), v.clone()),
                None => meta.remove(*field),
            };
        }
    }
    if let (Some(o), Some(n)) = (out.as_object_mut(), new.as_object_mut()) {
        match n.remove("status") {
            Some(s) => o.insert("status".into(), s),
            None => o.remove("status"),
        };
    }
    copy_managed_fields(&new, &mut out);
    Ok(out)
}

/// A write of `pods/ephemeralcontainers` or `pods/resize` (kube-apiserver's pod subresource
/// strategies): the stored pod with only what the subresource changes taken from the request.
fn pod_subresource_update(info: &ResourceInfo, old: &Value, new: Value, part: Part) -> Value {
    let mut out = old.clone();
    if part == Part::EphemeralContainers {
        let given = new.pointer("/spec/ephemeralContainers").cloned();
        if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
            match given {
                Some(v) => spec.insert("ephemeralContainers".into(), v),
                None => spec.remove("ephemeralContainers"),
            };
        }
    } else {
        for list in ["containers", "initContainers"] {
            take_container_resources(&mut out, &new, list);
        }
    }
    copy_managed_fields(&new, &mut out);
    if info.tracks_generation && meta::spec_changed(old, &out) {
        bump_generation(old, &mut out);
    }
    out
}

/// A write of the main resource: what clients cannot change kept (but a test's direct write
/// changes status too), the generation moved, the per-type update defaults applied.
fn main_update(
    info: &ResourceInfo,
    old: &Value,
    mut new: Value,
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    keep_protected_metadata(info, old, &mut new, meta_str(old, "name"))?;
    if info.status_subresource && !opts.seed {
        if let Some(o) = new.as_object_mut() {
            match old.get("status") {
                Some(s) => o.insert("status".into(), s.clone()),
                None => o.remove("status"),
            };
        }
    }
    if info.tracks_generation && generation_moves(info, old, &new) {
        bump_generation(old, &mut new);
    }
    crate::defaults::on_update(info, old, &mut new)?;
    Ok(new)
}

/// Whether the change from `old` to `new` bumps the generation, by the type's rule.
fn generation_moves(info: &ResourceInfo, old: &Value, new: &Value) -> bool {
    match info.generation_bumps {
        GenerationBumps::Spec => meta::spec_changed(old, new),
        GenerationBumps::SpecOrLabels => {
            // An absent and an empty map are equal (apimachinery's semantic equality).
            let labels = |o: &Value| {
                o.pointer("/metadata/labels")
                    .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
                    .cloned()
            };
            meta::spec_changed(old, new) || labels(old) != labels(new)
        }
        GenerationBumps::Never => false,
    }
}

/// Sets `new`'s generation to one past `old`'s.
fn bump_generation(old: &Value, new: &mut Value) {
    let g = old
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    meta::metadata_mut(new).insert("generation".into(), json!(g + 1));
}
