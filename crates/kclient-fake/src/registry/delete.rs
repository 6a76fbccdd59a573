//! Delete: preconditions, finalizers and propagation policies (see [`crate::gc`]).

use std::sync::Arc;

use kclient_core::{ApiError, DeletionPropagation, Preconditions};
use serde_json::json;

use crate::catalogue::ResourceInfo;
use crate::meta::{self, meta_str};
use crate::store::object_key;

use super::{
    for_version, namespace_finalizers_left, namespaces, owner_uids, registry_key, Deleted,
    Registry, Work,
};

impl Registry {
    /// Deletes an object, honouring preconditions, finalizers and the propagation policy.
    pub fn delete(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        preconditions: Option<&Preconditions>,
        policy: Option<DeletionPropagation>,
        dry_run: bool,
    ) -> Result<Deleted, ApiError> {
        let gr = info.group_resource();
        let key = object_key(namespace, name);
        let deleted = self.store.mutate(|state| {
            let Some(current) = state.get(&gr, &key).cloned() else {
                return Err(ApiError::not_found(&gr, name));
            };
            let cur = &current.value;
            if let Some(p) = preconditions {
                let storage_key = registry_key(info, &key);
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
            }
            let mut finalizers = meta::finalizers(cur);
            let is_namespace = gr == namespaces();
            match policy {
                Some(DeletionPropagation::Foreground)
                    if !finalizers.iter().any(|f| f == crate::gc::FOREGROUND) =>
                {
                    finalizers.push(crate::gc::FOREGROUND.into());
                }
                Some(DeletionPropagation::Orphan)
                    if !finalizers.iter().any(|f| f == crate::gc::ORPHAN) =>
                {
                    finalizers.push(crate::gc::ORPHAN.into());
                }
                _ => {}
            }
            let spec_finalizers = namespace_finalizers_left(&gr, cur);
            if finalizers.is_empty() && !spec_finalizers {
                if dry_run {
                    return Ok(Deleted { object: cur.clone(), removed: true });
                }
                let last = state.remove(&gr, namespace, &key).map(|o| o.value.clone()).unwrap_or_default();
                self.push_work(Work::Removed {
                    uid: meta_str(&last, "uid").to_string(),
                    owners: owner_uids(&last),
                    namespace: namespace.to_string(),
                });
                return Ok(Deleted { object: last, removed: true });
            }
            // Finalizers keep it: mark it terminating.
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
            if new == *cur || dry_run {
                return Ok(Deleted { object: new, removed: false });
            }
            let stored = state.put(&gr, namespace, &key, new).value.clone();
            self.push_work(Work::Terminating { resource: gr.clone(), key: key.clone() });
            if is_namespace {
                self.push_work(Work::Namespace(name.to_string()));
            }
            Ok(Deleted { object: stored, removed: false })
        })?;
        if deleted.removed && !dry_run {
            crate::crd::after_delete(self, info, &deleted.object);
        }
        Ok(Deleted {
            object: for_version(info, &deleted.object),
            removed: deleted.removed,
        })
    }
}
