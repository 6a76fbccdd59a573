//! [`structural_schema`]: a JSON schema as schemars writes it for Rust types, rewritten into
//! the structural schema kube-apiserver requires of a CustomResourceDefinition version
//! (apiextensions' `validateStructuralInvariants` and
//! `ValidateCustomResourceDefinitionOpenAPISchema`).

use serde_json::{json, Map, Value};

/// Where subschemas are defined in schemars' output (by settings).
const DEFINITION_KEYS: [&str; 3] = ["$defs", "definitions", "components"];

/// Keywords a structural schema has no use for, dropped wherever they appear.
const DROPPED: [&str; 10] = [
    "title",
    "$schema",
    "$id",
    "$comment",
    "examples",
    "readOnly",
    "writeOnly",
    "deprecated",
    "contentEncoding",
    "contentMediaType",
];

/// The integer formats Kubernetes knows; schemars also writes `uint8`, `int16`, `uint64` …
const INTEGER_FORMATS: [&str; 2] = ["int32", "int64"];

/// Rewrites `schema`, a root schema as schemars generates it (any settings; subschemas may
/// be inlined or referenced), into a structural schema. Never fails: what cannot be said
/// structurally is relaxed to what can.
///
/// What schemars writes and a structural schema may not hold, and what becomes of it:
///
/// | schemars (OpenAPI 3.0 settings) | structural |
/// |---|---|
/// | `$ref` into the definitions | the definition, inlined; a type that contains itself becomes, where it recurs, an object that keeps whatever it is given (`x-kubernetes-preserve-unknown-fields`) |
/// | `Option<T>`: `anyOf: [T, {enum: [null]}]`, `type: [T, "null"]` | `T` with `nullable: true` |
/// | a unit enum with documented variants: `oneOf` of one-value string enums | one string `enum` |
/// | an enum with struct variants (externally or internally tagged): `oneOf` of objects | an object with every variant's properties (a tag's values merged into one `enum`), the `oneOf` keeping only each variant's `required` |
/// | `i64 \| String` (untagged) | `x-kubernetes-int-or-string: true` |
/// | other unions of several types, `serde_json::Value` (`{}`, `true`) | any value: `x-kubernetes-preserve-unknown-fields: true` |
/// | a map of free-form values (`additionalProperties: true`) | an object keeping its fields: `x-kubernetes-preserve-unknown-fields: true` |
/// | `additionalProperties: false` beside `properties` (`deny_unknown_fields`) | dropped: the server prunes unknown fields anyway |
/// | a tuple (`items: [A, B]`) | `items: A` when all are alike, else any value per item |
/// | `const: v` | `enum: [v]` |
/// | integer formats Kubernetes does not know (`uint8`, `uint32` …) | dropped (the bounds schemars writes stay) |
/// | `default: null`, `title`, `$schema`, `examples`, `readOnly`, `writeOnly`, `deprecated` | dropped |
///
/// Everything else — descriptions, validations (`minimum`, `maxLength`, `pattern`, `enum`,
/// `format` …), defaults, and every `x-kubernetes-*` extension a type asks for with
/// `#[schemars(extend("x-kubernetes-validations" = [...]))]` — is kept as written.
///
/// ```
/// use serde_json::json;
///
/// // `Option<u8>` as schemars writes it with the OpenAPI 3.0 settings…
/// let schemars = json!({"type": "object", "properties": {
///     "size": {"type": ["integer", "null"], "format": "uint8", "minimum": 0, "maximum": 255},
/// }});
/// // …and as kube-apiserver accepts it.
/// assert_eq!(
///     kclient_core::crd::structural_schema(schemars),
///     json!({"type": "object", "properties": {
///         "size": {"type": "integer", "nullable": true, "minimum": 0, "maximum": 255},
///     }}),
/// );
/// ```
pub fn structural_schema(schema: Value) -> Value {
    let mut root = match schema {
        Value::Object(m) => m,
        other => return rewrite(other, &Map::new(), &mut Vec::new()),
    };
    let mut definitions = Map::new();
    for key in DEFINITION_KEYS {
        match root.remove(key) {
            // OpenAPI 3.0 keeps them under `components/schemas`.
            Some(Value::Object(mut defs)) if key == "components" => {
                if let Some(Value::Object(schemas)) = defs.remove("schemas") {
                    definitions.extend(schemas);
                }
            }
            Some(Value::Object(defs)) => definitions.extend(defs),
            _ => {}
        }
    }
    typed(rewrite(Value::Object(root), &definitions, &mut Vec::new()))
}

