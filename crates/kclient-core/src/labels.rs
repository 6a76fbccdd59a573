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

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use crate::SelectorError;

/// Maximum length in bytes of a label value, and of the name part of a label key.
pub const MAX_NAME_LENGTH: usize = 63;
/// Maximum length in bytes of the DNS subdomain prefix of a label key.
pub const MAX_PREFIX_LENGTH: usize = 253;

const OPERATORS_EXPECTED: &str = "`in`, `notin`, `=`, `==`, `!=`, `>`, `<`";
const LABEL_SELECTOR_OPERATORS: &str = "`In`, `NotIn`, `Exists`, `DoesNotExist`";

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

/// Adapts a lookup closure to [`Labels`].
struct LookupFn<'a, F> {
    lookup: F,
    _values: PhantomData<fn() -> &'a str>,
}

impl<'a, F> Labels for LookupFn<'a, F>
where
    F: Fn(&str) -> Option<&'a str>,
{
    fn lookup(&self, key: &str) -> Option<&str> {
        (self.lookup)(key)
    }
}

/// One condition of a label [`Selector`]: a key, an [`Operator`] and the values it compares
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
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Builds a validated requirement, with apimachinery's `NewRequirement` rules:
    ///
    /// - the key is a qualified name (`[prefix/]name`, see [`validate_key`]);
    /// - `in` / `notin` have at least one value; `=`, `==`, `!=`, `>`, `<` exactly one;
    ///   `exists` and `!` none;
    /// - every value is a valid label value (see [`validate_value`]), and for `>` / `<` a
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
    fn unchecked(key: String, operator: Operator, mut values: Vec<String>) -> Self {
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
    /// made by [`parse`], [`Requirement::new`] and the `LabelSelector` conversion are
    /// always valid; those made by the [`Selector`] builder methods may not be.
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

/// A label selector: requirements that must all hold (apimachinery's `labels.Selector`).
///
/// Requirements are kept sorted by key (stably: requirements on the same key keep their
/// order), which is apimachinery's canonical order. Besides ordinary selectors there is
/// [`Selector::nothing`], which matches no labels at all; it is what a missing
/// (`None`) `metav1.LabelSelector` means.
///
/// `Selector::default()` and [`Selector::new`] are [`Selector::everything`].
///
/// ```
/// use std::collections::BTreeMap;
/// use kclient_core::labels::Selector;
///
/// let selector: Selector = "env!=prod,tier notin (db)".parse()?;
/// // A missing key satisfies both `!=` and `notin`.
/// assert!(selector.matches(&BTreeMap::<String, String>::new()));
/// # Ok::<(), kclient_core::SelectorError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Selector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl Selector {
    /// An empty selector, which matches everything; add requirements with the builder
    /// methods ([`equals`](Self::equals), [`in_values`](Self::in_values), …).
    ///
    /// The builder methods do not validate keys and values (like apimachinery's
    /// `SelectorFromValidatedSet`); call [`validate`](Self::validate) when they come from
    /// untrusted input, or build [`Requirement::new`]s and add them with
    /// [`add_requirement`](Self::add_requirement).
    pub fn new() -> Self {
        Self::default()
    }

    /// The selector that matches every set of labels (renders as the empty string).
    pub fn everything() -> Self {
        Self::default()
    }

    /// The selector that matches no labels at all (apimachinery's `labels.Nothing()`).
    ///
    /// It has no requirements and renders as the empty string, like apimachinery's; so
    /// it does not survive a round trip through a string (the empty string parses to
    /// [`Selector::everything`]). Adding requirements to it leaves it matching nothing.
    pub fn nothing() -> Self {
        Self {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Builds a validated selector that requires exactly these labels (apimachinery's
    /// `ValidatedSelectorFromSet`). An empty set gives [`Selector::everything`].
    pub fn from_set<L, K, V>(labels: L) -> Result<Self, SelectorError>
    where
        L: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let mut selector = Self::new();
        for (key, value) in labels {
            let requirement = Requirement::new(key, Operator::Equals, [value])?;
            selector = selector.add_requirement(requirement);
        }
        Ok(selector)
    }

    /// Converts a `metav1.LabelSelector`, as found in object specs, following
    /// apimachinery's `LabelSelectorAsSelector`:
    ///
    /// - `None` (the field is absent, Go's `nil`) selects **nothing**:
    ///   [`Selector::nothing`];
    /// - `Some` with no matchLabels and no matchExpressions (`{}`) selects **everything**;
    /// - otherwise every matchLabels entry becomes `key=value` and every matchExpression
    ///   (`In`, `NotIn`, `Exists`, `DoesNotExist`) the matching requirement, all validated
    ///   like [`Requirement::new`]; any other operator is
    ///   [`SelectorError::UnknownOperator`].
    ///
    /// ```
    /// use kclient_core::labels::Selector;
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    ///     LabelSelector, LabelSelectorRequirement,
    /// };
    ///
    /// let spec = LabelSelector {
    ///     match_labels: Some([("app".to_string(), "web".to_string())].into()),
    ///     match_expressions: Some(vec![LabelSelectorRequirement {
    ///         key: "tier".into(),
    ///         operator: "NotIn".into(),
    ///         values: Some(vec!["db".into()]),
    ///     }]),
    /// };
    /// let selector = Selector::from_label_selector(Some(&spec))?;
    /// assert_eq!(selector.to_string(), "app=web,tier notin (db)");
    ///
    /// assert!(Selector::from_label_selector(None)?.matches_nothing());
    /// assert!(Selector::from_label_selector(Some(&LabelSelector::default()))?.is_empty());
    /// # Ok::<(), kclient_core::SelectorError>(())
    /// ```
    pub fn from_label_selector(selector: Option<&LabelSelector>) -> Result<Self, SelectorError> {
        let Some(selector) = selector else {
            return Ok(Self::nothing());
        };
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            requirements.push(Requirement::new(
                key.as_str(),
                Operator::Equals,
                [value.as_str()],
            )?);
        }
        for expression in selector.match_expressions.iter().flatten() {
            let operator = match expression.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(SelectorError::UnknownOperator {
                        operator: other.to_string(),
                        expected: LABEL_SELECTOR_OPERATORS,
                        position: None,
                        selector: None,
                    })
                }
            };
            let values = expression.values.iter().flatten().map(String::as_str);
            requirements.push(Requirement::new(expression.key.as_str(), operator, values)?);
        }
        Ok(Self::from_requirements(requirements))
    }

    /// Converts this selector to a `metav1.LabelSelector` where that is possible (the
    /// reverse of [`from_label_selector`](Self::from_label_selector), like apimachinery's
    /// `ParseToLabelSelector`):
    ///
    /// - [`Selector::nothing`] becomes `None`; every other selector `Some`;
    /// - `=` and `==` become matchLabels entries (a second equality on a key already in
    ///   matchLabels with another value becomes an `In` expression with that one value, so
    ///   the meaning is kept);
    /// - `in`, `notin`, `exists`, `!` become matchExpressions;
    /// - `!=` becomes `NotIn` with its one value, which matches exactly the same labels
    ///   (apimachinery refuses `!=` here; kclient converts it);
    /// - `>` and `<` have no `LabelSelector` form: [`SelectorError::NotRepresentable`].
    ///
    /// The everything selector becomes `LabelSelector::default()` (`{}`).
    pub fn to_label_selector(&self) -> Result<Option<LabelSelector>, SelectorError> {
        if self.nothing {
            return Ok(None);
        }
        let mut match_labels = BTreeMap::new();
        let mut match_expressions = Vec::new();
        for requirement in &self.requirements {
            let operator = match requirement.operator {
                Operator::Equals | Operator::DoubleEquals => {
                    let value = requirement.values.first().cloned().unwrap_or_default();
                    match match_labels.get(&requirement.key) {
                        None => {
                            match_labels.insert(requirement.key.clone(), value);
                            continue;
                        }
                        Some(existing) if *existing == value => continue,
                        Some(_) => "In",
                    }
                }
                Operator::In => "In",
                Operator::NotIn | Operator::NotEquals => "NotIn",
                Operator::Exists => "Exists",
                Operator::DoesNotExist => "DoesNotExist",
                Operator::GreaterThan | Operator::LessThan => {
                    return Err(SelectorError::NotRepresentable {
                        requirement: requirement.to_string(),
                        target: "as a metav1.LabelSelector",
                        reason: "LabelSelector has no `Gt` / `Lt` operators",
                    })
                }
            };
            let values = match requirement.operator {
                Operator::Exists | Operator::DoesNotExist => None,
                _ => Some(requirement.values.clone()),
            };
            match_expressions.push(LabelSelectorRequirement {
                key: requirement.key.clone(),
                operator: operator.to_string(),
                values,
            });
        }
        Ok(Some(LabelSelector {
            match_labels: (!match_labels.is_empty()).then_some(match_labels),
            match_expressions: (!match_expressions.is_empty()).then_some(match_expressions),
        }))
    }

    fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        // A stable sort: requirements on one key keep their order, as in apimachinery.
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self {
            requirements,
            nothing: false,
        }
    }

    /// Adds a requirement, keeping the canonical order (apimachinery's `Selector.Add`).
    /// [`Selector::nothing`] ignores it and stays nothing.
    pub fn add_requirement(mut self, requirement: Requirement) -> Self {
        if self.nothing {
            return self;
        }
        let at = self
            .requirements
            .partition_point(|existing| existing.key <= requirement.key);
        self.requirements.insert(at, requirement);
        self
    }

    fn with(self, key: impl Into<String>, operator: Operator, values: Vec<String>) -> Self {
        self.add_requirement(Requirement::unchecked(key.into(), operator, values))
    }

    /// Adds `key=value` (unvalidated, see [`Selector::new`]).
    pub fn equals(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.with(key, Operator::Equals, vec![value.into()])
    }

    /// Adds `key!=value` (unvalidated, see [`Selector::new`]).
    pub fn not_equals(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.with(key, Operator::NotEquals, vec![value.into()])
    }

    /// Adds `key in (values…)` (unvalidated, see [`Selector::new`]).
    pub fn in_values<I>(self, key: impl Into<String>, values: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let values = values.into_iter().map(Into::into).collect();
        self.with(key, Operator::In, values)
    }

    /// Adds `key notin (values…)` (unvalidated, see [`Selector::new`]).
    pub fn not_in_values<I>(self, key: impl Into<String>, values: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let values = values.into_iter().map(Into::into).collect();
        self.with(key, Operator::NotIn, values)
    }

    /// Adds `key`: the label must be present (unvalidated, see [`Selector::new`]).
    pub fn exists(self, key: impl Into<String>) -> Self {
        self.with(key, Operator::Exists, Vec::new())
    }

    /// Adds `!key`: the label must be absent (unvalidated, see [`Selector::new`]).
    pub fn does_not_exist(self, key: impl Into<String>) -> Self {
        self.with(key, Operator::DoesNotExist, Vec::new())
    }

    /// Adds `key>value` (unvalidated, see [`Selector::new`]). A negative `value` is not a
    /// valid label value, so such a selector fails [`validate`](Self::validate).
    pub fn greater_than(self, key: impl Into<String>, value: i64) -> Self {
        self.with(key, Operator::GreaterThan, vec![value.to_string()])
    }

    /// Adds `key<value` (unvalidated, see [`Selector::new`]). A negative `value` is not a
    /// valid label value, so such a selector fails [`validate`](Self::validate).
    pub fn less_than(self, key: impl Into<String>, value: i64) -> Self {
        self.with(key, Operator::LessThan, vec![value.to_string()])
    }

    /// Checks every requirement against the rules of [`Requirement::new`].
    pub fn validate(&self) -> Result<(), SelectorError> {
        self.requirements.iter().try_for_each(Requirement::validate)
    }

    /// The requirements, in canonical order (empty for everything and for nothing).
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether this selector places no restriction at all (apimachinery's `Empty()`):
    /// true for [`Selector::everything`], false for [`Selector::nothing`].
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// Whether this is [`Selector::nothing`] (apimachinery's `MatchesNothing`; like it,
    /// contradictions such as `a=x,a!=x` are not detected).
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// Whether `labels` satisfy every requirement (always false for
    /// [`Selector::nothing`]). See [`Requirement::matches`] for each operator.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// [`matches`](Self::matches) with a lookup closure instead of a label container:
    /// `lookup(key)` returns the label's value, or `None` when it is absent.
    ///
    /// ```
    /// use kclient_core::labels::Selector;
    ///
    /// let selector = Selector::new().equals("app", "web");
    /// assert!(selector.matches_fn(|key| (key == "app").then_some("web")));
    /// ```
    pub fn matches_fn<'a, F>(&self, lookup: F) -> bool
    where
        F: Fn(&str) -> Option<&'a str>,
    {
        self.matches(&LookupFn {
            lookup,
            _values: PhantomData,
        })
    }

    /// If this selector pins label `key` to one value, that value (apimachinery's
    /// `RequiresExactMatch`): the first requirement on `key` decides, and it must be `=`,
    /// `==`, or `in` with a single value.
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let requirement = self.requirements.iter().find(|r| r.key == key)?;
        match (requirement.operator, requirement.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [value]) => {
                Some(value.as_str())
            }
            _ => None,
        }
    }
}

