//! Field helpers the generated codecs call: one decoding and one encoding function per field
//! rule (`docs/design/protobuf.md` §b), generic over the field's Rust type through [`Value`].
//!
//! The generator picks the helper from the three inputs of a field (the proto label, the Go
//! field's shape and `omitempty`, and whether k8s-openapi holds an `Option`); the Rust type
//! then picks the [`Value`] implementation (a scalar, a special type such as `Time`, or a
//! message with a generated codec).
//!
//! | helper | Rust field | decode | encode |
//! |---|---|---|---|
//! | `req` | `T` | the value | always |
//! | `opt` | `Option<T>` | `Some(value)` (`None` for the zero `Time` and empty raw JSON) | — |
//! | `opt_nz` | `Option<T>` | Go's zero value is `None` (Go's JSON omits it) | — |
//! | `len_opt` / `put_opt` | `Option<T>` | — | only `Some` (Go pointers, `[]byte`) |
//! | `len_opt_zero` / `put_opt_zero` | `Option<T>` | — | always, `None` as Go's zero value (Go values) |
//! | `rep`, `rep_opt` | `Vec<T>`, `Option<Vec<T>>` | one element per field, packed or not | one field per element |
//! | `map`, `map_opt` | `BTreeMap<String, T>`, `Option<…>` | one entry per field | one entry per key, in key order |
//!
//! Once a message is read, its decoder gives each repeated field's spare capacity back
//! (`shrink_rep`, `shrink_rep_opt`); `Message::fit` does the same, in place, for an object
//! decoded some other way (`fit_req`, `fit_opt`, `fit_rep`, `fit_rep_opt`, `fit_map`,
//! `fit_map_opt`, generated for every field that holds a list or a message).

use std::collections::BTreeMap;

#[cfg(feature = "encode")]
use bytes::BufMut;
use k8s_openapi::ByteString;
use prost::encoding::WireType;

#[cfg(feature = "encode")]
use crate::wire::Encode;
use crate::wire::{self, At, Ctx, Decode, DecodeError};

/// What a [`Message`] needs besides decoding: with the `encode` feature, [`Encode`]; without
/// it, nothing (a client that only decodes compiles no encoder).
#[cfg(feature = "encode")]
pub trait MaybeEncode: Encode {}
#[cfg(feature = "encode")]
impl<T: Encode> MaybeEncode for T {}
/// What a [`Message`] needs besides decoding: with the `encode` feature, [`Encode`]; without
/// it, nothing (a client that only decodes compiles no encoder).
#[cfg(not(feature = "encode"))]
pub trait MaybeEncode {}
#[cfg(not(feature = "encode"))]
impl<T> MaybeEncode for T {}

/// A message type with a codec: decodes, encodes (with the `encode` feature), and knows what
/// Go writes for its zero value (a non-pointer struct field is always written by Go's
/// `Marshal`, even when zero).
pub trait Message: Decode + MaybeEncode {
    #[cfg(feature = "encode")]
    /// The length of Go's zero value of the message.
    fn zero_len() -> usize;
    #[cfg(feature = "encode")]
    /// Writes Go's zero value of the message.
    fn put_zero(buf: &mut impl BufMut);
    /// Gives back, in place, the capacity the message's lists (and those of the messages it
    /// holds) do not use: for an object decoded by serde from JSON, whose lists grow as
    /// [`shrink_rep`] describes. An informer stores each object it receives fitted
    /// (`ReflectorOptions::compact_objects`); the protobuf decoders fit as they decode, so
    /// for their objects this only walks the object.
    fn fit(&mut self) {}
}

