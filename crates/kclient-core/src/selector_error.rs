//! The error shared by label selectors ([`crate::labels`]) and field selectors
//! ([`crate::fields`]).
//!
//! Every error that comes from parsing a selector string names the offending token, the
//! position where it starts and the whole selector, so that a user who typed a selector on
//! a command line can see at once what is wrong. Errors that come from building a selector
//! out of parts (a `metav1.LabelSelector`, [`crate::labels::Requirement::new`]) have no
//! string to point into; their `position` and `selector` are `None`.
//!
//! Positions are 1-based columns counted in characters (Unicode scalar values), not bytes:
//! in `a in x)` the `x` is at position 6.

/// Why a label or field selector could not be parsed, built or converted.
///
/// `position` fields are 1-based character columns into `selector`, the string being
/// parsed. Variants are distinct so that callers can react to a kind of mistake without
/// reading the message.
///
/// ```
/// use kclient_core::labels;
/// use kclient_core::SelectorError;
///
/// let err = labels::parse("a in x)").unwrap_err();
/// assert!(matches!(err, SelectorError::UnexpectedToken { position: 6, .. }));
/// assert_eq!(
///     err.to_string(),
///     "unexpected token `x` at position 6 in `a in x)`: expected `(`"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectorError {
    /// A token appeared where the grammar does not allow it.
    #[error(
        "unexpected token `{token}` at position {position} in `{selector}`: expected {expected}"
    )]
    UnexpectedToken {
        /// The offending token, as written.
        token: String,
        /// 1-based character column where the token starts.
        position: usize,
        /// The selector being parsed.
        selector: String,
        /// What the parser would have accepted here.
        expected: &'static str,
    },

    /// The selector ended where the grammar needs more (for example after a trailing `,`).
    #[error("unexpected end of `{selector}` at position {position}: expected {expected}")]
    UnexpectedEnd {
        /// 1-based character column just past the end of the selector.
        position: usize,
        /// The selector being parsed.
        selector: String,
        /// What the parser would have accepted here.
        expected: &'static str,
    },

    /// An operator that the selector syntax, or `metav1.LabelSelector`, does not know.
    #[error("unknown operator `{operator}`{}: expected one of {expected}", at(.position, .selector))]
    UnknownOperator {
        /// The operator (or the token found where an operator was expected).
        operator: String,
        /// The accepted operators.
        expected: &'static str,
        /// 1-based character column, when parsing a string.
        position: Option<usize>,
        /// The selector being parsed, when parsing a string.
        selector: Option<String>,
    },

    /// A `key in (…)` / `key notin (…)` list whose closing `)` never came.
    #[error("unterminated value list for `{key}` opened at position {position} in `{selector}`: expected `)`")]
    UnterminatedList {
        /// The label key the list belongs to.
        key: String,
        /// 1-based character column of the opening `(`.
        position: usize,
        /// The selector being parsed.
        selector: String,
    },

    /// A label key that is not a qualified name (`[prefix/]name`, name at most 63 bytes of
    /// alphanumerics, `-`, `_`, `.` starting and ending alphanumeric, prefix a lowercase DNS
    /// subdomain of at most 253 bytes).
    #[error("invalid label key `{key}`{}: {reason}", at(.position, .selector))]
    InvalidKey {
        /// The rejected key.
        key: String,
        /// Every rule the key breaks, joined with `; `.
        reason: String,
        /// 1-based character column, when parsing a string.
        position: Option<usize>,
        /// The selector being parsed, when parsing a string.
        selector: Option<String>,
    },

    /// A value that is not a valid label value (at most 63 bytes, empty or alphanumerics,
    /// `-`, `_`, `.` starting and ending alphanumeric), or not an integer for `>` / `<`.
    #[error("invalid value `{value}` for label `{key}`{}: {reason}", at(.position, .selector))]
    InvalidValue {
        /// The key of the requirement the value belongs to.
        key: String,
        /// The rejected value.
        value: String,
        /// Every rule the value breaks, joined with `; `.
        reason: String,
        /// 1-based character column, when parsing a string.
        position: Option<usize>,
        /// The selector being parsed, when parsing a string.
        selector: Option<String>,
    },

    /// An `in` / `notin` requirement with no values at all.
    #[error("`{operator}` requirement on `{key}` needs at least one value")]
    MissingValues {
        /// The key of the requirement.
        key: String,
        /// The operator, spelled as apimachinery's `selection.Operator` (`in`, `notin`).
        operator: &'static str,
    },

    /// A requirement with the wrong number of values: `=`, `==`, `!=`, `>` and `<` take
    /// exactly one, `exists` and `!` take none.
    #[error("`{operator}` requirement on `{key}` takes {expected}, got {count}")]
    WrongValueCount {
        /// The key of the requirement.
        key: String,
        /// The operator, spelled as apimachinery's `selection.Operator`.
        operator: &'static str,
        /// How many values it takes (`"exactly one value"` or `"no values"`).
        expected: &'static str,
        /// How many values it was given.
        count: usize,
    },

    /// A field selector term that has none of the operators `=`, `==`, `!=`.
    #[error("cannot understand term `{term}` at position {position} in `{selector}`: expected `field=value`, `field==value` or `field!=value`")]
    InvalidTerm {
        /// The term, as written (escapes included).
        term: String,
        /// 1-based character column where the term starts.
        position: usize,
        /// The selector being parsed.
        selector: String,
    },

    /// A backslash in a field selector value that is not followed by `\`, `,` or `=`.
    #[error("invalid escape sequence `{sequence}`{}: only `\\\\`, `\\,` and `\\=` are allowed", at(.position, .selector))]
    InvalidEscape {
        /// The sequence as written: a backslash and the character after it, or a lone
        /// trailing backslash.
        sequence: String,
        /// 1-based character column of the backslash, when parsing a selector.
        position: Option<usize>,
        /// The selector being parsed, when parsing a selector.
        selector: Option<String>,
    },

    /// A `,` or `=` in a field selector value that is not escaped with a backslash.
    #[error("unescaped `{character}` in a field selector value{}: write it as `\\{character}`", at(.position, .selector))]
    UnescapedCharacter {
        /// The character, `=` or `,`.
        character: char,
        /// 1-based character column of the character, when parsing a selector.
        position: Option<usize>,
        /// The selector being parsed, when parsing a selector.
        selector: Option<String>,
    },

    /// A selector that cannot be expressed in the requested form (for example `a>1` as a
    /// `metav1.LabelSelector`).
    #[error("cannot represent `{requirement}` {target}: {reason}")]
    NotRepresentable {
        /// The requirement (or selector) in its canonical string form.
        requirement: String,
        /// The form it was converted to, e.g. `"as a metav1.LabelSelector"`.
        target: &'static str,
        /// Why not.
        reason: &'static str,
    },
}

