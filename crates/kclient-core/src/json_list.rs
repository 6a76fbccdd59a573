//! [`JsonListReader`]: a JSON list body read as its bytes arrive, item by item.
//!
//! The JSON counterpart of kclient-protobuf's `ListReader`: a list
//! (`{"kind":…,"apiVersion":…,"metadata":{…},"items":[{…},{…}]}`) is handed out as its
//! head — the fields before `items`, with the list's metadata, which the API server writes
//! first — then each item as soon as its closing brace has arrived, so that decoding overlaps
//! the transfer. Only the head and the item being received are buffered, and an item (or a
//! head) longer than the reader's bound is refused before it is whole. Fields after `items`
//! (no API server writes any) are read when the body ends.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_core::json_list::{JsonListPiece, JsonListReader};
//! use kclient_core::managed_fields::decode_object;
//!
//! let body = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"continue":"c2"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#;
//! let mut reader = JsonListReader::new(1 << 20);
//! let mut names = Vec::new();
//! for chunk in body.chunks(7) {
//!     reader.push(chunk);
//!     while let Some(piece) = reader.next_piece().unwrap() {
//!         match piece {
//!             JsonListPiece::Head(head) => assert_eq!(head.continue_token(), Some("c2")),
//!             JsonListPiece::Item(json) => {
//!                 let cm: ConfigMap = decode_object(json, false).unwrap();
//!                 names.push(cm.metadata.name.unwrap());
//!             }
//!         }
//!     }
//! }
//! let list = reader.finish().unwrap();
//! assert_eq!(names, ["a", "b"]);
//! assert_eq!(list.types.unwrap().kind, "ConfigMapList");
//! ```

use serde::de::{Error as _, IgnoredAny};
use serde::Deserialize;

use crate::json_scan::ObjectScanner;
use crate::object_list::{decode_list_mapped, ObjectList};

/// What a [`JsonListReader`] hands out, in the order of the body.
#[derive(Debug)]
pub enum JsonListPiece<'a> {
    /// The list without its items, as far as the body has told it before `items`: type
    /// fields and metadata (default metadata if the body has none there).
    Head(Box<ObjectList<()>>),
    /// The bytes of one item, to decode with
    /// [`decode_object`](crate::managed_fields::decode_object).
    Item(&'a [u8]),
}

/// Where the reader is in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    /// Before `items`'s array: the head is being received.
    Head,
    /// Between items (`scanner` is `None`) or inside one, which began at `start`.
    Items {
        item: Option<(usize, ObjectScanner)>,
    },
    /// After the items: the rest of the top-level object is being received.
    Tail,
}

/// A JSON list body read as its bytes arrive; see the [module docs](self).
#[derive(Debug)]
pub struct JsonListReader {
    buf: Vec<u8>,
    /// Where the unread part of `buf` starts.
    pos: usize,
    position: Position,
    /// The bytes before the `items` key (kept to read fields after the items with them).
    head: Vec<u8>,
    /// Whether the head had the list's metadata.
    head_has_metadata: bool,
    max_item_len: usize,
}

/// How far the head of a list has arrived.
enum HeadWalk {
    /// More bytes are needed.
    Incomplete,
    /// The `items` key starts at `key_at`, its array's first byte after `[` at `items_at`.
    Items {
        key_at: usize,
        items_at: usize,
        has_metadata: bool,
    },
    /// The list has no `items` array: the whole object ends before `end`.
    Whole { end: usize },
}