/// The Rust type of one field value: how it is read from and written to the wire.
pub trait Value: Sized {
    /// The wire type of one value (varints and doubles may also come packed).
    const WIRE: WireType;
    /// Reads one value. `None` is a value k8s-openapi has no representation for but `None`
    /// (the zero `Time`, empty raw JSON): JSON has `null` there.
    fn read(wire_type: WireType, buf: &mut &[u8], ctx: Ctx) -> Result<Option<Self>, DecodeError>;
    #[cfg(feature = "encode")]
    /// The length of the value after its key (with the length prefix of delimited values).
    fn value_len(&self) -> usize;
    #[cfg(feature = "encode")]
    /// Writes the value after its key.
    fn put_value(&self, buf: &mut impl BufMut);
    /// Whether this is Go's zero value of a scalar (which `omitempty` leaves out of JSON).
    fn is_zero(&self) -> bool {
        false
    }
    #[cfg(feature = "encode")]
    /// The length of Go's zero value after its key.
    fn zero_len() -> usize;
    #[cfg(feature = "encode")]
    /// Writes Go's zero value after its key.
    fn put_zero(buf: &mut impl BufMut);
    /// Gives back the capacity the value's lists do not use (nothing for scalars).
    fn fit(&mut self) {}
}

#[cfg(feature = "encode")]
fn put_len(len: usize, buf: &mut impl BufMut) {
    prost::encoding::encode_varint(len as u64, buf);
}

impl Value for String {
    const WIRE: WireType = WireType::LengthDelimited;
    fn read(wt: WireType, buf: &mut &[u8], _ctx: Ctx) -> Result<Option<Self>, DecodeError> {
        wire::string(wt, buf).map(Some)
    }
    #[cfg(feature = "encode")]
    fn value_len(&self) -> usize {
        wire::varint_len(self.len() as u64) + self.len()
    }
    #[cfg(feature = "encode")]
    fn put_value(&self, buf: &mut impl BufMut) {
        put_len(self.len(), buf);
        buf.put_slice(self.as_bytes());
    }
    fn is_zero(&self) -> bool {
        self.is_empty()
    }
    #[cfg(feature = "encode")]
    fn zero_len() -> usize {
        1
    }
    #[cfg(feature = "encode")]
    fn put_zero(buf: &mut impl BufMut) {
        buf.put_u8(0);
    }
}

impl Value for ByteString {
    const WIRE: WireType = WireType::LengthDelimited;
    fn read(wt: WireType, buf: &mut &[u8], _ctx: Ctx) -> Result<Option<Self>, DecodeError> {
        wire::bytes(wt, buf).map(|b| Some(ByteString(b)))
    }
    #[cfg(feature = "encode")]
    fn value_len(&self) -> usize {
        wire::varint_len(self.0.len() as u64) + self.0.len()
    }
    #[cfg(feature = "encode")]
    fn put_value(&self, buf: &mut impl BufMut) {
        put_len(self.0.len(), buf);
        buf.put_slice(&self.0);
    }
    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }
    #[cfg(feature = "encode")]
    fn zero_len() -> usize {
        1
    }
    #[cfg(feature = "encode")]
    fn put_zero(buf: &mut impl BufMut) {
        buf.put_u8(0);
    }
}

macro_rules! varint_value {
    ($t:ty, $read:ident, $to_u64:expr) => {
        impl Value for $t {
            const WIRE: WireType = WireType::Varint;
            fn read(wt: WireType, buf: &mut &[u8], _ctx: Ctx) -> Result<Option<Self>, DecodeError> {
                wire::$read(wt, buf).map(Some)
            }
            #[cfg(feature = "encode")]
            fn value_len(&self) -> usize {
                wire::varint_len($to_u64(*self))
            }
            #[cfg(feature = "encode")]
            fn put_value(&self, buf: &mut impl BufMut) {
                prost::encoding::encode_varint($to_u64(*self), buf);
            }
            fn is_zero(&self) -> bool {
                *self == <$t>::default()
            }
            #[cfg(feature = "encode")]
            fn zero_len() -> usize {
                1
            }
            #[cfg(feature = "encode")]
            fn put_zero(buf: &mut impl BufMut) {
                buf.put_u8(0);
            }
        }
    };
}

// Go writes `int32` as the sign-extended 64 bits (a negative value takes 10 bytes).
varint_value!(i32, int32, |v: i32| v as i64 as u64);
varint_value!(i64, int64, |v: i64| v as u64);
varint_value!(bool, boolean, |v: bool| v as u64);

