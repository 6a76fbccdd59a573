//! CustomResourceDefinitions (`apiextensions.k8s.io/v1`): creating or updating one through
//! the API registers its served versions (discovery included, with the `status` and `scale`
//! subresources and the `selectableFields` it declares) and marks it `Established`; deleting
//! it deletes its custom resources and unregisters them.
//!
//! Each served version keeps its `openAPIV3Schema`, read once: custom resources are pruned,
//! defaulted and validated with it (see [`crate::schema`]), and a CRD whose schemas are not
//! structural is refused ([`crate::schema::crd_checks`]; on update, only for problems the
//! stored CRD did not already have).
//!
//! An object is stored once, in the storage version, and served in every version: with the
//! `None` conversion strategy it takes the requested `apiVersion` and is pruned by that
//! version's schema; with `Webhook`, the CRD's conversion webhook converts it (see
//! [`crate::conversion_webhook`]).
//!
//! Limits: CEL rules (`x-kubernetes-validations`) are not evaluated.

use kclient_core::{ApiError, FieldError, GroupResource, GroupVersionKind};
use serde_json::{json, Value};

use crate::catalogue::{ResourceInfo, ScaleSpec};
use crate::meta::{self, meta_str};
use crate::registry::Registry;

fn is_crd(info: &ResourceInfo) -> bool {
    info.api.group == "apiextensions.k8s.io" && info.api.plural == "customresourcedefinitions"
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: &Value, pointer: &str) -> Vec<String> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Checks the fields kube-apiserver requires of a CRD before it is stored, and its schemas
/// (see [`crate::schema::crd_checks`]).
pub fn validate(info: &ResourceInfo, crd: &Value) -> Result<(), ApiError> {
    if !is_crd(info) {
        return Ok(());
    }
    refuse(info, crd, errors(crd))
}

/// Checks an update of a CRD: as [`validate`], except that schema problems the stored CRD
/// already has are tolerated (the server relaxes its rules for what it accepted before).
pub fn validate_update(info: &ResourceInfo, old: &Value, crd: &Value) -> Result<(), ApiError> {
    if !is_crd(info) {
        return Ok(());
    }
    let before: Vec<String> = crate::schema::crd_checks::validate(old)
        .iter()
        .map(FieldError::full)
        .collect();
    let errs = errors(crd)
        .into_iter()
        .filter(|e| !before.contains(&e.full()))
        .collect();
    refuse(info, crd, errs)
}

fn refuse(info: &ResourceInfo, crd: &Value, errs: Vec<FieldError>) -> Result<(), ApiError> {
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(
            &info.qualified_kind(),
            meta_str(crd, "name"),
            errs,
        ))
    }
}

