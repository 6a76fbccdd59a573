//! Defaulting: `default` values from the schema, applied as apiextensions-apiserver's
//! `structuraldefaulting.Default` applies them.
//!
//! An object gets the default of every property it lacks (or holds as `null` when the
//! property is not `nullable`), then each field is defaulted by its own schema, so defaults
//! nest: a defaulted `{}` receives the defaults of its properties. A `null` map value or
//! list item whose schema is not `nullable` is replaced by that schema's default (or stays
//! `null` when there is none). Defaults are copied, never shared.

use serde_json::Value;

use super::structural::Schema;

fn is_non_nullable_null(x: Option<&Value>, s: &Schema) -> bool {
    matches!(x, Some(Value::Null)) && !s.nullable
}

/// Applies the defaults of `s` to `x`, recursively.
pub fn apply(x: &mut Value, s: &Schema) {
    match x {
        Value::Object(map) => {
            for (k, prop) in &s.properties {
                let Some(default) = &prop.default else {
                    continue;
                };
                let current = map.get(k);
                if current.is_none() || is_non_nullable_null(current, prop) {
                    map.insert(k.clone(), default.clone());
                }
            }
            let additional = s.additional_schema();
            for (k, v) in map.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    apply(v, prop);
                } else if let Some(a) = additional {
                    if is_non_nullable_null(Some(v), a) {
                        *v = a.default.clone().unwrap_or(Value::Null);
                    }
                    apply(v, a);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = s.items.as_deref() else {
                return;
            };
            for v in items.iter_mut() {
                if is_non_nullable_null(Some(v), item_schema) {
                    *v = item_schema.default.clone().unwrap_or(Value::Null);
                }
                apply(v, item_schema);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn defaults_nest_and_replace_non_nullable_nulls() {
        let s = Schema::from_json(&json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "default": {}, "properties": {
                "mode": {"type": "string", "default": "fast"},
                "limits": {"type": "object", "default": {"cpu": 1},
                           "properties": {"cpu": {"type": "integer"},
                                          "mem": {"type": "integer", "default": 64}}},
                "nullable": {"type": "string", "nullable": true, "default": "n"},
                "items": {"type": "array", "items": {"type": "object",
                          "properties": {"k": {"type": "string", "default": "kd"}}}},
                "names": {"type": "array", "items": {"type": "string", "default": "x"}},
                "map": {"type": "object", "additionalProperties": {"type": "object",
                        "default": {"a": 1}, "properties": {"a": {"type": "integer"},
                        "b": {"type": "integer", "default": 2}}}},
                "kept": {"type": "string", "default": "unused"}
            }}}
        }));
        let mut obj = json!({});
        apply(&mut obj, &s);
        assert_eq!(
            obj,
            json!({"spec": {"mode": "fast", "limits": {"cpu": 1, "mem": 64},
                            "nullable": "n", "kept": "unused"}})
        );
        let mut obj = json!({"spec": {"mode": null, "nullable": null, "kept": "mine",
                                      "items": [{}, {"k": "own"}], "names": [null, "y"],
                                      "map": {"one": null, "two": {"a": 5}}}});
        apply(&mut obj, &s);
        assert_eq!(
            obj,
            json!({"spec": {"mode": "fast", "nullable": null, "kept": "mine",
                            "limits": {"cpu": 1, "mem": 64},
                            "items": [{"k": "kd"}, {"k": "own"}], "names": ["x", "y"],
                            "map": {"one": {"a": 1, "b": 2}, "two": {"a": 5, "b": 2}}}})
        );
    }

    #[test]
    fn values_of_the_wrong_type_are_left_alone() {
        let s = Schema::from_json(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}}}));
        let mut obj = json!({"spec": "text"});
        apply(&mut obj, &s);
        assert_eq!(obj, json!({"spec": "text"}));
        let mut obj = json!(["not", "an", "object"]);
        apply(&mut obj, &s);
        assert_eq!(obj, json!(["not", "an", "object"]));
    }
}