impl Value for f64 {
    const WIRE: WireType = WireType::SixtyFourBit;
    fn read(wt: WireType, buf: &mut &[u8], _ctx: Ctx) -> Result<Option<Self>, DecodeError> {
        wire::double(wt, buf).map(Some)
    }
    #[cfg(feature = "encode")]
    fn value_len(&self) -> usize {
        8
    }
    #[cfg(feature = "encode")]
    fn put_value(&self, buf: &mut impl BufMut) {
        buf.put_f64_le(*self);
    }
    fn is_zero(&self) -> bool {
        *self == 0.0
    }
    #[cfg(feature = "encode")]
    fn zero_len() -> usize {
        8
    }
    #[cfg(feature = "encode")]
    fn put_zero(buf: &mut impl BufMut) {
        buf.put_f64_le(0.0);
    }
}

/// Named slices of strings (`ExtraValue`, `AttestationValue`, `Verbs`: Go `type X []string`)
/// are a message `{ repeated string items = 1; }` on the wire and a `Vec<String>` in
/// k8s-openapi.
impl Value for Vec<String> {
    const WIRE: WireType = WireType::LengthDelimited;
    fn read(wt: WireType, buf: &mut &[u8], ctx: Ctx) -> Result<Option<Self>, DecodeError> {
        let (mut msg, _) = wire::nested(wt, buf, ctx)?;
        let mut items = Vec::new();
        while !msg.is_empty() {
            let (tag, wt) = wire::key(&mut msg)?;
            match tag {
                1 => items.push(wire::string(wt, &mut msg).at("items")?),
                _ => wire::skip(tag, wt, &mut msg)?,
            }
        }
        shrink_rep(&mut items);
        Ok(Some(items))
    }
    fn fit(&mut self) {
        shrink_rep(self);
    }
    #[cfg(feature = "encode")]
    fn value_len(&self) -> usize {
        let len = items_len(self);
        wire::varint_len(len as u64) + len
    }
    #[cfg(feature = "encode")]
    fn put_value(&self, buf: &mut impl BufMut) {
        put_len(items_len(self), buf);
        for item in self {
            wire::put_bytes(1, item.as_bytes(), buf);
        }
    }
    #[cfg(feature = "encode")]
    fn zero_len() -> usize {
        1
    }
    #[cfg(feature = "encode")]
    fn put_zero(buf: &mut impl BufMut) {
        buf.put_u8(0);
    }
}

#[cfg(feature = "encode")]
fn items_len(items: &[String]) -> usize {
    items.iter().map(|s| wire::delimited_len(1, s.len())).sum()
}

impl<T: Message> Value for T {
    const WIRE: WireType = WireType::LengthDelimited;
    fn read(wt: WireType, buf: &mut &[u8], ctx: Ctx) -> Result<Option<Self>, DecodeError> {
        wire::message(wt, buf, ctx).map(Some)
    }
    #[cfg(feature = "encode")]
    fn value_len(&self) -> usize {
        let len = self.encoded_len();
        wire::varint_len(len as u64) + len
    }
    #[cfg(feature = "encode")]
    fn put_value(&self, buf: &mut impl BufMut) {
        put_len(self.encoded_len(), buf);
        self.encode_raw(buf);
    }
    #[cfg(feature = "encode")]
    fn zero_len() -> usize {
        let len = T::zero_len();
        wire::varint_len(len as u64) + len
    }
    #[cfg(feature = "encode")]
    fn put_zero(buf: &mut impl BufMut) {
        put_len(T::zero_len(), buf);
        T::put_zero(buf);
    }
    fn fit(&mut self) {
        Message::fit(self);
    }
}

fn read_required<V: Value>(wt: WireType, buf: &mut &[u8], ctx: Ctx) -> Result<V, DecodeError> {
    V::read(wt, buf, ctx)?.ok_or_else(|| wire::failure("zero value where one is required"))
}

// ---------------------------------------------------------------------------------------------
// Decoding.

/// A field held as `T`.
#[inline]
pub fn req<V: Value>(
    slot: &mut V,
    wt: WireType,
    buf: &mut &[u8],
    ctx: Ctx,
) -> Result<(), DecodeError> {
    *slot = read_required(wt, buf, ctx)?;
    Ok(())
}

