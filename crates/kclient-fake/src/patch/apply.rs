//! Server-side apply (`application/apply-patch+yaml`) and the `managedFields` every write
//! records.
//!
//! What it does, as kube-apiserver does it:
//! - `fieldManager` is required; the applied configuration must name the object's
//!   `apiVersion`, `kind` and `name`; applying a missing object creates it.
//! - Each manager's fields are recorded in `metadata.managedFields` (`FieldsV1`, operation
//!   `Apply` or `Update`, with `apiVersion`, `time` and `subresource`).
//! - A field another manager owns with a different value is a conflict: `409 Conflict`,
//!   `Apply failed with 1 conflict: conflict with "other" using v1: .spec.replicas`, one
//!   `FieldManagerConflict` cause per field; `force=true` takes the fields over instead.
//! - Fields the applier owned before and no longer applies are removed, unless another
//!   manager still owns them.
//! - Updates (create, PUT, non-apply PATCH) give their manager the fields they changed and
//!   take those fields from other managers.
//!
//! Limits (there is no OpenAPI schema here): lists merge by key only for the built-in list
//! keys of [`strategic`](super::strategic) (containers by name, ports, env, volumes, …) and
//! `metadata.finalizers` as a set; every other list is atomic, in custom resources too
//! (a CRD's `x-kubernetes-list-type` is not read). Maps are always granular. Values are not
//! validated or defaulted.

use std::collections::{BTreeMap, BTreeSet};

use kclient_core::{
    ApiError, FieldError, GroupResource, Status, StatusCause, StatusDetails, StatusReason,
};
use serde_json::{json, Map, Value};

use super::strategic::{list_strategy, ListStrategy};
use crate::call::Call;
use crate::catalogue::ResourceInfo;
use crate::meta::{self, meta_str};
use crate::registry::{Part, WriteOptions};
use crate::request::ApiRequest;

/// One step of a field path: `f:name`, `k:{"name":"c"}`, `v:"value"` or `i:0`.
pub type Element = String;
/// A field path.
pub type FieldPath = Vec<Element>;
/// A set of field paths.
pub type FieldSet = BTreeSet<FieldPath>;

const IGNORED_META: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// The fields set in `obj` that managers can own (`part` chooses status or the rest).
pub fn field_set(info: &ResourceInfo, obj: &Value, part: Part) -> FieldSet {
    let mut set = FieldSet::new();
    let Some(map) = obj.as_object() else {
        return set;
    };
    for (k, v) in map {
        match k.as_str() {
            "apiVersion" | "kind" => continue,
            "status" if part != Part::Status && info.status_subresource => continue,
            "status" => {}
            _ if part == Part::Status => continue,
            _ => {}
        }
        let mut path = vec![format!("f:{k}")];
        if k == "metadata" {
            if let Some(m) = v.as_object() {
                for (mk, mv) in m {
                    if IGNORED_META.contains(&mk.as_str()) {
                        continue;
                    }
                    path.push(format!("f:{mk}"));
                    walk(
                        mv,
                        &mut path,
                        &mut vec!["metadata".into(), mk.clone()],
                        &mut set,
                    );
                    path.pop();
                }
            }
            continue;
        }
        walk(v, &mut path, &mut vec![k.clone()], &mut set);
    }
    set
}

fn key_element(item: &Value, key: &str) -> Option<Element> {
    let kv = item.get(key)?;
    Some(format!("k:{}", json!({ key: kv })))
}

/// [`walk`]s each field of an object, below `path`.
fn walk_fields(
    m: &Map<String, Value>,
    path: &mut FieldPath,
    names: &mut Vec<String>,
    set: &mut FieldSet,
) {
    for (k, child) in m {
        path.push(format!("f:{k}"));
        names.push(k.clone());
        walk(child, path, names, set);
        names.pop();
        path.pop();
    }
}

