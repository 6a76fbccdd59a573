//! [`Schema`]: one node of a CRD version's `openAPIV3Schema`, read from JSON the way
//! apiextensions-apiserver reads it into a structural schema and then into the kube-openapi
//! schema its validator runs.
//!
//! Reading never fails and never panics: a keyword of the wrong JSON type is ignored (the
//! real server refuses such a CRD when it decodes it; the fake server's CRD checks, in
//! [`super::crd_checks`], refuse the common mistakes), and what is kept is what validation,
//! pruning and defaulting consult. Formats are normalised as the server's
//! `StripUnsupportedFormatsPostProcessor` does: a format the type does not support is
//! dropped, so it has no effect.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// A `pattern`, compiled once.
#[derive(Debug, Clone)]
pub struct Pattern {
    /// The source, as written in the schema.
    pub source: String,
    /// The compiled expression, or why it does not compile.
    pub compiled: Result<regex::Regex, String>,
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Pattern {
    /// Compiles `source` (Go's RE2 syntax and Rust's `regex` agree on everything but a few
    /// rarely used escapes; classes such as `\d` are Unicode-aware here, ASCII in Go).
    pub fn new(source: &str) -> Self {
        let compiled = regex::Regex::new(source).map_err(|e| describe_regex_error(&e));
        Self {
            source: source.to_string(),
            compiled,
        }
    }
}

/// The last line of a `regex` error (`unclosed character class`), the part that says what
/// is wrong.
fn describe_regex_error(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    last.trim().trim_start_matches("error: ").to_string()
}

/// `additionalProperties`: a schema for every value of a map, or a boolean.
#[derive(Debug, Clone, PartialEq)]
pub enum Additional {
    /// `additionalProperties: true|false`.
    Allows(bool),
    /// `additionalProperties: {schema}`.
    Schema(Box<Schema>),
}

/// The value validations of a node (kube-openapi's `SchemaProps` that check values).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Checks {
    /// `maximum`.
    pub maximum: Option<f64>,
    /// `exclusiveMaximum`.
    pub exclusive_maximum: bool,
    /// `minimum`.
    pub minimum: Option<f64>,
    /// `exclusiveMinimum`.
    pub exclusive_minimum: bool,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `maxLength` (in characters).
    pub max_length: Option<i64>,
    /// `minLength`.
    pub min_length: Option<i64>,
    /// `pattern`.
    pub pattern: Option<Pattern>,
    /// `maxItems`.
    pub max_items: Option<i64>,
    /// `minItems`.
    pub min_items: Option<i64>,
    /// `uniqueItems` (refused in CRDs since 1.18, honoured if present).
    pub unique_items: bool,
    /// `maxProperties`.
    pub max_properties: Option<i64>,
    /// `minProperties`.
    pub min_properties: Option<i64>,
    /// `required`, in order.
    pub required: Vec<String>,
    /// `enum` (an empty list checks nothing, as in kube-openapi).
    pub enum_values: Vec<Value>,
    /// `allOf`.
    pub all_of: Vec<Schema>,
    /// `anyOf`.
    pub any_of: Vec<Schema>,
    /// `oneOf`.
    pub one_of: Vec<Schema>,
    /// `not`.
    pub not: Option<Box<Schema>>,
}

/// One node of a structural schema.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Schema {
    /// The type names, as kube-openapi sees them: empty, one type, or `integer`,`string`
    /// for `x-kubernetes-int-or-string`.
    pub types: Vec<String>,
    /// The format, when the type supports it (see the module documentation).
    pub format: String,
    /// `nullable`.
    pub nullable: bool,
    /// `default`.
    pub default: Option<Value>,
    /// `properties`, sorted by name.
    pub properties: BTreeMap<String, Schema>,
    /// `additionalProperties`.
    pub additional: Option<Additional>,
    /// `items` (a single schema; a list of schemas is not allowed in CRDs and is ignored).
    pub items: Option<Box<Schema>>,
    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub preserve_unknown_fields: bool,
    /// `x-kubernetes-embedded-resource: true`.
    pub embedded_resource: bool,
    /// `x-kubernetes-int-or-string: true`.
    pub int_or_string: bool,
    /// `x-kubernetes-list-type`.
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// Whether `x-kubernetes-validations` (CEL rules, not evaluated here) is set.
    pub has_rules: bool,
    /// The value validations.
    pub checks: Checks,
}

fn int_of(v: Option<&Value>) -> Option<i64> {
    let v = v?;
    v.as_i64()
        .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
}

fn schemas_of(v: Option<&Value>) -> Vec<Schema> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().map(Schema::from_json).collect())
        .unwrap_or_default()
}

