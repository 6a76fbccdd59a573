//! Strategic merge patch for the built-in types, from a table of the list merge keys of
//! `k8s.io/api` (there is no OpenAPI schema here):
//!
//! | list | strategy |
//! |---|---|
//! | `containers`, `initContainers`, `ephemeralContainers` | merge by `name` |
//! | container `ports` | merge by `containerPort`; service `ports` by `port` |
//! | `env`, `volumes`, `imagePullSecrets`, `resourceClaims`, `hostAliases` (by `ip`) | merge by key |
//! | `volumeMounts` (`mountPath`), `volumeDevices` (`devicePath`) | merge by key |
//! | `ownerReferences` (`uid`), `conditions` (`type`), `readinessGates` (`conditionType`) | merge by key |
//! | `finalizers` | merge as a set of strings |
//! | anything else (`tolerations`, `args`, `command`, …) | replaced (atomic) |
//!
//! Directives: `$patch: replace` and `$patch: delete` in maps and list elements,
//! `$deleteFromPrimitiveList/<field>`, `$retainKeys`, and `$setElementOrder/<field>` (accepted
//! and dropped; the merged order is the original's with new elements appended).

use kclient_core::ApiError;
use serde_json::{Map, Value};

/// How a list field merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStrategy {
    /// Elements are maps merged by this key.
    MergeKey(&'static str),
    /// Elements are primitives kept as a set.
    Set,
    /// The patch's list replaces the original.
    Replace,
}

/// The merge strategy of list `field` at `path` (the field names leading to it).
pub fn list_strategy(path: &[String], field: &str) -> ListStrategy {
    let parent = path.last().map(String::as_str).unwrap_or("");
    let in_container = path.iter().any(|p| {
        matches!(
            p.as_str(),
            "containers" | "initContainers" | "ephemeralContainers"
        )
    });
    match field {
        "containers" | "initContainers" | "ephemeralContainers" => ListStrategy::MergeKey("name"),
        "ports" if in_container => ListStrategy::MergeKey("containerPort"),
        "ports" if parent == "spec" => ListStrategy::MergeKey("port"),
        "env" | "volumes" | "imagePullSecrets" | "resourceClaims" => ListStrategy::MergeKey("name"),
        "volumeMounts" => ListStrategy::MergeKey("mountPath"),
        "volumeDevices" => ListStrategy::MergeKey("devicePath"),
        "hostAliases" => ListStrategy::MergeKey("ip"),
        "ownerReferences" if parent == "metadata" => ListStrategy::MergeKey("uid"),
        "conditions" => ListStrategy::MergeKey("type"),
        "readinessGates" => ListStrategy::MergeKey("conditionType"),
        "finalizers" if parent == "metadata" => ListStrategy::Set,
        _ => ListStrategy::Replace,
    }
}

fn is_directive(key: &str) -> bool {
    key == "$patch"
        || key == "$retainKeys"
        || key.starts_with("$setElementOrder/")
        || key.starts_with("$deleteFromPrimitiveList/")
}

/// A patch value with its directives and `null`s removed (what it contributes when the
/// original has nothing there).
fn strip(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, v)| !is_directive(k) && !v.is_null())
                .map(|(k, v)| (k.clone(), strip(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(
            a.iter()
                .filter(|e| e.get("$patch").is_none())
                .map(strip)
                .collect(),
        ),
        other => other.clone(),
    }
}

fn bad(why: impl Into<String>) -> ApiError {
    ApiError::bad_request(why.into())
}

/// Merges `patch` into `original` (`None`: the map is deleted).
fn merge_map(
    original: &Map<String, Value>,
    patch: &Map<String, Value>,
    path: &mut Vec<String>,
) -> Result<Option<Map<String, Value>>, ApiError> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            return match strip(&Value::Object(patch.clone())) {
                Value::Object(m) => Ok(Some(m)),
                _ => Ok(Some(Map::new())),
            }
        }
        Some("delete") => return Ok(None),
        Some("merge") | None => {}
        Some(other) => return Err(bad(format!("Unknown patch type: {other}"))),
    }
    let mut out = original.clone();
    for (k, v) in patch {
        if is_directive(k) {
            continue;
        }
        if v.is_null() {
            out.remove(k);
            continue;
        }
        let merged = match out.get(k) {
            Some(orig) => {
                path.push(k.clone());
                let merged = merge_field(orig, v, path, k);
                path.pop();
                merged?
            }
            None => Some(strip(v)),
        };
        match merged {
            Some(m) => {
                out.insert(k.clone(), m);
            }
            None => {
                out.remove(k);
            }
        }
    }
    for (k, v) in patch {
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            let remove = v
                .as_array()
                .ok_or_else(|| bad(format!("{k} must be a list")))?;
            if let Some(list) = out.get_mut(field).and_then(Value::as_array_mut) {
                list.retain(|e| !remove.contains(e));
            }
        }
    }
    if let Some(retain) = patch.get("$retainKeys") {
        let keys: Vec<&str> = retain
            .as_array()
            .ok_or_else(|| bad("$retainKeys must be a list"))?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        out.retain(|k, _| keys.contains(&k.as_str()));
    }
    Ok(Some(out))
}

fn merge_field(
    original: &Value,
    patch: &Value,
    path: &mut Vec<String>,
    field: &str,
) -> Result<Option<Value>, ApiError> {
    match (original, patch) {
        (Value::Object(o), Value::Object(p)) => Ok(merge_map(o, p, path)?.map(Value::Object)),
        (Value::Array(o), Value::Array(p)) => {
            let parent = &path[..path.len().saturating_sub(1)];
            let strategy = list_strategy(parent, field);
            Ok(Some(Value::Array(merge_list(o, p, strategy, path)?)))
        }
        (_, p) => Ok(Some(strip(p))),
    }
}