fn walk(v: &Value, path: &mut FieldPath, names: &mut Vec<String>, set: &mut FieldSet) {
    match v {
        Value::Object(m) if !m.is_empty() => walk_fields(m, path, names, set),
        Value::Array(items) => {
            let field = names.last().cloned().unwrap_or_default();
            let parent = &names[..names.len().saturating_sub(1)];
            match list_strategy(parent, &field) {
                ListStrategy::MergeKey(key) => {
                    for item in items {
                        let Some(el) = key_element(item, key) else {
                            set.insert(path.clone());
                            return;
                        };
                        path.push(el);
                        set.insert(path.clone());
                        if let Some(m) = item.as_object() {
                            walk_fields(m, path, names, set);
                        }
                        path.pop();
                    }
                    if items.is_empty() {
                        set.insert(path.clone());
                    }
                }
                ListStrategy::Set => {
                    for item in items {
                        path.push(format!("v:{item}"));
                        set.insert(path.clone());
                        path.pop();
                    }
                    if items.is_empty() {
                        set.insert(path.clone());
                    }
                }
                ListStrategy::Replace => {
                    set.insert(path.clone());
                }
            }
        }
        _ => {
            set.insert(path.clone());
        }
    }
}

/// The value at `path` in `obj`.
pub fn value_at<'a>(obj: &'a Value, path: &[Element]) -> Option<&'a Value> {
    let mut cur = obj;
    for el in path {
        cur = if let Some(f) = el.strip_prefix("f:") {
            cur.get(f)?
        } else if let Some(k) = el.strip_prefix("k:") {
            let key: Map<String, Value> = serde_json::from_str(k).ok()?;
            cur.as_array()?
                .iter()
                .find(|item| key.iter().all(|(kk, kv)| item.get(kk) == Some(kv)))?
        } else if let Some(v) = el.strip_prefix("v:") {
            let val: Value = serde_json::from_str(v).ok()?;
            cur.as_array()?.iter().find(|item| **item == val)?
        } else if let Some(i) = el.strip_prefix("i:") {
            cur.get(i.parse::<usize>().ok()?)?
        } else {
            return None;
        };
    }
    Some(cur)
}

/// Whether `a` and `b` differ at `path`: for a list item (`k:`/`v:`) whether it exists in
/// one and not the other (its fields are paths of their own), for a field its value.
fn differs(a: Option<&Value>, b: &Value, path: &[Element]) -> bool {
    let item = path
        .last()
        .is_some_and(|e| e.starts_with("k:") || e.starts_with("v:"));
    let left = a.and_then(|a| value_at(a, path));
    let right = value_at(b, path);
    if item {
        left.is_some() != right.is_some()
    } else {
        left != right
    }
}

