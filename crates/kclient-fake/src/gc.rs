//! The garbage collector and the namespace controller, run synchronously after every write
//! (so a test observes their result as soon as the write answers).
//!
//! - **Background** deletion: the owner goes at once; then every dependent (an object whose
//!   `ownerReferences` name the owner's uid) that has no other existing owner is deleted, and
//!   dependents with other owners lose the dangling reference. The same happens to an object
//!   written later naming the removed owner (a controller's reconcile that raced the
//!   deletion), as kube-controller-manager's collector finds it dangling; an owner this server
//!   never held (a seeded Pod's ReplicaSet that was never created) is left alone.
//! - **Foreground**: the owner gets a `deletionTimestamp` and the `foregroundDeletion`
//!   finalizer; its dependents are deleted (in the foreground too); when none is left the
//!   finalizer is removed and the owner goes.
//! - **Orphan**: the owner gets the `orphan` finalizer; its dependents lose their reference to
//!   it; then the finalizer is removed and the owner goes.
//! - **Namespaces**: deleting one sets `status.phase: Terminating`; everything in it is
//!   deleted; when it is empty its `kubernetes` finalizer (`spec.finalizers`) is removed and
//!   it goes. Objects held by their own finalizers keep it terminating until they are gone.
//!
//! Unlike kube-controller-manager's collector this one is synchronous and has no informer
//! delay, and it does not honour `blockOwnerDeletion` separately (every dependent blocks a
//! foreground deletion).

use kclient_core::{DeleteOptions, DeletionPropagation, GroupResource};
use serde_json::{json, Value};

use crate::meta::{self, meta_str};
use crate::registry::{owner_uids, Registry, Work};

/// The finalizer of a foreground deletion.
pub const FOREGROUND: &str = "foregroundDeletion";
/// The finalizer of an orphaning deletion.
pub const ORPHAN: &str = "orphan";

/// A bound on the work one settle does, against reference cycles.
const MAX_STEPS: usize = 100_000;

impl Registry {
    /// Runs the garbage collector and namespace controller until there is nothing left to do.
    pub fn settle(&self) {
        let mut steps = 0;
        loop {
            let work = self.take_work();
            if work.is_empty() || steps > MAX_STEPS {
                return;
            }
            for item in work {
                steps += 1;
                match item {
                    Work::Removed {
                        uid,
                        owners,
                        namespace,
                    } => {
                        self.collect_dependents(&uid);
                        for owner in owners {
                            self.check_foreground(&owner);
                        }
                        if !namespace.is_empty() {
                            self.finish_namespace(&namespace);
                        }
                    }
                    Work::Terminating { resource, key } => {
                        let uid = {
                            let state = self.store.read();
                            state
                                .get(&resource, &key)
                                .map(|o| meta_str(&o.value, "uid").to_string())
                        };
                        if let Some(uid) = uid {
                            self.orphan_dependents(&uid);
                            self.check_foreground(&uid);
                        }
                    }
                    Work::Namespace(ns) => self.empty_namespace(&ns),
                    Work::DanglingOwner(uid) => self.collect_dependents(&uid),
                }
            }
        }
    }

    fn info_for(
        &self,
        resource: &GroupResource,
    ) -> Option<std::sync::Arc<crate::catalogue::ResourceInfo>> {
        self.catalogue.any_version(resource)
    }

    fn split_key(key: &str) -> (&str, &str) {
        key.split_once('/').unwrap_or(("", key))
    }

    /// Deletes the dependents of a removed owner that have no other owner left, and strips
    /// the dangling reference from the others.
    fn collect_dependents(&self, owner_uid: &str) {
        let dependents = self.store.read().dependents_of(owner_uid);
        for (resource, key) in dependents {
            let Some(info) = self.info_for(&resource) else {
                continue;
            };
            let (ns, name) = Self::split_key(&key);
            let live_owner = {
                let state = self.store.read();
                state.get(&resource, &key).is_some_and(|o| {
                    owner_uids(&o.value)
                        .iter()
                        .any(|u| u != owner_uid && state.by_uid(u).is_some())
                })
            };
            if live_owner {
                self.remove_owner_reference(&info, ns, name, owner_uid);
            } else {
                let _ = self.delete_now(
                    &info,
                    ns,
                    name,
                    &DeleteOptions::default().propagation_policy(DeletionPropagation::Background),
                );
            }
        }
    }

    /// For an owner terminating with the `orphan` finalizer: unlink its dependents, then drop
    /// the finalizer.
    fn orphan_dependents(&self, uid: &str) {
        let Some((resource, key)) = self.terminating_with(uid, ORPHAN) else {
            return;
        };
        let dependents = self.store.read().dependents_of(uid);
        for (dep_resource, dep_key) in dependents {
            if let Some(info) = self.info_for(&dep_resource) {
                let (ns, name) = Self::split_key(&dep_key);
                self.remove_owner_reference(&info, ns, name, uid);
            }
        }
        self.remove_finalizer(&resource, &key, ORPHAN);
    }

    /// For an owner terminating with the `foregroundDeletion` finalizer: delete its
    /// dependents, or drop the finalizer when none is left.
    fn check_foreground(&self, uid: &str) {
        let Some((resource, key)) = self.terminating_with(uid, FOREGROUND) else {
            return;
        };
        let dependents = self.store.read().dependents_of(uid);
        if dependents.is_empty() {
            self.remove_finalizer(&resource, &key, FOREGROUND);
            return;
        }
        for (dep_resource, dep_key) in dependents {
            let Some(info) = self.info_for(&dep_resource) else {
                continue;
            };
            let (ns, name) = Self::split_key(&dep_key);
            let terminating = self
                .store
                .read()
                .get(&dep_resource, &dep_key)
                .is_some_and(|o| meta::is_terminating(&o.value));
            if !terminating {
                let _ = self.delete_now(
                    &info,
                    ns,
                    name,
                    &DeleteOptions::default().propagation_policy(DeletionPropagation::Foreground),
                );
            }
        }
    }

