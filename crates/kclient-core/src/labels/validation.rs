//! What a label key and value may be, and the checks a selector's parts go through.

use super::{Operator, MAX_NAME_LENGTH, MAX_PREFIX_LENGTH};
use crate::SelectorError;

/// Checks a label key: a qualified name, `[prefix/]name`, where the name is 1 to 63 bytes
/// of ASCII alphanumerics, `-`, `_` and `.` that starts and ends with an alphanumeric, and
/// the optional prefix is a lowercase RFC 1123 DNS subdomain of at most 253 bytes
/// (apimachinery's `IsQualifiedName` / `IsLabelKey`).
///
/// On failure returns every rule the key breaks.
///
/// ```
/// use kclient_core::labels::validate_key;
///
/// assert!(validate_key("app.kubernetes.io/name").is_ok());
/// assert!(validate_key("Example.com/name").is_err());
/// assert!(validate_key("a/b/c").is_err());
/// ```
pub fn validate_key(key: &str) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                errors.extend(
                    dns_subdomain_errors(prefix)
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            *name
        }
        _ => {
            return Err(vec![
                "must be a qualified name: an optional lowercase DNS subdomain prefix and '/', \
                 then a name (e.g. 'MyName', 'my.name', 'example.com/MyName')"
                    .to_string(),
            ])
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > MAX_NAME_LENGTH {
        errors.push(format!(
            "name part must be no more than {MAX_NAME_LENGTH} bytes"
        ));
    }
    if !is_label_name(name) {
        errors.push(format!("name part {NAME_RULE}"));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Checks a label value: empty, or at most 63 bytes of ASCII alphanumerics, `-`, `_` and
/// `.` that starts and ends with an alphanumeric (apimachinery's `IsValidLabelValue`).
///
/// On failure returns every rule the value breaks.
///
/// ```
/// use kclient_core::labels::validate_value;
///
/// assert!(validate_value("").is_ok());
/// assert!(validate_value("v1.2_beta-3").is_ok());
/// assert!(validate_value("-leading-dash").is_err());
/// ```
pub fn validate_value(value: &str) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    if value.len() > MAX_NAME_LENGTH {
        errors.push(format!("must be no more than {MAX_NAME_LENGTH} bytes"));
    }
    if !value.is_empty() && !is_label_name(value) {
        errors.push(format!("must be empty or {NAME_RULE}"));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

const NAME_RULE: &str = "must consist of alphanumeric characters, '-', '_' or '.', \
                         starting and ending with an alphanumeric character \
                         (e.g. 'MyName', 'my.name', '123-abc')";

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, whole string.
pub(super) fn is_label_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Rules a lowercase RFC 1123 subdomain breaks:
/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`, at most 253 bytes.
pub(super) fn dns_subdomain_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > MAX_PREFIX_LENGTH {
        errors.push(format!("must be no more than {MAX_PREFIX_LENGTH} bytes"));
    }
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                alnum(first) && alnum(last) && bytes.iter().all(|b| alnum(b) || *b == b'-')
            }
            _ => false,
        }
    };
    if !s.split('.').all(label_ok) {
        errors.push(
            "must be a lowercase RFC 1123 subdomain: lowercase alphanumeric characters, '-' \
             or '.', starting and ending with an alphanumeric character (e.g. 'example.com')"
                .to_string(),
        );
    }
    errors
}

pub(super) fn check_key(key: &str, at: Option<(usize, &str)>) -> Result<(), SelectorError> {
    validate_key(key).map_err(|errors| SelectorError::InvalidKey {
        key: key.to_string(),
        reason: errors.join("; "),
        position: at.map(|(position, _)| position),
        selector: at.map(|(_, selector)| selector.to_string()),
    })
}

pub(super) fn check_value_count(
    key: &str,
    operator: Operator,
    count: usize,
) -> Result<(), SelectorError> {
    let expected = match operator {
        Operator::In | Operator::NotIn => {
            if count == 0 {
                return Err(SelectorError::MissingValues {
                    key: key.to_string(),
                    operator: operator.as_str(),
                });
            }
            return Ok(());
        }
        Operator::Equals
        | Operator::DoubleEquals
        | Operator::NotEquals
        | Operator::GreaterThan
        | Operator::LessThan => (1, "exactly one value"),
        Operator::Exists | Operator::DoesNotExist => (0, "no values"),
    };
    if count == expected.0 {
        Ok(())
    } else {
        Err(SelectorError::WrongValueCount {
            key: key.to_string(),
            operator: operator.as_str(),
            expected: expected.1,
            count,
        })
    }
}

pub(super) fn check_value(
    key: &str,
    operator: Operator,
    value: &str,
    at: Option<(usize, &str)>,
) -> Result<(), SelectorError> {
    let mut errors = Vec::new();
    if matches!(operator, Operator::GreaterThan | Operator::LessThan)
        && value.parse::<i64>().is_err()
    {
        errors.push(
            "for `>` and `<` the value must be a decimal integer that fits in 64 bits".to_string(),
        );
    }
    if let Err(more) = validate_value(value) {
        errors.extend(more);
    }
    if errors.is_empty() {
        return Ok(());
    }
    Err(SelectorError::InvalidValue {
        key: key.to_string(),
        value: value.to_string(),
        reason: errors.join("; "),
        position: at.map(|(position, _)| position),
        selector: at.map(|(_, selector)| selector.to_string()),
    })
}
