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

    /// `Invalid value: "value": detail`.
    pub fn invalid(field: &str, value: &Value, detail: &str) -> Self {
        let shown = match value {
            Value::String(s) => format!("{s:?}"),
            other => other.to_string(),
        };
        Self {
            cause_type: "FieldValueInvalid",
            field: field.into(),
            body: with_detail(format!("Invalid value: {shown}"), detail),
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
        let list = supported
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        Self {
            cause_type: "FieldValueNotSupported",
            field: field.into(),
            body: format!("Unsupported value: {value:?}: supported values: {list}"),
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
        let no_field = FieldError {
            cause_type: "X",
            field: String::new(),
            body: "b".into(),
        };
        assert_eq!(no_field.full(), "b");
    }
}