    /// The resource and key of the object `uid` if it is terminating and holds `finalizer`.
    fn terminating_with(&self, uid: &str, finalizer: &str) -> Option<(GroupResource, String)> {
        let state = self.store.read();
        let (resource, key, obj) = state.by_uid(uid)?;
        let held = meta::finalizers(&obj.value).iter().any(|f| f == finalizer);
        if !meta::is_terminating(&obj.value) || !held {
            return None;
        }
        Some((resource.clone(), key.to_string()))
    }

    fn remove_finalizer(&self, resource: &GroupResource, key: &str, finalizer: &str) {
        let Some(info) = self.info_for(resource) else {
            return;
        };
        let (ns, name) = Self::split_key(key);
        self.retain_in_metadata(&info, ns, name, "finalizers", |f| {
            f.as_str().is_some_and(|f| f != finalizer)
        });
    }

    fn remove_owner_reference(
        &self,
        info: &std::sync::Arc<crate::catalogue::ResourceInfo>,
        ns: &str,
        name: &str,
        owner_uid: &str,
    ) {
        self.retain_in_metadata(info, ns, name, "ownerReferences", |r| {
            r.get("uid").and_then(Value::as_str) != Some(owner_uid)
        });
    }

    /// Keeps the entries of the object's metadata list `field` (`finalizers`,
    /// `ownerReferences`) that `keep` keeps, removing the list when none is left.
    fn retain_in_metadata(
        &self,
        info: &std::sync::Arc<crate::catalogue::ResourceInfo>,
        ns: &str,
        name: &str,
        field: &str,
        keep: impl Fn(&Value) -> bool,
    ) {
        let _ = self.update_now(
            info,
            ns,
            name,
            crate::registry::Part::Main,
            &Default::default(),
            |cur| {
                let mut obj = cur.cloned().unwrap_or(Value::Null);
                let meta = meta::metadata_mut(&mut obj);
                let rest: Vec<Value> = meta
                    .get(field)
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter(|v| keep(v)).cloned().collect())
                    .unwrap_or_default();
                if rest.is_empty() {
                    meta.remove(field);
                } else {
                    meta.insert(field.into(), Value::Array(rest));
                }
                Ok(obj)
            },
        );
    }

    /// Deletes everything in a terminating namespace, then finishes it.
    fn empty_namespace(&self, ns: &str) {
        let terminating = self
            .store
            .read()
            .get(&GroupResource::new("", "namespaces"), ns)
            .is_some_and(|o| meta::is_terminating(&o.value));
        if !terminating {
            return;
        }
        let resources = self.store.read().resources();
        for resource in resources {
            let Some(info) = self.info_for(&resource) else {
                continue;
            };
            if !info.namespaced() {
                continue;
            }
            let names: Vec<String> = self
                .store
                .read()
                .range(&resource, Some(ns), None)
                .filter(|(_, o)| !meta::is_terminating(&o.value))
                .map(|(_, o)| meta_str(&o.value, "name").to_string())
                .collect();
            for name in names {
                let _ = self.delete_now(&info, ns, &name, &DeleteOptions::default());
            }
        }
        self.finish_namespace(ns);
    }

    /// Removes a terminating namespace once it is empty.
    fn finish_namespace(&self, ns: &str) {
        let namespaces = GroupResource::new("", "namespaces");
        let (terminating, empty) = {
            let state = self.store.read();
            let terminating = state
                .get(&namespaces, ns)
                .is_some_and(|o| meta::is_terminating(&o.value));
            let empty = state.resources().iter().all(|r| {
                self.info_for(r).is_none_or(|i| !i.namespaced())
                    || state.range(r, Some(ns), None).next().is_none()
            });
            (terminating, empty)
        };
        if !terminating || !empty {
            return;
        }
        let Some(info) = self.info_for(&namespaces) else {
            return;
        };
        let _ = self.finalize_namespace(&info, ns, Vec::new());
    }

    /// Sets `spec.finalizers` of a namespace to `keep` (the `finalize` subresource),
    /// removing the namespace if it is terminating and no finalizer is left.
    pub fn finalize_namespace(
        &self,
        info: &std::sync::Arc<crate::catalogue::ResourceInfo>,
        ns: &str,
        keep: Vec<Value>,
    ) -> Result<Value, kclient_core::ApiError> {
        let namespaces = info.group_resource();
        let result = self.store.mutate(|state| {
            let Some(cur) = state.get(&namespaces, ns).cloned() else {
                return Err(kclient_core::ApiError::not_found(&namespaces, ns));
            };
            let mut new = cur.value.clone();
            if keep.is_empty() {
                if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("finalizers");
                }
            } else {
                meta::set_path(&mut new, "spec.finalizers", json!(keep));
            }
            if keep.is_empty() && meta::is_terminating(&new) && meta::finalizers(&new).is_empty() {
                state.put(&namespaces, "", ns, new);
                let last = state.remove(&namespaces, "", ns).map(|o| o.value.clone());
                return Ok(last.unwrap_or_default());
            }
            if new == cur.value {
                return Ok(new);
            }
            Ok(state.put(&namespaces, "", ns, new).value.clone())
        })?;
        Ok(result)
    }
}
