//! The registry: the rules kube-apiserver's generic registry and strategies apply to objects,
//! over the [`Store`](crate::store::Store).
//!
//! Create sets `uid`, `creationTimestamp`, `resourceVersion`, `generation` (for the types that
//! track it) and names from `generateName`, checks that the namespace exists and is not
//! terminating (the `NamespaceLifecycle` admission), and answers `409 AlreadyExists`. Update
//! compares resourceVersions (`409 Conflict` when stale, unconditional when absent), keeps
//! what clients cannot change (uid, creationTimestamp, deletionTimestamp), ignores `status`
//! on the main resource; the status subresource takes `status` and, for built-in resources,
//! metadata (as kube-apiserver's status strategies: not a Deployment's labels nor a Pod's
//! ownerReferences; a custom resource's status write changes nothing but `status`), bumps
//! `generation` on spec changes only, and does not write at all when nothing changed. Delete
//! honours preconditions, finalizers and propagation policies (see [`crate::gc`]).
//!
//! Pods are deleted at once (there is no kubelet to confirm a graceful deletion).

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use kclient_core::{ApiError, DeletionPropagation, GroupResource, Preconditions};
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::catalogue::{Catalogue, GenerationBumps, ResourceInfo};
use crate::errors;
use crate::meta::{self, meta_str};
use crate::query::{parse_rv, ListParams, RvMatch};
use crate::selectors::Predicate;
use crate::store::{object_key, Compacted, Store, StoreState, StoredObject};
use kclient_core::FieldError;

/// Options common to writes.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and answer, store nothing.
    pub dry_run: bool,
    /// `fieldManager` (or the one derived from the User-Agent).
    pub field_manager: String,
    /// Seeding by a test: keep `status` as given on create.
    pub seed: bool,
    /// `fieldValidation`: what to do with fields a custom resource's schema does not know.
    pub field_validation: FieldValidation,
    /// The write is a (non-apply) patch: strict decoding errors quote the patched object.
    pub patch: bool,
    /// Where the write leaves its warnings, for the response's `Warning` headers.
    pub warnings: Warnings,
}

/// The `fieldValidation` of a write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// `Ignore`: drop unknown fields silently.
    Ignore,
    /// `Warn` (the default): drop them and warn.
    #[default]
    Warn,
    /// `Strict`: refuse the request.
    Strict,
}

/// The warnings a request produced (shared by the clones of its [`WriteOptions`]).
#[derive(Debug, Clone, Default)]
pub struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    /// Adds a warning (once).
    pub fn push(&self, warning: String) {
        let mut all = self.0.lock();
        if !all.contains(&warning) {
            all.push(warning);
        }
    }

    /// The warnings so far, in order.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock())
    }
}

/// Which part of an object an update writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The main resource: everything but `status` (when the status subresource exists).
    Main,
    /// The `status` subresource: `status`, and the metadata of built-in resources.
    Status,
    /// A pod's `ephemeralcontainers` subresource: `spec.ephemeralContainers` only.
    EphemeralContainers,
    /// A pod's `resize` subresource: its containers' `resources` and `resizePolicy` only.
    Resize,
}

/// The result of a delete.
#[derive(Debug, Clone)]
pub struct Deleted {
    /// The object as it was removed, or as it is now when finalizers keep it.
    pub object: Value,
    /// Whether it is gone.
    pub removed: bool,
}

/// One page of a list.
#[derive(Debug, Clone)]
pub struct ListPage {
    /// The items, in key order.
    pub items: Vec<Arc<StoredObject>>,
    /// The resourceVersion of the snapshot.
    pub rv: u64,
    /// The continue token, when more items remain.
    pub continue_token: Option<String>,
    /// How many items remain (only without selectors).
    pub remaining: Option<i64>,
}

/// Work for the garbage collector and the namespace controller, recorded by writes and done
/// by [`Registry::settle`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// An object with this uid was removed: collect its dependents, recheck its owners.
    Removed {
        /// The removed object's uid.
        uid: String,
        /// Its owners' uids.
        owners: Vec<String>,
        /// Its namespace.
        namespace: String,
    },
    /// An object started terminating (orphan or foreground finalizers may need work).
    Terminating {
        /// Its resource.
        resource: GroupResource,
        /// Its key.
        key: String,
    },
    /// A namespace is terminating: delete its content.
    Namespace(String),
}