/// The strings of a JSON array (other members skipped; not an array: none).
fn strings_of(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

impl Checks {
    /// Reads the value checks of a schema node.
    fn from_map(m: &Map<String, Value>) -> Checks {
        let flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
        Checks {
            maximum: m.get("maximum").and_then(Value::as_f64),
            exclusive_maximum: flag("exclusiveMaximum"),
            minimum: m.get("minimum").and_then(Value::as_f64),
            exclusive_minimum: flag("exclusiveMinimum"),
            multiple_of: m.get("multipleOf").and_then(Value::as_f64),
            max_length: int_of(m.get("maxLength")),
            min_length: int_of(m.get("minLength")),
            pattern: m
                .get("pattern")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
                .map(Pattern::new),
            max_items: int_of(m.get("maxItems")),
            min_items: int_of(m.get("minItems")),
            unique_items: flag("uniqueItems"),
            max_properties: int_of(m.get("maxProperties")),
            min_properties: int_of(m.get("minProperties")),
            required: strings_of(m.get("required")),
            enum_values: m
                .get("enum")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            all_of: schemas_of(m.get("allOf")),
            any_of: schemas_of(m.get("anyOf")),
            one_of: schemas_of(m.get("oneOf")),
            not: m
                .get("not")
                .filter(|v| v.is_object())
                .map(|v| Box::new(Schema::from_json(v))),
        }
    }
}

impl Schema {
    /// Reads a schema node (any JSON value: what is not an object reads as the empty schema).
    pub fn from_json(v: &Value) -> Schema {
        let empty = Map::new();
        let m = v.as_object().unwrap_or(&empty);
        let flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
        let ty = m
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let int_or_string = flag("x-kubernetes-int-or-string");
        let types = if int_or_string {
            vec!["integer".to_string(), "string".to_string()]
        } else if ty.is_empty() {
            Vec::new()
        } else {
            vec![ty.clone()]
        };
        let format = supported_format(
            &types,
            m.get("format").and_then(Value::as_str).unwrap_or(""),
        );
        let properties = m
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| {
                p.iter()
                    .map(|(k, v)| (k.clone(), Schema::from_json(v)))
                    .collect()
            })
            .unwrap_or_default();
        let additional = match m.get("additionalProperties") {
            Some(Value::Bool(b)) => Some(Additional::Allows(*b)),
            Some(v @ Value::Object(_)) => Some(Additional::Schema(Box::new(Schema::from_json(v)))),
            _ => None,
        };
        let items = match m.get("items") {
            Some(v @ Value::Object(_)) => Some(Box::new(Schema::from_json(v))),
            _ => None,
        };
        let checks = Checks::from_map(m);
        Schema {
            types,
            format,
            nullable: flag("nullable"),
            default: m.get("default").cloned(),
            properties,
            additional,
            items,
            preserve_unknown_fields: flag("x-kubernetes-preserve-unknown-fields"),
            embedded_resource: flag("x-kubernetes-embedded-resource"),
            int_or_string,
            list_type: m
                .get("x-kubernetes-list-type")
                .and_then(Value::as_str)
                .map(String::from),
            list_map_keys: strings_of(m.get("x-kubernetes-list-map-keys")),
            has_rules: m
                .get("x-kubernetes-validations")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty()),
            checks,
        }
    }

    /// The single type name, or `""` (no type, or int-or-string).
    pub fn single_type(&self) -> &str {
        match self.types.as_slice() {
            [one] => one,
            _ => "",
        }
    }

    /// Whether the type names include `t`.
    pub fn has_type(&self, t: &str) -> bool {
        self.types.iter().any(|x| x == t)
    }

    /// The schema of the values of a map (`additionalProperties: {schema}`).
    pub fn additional_schema(&self) -> Option<&Schema> {
        match &self.additional {
            Some(Additional::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// The schema of field `key` of an object: its property, or the map value schema.
    pub fn field(&self, key: &str) -> Option<&Schema> {
        self.properties
            .get(key)
            .or_else(|| self.additional_schema())
    }

    /// Whether this node or any below it has CEL rules.
    pub fn has_rules_anywhere(&self) -> bool {
        self.has_rules
            || self.properties.values().any(Schema::has_rules_anywhere)
            || self
                .additional_schema()
                .is_some_and(Schema::has_rules_anywhere)
            || self
                .items
                .as_deref()
                .is_some_and(Schema::has_rules_anywhere)
    }
}

/// The formats apiextensions-apiserver keeps for a type (`StripUnsupportedFormats...`).
fn supported_format(types: &[String], format: &str) -> String {
    if format.is_empty() {
        return String::new();
    }
    let single = match types {
        [one] => one.as_str(),
        [] => "",
        _ => "multiple",
    };
    let keep = match single {
        "" | "string" => super::formats::is_supported_string_format(format),
        "integer" => format == "int32" || format == "int64",
        "number" => format == "float" || format == "double",
        _ => false,
    };
    if keep {
        format.to_string()
    } else {
        String::new()
    }
}

/// The shape most of the schema tests start from.
#[cfg(test)]
impl Schema {
    /// A root object whose only field, `spec`, is an object of these `properties`.
    pub(crate) fn with_spec(properties: Value) -> Schema {
        Schema::from_json(&serde_json::json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": properties}}}))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_every_keyword() {
        let s = Schema::from_json(&json!({
            "type": "object",
            "required": ["a"],
            "minProperties": 1, "maxProperties": 4,
            "properties": {
                "a": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 10,
                      "exclusiveMinimum": true, "multipleOf": 2, "default": 2, "nullable": true},
                "b": {"type": "string", "format": "uuid", "pattern": "^x", "minLength": 1,
                      "maxLength": 3.0, "enum": ["x", "xy"]},
                "c": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                      "maxItems": 2, "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["k"]},
                "d": {"type": "object", "additionalProperties": {"type": "boolean"}},
                "e": {"x-kubernetes-int-or-string": true},
                "f": {"type": "object", "x-kubernetes-embedded-resource": true,
                      "x-kubernetes-preserve-unknown-fields": true,
                      "x-kubernetes-validations": [{"rule": "true"}]}
            }
        }));
        assert_eq!(s.types, ["object"]);
        assert_eq!(s.checks.required, ["a"]);
        assert_eq!(s.checks.min_properties, Some(1));
        let a = &s.properties["a"];
        assert_eq!(a.format, "int32");
        assert_eq!(a.checks.minimum, Some(1.0));
        assert!(a.checks.exclusive_minimum && !a.checks.exclusive_maximum);
        assert_eq!(a.checks.multiple_of, Some(2.0));
        assert_eq!(a.default, Some(json!(2)));
        assert!(a.nullable);
        let b = &s.properties["b"];
        assert_eq!(b.format, "uuid");
        assert_eq!(b.checks.max_length, Some(3));
        assert!(b.checks.pattern.as_ref().unwrap().compiled.is_ok());
        assert_eq!(b.checks.enum_values, [json!("x"), json!("xy")]);
        let c = &s.properties["c"];
        assert_eq!(c.items.as_ref().unwrap().types, ["string"]);
        assert_eq!(c.list_type.as_deref(), Some("map"));
        assert_eq!(c.list_map_keys, ["k"]);
        assert_eq!(
            s.properties["d"].additional_schema().unwrap().types,
            ["boolean"]
        );
        assert_eq!(s.properties["e"].types, ["integer", "string"]);
        let f = &s.properties["f"];
        assert!(f.embedded_resource && f.preserve_unknown_fields && f.has_rules);
        assert!(s.has_rules_anywhere());
        assert_eq!(s.field("a"), Some(a));
        assert_eq!(
            s.properties["d"].field("anything").unwrap().types,
            ["boolean"]
        );
    }

    #[test]
    fn unsupported_formats_are_dropped() {
        let f = |s: Value| Schema::from_json(&s).format;
        assert_eq!(f(json!({"type": "string", "format": "int32"})), "");
        assert_eq!(
            f(json!({"type": "string", "format": "date-time"})),
            "date-time"
        );
        assert_eq!(
            f(json!({"type": "string", "format": "datetime"})),
            "datetime"
        );
        assert_eq!(f(json!({"type": "integer", "format": "int64"})), "int64");
        assert_eq!(f(json!({"type": "integer", "format": "uuid"})), "");
        assert_eq!(f(json!({"type": "number", "format": "double"})), "double");
        assert_eq!(f(json!({"type": "boolean", "format": "int32"})), "");
        assert_eq!(
            f(json!({"x-kubernetes-int-or-string": true, "format": "int32"})),
            ""
        );
    }

    #[test]
    fn bad_schemas_read_without_panicking() {
        for bad in [
            json!(null),
            json!("object"),
            json!([1, 2]),
            json!({"type": 5, "properties": [1], "items": [{"type": "string"}],
                   "required": "a", "enum": "x", "minimum": "1", "maxLength": -1.5,
                   "additionalProperties": "yes", "allOf": {"a": 1}, "not": 3,
                   "pattern": "(["}),
        ] {
            let s = Schema::from_json(&bad);
            assert!(s.items.is_none());
            assert!(s.properties.is_empty());
        }
        let s = Schema::from_json(&json!({"pattern": "(["}));
        assert!(s.checks.pattern.unwrap().compiled.is_err());
    }
}
