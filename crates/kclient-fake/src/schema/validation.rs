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

use kclient_core::{go_format, FieldError};
use serde_json::{Map, Value};

use super::structural::{Additional, Schema};

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
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn of(v: &Value) -> Option<Num> {
        let n = v.as_number()?;
        Some(match n.as_i64() {
            Some(i) => Num::Int(i),
            None => Num::Float(n.as_f64().unwrap_or(0.0)),
        })
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    fn value(self) -> Value {
        match self {
            Num::Int(i) => Value::from(i),
            Num::Float(f) => float_value(f),
        }
    }
}

fn float_value(f: f64) -> Value {
    serde_json::Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// swag's `IsFloat64AJSONInteger`: an integer in [-(2^53-1), 2^53-1], up to a relative error.
pub(crate) fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    let rounded = f.round();
    if f == rounded {
        return true;
    }
    if rounded == 0.0 {
        return false;
    }
    (f - rounded).abs() < 1e-9 * rounded.abs()
}

/// Go's `int64(f)` for a float (truncation; out-of-range values saturate here, where Go's
/// result is unspecified).
fn trunc_i64(f: f64) -> i64 {
    f as i64
}

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
    let outcome = node(schema, value, "", old, true);
    to_field_errors(outcome, root)
}

fn child_path(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// Runs every check of one node (kube-openapi's `SchemaValidator.Validate`), then drops
/// the errors if the node is unchanged from its correlated old value.
fn node(s: &Schema, data: &Value, path: &str, old: Option<&Value>, top: bool) -> Outcome {
    let mut out = checks(s, data, path, old, top);
    if let Some(old) = old {
        if !out.is_valid() && ratchet_equal(s, data, old) {
            out.errors.clear();
        }
    }
    out
}

fn checks(s: &Schema, data: &Value, path: &str, old: Option<&Value>, top: bool) -> Outcome {
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
    out.merge(composition(s, data, path, old, top));
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
        out.merge(array_checks(s, data, path, old));
        out.matches += 1;
    }
    out.merge(enum_check(s, data, path));
    out.matches += 1;
    if kind == Kind::Map {
        out.merge(object_checks(s, data, path, old, top));
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

/// `anyOf`, `oneOf`, `allOf` and `not` (kube-openapi's `schemaPropsValidator`).
///
/// The alternatives are checked at the same node, with the same correlation to the old
/// value (their own errors are not ratcheted separately: the node's are).
fn composition(s: &Schema, data: &Value, path: &str, old: Option<&Value>, top: bool) -> Outcome {
    let c = &s.checks;
    let mut main = Outcome::default();
    let quoted = go_format::quote(path);
    if !c.any_of.is_empty() {
        let mut best: Option<Outcome> = None;
        let mut first_success: Option<Outcome> = None;
        let mut succeeded = false;
        for sub in &c.any_of {
            let r = checks(sub, data, path, old, top);
            if r.is_valid() {
                best = None;
                succeeded = true;
                first_success.get_or_insert(r);
                break;
            }
            if best.as_ref().is_none_or(|b| r.matches > b.matches) {
                best = Some(r);
            }
        }
        if !succeeded {
            main.add(plain(format!(
                "{quoted} must validate at least one schema (anyOf)"
            )));
        }
        if let Some(b) = best {
            main.merge(b);
        } else if let Some(f) = first_success {
            main.merge(f);
        }
    }
    if !c.one_of.is_empty() {
        let mut best: Option<Outcome> = None;
        let mut first_success: Option<Outcome> = None;
        let mut validated = 0;
        for sub in &c.one_of {
            let r = checks(sub, data, path, old, top);
            if r.is_valid() {
                validated += 1;
                best = None;
                if first_success.is_none() {
                    first_success = Some(r);
                }
                continue;
            }
            if validated == 0 && best.as_ref().is_none_or(|b| r.matches > b.matches) {
                best = Some(r);
            }
        }
        if validated != 1 {
            let detail = if validated == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {validated} valid alternatives")
            };
            main.add(plain(format!(
                "{quoted} must validate one and only one schema (oneOf). {detail}"
            )));
            if let Some(b) = best {
                main.merge(b);
            }
        } else if let Some(f) = first_success {
            main.merge(f);
        }
    }
    if !c.all_of.is_empty() {
        let mut validated = 0;
        for sub in &c.all_of {
            let r = checks(sub, data, path, old, top);
            if r.is_valid() {
                validated += 1;
            }
            main.merge(r);
        }
        if validated != c.all_of.len() {
            let detail = if validated == 0 {
                ". None validated"
            } else {
                ""
            };
            main.add(plain(format!(
                "{quoted} must validate all the schemas (allOf){detail}"
            )));
        }
    }
    if let Some(not) = &c.not {
        if checks(not, data, path, old, top).is_valid() {
            main.add(plain(format!(
                "{quoted} must not validate the schema (not)"
            )));
        }
    }
    main
}

/// `maxLength`, `minLength`, `pattern`: the first failure only.
fn string_checks(s: &Schema, data: &Value, path: &str) -> Outcome {
    let c = &s.checks;
    let text = data.as_str().unwrap_or("");
    let chars = text.chars().count() as i64;
    if let Some(max) = c.max_length {
        if chars > max {
            return Outcome::single(OpenApiError {
                code: Code::TooLong(max),
                name: path.to_string(),
                value: Some(data.clone()),
                message: format!("{path} in body should be at most {max} chars long"),
            });
        }
    }
    if let Some(min) = c.min_length {
        if chars < min {
            return Outcome::single(OpenApiError {
                code: Code::Other,
                name: path.to_string(),
                value: Some(data.clone()),
                message: format!("{path} in body should be at least {min} chars long"),
            });
        }
    }
    if let Some(pattern) = &c.pattern {
        let shown = match &pattern.compiled {
            Ok(re) if re.is_match(text) => return Outcome::default(),
            Ok(_) => pattern.source.clone(),
            Err(why) => format!("{}, but pattern is invalid: {why}", pattern.source),
        };
        return Outcome::single(OpenApiError {
            code: Code::Other,
            name: path.to_string(),
            value: Some(data.clone()),
            message: format!("{path} in body should match '{shown}'"),
        });
    }
    Outcome::default()
}

fn format_check(s: &Schema, data: &Value, path: &str) -> Outcome {
    let text = data.as_str().unwrap_or("");
    if super::formats::is_supported_string_format(&s.format)
        && !super::formats::is_valid(&s.format, text)
    {
        return Outcome::single(invalid_type(path, &s.format, text));
    }
    Outcome::default()
}

/// swag's conversions behind `IsValueValidAgainstRange`: does the number fit the type and
/// format the schema declares? `None` when it does.
fn range_error(
    n: Num,
    type_name: &str,
    format: &str,
    prefix: &str,
    path: &str,
) -> Option<OpenApiError> {
    let rep = match n {
        Num::Int(i) => i.to_string(),
        // strconv.FormatFloat(f, 'f', -1, 64): plain notation, shortest digits.
        Num::Float(f) => plain_float(f),
    };
    let fits = match type_name {
        "integer" => match format {
            "int32" => rep.parse::<i32>().is_ok(),
            _ => rep.parse::<i64>().is_ok(),
        },
        _ => match format {
            "float" | "float32" => rep.parse::<f64>().is_ok_and(|f| f.abs() <= f32::MAX as f64),
            _ => true,
        },
    };
    if fits {
        return None;
    }
    let message = if format.is_empty() {
        format!("{prefix} value must be of type {type_name} (default format) in {path}")
    } else {
        format!("{prefix} value must be of type {type_name} with format {format} in {path}")
    };
    Some(plain(message))
}

/// `strconv.FormatFloat(f, 'f', -1, 64)`: Rust's `Display` of an `f64` also prints the
/// shortest round-trip digits without an exponent.
fn plain_float(f: f64) -> String {
    if f.is_finite() {
        format!("{f}")
    } else {
        go_format::float(f)
    }
}

fn num_error(path: &str, value: Value, message: String) -> OpenApiError {
    OpenApiError {
        code: Code::Other,
        name: path.to_string(),
        value: Some(value),
        message,
    }
}

/// `multipleOf`, `minimum`, `maximum` (kube-openapi's `numberValidator`).
fn number_checks(s: &Schema, data: &Value, path: &str) -> Outcome {
    let c = &s.checks;
    let Some(n) = Num::of(data) else {
        return Outcome::default();
    };
    let (type_name, format) = match s.single_type() {
        "integer" => (
            "integer",
            if matches!(s.format.as_str(), "int32" | "int64") {
                s.format.as_str()
            } else {
                ""
            },
        ),
        "number" => (
            "number",
            if matches!(s.format.as_str(), "float" | "double") {
                s.format.as_str()
            } else {
                ""
            },
        ),
        _ => ("", ""),
    };
    let mut out = Outcome::default();
    if let Some(e) = range_error(n, type_name, format, "Checked", path) {
        out.add(e);
    }
    let mut multiple = Outcome::default();
    if let Some(factor) = c.multiple_of {
        let bad_bound = range_error(Num::Float(factor), type_name, format, "MultipleOf", path);
        let native = bad_bound.is_none();
        if let Some(e) = bad_bound {
            multiple.add(e);
        }
        let as_float = |data: f64| -> Option<OpenApiError> {
            if factor <= 0.0 {
                return Some(num_error(
                    path,
                    float_value(factor),
                    format!(
                        "factor MultipleOf declared for {path} must be positive: {}",
                        go_format::float(factor)
                    ),
                ));
            }
            let mult = if factor < 1.0 {
                1.0 / factor * data
            } else {
                data / factor
            };
            (!is_json_integer(mult)).then(|| {
                num_error(
                    path,
                    float_value(data),
                    format!(
                        "{path} in body should be a multiple of {}",
                        go_format::float(factor)
                    ),
                )
            })
        };
        let e = match (native, n) {
            (true, Num::Int(i)) => {
                let f = trunc_i64(factor);
                if f <= 0 {
                    Some(num_error(
                        path,
                        Value::from(f),
                        format!("factor MultipleOf declared for {path} must be positive: {f}"),
                    ))
                } else if i.wrapping_rem(f) != 0 {
                    Some(num_error(
                        path,
                        Value::from(i),
                        format!("{path} in body should be a multiple of {f}"),
                    ))
                } else {
                    None
                }
            }
            (true, Num::Float(f)) => as_float(f),
            (false, n) => as_float(n.as_f64()),
        };
        if let Some(e) = e {
            multiple.add(e);
        }
    }
    let bound = |b: f64, exclusive: bool, upper: bool, prefix: &str| -> Outcome {
        let mut r = Outcome::default();
        let bad_bound = range_error(Num::Float(b), type_name, format, prefix, path);
        let native = bad_bound.is_none();
        if let Some(e) = bad_bound {
            r.add(e);
        }
        let (data, bound_shown, failed) = match (native, n) {
            (true, Num::Int(i)) => {
                let b = trunc_i64(b);
                let failed = if upper {
                    (!exclusive && i > b) || (exclusive && i >= b)
                } else {
                    (!exclusive && i < b) || (exclusive && i <= b)
                };
                (Num::Int(i), b.to_string(), failed)
            }
            (_, n) => {
                let d = n.as_f64();
                let failed = if upper {
                    (!exclusive && d > b) || (exclusive && d >= b)
                } else {
                    (!exclusive && d < b) || (exclusive && d <= b)
                };
                (Num::Float(d), go_format::float(b), failed)
            }
        };
        if failed {
            let relation = match (upper, exclusive) {
                (true, false) => "less than or equal to",
                (true, true) => "less than",
                (false, false) => "greater than or equal to",
                (false, true) => "greater than",
            };
            r.add(num_error(
                path,
                data.value(),
                format!("{path} in body should be {relation} {bound_shown}"),
            ));
        }
        r
    };
    let maximum = c
        .maximum
        .map(|m| bound(m, c.exclusive_maximum, true, "Maximum boundary"))
        .unwrap_or_default();
    let minimum = c
        .minimum
        .map(|m| bound(m, c.exclusive_minimum, false, "Minimum boundary"))
        .unwrap_or_default();
    out.merge(multiple);
    out.merge(minimum);
    out.merge(maximum);
    out.matches += 1;
    out
}

/// `items`, `minItems`, `maxItems`, `uniqueItems`.
fn array_checks(s: &Schema, data: &Value, path: &str, old: Option<&Value>) -> Outcome {
    let c = &s.checks;
    let items = data.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut out = Outcome::default();
    if let Some(item_schema) = &s.items {
        let correlated = MapListIndex::new(s, old);
        for (i, item) in items.iter().enumerate() {
            let old_item = correlated.as_ref().and_then(|m| m.get(item));
            out.merge(node(
                item_schema,
                item,
                &format!("{path}[{i}]"),
                old_item,
                false,
            ));
        }
    }
    let size = items.len() as i64;
    if let Some(min) = c.min_items {
        if size < min {
            out.add(OpenApiError {
                code: Code::Other,
                name: path.to_string(),
                value: Some(Value::from(size)),
                message: format!("{path} in body should have at least {min} items"),
            });
        }
    }
    if let Some(max) = c.max_items {
        if size > max {
            out.add(OpenApiError {
                code: Code::TooMany(size, max),
                name: path.to_string(),
                value: Some(Value::from(size)),
                message: format!("{path} in body should have at most {max} items"),
            });
        }
    }
    if c.unique_items {
        let duplicate = items
            .iter()
            .enumerate()
            .any(|(i, a)| items[..i].iter().any(|b| b == a));
        if duplicate {
            out.add(OpenApiError {
                code: Code::Other,
                name: path.to_string(),
                value: None,
                message: format!("{path} in body shouldn't contain duplicates"),
            });
        }
    }
    out.matches += 1;
    out
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

/// `minProperties`, `maxProperties`, `additionalProperties`, `properties`, `required`.
fn object_checks(s: &Schema, data: &Value, path: &str, old: Option<&Value>, top: bool) -> Outcome {
    let c = &s.checks;
    let empty = Map::new();
    let map = data.as_object().unwrap_or(&empty);
    let old_map = old.and_then(Value::as_object);
    // The old value of a field, when correlation reaches it (kube-openapi's Key()).
    let old_of = |key: &str, has_schema: bool| -> Option<&Value> {
        if !has_schema || (top && (key == "kind" || key == "apiVersion")) {
            return None;
        }
        old_map?.get(key)
    };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    let size = map.len() as i64;
    let mut out = Outcome::default();
    if let Some(min) = c.min_properties {
        if size < min {
            out.add(OpenApiError {
                code: Code::Other,
                name: path.to_string(),
                value: Some(Value::from(size)),
                message: format!("{path} in body should have at least {min} properties"),
            });
        }
    }
    if let Some(max) = c.max_properties {
        if size > max {
            out.add(OpenApiError {
                code: Code::TooMany(size, max),
                name: path.to_string(),
                value: Some(Value::from(size)),
                message: format!("{path} in body should have at most {max} properties"),
            });
        }
    }
    match &s.additional {
        Some(Additional::Allows(false)) => {
            for k in &keys {
                if !s.properties.contains_key(k.as_str()) {
                    out.add(OpenApiError {
                        code: Code::Other,
                        name: path.to_string(),
                        value: Some(Value::String((*k).clone())),
                        message: format!("{path}.{k} in body is a forbidden property"),
                    });
                }
            }
        }
        Some(Additional::Schema(additional)) => {
            for k in &keys {
                if s.properties.contains_key(k.as_str()) {
                    continue;
                }
                if let Some(v) = map.get(k.as_str()) {
                    let old_v = old_of(k, true);
                    out.merge(node(additional, v, &format!("{path}.{k}"), old_v, false));
                }
            }
        }
        _ => {}
    }
    for (name, prop) in &s.properties {
        if let Some(v) = map.get(name) {
            let old_v = old_of(name, true);
            out.merge(node(prop, v, &child_path(path, name), old_v, false));
        }
    }
    for k in &c.required {
        if !map.contains_key(k) {
            out.add(OpenApiError {
                code: Code::Required,
                name: format!("{path}.{k}"),
                value: None,
                message: format!("{path}.{k} in body is required"),
            });
        }
    }
    out
}

/// The old items of an `x-kubernetes-list-type: map` list, found by key (the only lists
/// whose items ratchet individually).
struct MapListIndex<'a> {
    keys: &'a [String],
    old: &'a [Value],
}

impl<'a> MapListIndex<'a> {
    fn new(s: &'a Schema, old: Option<&'a Value>) -> Option<Self> {
        let old = old?.as_array()?;
        if s.list_type.as_deref() != Some("map") || s.list_map_keys.is_empty() || old.is_empty() {
            return None;
        }
        Some(Self {
            keys: &s.list_map_keys,
            old,
        })
    }

    /// The composite key of an item, when every key field is a scalar.
    fn key_of(&self, item: &Value) -> Option<Vec<Value>> {
        let m = item.as_object()?;
        self.keys
            .iter()
            .map(|k| match m.get(k)? {
                v @ (Value::Bool(_) | Value::Number(_) | Value::String(_)) => Some(v.clone()),
                _ => None,
            })
            .collect()
    }

    fn get(&self, item: &Value) -> Option<&'a Value> {
        let key = self.key_of(item)?;
        self.old
            .iter()
            .find(|o| self.key_of(o).as_ref() == Some(&key))
    }
}

