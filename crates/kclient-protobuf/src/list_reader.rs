//! [`ListReader`]: a protobuf list body read as its bytes arrive, item by item.
//!
//! A list of 10k Pods is ~25 MB of protobuf that kube-apiserver sends over a few hundred
//! milliseconds. Read whole and then decoded, the decoding starts when the transfer ends;
//! read with a `ListReader`, each item is handed out as soon as its last byte has arrived,
//! so that decoding overlaps the transfer (client-go's decoder reads the body the same way).
//! Only the item being received is buffered (with the rest of the chunk that completed it),
//! and an item longer than the reader's bound is refused on its header, before its bytes
//! arrive.
//!
//! The body is what [`envelope::decode_envelope`] reads: the
//! `k8s\0` magic, then a `runtime.Unknown` whose `raw` (field 2) is the list message —
//! `metadata` (field 1) and `items` (field 2). kube-apiserver writes the list's metadata
//! before its items, so a pager learns the continue token from the first bytes.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
//! use kclient_protobuf::envelope::encode_list;
//! use kclient_protobuf::list_reader::{ListPiece, ListReader};
//! use kclient_protobuf::{Ctx, Decode};
//!
//! let cm = |name: &str| ConfigMap {
//!     metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
//!     ..Default::default()
//! };
//! let metadata = ListMeta { resource_version: Some("7".into()), ..Default::default() };
//! let body = encode_list("v1", "ConfigMapList", &metadata, &[cm("a"), cm("b")]);
//!
//! let mut reader = ListReader::new(1 << 20);
//! let mut names = Vec::new();
//! for chunk in body.chunks(5) {
//!     reader.push(chunk);
//!     while let Some(piece) = reader.next_piece().unwrap() {
//!         match piece {
//!             ListPiece::Metadata(meta) => assert_eq!(meta.resource_version.as_deref(), Some("7")),
//!             ListPiece::Item(bytes) => {
//!                 names.push(ConfigMap::decode(bytes, Ctx::default()).unwrap().metadata.name.unwrap())
//!             }
//!         }
//!     }
//! }
//! reader.finish().unwrap();
//! assert_eq!(names, ["a", "b"]);
//! assert_eq!(reader.kind(), "ConfigMapList");
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use prost::encoding::WireType;

use crate::envelope::{self, MAGIC};
use crate::wire::{self, Ctx, Decode, DecodeError};

/// What a [`ListReader`] hands out, in the order of the body.
#[derive(Debug)]
pub enum ListPiece<'a> {
    /// The list's metadata (resourceVersion, continue token, remaining item count).
    Metadata(ListMeta),
    /// The bytes of one item's message, to decode with the item type's codec.
    Item(&'a [u8]),
}

/// Where the reader is in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    /// Before the magic.
    Magic,
    /// Among the envelope's fields, before the list (`false`) or after it.
    Envelope { after_list: bool },
    /// Inside the envelope's `raw` (the list message), with this many of its bytes to come.
    List { remaining: usize },
}

/// A protobuf list body read as its bytes arrive; see the [module docs](self).
#[derive(Debug)]
pub struct ListReader {
    buf: Vec<u8>,
    pos: usize,
    position: Position,
    max_item_len: usize,
    api_version: String,
    kind: String,
    /// The kind the envelope must say ([`expecting`](ListReader::expecting)).
    expected_kind: Option<String>,
}

/// A field's key and length, read from its first bytes.
struct FieldHeader {
    tag: u32,
    wire_type: WireType,
    /// The bytes of the key and, for a length-delimited field, of its length.
    header_len: usize,
    /// The bytes of the value.
    value_len: usize,
}

impl FieldHeader {
    /// The bytes of the whole field; saturating, as a hostile length may be near `usize::MAX`
    /// (it is then over every bound and refused).
    fn len(&self) -> usize {
        self.header_len.saturating_add(self.value_len)
    }
}