/// A field held as `Option<T>`: whatever is on the wire is `Some` (Go pointers, non-pointer
/// values without `omitempty`).
#[inline]
pub fn opt<V: Value>(
    slot: &mut Option<V>,
    wt: WireType,
    buf: &mut &[u8],
    ctx: Ctx,
) -> Result<(), DecodeError> {
    *slot = V::read(wt, buf, ctx)?;
    Ok(())
}

/// A field held as `Option<T>` of a Go non-pointer value with `omitempty`: the zero value is
/// `None`, as in Go's JSON.
#[inline]
pub fn opt_nz<V: Value>(
    slot: &mut Option<V>,
    wt: WireType,
    buf: &mut &[u8],
    ctx: Ctx,
) -> Result<(), DecodeError> {
    *slot = V::read(wt, buf, ctx)?.filter(|v| !v.is_zero());
    Ok(())
}

/// A repeated field held as `Vec<T>` (field number `tag`); numbers are accepted packed and
/// unpacked (Go writes them unpacked and reads both).
///
/// Go writes a repeated field's elements one after the other, so at the first one the others
/// are counted ahead (their keys read, their values skipped, not decoded) and the `Vec` is
/// given exactly their room: no growing by doubling, nothing for [`shrink_rep`] to give back
/// (it still does, for elements written apart). The count is bounded by the bytes that
/// remain, as every allocation of a decode is.
pub fn rep<V: Value>(
    slot: &mut Vec<V>,
    tag: u32,
    wt: WireType,
    buf: &mut &[u8],
    ctx: Ctx,
) -> Result<(), DecodeError> {
    if V::WIRE != WireType::LengthDelimited && wt == WireType::LengthDelimited {
        let mut packed = wire::delimited(wt, buf)?;
        while !packed.is_empty() {
            slot.push(read_required(V::WIRE, &mut packed, ctx)?);
        }
        return Ok(());
    }
    if slot.capacity() == 0 {
        slot.reserve_exact(1 + following_with_key(tag, wt, buf));
    }
    slot.push(read_required(wt, buf, ctx)?);
    Ok(())
}

/// How many fields with the key `(tag, wt)` follow, one after the other, the value at the
/// start of `buf` (whose key has been read); 0 if the bytes are malformed (the decode then
/// reports them).
fn following_with_key(tag: u32, wt: WireType, buf: &[u8]) -> usize {
    let mut rest = buf;
    if wire::skip(tag, wt, &mut rest).is_err() {
        return 0;
    }
    let mut count = 0;
    loop {
        let mut next = rest;
        match wire::key(&mut next) {
            Ok(key) if key == (tag, wt) && wire::skip(tag, wt, &mut next).is_ok() => {
                rest = next;
                count += 1;
            }
            _ => return count,
        }
    }
}

/// A repeated field held as `Option<Vec<T>>` (nothing on the wire is `None`).
#[inline]
pub fn rep_opt<V: Value>(
    slot: &mut Option<Vec<V>>,
    tag: u32,
    wt: WireType,
    buf: &mut &[u8],
    ctx: Ctx,
) -> Result<(), DecodeError> {
    rep(slot.get_or_insert_with(Vec::new), tag, wt, buf, ctx)
}

/// Gives a decoded repeated field back the capacity it does not use, once its message is read
/// (its elements, decoded before, are already fitted).
///
/// Elements arrive one field at a time, so the `Vec` grows by doubling from Rust's minimum
/// non-zero capacity (four elements of up to 1 KiB): a Pod's single `ContainerStatus` (752
/// bytes) would otherwise keep room for four, its two `EnvVar`s room for four — some 4 KB of
/// a decoded Pod (issue 27). Shrinking is a `realloc` that glibc does in place.
#[inline]
pub fn shrink_rep<V>(slot: &mut Vec<V>) {
    if slot.capacity() > slot.len() {
        slot.shrink_to_fit();
    }
}

/// [`shrink_rep`] for a repeated field held as `Option<Vec<T>>`.
#[inline]
pub fn shrink_rep_opt<V>(slot: &mut Option<Vec<V>>) {
    if let Some(slot) = slot {
        shrink_rep(slot);
    }
}