/// The registry.
#[derive(Debug)]
pub struct Registry {
    /// The served resources.
    pub catalogue: Catalogue,
    /// The objects.
    pub store: Store,
    pending: Mutex<Vec<Work>>,
}

/// The etcd-style key kube-apiserver reports in storage errors.
pub fn registry_key(info: &ResourceInfo, key: &str) -> String {
    if info.custom {
        format!("/registry/{}/{}/{}", info.api.group, info.api.plural, key)
    } else {
        format!("/registry/{}/{}", info.api.plural, key)
    }
}

fn namespaces() -> GroupResource {
    GroupResource::new("", "namespaces")
}

/// A continue token: the snapshot resourceVersion (-1: the latest) and the key to start after.
pub fn encode_continue(rv: i64, last_key: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{last_key}\u{0}")});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

/// Decodes a continue token into (resourceVersion, start-after key).
pub fn decode_continue(token: &str) -> Result<(i64, String), ApiError> {
    let bad = |why: String| ApiError::bad_request(why);
    let data = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|e| bad(format!("continue key is not valid: {e}")))?;
    let v: Value = serde_json::from_slice(&data)
        .map_err(|e| bad(format!("continue key is not valid: {e}")))?;
    if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(bad(
            "continue key is not valid: server does not recognize this encoded version".into(),
        ));
    }
    let rv = v.get("rv").and_then(Value::as_i64).unwrap_or(0);
    if rv == 0 {
        return Err(bad(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)".into(),
        ));
    }
    let start = v.get("start").and_then(Value::as_str).unwrap_or("");
    if start.is_empty() {
        return Err(bad(
            "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)".into(),
        ));
    }
    if start.contains("..") || start.starts_with('/') {
        return Err(bad(format!("continue key is not valid: {start}")));
    }
    Ok((rv, start.trim_end_matches('\u{0}').to_string()))
}

const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// An `Expired` list error carrying a continue token that resumes at the latest version.
#[derive(Debug, Clone)]
pub struct ExpiredContinue {
    /// The error.
    pub error: ApiError,
    /// The token to continue inconsistently.
    pub continue_token: String,
}

/// Why a list failed.
#[derive(Debug, Clone)]
pub enum ListError {
    /// An ordinary failure.
    Api(ApiError),
    /// An expired continue token.
    ExpiredContinue(ExpiredContinue),
}

impl From<ApiError> for ListError {
    fn from(e: ApiError) -> Self {
        ListError::Api(e)
    }
}