/// Renders " at position N in `selector`" when both are known, nothing otherwise.
fn at(position: &Option<usize>, selector: &Option<String>) -> String {
    match (position, selector) {
        (Some(position), Some(selector)) => format!(" at position {position} in `{selector}`"),
        (Some(position), None) => format!(" at position {position}"),
        _ => String::new(),
    }
}

/// Character-based 1-based column of a byte offset into `input`.
///
/// The offset must be on a character boundary or at the end; anything else is clamped so
/// that this never panics.
pub(crate) fn column(input: &str, byte_offset: usize) -> usize {
    let mut offset = byte_offset.min(input.len());
    while !input.is_char_boundary(offset) {
        offset -= 1;
    }
    input[..offset].chars().count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_counts_characters_from_one() {
        assert_eq!(column("abc", 0), 1);
        assert_eq!(column("abc", 2), 3);
        assert_eq!(column("abc", 3), 4);
        assert_eq!(column("äbc", 2), 2);
        // Not on a boundary, past the end: clamped rather than a panic.
        assert_eq!(column("äbc", 1), 1);
        assert_eq!(column("abc", 99), 4);
    }

    #[test]
    fn location_is_rendered_only_when_known() {
        let with = SelectorError::InvalidKey {
            key: "-a".into(),
            reason: "r".into(),
            position: Some(3),
            selector: Some("x,-a".into()),
        };
        assert_eq!(
            with.to_string(),
            "invalid label key `-a` at position 3 in `x,-a`: r"
        );
        let without = SelectorError::InvalidKey {
            key: "-a".into(),
            reason: "r".into(),
            position: None,
            selector: None,
        };
        assert_eq!(without.to_string(), "invalid label key `-a`: r");
    }

    #[test]
    fn escape_messages_show_single_backslashes() {
        let err = SelectorError::InvalidEscape {
            sequence: "\\x".into(),
            position: None,
            selector: None,
        };
        assert_eq!(
            err.to_string(),
            "invalid escape sequence `\\x`: only `\\\\`, `\\,` and `\\=` are allowed"
        );
        let err = SelectorError::UnescapedCharacter {
            character: '=',
            position: None,
            selector: None,
        };
        assert_eq!(
            err.to_string(),
            "unescaped `=` in a field selector value: write it as `\\=`"
        );
    }
}