/// Removes the value at `path` from `obj`.
fn remove_at(obj: &mut Value, path: &[Element]) {
    let Some((last, parent_path)) = path.split_last() else {
        return;
    };
    let mut cur = obj;
    for el in parent_path {
        let next = if let Some(f) = el.strip_prefix("f:") {
            cur.get_mut(f)
        } else if let Some(k) = el.strip_prefix("k:") {
            let Ok(key) = serde_json::from_str::<Map<String, Value>>(k) else {
                return;
            };
            cur.as_array_mut().and_then(|a| {
                a.iter_mut()
                    .find(|item| key.iter().all(|(kk, kv)| item.get(kk) == Some(kv)))
            })
        } else {
            None
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    if let Some(f) = last.strip_prefix("f:") {
        if let Some(m) = cur.as_object_mut() {
            m.remove(f);
        }
    } else if let Some(k) = last.strip_prefix("k:") {
        if let (Ok(key), Some(a)) = (
            serde_json::from_str::<Map<String, Value>>(k),
            cur.as_array_mut(),
        ) {
            a.retain(|item| !key.iter().all(|(kk, kv)| item.get(kk) == Some(kv)));
        }
    } else if let Some(v) = last.strip_prefix("v:") {
        if let (Ok(val), Some(a)) = (serde_json::from_str::<Value>(v), cur.as_array_mut()) {
            a.retain(|item| *item != val);
        }
    }
}

/// The path as conflict messages print it: `.spec.containers[name="c"].image`.
pub fn path_string(path: &[Element]) -> String {
    let mut out = String::new();
    for el in path {
        if let Some(f) = el.strip_prefix("f:") {
            out.push('.');
            out.push_str(f);
        } else if let Some(k) = el.strip_prefix("k:") {
            let key: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
            let parts: Vec<String> = key.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(v) = el.strip_prefix("v:") {
            out.push_str(&format!("[={v}]"));
        } else if let Some(i) = el.strip_prefix("i:") {
            out.push_str(&format!("[{i}]"));
        }
    }
    out
}

/// A field set as `fieldsV1`.
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut cur = &mut root;
        for el in path {
            let entry = cur.entry(el.clone()).or_insert_with(|| json!({}));
            cur = entry.as_object_mut().expect("fieldsV1 nodes are objects");
        }
        if set
            .iter()
            .any(|p| p.len() > path.len() && p.starts_with(path))
        {
            cur.insert(".".into(), json!({}));
        }
    }
    Value::Object(root)
}

/// `fieldsV1` as a field set.
pub fn from_fields_v1(v: &Value) -> FieldSet {
    fn go(node: &Map<String, Value>, path: &mut FieldPath, set: &mut FieldSet) {
        if (node.contains_key(".") || node.is_empty()) && !path.is_empty() {
            set.insert(path.clone());
        }
        for (k, child) in node {
            if k == "." {
                continue;
            }
            path.push(k.clone());
            match child.as_object() {
                Some(c) => go(c, path, set),
                None => {
                    set.insert(path.clone());
                }
            }
            path.pop();
        }
    }
    let mut set = FieldSet::new();
    if let Some(m) = v.as_object() {
        go(m, &mut Vec::new(), &mut set);
    }
    set
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: String,
    subresource: String,
    fields: FieldSet,
}

fn read_entries(obj: &Value) -> Vec<Entry> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|e| Entry {
                    manager: e
                        .get("manager")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .into(),
                    operation: e
                        .get("operation")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .into(),
                    api_version: e
                        .get("apiVersion")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .into(),
                    time: e.get("time").and_then(Value::as_str).unwrap_or("").into(),
                    subresource: e
                        .get("subresource")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .into(),
                    fields: e.get("fieldsV1").map(from_fields_v1).unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn write_entries(obj: &mut Value, entries: Vec<Entry>) {
    let list: Vec<Value> = entries
        .into_iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut v = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": to_fields_v1(&e.fields),
            });
            if !e.subresource.is_empty() {
                v["subresource"] = json!(e.subresource);
            }
            v
        })
        .collect();
    let meta = meta::metadata_mut(obj);
    if list.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), json!(list));
    }
}

fn subresource_name(part: Part) -> &'static str {
    match part {
        Part::Main => "",
        Part::Status => "status",
        Part::EphemeralContainers => "ephemeralcontainers",
        Part::Resize => "resize",
    }
}

/// Records an update by `manager` (`old`: the previous state, `None` on create) in `new`'s
/// `managedFields`.
pub fn record_update(
    info: &ResourceInfo,
    manager: &str,
    part: Part,
    old: Option<&Value>,
    new: &mut Value,
) {
    let new_set = field_set(info, new, part);
    let changed: FieldSet = new_set
        .iter()
        .filter(|p| differs(old, new, p))
        .cloned()
        .collect();
    let mut entries = read_entries(new);
    let sub = subresource_name(part);
    // Managers keep the fields that still exist (a map that gained entries still exists:
    // owning `.data` as an empty map survives another manager adding `.data.u`) and that
    // this update did not change.
    for e in &mut entries {
        e.fields
            .retain(|p| value_at(new, p).is_some() && !changed.contains(p));
    }
    match entries
        .iter_mut()
        .find(|e| e.manager == manager && e.operation == "Update" && e.subresource == sub)
    {
        Some(e) => {
            e.fields.extend(changed);
            e.time = meta::now_rfc3339();
            e.api_version = info.api_version().to_string();
        }
        None => {
            if !changed.is_empty() {
                entries.push(Entry {
                    manager: manager.to_string(),
                    operation: "Update".into(),
                    api_version: info.api_version().to_string(),
                    time: meta::now_rfc3339(),
                    subresource: sub.into(),
                    fields: changed,
                });
            }
        }
    }
    write_entries(new, entries);
}

