//! Pruning: what apiextensions-apiserver drops from a custom resource when it decodes it.
//!
//! - [`prune`]: every field the schema does not specify, recursively through `properties`,
//!   `additionalProperties` and `items`, except below `x-kubernetes-preserve-unknown-fields`
//!   (where only the fields the schema does specify are pruned further). `apiVersion`,
//!   `kind` and `metadata` are kept at the root and in `x-kubernetes-embedded-resource`
//!   objects. The paths of the dropped fields are returned, sorted, as the server reports
//!   them (`spec.items[0].extra`) in warnings or, with `fieldValidation=Strict`, in errors.
//! - [`drop_non_nullable_nulls`]: a `null` where the schema says neither `nullable` nor
//!   `default` is removed (a `null` with a default is defaulted instead).

use serde_json::Value;

use super::structural::{Additional, Schema};

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The path being walked, in the server's notation.
#[derive(Debug, Default)]
struct Walk {
    path: Vec<String>,
    unknown: Vec<String>,
}

impl Walk {
    fn push_key(&mut self, key: &str) -> usize {
        let len = self.path.len();
        if !self.path.is_empty() {
            self.path.push(".".into());
        }
        self.path.push(key.into());
        len
    }

    fn push_index(&mut self, i: usize) -> usize {
        let len = self.path.len();
        self.path.push(format!("[{i}]"));
        len
    }

    fn restore(&mut self, len: usize) {
        self.path.truncate(len);
    }

    fn record(&mut self, key: &str) {
        let len = self.push_key(key);
        self.unknown.push(self.path.concat());
        self.restore(len);
    }
}

/// Prunes a whole custom resource (`obj` is the object, `schema` its version's
/// `openAPIV3Schema`), returning the sorted paths of what was dropped.
pub fn prune(obj: &mut Value, schema: &Schema) -> Vec<String> {
    prune_value(obj, schema, true)
}

/// Prunes any value by its schema; a resource root keeps `apiVersion`, `kind` and
/// `metadata` as an embedded resource does.
pub fn prune_value(obj: &mut Value, schema: &Schema, is_resource_root: bool) -> Vec<String> {
    let mut walk = Walk::default();
    prune_node(obj, Some(schema), is_resource_root, &mut walk);
    walk.unknown.sort();
    walk.unknown
}

/// The schema for the values of `additionalProperties` (none for a boolean).
fn additional_of(s: &Schema) -> Option<Option<&Schema>> {
    match &s.additional {
        None => None,
        Some(Additional::Allows(_)) => Some(None),
        Some(Additional::Schema(a)) => Some(Some(a)),
    }
}

/// `root` marks the resource root, which keeps its meta fields as an embedded resource.
fn prune_node(x: &mut Value, s: Option<&Schema>, root: bool, walk: &mut Walk) {
    if let Some(s) = s.filter(|s| s.preserve_unknown_fields) {
        skip_prune(x, s, root, walk);
        return;
    }
    match x {
        Value::Object(map) => {
            let Some(s) = s else {
                let mut keys: Vec<String> = map.keys().cloned().collect();
                keys.sort();
                for k in keys {
                    walk.record(&k);
                    map.remove(&k);
                }
                return;
            };
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                if (root || s.embedded_resource) && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                let child = if let Some(prop) = s.properties.get(&k) {
                    Some(Some(prop))
                } else {
                    additional_of(s)
                };
                match child {
                    Some(child_schema) => {
                        let len = walk.push_key(&k);
                        if let Some(v) = map.get_mut(&k) {
                            prune_node(v, child_schema, false, walk);
                        }
                        walk.restore(len);
                    }
                    None => {
                        if !META_FIELDS.contains(&k.as_str()) || !walk.path.is_empty() {
                            walk.record(&k);
                        }
                        map.remove(&k);
                    }
                }
            }
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.items.as_deref());
            for (i, v) in items.iter_mut().enumerate() {
                let len = walk.push_index(i);
                prune_node(v, item_schema, false, walk);
                walk.restore(len);
            }
        }
        _ => {}
    }
}

/// Below `x-kubernetes-preserve-unknown-fields`: unknown fields stay, known ones are pruned
/// by their own schemas.
fn skip_prune(x: &mut Value, s: &Schema, root: bool, walk: &mut Walk) {
    match x {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if (root || s.embedded_resource) && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                let child = if let Some(prop) = s.properties.get(k) {
                    Some(Some(prop))
                } else {
                    additional_of(s)
                };
                if let Some(child_schema) = child {
                    let len = walk.push_key(k);
                    prune_node(v, child_schema, false, walk);
                    walk.restore(len);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items.as_deref() {
                for (i, v) in items.iter_mut().enumerate() {
                    let len = walk.push_index(i);
                    skip_prune(v, item_schema, false, walk);
                    walk.restore(len);
                }
            }
        }
        _ => {}
    }
}

