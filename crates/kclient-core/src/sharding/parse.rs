//! Reading a `shardSelector` expression as kube-apiserver 1.37 does: the expression is
//! parsed as CEL (without evaluating it), then its tree must be `shardRange(field, 'start',
//! 'end')` calls joined by `||`, with the checks and messages of the server's
//! `sharding.Parse`.
//!
//! The CEL grammar is read far enough to find the same tree cel-go finds for any expression
//! (operators with CEL's precedence, member calls, indexes, lists, maps, literals), so that an
//! expression the server refuses for its shape (`&&`, a comparison, a number where a string
//! should be) is refused with the server's words; only a syntax error's detail is worded
//! here rather than by cel-go.

use super::{ShardKey, ShardRange, ShardSelector, ShardSelectorError, HASH_SPACE_END};
use crate::go_format::quote;

/// Parses `expression` (see the module).
pub(super) fn parse(expression: &str) -> Result<ShardSelector, ShardSelectorError> {
    let expression = expression.trim_matches(|c: char| c.is_whitespace());
    if expression.is_empty() {
        return Err(error(
            "empty shard selector is not allowed; omit the parameter for unfiltered lists".into(),
        ));
    }
    let tree = Parser::new(expression)
        .and_then(Parser::parse_all)
        .map_err(|syntax| error(format!("CEL parse error: Syntax error: {syntax}")))?;
    let mut requirements = Vec::new();
    walk(&tree, &mut requirements)?;
    let key = requirements[0].0;
    if let Some((other, _)) = requirements.iter().find(|(k, _)| *k != key) {
        return Err(error(format!(
            "all shard ranges must use the same field, got {} and {}",
            quote(key.field_path()),
            quote(other.field_path())
        )));
    }
    ShardSelector::new(key, requirements.into_iter().map(|(_, range)| range))
}

fn error(message: String) -> ShardSelectorError {
    ShardSelectorError::new(message)
}

/// A CEL expression tree, as far as the checks need it.
#[derive(Debug, Clone, PartialEq)]
enum Expr {
    /// A function or operator call (operators by cel-go's names: `_||_`, `_&&_`, ...).
    Call {
        function: String,
        args: Vec<Expr>,
    },
    Ident(String),
    Select {
        operand: Box<Expr>,
        field: String,
    },
    Literal(Literal),
    List,
    Map,
}

impl Expr {
    /// cel-go's `ast.ExprKind` number, which the server prints with `%v`.
    fn kind(&self) -> u8 {
        match self {
            Self::Call { .. } => 1,
            Self::Ident(_) => 3,
            Self::List => 4,
            Self::Literal(_) => 5,
            Self::Map => 6,
            Self::Select { .. } => 7,
        }
    }