/// A schema that describes values (a property, an item, a map's values, the root) must
/// say their type: an object with properties, an array with items, or any value.
fn typed(schema: Value) -> Value {
    let Value::Object(mut m) = schema else {
        return schema;
    };
    let has = |k: &str| m.contains_key(k);
    if !has("type")
        && m.get("x-kubernetes-int-or-string") != Some(&Value::Bool(true))
        && m.get("x-kubernetes-preserve-unknown-fields") != Some(&Value::Bool(true))
    {
        if has("properties") || has("additionalProperties") {
            m.insert("type".into(), "object".into());
        } else if has("items") {
            m.insert("type".into(), "array".into());
        } else {
            m.insert(
                "x-kubernetes-preserve-unknown-fields".into(),
                Value::Bool(true),
            );
        }
    }
    Value::Object(m)
}

/// Any value at all (`x-kubernetes-preserve-unknown-fields` without a type).
fn any_value(description: Option<Value>) -> Value {
    let mut m = Map::new();
    if let Some(d) = description {
        m.insert("description".into(), d);
    }
    m.insert(
        "x-kubernetes-preserve-unknown-fields".into(),
        Value::Bool(true),
    );
    Value::Object(m)
}

/// The definition a `$ref` names (`#/$defs/Name`, `#/definitions/Name`,
/// `#/components/schemas/Name`).
fn definition_name(reference: &str) -> &str {
    reference.rsplit('/').next().unwrap_or(reference)
}

/// One node, and below it.
fn rewrite(node: Value, defs: &Map<String, Value>, resolving: &mut Vec<String>) -> Value {
    let mut m = match node {
        Value::Object(m) => m,
        // `true` (anything) and, meaningless in a CRD, `false`.
        _ => return any_value(None),
    };
    if let Some(Value::String(reference)) = m.remove("$ref") {
        let name = definition_name(&reference).to_owned();
        let Some(Value::Object(target)) = defs.get(&name) else {
            return any_value(m.remove("description"));
        };
        if resolving.contains(&name) {
            // A type that contains itself has no finite structural schema.
            let mut recursion = Map::new();
            recursion.insert("type".into(), "object".into());
            recursion.insert(
                "x-kubernetes-preserve-unknown-fields".into(),
                Value::Bool(true),
            );
            if let Some(Value::Bool(true)) = m.get("nullable") {
                recursion.insert("nullable".into(), Value::Bool(true));
            }
            return Value::Object(recursion);
        }
        // The siblings of the reference (a field's description, `nullable`, its default)
        // win over the definition's.
        let mut merged = target.clone();
        merged.extend(m);
        resolving.push(name);
        let rewritten = rewrite(Value::Object(merged), defs, resolving);
        resolving.pop();
        return rewritten;
    }
    for key in DROPPED {
        m.remove(key);
    }
    if let Some(value) = m.remove("const") {
        m.insert("enum".into(), Value::Array(vec![value]));
    }
    if m.get("default") == Some(&Value::Null) {
        m.remove("default");
    }
    normalize_type(&mut m);
    merge_single_all_of(&mut m, defs, resolving);
    for key in ["anyOf", "oneOf"] {
        lift_null_branches(&mut m, key, defs, resolving);
    }
    if m.is_empty() || m.keys().all(|k| k == "description") {
        // `{}`: any value (serde_json::Value).
        return any_value(m.remove("description"));
    }
    rewrite_children(&mut m, defs, resolving);
    for key in ["anyOf", "oneOf"] {
        if !rewrite_union(&mut m, key) {
            let description = m.remove("description");
            let nullable = m.remove("nullable");
            let mut any = any_value(description);
            if let (Some(n), Value::Object(a)) = (nullable, &mut any) {
                a.insert("nullable".into(), n);
            }
            return any;
        }
    }
    rewrite_additional_properties(&mut m);
    drop_unknown_format(&mut m);
    exclusive_bounds_as_flags(&mut m);
    if let Some(Value::Array(values)) = m.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    Value::Object(m)
}