/// A field held as `T` (generated `Message::fit`).
#[inline]
pub fn fit_req<V: Value>(slot: &mut V) {
    slot.fit();
}

/// A field held as `Option<T>`.
#[inline]
pub fn fit_opt<V: Value>(slot: &mut Option<V>) {
    if let Some(value) = slot {
        value.fit();
    }
}

/// A repeated field held as `Vec<T>`: shrunk, and each element fitted.
#[inline]
pub fn fit_rep<V: Value>(slot: &mut Vec<V>) {
    shrink_rep(slot);
    slot.iter_mut().for_each(Value::fit);
}

/// A repeated field held as `Option<Vec<T>>`.
#[inline]
pub fn fit_rep_opt<V: Value>(slot: &mut Option<Vec<V>>) {
    if let Some(slot) = slot {
        fit_rep(slot);
    }
}

/// A map field held as `BTreeMap<String, T>`: each value fitted (a B-tree has no spare
/// capacity to give back).
#[inline]
pub fn fit_map<V: Value>(slot: &mut BTreeMap<String, V>) {
    slot.values_mut().for_each(Value::fit);
}

/// A map field held as `Option<BTreeMap<String, T>>`.
#[inline]
pub fn fit_map_opt<V: Value>(slot: &mut Option<BTreeMap<String, V>>) {
    if let Some(slot) = slot {
        fit_map(slot);
    }
}

/// One entry of a `map<string, V>` held as `BTreeMap`: a message with the key as field 1 and
/// the value as field 2, either of which may be missing and then is its zero value; the last
/// entry of a key wins.
pub fn map<V: Value>(
    slot: &mut BTreeMap<String, V>,
    wt: WireType,
    buf: &mut &[u8],
    ctx: Ctx,
) -> Result<(), DecodeError> {
    let (mut entry, ctx) = wire::nested(wt, buf, ctx)?;
    let (mut key, mut value) = (String::new(), None);
    while !entry.is_empty() {
        let (tag, wt) = wire::key(&mut entry)?;
        match tag {
            1 => key = wire::string(wt, &mut entry).at("key")?,
            2 => value = Some(read_required(wt, &mut entry, ctx).at("value")?),
            _ => wire::skip(tag, wt, &mut entry)?,
        }
    }
    let value = match value {
        Some(v) => v,
        None => {
            // The zero value: what an empty field of the value's wire type decodes to.
            let zero = [0u8; 8];
            let mut zero = match V::WIRE {
                WireType::SixtyFourBit => &zero[..8],
                _ => &zero[..1],
            };
            read_required(V::WIRE, &mut zero, ctx).at("value")?
        }
    };
    slot.insert(key, value);
    Ok(())
}

/// One entry of a map held as `Option<BTreeMap>` (no entry on the wire is `None`).
#[inline]
pub fn map_opt<V: Value>(
    slot: &mut Option<BTreeMap<String, V>>,
    wt: WireType,
    buf: &mut &[u8],
    ctx: Ctx,
) -> Result<(), DecodeError> {
    map(slot.get_or_insert_with(BTreeMap::new), wt, buf, ctx)
}

/// Decodes a nested message's fields into its parent (Go structs embedded with `json:",inline"`,
/// which k8s-openapi flattens): `merge` reads the nested message's bytes.
#[inline]
pub fn inline<P>(
    parent: &mut P,
    wt: WireType,
    buf: &mut &[u8],
    ctx: Ctx,
    merge: fn(&mut P, &[u8], Ctx) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let (bytes, ctx) = wire::nested(wt, buf, ctx)?;
    merge(parent, bytes, ctx)
}

// ---------------------------------------------------------------------------------------------
// Encoding.

#[cfg(feature = "encode")]
/// Length of a field written always.
#[inline]
pub fn len_req<V: Value>(tag: u32, v: &V) -> usize {
    wire::key_len(tag) + v.value_len()
}

#[cfg(feature = "encode")]
/// Writes a field always.
#[inline]
pub fn put_req<V: Value>(tag: u32, v: &V, buf: &mut impl BufMut) {
    prost::encoding::encode_key(tag, V::WIRE, buf);
    v.put_value(buf);
}

