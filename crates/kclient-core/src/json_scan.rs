//! Where a JSON object ends, found incrementally: the scanner behind the JSON watch frames
//! ([`JsonFrameDecoder`](crate::JsonFrameDecoder)) and the items of JSON lists
//! ([`JsonListReader`](crate::json_list::JsonListReader)).

/// The nesting and string state of a JSON object being scanned, across chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ObjectScanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
}

impl ObjectScanner {
    /// The state just after an object's opening brace.
    pub(crate) fn opened() -> Self {
        Self {
            depth: 1,
            in_string: false,
            escaped: false,
        }
    }

    /// Whether the object's closing brace has been scanned.
    pub(crate) fn closed(&self) -> bool {
        self.depth == 0
    }

    /// Scans `rest` up to and including the next byte that changes the state (a quote, a
    /// brace outside strings, a backslash inside them), jumping over the bytes between;
    /// returns how many bytes were scanned (all of `rest` if none changes it).
    pub(crate) fn step(&mut self, rest: &[u8]) -> usize {
        if rest.is_empty() {
            return 0;
        }
        if self.escaped {
            self.escaped = false;
            return 1;
        }
        let next = if self.in_string {
            rest.iter().position(|b| matches!(b, b'"' | b'\\'))
        } else {
            rest.iter().position(|b| matches!(b, b'"' | b'{' | b'}'))
        };
        let Some(at) = next else {
            return rest.len();
        };
        match (self.in_string, rest[at]) {
            (true, b'\\') => self.escaped = true,
            (_, b'"') => self.in_string = !self.in_string,
            (false, b'{') => self.depth += 1,
            (false, _) => self.depth -= 1,
            (true, _) => {}
        }
        at + 1
    }
}
