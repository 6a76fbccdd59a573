//! The number checks: the value fits its declared type and format, `multipleOf`,
//! `minimum`, `maximum` (kube-openapi's `numberValidator`, with swag's conversions).

use kclient_core::go_format;
use serde_json::Value;

use super::{plain, Code, OpenApiError, Outcome};
use crate::schema::structural::Schema;

#[derive(Debug, Clone, Copy)]
pub(super) enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub(super) fn of(v: &Value) -> Option<Num> {
        let n = v.as_number()?;
        Some(match n.as_i64() {
            Some(i) => Num::Int(i),
            None => Num::Float(n.as_f64().unwrap_or(0.0)),
        })
    }

    pub(super) fn as_f64(self) -> f64 {
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
pub(super) fn is_json_integer(f: f64) -> bool {
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
pub(super) fn trunc_i64(f: f64) -> i64 {
    f as i64
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
/// The type and format a number is declared with, as kube-openapi's `numberValidator`
/// reads them (a format other than the type's own is ignored), and where it is.
#[derive(Clone, Copy)]
struct Declared<'a> {
    type_name: &'a str,
    format: &'a str,
    path: &'a str,
}

impl<'a> Declared<'a> {
    fn of(s: &'a Schema, path: &'a str) -> Self {
        let own_format = |formats: [&str; 2]| {
            if formats.contains(&s.format.as_str()) {
                s.format.as_str()
            } else {
                ""
            }
        };
        let (type_name, format) = match s.single_type() {
            "integer" => ("integer", own_format(["int32", "int64"])),
            "number" => ("number", own_format(["float", "double"])),
            _ => ("", ""),
        };
        Self {
            type_name,
            format,
            path,
        }
    }

    /// [`range_error`] of `n` against the declared type and format.
    fn range_error(self, n: Num, prefix: &str) -> Option<OpenApiError> {
        range_error(n, self.type_name, self.format, prefix, self.path)
    }
}

/// `multipleOf`, `minimum`, `maximum` (kube-openapi's `numberValidator`).
pub(super) fn number_checks(s: &Schema, data: &Value, path: &str) -> Outcome {
    let c = &s.checks;
    let Some(n) = Num::of(data) else {
        return Outcome::default();
    };
    let declared = Declared::of(s, path);
    let mut out = Outcome::default();
    if let Some(e) = declared.range_error(n, "Checked") {
        out.add(e);
    }
    let multiple = c
        .multiple_of
        .map(|factor| multiple_of_check(n, factor, declared))
        .unwrap_or_default();
    let maximum = c
        .maximum
        .map(|m| bound_check(n, m, c.exclusive_maximum, Side::Upper, declared))
        .unwrap_or_default();
    let minimum = c
        .minimum
        .map(|m| bound_check(n, m, c.exclusive_minimum, Side::Lower, declared))
        .unwrap_or_default();
    out.merge(multiple);
    out.merge(minimum);
    out.merge(maximum);
    out.matches += 1;
    out
}

/// `multipleOf: factor`: in integers when the factor fits the declared type (truncated as
/// Go's `int64(f)` does), in floats otherwise.
fn multiple_of_check(n: Num, factor: f64, declared: Declared<'_>) -> Outcome {
    let path = declared.path;
    let mut out = Outcome::default();
    let bad_bound = declared.range_error(Num::Float(factor), "MultipleOf");
    let native = bad_bound.is_none();
    if let Some(e) = bad_bound {
        out.add(e);
    }
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
        (true, Num::Float(f)) => float_multiple_of_error(f, factor, path),
        (false, n) => float_multiple_of_error(n.as_f64(), factor, path),
    };
    if let Some(e) = e {
        out.add(e);
    }
    out
}

/// `multipleOf` in floats (swag's check: the quotient is a JSON integer).
fn float_multiple_of_error(data: f64, factor: f64, path: &str) -> Option<OpenApiError> {
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
}

/// Which bound a [`bound_check`] checks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// `maximum`.
    Upper,
    /// `minimum`.
    Lower,
}

/// `maximum` or `minimum` `b` (exclusive or not): in integers when the bound fits the
/// declared type (truncated), in floats otherwise.
fn bound_check(n: Num, b: f64, exclusive: bool, side: Side, declared: Declared<'_>) -> Outcome {
    let upper = side == Side::Upper;
    let prefix = if upper {
        "Maximum boundary"
    } else {
        "Minimum boundary"
    };
    let mut r = Outcome::default();
    let bad_bound = declared.range_error(Num::Float(b), prefix);
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
        let path = declared.path;
        r.add(num_error(
            path,
            data.value(),
            format!("{path} in body should be {relation} {bound_shown}"),
        ));
    }
    r
}
