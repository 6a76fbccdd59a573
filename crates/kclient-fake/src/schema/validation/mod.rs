//! Value validation against a [`Schema`], as kube-openapi's `validate.SchemaValidator` runs
//! it for apiextensions-apiserver, and the translation of its results into field errors
//! (apiextensions' `kubeOpenAPIResultToFieldErrors`), so that messages, causes and their
//! order read as the real server's.
//!
//! Each node runs, in kube-openapi's order: the type check (with `format` for numbers and
//! `nullable`), `anyOf`/`oneOf`/`allOf`/`not`, the string checks (`maxLength`, `minLength`,
//! `pattern`: the first failure only), the string `format`, the number checks (`multipleOf`,
//! `minimum`, `maximum`, with Go's `int64` truncation of the bounds for integer values),
//! the array checks (`items` first, then `minItems`, `maxItems`, `uniqueItems`), `enum`,
//! and the object checks (`minProperties`, `maxProperties`, `additionalProperties`,
//! `properties` in name order, `required`). Go visits properties in random order; here
//! they are visited sorted by name, so messages are stable.
//!
//! Updates ratchet, as with the `CRDValidationRatcheting` feature (on by default): errors
//! under a node whose value did not change from the old object (correlated through object
//! keys and the keys of `x-kubernetes-list-type: map` lists) are dropped.

mod arrays;
mod composition;
mod numbers;
mod objects;
mod ratchet;
mod strings;
#[cfg(test)]
mod tests;

use kclient_core::{go_format, FieldError};
use serde_json::Value;

use super::structural::Schema;
use arrays::array_checks;
use composition::composition;
use numbers::{is_json_integer, number_checks, trunc_i64, Num};
use objects::object_checks;
use ratchet::ratchet_equal;
use strings::{format_check, string_checks};

/// The kind of a kube-openapi error, which decides the field error it becomes.
#[derive(Debug, Clone, PartialEq)]
enum Code {
    /// `RequiredFailCode`.
    Required,
    /// `EnumFailCode`, with the allowed values.
    Enum(Vec<Value>),
    /// `TooLongFailCode`, with the maximum length.
    TooLong(i64),
    /// `MaxItemsFailCode` / `TooManyPropertiesCode`: the size and the maximum.
    TooMany(i64, i64),
    /// `InvalidTypeCode`.
    InvalidType,
    /// Any other `*errors.Validation`.
    Other,
    /// An error that is not an `*errors.Validation` (composition failures, range checks):
    /// reported at the root of the validated value with an empty value.
    Plain,
}

/// One error of a kube-openapi result.
#[derive(Debug, Clone)]
struct OpenApiError {
    code: Code,
    /// The path as kube-openapi names it (`spec.size`, `.spec` for required fields).
    name: String,
    /// The offending value (`None` is Go's nil).
    value: Option<Value>,
    message: String,
}

/// A kube-openapi `Result`: errors (without duplicates) and the match count that `anyOf`
/// and `oneOf` use to pick the failures to report.
#[derive(Debug, Default)]
struct Outcome {
    errors: Vec<OpenApiError>,
    matches: usize,
}

impl Outcome {
    fn add(&mut self, e: OpenApiError) {
        if !self.errors.iter().any(|x| x.message == e.message) {
            self.errors.push(e);
        }
    }

    fn merge(&mut self, other: Outcome) {
        for e in other.errors {
            self.add(e);
        }
        self.matches += other.matches;
    }

    fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    fn single(e: OpenApiError) -> Outcome {
        Outcome {
            errors: vec![e],
            matches: 0,
        }
    }
}

/// The JSON kind of a value as Go's reflection sees an unstructured value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    String,
    Int,
    Float,
    Slice,
    Map,
}

fn kind_of(v: &Value) -> Option<Kind> {
    match v {
        Value::Null => None,
        Value::Bool(_) => Some(Kind::Bool),
        Value::String(_) => Some(Kind::String),
        Value::Number(n) if n.is_i64() => Some(Kind::Int),
        Value::Number(_) => Some(Kind::Float),
        Value::Array(_) => Some(Kind::Slice),
        Value::Object(_) => Some(Kind::Map),
    }
}