/// `type: [T, "null"]` is `type: T` with `nullable: true`; `type: ["integer", "string"]` is
/// an int-or-string; other lists of types are any value.
fn normalize_type(m: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = m.get("type") else {
        return;
    };
    let mut types: Vec<String> = types
        .iter()
        .filter_map(|t| t.as_str().map(str::to_owned))
        .collect();
    if types.iter().any(|t| t == "null") {
        types.retain(|t| t != "null");
        m.insert("nullable".into(), Value::Bool(true));
    }
    types.sort();
    match types.as_slice() {
        [] => {
            m.remove("type");
        }
        [one] => {
            m.insert("type".into(), Value::String(one.clone()));
        }
        [a, b] if a == "integer" && b == "string" => {
            m.remove("type");
            m.insert("x-kubernetes-int-or-string".into(), Value::Bool(true));
        }
        _ => {
            m.remove("type");
            m.insert(
                "x-kubernetes-preserve-unknown-fields".into(),
                Value::Bool(true),
            );
        }
    }
}

/// `allOf: [X]` (schemars' way to give a reference siblings) is `X` with the siblings.
fn merge_single_all_of(
    m: &mut Map<String, Value>,
    defs: &Map<String, Value>,
    resolving: &mut Vec<String>,
) {
    let single = matches!(m.get("allOf"), Some(Value::Array(items)) if items.len() == 1);
    if !single {
        return;
    }
    let Some(Value::Array(mut items)) = m.remove("allOf") else {
        return;
    };
    if let Value::Object(inner) = rewrite(items.remove(0), defs, resolving) {
        for (k, v) in inner {
            m.entry(k).or_insert(v);
        }
    }
}

/// Whether `branch` only allows null (`{type: "null"}`, `{enum: [null]}`, `{const: null}`).
fn is_null_branch(branch: &Value) -> bool {
    let Some(b) = branch.as_object() else {
        return false;
    };
    b.get("type") == Some(&Value::String("null".into()))
        || matches!(b.get("enum"), Some(Value::Array(v)) if v.iter().all(Value::is_null))
        || b.get("const") == Some(&Value::Null)
}

/// `anyOf: [X, null]` (an `Option`) is `X` with `nullable: true`.
fn lift_null_branches(
    m: &mut Map<String, Value>,
    key: &str,
    defs: &Map<String, Value>,
    resolving: &mut Vec<String>,
) {
    let Some(Value::Array(branches)) = m.get_mut(key) else {
        return;
    };
    let before = branches.len();
    branches.retain(|b| !is_null_branch(b));
    let left = branches.len();
    if left == before {
        return;
    }
    m.insert("nullable".into(), Value::Bool(true));
    if left == 1 {
        let Some(Value::Array(mut branches)) = m.remove(key) else {
            return;
        };
        if let Value::Object(inner) = rewrite(branches.remove(0), defs, resolving) {
            for (k, v) in inner {
                m.entry(k).or_insert(v);
            }
        }
    } else if left == 0 {
        m.remove(key);
    }
}