impl fmt::Display for Selector {
    /// The canonical string (apimachinery's `String()`): requirements in key order joined
    /// by `,`; the empty string for everything and for nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            fmt::Display::fmt(requirement, f)?;
        }
        Ok(())
    }
}

impl FromStr for Selector {
    type Err = SelectorError;

    /// Same as [`parse`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s)
    }
}

impl TryFrom<&LabelSelector> for Selector {
    type Error = SelectorError;

    /// Same as [`Selector::from_label_selector`]`(Some(selector))`: a present but empty
    /// `LabelSelector` selects everything.
    fn try_from(selector: &LabelSelector) -> Result<Self, Self::Error> {
        Self::from_label_selector(Some(selector))
    }
}

impl TryFrom<&Selector> for LabelSelector {
    type Error = SelectorError;

    /// Same as [`Selector::to_label_selector`], except that [`Selector::nothing`], which
    /// has no `LabelSelector` form (only the absence of one), is
    /// [`SelectorError::NotRepresentable`].
    fn try_from(selector: &Selector) -> Result<Self, Self::Error> {
        selector
            .to_label_selector()?
            .ok_or(SelectorError::NotRepresentable {
                requirement: String::new(),
                target: "as a metav1.LabelSelector",
                reason: "the selector that matches nothing is an absent LabelSelector (None)",
            })
    }
}

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
fn is_label_name(s: &str) -> bool {
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
fn dns_subdomain_errors(s: &str) -> Vec<String> {
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

fn check_key(key: &str, at: Option<(usize, &str)>) -> Result<(), SelectorError> {
    validate_key(key).map_err(|errors| SelectorError::InvalidKey {
        key: key.to_string(),
        reason: errors.join("; "),
        position: at.map(|(position, _)| position),
        selector: at.map(|(_, selector)| selector.to_string()),
    })
}

fn check_value_count(key: &str, operator: Operator, count: usize) -> Result<(), SelectorError> {
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

fn check_value(
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

/// Parses the label selector string syntax (apimachinery's `labels.Parse`).
///
/// ```text
/// selector    ::= "" | requirement ( "," requirement )*
/// requirement ::= "!" KEY
///               | KEY
///               | KEY ( "=" | "==" | "!=" | ">" | "<" ) VALUE
///               | KEY ( "in" | "notin" ) "(" VALUE ( "," VALUE )* ")"
/// ```
///
/// Spaces, tabs, carriage returns and newlines may surround every token. A `VALUE` may be
/// empty (`a=`, `a in (x,)`, and `a in ()` which means the one value `""`). `in` and
/// `notin` are keywords only where an operator is expected, so `in in (in)` is valid.
/// Keys and values are validated like [`Requirement::new`]; the result is in canonical
/// order, with `in`/`notin` values sorted and deduplicated. The empty (or all-blank)
/// string is [`Selector::everything`].
///
/// Deviation: Go's lexer stops at a NUL byte and ignores the rest of the string; here a
/// NUL is an ordinary (and therefore invalid) character.
///
/// ```
/// use kclient_core::labels;
/// use kclient_core::SelectorError;
///
/// let selector = labels::parse("x in (foo,,baz),y,z notin ()")?;
/// assert_eq!(selector.to_string(), "x in (,baz,foo),y,z notin ()");
///
/// assert!(matches!(
///     labels::parse("a in (x,y"),
///     Err(SelectorError::UnterminatedList { position: 6, .. })
/// ));
/// # Ok::<(), kclient_core::SelectorError>(())
/// ```
pub fn parse(selector: &str) -> Result<Selector, SelectorError> {
    let mut parser = Parser {
        selector,
        tokens: lex(selector),
        next: 0,
    };
    let requirements = parser.parse()?;
    Ok(Selector::from_requirements(requirements))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    End,
    OpenParen,
    CloseParen,
    Comma,
    Bang,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    /// A word; `in` and `notin` are words too, told apart only where an operator is expected.
    Word,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    kind: Kind,
    text: &'a str,
    /// 1-based character column.
    position: usize,
}

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_symbol(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

/// Splits the selector into tokens, always ending with one `End` token. Every character
/// lands in some token, so lexing itself never fails.
fn lex(input: &str) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut chars = input.char_indices().peekable();
    let mut column = 0usize;
    while let Some((start, c)) = chars.next() {
        column += 1;
        if is_blank(c) {
            continue;
        }
        let position = column;
        if is_symbol(c) {
            let two = match (c, chars.peek()) {
                ('!', Some((_, '='))) => Some(Kind::NotEquals),
                ('=', Some((_, '='))) => Some(Kind::DoubleEquals),
                _ => None,
            };
            let (kind, len) = match two {
                Some(kind) => {
                    chars.next();
                    column += 1;
                    (kind, 2)
                }
                None => {
                    let kind = match c {
                        '=' => Kind::Equals,
                        '!' => Kind::Bang,
                        '(' => Kind::OpenParen,
                        ')' => Kind::CloseParen,
                        ',' => Kind::Comma,
                        '>' => Kind::GreaterThan,
                        _ => Kind::LessThan,
                    };
                    (kind, 1)
                }
            };
            tokens.push(Token {
                kind,
                text: &input[start..start + len],
                position,
            });
            continue;
        }
        let mut end = start + c.len_utf8();
        while let Some(&(i, next)) = chars.peek() {
            if is_blank(next) || is_symbol(next) {
                break;
            }
            chars.next();
            column += 1;
            end = i + next.len_utf8();
        }
        tokens.push(Token {
            kind: Kind::Word,
            text: &input[start..end],
            position,
        });
    }
    tokens.push(Token {
        kind: Kind::End,
        text: "",
        position: column + 1,
    });
    tokens
}

struct Parser<'a> {
    selector: &'a str,
    tokens: Vec<Token<'a>>,
    next: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Token<'a> {
        self.tokens[self.next.min(self.tokens.len() - 1)]
    }

    fn bump(&mut self) -> Token<'a> {
        let token = self.peek();
        if self.next < self.tokens.len() - 1 {
            self.next += 1;
        }
        token
    }

    fn unexpected(&self, token: Token<'_>, expected: &'static str) -> SelectorError {
        if token.kind == Kind::End {
            SelectorError::UnexpectedEnd {
                position: token.position,
                selector: self.selector.to_string(),
                expected,
            }
        } else {
            SelectorError::UnexpectedToken {
                token: token.text.to_string(),
                position: token.position,
                selector: self.selector.to_string(),
                expected,
            }
        }
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        let first = self.peek();
        match first.kind {
            Kind::End => return Ok(requirements),
            Kind::Word | Kind::Bang => {}
            _ => return Err(self.unexpected(first, "a key or `!`")),
        }
        loop {
            requirements.push(self.requirement()?);
            let after = self.bump();
            match after.kind {
                Kind::End => return Ok(requirements),
                Kind::Comma => {
                    let next = self.peek();
                    if !matches!(next.kind, Kind::Word | Kind::Bang) {
                        return Err(self.unexpected(next, "a key or `!` after `,`"));
                    }
                }
                _ => return Err(self.unexpected(after, "`,` or the end of the selector")),
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        let mut key = self.bump();
        let negated = key.kind == Kind::Bang;
        if negated {
            key = self.bump();
        }
        if key.kind != Kind::Word {
            return Err(self.unexpected(key, "a key"));
        }
        check_key(key.text, Some((key.position, self.selector)))?;
        if negated {
            return Ok(Requirement::unchecked(
                key.text.to_string(),
                Operator::DoesNotExist,
                Vec::new(),
            ));
        }
        if matches!(self.peek().kind, Kind::End | Kind::Comma) {
            return Ok(Requirement::unchecked(
                key.text.to_string(),
                Operator::Exists,
                Vec::new(),
            ));
        }
        let op = self.bump();
        let operator = match (op.kind, op.text) {
            (Kind::Word, "in") => Operator::In,
            (Kind::Word, "notin") => Operator::NotIn,
            (Kind::Equals, _) => Operator::Equals,
            (Kind::DoubleEquals, _) => Operator::DoubleEquals,
            (Kind::NotEquals, _) => Operator::NotEquals,
            (Kind::GreaterThan, _) => Operator::GreaterThan,
            (Kind::LessThan, _) => Operator::LessThan,
            _ => {
                return Err(SelectorError::UnknownOperator {
                    operator: op.text.to_string(),
                    expected: OPERATORS_EXPECTED,
                    position: Some(op.position),
                    selector: Some(self.selector.to_string()),
                })
            }
        };
        let values = match operator {
            Operator::In | Operator::NotIn => self.value_list(key.text)?,
            _ => vec![self.single_value()?],
        };
        for (value, position) in &values {
            check_value(key.text, operator, value, Some((*position, self.selector)))?;
        }
        let values = values.into_iter().map(|(v, _)| v.to_string()).collect();
        Ok(Requirement::unchecked(
            key.text.to_string(),
            operator,
            values,
        ))
    }

    /// `( VALUE? ( "," VALUE? )* )`: every slot between the parentheses and commas holds
    /// at most one value, and an empty slot is the empty value.
    fn value_list(&mut self, key: &str) -> Result<Vec<(&'a str, usize)>, SelectorError> {
        let open = self.bump();
        if open.kind != Kind::OpenParen {
            return Err(self.unexpected(open, "`(`"));
        }
        let mut values = Vec::new();
        let mut slot_filled = false;
        loop {
            let token = self.bump();
            match token.kind {
                Kind::Word if !slot_filled => {
                    values.push((token.text, token.position));
                    slot_filled = true;
                }
                Kind::Comma | Kind::CloseParen => {
                    if !slot_filled {
                        values.push(("", token.position));
                    }
                    if token.kind == Kind::CloseParen {
                        return Ok(values);
                    }
                    slot_filled = false;
                }
                Kind::End => {
                    return Err(SelectorError::UnterminatedList {
                        key: key.to_string(),
                        position: open.position,
                        selector: self.selector.to_string(),
                    })
                }
                _ if slot_filled => return Err(self.unexpected(token, "`,` or `)`")),
                _ => return Err(self.unexpected(token, "a value, `,` or `)`")),
            }
        }
    }

    /// The one value after `=`, `==`, `!=`, `>`, `<`; nothing before `,` or the end is the
    /// empty value.
    fn single_value(&mut self) -> Result<(&'a str, usize), SelectorError> {
        let token = self.peek();
        match token.kind {
            Kind::End | Kind::Comma => Ok(("", token.position)),
            Kind::Word => {
                self.bump();
                Ok((token.text, token.position))
            }
            _ => Err(self.unexpected(token, "a value")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(input: &str) -> Vec<Kind> {
        lex(input).iter().map(|t| t.kind).collect()
    }

    #[test]
    fn lexer_takes_the_longest_symbol() {
        use Kind::*;
        assert_eq!(kinds("a!=b"), [Word, NotEquals, Word, End]);
        assert_eq!(kinds("a==b"), [Word, DoubleEquals, Word, End]);
        assert_eq!(kinds("a===b"), [Word, DoubleEquals, Equals, Word, End]);
        assert_eq!(kinds("!!a"), [Bang, Bang, Word, End]);
        assert_eq!(kinds("a>=1"), [Word, GreaterThan, Equals, Word, End]);
        assert_eq!(
            kinds("x in(a)"),
            [Word, Word, OpenParen, Word, CloseParen, End]
        );
        assert_eq!(kinds(" \t\r\n"), [End]);
    }

    #[test]
    fn lexer_positions_are_character_columns() {
        let tokens = lex("ä = b");
        let positions: Vec<usize> = tokens.iter().map(|t| t.position).collect();
        assert_eq!(positions, [1, 3, 5, 6]);
        assert_eq!(tokens[0].text, "ä");
    }

    #[test]
    fn key_rules() {
        assert!(validate_key("a").is_ok());
        assert!(validate_key("A1-b_c.d").is_ok());
        assert!(validate_key("example.com/A").is_ok());
        assert!(validate_key(&"a".repeat(63)).is_ok());
        assert!(validate_key(&"a".repeat(64)).is_err());
        let prefix = format!("{}.com", "a".repeat(249));
        assert_eq!(prefix.len(), 253);
        assert!(validate_key(&format!("{prefix}/n")).is_ok());
        assert!(validate_key(&format!("a{prefix}/n")).is_err());
        for bad in [
            "", "-a", "a-", "a b", "/a", "a/", "A.com/a", "a..b/c", "a/b/c", "ä",
        ] {
            assert!(validate_key(bad).is_err(), "{bad:?} should be invalid");
        }
        // Both rules reported for an empty name.
        assert_eq!(validate_key("").unwrap_err().len(), 2);
    }

    #[test]
    fn value_rules() {
        assert!(validate_value("").is_ok());
        assert!(validate_value("a").is_ok());
        assert!(validate_value(&"a".repeat(63)).is_ok());
        assert!(validate_value(&"a".repeat(64)).is_err());
        for bad in ["-a", "a-", "_a", "a/b", "a b", "é", "a\n"] {
            assert!(validate_value(bad).is_err(), "{bad:?} should be invalid");
        }
    }

    #[test]
    fn new_requirement_checks_counts() {
        assert!(matches!(
            Requirement::new("a", Operator::Equals, ["x", "y"]),
            Err(SelectorError::WrongValueCount { count: 2, .. })
        ));
        assert!(matches!(
            Requirement::new("a", Operator::Exists, ["x"]),
            Err(SelectorError::WrongValueCount { count: 1, .. })
        ));
        assert!(matches!(
            Requirement::new("a", Operator::NotIn, Vec::<&str>::new()),
            Err(SelectorError::MissingValues {
                operator: "notin",
                ..
            })
        ));
        assert!(matches!(
            Requirement::new("a", Operator::GreaterThan, ["x"]),
            Err(SelectorError::InvalidValue { .. })
        ));
        assert!(Requirement::new("a", Operator::LessThan, ["007"]).is_ok());
    }

    #[test]
    fn add_keeps_keys_sorted_and_same_keys_in_order() {
        let s = Selector::new()
            .equals("b", "1")
            .not_equals("a", "2")
            .exists("b")
            .equals("a", "3");
        assert_eq!(s.to_string(), "a!=2,a=3,b=1,b");
    }

    #[test]
    fn nothing_stays_nothing() {
        let s = Selector::nothing().exists("a");
        assert!(s.matches_nothing());
        assert!(!s.is_empty());
        assert!(!s.matches(&BTreeMap::from([("a", "b")])));
    }
}
