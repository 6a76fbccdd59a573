//! [`Requirement`]: one condition of a label selector.

use std::fmt;

use super::validation::{check_key, check_value, check_value_count};
use super::{Labels, Operator};
use crate::SelectorError;

/// One condition of a label [`Selector`](super::Selector): a key, an [`Operator`] and the values it compares
/// against (apimachinery's `labels.Requirement`).
///
/// Values are kept sorted and without duplicates; that is the order in which they are
/// rendered, and a value set has no other meaningful order.
///
/// ```
/// use kclient_core::labels::{Operator, Requirement};
///
/// let req = Requirement::new("tier", Operator::In, ["web", "api"])?;
/// assert_eq!(req.values(), ["api", "web"]);
/// assert_eq!(req.to_string(), "tier in (api,web)");
/// assert!(Requirement::new("tier", Operator::In, Vec::<String>::new()).is_err());
/// # Ok::<(), kclient_core::SelectorError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    pub(super) key: String,
    pub(super) operator: Operator,
    pub(super) values: Vec<String>,
}

impl Requirement {
    /// Builds a validated requirement, with apimachinery's `NewRequirement` rules:
    ///
    /// - the key is a qualified name (`[prefix/]name`, see [`validate_key`](super::validate_key));
    /// - `in` / `notin` have at least one value; `=`, `==`, `!=`, `>`, `<` exactly one;
    ///   `exists` and `!` none;
    /// - every value is a valid label value (see [`validate_value`](super::validate_value)), and for `>` / `<` a
    ///   decimal integer that fits in an `i64`.
    ///
    /// The empty string is a valid value.
    pub fn new<K, I>(key: K, operator: Operator, values: I) -> Result<Self, SelectorError>
    where
        K: Into<String>,
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let key = key.into();
        let values: Vec<String> = values.into_iter().map(Into::into).collect();
        check_key(&key, None)?;
        check_value_count(&key, operator, values.len())?;
        for value in &values {
            check_value(&key, operator, value, None)?;
        }
        Ok(Self::unchecked(key, operator, values))
    }

    /// Builds a requirement without validating it (used by the builder methods of
    /// [`Selector`], like apimachinery's `SelectorFromValidatedSet`). Values are still
    /// sorted and deduplicated.
    pub(super) fn unchecked(key: String, operator: Operator, mut values: Vec<String>) -> Self {
        values.sort();
        values.dedup();
        Self {
            key,
            operator,
            values,
        }
    }

    /// The label key this requirement is about.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// How the label is compared.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted, without duplicates (empty for `exists` and `!`).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Checks this requirement against the rules of [`Requirement::new`]. Requirements
    /// made by [`parse`](super::parse), [`Requirement::new`] and the `LabelSelector` conversion are
    /// always valid; those made by the [`Selector`](super::Selector) builder methods may not be.
    pub fn validate(&self) -> Result<(), SelectorError> {
        check_key(&self.key, None)?;
        check_value_count(&self.key, self.operator, self.values.len())?;
        for value in &self.values {
            check_value(&self.key, self.operator, value, None)?;
        }
        Ok(())
    }

    /// Whether `labels` satisfy this requirement. As in apimachinery:
    ///
    /// - `=`, `==`, `in`: the label is present and its value is one of the values;
    /// - `!=`, `notin`: the label is absent, or its value is none of the values;
    /// - `exists` / `!`: the label is present / absent;
    /// - `>`, `<`: the label is present, its value and the requirement's value both parse
    ///   as `i64`, and the comparison holds.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => labels
                .lookup(&self.key)
                .is_some_and(|value| self.has_value(value)),
            Operator::NotEquals | Operator::NotIn => labels
                .lookup(&self.key)
                .is_none_or(|value| !self.has_value(value)),
            Operator::Exists => labels.has(&self.key),
            Operator::DoesNotExist => !labels.has(&self.key),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(actual) = labels.lookup(&self.key) else {
                    return false;
                };
                let Ok(actual) = actual.parse::<i64>() else {
                    return false;
                };
                let [wanted] = self.values.as_slice() else {
                    return false;
                };
                let Ok(wanted) = wanted.parse::<i64>() else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > wanted
                } else {
                    actual < wanted
                }
            }
        }
    }

    fn has_value(&self, value: &str) -> bool {
        self.values.iter().any(|v| v == value)
    }
}

impl fmt::Display for Requirement {
    /// Renders the requirement as apimachinery's `Requirement.String()` does: `!key`,
    /// `key`, `key=v`, `key==v`, `key!=v`, `key>v`, `key<v`, `key in (a,b)`,
    /// `key notin (a,b)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let (symbol, list) = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => ("=", false),
            Operator::DoubleEquals => ("==", false),
            Operator::NotEquals => ("!=", false),
            Operator::GreaterThan => (">", false),
            Operator::LessThan => ("<", false),
            Operator::In => (" in ", true),
            Operator::NotIn => (" notin ", true),
        };
        f.write_str(symbol)?;
        if list {
            f.write_str("(")?;
        }
        for (i, value) in self.values.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(value)?;
        }
        if list {
            f.write_str(")")?;
        }
        Ok(())
    }
}