/// Merges an applied configuration into the live object: maps recursively, keyed lists by
/// key, sets as unions, everything else replaced.
fn merge_applied(live: &Value, applied: &Value, names: &mut Vec<String>) -> Value {
    match (live, applied) {
        (Value::Object(l), Value::Object(a)) => {
            let mut out = l.clone();
            for (k, av) in a {
                names.push(k.clone());
                let merged = match l.get(k) {
                    Some(lv) => merge_applied(lv, av, names),
                    None => av.clone(),
                };
                names.pop();
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(l), Value::Array(a)) => {
            let field = names.last().cloned().unwrap_or_default();
            let parent = names[..names.len().saturating_sub(1)].to_vec();
            match list_strategy(&parent, &field) {
                ListStrategy::MergeKey(key) => {
                    let mut out = l.clone();
                    for item in a {
                        match item
                            .get(key)
                            .and_then(|kv| out.iter().position(|o| o.get(key) == Some(kv)))
                        {
                            Some(i) => out[i] = merge_applied(&out[i], item, names),
                            None => out.push(item.clone()),
                        }
                    }
                    Value::Array(out)
                }
                ListStrategy::Set => {
                    let mut out = l.clone();
                    for item in a {
                        if !out.contains(item) {
                            out.push(item.clone());
                        }
                    }
                    Value::Array(out)
                }
                ListStrategy::Replace => applied.clone(),
            }
        }
        (_, a) => a.clone(),
    }
}

fn conflict_error(conflicts: &[Conflict]) -> ApiError {
    let describe = |manager: &str, op_desc: &str| format!("{manager:?}{op_desc}");
    let causes: Vec<StatusCause> = conflicts
        .iter()
        .map(|(m, d, p)| StatusCause {
            cause_type: "FieldManagerConflict".into(),
            message: format!("conflict with {}", describe(m, d)),
            field: path_string(p),
        })
        .collect();
    let message = if let [(m, d, p)] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            describe(m, d),
            path_string(p)
        )
    } else {
        let mut by_manager: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (m, d, p) in conflicts {
            by_manager
                .entry(describe(m, d))
                .or_default()
                .push(path_string(p));
        }
        let mut lines = Vec::new();
        for (m, paths) in by_manager {
            lines.push(format!("conflicts with {m}:"));
            for p in paths {
                lines.push(format!("- {p}"));
            }
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    Status::failure(StatusReason::Conflict, 409, message)
        .with_details(StatusDetails {
            causes,
            ..StatusDetails::default()
        })
        .into()
}

/// A field another manager owns that an apply changes: the manager, how it wrote the field
/// (as the conflict message describes it), the field.
type Conflict = (String, String, FieldPath);

/// Applies `applied` as `manager` to `live` (`None`: the object does not exist yet).
pub fn apply_to(
    info: &ResourceInfo,
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    part: Part,
) -> Result<Value, ApiError> {
    let applied_set = field_set(info, applied, part);
    let sub = subresource_name(part);
    let empty = json!({});
    let base = live.unwrap_or(&empty);
    let mut entries = read_entries(base);
    let conflicts = conflicts(&entries, &applied_set, base, applied, manager);
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(&conflicts));
    }
    // Merge.
    let mut stripped = applied.clone();
    if let Some(m) = stripped.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in IGNORED_META {
            if *f != "name" && *f != "namespace" {
                m.remove(*f);
            }
        }
    }
    let mut new = merge_applied(base, &stripped, &mut Vec::new());
    remove_unapplied(&mut new, &entries, &applied_set, manager, sub);
    // Ownership: a forced apply takes the conflicting fields from their owners.
    if force {
        for e in &mut entries {
            if !(e.manager == manager && e.operation == "Apply") {
                e.fields
                    .retain(|p| !conflicts.iter().any(|(_, _, c)| c == p));
            }
        }
    }
    entries.retain(|e| !(e.manager == manager && e.operation == "Apply" && e.subresource == sub));
    entries.push(Entry {
        manager: manager.to_string(),
        operation: "Apply".into(),
        api_version: info.api_version().to_string(),
        time: meta::now_rfc3339(),
        subresource: sub.into(),
        fields: applied_set,
    });
    write_entries(&mut new, entries);
    Ok(new)
}

/// The fields of `applied_set` that other managers own (and `manager`'s own updates) and
/// the apply changes from `base`.
fn conflicts(
    entries: &[Entry],
    applied_set: &FieldSet,
    base: &Value,
    applied: &Value,
    manager: &str,
) -> Vec<Conflict> {
    let mut conflicts = Vec::new();
    for e in entries {
        if e.manager == manager && e.operation == "Apply" {
            continue;
        }
        for p in applied_set.intersection(&e.fields) {
            if differs(Some(base), applied, p) {
                conflicts.push((e.manager.clone(), how_written(e), p.clone()));
            }
        }
    }
    conflicts
}