/// A numeric value as Go holds it.
/// Where a validation starts: the root of the object (`None`, Go's nil path) or a field
/// (`status`).
#[derive(Debug, Clone, Copy)]
pub struct Root<'a>(pub Option<&'a str>);

/// Validates `value` against `schema`; with `old`, ratchets as an update does.
pub fn validate(
    schema: &Schema,
    value: &Value,
    old: Option<&Value>,
    root: Root<'_>,
) -> Vec<FieldError> {
    let object = At {
        s: schema,
        data: value,
        path: "",
        old,
        top: true,
    };
    let outcome = node(object);
    to_field_errors(outcome, root)
}

fn child_path(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// A value being validated: its node's schema, the value, its path, its correlated old
/// value (when an update reaches it), and whether it is the whole object.
#[derive(Clone, Copy)]
struct At<'a> {
    s: &'a Schema,
    data: &'a Value,
    path: &'a str,
    old: Option<&'a Value>,
    top: bool,
}

impl<'a> At<'a> {
    /// A value inside the object (a property's, an item's).
    fn below(s: &'a Schema, data: &'a Value, path: &'a str, old: Option<&'a Value>) -> Self {
        At {
            s,
            data,
            path,
            old,
            top: false,
        }
    }
}

/// Runs every check of one node (kube-openapi's `SchemaValidator.Validate`), then drops
/// the errors if the node is unchanged from its correlated old value.
fn node(at: At<'_>) -> Outcome {
    let mut out = checks(at);
    if let Some(old) = at.old {
        if !out.is_valid() && ratchet_equal(at.s, at.data, old) {
            out.errors.clear();
        }
    }
    out
}

fn checks(at: At<'_>) -> Outcome {
    let At { s, data, path, .. } = at;
    let mut out = Outcome::default();
    let Some(kind) = kind_of(data) else {
        // nil: only the type and the enum checks run.
        out.merge(type_check(s, data, path));
        out.merge(enum_check(s, data, path));
        return out;
    };
    let type_applies = !s.types.is_empty() || !s.format.is_empty();
    if type_applies {
        out.merge(type_check(s, data, path));
        out.matches += 1;
    }
    out.merge(composition(at));
    out.matches += 1;
    if kind == Kind::String {
        out.merge(string_checks(s, data, path));
        out.matches += 1;
        if !s.format.is_empty() {
            out.merge(format_check(s, data, path));
            out.matches += 1;
        }
    }
    if matches!(kind, Kind::Int | Kind::Float) {
        out.merge(number_checks(s, data, path));
        out.matches += 1;
    }
    if kind == Kind::Slice {
        out.merge(array_checks(at));
        out.matches += 1;
    }
    out.merge(enum_check(s, data, path));
    out.matches += 1;
    if kind == Kind::Map {
        out.merge(object_checks(at));
        out.matches += 1;
    }
    out.matches += 1;
    out
}

fn invalid_type(path: &str, type_name: &str, shown: &str) -> OpenApiError {
    OpenApiError {
        code: Code::InvalidType,
        name: path.to_string(),
        value: Some(Value::String(shown.to_string())),
        message: format!(
            "{path} in body must be of type {type_name}: {}",
            go_format::quote(shown)
        ),
    }
}

/// kube-openapi's `typeValidator`.
fn type_check(s: &Schema, data: &Value, path: &str) -> Outcome {
    let joined = s.types.join(",");
    let Some(kind) = kind_of(data) else {
        if !s.types.is_empty() && !s.has_type("null") && !s.nullable {
            return Outcome::single(invalid_type(path, &joined, "null"));
        }
        return Outcome {
            errors: Vec::new(),
            matches: 1,
        };
    };
    let (sch_type, format) = match kind {
        Kind::Bool => ("boolean", ""),
        Kind::String => ("string", ""),
        Kind::Int => ("integer", "int64"),
        Kind::Float => ("number", "float64"),
        Kind::Slice => ("array", ""),
        Kind::Map => ("object", ""),
    };
    let is_float_int = kind == Kind::Float
        && is_json_integer(data.as_f64().unwrap_or(0.5))
        && s.has_type("integer");
    let is_int_float = kind == Kind::Int && s.has_type("number");
    if kind != Kind::String
        && kind != Kind::Slice
        && !s.format.is_empty()
        && !(s.has_type(sch_type) || format == s.format || is_float_int || is_int_float)
    {
        return Outcome::single(invalid_type(path, &s.format, format));
    }
    let numeric = s.has_type("number") || s.has_type("integer");
    if !numeric && !s.format.is_empty() && (kind == Kind::String || kind == Kind::Slice) {
        return Outcome {
            errors: Vec::new(),
            matches: 1,
        };
    }
    if !(s.has_type(sch_type) || is_float_int || is_int_float) {
        return Outcome::single(invalid_type(path, &joined, sch_type));
    }
    Outcome {
        errors: Vec::new(),
        matches: 1,
    }
}

