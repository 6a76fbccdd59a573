//! The label selector's behaviours, pinned against apimachinery's.

use super::parser::{lex, Kind};
use super::*;
use crate::SelectorError;

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