/// Rewrites the subschemas of a node.
fn rewrite_children(
    m: &mut Map<String, Value>,
    defs: &Map<String, Value>,
    resolving: &mut Vec<String>,
) {
    if let Some(Value::Object(properties)) = m.get_mut("properties") {
        for value in properties.values_mut() {
            *value = typed(rewrite(value.take(), defs, resolving));
        }
    }
    if let Some(additional @ Value::Object(_)) = m.get_mut("additionalProperties") {
        *additional = typed(rewrite(additional.take(), defs, resolving));
    }
    match m.get_mut("items") {
        Some(Value::Array(items)) => {
            // A tuple: one schema for every item, alike or any value.
            let rewritten: Vec<Value> = items
                .drain(..)
                .map(|i| typed(rewrite(i, defs, resolving)))
                .collect();
            let item = match rewritten.first() {
                Some(first) if rewritten.iter().all(|i| i == first) => first.clone(),
                _ => any_value(None),
            };
            m.insert("items".into(), item);
        }
        Some(items @ Value::Object(_)) => *items = typed(rewrite(items.take(), defs, resolving)),
        _ => {}
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = m.get_mut(key) {
            for branch in branches.iter_mut() {
                *branch = rewrite(branch.take(), defs, resolving);
            }
        }
    }
    if let Some(not @ Value::Object(_)) = m.get_mut("not") {
        *not = rewrite(not.take(), defs, resolving);
    }
}

/// The JSON type a rewritten branch describes (`"object"` for one with properties).
fn branch_type(branch: &Map<String, Value>) -> Option<&str> {
    match branch.get("type").and_then(Value::as_str) {
        Some(t) => Some(t),
        None if branch.contains_key("properties") => Some("object"),
        None if branch.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) => {
            Some("int-or-string")
        }
        None => None,
    }
}

/// Makes the union under `key` structural in place; `false` when it cannot be and the node
/// must accept any value instead.
fn rewrite_union(m: &mut Map<String, Value>, key: &str) -> bool {
    let Some(Value::Array(branches)) = m.get(key) else {
        return true;
    };
    let branches: Vec<Map<String, Value>> = branches
        .iter()
        .filter_map(|b| b.as_object().cloned())
        .collect();
    let types: Vec<Option<&str>> = branches.iter().map(branch_type).collect();
    let own_type = m.get("type").and_then(Value::as_str).map(str::to_owned);
    let all = |t: &str| types.iter().all(|bt| *bt == Some(t));
    if all("string") && branches.iter().all(|b| b.contains_key("enum")) {
        // A unit enum whose variants have docs: one enum of every variant's value.
        let mut values = Vec::new();
        for b in &branches {
            if let Some(Value::Array(vs)) = b.get("enum") {
                for v in vs {
                    if !values.contains(v) {
                        values.push(v.clone());
                    }
                }
            }
        }
        m.remove(key);
        m.insert("type".into(), "string".into());
        m.insert("enum".into(), Value::Array(values));
        return true;
    }
    if all("object") && own_type.as_deref().is_none_or(|t| t == "object") {
        return hoist_object_variants(m, key, branches);
    }
    let mut kinds: Vec<&str> = types.iter().map(|t| t.unwrap_or("?")).collect();
    kinds.sort_unstable();
    kinds.dedup();
    if matches!(kinds.as_slice(), ["integer", "string"] | ["int-or-string"]) {
        m.remove(key);
        m.remove("type");
        m.insert("x-kubernetes-int-or-string".into(), Value::Bool(true));
        return true;
    }
    false
}