/// Whether a node is unchanged for ratcheting (apiserver's `CorrelatedObject.CachedDeepEqual`):
/// map-list items compare by key, object fields only where the schema describes them.
fn ratchet_equal(s: &Schema, new: &Value, old: &Value) -> bool {
    match (new, old) {
        (Value::Null, Value::Null) => true,
        (Value::Array(n), Value::Array(o)) => {
            if n.len() != o.len() {
                return false;
            }
            match (MapListIndex::new(s, Some(old)), &s.items) {
                (Some(index), Some(items)) => n.iter().all(|item| {
                    index
                        .get(item)
                        .is_some_and(|old_item| ratchet_equal(items, item, old_item))
                }),
                _ => n == o,
            }
        }
        (Value::Object(n), Value::Object(o)) => {
            n.len() == o.len()
                && n.iter().all(|(k, v)| match (o.get(k), s.field(k)) {
                    (Some(ov), Some(fs)) => ratchet_equal(fs, v, ov),
                    _ => false,
                })
        }
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        (a, b) => a == b,
    }
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The schema the real server was probed with (kube-apiserver v1.37).
    fn probe() -> Schema {
        Schema::from_json(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "xmin": {"type": "integer", "minimum": 1, "exclusiveMinimum": true,
                         "maximum": 10, "exclusiveMaximum": true},
                "num": {"type": "number", "minimum": 0.5, "maximum": 1000000, "multipleOf": 0.25},
                "mult": {"type": "integer", "multipleOf": 3},
                "i32": {"type": "integer", "format": "int32"},
                "colour": {"type": "string", "enum": ["red", "blue"]},
                "ienum": {"type": "integer", "enum": [1, 2]},
                "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                "flag": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
                "labels": {"type": "object", "additionalProperties": {"type": "string"},
                           "minProperties": 1, "maxProperties": 2},
                "ios": {"x-kubernetes-int-or-string": true},
                "uuid": {"type": "string", "format": "uuid"},
                "date": {"type": "string", "format": "date-time"},
                "mlist": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "required": ["name"],
                                    "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}}
            }},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"},
                                                        "count": {"type": "integer", "minimum": 0}}}
        }}))
    }

    fn spec(spec: Value) -> Value {
        json!({"apiVersion": "p/v1", "kind": "Thing", "metadata": {"name": "bad"}, "spec": spec})
    }

    /// `field: message` and the cause type of each error.
    fn errors_of(spec_value: Value) -> Vec<(String, &'static str)> {
        validate(&probe(), &spec(spec_value), None, Root(None))
            .into_iter()
            .map(|e| (e.full(), e.cause_type))
            .collect()
    }

    fn one(spec_value: Value) -> (String, &'static str) {
        let mut all = errors_of(spec_value.clone());
        assert_eq!(all.len(), 1, "{spec_value}: {all:?}");
        all.remove(0)
    }

    #[test]
    fn messages_as_the_server_words_them() {
        // Every expectation below is what kube-apiserver v1.37.1 answered.
        let cases: Vec<(Value, &str, &str)> = vec![
            (json!({"size": 3, "colour": "green"}),
             r#"spec.colour: Unsupported value: "green": supported values: "red", "blue""#, "FieldValueNotSupported"),
            (json!({"size": 0}),
             "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1", "FieldValueInvalid"),
            (json!({"size": 11}),
             "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10", "FieldValueInvalid"),
            (json!({"size": "three"}),
             r#"spec.size: Invalid value: "string": spec.size in body must be of type integer: "string""#, "FieldValueTypeInvalid"),
            (json!({}), "spec.size: Required value", "FieldValueRequired"),
            (json!({"size": 1, "xmin": 1}),
             "spec.xmin: Invalid value: 1: spec.xmin in body should be greater than 1", "FieldValueInvalid"),
            (json!({"size": 1, "xmin": 10}),
             "spec.xmin: Invalid value: 10: spec.xmin in body should be less than 10", "FieldValueInvalid"),
            (json!({"size": 1, "num": 0.6}),
             "spec.num: Invalid value: 0.6: spec.num in body should be a multiple of 0.25", "FieldValueInvalid"),
            (json!({"size": 1, "mult": 4}),
             "spec.mult: Invalid value: 4: spec.mult in body should be a multiple of 3", "FieldValueInvalid"),
            (json!({"size": 1, "i32": 3_000_000_000_i64}),
             r#"<nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.i32"#, "FieldValueInvalid"),
            (json!({"size": 1, "ienum": 3}),
             r#"spec.ienum: Unsupported value: 3: supported values: "1", "2""#, "FieldValueNotSupported"),
            (json!({"size": 1, "name": "a"}),
             r#"spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long"#, "FieldValueInvalid"),
            (json!({"size": 1, "name": "abcdef"}),
             "spec.name: Too long: may not be more than 5 bytes", "FieldValueTooLong"),
            (json!({"size": 1, "name": "AB"}),
             r#"spec.name: Invalid value: "AB": spec.name in body should match '^[a-z]+$'"#, "FieldValueInvalid"),
            (json!({"size": 1, "flag": "yes"}),
             r#"spec.flag: Invalid value: "string": spec.flag in body must be of type boolean: "string""#, "FieldValueTypeInvalid"),
            (json!({"size": 1, "tags": []}),
             "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items", "FieldValueInvalid"),
            (json!({"size": 1, "tags": ["a", "b", "c", "d"]}),
             "spec.tags: Too many: 4: must have at most 3 items", "FieldValueTooMany"),
            (json!({"size": 1, "tags": ["a", 1]}),
             r#"spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: "integer""#, "FieldValueTypeInvalid"),
            (json!({"size": 1, "tags": "a"}),
             r#"spec.tags: Invalid value: "string": spec.tags in body must be of type array: "string""#, "FieldValueTypeInvalid"),
            (json!({"size": 1, "labels": {}}),
             "spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties", "FieldValueInvalid"),
            (json!({"size": 1, "labels": {"a": "1", "b": "2", "c": "3"}}),
             "spec.labels: Too many: 3: must have at most 2 items", "FieldValueTooMany"),
            (json!({"size": 1, "labels": {"a": 1}}),
             r#"spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer""#, "FieldValueTypeInvalid"),
            (json!({"size": 1, "labels": "x"}),
             r#"spec.labels: Invalid value: "string": spec.labels in body must be of type object: "string""#, "FieldValueTypeInvalid"),
            (json!({"size": 1, "ios": true}),
             r#"spec.ios: Invalid value: "boolean": spec.ios in body must be of type integer,string: "boolean""#, "FieldValueTypeInvalid"),
            (json!({"size": 1, "ios": 1.5}),
             r#"spec.ios: Invalid value: "number": spec.ios in body must be of type integer,string: "number""#, "FieldValueTypeInvalid"),
            (json!({"size": 1, "uuid": "nope"}),
             r#"spec.uuid: Invalid value: "nope": spec.uuid in body must be of type uuid: "nope""#, "FieldValueTypeInvalid"),
            (json!({"size": 1, "date": "nope"}),
             r#"spec.date: Invalid value: "nope": spec.date in body must be of type date-time: "nope""#, "FieldValueTypeInvalid"),
            (json!({"size": 1, "uuid": 5}),
             r#"spec.uuid: Invalid value: "int64": spec.uuid in body must be of type uuid: "int64""#, "FieldValueTypeInvalid"),
            (json!({"size": 1, "mlist": [{"v": 1}]}),
             "spec.mlist[0].name: Required value", "FieldValueRequired"),
        ];
        for (spec_value, message, cause) in cases {
            assert_eq!(one(spec_value), (message.to_string(), cause));
        }
    }

    #[test]
    fn several_errors_in_the_servers_order() {
        assert_eq!(
            errors_of(json!({"size": 3.5})),
            [
                (r#"spec.size: Invalid value: "number": spec.size in body must be of type integer: "number""#.to_string(), "FieldValueTypeInvalid"),
                (r#"<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.size"#.to_string(), "FieldValueInvalid"),
            ]
        );
        assert_eq!(
            errors_of(json!({"size": 1, "num": 0.3})),
            [
                ("spec.num: Invalid value: 0.3: spec.num in body should be a multiple of 0.25".to_string(), "FieldValueInvalid"),
                ("spec.num: Invalid value: 0.3: spec.num in body should be greater than or equal to 0.5".to_string(), "FieldValueInvalid"),
            ]
        );
        // An int64 against a float multipleOf: Go truncates the factor to 0.
        assert_eq!(
            errors_of(json!({"size": 1, "num": 2_000_000})),
            [
                ("spec.num: Invalid value: 0: factor MultipleOf declared for spec.num must be positive: 0".to_string(), "FieldValueInvalid"),
                ("spec.num: Invalid value: 2000000: spec.num in body should be less than or equal to 1000000".to_string(), "FieldValueInvalid"),
            ]
        );
        assert_eq!(
            errors_of(json!({"size": 1, "ienum": "x"})),
            [
                (r#"spec.ienum: Invalid value: "string": spec.ienum in body must be of type integer: "string""#.to_string(), "FieldValueTypeInvalid"),
                (r#"spec.ienum: Unsupported value: "x": supported values: "1", "2""#.to_string(), "FieldValueNotSupported"),
            ]
        );
    }

    #[test]
    fn valid_values_pass() {
        assert!(
            errors_of(json!({"size": 3.0, "ios": "5", "num": 0.75, "mult": 9,
            "colour": "blue", "name": "abc", "tags": ["a"], "labels": {"a": "b"},
            "uuid": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "date": "2024-01-02T03:04:05Z",
            "mlist": [{"name": "a"}]}))
            .is_empty()
        );
        // Arrays pass the type check of a string with a format, as in kube-openapi.
        assert!(errors_of(json!({"size": 1, "uuid": ["x"]})).is_empty());
    }

    #[test]
    fn status_is_validated_below_its_own_root() {
        let s = probe();
        let status_schema = &s.properties["status"];
        let got: Vec<String> = validate(
            status_schema,
            &json!({"ready": "no", "count": -1}),
            None,
            Root(Some("status")),
        )
        .iter()
        .map(FieldError::full)
        .collect();
        assert_eq!(
            got,
            [
                "status.count: Invalid value: -1: count in body should be greater than or equal to 0",
                r#"status.ready: Invalid value: "string": ready in body must be of type boolean: "string""#,
            ]
        );
    }

    #[test]
    fn nulls_and_nullable() {
        let s = Schema::from_json(&json!({"type": "object", "properties": {
            "a": {"type": "string"},
            "b": {"type": "string", "nullable": true},
            "c": {"type": "string", "nullable": true, "enum": ["x"]},
            "l": {"type": "array", "items": {"type": "string"}}}}));
        let got: Vec<String> = validate(
            &s,
            &json!({"a": null, "b": null, "c": null, "l": [null]}),
            None,
            Root(None),
        )
        .iter()
        .map(FieldError::full)
        .collect();
        assert_eq!(
            got,
            [
                r#"a: Invalid value: "null": a in body must be of type string: "null""#,
                r#"c: Unsupported value: null: supported values: "x""#,
                r#"l[0]: Invalid value: "null": l[0] in body must be of type string: "null""#,
            ]
        );
    }

    #[test]
    fn composition() {
        let s = Schema::from_json(&json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
            "anyOf": [{"properties": {"a": {"maxLength": 1}}}, {"properties": {"a": {"minLength": 5}}}],
            "allOf": [{"properties": {"b": {"pattern": "^b"}}}],
            "not": {"required": ["c"]}}}}));
        let full = |v: Value| -> Vec<String> {
            validate(&s, &json!({"spec": v}), None, Root(None))
                .iter()
                .map(FieldError::full)
                .collect()
        };
        assert!(full(json!({"a": "x"})).is_empty());
        assert_eq!(
            full(json!({"a": "xy", "b": "zz", "c": 1})),
            [
                r#"<nil>: Invalid value: "": "spec" must validate at least one schema (anyOf)"#,
                "spec.a: Too long: may not be more than 1 byte",
                r#"<nil>: Invalid value: "": "spec" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
                r#"spec.b: Invalid value: "zz": spec.b in body should match '^b'"#,
                r#"<nil>: Invalid value: "": "spec" must validate all the schemas (allOf). None validated"#,
                r#"<nil>: Invalid value: "": "spec" must not validate the schema (not)"#,
            ]
        );
        assert_eq!(
            full(json!({})),
            [
                r#"<nil>: Invalid value: "": "spec" must validate one and only one schema (oneOf). Found none valid"#,
                "spec.a: Required value",
            ]
        );
    }

    #[test]
    fn ratcheting_keeps_unchanged_errors_quiet() {
        // As observed on the real server: a CRD tightened after objects were stored.
        let s = Schema::from_json(&json!({"type": "object", "properties": {"spec": {
            "type": "object", "required": ["must"], "properties": {
                "size": {"type": "integer", "minimum": 5},
                "other": {"type": "string"},
                "items": {"type": "array", "items": {"type": "object",
                          "properties": {"n": {"type": "integer", "minimum": 5}}}},
                "keyed": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["k"],
                          "items": {"type": "object", "properties": {
                              "k": {"type": "string"}, "n": {"type": "integer", "minimum": 5}}}}}}}}));
        let old = json!({"metadata": {"resourceVersion": "1"}, "spec": {"size": 0, "other": "a",
            "items": [{"n": 0}, {"n": 0}], "keyed": [{"k": "a", "n": 0}, {"k": "b", "n": 9}]}});
        let update = |f: &dyn Fn(&mut Value)| -> Vec<String> {
            let mut new = old.clone();
            new["metadata"]["resourceVersion"] = json!("2");
            f(&mut new);
            validate(&s, &new, Some(&old), Root(None))
                .iter()
                .map(FieldError::full)
                .collect()
        };
        assert_eq!(
            update(&|n| n["spec"]["other"] = json!("b")),
            ["spec.must: Required value"]
        );
        assert_eq!(
            update(&|n| n["spec"]["items"][1]["n"] = json!(1)),
            [
                "spec.items[0].n: Invalid value: 0: spec.items[0].n in body should be greater than or equal to 5",
                "spec.items[1].n: Invalid value: 1: spec.items[1].n in body should be greater than or equal to 5",
                "spec.must: Required value",
            ]
        );
        assert_eq!(
            update(&|n| n["spec"]["size"] = json!(1)),
            [
                "spec.size: Invalid value: 1: spec.size in body should be greater than or equal to 5",
                "spec.must: Required value",
            ]
        );
        // Map-list items ratchet one by one, even reordered.
        assert_eq!(
            update(&|n| n["spec"]["keyed"] = json!([{"k": "b", "n": 1}, {"k": "a", "n": 0}])),
            [
                "spec.keyed[0].n: Invalid value: 1: spec.keyed[0].n in body should be greater than or equal to 5",
                "spec.must: Required value",
            ]
        );
        // Nothing changed at all: nothing to report.
        let same: Vec<FieldError> = validate(&s, &old, Some(&old), Root(None));
        assert!(same.is_empty());
        // A create reports everything.
        assert_eq!(validate(&s, &old, None, Root(None)).len(), 5);
    }

    #[test]
    fn go_enum_conversions() {
        assert!(
            enum_matches(&json!(3.7), &json!(3)),
            "float64 converts to int64 by truncation"
        );
        assert!(
            enum_matches(&json!(65), &json!("A")),
            "int64 converts to a string as a rune"
        );
        assert!(!enum_matches(&json!("3"), &json!(3)));
        assert!(enum_matches(&json!(3), &json!(3.0)));
        assert!(!enum_matches(&json!(null), &json!(null)));
        assert!(enum_matches(&json!({"a": [1]}), &json!({"a": [1]})));
        assert!(!enum_matches(&json!(true), &json!(1)));
    }

    #[test]
    fn odd_schemas_and_values_never_panic() {
        let schemas = [
            json!({"type": "integer", "multipleOf": 0, "minimum": 1e300, "maximum": -1e300}),
            json!({"type": "number", "format": "float", "multipleOf": -2.5}),
            json!({"type": "integer", "multipleOf": 1e-300}),
            json!({"type": "string", "pattern": "(["}),
            json!({"type": "array", "minItems": -1, "maxItems": 0, "uniqueItems": true}),
            json!({"type": "object", "additionalProperties": false, "required": ["", "x"]}),
            json!({"format": "int32"}),
            json!({"anyOf": [], "oneOf": [{}], "allOf": [{"not": {}}]}),
        ];
        let values = [
            json!(null),
            json!(i64::MIN),
            json!(u64::MAX),
            json!(-0.0),
            json!(1e308),
            json!("\u{0}é"),
            json!([1, [2], {"a": null}]),
            json!({"": {"": []}}),
        ];
        for s in &schemas {
            let s = Schema::from_json(s);
            for v in &values {
                let _ = validate(&s, v, Some(v), Root(Some("status")));
                let _ = validate(&s, v, None, Root(None));
            }
        }
    }
}
