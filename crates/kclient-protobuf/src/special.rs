//! Hand-written codecs of the types whose Go side marshals itself (`time_proto.go`,
//! `micro_time_proto.go`, `fieldsv1.go`, `quantity_proto.go`, apiextensions' `marshal.go`) or
//! whose k8s-openapi side is not a plain struct (`IntOrString`, `RawExtension`, `JSON`, the
//! `JSONSchemaPropsOr*` enums). The generated codecs reach them through [`Value`] and
//! [`Message`], by the Rust type of a field.

#[cfg(feature = "encode")]
use bytes::BufMut;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, MicroTime, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use prost::encoding::WireType;

use crate::field::{Message, Value};
#[cfg(feature = "encode")]
use crate::wire::Encode;
use crate::wire::{self, At, Ctx, Decode, DecodeError};

/// Go's zero `time.Time` (0001-01-01T00:00:00Z) in Unix seconds: Go marshals it as an empty
/// message, and as `null` in JSON (so k8s-openapi has `None`).
const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// The `metav1.Timestamp` message: `seconds` (1) and `nanos` (2).
fn decode_timestamp(mut buf: &[u8]) -> Result<(i64, i32), DecodeError> {
    let (mut seconds, mut nanos) = (0i64, 0i32);
    while !buf.is_empty() {
        let (tag, wt) = wire::key(&mut buf)?;
        match tag {
            1 => seconds = wire::int64(wt, &mut buf).at("seconds")?,
            2 => nanos = wire::int32(wt, &mut buf).at("nanos")?,
            _ => wire::skip(tag, wt, &mut buf)?,
        }
    }
    Ok((seconds, nanos))
}

#[cfg(feature = "encode")]
/// Whole seconds and non-negative nanoseconds, as Go's `Time.Unix()` and `Nanosecond()` give
/// them (flooring before 1970, where jiff's `as_second` truncates toward zero).
fn unix_parts(ts: Timestamp) -> (i64, i32) {
    let (mut s, mut n) = (ts.as_second(), ts.subsec_nanosecond());
    if n < 0 {
        s -= 1;
        n += 1_000_000_000;
    }
    (s, n)
}

fn timestamp(seconds: i64, nanos: i32) -> Result<Option<Timestamp>, DecodeError> {
    if seconds == GO_ZERO_TIME_UNIX && nanos == 0 {
        return Ok(None);
    }
    Timestamp::new(seconds, nanos)
        .map(Some)
        .map_err(|e| DecodeError::new(format!("time out of range: {e}")))
}

/// `metav1.Time`: empty bytes are Go's zero time, i.e. `None`; the nanoseconds are ignored, as
/// Go's `Time.Unmarshal` ignores them (its JSON has whole seconds).
pub fn decode_time(buf: &[u8]) -> Result<Option<Time>, DecodeError> {
    if buf.is_empty() {
        return Ok(None);
    }
    let (seconds, _nanos) = decode_timestamp(buf)?;
    Ok(timestamp(seconds, 0)?.map(Time))
}

#[cfg(feature = "encode")]
fn time_parts(t: Option<&Timestamp>) -> Option<(i64, i32)> {
    let (s, n) = unix_parts(*t?);
    (s != GO_ZERO_TIME_UNIX || n != 0).then_some((s, n))
}

#[cfg(feature = "encode")]
/// Length of a `metav1.Time` message (`None` and the zero time are empty; Go writes `seconds`
/// and a zero `nanos` otherwise).
pub fn time_len(t: Option<&Time>) -> usize {
    match time_parts(t.map(|t| &t.0)) {
        None => 0,
        Some((s, _)) => wire::varint_field_len(1, s as u64) + wire::varint_field_len(2, 0),
    }
}

#[cfg(feature = "encode")]
/// Writes a `metav1.Time` message.
pub fn encode_time(t: Option<&Time>, buf: &mut impl BufMut) {
    if let Some((s, _)) = time_parts(t.map(|t| &t.0)) {
        wire::put_varint(1, s as u64, buf);
        wire::put_varint(2, 0, buf);
    }
}

/// `metav1.MicroTime`: like `Time`, but the nanoseconds are kept, truncated to microseconds.
pub fn decode_micro_time(buf: &[u8]) -> Result<Option<MicroTime>, DecodeError> {
    if buf.is_empty() {
        return Ok(None);
    }
    let (seconds, nanos) = decode_timestamp(buf)?;
    if !(0..1_000_000_000).contains(&nanos) {
        return Err(DecodeError::new(format!("nanos {nanos} out of range")));
    }
    Ok(timestamp(seconds, nanos - nanos % 1000)?.map(MicroTime))
}