/// The varint at the start of `buf` and its length; `None` if its last byte has not
/// arrived yet.
fn peek_varint(buf: &[u8]) -> Result<Option<(u64, usize)>, DecodeError> {
    let Some(end) = buf.iter().take(10).position(|b| b & 0x80 == 0) else {
        return if buf.len() >= 10 {
            Err(DecodeError::new("invalid varint"))
        } else {
            Ok(None)
        };
    };
    let mut varint = &buf[..=end];
    let value = wire::varint(WireType::Varint, &mut varint)?;
    Ok(Some((value, end + 1)))
}

/// The header of the field at the start of `buf`; `None` if it has not arrived whole yet.
fn peek_field_header(buf: &[u8]) -> Result<Option<FieldHeader>, DecodeError> {
    let Some((_, key_len)) = peek_varint(buf)? else {
        return Ok(None);
    };
    let (tag, wire_type) = wire::key(&mut &buf[..key_len])?;
    let rest = &buf[key_len..];
    let (length_len, value_len) = match wire_type {
        WireType::Varint => match peek_varint(rest)? {
            Some((_, len)) => (0, len),
            None => return Ok(None),
        },
        WireType::SixtyFourBit => (0, 8),
        WireType::ThirtyTwoBit => (0, 4),
        WireType::LengthDelimited => match peek_varint(rest)? {
            Some((len, len_len)) => (
                len_len,
                usize::try_from(len).map_err(|_| DecodeError::new("length too large"))?,
            ),
            None => return Ok(None),
        },
        WireType::StartGroup | WireType::EndGroup => {
            return Err(DecodeError::new(
                "groups are not used by Kubernetes messages",
            ))
        }
    };
    Ok(Some(FieldHeader {
        tag,
        wire_type,
        header_len: key_len + length_len,
        value_len,
    }))
}

impl ListReader {
    /// A reader that refuses items (and other fields) longer than `max_item_len` bytes.
    pub fn new(max_item_len: usize) -> Self {
        Self {
            buf: Vec::new(),
            pos: 0,
            position: Position::Magic,
            max_item_len,
            api_version: String::new(),
            kind: String::new(),
            expected_kind: None,
        }
    }

    /// Refuses a list whose envelope is of another kind than `kind` (`PodList`), before any
    /// of its pieces: a list's items carry no type of their own, so the items of a
    /// `ConfigMapList` would otherwise be read as Pods.
    pub fn expecting(mut self, kind: impl Into<String>) -> Self {
        self.expected_kind = Some(kind.into());
        self
    }