    fn call(function: &str, args: Vec<Expr>) -> Self {
        Self::Call {
            function: function.to_owned(),
            args,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Literal {
    String(String),
    Bytes,
    Int,
    Uint,
    Double,
    Bool,
    Null,
}

impl Literal {
    /// The Go type of the literal's value, as `%T` prints it.
    fn go_type(&self) -> &'static str {
        match self {
            Self::String(_) => "string",
            Self::Bytes => "[]uint8",
            Self::Int => "int64",
            Self::Uint => "uint64",
            Self::Double => "float64",
            Self::Bool => "bool",
            Self::Null => "structpb.NullValue",
        }
    }
}

/// The server's walk: `||` calls and `shardRange` calls, nothing else.
fn walk(
    expr: &Expr,
    requirements: &mut Vec<(ShardKey, ShardRange)>,
) -> Result<(), ShardSelectorError> {
    match expr {
        Expr::Call { function, args } if function == "_||_" => {
            for arg in args {
                walk(arg, requirements)?;
            }
            Ok(())
        }
        Expr::Call { function, args } if function == "shardRange" => {
            requirements.push(shard_range(args)?);
            Ok(())
        }
        Expr::Call { function, .. } => Err(error(format!(
            "unsupported function {}; only shardRange() and || are allowed",
            quote(function)
        ))),
        other => Err(error(format!(
            "unexpected expression kind {}; expected shardRange() call or || operator",
            other.kind()
        ))),
    }
}

fn shard_range(args: &[Expr]) -> Result<(ShardKey, ShardRange), ShardSelectorError> {
    if args.len() != 3 {
        return Err(error(format!(
            "shardRange() requires exactly 3 arguments, got {}",
            args.len()
        )));
    }
    let path = field_path(&args[0])
        .map_err(|e| error(format!("shardRange() first argument: {}", e.message())))?;
    let key = ShardKey::from_field_path(&path).ok_or_else(|| {
        error(format!(
            "unsupported field path {}; supported: object.metadata.uid, object.metadata.namespace",
            quote(&path)
        ))
    })?;
    let start = hex_literal(&args[1], "hexStart")?;
    let end = hex_literal(&args[2], "hexEnd")?;
    if start >= end {
        return Err(error(format!(
            "shard range start {} must be less than end {}",
            written(start),
            written(end)
        )));
    }
    // start < end <= 2^64, so start fits.
    let range = ShardRange::new(start as u64, end)?;
    Ok((key, range))
}

/// A bound as the checks below accept it (16 digits, or 2^64).
fn written(bound: u128) -> String {
    format!("0x{bound:016x}")
}

fn field_path(expr: &Expr) -> Result<String, ShardSelectorError> {
    match expr {
        Expr::Ident(name) => Ok(name.clone()),
        Expr::Select { operand, field } => Ok(format!("{}.{field}", field_path(operand)?)),
        other => Err(error(format!(
            "expected field path (e.g. object.metadata.uid), got expression kind {}",
            other.kind()
        ))),
    }
}

/// A bound: a string literal `0x` and 16 lowercase hex digits, or 2^64.
fn hex_literal(expr: &Expr, name: &str) -> Result<u128, ShardSelectorError> {
    let Expr::Literal(literal) = expr else {
        return Err(error(format!(
            "{name} must be a string literal (e.g. '0xff'), got expression kind {}",
            expr.kind()
        )));
    };
    let Literal::String(s) = literal else {
        return Err(error(format!(
            "{name} must be a string literal, got {}",
            literal.go_type()
        )));
    };
    let Some(hex) = s.strip_prefix("0x") else {
        return Err(error(format!(
            "{name} must have '0x' prefix, got {}",
            quote(s)
        )));
    };
    if hex.is_empty() {
        return Err(error(format!("{name}: hex value is required after '0x'")));
    }
    if hex.len() > 17 {
        return Err(error(format!(
            "{name}: hex value too long ({} chars, max 17): {}",
            hex.len(),
            quote(hex)
        )));
    }
    if let Some(c) = hex.chars().find(|c| !matches!(c, '0'..='9' | 'a'..='f')) {
        return Err(error(format!(
            "{name}: invalid hex character {} in {}",
            quote(&c.to_string()),
            quote(s)
        )));
    }
    if hex.len() == 17 {
        if s != "0x10000000000000000" {
            return Err(error(format!(
                "{name}: 17-digit hex value must be '0x10000000000000000' (2^64), got {}",
                quote(s)
            )));
        }
        return Ok(HASH_SPACE_END);
    }
    if hex.len() != 16 {
        let padded = format!("0x{hex:0>16}");
        return Err(error(format!(
            "{name} must be a 0x-prefixed 16-digit hex value, got {} (did you mean {}?)",
            quote(s),
            quote(&padded)
        )));
    }
    // 16 hex digits always fit.
    Ok(u128::from_str_radix(hex, 16).unwrap_or_default())
}

/// A CEL token.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Literal(Literal),
    /// Punctuation and operators, as written (`(`, `||`, `<=`, ...).
    Punct(&'static str),
}

/// The operators and punctuation, longest first.
const PUNCTUATION: &[&str] = &[
    "||", "&&", "==", "!=", "<=", ">=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "?", "!", "-",
    "+", "*", "/", "%", "<", ">",
];

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c.is_whitespace() {
            rest = &rest[c.len_utf8()..];
        } else if rest.starts_with("//") {
            rest = rest.find('\n').map_or("", |i| &rest[i..]);
        } else if let Some((literal, after)) = string_literal(rest)? {
            tokens.push(Token::Literal(literal));
            rest = after;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let word = &rest[..end];
            tokens.push(match word {
                "true" | "false" => Token::Literal(Literal::Bool),
                "null" => Token::Literal(Literal::Null),
                "in" => Token::Punct("in"),
                _ => Token::Ident(word.to_owned()),
            });
            rest = &rest[end..];
        } else if c.is_ascii_digit()
            || (c == '.' && rest[1..].starts_with(|d: char| d.is_ascii_digit()))
        {
            let (literal, after) = number(rest)?;
            tokens.push(Token::Literal(literal));
            rest = after;
        } else if let Some(p) = PUNCTUATION.iter().find(|p| rest.starts_with(**p)) {
            tokens.push(Token::Punct(p));
            rest = &rest[p.len()..];
        } else {
            return Err(format!(
                "token recognition error at: {}",
                quote(&c.to_string())
            ));
        }
    }
    Ok(tokens)
}

