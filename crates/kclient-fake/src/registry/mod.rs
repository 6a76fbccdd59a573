//! The registry: the rules kube-apiserver's generic registry and strategies apply to objects,
//! over the [`ObjectStore`](crate::store::ObjectStore).
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
//!
//! A write of the API goes through the admission webhooks ([`crate::admission`]) and, for a
//! custom resource of a CRD that converts by webhook, its conversion webhook
//! ([`crate::conversion_webhook`]): both are calls over the network, so a write is a series of
//! phases rather than one critical section — read the object, change it, admit it, check it,
//! then store it under the store's lock only if nobody wrote it meanwhile, and otherwise start
//! again (kube-apiserver's `GuaranteedUpdate`). The fake's own writes (seeding, garbage
//! collection, `modify`) take the same path without webhooks, driven to completion at once
//! (`create_now`, `update_now`, `delete_now`).
//!
//! One file per verb: `create.rs`, `update.rs` (update, and the writes of patch and the
//! subresources), `delete.rs`, `list.rs`; what they share (the registry, type checks,
//! storage versions, names) is here.

mod create;
mod delete;
mod list;
mod update;

use std::sync::Arc;

use base64::Engine as _;
use kclient_core::{ApiError, GroupResource};
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::catalogue::{Catalogue, ResourceInfo};
use crate::meta::{self, meta_str};
use crate::store::{object_key, ObjectStore, StoreState, StoredObject};
use kclient_core::{FieldError, FieldValidation};

/// Options common to writes.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and answer, store nothing.
    pub dry_run: bool,
    /// `fieldManager` (or the one derived from the User-Agent).
    pub field_manager: String,
    /// A direct write by the test (`seed`, `modify`), playing the controllers the fake does
    /// not run: `status` is kept as given, on create and on update, where a write through the
    /// API would reset it.
    pub seed: bool,
    /// `fieldValidation`: what to do with fields a custom resource's schema does not know.
    pub field_validation: FieldValidation,
    /// The write is a (non-apply) patch: strict decoding errors quote the patched object.
    pub patch: bool,
    /// Where the write leaves its warnings, for the response's `Warning` headers.
    pub warnings: Warnings,
    /// The write goes to storage without the update validation of the object's kind (what
    /// its immutable fields forbid): a subresource's own registry writing (`pods/binding`
    /// sets `spec.nodeName` as kube-apiserver's binding storage does).
    pub bypass_update_validation: bool,
    /// The admission of a write of the API (webhooks); `None` for the fake's own writes.
    pub admission: Option<Arc<crate::admission::Request>>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self {
            dry_run: false,
            field_manager: String::new(),
            seed: false,
            // The server's default (kclient-core's `FieldValidation` has none: a client sends
            // what it means or nothing).
            field_validation: FieldValidation::Warn,
            patch: false,
            warnings: Warnings::default(),
            bypass_update_validation: false,
            admission: None,
        }
    }
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
    /// An object was written naming as owner the uid of an object already removed: collect
    /// that owner's dependents again.
    DanglingOwner(String),
}

/// The registry.
#[derive(Debug)]
pub struct Registry {
    /// The served resources.
    pub catalogue: Catalogue,
    /// The objects.
    pub store: ObjectStore,
    /// Where webhooks' Service references go (see [`crate::webhook_client`]).
    pub services: crate::webhook_client::ServiceRoutes,
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
            store: ObjectStore::new(window),
            services: Default::default(),
            pending: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn push_work(&self, work: Work) {
        self.pending.lock().push(work);
    }

    /// Records the owners of the just-written `stored` that are gone already, for the
    /// garbage collector (kube-controller-manager's collects a dependent whose owners are
    /// all gone whenever it was written).
    pub(crate) fn push_dangling_owners(&self, state: &StoreState, stored: &Value) {
        for uid in state.removed_owners(stored) {
            self.push_work(Work::DanglingOwner(uid));
        }
    }

    /// Removes an object from the store and records the garbage collector's work; returns
    /// its last state.
    fn remove_object(
        &self,
        state: &mut StoreState,
        resource: &GroupResource,
        namespace: &str,
        key: &str,
    ) -> Value {
        let last = state
            .remove(resource, namespace, key)
            .map(|o| o.value.clone())
            .unwrap_or_default();
        self.push_work(Work::Removed {
            uid: meta_str(&last, "uid").to_string(),
            owners: owner_uids(&last),
            namespace: namespace.to_string(),
        });
        last
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

    /// The object `name`, as served in `info`'s version (through the CRD's conversion
    /// webhook when it has one).
    pub async fn get_converted(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<Value, ApiError> {
        let stored = {
            let state = self.store.read();
            let found = state.get(&info.group_resource(), &object_key(namespace, name));
            found.map(|o| o.value.clone())
        };
        match stored {
            Some(value) => {
                let read = crate::conversion_webhook::Read::Get;
                self.read_converted(info, value, read).await
            }
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
    /// stored: converted (the `None` strategy prunes it by the storage version's schema; a
    /// conversion webhook converts it) and defaulted by that schema, as the server's storage
    /// round trip does.
    async fn to_storage(&self, info: &ResourceInfo, obj: Value) -> Result<Value, ApiError> {
        if !info.custom || info.api.version == info.storage_version {
            return Ok(obj);
        }
        let Some(storage) =
            self.catalogue
                .get(&info.api.group, &info.storage_version, &info.api.plural)
        else {
            return Ok(obj);
        };
        let mut obj = self.convert_one(&storage, obj).await?;
        if let Some(schema) = &storage.schema {
            crate::schema::default(schema, &mut obj);
        }
        Ok(obj)
    }

    /// A custom resource as the server takes it from mutating webhooks: pruned by its schema
    /// (silently: the webhook's unknown fields are dropped) and defaulted.
    fn decode_admitted(&self, info: &ResourceInfo, obj: &mut Value) {
        if let Some(schema) = &info.schema {
            crate::schema::go_numbers(obj);
            let _dropped = crate::schema::decode(schema, obj);
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
        crate::schema::go_numbers(obj);
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
