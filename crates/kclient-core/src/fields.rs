//! Field selectors: parse, build, match and render them the way apimachinery does
//! (`k8s.io/apimachinery/pkg/fields`).
//!
//! A field [`Selector`] is a list of `field=value` / `field==value` / `field!=value` terms
//! joined by commas, all of which must hold: `metadata.name=web,status.phase!=Running`.
//! Fields are not validated here (which fields a resource supports is the API server's
//! business). In values, `\`, `,` and `=` are written escaped as `\\`, `\,` and `\=`
//! ([`escape_value`], [`unescape_value`]).
//!
//! ```
//! use std::collections::BTreeMap;
//! use kclient_core::fields::{self, Selector};
//!
//! let selector = fields::parse("status.phase!=Running,metadata.name=web")?;
//! assert_eq!(selector.to_string(), "metadata.name=web,status.phase!=Running");
//! assert_eq!(selector.requires_exact_match("metadata.name"), Some("web"));
//!
//! let pod = BTreeMap::from([
//!     ("metadata.name", "web"),
//!     ("status.phase", "Pending"),
//! ]);
//! assert!(selector.matches(&pod));
//!
//! let built = Selector::new()
//!     .equals("metadata.name", "web")
//!     .not_equals("status.phase", "Running");
//! assert_eq!(built, selector);
//! # Ok::<(), kclient_core::SelectorError>(())
//! ```
//!
//! As in apimachinery, a field that is absent reads as the empty string: `f=` matches an
//! object without `f`, and `f!=x` matches it too.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::str::FromStr;

use crate::lookup_fn::LookupFn;
use crate::selector_error::column;
use crate::SelectorError;

/// How a field [`Requirement`] compares a field with its value.
///
/// `field==value` parses as [`Operator::Equals`]: apimachinery treats `=` and `==` as the
/// same term and reports both as `selection.Equals`.
///
/// ```
/// use kclient_core::fields::Operator;
///
/// assert_eq!(Operator::NotEquals.as_str(), "!=");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `field=value` (or `field==value`): the field has this value.
    Equals,
    /// `field!=value`: the field has another value.
    NotEquals,
}

impl Operator {
    /// The operator as written in a selector: `=` or `!=`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::NotEquals => "!=",
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Read access to an object's selectable fields (apimachinery's `fields.Fields`).
///
/// An absent field (`None`) is treated as the empty string when matching. Implemented for
/// `BTreeMap` and `HashMap` with string keys and values, for `Option` of those and for
/// references.
///
/// ```
/// use std::collections::BTreeMap;
/// use kclient_core::fields::Fields;
///
/// let fields = BTreeMap::from([("metadata.name".to_string(), "web".to_string())]);
/// assert_eq!(fields.lookup("metadata.name"), Some("web"));
/// assert_eq!(fields.lookup("spec.nodeName"), None);
/// ```
pub trait Fields {
    /// The value of `field`, or `None` when the object has no such field.
    fn lookup(&self, field: &str) -> Option<&str>;
}

impl<K, V> Fields for BTreeMap<K, V>
where
    K: Borrow<str> + Ord,
    V: AsRef<str>,
{
    fn lookup(&self, field: &str) -> Option<&str> {
        self.get(field).map(AsRef::as_ref)
    }
}

impl<K, V, S> Fields for HashMap<K, V, S>
where
    K: Borrow<str> + Hash + Eq,
    V: AsRef<str>,
    S: BuildHasher,
{
    fn lookup(&self, field: &str) -> Option<&str> {
        self.get(field).map(AsRef::as_ref)
    }
}

impl<T: Fields> Fields for Option<T> {
    fn lookup(&self, field: &str) -> Option<&str> {
        self.as_ref().and_then(|fields| fields.lookup(field))
    }
}

impl<T: Fields + ?Sized> Fields for &T {
    fn lookup(&self, field: &str) -> Option<&str> {
        (**self).lookup(field)
    }
}

impl<'a, F> Fields for LookupFn<'a, F>
where
    F: Fn(&str) -> Option<&'a str>,
{
    fn lookup(&self, field: &str) -> Option<&str> {
        self.get(field)
    }
}