/// Removes `null` values whose schema is neither `nullable` nor has a `default` (list
/// items stay: only object fields are removed).
pub fn drop_non_nullable_nulls(x: &mut Value, s: Option<&Schema>) {
    match x {
        Value::Object(map) => {
            map.retain(|k, v| {
                let field = s.and_then(|s| s.field(k));
                !(v.is_null() && field.is_some_and(|f| !f.nullable && f.default.is_none()))
            });
            for (k, v) in map.iter_mut() {
                drop_non_nullable_nulls(v, s.and_then(|s| s.field(k)));
            }
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.items.as_deref());
            for v in items {
                drop_non_nullable_nulls(v, item_schema);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Schema {
        Schema::with_spec(json!({
            "a": {"type": "string"},
            "list": {"type": "array", "items": {"type": "object",
                     "properties": {"k": {"type": "string"}}}},
            "map": {"type": "object", "additionalProperties": {"type": "object",
                    "properties": {"v": {"type": "integer"}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                     "properties": {"known": {"type": "object",
                                    "properties": {"x": {"type": "string"}}}}},
            "emb": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": {"type": "object"}}},
            "opaque": {"type": "object"},
            "scalars": {"type": "array", "items": {"type": "string"}},
            "nul": {"type": "string", "nullable": true},
            "nonnul": {"type": "string"},
            "defaulted": {"type": "string", "default": "d"}
        }))
    }

    #[test]
    fn prunes_unknown_fields_everywhere() {
        let mut obj = json!({
            "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"},
            "extra": 1,
            "spec": {
                "a": "kept", "b": "dropped",
                "list": [{"k": "1", "z": 2}, {"k": "2"}],
                "map": {"one": {"v": 1, "w": 2}, "two": {"v": 2}},
                "free": {"anything": {"deep": true}, "known": {"x": "y", "junk": 1}},
                "emb": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                        "spec": {"any": 1}, "status": {}},
                "opaque": {"gone": 1},
                "scalars": ["a", "b"]
            }
        });
        let unknown = prune(&mut obj, &schema());
        assert_eq!(
            unknown,
            [
                "extra",
                "spec.b",
                "spec.emb.spec.any",
                "spec.emb.status",
                "spec.free.known.junk",
                "spec.list[0].z",
                "spec.map.one.w",
                "spec.opaque.gone",
            ]
        );
        assert_eq!(
            obj,
            json!({
                "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"},
                "spec": {
                    "a": "kept",
                    "list": [{"k": "1"}, {"k": "2"}],
                    "map": {"one": {"v": 1}, "two": {"v": 2}},
                    "free": {"anything": {"deep": true}, "known": {"x": "y"}},
                    "emb": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                            "spec": {}},
                    "opaque": {},
                    "scalars": ["a", "b"]
                }
            })
        );
    }

    #[test]
    fn preserve_unknown_fields_at_the_root_keeps_everything_unspecified() {
        let s = Schema::from_json(&json!({"type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}));
        let mut obj = json!({"anything": {"goes": 1}, "spec": {"a": "x", "b": "y"}});
        assert_eq!(prune(&mut obj, &s), ["spec.b"]);
        assert_eq!(obj, json!({"anything": {"goes": 1}, "spec": {"a": "x"}}));
    }

    #[test]
    fn nested_meta_fields_are_unknown_outside_embedded_resources() {
        let s = Schema::from_json(&json!({"type": "object",
            "properties": {"spec": {"type": "object", "properties": {}}}}));
        let mut obj = json!({"spec": {"metadata": {}, "kind": "x"}});
        assert_eq!(prune(&mut obj, &s), ["spec.kind", "spec.metadata"]);
        assert_eq!(obj, json!({"spec": {}}));
    }

    #[test]
    fn type_mismatches_are_left_to_validation() {
        let mut obj = json!({"spec": "not an object", "status": [1, {"a": 1}]});
        let s = Schema::from_json(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "string"}}},
            "status": {"type": "string"}}}));
        assert_eq!(prune(&mut obj, &s), ["status[1].a"]);
        assert_eq!(obj, json!({"spec": "not an object", "status": [1, {}]}));
    }

    #[test]
    fn nulls() {
        let s = schema();
        let mut obj = json!({"spec": {"nul": null, "nonnul": null, "defaulted": null,
                                      "unknown": null, "scalars": [null]}});
        drop_non_nullable_nulls(&mut obj, Some(&s));
        assert_eq!(
            obj,
            json!({"spec": {"nul": null, "defaulted": null, "unknown": null, "scalars": [null]}})
        );
    }
}