fn plain(message: String) -> OpenApiError {
    OpenApiError {
        code: Code::Plain,
        name: String::new(),
        value: None,
        message,
    }
}
/// Go's `reflect.Value.Convert` then `DeepEqual`, as kube-openapi matches a value against
/// an enum member.
fn enum_matches(data: &Value, member: &Value) -> bool {
    match (data, member) {
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::Number(d), Value::Number(m)) => {
            let d = Num::of(&Value::Number(d.clone()));
            let m = Num::of(&Value::Number(m.clone()));
            match (d, m) {
                (Some(Num::Int(a)), Some(Num::Int(b))) => a == b,
                (Some(Num::Float(a)), Some(Num::Int(b))) => trunc_i64(a) == b,
                (Some(a), Some(Num::Float(b))) => a.as_f64() == b,
                _ => false,
            }
        }
        // An int64 converts to a string as the rune it encodes.
        (Value::Number(d), Value::String(m)) => match d.as_i64() {
            Some(i) => {
                let c = u32::try_from(i)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}');
                m.chars().eq(std::iter::once(c))
            }
            None => false,
        },
        (a, b) => a == b,
    }
}

fn enum_check(s: &Schema, data: &Value, path: &str) -> Outcome {
    let members = &s.checks.enum_values;
    if members.is_empty() || members.iter().any(|m| enum_matches(data, m)) {
        return Outcome::default();
    }
    let shown: Vec<String> = members.iter().map(go_format::v).collect();
    Outcome::single(OpenApiError {
        code: Code::Enum(members.clone()),
        name: path.to_string(),
        value: (!data.is_null()).then(|| data.clone()),
        message: format!("{path} in body should be one of [{}]", shown.join(" ")),
    })
}

/// A field path below `root` (apimachinery's `field.Path.Child`); Go prints a nil path as
/// `<nil>`.
fn field_path(root: Root<'_>, name: &str) -> String {
    let name = name.strip_prefix('.').unwrap_or(name);
    match (root.0, name.is_empty()) {
        (None, true) => "<nil>".to_string(),
        (Some(r), true) => r.to_string(),
        (None, false) => name.to_string(),
        (Some(r), false) => format!("{r}.{name}"),
    }
}

/// apiextensions' `kubeOpenAPIResultToFieldErrors`.
fn to_field_errors(outcome: Outcome, root: Root<'_>) -> Vec<FieldError> {
    outcome
        .errors
        .into_iter()
        .map(|e| {
            let field = if e.name.is_empty() || e.name == "." {
                field_path(root, "")
            } else {
                field_path(root, &e.name)
            };
            let value = e
                .value
                .clone()
                .unwrap_or_else(|| Value::String(String::new()));
            match e.code {
                Code::Required => FieldError::required(&field, ""),
                Code::Enum(members) => {
                    let supported: Vec<String> = members
                        .iter()
                        .map(|m| match m {
                            Value::String(s) => s.clone(),
                            other => go_format::json(other),
                        })
                        .collect();
                    FieldError::not_supported_value(
                        &field,
                        e.value.as_ref().unwrap_or(&Value::Null),
                        &supported,
                    )
                }
                Code::TooLong(max) => FieldError::too_long(&field, max),
                Code::TooMany(actual, max) => FieldError::too_many(&field, actual, max),
                Code::InvalidType => FieldError::type_invalid(&field, &value, &e.message),
                Code::Other => FieldError::invalid(&field, &value, &e.message),
                Code::Plain => FieldError::invalid(
                    &field_path(root, ""),
                    &Value::String(String::new()),
                    &e.message,
                ),
            }
        })
        .collect()
}
