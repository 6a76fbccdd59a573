//! How Go prints the JSON values of an unstructured object, for messages that must read
//! exactly as the API server's: `fmt`'s `%v` of a number, `strconv.Quote` of a string, and
//! `encoding/json`'s rendering of maps and lists.
//!
//! The API server decodes a custom resource into Go values: integers as `int64`, other
//! numbers as `float64`, objects as maps. Validation messages then print them with `%v`
//! (`1e+06`, not `1000000`, for a `float64`), and field errors print a bad value quoted
//! when it is a string, bare when it is a number or boolean, and as JSON otherwise.
//!
//! ```
//! use kclient_core::go_format;
//! use serde_json::json;
//!
//! assert_eq!(go_format::float(1_000_000.0), "1e+06");
//! assert_eq!(go_format::float(0.25), "0.25");
//! assert_eq!(go_format::bad_value(&json!("red")), r#""red""#);
//! assert_eq!(go_format::bad_value(&json!({"b": 1, "a": "<"})), r#"{"a":"\u003c","b":1}"#);
//! ```

use serde_json::{Number, Value};

/// `fmt.Sprintf("%v", f)` for a `float64`: `%g` with the shortest precision, so the decimal
/// exponent decides the form: below -4 or from 6 up it is written as an exponent (`1e+06`,
/// `1.5e-05`), otherwise in plain notation (`123456`, `0.0001`).
pub fn float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let (negative, digits, exp) = shortest_digits(f);
    let sign = if negative { "-" } else { "" };
    // %g with the shortest precision: exponent form when exp < -4 || exp >= 6 (Go's eprec).
    let exp10 = exp - 1;
    if !(-4..6).contains(&exp10) {
        format!("{sign}{}", exponent_form(&digits, exp10))
    } else {
        format!("{sign}{}", fixed_form(&digits, exp))
    }
}

/// `encoding/json`'s rendering of a `float64`: fixed notation unless the magnitude is below
/// 1e-6 or at least 1e21, and then `1e-07` written `1e-7`.
pub fn json_float(f: f64) -> String {
    if !f.is_finite() {
        // encoding/json refuses these; the API server never stores them.
        return "null".into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let (negative, digits, exp) = shortest_digits(f);
    let sign = if negative { "-" } else { "" };
    let abs = f.abs();
    if !(1e-6..1e21).contains(&abs) {
        let s = exponent_form(&digits, exp - 1);
        // Go writes e-07 as e-7 (and e+21 stays e+21).
        let s = match s.find("e-0") {
            Some(i) => format!("{}e-{}", &s[..i], &s[i + 3..]),
            None => s,
        };
        format!("{sign}{s}")
    } else {
        format!("{sign}{}", fixed_form(&digits, exp))
    }
}

/// A JSON number as Go holds it after decoding an unstructured object: integers that fit in
/// an `int64` are `int64` and print as such; everything else is a `float64`.
pub fn number(n: &Number) -> String {
    match n.as_i64() {
        Some(i) => i.to_string(),
        None => float(n.as_f64().unwrap_or(0.0)),
    }
}

/// `strconv.Quote(s)`: a double-quoted Go string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `encoding/json`'s `Marshal` of an unstructured value: object keys sorted, `<`, `>` and
/// `&` escaped as `\u003c`, `\u003e`, `\u0026`, numbers as Go holds them.
pub fn json(v: &Value) -> String {
    let mut out = String::new();
    write_json(v, &mut out);
    out
}

fn write_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_i64() {
            Some(i) => out.push_str(&i.to_string()),
            None => out.push_str(&json_float(n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => write_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(k, out);
                out.push(':');
                if let Some(v) = map.get(k.as_str()) {
                    write_json(v, out);
                }
            }
            out.push('}');
        }
    }
}

fn write_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            // Since Go 1.22 (kube-apiserver 1.37 is built with Go 1.26).
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// How apimachinery's `field.Error` prints a bad value: a string quoted, a number or a
/// boolean with `%v`, anything else (null, maps, lists) as JSON.
pub fn bad_value(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Number(n) => number(n),
        Value::Bool(b) => b.to_string(),
        other => json(other),
    }
}

