//! Delete: preconditions, the webhooks, finalizers and propagation policies (see
//! [`crate::gc`]).

use std::sync::Arc;

use kclient_core::{ApiError, DeleteOptions, DeletionPropagation, Preconditions};
use serde_json::{json, Value};

use crate::catalogue::ResourceInfo;
use crate::meta::{self, meta_str};
use crate::store::object_key;

use super::{namespace_finalizers_left, namespaces, registry_key, Deleted, Registry, Work};

/// How many times a delete is tried when another write changes the object between its
/// admission and its removal.
const ATTEMPTS: usize = 100;

impl Registry {
    /// Deletes an object, honouring preconditions, finalizers and the propagation policy,
    /// after the admission webhooks of a delete of the API (`admission`: both kinds see the
    /// stored object, converted to the request's version, as `oldObject`). The answer's
    /// object is in the request's version.
    pub async fn delete(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
        admission: Option<&crate::admission::Request>,
    ) -> Result<Deleted, ApiError> {
        let gr = info.group_resource();
        for _ in 0..ATTEMPTS {
            let mut expected = None;
            if let Some(admission) = admission {
                let current = {
                    let state = self.store.read();
                    let found = state.get(&gr, &object_key(namespace, name));
                    found.map(|o| (o.value.clone(), o.rv))
                };
                let Some((old, rv)) = current else {
                    return Err(ApiError::not_found(&gr, name));
                };
                check_preconditions(info, name, opts.preconditions.as_ref(), &old)?;
                let read = crate::conversion_webhook::Read::Get;
                let old = self.read_converted(info, old, read).await?;
                admission
                    .admit_delete(self, info, namespace, name, &old)
                    .await?;
                expected = Some(rv);
            }
            let Some(deleted) = self.commit_delete(info, namespace, name, opts, expected)? else {
                continue;
            };
            let object = self.convert_one(info, deleted.object).await?;
            return Ok(Deleted {
                object,
                removed: deleted.removed,
            });
        }
        Err(crate::errors::stale_resource_version(&gr, name))
    }

    /// [`delete`](Self::delete) for the fake's own deletes (garbage collection, namespace
    /// deletion, `remove`): no webhooks.
    pub fn delete_now(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let gr = info.group_resource();
        let deleted = self.commit_delete(info, namespace, name, opts, None)?;
        let deleted = deleted.ok_or_else(|| crate::errors::stale_resource_version(&gr, name))?;
        Ok(Deleted {
            object: super::for_version(info, &deleted.object),
            removed: deleted.removed,
        })
    }

    /// The delete itself, if the object is still at resourceVersion `expected` (when given):
    /// the object as removed (or as finalizers keep it), in the storage version; `None` when
    /// another write came first.
    fn commit_delete(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
        expected: Option<u64>,
    ) -> Result<Option<Deleted>, ApiError> {
        let (preconditions, policy, dry_run) = (
            opts.preconditions.as_ref(),
            opts.propagation_policy,
            opts.dry_run,
        );
        let gr = info.group_resource();
        let key = object_key(namespace, name);
        let deleted = self.store.mutate(|state| {
            let Some(current) = state.get(&gr, &key).cloned() else {
                if expected.is_some() {
                    return Ok(None);
                }
                return Err(ApiError::not_found(&gr, name));
            };
            if expected.is_some_and(|rv| rv != current.rv) {
                return Ok(None);
            }
            let cur = &current.value;
            check_preconditions(info, name, preconditions, cur)?;
            let finalizers = finalizers_after_delete(cur, policy);
            let is_namespace = gr == namespaces();
            let spec_finalizers = namespace_finalizers_left(&gr, cur);
            if finalizers.is_empty() && !spec_finalizers {
                if dry_run {
                    return Ok(Some(Deleted {
                        object: cur.clone(),
                        removed: true,
                    }));
                }
                let last = self.remove_object(state, &gr, namespace, &key);
                return Ok(Some(Deleted {
                    object: last,
                    removed: true,
                }));
            }
            // Finalizers keep it: mark it terminating.
            let new = terminating(cur, &finalizers, is_namespace);
            if new == *cur || dry_run {
                return Ok(Some(Deleted {
                    object: new,
                    removed: false,
                }));
            }
            let stored = state.put(&gr, namespace, &key, new).value.clone();
            self.push_work(Work::Terminating {
                resource: gr.clone(),
                key: key.clone(),
            });
            if is_namespace {
                self.push_work(Work::Namespace(name.to_string()));
            }
            Ok(Some(Deleted {
                object: stored,
                removed: false,
            }))
        })?;
        if let Some(deleted) = deleted.as_ref().filter(|d| d.removed && !dry_run) {
            crate::crd::after_delete(self, info, &deleted.object);
        }
        Ok(deleted)
    }
}

/// The finalizers of `cur` once deleted with `policy`: its own, and the garbage
/// collector's for a foreground or orphaning deletion.
fn finalizers_after_delete(cur: &Value, policy: Option<DeletionPropagation>) -> Vec<String> {
    let mut finalizers = meta::finalizers(cur);
    let gc_finalizer = match policy {
        Some(DeletionPropagation::Foreground) => Some(crate::gc::FOREGROUND),
        Some(DeletionPropagation::Orphan) => Some(crate::gc::ORPHAN),
        _ => None,
    };
    if let Some(f) = gc_finalizer {
        if !finalizers.iter().any(|have| have == f) {
            finalizers.push(f.into());
        }
    }
    finalizers
}

/// `cur` marked terminating (its deletion timestamp set once), with `finalizers`; a
/// namespace's phase `Terminating`.
fn terminating(cur: &Value, finalizers: &[String], is_namespace: bool) -> Value {
    let mut new = cur.clone();
    let meta = meta::metadata_mut(&mut new);
    let already = meta.get("deletionTimestamp").is_some_and(|t| !t.is_null());
    if !already {
        meta.insert("deletionTimestamp".into(), json!(meta::now_rfc3339()));
        meta.insert("deletionGracePeriodSeconds".into(), json!(0));
    }
    if finalizers.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), json!(finalizers));
    }
    if is_namespace {
        meta::set_path(&mut new, "status.phase", json!("Terminating"));
    }
    new
}

/// A delete's preconditions on the stored object `cur` (`uid`, `resourceVersion`).
fn check_preconditions(
    info: &ResourceInfo,
    name: &str,
    preconditions: Option<&Preconditions>,
    cur: &serde_json::Value,
) -> Result<(), ApiError> {
    let Some(p) = preconditions else {
        return Ok(());
    };
    let gr = info.group_resource();
    let storage_key = registry_key(info, &object_key(meta_str(cur, "namespace"), name));
    if let Some(uid) = p.uid.as_deref() {
        if uid != meta_str(cur, "uid") {
            return Err(ApiError::conflict(&gr, name, &format!(
                "StorageError: invalid object, Code: 4, Key: {storage_key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta_str(cur, "uid")
            )));
        }
    }
    if let Some(rv) = p.resource_version.as_deref() {
        if rv != meta_str(cur, "resourceVersion") {
            return Err(ApiError::conflict(&gr, name, &format!(
                "StorageError: invalid object, Code: 4, Key: {storage_key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                meta_str(cur, "resourceVersion")
            )));
        }
    }
    Ok(())
}
