//! Label selectors: parse, build, match and render them the way apimachinery does
//! (`k8s.io/apimachinery/pkg/labels`).
//!
//! A [`Selector`] is a set of [`Requirement`]s that must all hold. It comes from
//!
//! - the string syntax used by `?labelSelector=` and `kubectl -l` ([`parse`], or
//!   `str::parse::<Selector>()`): `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`,
//!   `!a`, `a>1`, `a<1`, joined by commas;
//! - a `metav1.LabelSelector` (matchLabels + matchExpressions) from an object's spec
//!   ([`Selector::from_label_selector`], `Selector::try_from(&label_selector)`);
//! - the builder methods ([`Selector::new`]`().equals("app", "web").exists("tier")`).
//!
//! It is rendered back with [`Display`](std::fmt::Display) in apimachinery's canonical form
//! (requirements sorted by key, values of `in`/`notin` sorted), so `parse(&s.to_string())`
//! gives back `s` for every valid selector.
//!
//! ```
//! use std::collections::BTreeMap;
//! use kclient_core::labels::{self, Selector};
//!
//! let selector = labels::parse("tier in (web, api), !canary, env=prod")?;
//! assert_eq!(selector.to_string(), "!canary,env=prod,tier in (api,web)");
//!
//! let labels = BTreeMap::from([
//!     ("env".to_string(), "prod".to_string()),
//!     ("tier".to_string(), "web".to_string()),
//! ]);
//! assert!(selector.matches(&labels));
//!
//! let built = Selector::new()
//!     .equals("env", "prod")
//!     .in_values("tier", ["web", "api"])
//!     .does_not_exist("canary");
//! assert_eq!(built, selector);
//! # Ok::<(), kclient_core::SelectorError>(())
//! ```
//!
//! Matching follows apimachinery exactly, including the cases people find surprising: a
//! missing key satisfies `!=` and `notin`, and `>` / `<` only match labels whose value is
//! a decimal integer.

mod parser;
mod requirement;
mod selector;
#[cfg(test)]
mod tests;
mod validation;

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{BuildHasher, Hash};

use crate::lookup_fn::LookupFn;

pub use parser::parse;
pub use requirement::Requirement;
pub use selector::Selector;
pub use validation::{validate_key, validate_value};

/// Maximum length in bytes of a label value, and of the name part of a label key.
pub const MAX_NAME_LENGTH: usize = 63;
/// Maximum length in bytes of the DNS subdomain prefix of a label key.
pub const MAX_PREFIX_LENGTH: usize = 253;

pub(super) const OPERATORS_EXPECTED: &str = "`in`, `notin`, `=`, `==`, `!=`, `>`, `<`";
pub(super) const LABEL_SELECTOR_OPERATORS: &str = "`In`, `NotIn`, `Exists`, `DoesNotExist`";

/// How a [`Requirement`] relates a label key to its values (apimachinery's
/// `selection.Operator`).
///
/// ```
/// use kclient_core::labels::Operator;
///
/// assert_eq!(Operator::NotIn.as_str(), "notin");
/// assert_eq!(Operator::GreaterThan.to_string(), "gt");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `key=value`: the label is present with this value.
    Equals,
    /// `key==value`: the same as [`Operator::Equals`], kept apart so it renders as written.
    DoubleEquals,
    /// `key!=value`: the label is absent or has another value.
    NotEquals,
    /// `key in (v1,v2)`: the label is present with one of the values.
    In,
    /// `key notin (v1,v2)`: the label is absent or has none of the values.
    NotIn,
    /// `key`: the label is present, with any value.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
    /// `key>n`: the label's value is a decimal integer greater than `n`.
    GreaterThan,
    /// `key<n`: the label's value is a decimal integer less than `n`.
    LessThan,
}

impl Operator {
    /// The operator's name as apimachinery's `selection.Operator` spells it: `=`, `==`,
    /// `!=`, `in`, `notin`, `exists`, `!`, `gt`, `lt`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Read access to a set of labels, so that selectors can match any label container
/// (apimachinery's `labels.Labels`).
///
/// Implemented for `BTreeMap` and `HashMap` with string keys and values, for `Option` of
/// those (`None` has no labels: handy for `ObjectMeta::labels`), and for references.
///
/// ```
/// use std::collections::HashMap;
/// use kclient_core::labels::{Labels, Selector};
///
/// let labels: HashMap<&str, &str> = HashMap::from([("app", "web")]);
/// assert_eq!(labels.lookup("app"), Some("web"));
/// assert!(Selector::new().equals("app", "web").matches(&labels));
/// ```
pub trait Labels {
    /// The value of label `key`, or `None` when the label is absent.
    fn lookup(&self, key: &str) -> Option<&str>;

    /// Whether label `key` is present.
    fn has(&self, key: &str) -> bool {
        self.lookup(key).is_some()
    }
}

impl<K, V> Labels for BTreeMap<K, V>
where
    K: Borrow<str> + Ord,
    V: AsRef<str>,
{
    fn lookup(&self, key: &str) -> Option<&str> {
        self.get(key).map(AsRef::as_ref)
    }
}

impl<K, V, S> Labels for HashMap<K, V, S>
where
    K: Borrow<str> + Hash + Eq,
    V: AsRef<str>,
    S: BuildHasher,
{
    fn lookup(&self, key: &str) -> Option<&str> {
        self.get(key).map(AsRef::as_ref)
    }
}

impl<T: Labels> Labels for Option<T> {
    fn lookup(&self, key: &str) -> Option<&str> {
        self.as_ref().and_then(|labels| labels.lookup(key))
    }
}

impl<T: Labels + ?Sized> Labels for &T {
    fn lookup(&self, key: &str) -> Option<&str> {
        (**self).lookup(key)
    }
}

impl<'a, F> Labels for LookupFn<'a, F>
where
    F: Fn(&str) -> Option<&'a str>,
{
    fn lookup(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}
