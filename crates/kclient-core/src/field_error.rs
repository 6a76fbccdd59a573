//! [`FieldError`]: one validation failure of one field (apimachinery's `field.Error`), the
//! building block of `422 Invalid` errors.
//!
//! ```
//! use kclient_core::{ApiError, FieldError, GroupResource};
//!
//! let err = ApiError::invalid(
//!     &GroupResource::new("", "pods"),
//!     "web",
//!     vec![FieldError::required("spec.containers", "")],
//! );
//! assert_eq!(err.message(), r#"pods "web" is invalid: spec.containers: Required value"#);
//! ```

use serde_json::Value;

use crate::go_format;

/// One validation failure of a field (apimachinery's `field.Error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The cause type (`FieldValueRequired`, `FieldValueInvalid`, `FieldValueForbidden`, ...).
    pub cause_type: &'static str,
    /// The field path, such as `metadata.name`.
    pub field: String,
    /// The message without the field (`Required value: name or generateName is required`).
    pub body: String,
}

impl FieldError {
    /// `Required value[: detail]`.
    pub fn required(field: &str, detail: &str) -> Self {
        Self {
            cause_type: "FieldValueRequired",
            field: field.into(),
            body: with_detail("Required value".into(), detail),
        }
    }

    /// `Invalid value: "value": detail`, the value shown as apimachinery shows it (see
    /// [`go_format::bad_value`]).
    pub fn invalid(field: &str, value: &Value, detail: &str) -> Self {
        Self {
            cause_type: "FieldValueInvalid",
            field: field.into(),
            body: with_detail(
                format!("Invalid value: {}", go_format::bad_value(value)),
                detail,
            ),
        }
    }

    /// A value of the wrong type (`FieldValueTypeInvalid`), worded as `Invalid value`:
    /// `Invalid value: "string": detail`.
    pub fn type_invalid(field: &str, value: &Value, detail: &str) -> Self {
        Self {
            cause_type: "FieldValueTypeInvalid",
            ..Self::invalid(field, value, detail)
        }
    }

    /// `Too long: may not be more than {max} bytes` (apimachinery's `field.TooLong`, which
    /// does not show the value); `Too long: value is too long` when `max` is negative.
    pub fn too_long(field: &str, max: i64) -> Self {
        let detail = match max {
            m if m < 0 => "value is too long".to_string(),
            1 => "may not be more than 1 byte".to_string(),
            m => format!("may not be more than {m} bytes"),
        };
        Self {
            cause_type: "FieldValueTooLong",
            field: field.into(),
            body: format!("Too long: {detail}"),
        }
    }

    /// `Too many: {actual}: must have at most {max} items` (`field.TooMany`); a negative
    /// `actual` is not shown, a negative `max` reads `has too many items`.
    pub fn too_many(field: &str, actual: i64, max: i64) -> Self {
        let detail = match max {
            m if m < 0 => "has too many items".to_string(),
            1 => "must have at most 1 item".to_string(),
            m => format!("must have at most {m} items"),
        };
        let head = if actual >= 0 {
            format!("Too many: {actual}")
        } else {
            "Too many".to_string()
        };
        Self {
            cause_type: "FieldValueTooMany",
            field: field.into(),
            body: format!("{head}: {detail}"),
        }
    }

    /// `Duplicate value: value` (`field.Duplicate`).
    pub fn duplicate(field: &str, value: &Value) -> Self {
        Self {
            cause_type: "FieldValueDuplicate",
            field: field.into(),
            body: format!("Duplicate value: {}", go_format::bad_value(value)),
        }
    }