fn errors(crd: &Value) -> Vec<FieldError> {
    let name = meta_str(crd, "name");
    let group = str_at(crd, "/spec/group");
    let plural = str_at(crd, "/spec/names/plural");
    let mut errs = Vec::new();
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    }
    if plural.is_empty() {
        errs.push(FieldError::required("spec.names.plural", ""));
    }
    if str_at(crd, "/spec/names/kind").is_empty() {
        errs.push(FieldError::required("spec.names.kind", ""));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid(
            "metadata.name",
            &json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let scope = str_at(crd, "/spec/scope");
    if scope != "Namespaced" && scope != "Cluster" {
        errs.push(FieldError::not_supported(
            "spec.scope",
            scope,
            &["Cluster", "Namespaced"],
        ));
    }
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
    match versions {
        None => errs.push(FieldError::required("spec.versions", "")),
        Some(vs) if vs.is_empty() => errs.push(FieldError::required("spec.versions", "")),
        Some(vs) => {
            let storage = vs
                .iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .count();
            if storage != 1 {
                errs.push(FieldError::invalid(
                    "spec.versions",
                    &Value::Null,
                    "must have exactly one version marked as storage version",
                ));
            }
        }
    }
    errs.extend(crate::schema::crd_checks::validate(crd));
    errs
}

/// The resources a CRD serves.
pub fn resources_of(crd: &Value) -> Vec<ResourceInfo> {
    let group = str_at(crd, "/spec/group").to_string();
    let plural = str_at(crd, "/spec/names/plural").to_string();
    let kind = str_at(crd, "/spec/names/kind").to_string();
    let singular = match str_at(crd, "/spec/names/singular") {
        "" => kind.to_lowercase(),
        s => s.to_string(),
    };
    let namespaced = str_at(crd, "/spec/scope") == "Namespaced";
    let conversion_webhook = crate::webhook_client::ConversionWebhook::of_crd(crd);
    let short_names = strings(crd, "/spec/names/shortNames");
    let categories = strings(crd, "/spec/names/categories");
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .map(|v| str_at(v, "/name").to_string())
        .unwrap_or_default();
    versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .map(|v| {
            let version = str_at(v, "/name");
            let mut info = ResourceInfo::new(
                GroupVersionKind::new(group.clone(), version, kind.clone()),
                &plural,
                namespaced,
            )
            .tracking_generation();
            info.singular = singular.clone();
            info.short_names = short_names.clone();
            info.categories = categories.clone();
            info.custom = true;
            info.storage_version = storage_version.clone();
            info.conversion_webhook = conversion_webhook.clone();
            info.selectable_fields = v
                .get("selectableFields")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                        .map(|p| p.trim_start_matches('.').to_string())
                        .collect()
                })
                .unwrap_or_default();
            info.schema = v
                .pointer("/schema/openAPIV3Schema")
                .filter(|s| s.is_object())
                .map(|s| std::sync::Arc::new(crate::schema::Schema::from_json(s)));
            if v.pointer("/subresources/status").is_some() {
                info = info.with_status();
            }
            if let Some(scale) = v.pointer("/subresources/scale") {
                let path = |k: &str| str_at(scale, k).trim_start_matches('.').to_string();
                info = info.with_scale(ScaleSpec {
                    spec_replicas_path: path("/specReplicasPath"),
                    status_replicas_path: path("/statusReplicasPath"),
                    label_selector_path: Some(path("/labelSelectorPath")).filter(|p| !p.is_empty()),
                });
            }
            info
        })
        .collect()
}

/// After a CRD was written: (re)registers its versions and marks it established.
pub fn after_write(registry: &Registry, info: &ResourceInfo, crd: Option<&Value>) {
    let Some(crd) = crd else { return };
    if !is_crd(info) || meta::is_terminating(crd) {
        return;
    }
    let resource = GroupResource::new(
        str_at(crd, "/spec/group"),
        str_at(crd, "/spec/names/plural"),
    );
    registry.catalogue.unregister(&resource);
    for r in resources_of(crd) {
        registry.catalogue.register(r);
    }
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let stored_versions: Vec<String> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .filter_map(|v| v.get("name").and_then(Value::as_str).map(String::from))
        .collect();
    let now = meta::now_rfc3339();
    let status = json!({
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": now},
        ],
        "acceptedNames": names,
        "storedVersions": stored_versions,
    });
    let name = meta_str(crd, "name").to_string();
    let gr = info.group_resource();
    registry.store.mutate(|state| {
        if let Some(cur) = state.get(&gr, &name) {
            let mut new = cur.value.clone();
            let same = |a: &Value, b: &Value| {
                a.get("acceptedNames") == b.get("acceptedNames")
                    && a.get("storedVersions") == b.get("storedVersions")
                    && a.get("conditions").is_some()
            };
            if new.get("status").is_some_and(|s| same(s, &status)) {
                return;
            }
            if let Some(map) = new.as_object_mut() {
                map.insert("status".into(), status);
            }
            state.put(&gr, "", &name, new);
        }
    });
}

/// After a CRD was removed: deletes its custom resources and unregisters them.
pub fn after_delete(registry: &Registry, info: &ResourceInfo, crd: &Value) {
    if !is_crd(info) {
        return;
    }
    let resource = GroupResource::new(
        str_at(crd, "/spec/group"),
        str_at(crd, "/spec/names/plural"),
    );
    registry.store.mutate(|state| {
        let keys: Vec<(String, String)> = state
            .range(&resource, None, None)
            .map(|(k, o)| (k.clone(), meta_str(&o.value, "namespace").to_string()))
            .collect();
        for (key, ns) in keys {
            state.remove(&resource, &ns, &key);
        }
    });
    registry.catalogue.unregister(&resource);
}