    /// Adds the next bytes of the body. The pieces handed out before are released.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.drain(..self.pos);
        self.pos = 0;
        self.buf.extend_from_slice(chunk);
    }

    /// The envelope's `typeMeta.apiVersion` (known once it has been read: it comes first).
    pub fn api_version(&self) -> &str {
        &self.api_version
    }

    /// The envelope's `typeMeta.kind` (`PodList`, …).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// How many bytes are buffered and not handed out yet (a part of an item, when the body
    /// ends: a truncated body).
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next piece whose bytes have all arrived, `None` if more bytes are needed (or the
    /// body is complete). An error for a malformed body or an item over the bound; the reader
    /// is not to be used after one.
    pub fn next_piece(&mut self) -> Result<Option<ListPiece<'_>>, DecodeError> {
        loop {
            let rest = &self.buf[self.pos..];
            match self.position {
                Position::Magic => {
                    if rest.len() < MAGIC.len() {
                        if !MAGIC.starts_with(rest) {
                            return Err(not_protobuf());
                        }
                        return Ok(None);
                    }
                    if rest[..MAGIC.len()] != MAGIC {
                        return Err(not_protobuf());
                    }
                    self.pos += MAGIC.len();
                    self.position = Position::Envelope { after_list: false };
                }
                Position::Envelope { .. } => {
                    if !self.read_envelope_field()? {
                        return Ok(None);
                    }
                }
                Position::List { remaining: 0 } => {
                    self.position = Position::Envelope { after_list: true }
                }
                Position::List { remaining } => {
                    let window = &rest[..rest.len().min(remaining)];
                    let Some(header) = peek_field_header(window)? else {
                        if window.len() == remaining {
                            return Err(DecodeError::new("a field cut at the end of the list"));
                        }
                        return Ok(None);
                    };
                    if header.len() > remaining {
                        return Err(DecodeError::new(format!(
                            "a field of {} bytes where the list has {remaining} left",
                            header.len()
                        )));
                    }
                    self.check_bound(&header, "items")?;
                    if window.len() < header.len() {
                        return Ok(None);
                    }
                    let start = self.pos + header.header_len;
                    let end = self.pos + header.len();
                    self.pos = end;
                    self.position = Position::List {
                        remaining: remaining - header.len(),
                    };
                    match header.tag {
                        1 => {
                            expect_delimited(&header, "metadata")?;
                            let value = &self.buf[start..end];
                            let metadata = ListMeta::decode(value, Ctx::default().enter()?)
                                .map_err(|e| e.at("metadata"))?;
                            return Ok(Some(ListPiece::Metadata(metadata)));
                        }
                        2 => {
                            expect_delimited(&header, "items")?;
                            return Ok(Some(ListPiece::Item(&self.buf[start..end])));
                        }
                        _ => {} // an unknown field, skipped as Go's Unmarshal does
                    }
                }
            }
        }
    }

    /// Reads the envelope field at the reader's position (entering the list at `raw`);
    /// `false` if it has not arrived whole yet.
    fn read_envelope_field(&mut self) -> Result<bool, DecodeError> {
        let rest = &self.buf[self.pos..];
        let Some(header) = peek_field_header(rest)? else {
            return Ok(false);
        };
        if header.tag == 2 {
            expect_delimited(&header, "raw")?;
            if let Some(expected) = self.expected_kind.as_deref() {
                if self.kind != expected {
                    return Err(DecodeError::new(format!(
                        "expected a {expected}, got a {:?}",
                        self.kind
                    )));
                }
            }
            self.pos += header.header_len;
            self.position = Position::List {
                remaining: header.value_len,
            };
            return Ok(true);
        }
        self.check_bound(&header, "envelope field")?;
        if rest.len() < header.len() {
            return Ok(false);
        }
        let value = &rest[header.header_len..header.len()];
        match header.tag {
            1 => {
                expect_delimited(&header, "typeMeta")?;
                (self.api_version, self.kind) = envelope::decode_type_meta(value)?;
            }
            // Written after the list by kube-apiserver (and empty): a list whose envelope says
            // its object is not protobuf ends with that error, whatever came before.
            3 => {
                expect_delimited(&header, "contentEncoding")?;
                envelope::check_content_encoding(&String::from_utf8_lossy(value))?;
            }
            4 => {
                expect_delimited(&header, "contentType")?;
                envelope::check_content_type(&String::from_utf8_lossy(value))?;
            }
            _ => {}
        }
        self.pos += header.len();
        Ok(true)
    }

    /// Checks that the body ended where it may: after the envelope's last field, with
    /// nothing left over. A body cut inside an item (or anywhere else) is an error.
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.position {
            Position::Envelope { after_list: true } if self.buffered() == 0 => Ok(()),
            Position::Envelope { after_list: false } if self.buffered() == 0 => {
                Err(DecodeError::new("the body ended before the list"))
            }
            Position::Magic if self.buffered() == 0 => Err(DecodeError::new("an empty body")),
            Position::List { remaining } => Err(DecodeError::new(format!(
                "the body ended with {remaining} bytes of the list still to come"
            ))),
            _ => Err(DecodeError::new(format!(
                "the body ended inside a field ({} bytes of it arrived)",
                self.buffered()
            ))),
        }
    }

    fn check_bound(&self, header: &FieldHeader, what: &'static str) -> Result<(), DecodeError> {
        if header.value_len > self.max_item_len {
            return Err(DecodeError::new(format!(
                "a field of {} bytes exceeds the limit of {}",
                header.value_len, self.max_item_len
            ))
            .at(what));
        }
        Ok(())
    }
}

fn not_protobuf() -> DecodeError {
    DecodeError::new("not a Kubernetes protobuf body (no k8s\\0 prefix)")
}

