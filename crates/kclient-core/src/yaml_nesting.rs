//! A linear pre-check of YAML text before it is parsed: how deeply it nests.
//!
//! `serde_yaml_ng` enforces its recursion limit only after scanning the nested tokens, which
//! takes time quadratic in the depth: 50,000 levels of `[` took seconds, 100,000 tens of
//! seconds, on an async worker. [`check_yaml_nesting`] counts the nesting of flow
//! collections (`[`, `{`) and of block sequences opened on one line (`- - - x`), outside
//! quoted scalars and comments, in one pass, and refuses text deeper than the limit before
//! any parser sees it. Indentation cannot nest cheaply (each level costs a line of growing
//! indentation), so it is left to the parser.
//!
//! ```
//! use kclient_core::yaml_nesting::{check_yaml_nesting, MAX_YAML_NESTING};
//!
//! assert!(check_yaml_nesting("a: [1, {b: [2]}]\n- - x\n", MAX_YAML_NESTING).is_ok());
//! let deep = "[".repeat(50_000);
//! let err = check_yaml_nesting(&deep, MAX_YAML_NESTING).unwrap_err();
//! assert_eq!(err.to_string(), "YAML nested deeper than 128 levels (at byte 128)");
//! ```

/// The nesting limit kclient applies to YAML (serde_yaml_ng's own recursion limit).
pub const MAX_YAML_NESTING: usize = 128;

/// YAML text that nests deeper than allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("YAML nested deeper than {limit} levels (at byte {offset})")]
pub struct NestingTooDeep {
    /// The limit.
    pub limit: usize,
    /// Where the limit was passed.
    pub offset: usize,
}

/// Refuses `text` if its flow collections or its block collections nest deeper than
/// `limit`. Linear in the length of `text`.
///
/// The scan follows the tokenizer of libyaml (which `serde_yaml_ng` runs) wherever a bracket
/// or a quote could be read two ways: brackets inside quoted scalars, block scalars (`|`,
/// `>`) and comments do not count; a quote opens a quoted scalar only where a token starts,
/// never inside a plain scalar (`don't`), including a plain scalar continued on the next,
/// more indented line. The direction of any remaining imprecision is to count too much,
/// never too little: a quote read as opening where libyaml reads it as text would hide the
/// brackets after it.
pub fn check_yaml_nesting(text: &str, limit: usize) -> Result<(), NestingTooDeep> {
    let max = Scanner::new(text.as_bytes(), limit).run()?;
    debug_assert!(max.flow <= limit && max.block <= limit);
    Ok(())
}

/// The deepest flow and block nesting in `text` (as [`check_yaml_nesting`] counts them),
/// scanning to the end. For tests that compare the scan with a parser.
#[doc(hidden)]
pub fn yaml_nesting_depths(text: &str) -> (usize, usize) {
    let max = Scanner::new(text.as_bytes(), usize::MAX)
        .run()
        .unwrap_or(Depths { flow: 0, block: 0 });
    (max.flow, max.block)
}

#[derive(Clone, Copy)]
struct Depths {
    flow: usize,
    block: usize,
}

/// A tokenizer reduced to what nesting depends on.
struct Scanner<'a> {
    bytes: &'a [u8],
    limit: usize,
    i: usize,
    /// Where the current line starts (columns are byte offsets from it).
    line_start: usize,
    /// Open flow collections.
    flow: usize,
    /// The columns of the open block collections (libyaml's indentation stack).
    indents: Vec<usize>,
    /// The column of the first token since the last line break or block indicator: the key a
    /// `: ` on the same line belongs to.
    key_column: Option<usize>,
    max: Depths,
}

impl<'a> Scanner<'a> {
    fn new(bytes: &'a [u8], limit: usize) -> Self {
        // A byte order mark at the start is not content.
        let i = if bytes.starts_with(b"\xef\xbb\xbf") {
            3
        } else {
            0
        };
        Scanner {
            bytes,
            limit,
            i,
            line_start: i,
            flow: 0,
            indents: Vec::new(),
            key_column: None,
            max: Depths { flow: 0, block: 0 },
        }
    }

    fn at(&self, i: usize) -> u8 {
        self.bytes.get(i).copied().unwrap_or(0)
    }

    fn column(&self) -> usize {
        self.i - self.line_start
    }

    /// The length of the line break at `i` (`\n`, `\r\n`, `\r`, NEL, LS, PS), 0 if none.
    fn break_len(&self, i: usize) -> usize {
        match self.at(i) {
            b'\n' => 1,
            b'\r' if self.at(i + 1) == b'\n' => 2,
            b'\r' => 1,
            0xc2 if self.at(i + 1) == 0x85 => 2,
            0xe2 if self.at(i + 1) == 0x80 && matches!(self.at(i + 2), 0xa8 | 0xa9) => 3,
            _ => 0,
        }
    }