/// An enum with struct variants: the node describes every variant's properties, and the
/// union keeps only what tells the variants apart (their `required` lists).
fn hoist_object_variants(
    m: &mut Map<String, Value>,
    key: &str,
    branches: Vec<Map<String, Value>>,
) -> bool {
    let mut properties = match m.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    let mut requirements = Vec::new();
    for mut branch in branches {
        if let Some(Value::Object(props)) = branch.remove("properties") {
            for (name, schema) in props {
                match properties.get_mut(&name) {
                    None => {
                        properties.insert(name, schema);
                    }
                    Some(existing) if *existing == schema => {}
                    Some(existing) => {
                        if !merge_string_enums(existing, &schema) {
                            // Two variants disagree on a field's type: it takes any value.
                            *existing = any_value(None);
                        }
                    }
                }
            }
        }
        let required = branch
            .remove("required")
            .unwrap_or(Value::Array(Vec::new()));
        requirements.push(required);
    }
    m.insert("type".into(), "object".into());
    m.insert("properties".into(), Value::Object(properties));
    m.remove("additionalProperties");
    let distinguishable = requirements
        .iter()
        .all(|r| matches!(r, Value::Array(fields) if !fields.is_empty()));
    if distinguishable {
        let union = requirements
            .into_iter()
            .map(|required| json!({ "required": required }))
            .collect();
        m.insert(key.into(), Value::Array(union));
    } else {
        m.remove(key);
    }
    true
}

/// Two string enums of one property (an internally tagged enum's tag), merged into
/// `existing`; `false` if they are not both string enums.
fn merge_string_enums(existing: &mut Value, other: &Value) -> bool {
    let string_enum = |v: &Value| {
        v.get("type") == Some(&Value::String("string".into())) && v.get("enum").is_some()
    };
    if !string_enum(existing) || !string_enum(other) {
        return false;
    }
    let additions: Vec<Value> = other["enum"].as_array().cloned().unwrap_or_default();
    if let Some(Value::Array(values)) = existing.get_mut("enum") {
        for v in additions {
            if !values.contains(&v) {
                values.push(v);
            }
        }
    }
    if let Some(e) = existing.as_object_mut() {
        e.remove("description");
    }
    true
}

/// `additionalProperties: true` keeps any field (`x-kubernetes-preserve-unknown-fields`);
/// `false` beside `properties` is what pruning does anyway, and the two may not be set
/// together.
fn rewrite_additional_properties(m: &mut Map<String, Value>) {
    match m.get("additionalProperties") {
        Some(Value::Bool(true)) => {
            m.remove("additionalProperties");
            m.insert("type".into(), "object".into());
            m.insert(
                "x-kubernetes-preserve-unknown-fields".into(),
                Value::Bool(true),
            );
        }
        Some(Value::Bool(false)) => {
            m.remove("additionalProperties");
        }
        Some(Value::Object(schema)) if m.contains_key("properties") => {
            // Properties and a schema for the rest cannot be said together: the named
            // properties win (serde's flatten of a map beside fields).
            let _ = schema;
            m.remove("additionalProperties");
            m.insert(
                "x-kubernetes-preserve-unknown-fields".into(),
                Value::Bool(true),
            );
        }
        _ => {}
    }
}

/// JSON Schema 2019+'s `exclusiveMinimum: n` is OpenAPI 3.0's `minimum: n` with
/// `exclusiveMinimum: true` (likewise for the maximum).
fn exclusive_bounds_as_flags(m: &mut Map<String, Value>) {
    for (exclusive, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if let Some(n @ Value::Number(_)) = m.get(exclusive).cloned() {
            m.insert(bound.into(), n);
            m.insert(exclusive.into(), Value::Bool(true));
        }
    }
}