impl Registry {
    /// A registry over the built-in catalogue, with `window` events of history.
    pub fn new(window: usize) -> Self {
        Self {
            catalogue: Catalogue::builtin(),
            store: Store::new(window),
            pending: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn push_work(&self, work: Work) {
        self.pending.lock().push(work);
    }

    pub(crate) fn take_work(&self) -> Vec<Work> {
        std::mem::take(&mut *self.pending.lock())
    }

    /// The object `name`, as served in `info`'s version.
    pub fn get(&self, info: &ResourceInfo, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let key = object_key(namespace, name);
        let state = self.store.read();
        match state.get(&info.group_resource(), &key) {
            Some(obj) => Ok(for_version(info, &obj.value)),
            None => Err(ApiError::not_found(&info.group_resource(), name)),
        }
    }

    /// Checks the namespace exists and is not terminating, as `NamespaceLifecycle` does.
    fn admit_namespace(
        &self,
        state: &StoreState,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        if !info.namespaced() {
            return Ok(());
        }
        match state.get(&namespaces(), namespace) {
            None => Err(ApiError::not_found(&namespaces(), namespace)),
            Some(ns) if meta::is_terminating(&ns.value) => {
                let mut err = ApiError::forbidden(
                    &info.group_resource(),
                    name,
                    &format!(
                        "unable to create new content in namespace {namespace} because it is being terminated"
                    ),
                );
                if let Some(d) = err.status.details.as_mut() {
                    d.causes.push(kclient_core::StatusCause {
                        cause_type: "NamespaceTerminating".into(),
                        message: format!("namespace {namespace} is being terminated"),
                        field: "metadata.namespace".into(),
                    });
                }
                Err(err)
            }
            Some(_) => Ok(()),
        }
    }

    /// Checks a request body's `apiVersion` and `kind` against the endpoint, filling them in
    /// when absent.
    pub fn check_type(&self, info: &ResourceInfo, body: &mut Value) -> Result<(), ApiError> {
        let Some(map) = body.as_object_mut() else {
            return Err(ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: expected an object",
                info.kind()
            )));
        };
        let api_version = map
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let kind = map
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !kind.is_empty() && kind != info.kind() {
            let version = api_version.rsplit('/').next().unwrap_or("");
            return Err(ApiError::bad_request(format!(
                "{kind} in version {version:?} cannot be handled as a {}: no kind {kind:?} is registered for version {:?}",
                info.kind(),
                info.api_version()
            )));
        }
        if !api_version.is_empty() && api_version != info.api_version() {
            let same_group = match api_version.split_once('/') {
                Some((g, _)) => g == info.api.group,
                None => info.api.group.is_empty(),
            };
            if !same_group
                || self
                    .catalogue
                    .get(
                        &info.api.group,
                        api_version.rsplit('/').next().unwrap_or(""),
                        &info.api.plural,
                    )
                    .is_none()
            {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({api_version}) does not match the expected API version ({})",
                    info.api_version()
                )));
            }
        }
        map.insert("apiVersion".into(), json!(info.api_version()));
        map.insert("kind".into(), json!(info.kind()));
        if !map.get("metadata").is_none_or(Value::is_object) {
            return Err(ApiError::bad_request(format!(
                "{} in version {:?} cannot be handled as a {}: json: cannot unmarshal into Go struct field {}.metadata of type v1.ObjectMeta",
                info.kind(),
                info.api.version,
                info.kind(),
                info.kind()
            )));
        }
        Ok(())
    }

    /// The schema objects of `info`'s resource are stored with: its storage version's.
    fn storage_schema(&self, info: &ResourceInfo) -> Option<Arc<crate::schema::Schema>> {
        if info.api.version == info.storage_version {
            return info.schema.clone();
        }
        self.catalogue
            .get(&info.api.group, &info.storage_version, &info.api.plural)
            .and_then(|s| s.schema.clone())
    }

    /// A custom resource written in a version other than its storage version, as it is
    /// stored: converted (`None` strategy: pruned by the storage version's schema) and
    /// defaulted by that schema, as the server's storage round trip does.
    fn to_storage(&self, info: &ResourceInfo, obj: &mut Value) {
        if !info.custom || info.api.version == info.storage_version {
            return;
        }
        let Some(storage) =
            self.catalogue
                .get(&info.api.group, &info.storage_version, &info.api.plural)
        else {
            return;
        };
        if let Some(map) = obj.as_object_mut() {
            map.insert("apiVersion".into(), json!(storage.api_version()));
        }
        if let Some(schema) = &storage.schema {
            crate::schema::convert(schema, obj);
            crate::schema::default(schema, obj);
        }
    }

    /// Decodes a custom resource as the server does (prune, default; see
    /// [`crate::schema::decode`]), with `fieldValidation`'s answer to unknown fields.
    fn decode_custom(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        opts: &WriteOptions,
    ) -> Result<(), ApiError> {
        let Some(schema) = &info.schema else {
            return Ok(());
        };
        let before =
            (opts.field_validation == FieldValidation::Strict && opts.patch).then(|| obj.clone());
        let unknown = crate::schema::decode(schema, obj);
        if unknown.is_empty() {
            return Ok(());
        }
        let listed = || {
            unknown
                .iter()
                .map(|p| format!("unknown field {p:?}"))
                .collect::<Vec<_>>()
        };
        match opts.field_validation {
            FieldValidation::Ignore => Ok(()),
            FieldValidation::Warn => {
                for w in listed() {
                    opts.warnings.push(w);
                }
                Ok(())
            }
            FieldValidation::Strict => {
                let why = format!("strict decoding error: {}", listed().join(", "));
                match before {
                    Some(patched) => Err(ApiError::invalid(
                        &GroupResource::new("", ""),
                        "",
                        vec![FieldError::invalid(
                            "patch",
                            &Value::String(kclient_core::go_format::json(&patched)),
                            &why,
                        )],
                    )),
                    None => Err(ApiError::bad_request(format!(
                        "{kind} in version {version:?} cannot be handled as a {kind}: {why}",
                        kind = info.kind(),
                        version = info.api.version,
                    ))),
                }
            }
        }
    }

    /// Creates an object (already type-checked), returning it as stored.
    pub fn create(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        mut obj: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.check_type(info, &mut obj)?;
        self.decode_custom(info, &mut obj, opts)?;
        let meta = meta::metadata_mut(&mut obj);
        let body_ns = meta
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if info.namespaced() {
            if !body_ns.is_empty() && !namespace.is_empty() && body_ns != namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            meta.insert("namespace".into(), json!(namespace));
        } else {
            meta.remove("namespace");
        }
        let mut name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if name.is_empty() {
            let generate = meta
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if generate.is_empty() {
                return Err(ApiError::invalid(
                    &info.qualified_kind(),
                    "",
                    vec![FieldError::required(
                        "metadata.name",
                        "name or generateName is required",
                    )],
                ));
            }
            name = meta::generate_name(&generate);
            meta.insert("name".into(), json!(name));
        }
        validate_name(info, &name)?;
        // What the server owns.
        meta.insert("uid".into(), json!(meta::new_uid()));
        meta.insert("creationTimestamp".into(), json!(meta::now_rfc3339()));
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        meta.remove("resourceVersion");
        meta.remove("selfLink");
        if info.tracks_generation {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
        crate::crd::validate(info, &obj)?;
        let given_status = if opts.seed {
            obj.get("status").cloned()
        } else {
            None
        };
        crate::defaults::drop_empty(info, &mut obj);
        crate::defaults::on_create(info, &mut obj);
        if let (Some(status), Some(map)) = (given_status, obj.as_object_mut()) {
            map.insert("status".into(), status);
        }
        if let Some(schema) = &info.schema {
            let errs = crate::schema::validate_create(schema, &obj);
            if !errs.is_empty() {
                return Err(ApiError::invalid(&info.qualified_kind(), &name, errs));
            }
            crate::schema::default(schema, &mut obj);
        }
        self.to_storage(info, &mut obj);
        if !opts.field_manager.is_empty() {
            crate::patch::apply::record_update(
                info,
                &opts.field_manager,
                Part::Main,
                None,
                &mut obj,
            );
        }
        let gr = info.group_resource();
        let key = object_key(namespace, &name);
        let stored = self.store.mutate(|state| {
            self.admit_namespace(state, info, namespace, &name)?;
            if state.get(&gr, &key).is_some() {
                return Err(ApiError::already_exists(&gr, &name));
            }
            if opts.dry_run {
                return Ok(obj);
            }
            Ok(state.put(&gr, namespace, &key, obj).value.clone())
        })?;
        crate::crd::after_write(self, info, Some(&stored));
        Ok(for_version(info, &stored))
    }

    /// Writes a new state of an existing object computed by `change` from the current one
    /// (`None` when it does not exist; `change` may then create it). Runs under the store
    /// lock, so there is no race between reading and writing. Returns the object and whether
    /// it was created.
    pub fn update_with(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        name: &str,
        part: Part,
        opts: &WriteOptions,
        change: impl FnOnce(Option<&Value>) -> Result<Value, ApiError>,
    ) -> Result<(Value, bool), ApiError> {
        let gr = info.group_resource();
        let key = object_key(namespace, name);
        let result = self
            .store
            .mutate(|state| -> Result<(Value, bool, bool), ApiError> {
                let storage_schema = self.storage_schema(info);
                let current = state.get(&gr, &key).map(|o| match &storage_schema {
                    Some(schema) => {
                        // The server defaults what it reads from storage, then converts it.
                        let mut stored = o.value.clone();
                        crate::schema::default(schema, &mut stored);
                        for_version(info, &stored)
                    }
                    None => for_version(info, &o.value),
                });
                let mut new = change(current.as_ref())?;
                self.check_type(info, &mut new)?;
                self.decode_custom(info, &mut new, opts)?;
                check_name(&new, name, namespace, info)?;
                let Some(old) = current else {
                    if !info.allow_create_on_update || part != Part::Main {
                        return Err(ApiError::not_found(&gr, name));
                    }
                    drop(key);
                    // Create through the normal path, outside this closure.
                    return Ok((new, true, false));
                };
                let mut new = self.prepare_update(info, &old, new, part, opts)?;
                if let Some(schema) = &info.schema {
                    // Only custom resources have a schema; the pod-only parts never get here.
                    let errs = match part {
                        Part::Status => crate::schema::validate_status_update(schema, &new, &old),
                        Part::Main | Part::EphemeralContainers | Part::Resize => {
                            crate::schema::validate_update(schema, &new, &old)
                        }
                    };
                    if !errs.is_empty() {
                        return Err(ApiError::invalid(&info.qualified_kind(), name, errs));
                    }
                    crate::schema::default(schema, &mut new);
                }
                if part == Part::Main {
                    crate::crd::validate_update(info, &old, &new)?;
                }
                if new == old {
                    return Ok((old, false, true));
                }
                self.to_storage(info, &mut new);
                if meta::is_terminating(&new)
                    && meta::finalizers(&new).is_empty()
                    && !namespace_finalizers_left(&gr, &new)
                {
                    // The last finalizer went: the object goes, without storing the update
                    // first (kube-apiserver's deleteWithoutFinalizers): watchers see one
                    // DELETED event carrying the stored state, finalizers included; the
                    // writer gets its update back.
                    if opts.dry_run {
                        return Ok((new, false, true));
                    }
                    let last = state
                        .remove(&gr, namespace, &key)
                        .map(|o| o.value.clone())
                        .unwrap_or_default();
                    self.push_work(Work::Removed {
                        uid: meta_str(&last, "uid").to_string(),
                        owners: owner_uids(&last),
                        namespace: namespace.to_string(),
                    });
                    let mut answer = new;
                    if let Some(rv) = last.pointer("/metadata/resourceVersion").cloned() {
                        meta::metadata_mut(&mut answer).insert("resourceVersion".into(), rv);
                    }
                    return Ok((answer, false, true));
                }
                let started_terminating = false;
                if opts.dry_run {
                    return Ok((new, false, true));
                }
                let stored = state.put(&gr, namespace, &key, new).value.clone();
                if meta::is_terminating(&stored) || started_terminating {
                    self.push_work(Work::Terminating {
                        resource: gr.clone(),
                        key: key.clone(),
                    });
                    if !namespace.is_empty() {
                        self.push_work(Work::Namespace(namespace.to_string()));
                    }
                }
                Ok((stored, false, true))
            })?;
        let (value, created, done) = result;
        if !done && created {
            let v = self.create(info, namespace, value, opts)?;
            return Ok((v, true));
        }
        crate::crd::after_write(self, info, Some(&value));
        Ok((for_version(info, &value), false))
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
        let gr = info.group_resource();
        let name = meta_str(old, "name").to_string();
        let new_rv = meta_str(&new, "resourceVersion").to_string();
        if !new_rv.is_empty() && new_rv != meta_str(old, "resourceVersion") {
            return Err(errors::stale_resource_version(&gr, &name));
        }
        let new_uid = meta_str(&new, "uid").to_string();
        if !new_uid.is_empty() && new_uid != meta_str(old, "uid") {
            return Err(ApiError::conflict(
                &gr,
                &name,
                &format!(
                    "Precondition failed: UID in precondition: {new_uid}, UID in object meta: {}",
                    meta_str(old, "uid")
                ),
            ));
        }
        if part == Part::Status {
            // Only status changes, and, for built-in resources, the metadata a client may
            // change (kube-apiserver's status strategies reset the spec only; a custom
            // resource's resets everything but status and managedFields).
            let mut out = old.clone();
            if !info.custom {
                if let Some(meta) = new.get("metadata").cloned() {
                    if let Some(o) = out.as_object_mut() {
                        o.insert("metadata".into(), meta);
                    }
                }
                keep_protected_metadata(info, old, &mut out, &name)?;
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
            if !opts.field_manager.is_empty() && out != *old {
                crate::patch::apply::record_update(
                    info,
                    &opts.field_manager,
                    Part::Status,
                    Some(old),
                    &mut out,
                );
            }
            return Ok(out);
        }
        if matches!(part, Part::EphemeralContainers | Part::Resize) {
            // kube-apiserver's pod subresource strategies: the stored pod with only what the
            // subresource changes taken from the request.
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
                let g = old
                    .pointer("/metadata/generation")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                meta::metadata_mut(&mut out).insert("generation".into(), json!(g + 1));
            }
            if !opts.field_manager.is_empty() && out != *old {
                crate::patch::apply::record_update(
                    info,
                    &opts.field_manager,
                    part,
                    Some(old),
                    &mut out,
                );
            }
            return Ok(out);
        }
        // The main resource: keep what clients cannot change.
        keep_protected_metadata(info, old, &mut new, &name)?;
        if info.status_subresource {
            if let Some(o) = new.as_object_mut() {
                match old.get("status") {
                    Some(s) => o.insert("status".into(), s.clone()),
                    None => o.remove("status"),
                };
            }
        }
        let bumps = match info.generation_bumps {
            GenerationBumps::Spec => meta::spec_changed(old, &new),
            GenerationBumps::SpecOrLabels => {
                // An absent and an empty map are equal (apimachinery's semantic equality).
                let labels = |o: &Value| {
                    o.pointer("/metadata/labels")
                        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
                        .cloned()
                };
                meta::spec_changed(old, &new) || labels(old) != labels(&new)
            }
            GenerationBumps::Never => false,
        };
        if info.tracks_generation && bumps {
            let g = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            meta::metadata_mut(&mut new).insert("generation".into(), json!(g + 1));
        }
        crate::defaults::on_update(info, old, &mut new)?;
        if !opts.field_manager.is_empty() && new != *old {
            crate::patch::apply::record_update(
                info,
                &opts.field_manager,
                Part::Main,
                Some(old),
                &mut new,
            );
        }
        Ok(new)
    }

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

    /// Waits until the store has reached `rv`, for at most three seconds (as the watch
    /// cache's `waitUntilFreshAndBlock`), then fails with `Too large resource version`.
    pub async fn wait_for_rv(&self, rv: u64) -> Result<(), ApiError> {
        let mut rx = self.store.subscribe();
        let wait = async {
            loop {
                if *rx.borrow_and_update() >= rv {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(std::time::Duration::from_secs(3), wait)
            .await
            .is_err()
        {
            let current = self.store.read().current_rv();
            return Err(ApiError::too_large_resource_version(rv, current, 1));
        }
        Ok(())
    }

    /// Lists objects (a page of them with `limit`), with the resourceVersion semantics of
    /// kube-apiserver. The caller waits for `NotOlderThan` versions first.
    pub fn list(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        params: &ListParams,
        predicate: &Predicate,
    ) -> Result<ListPage, ListError> {
        let gr = info.group_resource();
        let state = self.store.read();
        let current = state.current_rv();
        let (snapshot, after) = if !params.continue_token.is_empty() {
            if !params.resource_version.is_empty() && params.resource_version != "0" {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                )
                .into());
            }
            let (rv, start) = decode_continue(&params.continue_token)?;
            let rv = if rv < 0 { current } else { rv as u64 };
            if rv < state.compacted_rv() {
                let mut error = ApiError::resource_expired(INCONSISTENT_CONTINUE);
                error.status.details = None;
                return Err(ListError::ExpiredContinue(ExpiredContinue {
                    error,
                    continue_token: encode_continue(-1, &start),
                }));
            }
            (rv, Some(start))
        } else {
            let requested = parse_rv(&params.resource_version)?;
            let exact = match params.rv_match {
                RvMatch::Exact => true,
                RvMatch::Unset => params.limit > 0 && requested.is_some_and(|r| r > 0),
                RvMatch::NotOlderThan => false,
            };
            match requested {
                Some(rv) if rv > current => {
                    return Err(ApiError::too_large_resource_version(rv, current, 1).into());
                }
                Some(rv) if exact && rv > 0 => {
                    if rv < state.compacted_rv() {
                        return Err(ApiError::resource_expired(
                            "The resourceVersion for the provided list is too old.",
                        )
                        .into());
                    }
                    (rv, None)
                }
                _ => (current, None),
            }
        };
        let overrides = if snapshot < current {
            state
                .snapshot_overrides(&gr, snapshot)
                .map_err(|Compacted { .. }| {
                    ApiError::resource_expired(
                        "The resourceVersion for the provided list is too old.",
                    )
                })?
        } else {
            HashMap::new()
        };
        let prefix = namespace.map(|ns| format!("{ns}/"));
        let in_scope = |k: &str| {
            prefix.as_ref().is_none_or(|p| k.starts_with(p.as_str()))
                && after.as_deref().is_none_or(|a| k > a)
        };
        // Objects that existed at the snapshot but are gone now.
        let mut resurrected: Vec<(&String, &Arc<StoredObject>)> = overrides
            .iter()
            .filter(|(k, _)| state.get(&gr, k).is_none() && in_scope(k))
            .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
            .collect();
        resurrected.sort_by(|a, b| a.0.cmp(b.0));
        let mut extra = resurrected.into_iter().peekable();
        let mut live = state
            .range(&gr, namespace, after.as_deref())
            .filter_map(|(k, v)| match overrides.get(k) {
                Some(None) => None,
                Some(Some(prev)) => Some((k, prev)),
                None => Some((k, v)),
            })
            .peekable();
        let limit = if params.limit > 0 {
            params.limit as usize
        } else {
            usize::MAX
        };
        let exact_name = predicate.exact_name().map(str::to_string);
        let mut items = Vec::new();
        let mut last_key: Option<String> = None;
        let mut more = false;
        let mut remaining: i64 = 0;
        loop {
            let next = match (live.peek(), extra.peek()) {
                (None, None) => break,
                (Some(_), None) => live.next(),
                (None, Some(_)) => extra.next(),
                (Some(a), Some(b)) => {
                    if a.0 <= b.0 {
                        live.next()
                    } else {
                        extra.next()
                    }
                }
            };
            let Some((key, obj)) = next else { break };
            if let Some(n) = &exact_name {
                if meta_str(&obj.value, "name") != n {
                    continue;
                }
            }
            if !predicate.matches(&obj.value) {
                continue;
            }
            if items.len() >= limit {
                more = true;
                remaining += 1;
                if !predicate.is_everything() {
                    break;
                }
                continue;
            }
            last_key = Some(key.clone());
            items.push(obj.clone());
        }
        let continue_token = if more {
            last_key
                .as_deref()
                .map(|k| encode_continue(snapshot as i64, k))
        } else {
            None
        };
        let remaining = (more && predicate.is_everything()).then_some(remaining);
        Ok(ListPage {
            items,
            rv: snapshot,
            continue_token,
            remaining,
        })
    }
}

/// Whether `obj` is a namespace whose `spec.finalizers` still hold it.
fn namespace_finalizers_left(resource: &GroupResource, obj: &Value) -> bool {
    *resource == namespaces()
        && obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
}

/// Copies each container's `resources` and `resizePolicy` in `spec.{list}` of `from` to the
/// container of the same name in `to` (what a pod's `resize` subresource changes).
fn take_container_resources(to: &mut Value, from: &Value, list: &str) {
    let pointer = format!("/spec/{list}");
    let Some(given) = from.pointer(&pointer).and_then(Value::as_array) else {
        return;
    };
    let Some(containers) = to.pointer_mut(&pointer).and_then(Value::as_array_mut) else {
        return;
    };
    for container in containers.iter_mut() {
        let name = container.get("name").cloned();
        let Some(source) = given.iter().find(|c| c.get("name") == name.as_ref()) else {
            continue;
        };
        let Some(target) = container.as_object_mut() else {
            continue;
        };
        for field in ["resources", "resizePolicy"] {
            match source.get(field) {
                Some(v) => target.insert(field.into(), v.clone()),
                None => target.remove(field),
            };
        }
    }
}

fn copy_managed_fields(from: &Value, to: &mut Value) {
    if let Some(mf) = from.pointer("/metadata/managedFields") {
        meta::metadata_mut(to).insert("managedFields".into(), mf.clone());
    }
}

/// The uids of an object's owners.
pub fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str).map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn validate_name(info: &ResourceInfo, name: &str) -> Result<(), ApiError> {
    let problem = meta::path_segment_error(name).or_else(|| {
        if info.kind() == "Namespace" || info.kind() == "Service" {
            meta::dns_label_error(name)
        } else if info.custom || info.kind() == "Node" {
            None
        } else {
            meta::dns_subdomain_error(name)
        }
    });
    match problem {
        Some(why) => Err(ApiError::invalid(
            &info.qualified_kind(),
            name,
            vec![FieldError::invalid("metadata.name", &json!(name), &why)],
        )),
        None => Ok(()),
    }
}

