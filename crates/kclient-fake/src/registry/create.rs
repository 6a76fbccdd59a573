//! Create (`POST`): names (`generateName`), identity and bookkeeping fields, the namespace's
//! admission, `409 AlreadyExists`.

use std::sync::Arc;

use kclient_core::{ApiError, FieldError};
use serde_json::{json, Value};

use crate::catalogue::ResourceInfo;
use crate::meta;
use crate::store::object_key;

use super::{for_version, validate_name, Part, Registry, WriteOptions};

impl Registry {
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
            let mut errs = crate::schema::validate_create(schema, &obj);
            if let Some(scale) = &info.scale {
                errs.extend(crate::schema::scale::validate(scale, &obj, true));
            }
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
            let stored = state.put(&gr, namespace, &key, obj).value.clone();
            self.push_dangling_owners(state, &stored);
            Ok(stored)
        })?;
        crate::crd::after_write(self, info, Some(&stored));
        Ok(for_version(info, &stored))
    }
}