fn expect_delimited(header: &FieldHeader, what: &'static str) -> Result<(), DecodeError> {
    if header.wire_type != WireType::LengthDelimited {
        return Err(DecodeError::new(format!(
            "wire type {:?}, expected LengthDelimited",
            header.wire_type
        ))
        .at(what));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::{decode_envelope, decode_list, encode_list};
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn list(n: usize) -> Vec<u8> {
        let items: Vec<ConfigMap> = (0..n)
            .map(|i| ConfigMap {
                metadata: ObjectMeta {
                    name: Some(format!("cm-{i}")),
                    ..Default::default()
                },
                data: Some([("k".to_owned(), "v".repeat(i * 7))].into()),
                ..Default::default()
            })
            .collect();
        let metadata = ListMeta {
            resource_version: Some("42".into()),
            continue_: Some("next".into()),
            ..Default::default()
        };
        encode_list("v1", "ConfigMapList", &metadata, &items)
    }

    /// Reads `body` pushed in the given pieces: the metadata and the items.
    fn read(pieces: &[&[u8]]) -> Result<(Option<ListMeta>, Vec<ConfigMap>), DecodeError> {
        let mut reader = ListReader::new(1 << 20);
        let (mut metadata, mut items) = (None, Vec::new());
        for piece in pieces {
            reader.push(piece);
            while let Some(piece) = reader.next_piece()? {
                match piece {
                    ListPiece::Metadata(m) => metadata = Some(m),
                    ListPiece::Item(bytes) => items.push(ConfigMap::decode(bytes, Ctx::default())?),
                }
            }
        }
        reader.finish()?;
        assert_eq!(reader.kind(), "ConfigMapList");
        assert_eq!(reader.api_version(), "v1");
        Ok((metadata, items))
    }

    fn whole(body: &[u8]) -> (ListMeta, Vec<ConfigMap>) {
        let mut items = Vec::new();
        let raw = decode_envelope(body).unwrap().raw;
        let meta = decode_list(raw, Ctx::default(), &mut |cm: ConfigMap| items.push(cm)).unwrap();
        (meta, items)
    }

    #[test]
    fn a_body_split_at_every_position_gives_the_same_list() {
        let body = list(6);
        let (meta, items) = whole(&body);
        for at in 0..=body.len() {
            let (a, b) = body.split_at(at);
            let (m, got) = read(&[a, b]).unwrap_or_else(|e| panic!("split at {at}: {e}"));
            assert_eq!(m.as_ref(), Some(&meta), "split at {at}");
            assert_eq!(got, items, "split at {at}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(read(&bytes).unwrap().1, items);
    }

    #[test]
    fn only_the_item_being_received_is_buffered() {
        let body = list(300);
        let largest = 7 * 300 + 64;
        let chunk = 1000;
        let mut reader = ListReader::new(1 << 20);
        let mut items = 0;
        for piece in body.chunks(chunk) {
            reader.push(piece);
            while let Some(piece) = reader.next_piece().unwrap() {
                items += usize::from(matches!(piece, ListPiece::Item(_)));
            }
            assert!(reader.buffered() <= largest, "{}", reader.buffered());
            assert!(
                reader.buf.capacity() <= 2 * (largest + chunk),
                "{}",
                reader.buf.capacity()
            );
        }
        reader.finish().unwrap();
        assert_eq!(items, 300);
    }

    #[test]
    fn a_body_cut_anywhere_is_an_error_not_a_short_list() {
        let body = list(3);
        for at in 0..body.len() - 4 {
            // The last fields are the empty contentEncoding and contentType (2 bytes each):
            // cut before them, the list itself is whole.
            assert!(
                read(&[&body[..at]]).is_err(),
                "cut at {at} of {}",
                body.len()
            );
        }
    }

    #[test]
    fn items_over_the_bound_are_refused_on_their_header() {
        let body = list(40);
        let mut reader = ListReader::new(100);
        reader.push(&body);
        let mut error = None;
        loop {
            match reader.next_piece() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        let error = error.expect("an item over 100 bytes");
        assert!(error.to_string().contains("exceeds the limit"), "{error}");
    }

    #[test]
    fn garbage_is_an_error() {
        for body in [
            &b"{\"kind\""[..],
            b"k8s\0\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ] {
            let mut reader = ListReader::new(1 << 20);
            reader.push(body);
            assert!(reader.next_piece().is_err(), "{body:?}");
        }
        assert!(ListReader::new(10).finish().is_err(), "an empty body");
    }
}