/// One term of a field [`Selector`] (apimachinery's `fields.Requirement`).
///
/// ```
/// use kclient_core::fields::{Operator, Requirement};
///
/// let req = Requirement::new("metadata.name", Operator::Equals, "a,b");
/// assert_eq!(req.value(), "a,b");
/// assert_eq!(req.to_string(), r"metadata.name=a\,b");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    field: String,
    operator: Operator,
    value: String,
}

impl Requirement {
    /// A term comparing `field` with `value` (the unescaped value). Field selectors have
    /// no client-side validation, so this cannot fail.
    pub fn new(field: impl Into<String>, operator: Operator, value: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            operator,
            value: value.into(),
        }
    }

    /// The field, e.g. `metadata.name`.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// `=` or `!=`.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The value, unescaped.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Whether `fields` satisfy this term; an absent field reads as `""`.
    pub fn matches<F: Fields + ?Sized>(&self, fields: &F) -> bool {
        let actual = fields.lookup(&self.field).unwrap_or("");
        match self.operator {
            Operator::Equals => actual == self.value,
            Operator::NotEquals => actual != self.value,
        }
    }

    /// The apimachinery rule that drops a term whose field and value are both empty.
    fn is_blank(&self) -> bool {
        self.field.is_empty() && self.value.is_empty()
    }
}

impl fmt::Display for Requirement {
    /// `field=value` or `field!=value`, with the value escaped by [`escape_value`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.field)?;
        f.write_str(self.operator.as_str())?;
        f.write_str(&escape_value(&self.value))
    }
}

/// A field selector: terms that must all hold (apimachinery's `fields.Selector`).
///
/// Terms are kept in canonical order, sorted by their rendered text, which is the order
/// apimachinery's parser produces (it sorts the terms as written; the two orders differ
/// only for terms written with `==`). Terms whose field and value are both empty are
/// dropped, as apimachinery's parser drops them. [`Selector::nothing`] matches no
/// object at all.
///
/// `Selector::default()` and [`Selector::new`] are [`Selector::everything`].
///
/// ```
/// use kclient_core::fields::Selector;
///
/// let selector: Selector = r"metadata.name=a\=b".parse()?;
/// assert_eq!(selector.requires_exact_match("metadata.name"), Some("a=b"));
/// assert_eq!(selector.to_string(), r"metadata.name=a\=b");
/// # Ok::<(), kclient_core::SelectorError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Selector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl Selector {
    /// An empty selector, which matches everything; add terms with
    /// [`equals`](Self::equals) and [`not_equals`](Self::not_equals).
    pub fn new() -> Self {
        Self::default()
    }

    /// The selector that matches every object (renders as the empty string).
    pub fn everything() -> Self {
        Self::default()
    }

    /// The selector that matches nothing (apimachinery's `fields.Nothing()`). Like
    /// apimachinery's it renders as the empty string, which parses back to
    /// [`Selector::everything`]; adding terms to it leaves it matching nothing.
    pub fn nothing() -> Self {
        Self {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Adds a term in canonical order. A term whose field and value are both empty is
    /// dropped, and [`Selector::nothing`] stays nothing.
    pub fn add_requirement(mut self, requirement: Requirement) -> Self {
        if self.nothing || requirement.is_blank() {
            return self;
        }
        let text = requirement.to_string();
        let at = self
            .requirements
            .partition_point(|existing| existing.to_string() <= text);
        self.requirements.insert(at, requirement);
        self
    }

    /// Adds `field=value` (`value` unescaped).
    pub fn equals(self, field: impl Into<String>, value: impl Into<String>) -> Self {
        self.add_requirement(Requirement::new(field, Operator::Equals, value))
    }

    /// Adds `field!=value` (`value` unescaped).
    pub fn not_equals(self, field: impl Into<String>, value: impl Into<String>) -> Self {
        self.add_requirement(Requirement::new(field, Operator::NotEquals, value))
    }

    /// The terms, in canonical order.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether this selector places no restriction (apimachinery's `Empty()`): true for
    /// [`Selector::everything`], false for [`Selector::nothing`].
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// Whether this is [`Selector::nothing`].
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// Whether `fields` satisfy every term (always false for [`Selector::nothing`]).
    pub fn matches<F: Fields + ?Sized>(&self, fields: &F) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(fields))
    }

    /// [`matches`](Self::matches) with a lookup closure: `lookup(field)` returns the
    /// field's value, or `None` when the object has no such field (read as `""`).
    ///
    /// ```
    /// use kclient_core::fields::Selector;
    ///
    /// let selector = Selector::new().equals("metadata.namespace", "default");
    /// let namespace = String::from("default");
    /// assert!(selector.matches_fn(|field| match field {
    ///     "metadata.namespace" => Some(namespace.as_str()),
    ///     _ => None,
    /// }));
    /// ```
    pub fn matches_fn<'a, F>(&self, lookup: F) -> bool
    where
        F: Fn(&str) -> Option<&'a str>,
    {
        self.matches(&LookupFn::new(lookup))
    }

    /// If some `=` term pins `field`, its value (the first such term's), as apimachinery's
    /// `RequiresExactMatch`. `!=` terms never count. This is how a server answers
    /// `metadata.name=x` or `metadata.namespace=y` without scanning.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.operator == Operator::Equals && r.field == field)
            .map(|r| r.value.as_str())
    }

    /// Rewrites every term's field and value with `f` (apimachinery's `Transform`, used
    /// by servers to map field labels between versions). A term that `f` turns into an
    /// empty field and an empty value is dropped; the first error stops the rewrite.
    /// [`Selector::nothing`] stays nothing.
    ///
    /// ```
    /// use kclient_core::fields::{self, Selector};
    ///
    /// let selector = fields::parse("spec.host=node-1")?;
    /// let renamed = selector.transform(|field, value| match field {
    ///     "spec.host" => Ok(("spec.nodeName".to_string(), value.to_string())),
    ///     other => Err(format!("field label not supported: {other}")),
    /// });
    /// assert_eq!(renamed.unwrap().to_string(), "spec.nodeName=node-1");
    /// # Ok::<(), kclient_core::SelectorError>(())
    /// ```
    pub fn transform<E, F>(&self, mut f: F) -> Result<Selector, E>
    where
        F: FnMut(&str, &str) -> Result<(String, String), E>,
    {
        if self.nothing {
            return Ok(Self::nothing());
        }
        let mut out = Self::new();
        for requirement in &self.requirements {
            let (field, value) = f(&requirement.field, &requirement.value)?;
            out = out.add_requirement(Requirement::new(field, requirement.operator, value));
        }
        Ok(out)
    }
}