/// Walks the top-level fields of a list until its `items` array.
fn walk_head(json: &[u8]) -> Result<HeadWalk, serde_json::Error> {
    // `None` if the value (or token) runs past what has arrived.
    fn value_at<'de, T: Deserialize<'de>>(
        json: &'de [u8],
        at: usize,
    ) -> Result<Option<(T, usize)>, serde_json::Error> {
        let mut values = serde_json::Deserializer::from_slice(&json[at..]).into_iter::<T>();
        match values.next() {
            Some(Ok(value)) if at + values.byte_offset() < json.len() => {
                Ok(Some((value, at + values.byte_offset())))
            }
            // A value that ends where the bytes do (a number) may go on.
            Some(Ok(_)) | None => Ok(None),
            Some(Err(e)) if e.is_eof() => Ok(None),
            Some(Err(e)) => Err(e),
        }
    }
    fn token_at(json: &[u8], at: usize) -> Option<(u8, usize)> {
        let skipped = json
            .get(at..)?
            .iter()
            .position(|b| !b.is_ascii_whitespace())?;
        Some((json[at + skipped], at + skipped))
    }
    macro_rules! arrived {
        ($e:expr) => {
            match $e {
                Some(v) => v,
                None => return Ok(HeadWalk::Incomplete),
            }
        };
    }

    let (open, at) = arrived!(token_at(json, 0));
    if open != b'{' {
        return Err(serde_json::Error::custom("a list is a JSON object"));
    }
    let (mut at, mut has_metadata) = (at + 1, false);
    loop {
        let (next, key_at) = arrived!(token_at(json, at));
        if next == b'}' {
            return Ok(HeadWalk::Whole { end: key_at + 1 });
        }
        let (key, after_key) = arrived!(value_at::<std::borrow::Cow<'_, str>>(json, key_at)?);
        let (colon, colon_at) = arrived!(token_at(json, after_key));
        if colon != b':' {
            return Err(serde_json::Error::custom("expected `:` after a key"));
        }
        let (value, value_at_) = arrived!(token_at(json, colon_at + 1));
        if key == "items" && value == b'[' {
            return Ok(HeadWalk::Items {
                key_at,
                items_at: value_at_ + 1,
                has_metadata,
            });
        }
        has_metadata |= key == "metadata";
        let (_, after_value) = arrived!(value_at::<IgnoredAny>(json, value_at_)?);
        match arrived!(token_at(json, after_value)) {
            (b',', comma_at) => at = comma_at + 1,
            (b'}', end) => return Ok(HeadWalk::Whole { end: end + 1 }),
            _ => return Err(serde_json::Error::custom("expected `,` or `}` in a list")),
        }
    }
}

/// A list object without items, read from JSON (its `items`, if any, are skipped).
fn list_head(json: &[u8]) -> Result<ObjectList<()>, serde_json::Error> {
    decode_list_mapped(json, |_: IgnoredAny| ()).map(|list| ObjectList {
        types: list.types,
        metadata: list.metadata,
        items: Vec::new(),
    })
}

impl JsonListReader {
    /// A reader that refuses items (and a head) longer than `max_item_len` bytes.
    pub fn new(max_item_len: usize) -> Self {
        Self {
            buf: Vec::new(),
            pos: 0,
            position: Position::Head,
            head: Vec::new(),
            head_has_metadata: false,
            max_item_len,
        }
    }

    /// Adds the next bytes of the body. The pieces handed out before are released.
    pub fn push(&mut self, chunk: &[u8]) {
        let consumed = match self.position {
            // The head is walked again from its start when more of it arrives; the tail is
            // read whole at the end.
            Position::Head | Position::Tail => 0,
            Position::Items {
                item: Some((start, _)),
            } => start,
            _ => self.pos,
        };
        self.buf.drain(..consumed);
        self.pos -= consumed;
        if let Position::Items {
            item: Some((start, _)),
        } = &mut self.position
        {
            *start -= consumed;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// Whether the head had the list's metadata (known once the head was handed out; a list
    /// whose metadata comes after its items has it only at [`finish`](Self::finish)).
    pub fn head_has_metadata(&self) -> bool {
        self.head_has_metadata
    }

    /// The next piece whose bytes have all arrived, `None` if more bytes are needed (or the
    /// body is complete). An error for a malformed body or an item over the bound; the reader
    /// is not to be used after one.
    pub fn next_piece(&mut self) -> Result<Option<JsonListPiece<'_>>, serde_json::Error> {
        loop {
            match self.position {
                Position::Head => return self.read_head(),
                Position::Tail => {
                    self.check_bound(self.buf.len(), "the rest of the list")?;
                    return Ok(None);
                }
                Position::Items { item: None } => {
                    let rest = &self.buf[self.pos..];
                    let Some(skipped) = rest
                        .iter()
                        .position(|b| !b.is_ascii_whitespace() && *b != b',')
                    else {
                        self.pos = self.buf.len();
                        return Ok(None);
                    };
                    self.pos += skipped + 1;
                    match rest[skipped] {
                        b'{' => {
                            self.position = Position::Items {
                                item: Some((self.pos - 1, ObjectScanner::opened())),
                            }
                        }
                        b']' => {
                            self.buf.drain(..self.pos);
                            self.pos = 0;
                            self.position = Position::Tail;
                        }
                        other => {
                            return Err(serde_json::Error::custom(format!(
                                "a list item is an object, not one starting with {:?}",
                                char::from(other)
                            )))
                        }
                    }
                }
                Position::Items {
                    item: Some((start, mut scanner)),
                } => {
                    while !scanner.closed() && self.pos < self.buf.len() {
                        self.pos += scanner.step(&self.buf[self.pos..]);
                    }
                    self.check_bound(self.pos - start, "an item")?;
                    if !scanner.closed() {
                        self.position = Position::Items {
                            item: Some((start, scanner)),
                        };
                        return Ok(None);
                    }
                    self.position = Position::Items { item: None };
                    return Ok(Some(JsonListPiece::Item(&self.buf[start..self.pos])));
                }
            }
        }
    }

    fn read_head(&mut self) -> Result<Option<JsonListPiece<'_>>, serde_json::Error> {
        match walk_head(&self.buf)? {
            HeadWalk::Incomplete => {
                self.check_bound(self.buf.len(), "the list's head")?;
                Ok(None)
            }
            HeadWalk::Whole { end } => {
                self.check_bound(end, "the list's head")?;
                Ok(None)
            }
            HeadWalk::Items {
                key_at,
                items_at,
                has_metadata,
            } => {
                self.head = self.buf[..key_at].to_vec();
                self.head_has_metadata = has_metadata;
                self.pos = items_at;
                self.position = Position::Items { item: None };
                let head = list_head(&self.whole_without_items(b"}"))?;
                Ok(Some(JsonListPiece::Head(Box::new(head))))
            }
        }
    }

    /// The head, an empty `items`, then `rest`: the list without its items.
    fn whole_without_items(&self, rest: &[u8]) -> Vec<u8> {
        let mut json = Vec::with_capacity(self.head.len() + 11 + rest.len());
        json.extend_from_slice(&self.head);
        json.extend_from_slice(br#""items":[]"#);
        json.extend_from_slice(rest);
        json
    }

    /// Checks that the body ended where it may — after the list's closing brace — and
    /// returns the list without its items (with fields that came after them). A body cut
    /// anywhere before is an error.
    pub fn finish(&self) -> Result<ObjectList<()>, serde_json::Error> {
        let cut = || serde_json::Error::custom("the body ended before the end of the list");
        match self.position {
            Position::Head => match walk_head(&self.buf)? {
                HeadWalk::Whole { end } if self.buf[end..].iter().all(u8::is_ascii_whitespace) => {
                    list_head(&self.buf[..end])
                }
                HeadWalk::Whole { .. } => {
                    Err(serde_json::Error::custom("trailing bytes after the list"))
                }
                _ => Err(cut()),
            },
            Position::Items { .. } => Err(cut()),
            Position::Tail => list_head(&self.whole_without_items(&self.buf)),
        }
    }

    fn check_bound(&self, len: usize, what: &str) -> Result<(), serde_json::Error> {
        if len > self.max_item_len {
            return Err(serde_json::Error::custom(format!(
                "{what} of more than {} bytes exceeds the limit",
                self.max_item_len
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::managed_fields::decode_object;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn body(n: usize, metadata_first: bool) -> Vec<u8> {
        let items: Vec<serde_json::Value> = (0..n)
            .map(|i| {
                serde_json::json!({
                    "metadata": {"name": format!("cm-{i}"), "managedFields": [{"manager": "m"}]},
                    "data": {"k": format!("a \"quoted\" {{brace}} \\ {}", "v".repeat(i))},
                })
            })
            .collect();
        let items = serde_json::to_string(&items).unwrap();
        let metadata = r#""metadata":{"resourceVersion":"42","continue":"next"}"#;
        let json = if metadata_first {
            format!(r#"{{"kind":"ConfigMapList","apiVersion":"v1",{metadata},"items":{items}}}"#)
        } else {
            format!(r#"{{"kind":"ConfigMapList","apiVersion":"v1","items":{items},{metadata}}}"#)
        };
        json.into_bytes()
    }

    /// The head (if handed out), the items and the end, reading `pieces` in turn.
    type Read = (Option<ObjectList<()>>, Vec<ConfigMap>, ObjectList<()>);

    fn read(pieces: &[&[u8]], omit: bool) -> Result<Read, serde_json::Error> {
        let mut reader = JsonListReader::new(1 << 20);
        let (mut head, mut items) = (None, Vec::new());
        for piece in pieces {
            reader.push(piece);
            while let Some(piece) = reader.next_piece()? {
                match piece {
                    JsonListPiece::Head(h) => head = Some(*h),
                    JsonListPiece::Item(json) => items.push(decode_object(json, omit)?),
                }
            }
        }
        Ok((head, items, reader.finish()?))
    }

    #[test]
    fn a_body_split_at_every_position_gives_what_the_whole_body_gives() {
        for metadata_first in [true, false] {
            let body = body(4, metadata_first);
            let whole: ObjectList<ConfigMap> = serde_json::from_slice(&body).unwrap();
            for at in 0..=body.len() {
                let (a, b) = body.split_at(at);
                let (head, items, end) =
                    read(&[a, b], false).unwrap_or_else(|e| panic!("split at {at}: {e}"));
                assert_eq!(items, whole.items, "split at {at}");
                assert_eq!(end.metadata, whole.metadata, "split at {at}");
                assert_eq!(end.types, whole.types, "split at {at}");
                let head = head.expect("a head");
                assert_eq!(head.types, whole.types);
                if metadata_first {
                    assert_eq!(head.metadata, whole.metadata, "split at {at}");
                }
            }
            let bytes: Vec<&[u8]> = body.chunks(1).collect();
            let (_, items, _) = read(&bytes, true).unwrap();
            assert!(items.iter().all(|cm| cm.metadata.managed_fields.is_none()));
            assert_eq!(items.len(), 4);
        }
    }

    #[test]
    fn lists_without_items_or_with_none() {
        for json in [
            &br#"{"kind":"L","apiVersion":"v1","metadata":{"resourceVersion":"3"}}"#[..],
            br#"{"metadata":{"resourceVersion":"3"},"items":[]} "#,
            br#"{"metadata":{"resourceVersion":"3"},"items":null}"#,
        ] {
            let (_, items, end) = read(&[json], false).unwrap();
            assert!(items.is_empty());
            assert_eq!(
                end.resource_version(),
                Some("3"),
                "{}",
                String::from_utf8_lossy(json)
            );
        }
    }

    #[test]
    fn a_body_cut_anywhere_is_an_error_not_a_short_list() {
        let body = body(3, true);
        for at in 0..body.len() {
            assert!(read(&[&body[..at]], false).is_err(), "cut at {at}");
        }
    }

    #[test]
    fn malformed_bodies_and_items_over_the_bound_are_errors() {
        for json in [
            &b"[1,2]"[..],
            br#"{"items":[1]}"#,
            br#"{"a" 1}"#,
            br#"{"items":[{}]}x"#,
        ] {
            assert!(
                read(&[json], false).is_err(),
                "{}",
                String::from_utf8_lossy(json)
            );
        }
        let body = body(5, true);
        let mut reader = JsonListReader::new(60);
        reader.push(&body);
        let error = loop {
            match reader.next_piece() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("an item over 60 bytes"),
                Err(e) => break e,
            }
        };
        assert!(error.to_string().contains("exceeds the limit"), "{error}");
    }

    #[test]
    fn only_the_item_being_received_is_buffered() {
        let body = body(200, true);
        let chunk = 500;
        let mut reader = JsonListReader::new(1 << 20);
        let mut items = 0;
        for piece in body.chunks(chunk) {
            reader.push(piece);
            while let Some(piece) = reader.next_piece().unwrap() {
                items += usize::from(matches!(piece, JsonListPiece::Item(_)));
            }
            assert!(reader.buf.len() <= 400 + chunk, "{}", reader.buf.len());
        }
        reader.finish().unwrap();
        assert_eq!(items, 200);
    }
}
