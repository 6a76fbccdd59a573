//! [`Selector`]: requirements that must all hold, and its conversions to and from a
//! `metav1.LabelSelector`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use super::{parse, Labels, Operator, Requirement, LABEL_SELECTOR_OPERATORS};
use crate::lookup_fn::LookupFn;
use crate::SelectorError;

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

    pub(super) fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
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
        self.matches(&LookupFn::new(lookup))
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