fn merge_list(
    original: &[Value],
    patch: &[Value],
    strategy: ListStrategy,
    path: &mut Vec<String>,
) -> Result<Vec<Value>, ApiError> {
    if patch
        .iter()
        .any(|e| e.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        return Ok(patch
            .iter()
            .filter(|e| e.get("$patch").is_none())
            .map(strip)
            .collect());
    }
    match strategy {
        ListStrategy::Replace => Ok(patch.iter().map(strip).collect()),
        ListStrategy::Set => {
            let mut out = original.to_vec();
            for e in patch {
                if !out.contains(e) {
                    out.push(e.clone());
                }
            }
            Ok(out)
        }
        ListStrategy::MergeKey(key) => {
            let mut out = original.to_vec();
            for e in patch {
                let Some(pm) = e.as_object() else {
                    return Err(bad(format!(
                        "unable to find api field in struct for the list element {e}"
                    )));
                };
                let Some(kv) = pm.get(key) else {
                    return Err(bad(format!(
                        "map: {} does not contain declared merge key: {key}",
                        Value::Object(pm.clone())
                    )));
                };
                let pos = out.iter().position(|o| o.get(key) == Some(kv));
                if pm.get("$patch").and_then(Value::as_str) == Some("delete") {
                    out.retain(|o| o.get(key) != Some(kv));
                    continue;
                }
                match pos {
                    Some(i) => {
                        let merged = match out[i].as_object() {
                            Some(om) => merge_map(om, pm, path)?,
                            None => Some(pm.clone()),
                        };
                        match merged {
                            Some(m) => out[i] = Value::Object(m),
                            None => {
                                out.remove(i);
                            }
                        }
                    }
                    None => out.push(strip(e)),
                }
            }
            Ok(out)
        }
    }
}

/// Applies a strategic merge patch document to `target`.
pub fn apply(target: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let patch: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    let Value::Object(p) = &patch else {
        return Err(ApiError::bad_request(
            "error decoding patch: a strategic merge patch must be a JSON object",
        ));
    };
    let empty = Map::new();
    let o = target.as_object().unwrap_or(&empty);
    Ok(Value::Object(
        merge_map(o, p, &mut Vec::new())?.unwrap_or_default(),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn smp(target: Value, patch: Value) -> Value {
        apply(&target, patch.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn containers_merge_by_name() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
            {"name": "b", "image": "b:1"}
        ]}});
        let out = smp(
            pod,
            json!({"spec": {"containers": [
                {"name": "a", "image": "a:2", "env": [{"name": "Y", "value": "2"}]},
                {"name": "c", "image": "c:1"},
                {"name": "b", "$patch": "delete"}
            ]}}),
        );
        assert_eq!(
            out,
            json!({"spec": {"containers": [
                {"name": "a", "image": "a:2", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
                {"name": "c", "image": "c:1"}
            ]}})
        );
    }

    #[test]
    fn ports_volumes_and_atomic_lists() {
        let pod = json!({"spec": {
            "containers": [{"name": "a", "ports": [{"containerPort": 80}], "args": ["x"]}],
            "tolerations": [{"key": "a"}],
            "volumes": [{"name": "v1"}]
        }});
        let out = smp(
            pod,
            json!({"spec": {
                "containers": [{"name": "a", "ports": [{"containerPort": 443}], "args": ["y"]}],
                "tolerations": [{"key": "b"}],
                "volumes": [{"name": "v2"}]
            }}),
        );
        assert_eq!(
            out["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 80}, {"containerPort": 443}])
        );
        assert_eq!(out["spec"]["containers"][0]["args"], json!(["y"]));
        assert_eq!(out["spec"]["tolerations"], json!([{"key": "b"}]));
        assert_eq!(
            out["spec"]["volumes"],
            json!([{"name": "v1"}, {"name": "v2"}])
        );
    }

    #[test]
    fn directives() {
        let obj = json!({"metadata": {"finalizers": ["a", "b"], "labels": {"x": "1", "y": "2"}},
                         "spec": {"template": {"a": 1, "b": 2}}});
        let out = smp(
            obj,
            json!({"metadata": {"finalizers": ["c"], "$deleteFromPrimitiveList/finalizers": ["a"],
                                 "labels": {"x": null}},
                   "spec": {"template": {"$patch": "replace", "c": 3}}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["b", "c"]));
        assert_eq!(out["metadata"]["labels"], json!({"y": "2"}));
        assert_eq!(out["spec"]["template"], json!({"c": 3}));
        let out = smp(
            json!({"spec": {"a": 1, "b": 2}}),
            json!({"spec": {"$retainKeys": ["b"], "b": 3}}),
        );
        assert_eq!(out, json!({"spec": {"b": 3}}));
        let out = smp(
            json!({"spec": {"a": 1}}),
            json!({"spec": {"$patch": "delete"}}),
        );
        assert_eq!(out, json!({}));
    }

    #[test]
    fn bad_patches() {
        assert_eq!(apply(&json!({}), b"[1]").unwrap_err().code(), 400);
        let err = apply(
            &json!({"spec": {"containers": []}}),
            br#"{"spec": {"containers": [{"image": "x"}]}}"#,
        )
        .unwrap_err();
        assert_eq!(err.code(), 400);
    }
}
