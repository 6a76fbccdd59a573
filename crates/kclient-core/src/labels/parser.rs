//! The selector string syntax (`a=b,c in (x,y),!d`): a lexer and a parser.

use super::validation::{check_key, check_value};
use super::{Operator, Requirement, Selector, OPERATORS_EXPECTED};
use crate::SelectorError;

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
pub(super) enum Kind {
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
pub(super) struct Token<'a> {
    pub(super) kind: Kind,
    pub(super) text: &'a str,
    /// 1-based character column.
    pub(super) position: usize,
}

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_symbol(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

/// Splits the selector into tokens, always ending with one `End` token. Every character
/// lands in some token, so lexing itself never fails.
pub(super) fn lex(input: &str) -> Vec<Token<'_>> {
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