    /// `Forbidden: detail`.
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self {
            cause_type: "FieldValueForbidden",
            field: field.into(),
            body: with_detail("Forbidden".into(), detail),
        }
    }

    /// `Unsupported value: "value": supported values: "a", "b"`.
    pub fn not_supported(field: &str, value: &str, supported: &[&str]) -> Self {
        Self::not_supported_value(field, &Value::String(value.into()), supported)
    }

    /// `Unsupported value: value: supported values: "a", "b"` for a value of any type (a
    /// number is shown bare, `Unsupported value: 3`); each supported value is quoted, as
    /// `field.NotSupported` does. With no supported values, only `Unsupported value: value`.
    pub fn not_supported_value<S: AsRef<str>>(field: &str, value: &Value, supported: &[S]) -> Self {
        let list = supported
            .iter()
            .map(|s| go_format::quote(s.as_ref()))
            .collect::<Vec<_>>()
            .join(", ");
        let head = format!("Unsupported value: {}", go_format::bad_value(value));
        let body = if list.is_empty() {
            head
        } else {
            format!("{head}: supported values: {list}")
        };
        Self {
            cause_type: "FieldValueNotSupported",
            field: field.into(),
            body,
        }
    }

    /// The whole message, `field: body` (or the body alone when there is no field), as
    /// apimachinery's `field.Error.Error()`.
    pub fn full(&self) -> String {
        if self.field.is_empty() {
            self.body.clone()
        } else {
            format!("{}: {}", self.field, self.body)
        }
    }
}

fn with_detail(head: String, detail: &str) -> String {
    if detail.is_empty() {
        head
    } else {
        format!("{head}: {detail}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn messages_as_apimachinery_words_them() {
        assert_eq!(
            FieldError::required("metadata.name", "").full(),
            "metadata.name: Required value"
        );
        assert_eq!(
            FieldError::required("metadata.name", "name or generateName is required").full(),
            "metadata.name: Required value: name or generateName is required"
        );
        assert_eq!(
            FieldError::invalid(
                "spec.replicas",
                &json!(-1),
                "must be greater than or equal to 0"
            )
            .full(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(
            FieldError::invalid("metadata.name", &json!("A_B"), "").full(),
            r#"metadata.name: Invalid value: "A_B""#
        );
        assert_eq!(
            FieldError::forbidden("spec", "immutable").full(),
            "spec: Forbidden: immutable"
        );
        assert_eq!(
            FieldError::not_supported("spec.policy", "x", &["a", "b"]).full(),
            r#"spec.policy: Unsupported value: "x": supported values: "a", "b""#
        );
        assert_eq!(
            FieldError::type_invalid(
                "spec.size",
                &json!("string"),
                r#"spec.size in body must be of type integer: "string""#
            )
            .full(),
            r#"spec.size: Invalid value: "string": spec.size in body must be of type integer: "string""#
        );
        assert_eq!(
            FieldError::type_invalid("a", &json!(1), "").cause_type,
            "FieldValueTypeInvalid"
        );
        assert_eq!(
            FieldError::too_long("spec.name", 5).full(),
            "spec.name: Too long: may not be more than 5 bytes"
        );
        assert_eq!(
            FieldError::too_long("n", 1).body,
            "Too long: may not be more than 1 byte"
        );
        assert_eq!(
            FieldError::too_long("n", -1).body,
            "Too long: value is too long"
        );
        assert_eq!(
            FieldError::too_many("spec.tags", 4, 3).full(),
            "spec.tags: Too many: 4: must have at most 3 items"
        );
        assert_eq!(
            FieldError::too_many("t", -1, 1).body,
            "Too many: must have at most 1 item"
        );
        assert_eq!(
            FieldError::duplicate("spec.list[1]", &json!({"name": "a"})).full(),
            r#"spec.list[1]: Duplicate value: {"name":"a"}"#
        );
        assert_eq!(
            FieldError::not_supported_value("spec.n", &json!(3), &["1", "2"]).full(),
            r#"spec.n: Unsupported value: 3: supported values: "1", "2""#
        );
        assert_eq!(
            FieldError::not_supported_value::<&str>("spec.n", &json!(true), &[]).body,
            "Unsupported value: true"
        );
        assert_eq!(
            FieldError::invalid("spec.f", &json!(2e6), "too big").body,
            "Invalid value: 2e+06: too big"
        );
        let no_field = FieldError {
            cause_type: "X",
            field: String::new(),
            body: "b".into(),
        };
        assert_eq!(no_field.full(), "b");
    }
}