/// `fmt.Sprintf("%v", v)` of an unstructured value (`map[a:1]` for maps, `[a b]` for lists).
pub fn v(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(self::v).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| {
                    format!(
                        "{k}:{}",
                        map.get(k.as_str()).map(self::v).unwrap_or_default()
                    )
                })
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// The shortest decimal digits of `f` (no sign) and the position of the decimal point: the
/// value is `0.d1d2d3... × 10^exp`.
fn shortest_digits(f: f64) -> (bool, String, i32) {
    // Rust's `{:e}` prints the shortest representation that round-trips, as Go's -1
    // precision does: `1.2345e6`.
    let s = format!("{:e}", f.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    (f.is_sign_negative(), digits.to_string(), exp + 1)
}

/// `d.ddde±XX` with at least two exponent digits.
fn exponent_form(digits: &str, exp10: i32) -> String {
    let (first, rest) = digits.split_at(1);
    let mantissa = if rest.is_empty() {
        first.to_string()
    } else {
        format!("{first}.{rest}")
    };
    let sign = if exp10 < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp10.unsigned_abs())
}

/// Plain decimal notation of `0.digits × 10^exp`.
fn fixed_form(digits: &str, exp: i32) -> String {
    let n = digits.len() as i32;
    if exp <= 0 {
        format!("0.{}{digits}", "0".repeat(exp.unsigned_abs() as usize))
    } else if exp >= n {
        format!("{digits}{}", "0".repeat((exp - n) as usize))
    } else {
        let (int, frac) = digits.split_at(exp as usize);
        format!("{int}.{frac}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn floats_as_percent_v() {
        for (f, want) in [
            (1.0, "1"),
            (3.0, "3"),
            (0.5, "0.5"),
            (0.25, "0.25"),
            (-2.5, "-2.5"),
            (123456.0, "123456"),
            (1_000_000.0, "1e+06"),
            (1_234_567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e21, "1e+21"),
            (0.1 + 0.2, "0.30000000000000004"),
            (0.0, "0"),
        ] {
            assert_eq!(float(f), want, "{f}");
        }
        assert_eq!(float(f64::NAN), "NaN");
        assert_eq!(float(f64::INFINITY), "+Inf");
    }

    #[test]
    fn floats_as_encoding_json() {
        for (f, want) in [
            (1_000_000.0, "1000000"),
            (0.5, "0.5"),
            (1e21, "1e+21"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (123.0, "123"),
            (-0.000001, "-0.000001"),
        ] {
            assert_eq!(json_float(f), want, "{f}");
        }
    }

    #[test]
    fn quoting_as_strconv() {
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("tab\there\n"), r#""tab\there\n""#);
        assert_eq!(quote("\u{1}"), r#""\x01""#);
        assert_eq!(quote("héllo"), "\"héllo\"");
        assert_eq!(quote("\u{85}"), r#""\u0085""#);
    }

    #[test]
    fn values() {
        assert_eq!(bad_value(&json!(3)), "3");
        assert_eq!(bad_value(&json!(3.5)), "3.5");
        assert_eq!(bad_value(&json!(2e6)), "2e+06");
        assert_eq!(bad_value(&json!(true)), "true");
        assert_eq!(bad_value(&json!(null)), "null");
        assert_eq!(bad_value(&json!([1, "a"])), r#"[1,"a"]"#);
        assert_eq!(bad_value(&json!(u64::MAX)), "1.8446744073709552e+19");
        assert_eq!(
            json(&json!({"z": [2e6], "a": {"&": null}})),
            r#"{"a":{"\u0026":null},"z":[2000000]}"#
        );
        // As Go 1.26's encoding/json writes it.
        assert_eq!(
            json(&json!("\u{8}\u{c}\u{1}<\u{2028}")),
            r#""\b\f\u0001\u003c\u2028""#
        );
        assert_eq!(
            v(&json!({"b": [1, "x"], "a": null})),
            "map[a:<nil> b:[1 x]]"
        );
    }
}