impl fmt::Display for Selector {
    /// The canonical string (apimachinery's `String()`): terms joined by `,`, values
    /// escaped; the empty string for everything and for nothing.
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

/// Escapes a literal value for a field selector: `\` → `\\`, `,` → `\,`, `=` → `\=`
/// (apimachinery's `fields.EscapeValue`).
///
/// ```
/// use kclient_core::fields::escape_value;
///
/// assert_eq!(escape_value(r"a\b,c=d"), r"a\\b\,c\=d");
/// ```
pub fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Reverses [`escape_value`] (apimachinery's `fields.UnescapeValue`): `\\`, `\,` and `\=`
/// become `\`, `,` and `=`; any other backslash sequence, a trailing lone backslash
/// ([`SelectorError::InvalidEscape`]) or an unescaped `,` or `=`
/// ([`SelectorError::UnescapedCharacter`]) is an error. Positions in these errors count
/// from 1 within `value`.
///
/// ```
/// use kclient_core::fields::unescape_value;
///
/// assert_eq!(unescape_value(r"a\\b\,c\=d")?, r"a\b,c=d");
/// assert!(unescape_value(r"a\b").is_err());
/// assert!(unescape_value("a=b").is_err());
/// # Ok::<(), kclient_core::SelectorError>(())
/// ```
pub fn unescape_value(value: &str) -> Result<String, SelectorError> {
    unescape_in(value, value, 0, false)
}

/// Unescapes `value`, which starts at byte `offset` of `context`; errors point into
/// `context`, which is named in them when `named` is set.
fn unescape_in(
    value: &str,
    context: &str,
    offset: usize,
    named: bool,
) -> Result<String, SelectorError> {
    let selector = || named.then(|| context.to_string());
    let mut out = String::with_capacity(value.len());
    let mut backslash_at = None;
    for (i, c) in value.char_indices() {
        if let Some(at) = backslash_at.take() {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(SelectorError::InvalidEscape {
                    sequence: format!("\\{c}"),
                    position: Some(column(context, offset + at)),
                    selector: selector(),
                });
            }
            out.push(c);
            continue;
        }
        match c {
            '\\' => backslash_at = Some(i),
            ',' | '=' => {
                return Err(SelectorError::UnescapedCharacter {
                    character: c,
                    position: Some(column(context, offset + i)),
                    selector: selector(),
                })
            }
            _ => out.push(c),
        }
    }
    if let Some(at) = backslash_at {
        return Err(SelectorError::InvalidEscape {
            sequence: "\\".to_string(),
            position: Some(column(context, offset + at)),
            selector: selector(),
        });
    }
    Ok(out)
}

/// Parses a field selector string (apimachinery's `fields.ParseSelector`).
///
/// The string is split at commas not escaped by a backslash; empty terms are skipped.
/// Each term is split at the first `!=`, `==` or `=` (checked in that order at each
/// position), the left side is the field as written (no trimming, no unescaping) and the
/// right side the value, unescaped by the rules of [`unescape_value`]. The empty string
/// is [`Selector::everything`].
///
/// ```
/// use kclient_core::fields;
/// use kclient_core::SelectorError;
///
/// let selector = fields::parse("metadata.name==web,")?;
/// assert_eq!(selector.to_string(), "metadata.name=web");
///
/// let err = fields::parse("metadata.name=a,spec").unwrap_err();
/// assert!(matches!(err, SelectorError::InvalidTerm { position: 17, .. }));
/// # Ok::<(), kclient_core::SelectorError>(())
/// ```
pub fn parse(selector: &str) -> Result<Selector, SelectorError> {
    let mut out = Selector::new();
    for (start, term) in split_terms(selector) {
        if term.is_empty() {
            continue;
        }
        let Some((field, operator, value_start)) = split_term(term) else {
            return Err(SelectorError::InvalidTerm {
                term: term.to_string(),
                position: column(selector, start),
                selector: selector.to_string(),
            });
        };
        let value = unescape_in(&term[value_start..], selector, start + value_start, true)?;
        out = out.add_requirement(Requirement::new(field, operator, value));
    }
    Ok(out)
}

/// The terms of `selector` with their byte offsets: split at commas that are not escaped
/// (a backslash escapes whatever character follows it).
fn split_terms(selector: &str) -> Vec<(usize, &str)> {
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in selector.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push((start, &selector[start..i]));
            start = i + 1;
        }
    }
    terms.push((start, &selector[start..]));
    terms
}