/// Checks the body's name and namespace against the URL (`checkName`).
fn check_name(
    obj: &Value,
    name: &str,
    namespace: &str,
    info: &ResourceInfo,
) -> Result<(), ApiError> {
    let obj_name = meta_str(obj, "name");
    if obj_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({obj_name}) does not match the name on the URL ({name})"
        )));
    }
    let obj_ns = meta_str(obj, "namespace");
    if info.namespaced() && !namespace.is_empty() && !obj_ns.is_empty() && obj_ns != namespace {
        return Err(ApiError::bad_request(format!(
            "the namespace of the object ({obj_ns}) does not match the namespace on the request ({namespace})"
        )));
    }
    Ok(())
}

/// The object as served in `info`'s version (custom resources served in several versions are
/// stored once; the apiVersion follows the request, and a custom resource is pruned by the
/// schema of the version it is served in, as the `None` conversion strategy does).
pub fn for_version(info: &ResourceInfo, value: &Value) -> Value {
    if value.get("apiVersion").and_then(Value::as_str) == Some(info.api_version()) {
        return value.clone();
    }
    let mut v = value.clone();
    if let Some(map) = v.as_object_mut() {
        map.insert("apiVersion".into(), json!(info.api_version()));
    }
    if let Some(schema) = &info.schema {
        crate::schema::convert(schema, &mut v);
    }
    v
}