#[cfg(feature = "encode")]
/// Length of a field written only when `Some` (Go pointers and `[]byte`).
#[inline]
pub fn len_opt<V: Value>(tag: u32, v: &Option<V>) -> usize {
    v.as_ref().map_or(0, |v| len_req(tag, v))
}

#[cfg(feature = "encode")]
/// Writes a field only when `Some`.
#[inline]
pub fn put_opt<V: Value>(tag: u32, v: &Option<V>, buf: &mut impl BufMut) {
    if let Some(v) = v {
        put_req(tag, v, buf);
    }
}

#[cfg(feature = "encode")]
/// Length of a field Go always writes (a non-pointer value), `None` being its zero value.
#[inline]
pub fn len_opt_zero<V: Value>(tag: u32, v: &Option<V>) -> usize {
    match v {
        Some(v) => len_req(tag, v),
        None => wire::key_len(tag) + V::zero_len(),
    }
}

#[cfg(feature = "encode")]
/// Writes a field always, `None` as Go's zero value.
#[inline]
pub fn put_opt_zero<V: Value>(tag: u32, v: &Option<V>, buf: &mut impl BufMut) {
    match v {
        Some(v) => put_req(tag, v, buf),
        None => {
            prost::encoding::encode_key(tag, V::WIRE, buf);
            V::put_zero(buf);
        }
    }
}

#[cfg(feature = "encode")]
/// Length of a repeated field (one field per element, unpacked as Go writes them).
#[inline]
pub fn len_rep<V: Value>(tag: u32, v: &[V]) -> usize {
    v.iter().map(|v| len_req(tag, v)).sum()
}

#[cfg(feature = "encode")]
/// Writes a repeated field.
#[inline]
pub fn put_rep<V: Value>(tag: u32, v: &[V], buf: &mut impl BufMut) {
    for v in v {
        put_req(tag, v, buf);
    }
}

#[cfg(feature = "encode")]
/// Length of a repeated field held as `Option<Vec<T>>`.
#[inline]
pub fn len_rep_opt<V: Value>(tag: u32, v: &Option<Vec<V>>) -> usize {
    len_rep(tag, v.as_deref().unwrap_or_default())
}

#[cfg(feature = "encode")]
/// Writes a repeated field held as `Option<Vec<T>>`.
#[inline]
pub fn put_rep_opt<V: Value>(tag: u32, v: &Option<Vec<V>>, buf: &mut impl BufMut) {
    put_rep(tag, v.as_deref().unwrap_or_default(), buf);
}

#[cfg(feature = "encode")]
fn entry_len<V: Value>(key: &str, value: &V) -> usize {
    wire::delimited_len(1, key.len()) + len_req(2, value)
}

#[cfg(feature = "encode")]
/// Length of a map field (one entry per key; Go writes key and value always).
pub fn len_map<V: Value>(tag: u32, map: &BTreeMap<String, V>) -> usize {
    map.iter()
        .map(|(k, v)| wire::delimited_len(tag, entry_len(k, v)))
        .sum()
}

#[cfg(feature = "encode")]
/// Writes a map field, in key order (Go sorts the keys; `BTreeMap` iterates in the same
/// byte order).
pub fn put_map<V: Value>(tag: u32, map: &BTreeMap<String, V>, buf: &mut impl BufMut) {
    for (k, v) in map {
        wire::put_header(tag, entry_len(k, v), buf);
        wire::put_bytes(1, k.as_bytes(), buf);
        put_req(2, v, buf);
    }
}

#[cfg(feature = "encode")]
/// Length of a map field held as `Option<BTreeMap>`.
#[inline]
pub fn len_map_opt<V: Value>(tag: u32, map: &Option<BTreeMap<String, V>>) -> usize {
    map.as_ref().map_or(0, |m| len_map(tag, m))
}

#[cfg(feature = "encode")]
/// Writes a map field held as `Option<BTreeMap>`.
#[inline]
pub fn put_map_opt<V: Value>(tag: u32, map: &Option<BTreeMap<String, V>>, buf: &mut impl BufMut) {
    if let Some(m) = map {
        put_map(tag, m, buf);
    }
}