/// A string or bytes literal at the start of `text` (with its `r`/`b` prefixes, in single,
/// double or triple quotes), and the text after it.
fn string_literal(text: &str) -> Result<Option<(Literal, &str)>, String> {
    let prefix_len = text
        .find(|c: char| !matches!(c, 'r' | 'R' | 'b' | 'B'))
        .unwrap_or(text.len())
        .min(2);
    let (prefix, body) = text.split_at(prefix_len);
    if !(body.starts_with('\'') || body.starts_with('"')) {
        return Ok(None);
    }
    let raw = prefix.contains(['r', 'R']);
    let bytes = prefix.contains(['b', 'B']);
    let quote_char = &body[..1];
    let triple = quote_char.repeat(3);
    let delimiter = if body.starts_with(&triple) {
        triple.as_str()
    } else {
        quote_char
    };
    let mut value = String::new();
    let mut rest = &body[delimiter.len()..];
    loop {
        if let Some(after) = rest.strip_prefix(delimiter) {
            let literal = match bytes {
                true => Literal::Bytes,
                false => Literal::String(value),
            };
            return Ok(Some((literal, after)));
        }
        let Some(c) = rest.chars().next() else {
            return Err("unterminated string literal".into());
        };
        if (c == '\n' || c == '\r') && delimiter.len() == 1 {
            return Err("newline in a single-quoted string literal".into());
        }
        if c == '\\' && !raw {
            let (unescaped, after) = escape(&rest[1..])?;
            value.push(unescaped);
            rest = after;
        } else {
            value.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
}

/// The character an escape sequence (after its backslash) stands for, and the text after it.
fn escape(text: &str) -> Result<(char, &str), String> {
    let c = text.chars().next().ok_or("unterminated string literal")?;
    let simple = match c {
        'a' => Some('\u{7}'),
        'b' => Some('\u{8}'),
        'f' => Some('\u{c}'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\u{b}'),
        '\\' | '\'' | '"' | '`' | '?' => Some(c),
        _ => None,
    };
    if let Some(simple) = simple {
        return Ok((simple, &text[1..]));
    }
    let (digits, radix) = match c {
        'x' | 'X' => (2, 16),
        'u' => (4, 16),
        'U' => (8, 16),
        '0'..='3' => (3, 8),
        _ => return Err(format!("invalid escape sequence \\{c}")),
    };
    let start = if radix == 8 { 0 } else { 1 };
    let code = text
        .get(start..start + digits)
        .and_then(|d| u32::from_str_radix(d, radix).ok())
        .and_then(char::from_u32)
        .ok_or_else(|| format!("invalid escape sequence \\{c}"))?;
    Ok((code, &text[start + digits..]))
}

/// A number literal at the start of `text`, and the text after it.
fn number(text: &str) -> Result<(Literal, &str), String> {
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        let end = hex
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(hex.len());
        if end == 0 {
            return Err("hex literal without digits".into());
        }
        return Ok(unsigned_suffix(&hex[end..]));
    }
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E'))
        .unwrap_or(text.len());
    let mut end = end;
    // An exponent's sign.
    if text[..end].ends_with(['e', 'E']) && text[end..].starts_with(['+', '-']) {
        end += 1 + text[end + 1..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len() - end - 1);
    }
    let number = &text[..end];
    if number.contains(['.', 'e', 'E']) {
        number
            .parse::<f64>()
            .map_err(|_| format!("invalid number {}", quote(number)))?;
        return Ok((Literal::Double, &text[end..]));
    }
    Ok(unsigned_suffix(&text[end..]))
}

fn unsigned_suffix(after: &str) -> (Literal, &str) {
    match after.strip_prefix(['u', 'U']) {
        Some(after) => (Literal::Uint, after),
        None => (Literal::Int, after),
    }
}

/// A recursive-descent parser of CEL expressions (its precedence: `?:`, `||`, `&&`,
/// relations, `+ -`, `* / %`, unary `! -`, members).
struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn new(text: &str) -> Result<Self, String> {
        Ok(Self {
            tokens: tokenize(text)?,
            at: 0,
        })
    }

    fn parse_all(mut self) -> Result<Expr, String> {
        let expr = self.conditional()?;
        match self.peek() {
            None => Ok(expr),
            Some(token) => Err(format!("extraneous input {}", describe(token))),
        }
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn eat(&mut self, punct: &str) -> bool {
        let found = matches!(self.peek(), Some(Token::Punct(p)) if *p == punct);
        self.at += usize::from(found);
        found
    }

    fn expect(&mut self, punct: &str) -> Result<(), String> {
        if self.eat(punct) {
            return Ok(());
        }
        Err(match self.peek() {
            Some(token) => format!("mismatched input {} expecting '{punct}'", describe(token)),
            None => format!("mismatched input '<EOF>' expecting '{punct}'"),
        })
    }

    fn conditional(&mut self) -> Result<Expr, String> {
        let condition = self.binary(0)?;
        if !self.eat("?") {
            return Ok(condition);
        }
        let then = self.binary(0)?;
        self.expect(":")?;
        let otherwise = self.conditional()?;
        Ok(Expr::call("_?_:_", vec![condition, then, otherwise]))
    }

    /// Binary operators from precedence `level` up.
    fn binary(&mut self, level: usize) -> Result<Expr, String> {
        const LEVELS: &[&[(&str, &str)]] = &[
            &[("||", "_||_")],
            &[("&&", "_&&_")],
            &[
                ("==", "_==_"),
                ("!=", "_!=_"),
                ("<=", "_<=_"),
                (">=", "_>=_"),
                ("<", "_<_"),
                (">", "_>_"),
                ("in", "@in"),
            ],
            &[("+", "_+_"), ("-", "_-_")],
            &[("*", "_*_"), ("/", "_/_"), ("%", "_%_")],
        ];
        let Some(operators) = LEVELS.get(level) else {
            return self.unary();
        };
        let mut left = self.binary(level + 1)?;
        'operators: loop {
            for (written, function) in *operators {
                if self.eat(written) {
                    let right = self.binary(level + 1)?;
                    left = Expr::call(function, vec![left, right]);
                    continue 'operators;
                }
            }
            return Ok(left);
        }
    }

    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat("!") {
            return Ok(Expr::call("!_", vec![self.unary()?]));
        }
        if self.eat("-") {
            // cel-go folds the minus into a number literal.
            let operand = self.unary()?;
            return Ok(match operand {
                Expr::Literal(Literal::Int | Literal::Double) => operand,
                _ => Expr::call("-_", vec![operand]),
            });
        }
        self.member()
    }

    fn member(&mut self) -> Result<Expr, String> {
        let mut expr = self.primary()?;
        loop {
            if self.eat(".") {
                let field = self.ident()?;
                if self.eat("(") {
                    // A member call: the target is not one of the arguments.
                    let args = self.arguments()?;
                    expr = Expr::Call {
                        function: field,
                        args,
                    };
                } else {
                    expr = Expr::Select {
                        operand: Box::new(expr),
                        field,
                    };
                }
            } else if self.eat("[") {
                let index = self.conditional()?;
                self.expect("]")?;
                expr = Expr::call("_[_]", vec![expr, index]);
            } else if matches!(expr, Expr::Ident(_) | Expr::Select { .. }) && self.eat("{") {
                self.fields()?;
                expr = Expr::Map;
            } else {
                return Ok(expr);
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, String> {
        let leading_dot = self.eat(".");
        let token = self.peek().cloned();
        self.at += 1;
        match token {
            Some(Token::Ident(name)) => {
                let name = if leading_dot {
                    format!(".{name}")
                } else {
                    name
                };
                if self.eat("(") {
                    let args = self.arguments()?;
                    return Ok(Expr::Call {
                        function: name,
                        args,
                    });
                }
                Ok(Expr::Ident(name))
            }
            _ if leading_dot => Err("identifier expected after '.'".into()),
            Some(Token::Literal(literal)) => Ok(Expr::Literal(literal)),
            Some(Token::Punct("(")) => {
                let expr = self.conditional()?;
                self.expect(")")?;
                Ok(expr)
            }
            Some(Token::Punct("[")) => {
                self.elements()?;
                Ok(Expr::List)
            }
            Some(Token::Punct("{")) => {
                self.fields()?;
                Ok(Expr::Map)
            }
            Some(token) => Err(format!("mismatched input {}", describe(&token))),
            None => Err("mismatched input '<EOF>'".into()),
        }
    }

    fn ident(&mut self) -> Result<String, String> {
        match self.peek().cloned() {
            Some(Token::Ident(name)) => {
                self.at += 1;
                Ok(name)
            }
            Some(token) => Err(format!(
                "mismatched input {} expecting IDENTIFIER",
                describe(&token)
            )),
            None => Err("mismatched input '<EOF>' expecting IDENTIFIER".into()),
        }
    }

    /// A call's arguments up to `)` (no trailing comma, as in CEL's grammar).
    fn arguments(&mut self) -> Result<Vec<Expr>, String> {
        let mut args = Vec::new();
        if self.eat(")") {
            return Ok(args);
        }
        loop {
            args.push(self.conditional()?);
            if !self.eat(",") {
                self.expect(")")?;
                return Ok(args);
            }
        }
    }

    /// A list literal's elements up to `]` (a trailing comma allowed).
    fn elements(&mut self) -> Result<(), String> {
        while !self.eat("]") {
            self.conditional()?;
            if !self.eat(",") {
                self.expect("]")?;
                break;
            }
        }
        Ok(())
    }

    /// `key: value` entries up to `}`.
    fn fields(&mut self) -> Result<(), String> {
        while !self.eat("}") {
            self.conditional()?;
            self.expect(":")?;
            self.conditional()?;
            if !self.eat(",") {
                self.expect("}")?;
                break;
            }
        }
        Ok(())
    }
}

fn describe(token: &Token) -> String {
    match token {
        Token::Ident(name) => format!("'{name}'"),
        Token::Punct(p) => format!("'{p}'"),
        Token::Literal(_) => "a literal".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZERO: &str = "0x0000000000000000";
    const HALF: &str = "0x8000000000000000";
    const END: &str = "0x10000000000000000";

    fn ok(expression: &str) -> ShardSelector {
        parse(expression).unwrap_or_else(|e| panic!("{expression}: {e}"))
    }

    fn err(expression: &str) -> String {
        match parse(expression) {
            Ok(s) => panic!("{expression}: parsed as {s}"),
            Err(e) => e.message().to_owned(),
        }
    }

    #[test]
    fn the_servers_accepted_expressions() {
        let one = ok(&format!(
            "shardRange(object.metadata.uid, '{ZERO}', '{HALF}')"
        ));
        assert_eq!(one.key(), ShardKey::Uid);
        assert_eq!(one.ranges(), [ShardRange::new(0, 1 << 63).unwrap()]);
        let full = ok(&format!(
            "shardRange(object.metadata.uid, '{ZERO}', '{END}')"
        ));
        assert_eq!(full.ranges(), [ShardRange::full()]);
        let ns =
            ok("shardRange(object.metadata.namespace, '0x00000000000000aa', '0x00000000000000ff')");
        assert_eq!(ns.key(), ShardKey::Namespace);
        let three = ok(
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000005') || \
             shardRange(object.metadata.uid, '0x0000000000000005', '0x000000000000000a') || \
             shardRange(object.metadata.uid, '0x000000000000000a', '0x000000000000000f')",
        );
        assert_eq!(
            three.ranges().iter().map(|r| r.start()).collect::<Vec<_>>(),
            [0, 5, 10]
        );
        ok(&format!(
            "shardRange(object.metadata.uid,'{ZERO}','{HALF}')"
        ));
        ok(&format!(
            "  shardRange( object.metadata.uid ,  '{ZERO}' ,  '{HALF}' )  "
        ));
        // CEL's other spellings of the same tree.
        ok(&format!(
            "(shardRange(object.metadata.uid, \"{ZERO}\", r'{HALF}'))"
        ));
        ok(&format!(
            "object.shardRange(object.metadata.uid, '{ZERO}', '{HALF}') // a member call\n"
        ));
    }

    #[test]
    fn the_canonical_form_reads_back() {
        for text in [
            format!("shardRange(object.metadata.uid, '{ZERO}', '{HALF}')"),
            format!(
                "shardRange(object.metadata.uid, '{ZERO}', '{HALF}') || shardRange(object.metadata.uid, '{HALF}', '{END}')"
            ),
        ] {
            assert_eq!(ok(&text).to_string(), text);
        }
    }

    #[test]
    fn the_servers_refusals_in_its_words() {
        let uid = "object.metadata.uid";
        let cases = [
            ("", "empty shard selector is not allowed; omit the parameter for unfiltered lists".to_owned()),
            (
                &format!("shardRange({uid}, '0000000000000000', '{HALF}')") as &str,
                "hexStart must have '0x' prefix, got \"0000000000000000\"".to_owned(),
            ),
            (
                &format!("shardRange({uid}, '{ZERO}', '8000000000000000')"),
                "hexEnd must have '0x' prefix, got \"8000000000000000\"".to_owned(),
            ),
            (
                &format!("shardRange({uid}, '0x', '{HALF}')"),
                "hexStart: hex value is required after '0x'".to_owned(),
            ),
            (
                "shardRange(object.metadata.name, '0x00', '0x80')",
                "unsupported field path \"object.metadata.name\"; supported: object.metadata.uid, object.metadata.namespace".to_owned(),
            ),
            (
                "invalidFunc(object.metadata.uid, '0x00', '0x80')",
                "unsupported function \"invalidFunc\"; only shardRange() and || are allowed".to_owned(),
            ),
            (
                &format!("shardRange({uid}, '0x000000000000000000', '0x80')"),
                "hexStart: hex value too long (18 chars, max 17): \"000000000000000000\"".to_owned(),
            ),
            (
                &format!("shardRange({uid}, '0x0g', '0x80')"),
                "hexStart: invalid hex character \"g\" in \"0x0g\"".to_owned(),
            ),
            (
                &format!("shardRange({uid}, '0x0', '0x8') && shardRange({uid}, '0x8', '0xf')"),
                "unsupported function \"_&&_\"; only shardRange() and || are allowed".to_owned(),
            ),
            (
                &format!("shardRange({uid}, 0, 8)"),
                "hexStart must be a string literal, got int64".to_owned(),
            ),
            (
                &format!("{uid} > '0x0'"),
                "unsupported function \"_>_\"; only shardRange() and || are allowed".to_owned(),
            ),
            (
                &format!("shardRange({uid}, '0x0')"),
                "shardRange() requires exactly 3 arguments, got 2".to_owned(),
            ),
            (
                &format!("shardRange({uid}, hex(0), '0x8')"),
                "hexStart must be a string literal (e.g. '0xff'), got expression kind 1".to_owned(),
            ),
            (
                &format!(
                    "shardRange({uid}, '{ZERO}', '{HALF}') || shardRange(object.metadata.namespace, '{HALF}', '{END}')"
                ),
                "all shard ranges must use the same field, got \"object.metadata.uid\" and \"object.metadata.namespace\"".to_owned(),
            ),
            (
                &format!("shardRange({uid}, '0x0', '{HALF}')"),
                "hexStart must be a 0x-prefixed 16-digit hex value, got \"0x0\" (did you mean \"0x0000000000000000\"?)".to_owned(),
            ),
            (
                &format!("shardRange({uid}, '{HALF}', '{HALF}')"),
                format!("shard range start {HALF} must be less than end {HALF}"),
            ),
            (
                &format!("shardRange({uid}, '0x1000000000000000f', '{HALF}')"),
                "hexStart: 17-digit hex value must be '0x10000000000000000' (2^64), got \"0x1000000000000000f\"".to_owned(),
            ),
            (
                &format!("shardRange('{uid}', '{ZERO}', '{HALF}')"),
                "shardRange() first argument: expected field path (e.g. object.metadata.uid), got expression kind 5".to_owned(),
            ),
            ("'0x00'", "unexpected expression kind 5; expected shardRange() call or || operator".to_owned()),
            (uid, "unexpected expression kind 7; expected shardRange() call or || operator".to_owned()),
            (
                &format!("shardRange({uid}, '{ZERO}', '{HALF}')[0]"),
                "unsupported function \"_[_]\"; only shardRange() and || are allowed".to_owned(),
            ),
        ];
        for (expression, message) in cases {
            assert_eq!(err(expression), message, "{expression}");
        }
    }

    #[test]
    fn syntax_errors_are_cel_parse_errors() {
        for bad in [
            "shardRange(",
            "shardRange(object.metadata.uid, '0x0', '0x8'",
            "shardRange(object.metadata.uid | '0x0')",
            "shardRange(object.metadata.uid, '0x0) ",
            "shardRange(object.metadata.uid, '0x0', '0x8') ||",
            "a b",
            "#",
            "shardRange(object..uid, '0x0', '0x8')",
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000',)",
        ] {
            assert!(
                err(bad).starts_with("CEL parse error: "),
                "{bad}: {}",
                err(bad)
            );
        }
    }

    #[test]
    fn any_text_is_an_answer_never_a_panic() {
        let alphabet = [
            "shardRange",
            "(",
            ")",
            ",",
            "'",
            "\"",
            "0x",
            "||",
            "&",
            ".",
            "\\",
            "u",
            "é",
            " ",
            "0",
            "r",
            "b",
            "[",
            "{",
            ":",
            "-",
            "e",
        ];
        let mut seed = 7u64;
        for _ in 0..5000 {
            let mut text = String::new();
            for _ in 0..(seed % 12) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(alphabet[(seed >> 33) as usize % alphabet.len()]);
            }
            let _ = parse(&text);
        }
    }
}
