//! The string checks: `maxLength`, `minLength`, `pattern`, then `format`.

use serde_json::Value;

use super::{invalid_type, Code, OpenApiError, Outcome};
use crate::schema::structural::Schema;

/// `maxLength`, `minLength`, `pattern`: the first failure only.
pub(super) fn string_checks(s: &Schema, data: &Value, path: &str) -> Outcome {
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

pub(super) fn format_check(s: &Schema, data: &Value, path: &str) -> Outcome {
    let text = data.as_str().unwrap_or("");
    if crate::schema::formats::is_supported_string_format(&s.format)
        && !crate::schema::formats::is_valid(&s.format, text)
    {
        return Outcome::single(invalid_type(path, &s.format, text));
    }
    Outcome::default()
}