/// Splits a term at the first operator: field, operator, byte offset of the value.
fn split_term(term: &str) -> Option<(&str, Operator, usize)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        let found = if rest.starts_with("!=") {
            Some((Operator::NotEquals, 2))
        } else if rest.starts_with("==") {
            Some((Operator::Equals, 2))
        } else if rest.starts_with('=') {
            Some((Operator::Equals, 1))
        } else {
            None
        };
        if let Some((operator, len)) = found {
            return Some((&term[..i], operator, i + len));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_terms_keeps_escaped_commas() {
        let terms: Vec<&str> = split_terms(r"a=b\,c,d=e\\,f=g")
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        assert_eq!(terms, [r"a=b\,c", r"d=e\\", "f=g"]);
        assert_eq!(split_terms(""), [(0, "")]);
        assert_eq!(split_terms(",")[1], (1, ""));
    }

    #[test]
    fn split_term_prefers_the_first_position() {
        assert_eq!(split_term("a!=b"), Some(("a", Operator::NotEquals, 3)));
        assert_eq!(split_term("a==b"), Some(("a", Operator::Equals, 3)));
        assert_eq!(split_term("a=!b"), Some(("a", Operator::Equals, 2)));
        assert_eq!(split_term("!a=b"), Some(("!a", Operator::Equals, 3)));
        assert_eq!(split_term("äb=c"), Some(("äb", Operator::Equals, 4)));
        assert_eq!(split_term("abc"), None);
    }

    #[test]
    fn unescape_positions_point_into_the_selector() {
        let err = parse(r"x=1,ä=a\qb").unwrap_err();
        assert_eq!(
            err,
            SelectorError::InvalidEscape {
                sequence: r"\q".into(),
                position: Some(8),
                selector: Some(r"x=1,ä=a\qb".into()),
            }
        );
    }

    #[test]
    fn blank_terms_are_dropped() {
        assert!(parse("=").unwrap().is_empty());
        assert!(parse("!=,==").unwrap().is_empty());
        assert!(Selector::new().equals("", "").is_empty());
        assert_eq!(parse("=x").unwrap().to_string(), "=x");
    }
}