#[cfg(feature = "encode")]
fn micro_parts(t: Option<&MicroTime>) -> Option<(i64, i32)> {
    time_parts(t.map(|t| &t.0)).map(|(s, n)| (s, n - n % 1000))
}

#[cfg(feature = "encode")]
/// Length of a `metav1.MicroTime` message.
pub fn micro_time_len(t: Option<&MicroTime>) -> usize {
    match micro_parts(t) {
        None => 0,
        Some((s, n)) => wire::varint_field_len(1, s as u64) + wire::varint_field_len(2, n as u64),
    }
}

#[cfg(feature = "encode")]
/// Writes a `metav1.MicroTime` message.
pub fn encode_micro_time(t: Option<&MicroTime>, buf: &mut impl BufMut) {
    if let Some((s, n)) = micro_parts(t) {
        wire::put_varint(1, s as u64, buf);
        wire::put_varint(2, n as u64, buf);
    }
}

#[cfg(feature = "encode")]
/// The compact JSON text of a value (a `serde_json::Value` always serialises; the empty
/// vector is unreachable).
fn json_bytes(v: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

/// Reads a `{ bytes raw = 1; }` message (`RawExtension`, apiextensions `JSON`, `FieldsV1`'s
/// `Raw`): `None` when empty (Go's JSON has `null`), else the JSON value. CBOR or protobuf
/// payloads are an error (kube-apiserver puts JSON in typed objects).
fn read_raw_json(buf: &[u8], what: &'static str) -> Result<Option<serde_json::Value>, DecodeError> {
    let mut buf = buf;
    let mut raw: &[u8] = &[];
    while !buf.is_empty() {
        let (tag, wt) = wire::key(&mut buf)?;
        match tag {
            1 => raw = wire::delimited(wt, &mut buf).at(what)?,
            _ => wire::skip(tag, wt, &mut buf)?,
        }
    }
    if raw.is_empty() {
        return Ok(None);
    }
    serde_json::from_slice(raw)
        .map(Some)
        .map_err(|e| DecodeError::new(format!("invalid JSON: {e}")).at(what))
}

#[cfg(feature = "encode")]
fn raw_json_len(v: &serde_json::Value) -> usize {
    let len = wire::delimited_len(1, json_bytes(v).len());
    wire::varint_len(len as u64) + len
}

#[cfg(feature = "encode")]
fn put_raw_json(v: &serde_json::Value, buf: &mut impl BufMut) {
    let raw = json_bytes(v);
    wire::put_header_len(wire::delimited_len(1, raw.len()), buf);
    wire::put_bytes(1, &raw, buf);
}

/// A `{ bytes raw = 1; }` message held by k8s-openapi as a newtype over its JSON value.
macro_rules! raw_json_value {
    ($t:ident, $field:literal, $doc:literal) => {
        #[doc = $doc]
        impl Value for $t {
            const WIRE: WireType = WireType::LengthDelimited;
            fn read(wt: WireType, buf: &mut &[u8], _ctx: Ctx) -> Result<Option<Self>, DecodeError> {
                read_raw_json(wire::delimited(wt, buf)?, $field).map(|v| v.map($t))
            }
            #[cfg(feature = "encode")]
            fn value_len(&self) -> usize {
                raw_json_len(&self.0)
            }
            #[cfg(feature = "encode")]
            fn put_value(&self, buf: &mut impl BufMut) {
                put_raw_json(&self.0, buf);
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

raw_json_value!(
    FieldsV1,
    "Raw",
    "`metav1.FieldsV1` `{ bytes Raw = 1; }`: the JSON text; empty is `None`."
);
raw_json_value!(
    RawExtension,
    "raw",
    "`runtime.RawExtension` `{ bytes raw = 1; }`: the embedded object as JSON; empty is `None`."
);

/// `metav1.Time`: see [`decode_time`].
impl Value for Time {
    const WIRE: WireType = WireType::LengthDelimited;
    fn read(wt: WireType, buf: &mut &[u8], _ctx: Ctx) -> Result<Option<Self>, DecodeError> {
        decode_time(wire::delimited(wt, buf)?)
    }
    #[cfg(feature = "encode")]
    fn value_len(&self) -> usize {
        let len = time_len(Some(self));
        wire::varint_len(len as u64) + len
    }
    #[cfg(feature = "encode")]
    fn put_value(&self, buf: &mut impl BufMut) {
        wire::put_header_len(time_len(Some(self)), buf);
        encode_time(Some(self), buf);
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

/// `metav1.MicroTime`: see [`decode_micro_time`].
impl Value for MicroTime {
    const WIRE: WireType = WireType::LengthDelimited;
    fn read(wt: WireType, buf: &mut &[u8], _ctx: Ctx) -> Result<Option<Self>, DecodeError> {
        decode_micro_time(wire::delimited(wt, buf)?)
    }
    #[cfg(feature = "encode")]
    fn value_len(&self) -> usize {
        let len = micro_time_len(Some(self));
        wire::varint_len(len as u64) + len
    }
    #[cfg(feature = "encode")]
    fn put_value(&self, buf: &mut impl BufMut) {
        wire::put_header_len(micro_time_len(Some(self)), buf);
        encode_micro_time(Some(self), buf);
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

/// `IntOrString`: `type` (1, 0 = int, 1 = string), `intVal` (2), `strVal` (3), all three always
/// written by Go.
impl Decode for IntOrString {
    fn decode(mut buf: &[u8], _ctx: Ctx) -> Result<Self, DecodeError> {
        let (mut ty, mut int, mut s) = (0i64, 0i32, String::new());
        while !buf.is_empty() {
            let (tag, wt) = wire::key(&mut buf)?;
            match tag {
                1 => ty = wire::int64(wt, &mut buf).at("type")?,
                2 => int = wire::int32(wt, &mut buf).at("intVal")?,
                3 => s = wire::string(wt, &mut buf).at("strVal")?,
                _ => wire::skip(tag, wt, &mut buf)?,
            }
        }
        Ok(if ty == 1 {
            IntOrString::String(s)
        } else {
            IntOrString::Int(int)
        })
    }
}

#[cfg(feature = "encode")]
impl Encode for IntOrString {
    fn encoded_len(&self) -> usize {
        match self {
            IntOrString::Int(i) => {
                wire::varint_field_len(1, 0)
                    + wire::varint_field_len(2, *i as i64 as u64)
                    + wire::delimited_len(3, 0)
            }
            IntOrString::String(s) => {
                wire::varint_field_len(1, 1)
                    + wire::varint_field_len(2, 0)
                    + wire::delimited_len(3, s.len())
            }
        }
    }

    fn encode_raw(&self, buf: &mut impl BufMut) {
        match self {
            IntOrString::Int(i) => {
                wire::put_varint(1, 0, buf);
                wire::put_varint(2, *i as i64 as u64, buf);
                wire::put_bytes(3, b"", buf);
            }
            IntOrString::String(s) => {
                wire::put_varint(1, 1, buf);
                wire::put_varint(2, 0, buf);
                wire::put_bytes(3, s.as_bytes(), buf);
            }
        }
    }
}

impl Message for IntOrString {
    #[cfg(feature = "encode")]
    fn zero_len() -> usize {
        IntOrString::Int(0).encoded_len()
    }
    #[cfg(feature = "encode")]
    fn put_zero(buf: &mut impl BufMut) {
        IntOrString::Int(0).encode_raw(buf);
    }
}

/// `resource.Quantity`: field 1 holds the canonical string (Go's `Quantity.String()`, the same
/// text its JSON has).
impl Decode for Quantity {
    fn decode(mut buf: &[u8], _ctx: Ctx) -> Result<Self, DecodeError> {
        let mut s = String::new();
        while !buf.is_empty() {
            let (tag, wt) = wire::key(&mut buf)?;
            match tag {
                1 => s = wire::string(wt, &mut buf).at("string")?,
                _ => wire::skip(tag, wt, &mut buf)?,
            }
        }
        Ok(Quantity(s))
    }
}

#[cfg(feature = "encode")]
impl Encode for Quantity {
    fn encoded_len(&self) -> usize {
        wire::delimited_len(1, self.0.len())
    }

    fn encode_raw(&self, buf: &mut impl BufMut) {
        wire::put_bytes(1, self.0.as_bytes(), buf);
    }
}

/// Go's zero `Quantity` marshals as `"0"`.
impl Message for Quantity {
    #[cfg(feature = "encode")]
    fn zero_len() -> usize {
        wire::delimited_len(1, 1)
    }
    #[cfg(feature = "encode")]
    fn put_zero(buf: &mut impl BufMut) {
        wire::put_bytes(1, b"0", buf);
    }
}

#[cfg(feature = "group-apiextensions")]
mod apiextensions;
