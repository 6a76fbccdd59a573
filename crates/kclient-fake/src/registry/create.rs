//! Create (`POST`): names (`generateName`), identity and bookkeeping fields, the namespace's
//! admission, the webhooks' (mutating before the object's own rules, validating after them),
//! `409 AlreadyExists`.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use kclient_core::admission::Operation;

use crate::admission::Subject;
use kclient_core::{ApiError, FieldError};
use serde_json::{json, Value};

use crate::catalogue::ResourceInfo;
use crate::meta;
use crate::store::object_key;

use super::{validate_name, Part, Registry, WriteOptions};

impl Registry {
    /// Creates an object, returning it as stored (in the request's version), after the
    /// admission webhooks of a write of the API (`opts.admission`).
    pub async fn create(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        mut obj: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.check_type(info, &mut obj)?;
        self.decode_custom(info, &mut obj, opts)?;
        let name = place(info, namespace, &mut obj)?;
        if let Some(admission) = &opts.admission {
            // NamespaceLifecycle comes before the webhooks.
            self.admit_namespace(&self.store.read(), info, namespace, &name)?;
            let subject = Subject {
                operation: Operation::Create,
                info,
                namespace,
                name: &name,
            };
            obj = admission.admit_write(self, subject, obj, None).await?;
            self.decode_admitted(info, &mut obj);
            // A mutating webhook may have changed what the object says; the request decides.
            place(info, namespace, &mut obj)?;
        }
        let obj = prepare_create(info, obj, opts)?;
        if let Some(admission) = &opts.admission {
            // Validating webhooks see the generated name (`AdmissionToValidateObjectFunc`).
            let subject = Subject {
                operation: Operation::Create,
                info,
                namespace,
                name: meta::meta_str(&obj, "name"),
            };
            admission.validate_write(self, subject, &obj, None).await?;
        }
        let obj = self.to_storage(info, obj).await?;
        let stored = self.commit_create(info, namespace, obj, opts)?;
        crate::crd::after_write(self, info, Some(&stored));
        self.convert_one(info, stored).await
    }

    /// [`create`](Self::create) for the fake's own writes (seeding): no webhooks; an object
    /// of a resource converted by a webhook must be given in its storage version.
    pub fn create_now(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let opts = without_webhooks(opts);
        now(info, self.create(info, namespace, obj, &opts))
    }

    /// Stores a prepared object (in the storage version) unless it exists or its namespace
    /// does not take it.
    fn commit_create(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: &str,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let name = meta::meta_str(&obj, "name").to_string();
        let gr = info.group_resource();
        let key = object_key(namespace, &name);
        self.store.mutate(|state| {
            self.admit_namespace(state, info, namespace, &name)?;
            if state.get(&gr, &key).is_some() {
                return Err(ApiError::already_exists(&gr, &name));
            }
            if opts.dry_run {
                return Ok(obj);
            }
            let stored = state.put(&gr, namespace, &key, obj).value.clone();
            self.push_dangling_owners(state, &stored);
            Ok(stored)
        })
    }
}

/// Puts a new object in the request's namespace (or in none, for a cluster-scoped one),
/// refusing a body that names another; returns its name (`""` with `generateName`).
fn place(info: &ResourceInfo, namespace: &str, obj: &mut Value) -> Result<String, ApiError> {
    let meta = meta::metadata_mut(obj);
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
    Ok(meta
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string())
}

/// `opts` for a write the fake makes itself (`create_now`, `update_now`): no admission
/// webhooks.
pub(super) fn without_webhooks(opts: &WriteOptions) -> WriteOptions {
    WriteOptions {
        admission: None,
        ..opts.clone()
    }
}

/// The outcome of a write the fake makes itself, which must not wait: one that would (its
/// object's conversion calls a webhook) fails with [`needs_a_webhook`].
pub(super) fn now<T>(
    info: &ResourceInfo,
    write: impl Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    write
        .now_or_never()
        .unwrap_or_else(|| Err(needs_a_webhook(info)))
}

/// The error of a write the fake makes itself of an object whose conversion needs a webhook
/// call (it calls none outside a request).
fn needs_a_webhook(info: &ResourceInfo) -> ApiError {
    ApiError::bad_request(format!(
        "kclient-fake converts {} objects with a webhook, which it calls for requests only: write this object in version {} or through the API",
        info.group_resource(),
        info.storage_version
    ))
}

/// Names a new object (from `generateName` when it has no name) and gives it what the server
/// owns: uid, creation time, the first generation; returns the name.
fn name_and_identity(info: &ResourceInfo, obj: &mut Value) -> Result<String, ApiError> {
    let meta = meta::metadata_mut(obj);
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
    Ok(name)
}

/// What the server does to a new object after its admission: names, identity, the
/// strategy, validation, defaults, the field manager.
fn prepare_create(
    info: &ResourceInfo,
    mut obj: Value,
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    let name = name_and_identity(info, &mut obj)?;
    crate::crd::validate(info, &obj)?;
    if !opts.seed {
        // A seeded configuration may be what an older server accepted.
        crate::admission::configuration::validate(info, &obj)?;
    }
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
        let mut errs = crate::schema::validate_create(schema, &obj);
        if let Some(scale) = &info.scale {
            errs.extend(crate::schema::scale::validate(scale, &obj, true));
        }
        if !errs.is_empty() {
            return Err(ApiError::invalid(&info.qualified_kind(), &name, errs));
        }
        crate::schema::default(schema, &mut obj);
    }
    if !opts.field_manager.is_empty() {
        crate::patch::apply::record_update(info, &opts.field_manager, Part::Main, None, &mut obj);
    }
    Ok(obj)
}