    fn is_blank(&self, i: usize) -> bool {
        matches!(self.at(i), b' ' | b'\t')
    }

    /// A blank, a line break or the end of the text.
    fn is_blankz(&self, i: usize) -> bool {
        i >= self.bytes.len() || self.is_blank(i) || self.break_len(i) > 0
    }

    fn is_flow_indicator(b: u8) -> bool {
        matches!(b, b',' | b'[' | b']' | b'{' | b'}')
    }

    /// Consumes a line break at the cursor, if any.
    fn take_break(&mut self) -> bool {
        let n = self.break_len(self.i);
        if n > 0 {
            self.i += n;
            self.line_start = self.i;
        }
        n > 0
    }

    fn skip_to_line_end(&mut self) {
        while self.i < self.bytes.len() && self.break_len(self.i) == 0 {
            self.i += 1;
        }
    }

    /// `---` or `...` at the start of a line, followed by a blank or a break.
    fn at_document_marker(&self) -> bool {
        self.column() == 0
            && (self.bytes[self.i..].starts_with(b"---")
                || self.bytes[self.i..].starts_with(b"..."))
            && self.is_blankz(self.i + 3)
    }

    fn too_deep(&self) -> NestingTooDeep {
        NestingTooDeep {
            limit: self.limit,
            offset: self.i,
        }
    }

    /// The indentation libyaml compares continuation lines with.
    fn indent(&self) -> Option<usize> {
        self.indents.last().copied()
    }

    /// Opens a block collection at `column` if it is deeper than the current one.
    fn roll_indent(&mut self, column: usize) -> Result<(), NestingTooDeep> {
        if self.flow == 0 && self.indent().is_none_or(|top| column > top) {
            self.indents.push(column);
            self.max.block = self.max.block.max(self.indents.len());
            if self.indents.len() > self.limit {
                return Err(self.too_deep());
            }
        }
        Ok(())
    }

    fn note_key(&mut self) {
        if self.key_column.is_none() {
            self.key_column = Some(self.column());
        }
    }

    fn run(mut self) -> Result<Depths, NestingTooDeep> {
        let len = self.bytes.len();
        loop {
            // Blanks, comments and line breaks between tokens.
            loop {
                while self.is_blank(self.i) {
                    self.i += 1;
                }
                if self.at(self.i) == b'#' {
                    self.skip_to_line_end();
                }
                if !self.take_break() {
                    break;
                }
                self.key_column = None;
            }
            if self.i >= len {
                return Ok(self.max);
            }
            let column = self.column();
            if self.flow == 0 {
                while self.indent().is_some_and(|top| top > column) {
                    self.indents.pop();
                }
            }
            let b = self.bytes[self.i];
            let next_blankz = self.is_blankz(self.i + 1);
            match b {
                b'%' if column == 0 => self.skip_to_line_end(),
                _ if self.at_document_marker() => {
                    self.indents.clear();
                    self.key_column = None;
                    self.i += 3;
                }
                b'[' | b'{' => {
                    self.note_key();
                    self.flow += 1;
                    self.max.flow = self.max.flow.max(self.flow);
                    if self.flow > self.limit {
                        return Err(self.too_deep());
                    }
                    self.i += 1;
                }
                b']' | b'}' => {
                    self.flow = self.flow.saturating_sub(1);
                    self.i += 1;
                }
                b',' => self.i += 1,
                b'-' | b'?' if next_blankz => {
                    self.roll_indent(column)?;
                    self.key_column = None;
                    self.i += 1;
                }
                b':' if self.flow > 0 || next_blankz => {
                    if let Some(key) = self.key_column.take() {
                        self.roll_indent(key)?;
                    }
                    self.i += 1;
                }
                b'\'' | b'"' => {
                    self.note_key();
                    self.quoted(b);
                }
                b'|' | b'>' if self.flow == 0 => self.block_scalar(),
                b'&' | b'*' | b'!' => {
                    self.note_key();
                    // Anchors, aliases and tags end at a blank or a flow indicator; a quote
                    // inside one is text.
                    while !self.is_blankz(self.i) && !Self::is_flow_indicator(self.at(self.i)) {
                        self.i += 1;
                    }
                }
                _ => {
                    self.note_key();
                    self.plain_scalar();
                }
            }
        }
    }

    /// A single- or double-quoted scalar (it may span lines).
    fn quoted(&mut self, quote: u8) {
        self.i += 1;
        while self.i < self.bytes.len() {
            let b = self.bytes[self.i];
            if quote == b'"' && b == b'\\' {
                self.i += 2;
                continue;
            }
            if b == quote {
                if quote == b'\'' && self.at(self.i + 1) == b'\'' {
                    self.i += 2;
                    continue;
                }
                self.i += 1;
                return;
            }
            if !self.take_break() {
                self.i += 1;
            }
        }
        self.i = self.i.min(self.bytes.len());
    }

