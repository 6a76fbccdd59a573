//! The wire layer: the only module that touches `prost::encoding`.
//!
//! `prost::encoding` is public but `#[doc(hidden)]` (prost 0.14 `src/lib.rs`), i.e. outside
//! prost's documented API, so the generated code never calls it directly: it calls these
//! wrappers, and a prost upgrade that moves something changes this file only.
//!
//! Decoding reads from `&mut &[u8]` (a `bytes::Buf`): sub-messages are sub-slices (no copy),
//! every length is checked against what remains before it is used, so allocation is bounded by
//! the input, and nesting is bounded by [`Ctx::depth`].

use std::borrow::Cow;
use std::fmt;

use bytes::BufMut;
use prost::encoding::{self as pe, WireType};

use crate::fresh_stack;

/// A decoding error, with the path of fields it happened under (outermost first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    message: Cow<'static, str>,
    path: Vec<&'static str>,
}

impl DecodeError {
    /// An error with a message.
    pub fn new(message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            message: message.into(),
            path: Vec::new(),
        }
    }

    /// Records that the error happened inside `field` (called while unwinding, so the path is
    /// built innermost first and reversed on display). Kept out of line: every field of every
    /// generated decoder has this error path, taken at most once per decode.
    #[cold]
    #[inline(never)]
    pub fn at(mut self, field: &'static str) -> Self {
        self.path.push(field);
        self
    }

    /// The message without the path.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            return f.write_str(&self.message);
        }
        let path: Vec<&str> = self.path.iter().rev().copied().collect();
        write!(f, "{}: {}", path.join("."), self.message)
    }
}

impl std::error::Error for DecodeError {}

impl From<prost::DecodeError> for DecodeError {
    #[cold]
    #[inline(never)]
    fn from(e: prost::DecodeError) -> Self {
        DecodeError::new(e.to_string())
    }
}

/// Adds the field name to an error on its way out.
pub trait At<T> {
    /// See [`DecodeError::at`].
    fn at(self, field: &'static str) -> Result<T, DecodeError>;
}

impl<T> At<T> for Result<T, DecodeError> {
    #[inline]
    fn at(self, field: &'static str) -> Result<T, DecodeError> {
        self.map_err(|e| e.at(field))
    }
}

/// The most nested messages accepted (prost's and protobuf C++'s default recursion limit).
pub const DEFAULT_DEPTH: u32 = 100;

/// Decoding options and the remaining nesting budget, passed by value.
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    /// Nested messages still allowed.
    pub depth: u32,
    /// Skip `metadata.managedFields` (the transform that strips them, as the JSON path does).
    pub skip_managed_fields: bool,
}

impl Default for Ctx {
    fn default() -> Self {
        Self {
            depth: DEFAULT_DEPTH,
            skip_managed_fields: false,
        }
    }
}

impl Ctx {
    /// The context for one level further down.
    #[inline]
    pub fn enter(self) -> Result<Ctx, DecodeError> {
        match self.depth.checked_sub(1) {
            Some(depth) => Ok(Ctx { depth, ..self }),
            None => Err(failure("nesting too deep")),
        }
    }
}

/// A message type that decodes from the bytes of one message (`Send`: a deeply nested one is
/// decoded on a thread of its own in debug builds, see `fresh_stack`).
pub trait Decode: Sized + Send {
    /// Decodes a whole message (`buf` holds exactly its bytes).
    fn decode(buf: &[u8], ctx: Ctx) -> Result<Self, DecodeError>;
}

/// A message type that encodes as Go's generated `Marshal` does (fields in number order).
pub trait Encode {
    /// The length of the encoded message (without a key or length prefix).
    fn encoded_len(&self) -> usize;
    /// Writes the message's fields.
    fn encode_raw(&self, buf: &mut impl BufMut);

    /// The encoded message as bytes.
    fn encode_to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_len());
        self.encode_raw(&mut v);
        v
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding primitives.

/// Reads the next field key: `(field number, wire type)`.
#[inline]
pub fn key(buf: &mut &[u8]) -> Result<(u32, WireType), DecodeError> {
    Ok(pe::decode_key(buf)?)
}

/// Skips a field of a number this decoder does not know (unknown fields are ignored, as Go's
/// generated `Unmarshal` skips them).
#[inline]
pub fn skip(tag: u32, wire_type: WireType, buf: &mut &[u8]) -> Result<(), DecodeError> {
    Ok(pe::skip_field(
        wire_type,
        tag,
        buf,
        pe::DecodeContext::default(),
    )?)
}

#[inline]
fn expect(wire_type: WireType, expected: WireType) -> Result<(), DecodeError> {
    if wire_type == expected {
        Ok(())
    } else {
        Err(wrong_wire_type(wire_type, expected))
    }
}

#[cold]
#[inline(never)]
fn wrong_wire_type(wire_type: WireType, expected: WireType) -> DecodeError {
    DecodeError::new(format!("wire type {wire_type:?}, expected {expected:?}"))
}

/// A decoding error with a fixed message, made out of line: the decoders' primitives are
/// inlined into every field, their error paths are not.
#[cold]
#[inline(never)]
pub(crate) fn failure(message: &'static str) -> DecodeError {
    DecodeError::new(message)
}

/// A varint field (`int32`, `int64`, `bool`, enums): the raw 64 bits.
#[inline]
pub fn varint(wire_type: WireType, buf: &mut &[u8]) -> Result<u64, DecodeError> {
    expect(wire_type, WireType::Varint)?;
    Ok(pe::decode_varint(buf)?)
}