/// How a manager's entry wrote its fields, as a conflict message says it
/// (` with subresource "status" using apps/v1 at <time>`; nothing for an apply).
fn how_written(e: &Entry) -> String {
    let desc = if e.operation == "Update" {
        if e.time.is_empty() {
            format!(" using {}", e.api_version)
        } else {
            format!(" using {} at {}", e.api_version, e.time)
        }
    } else {
        String::new()
    };
    if e.subresource.is_empty() {
        desc
    } else {
        format!(" with subresource {:?}{desc}", e.subresource)
    }
}

/// Removes from `new` the fields `manager` applied before (to subresource `sub`) and no
/// longer applies, unless someone else owns them.
fn remove_unapplied(
    new: &mut Value,
    entries: &[Entry],
    applied_set: &FieldSet,
    manager: &str,
    sub: &str,
) {
    let own = |e: &Entry| e.manager == manager && e.operation == "Apply" && e.subresource == sub;
    let previous: FieldSet = entries
        .iter()
        .find(|e| own(e))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    let others: FieldSet = entries
        .iter()
        .filter(|e| !own(e))
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    let mut gone: Vec<&FieldPath> = previous
        .iter()
        .filter(|p| !applied_set.contains(*p) && !others.contains(*p))
        .filter(|p| !applied_set.iter().any(|a| a.starts_with(p)))
        .collect();
    gone.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in gone {
        remove_at(new, p);
    }
}