    /// A plain scalar: it ends at `: `, at ` #`, at a flow indicator inside a flow
    /// collection, or at a line not indented past the current block (outside flow); a quote
    /// inside it is text.
    fn plain_scalar(&mut self) {
        let len = self.bytes.len();
        loop {
            // One run of non-blank characters.
            while self.i < len && !self.is_blankz(self.i) {
                let b = self.bytes[self.i];
                if b == b':' {
                    let next = self.at(self.i + 1);
                    if self.is_blankz(self.i + 1)
                        || (self.flow > 0 && (Self::is_flow_indicator(next) || next == b'?'))
                    {
                        return;
                    }
                }
                if self.flow > 0 && Self::is_flow_indicator(b) {
                    return;
                }
                self.i += 1;
            }
            // Blanks and line breaks; the scalar goes on if more text follows where a
            // continuation is allowed.
            let resume = (self.i, self.line_start);
            let mut broke = false;
            loop {
                while self.is_blank(self.i) {
                    self.i += 1;
                }
                if self.take_break() {
                    broke = true;
                    continue;
                }
                break;
            }
            let ends = self.i >= len
                || self.at(self.i) == b'#'
                || (broke
                    && ((self.flow == 0 && self.indent().is_some_and(|top| self.column() <= top))
                        || self.at_document_marker()));
            if ends {
                // Let the main loop read what follows from where the scalar ended.
                (self.i, self.line_start) = resume;
                return;
            }
            if broke {
                self.key_column = None;
            }
        }
    }

    /// A literal or folded block scalar: its header, then every line indented at least as
    /// far as its content (or empty).
    fn block_scalar(&mut self) {
        let parent = self.indent();
        self.i += 1;
        let mut explicit = None;
        while !self.is_blankz(self.i) {
            if let d @ b'1'..=b'9' = self.at(self.i) {
                explicit = Some(usize::from(d - b'0'));
            }
            self.i += 1;
        }
        while self.is_blank(self.i) {
            self.i += 1;
        }
        if self.at(self.i) == b'#' {
            self.skip_to_line_end();
        }
        if !self.take_break() {
            return;
        }
        let minimum = parent.map_or(1, |p| p + 1);
        // The content's indentation: given, or that of the first non-empty line (at least
        // that of any all-space line before it), as libyaml detects it.
        let mut content = explicit.map(|n| parent.map_or(n, |p| p + n));
        let mut leading = 0;
        loop {
            let line = self.i;
            let mut indent = 0;
            while self.at(self.i) == b' ' {
                self.i += 1;
                indent += 1;
            }
            if self.i >= self.bytes.len() {
                return;
            }
            let empty = self.break_len(self.i) > 0;
            if empty && content.is_none() {
                leading = leading.max(indent);
            } else if !empty {
                let needed = *content.get_or_insert(leading.max(indent).max(minimum));
                if indent < needed {
                    // Not part of the scalar: the main loop reads this line.
                    self.i = line;
                    self.line_start = line;
                    return;
                }
            }
            self.skip_to_line_end();
            if !self.take_break() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_documents_pass() {
        let kubeconfig = "apiVersion: v1\nclusters:\n- name: c # a comment with [[[ brackets\n  cluster: {server: 'https://x[1]', x: \"{{{\"}\nusers: []\n";
        assert!(check_yaml_nesting(kubeconfig, 3).is_ok());
        assert!(check_yaml_nesting("'it''s [' : 1\n", 1).is_ok());
        assert!(check_yaml_nesting("[\"a\\\"[\", 'b''[']", 1).is_ok());
    }

    #[test]
    fn deep_flow_and_block_nesting_is_refused() {
        let flow = format!("{}{}", "[".repeat(129), "]".repeat(129));
        assert_eq!(
            check_yaml_nesting(&flow, 128),
            Err(NestingTooDeep {
                limit: 128,
                offset: 128
            })
        );
        assert!(check_yaml_nesting(&"{a: ".repeat(200), 128).is_err());
        let dashes = format!("{}x\n", "- ".repeat(200));
        assert!(check_yaml_nesting(&dashes, 128).is_err());
        assert!(check_yaml_nesting(&format!("{}x\n", "- ".repeat(100)), 128).is_ok());
        // A quote inside a plain scalar opens nothing: the brackets after it count.
        let hidden = format!("a: don't\nb: {}\n", "[".repeat(129));
        assert!(check_yaml_nesting(&hidden, 128).is_err());
        let hidden = format!("a: say\"hi\nb: {}\n", "{".repeat(129));
        assert!(check_yaml_nesting(&hidden, 128).is_err());
        // Balanced but wide is fine.
        assert!(check_yaml_nesting(&"[1], ".repeat(10_000), 2).is_ok());
    }
}
