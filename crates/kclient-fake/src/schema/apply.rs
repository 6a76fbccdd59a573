//! Server-side apply of a custom resource: the applied configuration is first converted to
//! a typed value with the CRD's schema (structured-merge-diff), and a field the schema
//! does not declare fails the request with a `500` before anything else, unlike other
//! writes, which prune it:
//!
//! ```text
//! failed to create typed patch object (ns/name; example.com/v1, Kind=Widget): .spec.colour: field not declared in schema
//! ```
//!
//! As in structured-merge-diff, each object reports at most one undeclared field (the first
//! in name order here; Go's map order is random), and several errors are listed under
//! `errors:`. Type mismatches are left to validation (the real server reports them here
//! too, in structured-merge-diff's own wording).

use serde_json::Value;

use super::embedded::OBJECT_META_FIELDS;
use super::structural::Schema;

/// What the applied configuration's typed conversion found, as one message (`None`: it
/// converts).
pub fn undeclared_fields(schema: &Schema, applied: &Value) -> Option<String> {
    let mut errs = Vec::new();
    walk(applied, Some(schema), true, "", &mut errs);
    match errs.len() {
        0 => None,
        1 => errs.pop(),
        _ => {
            let mut lines = vec!["errors:".to_string()];
            lines.extend(errs.iter().map(|e| format!("  {e}")));
            Some(lines.join("\n"))
        }
    }
}

fn walk(x: &Value, s: Option<&Schema>, resource: bool, path: &str, errs: &mut Vec<String>) {
    let Some(s) = s else { return };
    match x {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let resource = resource || s.embedded_resource;
            let open = s.preserve_unknown_fields || s.additional.is_some();
            let mut reported = false;
            for k in keys {
                let child_path = format!("{path}.{k}");
                let Some(v) = map.get(k.as_str()) else {
                    continue;
                };
                if resource && (k == "apiVersion" || k == "kind") {
                    continue;
                }
                // A resource's metadata converts as ObjectMeta whatever the schema says of
                // it (a CRD may declare `metadata: {type: object}`, as derived ones do):
                // kube-apiserver types it with ObjectMeta's own schema.
                if resource && k == "metadata" {
                    metadata(v, &child_path, errs);
                    continue;
                }
                match s.field(k) {
                    Some(child) => walk(v, Some(child), false, &child_path, errs),
                    None if open => {}
                    None => {
                        if !reported {
                            errs.push(format!("{child_path}: field not declared in schema"));
                            reported = true;
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let element = element(s, item, i);
                walk(
                    item,
                    s.items.as_deref(),
                    false,
                    &format!("{path}{element}"),
                    errs,
                );
            }
        }
        _ => {}
    }
}

/// How structured-merge-diff names a list element: by its keys in a map list, by its value
/// in a set, by its index otherwise.
fn element(s: &Schema, item: &Value, i: usize) -> String {
    match s.list_type.as_deref() {
        Some("map") if !s.list_map_keys.is_empty() => {
            let mut keys: Vec<&String> = s.list_map_keys.iter().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .filter_map(|k| item.get(k.as_str()).map(|v| format!("{k}={v}")))
                .collect();
            format!("[{}]", parts.join(","))
        }
        Some("set") => format!("[={item}]"),
        _ => format!("[{i}]"),
    }
}

fn metadata(v: &Value, path: &str, errs: &mut Vec<String>) {
    let Some(map) = v.as_object() else { return };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    if let Some(k) = keys
        .into_iter()
        .find(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
    {
        errs.push(format!("{path}.{k}: field not declared in schema"));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Schema {
        Schema::with_spec(json!({
            "size": {"type": "integer"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "emb": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": {"type": "object"}}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "list": {"type": "array", "items": {"type": "object",
                     "properties": {"a": {"type": "string"}}}}
        }))
    }

    #[test]
    fn declared_fields_convert() {
        let applied = json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "labels": {}},
            "spec": {"size": 1, "free": {"any": {"thing": 1}}, "labels": {"a": "b"},
                     "emb": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
                     "ports": [{"name": "http"}], "list": [{"a": "x"}]}});
        assert_eq!(undeclared_fields(&schema(), &applied), None);
    }

    #[test]
    fn undeclared_fields_are_reported_once_per_object() {
        let applied = json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"},
            "spec": {"zz": 1, "yy": {"a": 1}, "size": 2}});
        assert_eq!(
            undeclared_fields(&schema(), &applied).as_deref(),
            Some(".spec.yy: field not declared in schema")
        );
        let applied = json!({"metadata": {"name": "n", "junk": 1},
            "spec": {"emb": {"metadata": {"junk": 1}, "zz": 1},
                     "ports": [{"name": "a", "x": 1}], "list": [{"b": 1}]}});
        assert_eq!(
            undeclared_fields(&schema(), &applied).as_deref(),
            Some(
                "errors:\n  .metadata.junk: field not declared in schema\n  .spec.emb.metadata.junk: field not declared in schema\n  .spec.emb.zz: field not declared in schema\n  .spec.list[0].b: field not declared in schema\n  .spec.ports[name=\"a\"].x: field not declared in schema"
            )
        );
    }

    /// A CRD that declares `metadata` (as `#[derive(CustomResource)]` does): its ObjectMeta
    /// fields convert, others do not (kube-apiserver, found by the e2e `extract` scenario).
    #[test]
    fn declared_metadata_converts_as_object_meta() {
        let schema = Schema::from_json(&json!({"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}));
        let applied = json!({"apiVersion": "x/v1", "kind": "X",
            "metadata": {"name": "w", "labels": {"a": "b"}}, "spec": {"size": 1}});
        assert_eq!(undeclared_fields(&schema, &applied), None);
        let applied = json!({"metadata": {"name": "w", "junk": 1}});
        assert_eq!(
            undeclared_fields(&schema, &applied).as_deref(),
            Some(".metadata.junk: field not declared in schema")
        );
    }
}