/// Serves an apply patch.
pub async fn handle(
    call: &Call<'_>,
    name: &str,
    part: Part,
    request_opts: &WriteOptions,
) -> Result<(Value, bool), ApiError> {
    let (shared, req, info, q) = (call.shared, call.req, call.info, call.q);
    let namespace = call.namespace_or_all();
    let manager = q.str("fieldManager").to_string();
    if manager.is_empty() {
        return Err(ApiError::invalid(
            &GroupResource::new("meta.k8s.io", "PatchOptions"),
            "",
            vec![FieldError::required(
                "fieldManager",
                "is required for apply patch",
            )],
        ));
    }
    let force = q.bool("force")?.unwrap_or(false);
    let applied = parse_applied(req, info, name)?;
    let opts = WriteOptions {
        dry_run: q.get("dryRun") == Some("All"),
        field_manager: String::new(),
        seed: false,
        patch: false,
        ..request_opts.clone()
    };
    for _ in 0..3 {
        let exists = shared.registry.get(info, namespace, name).is_ok();
        if !exists {
            if part != Part::Main {
                return Err(ApiError::not_found(&info.group_resource(), name));
            }
            let new = apply_to(info, None, &applied, &manager, force, part)?;
            match shared.registry.create(info, namespace, new, &opts).await {
                Ok(v) => return Ok((v, true)),
                Err(e) if e.status.reason == StatusReason::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        let result = shared
            .registry
            .update_with(info, namespace, name, part, &opts, |cur| match cur {
                Some(cur) => apply_to(info, Some(cur), &applied, &manager, force, part),
                None => Err(ApiError::not_found(&info.group_resource(), name)),
            })
            .await;
        match result {
            Err(e) if e.code() == 404 => continue,
            other => return other,
        }
    }
    Err(ApiError::conflict(
        &info.group_resource(),
        name,
        "the object changed while it was being applied; please retry",
    ))
}

/// The applied configuration of the request: a YAML (or JSON) object with apiVersion and
/// kind, named as the URL, with only the fields its schema declares (custom resources).
fn parse_applied(req: &ApiRequest, info: &ResourceInfo, name: &str) -> Result<Value, ApiError> {
    let applied: Value = crate::manifests::parse_yaml_body(&req.body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !applied.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the applied configuration must be an object",
        ));
    }
    for field in ["apiVersion", "kind"] {
        if applied
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            return Err(ApiError::bad_request(format!(
                "invalid object type: {field} is required for an apply patch"
            )));
        }
    }
    let applied_name = meta_str(&applied, "name");
    if applied_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({applied_name}) does not match the name on the URL ({name})"
        )));
    }
    if let Some(schema) = &info.schema {
        if let Some(why) = crate::schema::apply::undeclared_fields(schema, &applied) {
            let field = |f: &str| applied.get(f).and_then(Value::as_str).unwrap_or("");
            let gvk = format!("{}, Kind={}", field("apiVersion"), field("kind"));
            return Err(Status::failure(
                StatusReason::Unknown,
                500,
                format!(
                    "failed to create typed patch object ({}/{}; {gvk}): {why}",
                    meta_str(&applied, "namespace"),
                    applied_name,
                ),
            )
            .into());
        }
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::catalogue::Catalogue;

    fn deploys() -> Arc<ResourceInfo> {
        Catalogue::builtin()
            .get("apps", "v1", "deployments")
            .unwrap()
    }

    /// Applies a Deployment of these fields (`metadata`, `spec`) over `live` as `manager`.
    fn apply_deployment(
        live: Option<&Value>,
        fields: Value,
        manager: &str,
        force: bool,
    ) -> Result<Value, ApiError> {
        let mut applied = json!({"apiVersion": "apps/v1", "kind": "Deployment"});
        let fields = fields.as_object().cloned().unwrap_or_default();
        applied.as_object_mut().unwrap().extend(fields);
        apply_to(&deploys(), live, &applied, manager, force, Part::Main)
    }

    #[test]
    fn field_sets_round_trip_through_fields_v1() {
        let obj = json!({"metadata": {"name": "d", "labels": {"a": "1"}, "finalizers": ["x"]},
                         "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        let set = field_set(&deploys(), &obj, Part::Main);
        let v1 = to_fields_v1(&set);
        assert_eq!(v1["f:metadata"]["f:labels"]["f:a"], json!({}));
        assert_eq!(v1["f:metadata"]["f:finalizers"]["v:\"x\""], json!({}));
        let c = &v1["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"];
        assert_eq!(c["."], json!({}));
        assert_eq!(c["f:image"], json!({}));
        assert_eq!(from_fields_v1(&v1), set);
    }

    #[test]
    fn conflicts_and_force() {
        let one = json!({"metadata": {"name": "d"}, "spec": {"replicas": 1}});
        let three = json!({"metadata": {"name": "d"}, "spec": {"replicas": 3}});
        let live = apply_deployment(None, one, "a", false).unwrap();
        let err = apply_deployment(Some(&live), three.clone(), "b", false).unwrap_err();
        assert_eq!(err.code(), 409);
        assert_eq!(
            err.message(),
            "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
        );
        let forced = apply_deployment(Some(&live), three.clone(), "b", true).unwrap();
        assert_eq!(forced["spec"]["replicas"], 3);
        let entries = read_entries(&forced);
        assert_eq!(entries.len(), 1, "a lost its only field: {entries:?}");
        assert_eq!(entries[0].manager, "b");
        // Same value: shared ownership, no conflict.
        let shared = apply_deployment(Some(&forced), three, "c", false).unwrap();
        assert_eq!(read_entries(&shared).len(), 2);
    }

    #[test]
    fn dropped_fields_are_removed() {
        let both = json!({"metadata": {"name": "d", "labels": {"a": "1", "b": "2"}}});
        let a_only = json!({"metadata": {"name": "d", "labels": {"a": "1"}}});
        let live = apply_deployment(None, both, "m", false).unwrap();
        let next = apply_deployment(Some(&live), a_only, "m", false).unwrap();
        assert_eq!(next["metadata"]["labels"], json!({"a": "1"}));
    }

    #[test]
    fn updates_take_changed_fields() {
        let info = deploys();
        let one = json!({"metadata": {"name": "d"}, "spec": {"replicas": 1}});
        let mut live = apply_deployment(None, one, "a", false).unwrap();
        let old = live.clone();
        live["spec"]["replicas"] = json!(5);
        record_update(&info, "kubectl-edit", Part::Main, Some(&old), &mut live);
        let entries = read_entries(&live);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].manager, "kubectl-edit");
        assert_eq!(entries[0].operation, "Update");
        assert_eq!(
            path_string(&["f:spec".into(), "k:{\"name\":\"c\"}".into()]),
            ".spec[name=\"c\"]"
        );
    }
}