/// Whether a stored object must be re-serialised to be served in `info`'s version.
pub fn needs_version_rewrite(info: &ResourceInfo, value: &Value) -> bool {
    value.get("apiVersion").and_then(Value::as_str) != Some(info.api_version())
}

/// Keeps in `new` the metadata clients cannot change on update (identity, timestamps,
/// resourceVersion, generation; managedFields when `new` has none), and refuses new
/// finalizers on an object being deleted.
fn keep_protected_metadata(
    info: &ResourceInfo,
    old: &Value,
    new: &mut Value,
    name: &str,
) -> Result<(), ApiError> {
    let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let meta = meta::metadata_mut(new);
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "namespace",
        "name",
        "resourceVersion",
    ] {
        match old_meta.get(field) {
            Some(v) => meta.insert(field.into(), v.clone()),
            None => meta.remove(field),
        };
    }
    meta.remove("selfLink");
    if !meta.contains_key("managedFields") {
        if let Some(mf) = old_meta.get("managedFields") {
            meta.insert("managedFields".into(), mf.clone());
        }
    }
    match old_meta.get("generation") {
        Some(g) => meta.insert("generation".into(), g.clone()),
        None => meta.remove("generation"),
    };
    if meta::is_terminating(old) {
        // Finalizers may only be removed once deletion started.
        let old_f = meta::finalizers(old);
        let new_f: Vec<String> = meta
            .get("finalizers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        if new_f.iter().any(|f| !old_f.contains(f)) {
            return Err(ApiError::invalid(
                &info.qualified_kind(),
                name,
                vec![FieldError::forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted",
                )],
            ));
        }
    }
    Ok(())
}