/// `int32`: Go writes negative values as 10-byte varints of the sign-extended value; the low 32
/// bits are the value.
#[inline]
pub fn int32(wire_type: WireType, buf: &mut &[u8]) -> Result<i32, DecodeError> {
    Ok(varint(wire_type, buf)? as i32)
}

/// `int64`.
#[inline]
pub fn int64(wire_type: WireType, buf: &mut &[u8]) -> Result<i64, DecodeError> {
    Ok(varint(wire_type, buf)? as i64)
}

/// `bool` (any non-zero varint is true, as in Go's generated code).
#[inline]
pub fn boolean(wire_type: WireType, buf: &mut &[u8]) -> Result<bool, DecodeError> {
    Ok(varint(wire_type, buf)? != 0)
}

/// `double` (fixed 64 bits, little-endian).
#[inline]
pub fn double(wire_type: WireType, buf: &mut &[u8]) -> Result<f64, DecodeError> {
    expect(wire_type, WireType::SixtyFourBit)?;
    if buf.len() < 8 {
        return Err(failure("truncated double"));
    }
    let (head, tail) = buf.split_at(8);
    *buf = tail;
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(head);
    Ok(f64::from_le_bytes(bytes))
}

/// A length-delimited field: the sub-slice of its bytes, checked against what remains.
#[inline]
pub fn delimited<'a>(wire_type: WireType, buf: &mut &'a [u8]) -> Result<&'a [u8], DecodeError> {
    expect(wire_type, WireType::LengthDelimited)?;
    let len = pe::decode_varint(buf)?;
    if len > buf.len() as u64 {
        return Err(overlong(len, buf.len()));
    }
    let (head, tail) = buf.split_at(len as usize);
    *buf = tail;
    Ok(head)
}

#[cold]
#[inline(never)]
fn overlong(len: u64, remaining: usize) -> DecodeError {
    DecodeError::new(format!(
        "length {len} exceeds the {remaining} bytes that remain"
    ))
}

/// A `string`. Go's generated code does not check UTF-8 and Go's JSON encoder replaces invalid
/// sequences with U+FFFD, so invalid UTF-8 becomes U+FFFD here too (what the JSON path would
/// have read) rather than an error.
#[inline]
pub fn string(wire_type: WireType, buf: &mut &[u8]) -> Result<String, DecodeError> {
    let bytes = delimited(wire_type, buf)?;
    Ok(match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => lossy(bytes),
    })
}

#[cold]
#[inline(never)]
fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A `bytes` field.
#[inline]
pub fn bytes(wire_type: WireType, buf: &mut &[u8]) -> Result<Vec<u8>, DecodeError> {
    Ok(delimited(wire_type, buf)?.to_vec())
}

/// A nested message.
#[inline]
pub fn message<T: Decode>(
    wire_type: WireType,
    buf: &mut &[u8],
    ctx: Ctx,
) -> Result<T, DecodeError> {
    let (bytes, ctx) = nested(wire_type, buf, ctx)?;
    if fresh_stack::hops_at(ctx) {
        return fresh_stack::on_fresh_stack(|| T::decode(bytes, ctx));
    }
    T::decode(bytes, ctx)
}

/// The bytes of a nested message and the context one level down: the framing every nested
/// message shares ([`message`], map entries, inlined structs, the special messages), compiled
/// once.
#[inline(never)]
pub(crate) fn nested<'a>(
    wire_type: WireType,
    buf: &mut &'a [u8],
    ctx: Ctx,
) -> Result<(&'a [u8], Ctx), DecodeError> {
    let bytes = delimited(wire_type, buf)?;
    Ok((bytes, ctx.enter()?))
}

// ---------------------------------------------------------------------------------------------
// Encoding primitives (each writes a whole field: key, then value).

/// Length of a field key.
#[inline]
pub fn key_len(tag: u32) -> usize {
    pe::key_len(tag)
}

/// Length of a varint.
#[inline]
pub fn varint_len(v: u64) -> usize {
    pe::encoded_len_varint(v)
}

/// Length of a length-delimited field whose content is `len` bytes.
#[inline]
pub fn delimited_len(tag: u32, len: usize) -> usize {
    key_len(tag) + varint_len(len as u64) + len
}

/// Writes a varint field (Go writes `int32`/`int64` as the sign-extended 64 bits).
#[inline]
pub fn put_varint(tag: u32, v: u64, buf: &mut impl BufMut) {
    pe::encode_key(tag, WireType::Varint, buf);
    pe::encode_varint(v, buf);
}

/// Length of a varint field.
#[inline]
pub fn varint_field_len(tag: u32, v: u64) -> usize {
    key_len(tag) + varint_len(v)
}

/// Writes a `double` field.
#[inline]
pub fn put_double(tag: u32, v: f64, buf: &mut impl BufMut) {
    pe::encode_key(tag, WireType::SixtyFourBit, buf);
    buf.put_f64_le(v);
}

/// Writes a length-delimited field with the given content.
#[inline]
pub fn put_bytes(tag: u32, v: &[u8], buf: &mut impl BufMut) {
    pe::encode_key(tag, WireType::LengthDelimited, buf);
    pe::encode_varint(v.len() as u64, buf);
    buf.put_slice(v);
}

/// Writes the key and length of a length-delimited field whose content the caller writes next.
#[inline]
pub fn put_header(tag: u32, len: usize, buf: &mut impl BufMut) {
    pe::encode_key(tag, WireType::LengthDelimited, buf);
    pe::encode_varint(len as u64, buf);
}

/// Writes the length prefix of a delimited value whose content the caller writes next (the
/// key is already written).
#[inline]
pub fn put_header_len(len: usize, buf: &mut impl BufMut) {
    pe::encode_varint(len as u64, buf);
}