/// Drops integer formats Kubernetes does not know.
fn drop_unknown_format(m: &mut Map<String, Value>) {
    let integer = m.get("type").and_then(Value::as_str) == Some("integer");
    let unknown =
        matches!(m.get("format"), Some(Value::String(f)) if !INTEGER_FORMATS.contains(&f.as_str()));
    if integer && unknown {
        m.remove("format");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_become_nullable() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": ["string", "null"]},
            "inner": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}], "description": "An inner."},
        }, "$defs": {"Inner": {"type": "object", "properties": {"a": {"type": "string"}}}}});
        assert_eq!(
            structural_schema(schema),
            json!({"type": "object", "properties": {
                "name": {"type": "string", "nullable": true},
                "inner": {"type": "object", "description": "An inner.", "nullable": true,
                          "properties": {"a": {"type": "string"}}},
            }})
        );
    }

    #[test]
    fn documented_unit_variants_become_one_enum() {
        let schema = json!({"oneOf": [
            {"type": "string", "enum": ["Stopped"]},
            {"description": "Running doc", "type": "string", "enum": ["Running"]},
        ], "description": "A phase."});
        assert_eq!(
            structural_schema(schema),
            json!({"type": "string", "enum": ["Stopped", "Running"], "description": "A phase."})
        );
    }

    #[test]
    fn struct_variants_are_hoisted() {
        let schema = json!({"oneOf": [
            {"type": "object", "properties": {"type": {"type": "string", "enum": ["A"]}, "x": {"type": "integer"}}, "required": ["type", "x"]},
            {"type": "object", "properties": {"type": {"type": "string", "enum": ["B"]}, "y": {"type": "string"}}, "required": ["type", "y"]},
        ]});
        assert_eq!(
            structural_schema(schema),
            json!({"type": "object", "properties": {
                "type": {"type": "string", "enum": ["A", "B"]},
                "x": {"type": "integer"},
                "y": {"type": "string"},
            }, "oneOf": [{"required": ["type", "x"]}, {"required": ["type", "y"]}]})
        );
    }

    #[test]
    fn mixed_unions_take_any_value_and_int_or_string_is_recognised() {
        let mixed = json!({"oneOf": [
            {"type": "string", "enum": ["baz"]},
            {"type": "object", "properties": {"bar": {"type": "string"}}, "required": ["bar"]},
        ], "description": "d"});
        assert_eq!(
            structural_schema(mixed),
            json!({"description": "d", "x-kubernetes-preserve-unknown-fields": true})
        );
        let untagged =
            json!({"anyOf": [{"type": "integer", "format": "int64"}, {"type": "string"}]});
        assert_eq!(
            structural_schema(untagged),
            json!({"x-kubernetes-int-or-string": true})
        );
    }

    #[test]
    fn recursion_free_form_values_tuples_and_formats() {
        let schema = json!({"type": "object", "properties": {
            "any": {},
            "map": {"type": "object", "additionalProperties": true},
            "tuple": {"type": "array", "items": [{"type": "integer"}, {"type": "string"}], "minItems": 2},
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "string"}]},
            "small": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255, "default": null},
            "rec": {"$ref": "#/components/schemas/Rec"},
        }, "components": {"schemas": {"Rec": {"type": "object", "properties": {
            "next": {"anyOf": [{"$ref": "#/components/schemas/Rec"}, {"enum": [null], "nullable": true}]},
        }}}}});
        assert_eq!(
            structural_schema(schema),
            json!({"type": "object", "properties": {
                "any": {"x-kubernetes-preserve-unknown-fields": true},
                "map": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "tuple": {"type": "array", "items": {"x-kubernetes-preserve-unknown-fields": true}, "minItems": 2},
                "pair": {"type": "array", "items": {"type": "string"}},
                "small": {"type": "integer", "minimum": 0, "maximum": 255},
                "rec": {"type": "object", "properties": {
                    "next": {"type": "object", "nullable": true, "x-kubernetes-preserve-unknown-fields": true},
                }},
            }})
        );
    }

    #[test]
    fn extensions_and_validations_are_kept() {
        let schema = json!({"type": "integer", "minimum": 1, "maximum": 5,
            "x-kubernetes-validations": [{"rule": "self > 0"}], "title": "Size", "const": 3});
        assert_eq!(
            structural_schema(schema),
            json!({"type": "integer", "minimum": 1, "maximum": 5, "enum": [3],
                   "x-kubernetes-validations": [{"rule": "self > 0"}]})
        );
    }
}
