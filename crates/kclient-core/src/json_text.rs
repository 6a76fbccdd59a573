//! A cursor over complete JSON text that finds members and skips values without building
//! anything: how [`managed_fields`](crate::managed_fields) finds the member it cuts out and a
//! watch frame's object is delimited when it cannot be decoded in place.

use std::borrow::Cow;

use serde::de::IgnoredAny;

/// A cursor over JSON text that finds members and skips values; `None` wherever the text is
/// not as expected.
pub(crate) struct Text<'a> {
    json: &'a [u8],
    at: usize,
}

impl<'a> Text<'a> {
    /// A cursor at the start of `json`.
    pub(crate) fn new(json: &'a [u8]) -> Self {
        Self { json, at: 0 }
    }

    /// The next byte that is not whitespace (not consumed).
    pub(crate) fn peek(&mut self) -> Option<u8> {
        while let Some(&byte) = self.json.get(self.at) {
            if !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    /// The next byte that is not whitespace, consumed.
    pub(crate) fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    pub(crate) fn expect(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    /// A member's key and its colon: the key unescaped.
    pub(crate) fn key(&mut self) -> Option<Cow<'a, str>> {
        let key = self.string()?;
        self.expect(b':')?;
        Some(key)
    }

    /// The string starting here, unescaped (borrowed when it has no escapes).
    pub(crate) fn string(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at;
        self.skip_string()?;
        let quoted = &self.json[start..self.at];
        let inner = &quoted[1..quoted.len() - 1];
        if inner.contains(&b'\\') {
            serde_json::from_slice::<String>(quoted)
                .ok()
                .map(Cow::Owned)
        } else {
            std::str::from_utf8(inner).ok().map(Cow::Borrowed)
        }
    }

    /// In the object starting here, the member `name` with one comma beside it.
    pub(crate) fn member_span(&mut self, name: &str) -> Option<(usize, usize)> {
        self.expect(b'{')?;
        if self.peek()? == b'}' {
            return None;
        }
        let mut previous_comma = None;
        loop {
            self.peek()?;
            let member_start = self.at;
            let key = self.key()?;
            self.skip_value()?;
            let value_end = self.at;
            let found = key == name;
            self.peek()?;
            let separator = self.at;
            match self.next()? {
                b',' if found => return Some((member_start, separator + 1)),
                b'}' if found => return Some((previous_comma.unwrap_or(member_start), value_end)),
                b',' => previous_comma = Some(separator),
                _ => return None,
            }
        }
    }

    /// Moves past the string starting here (its quotes included).
    pub(crate) fn skip_string(&mut self) -> Option<()> {
        self.at += 1;
        loop {
            match *self.json.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }

    /// Moves past the JSON value starting here, which must be well formed (serde_json's
    /// scan, which checks it and builds nothing).
    pub(crate) fn skip_value(&mut self) -> Option<()> {
        self.peek()?;
        let mut values =
            serde_json::Deserializer::from_slice(&self.json[self.at..]).into_iter::<IgnoredAny>();
        values.next()?.ok()?;
        self.at += values.byte_offset();
        Some(())
    }
}

/// The texts of the values of the top-level members `names` of the JSON object that is the
/// whole of `json` (whitespace aside), each `None` if absent; `None` for all when the text is
/// not such an object or a name appears twice (the decoder then says what is wrong).
pub(crate) fn members<'a, const N: usize>(
    json: &'a [u8],
    names: [&str; N],
) -> Option<[Option<&'a [u8]>; N]> {
    let mut found = [None; N];
    let mut text = Text::new(json);
    text.expect(b'{')?;
    if text.peek()? != b'}' {
        loop {
            let key = text.key()?;
            text.peek()?;
            let start = text.at;
            text.skip_value()?;
            if let Some(i) = names.iter().position(|name| *name == key) {
                if found[i].replace(&json[start..text.at]).is_some() {
                    return None;
                }
            }
            match text.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
    } else {
        text.next()?;
    }
    text.peek().is_none().then_some(found)
}

#[cfg(test)]
mod tests {
    use super::members;

    #[test]
    fn finds_top_level_members_whatever_their_order() {
        let json = br#"{"object": {"a":"}\"","b":[1,{"c":2}]} , "x":null, "type":"ADDED"} "#;
        assert_eq!(
            members(json, ["type", "object", "y"]),
            Some([
                Some(&br#""ADDED""#[..]),
                Some(&br#"{"a":"}\"","b":[1,{"c":2}]}"#[..]),
                None
            ])
        );
        assert_eq!(
            members(br#"{"ob\u006aect":7}"#, ["object"]),
            Some([Some(&b"7"[..])])
        );
        assert_eq!(members(br#" {} "#, ["object"]), Some([None]));
    }

    #[test]
    fn text_that_is_not_one_object_or_repeats_a_name_is_none() {
        for bad in [
            &br#"[1]"#[..],
            br#"{"x":tru, "object":1}"#,
            br#"{"object""#,
            br#"{"object":1"#,
            br#"{"object":1}{}"#,
            br#"{"object":1,"object":2}"#,
            br#"{"object":1,}"#,
            b"",
        ] {
            assert_eq!(
                members(bad, ["object"]),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
