//! What `cargo xtask codegen` would emit for a few messages, written by hand as the template of
//! the emitter: `Decode`/`Encode` impls straight on the k8s-openapi types, no intermediate
//! message structs.
//!
//! Every field follows one rule, picked from three inputs (see DESIGN.md §b):
//! the proto field (number, wire type), the Go field (pointer or value, `omitempty`) and the
//! k8s-openapi field (Rust name, `Option` or not). The rules used here:
//!
//! * `value-omitempty` — Go non-pointer scalar with `omitempty`, Rust `Option<T>`: Go always
//!   writes it; the zero value decodes to `None` (its JSON omits it); `None` encodes as zero.
//! * `value` — Go non-pointer scalar without `omitempty`, Rust `T`: always written.
//! * `pointer` — Go `*T`, Rust `Option<T>`: written iff `Some`; any value read is `Some`.
//! * `repeated` / `map` — written per element / entry (maps in key order); none read is `None`.
//! * `message-value` — Go non-pointer struct: always written (as Go's zero value when `None`).
//! * `message-pointer` — Go `*T`: written iff `Some`.
//! * special types (`Time`, `FieldsV1`, ...) call `crate::special`.
//!
//! Fields are encoded in field-number order, as Go's generated `Marshal` writes them.

#![allow(clippy::needless_update)]

use std::collections::BTreeMap;

use bytes::BufMut;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    ListMeta, ManagedFieldsEntry, ObjectMeta, OwnerReference, Status, StatusCause, StatusDetails,
};
use k8s_openapi::ByteString;

use crate::special;
use crate::wire::{self, At, Ctx, Decode, DecodeError, Encode};

/// `value-omitempty` decoding: the zero value is `None`.
#[inline]
fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// `value-omitempty` decoding for integers.
#[inline]
fn non_zero<T: Default + PartialEq>(v: T) -> Option<T> {
    (v != T::default()).then_some(v)
}

#[inline]
fn opt_str(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("")
}

// ---- k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta ------------------------------------------

impl Decode for ObjectMeta {
    fn decode(mut buf: &[u8], ctx: Ctx) -> Result<Self, DecodeError> {
        let mut m = ObjectMeta::default();
        while !buf.is_empty() {
            let (tag, wt) = wire::key(&mut buf)?;
            match tag {
                // name: string `json:"name,omitempty"` -> value-omitempty
                1 => m.name = non_empty(wire::string(wt, &mut buf).at("name")?),
                2 => m.generate_name = non_empty(wire::string(wt, &mut buf).at("generateName")?),
                3 => m.namespace = non_empty(wire::string(wt, &mut buf).at("namespace")?),
                4 => m.self_link = non_empty(wire::string(wt, &mut buf).at("selfLink")?),
                5 => m.uid = non_empty(wire::string(wt, &mut buf).at("uid")?),
                6 => m.resource_version = non_empty(wire::string(wt, &mut buf).at("resourceVersion")?),
                // generation: int64 `json:"generation,omitempty"` -> value-omitempty
                7 => m.generation = non_zero(wire::int64(wt, &mut buf).at("generation")?),
                // creationTimestamp: Time (value), special
                8 => m.creation_timestamp = special::decode_time(wire::delimited(wt, &mut buf)?).at("creationTimestamp")?,
                // deletionTimestamp: *Time, special
                9 => m.deletion_timestamp = special::decode_time(wire::delimited(wt, &mut buf)?).at("deletionTimestamp")?,
                // deletionGracePeriodSeconds: *int64 -> pointer
                10 => m.deletion_grace_period_seconds = Some(wire::int64(wt, &mut buf).at("deletionGracePeriodSeconds")?),
                // labels: map<string, string> -> map
                11 => {
                    let (k, v) = wire::map_entry(wt, &mut buf, ctx, wire::string, |wt, b, _| wire::string(wt, b)).at("labels")?;
                    m.labels.get_or_insert_with(BTreeMap::new).insert(k, v);
                }
                12 => {
                    let (k, v) = wire::map_entry(wt, &mut buf, ctx, wire::string, |wt, b, _| wire::string(wt, b)).at("annotations")?;
                    m.annotations.get_or_insert_with(BTreeMap::new).insert(k, v);
                }
                // ownerReferences: repeated OwnerReference -> repeated
                13 => m.owner_references.get_or_insert_with(Vec::new).push(wire::message(wt, &mut buf, ctx).at("ownerReferences")?),
                14 => m.finalizers.get_or_insert_with(Vec::new).push(wire::string(wt, &mut buf).at("finalizers")?),
                // managedFields: skipped when the caller strips them (the JSON path's transform)
                17 if ctx.skip_managed_fields => wire::skip(tag, wt, &mut buf)?,
                17 => m.managed_fields.get_or_insert_with(Vec::new).push(wire::message(wt, &mut buf, ctx).at("managedFields")?),
                _ => wire::skip(tag, wt, &mut buf)?,
            }
        }
        Ok(m)
    }
}

impl Encode for ObjectMeta {
    fn encoded_len(&self) -> usize {
        let m = self;
        let mut n = 0;
        n += wire::delimited_len(1, opt_str(&m.name).len());
        n += wire::delimited_len(2, opt_str(&m.generate_name).len());
        n += wire::delimited_len(3, opt_str(&m.namespace).len());
        n += wire::delimited_len(4, opt_str(&m.self_link).len());
        n += wire::delimited_len(5, opt_str(&m.uid).len());
        n += wire::delimited_len(6, opt_str(&m.resource_version).len());
        n += wire::varint_field_len(7, m.generation.unwrap_or(0) as u64);
        n += wire::delimited_len(8, special::time_len(m.creation_timestamp.as_ref()));
        if let Some(t) = &m.deletion_timestamp {
            n += wire::delimited_len(9, special::time_len(Some(t)));
        }
        if let Some(v) = m.deletion_grace_period_seconds {
            n += wire::varint_field_len(10, v as u64);
        }
        if let Some(map) = &m.labels {
            n += wire::bytes_map_len(11, map);
        }
        if let Some(map) = &m.annotations {
            n += wire::bytes_map_len(12, map);
        }
        for v in m.owner_references.iter().flatten() {
            n += wire::message_field_len(13, v);
        }
        for v in m.finalizers.iter().flatten() {
            n += wire::delimited_len(14, v.len());
        }
        for v in m.managed_fields.iter().flatten() {
            n += wire::message_field_len(17, v);
        }
        n
    }

    fn encode_raw(&self, buf: &mut impl BufMut) {
        let m = self;
        wire::put_bytes(1, opt_str(&m.name).as_bytes(), buf);
        wire::put_bytes(2, opt_str(&m.generate_name).as_bytes(), buf);
        wire::put_bytes(3, opt_str(&m.namespace).as_bytes(), buf);
        wire::put_bytes(4, opt_str(&m.self_link).as_bytes(), buf);
        wire::put_bytes(5, opt_str(&m.uid).as_bytes(), buf);
        wire::put_bytes(6, opt_str(&m.resource_version).as_bytes(), buf);
        wire::put_varint(7, m.generation.unwrap_or(0) as u64, buf);
        wire::put_header(8, special::time_len(m.creation_timestamp.as_ref()), buf);
        special::encode_time(m.creation_timestamp.as_ref(), buf);
        if let Some(t) = &m.deletion_timestamp {
            wire::put_header(9, special::time_len(Some(t)), buf);
            special::encode_time(Some(t), buf);
        }
        if let Some(v) = m.deletion_grace_period_seconds {
            wire::put_varint(10, v as u64, buf);
        }
        if let Some(map) = &m.labels {
            wire::put_bytes_map(11, map, buf);
        }
        if let Some(map) = &m.annotations {
            wire::put_bytes_map(12, map, buf);
        }
        for v in m.owner_references.iter().flatten() {
            wire::put_message(13, v, buf);
        }
        for v in m.finalizers.iter().flatten() {
            wire::put_bytes(14, v.as_bytes(), buf);
        }
        for v in m.managed_fields.iter().flatten() {
            wire::put_message(17, v, buf);
        }
    }
}

// ---- k8s.io.apimachinery.pkg.apis.meta.v1.OwnerReference --------------------------------------

impl Decode for OwnerReference {
    fn decode(mut buf: &[u8], _ctx: Ctx) -> Result<Self, DecodeError> {
        let mut m = OwnerReference::default();
        while !buf.is_empty() {
            let (tag, wt) = wire::key(&mut buf)?;
            match tag {
                // kind: string `json:"kind"` -> value (Rust String)
                1 => m.kind = wire::string(wt, &mut buf).at("kind")?,
                3 => m.name = wire::string(wt, &mut buf).at("name")?,
                4 => m.uid = wire::string(wt, &mut buf).at("uid")?,
                5 => m.api_version = wire::string(wt, &mut buf).at("apiVersion")?,
                // controller: *bool -> pointer
                6 => m.controller = Some(wire::boolean(wt, &mut buf).at("controller")?),
                7 => m.block_owner_deletion = Some(wire::boolean(wt, &mut buf).at("blockOwnerDeletion")?),
                _ => wire::skip(tag, wt, &mut buf)?,
            }
        }
        Ok(m)
    }
}

impl Encode for OwnerReference {
    fn encoded_len(&self) -> usize {
        let m = self;
        let mut n = wire::delimited_len(1, m.kind.len())
            + wire::delimited_len(3, m.name.len())
            + wire::delimited_len(4, m.uid.len())
            + wire::delimited_len(5, m.api_version.len());
        if let Some(v) = m.controller {
            n += wire::varint_field_len(6, v as u64);
        }
        if let Some(v) = m.block_owner_deletion {
            n += wire::varint_field_len(7, v as u64);
        }
        n
    }

    fn encode_raw(&self, buf: &mut impl BufMut) {
        let m = self;
        wire::put_bytes(1, m.kind.as_bytes(), buf);
        wire::put_bytes(3, m.name.as_bytes(), buf);
        wire::put_bytes(4, m.uid.as_bytes(), buf);
        wire::put_bytes(5, m.api_version.as_bytes(), buf);
        if let Some(v) = m.controller {
            wire::put_varint(6, v as u64, buf);
        }
        if let Some(v) = m.block_owner_deletion {
            wire::put_varint(7, v as u64, buf);
        }
    }
}

// ---- k8s.io.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry ----------------------------------

impl Decode for ManagedFieldsEntry {
    fn decode(mut buf: &[u8], _ctx: Ctx) -> Result<Self, DecodeError> {
        let mut m = ManagedFieldsEntry::default();
        while !buf.is_empty() {
            let (tag, wt) = wire::key(&mut buf)?;
            match tag {
                1 => m.manager = non_empty(wire::string(wt, &mut buf).at("manager")?),
                2 => m.operation = non_empty(wire::string(wt, &mut buf).at("operation")?),
                3 => m.api_version = non_empty(wire::string(wt, &mut buf).at("apiVersion")?),
                // time: *Time, special
                4 => m.time = special::decode_time(wire::delimited(wt, &mut buf)?).at("time")?,
                6 => m.fields_type = non_empty(wire::string(wt, &mut buf).at("fieldsType")?),
                // fieldsV1: *FieldsV1, special
                7 => m.fields_v1 = special::decode_fields_v1(wire::delimited(wt, &mut buf)?).at("fieldsV1")?,
                8 => m.subresource = non_empty(wire::string(wt, &mut buf).at("subresource")?),
                _ => wire::skip(tag, wt, &mut buf)?,
            }
        }
        Ok(m)
    }
}

impl Encode for ManagedFieldsEntry {
    fn encoded_len(&self) -> usize {
        let m = self;
        let mut n = wire::delimited_len(1, opt_str(&m.manager).len())
            + wire::delimited_len(2, opt_str(&m.operation).len())
            + wire::delimited_len(3, opt_str(&m.api_version).len());
        if let Some(t) = &m.time {
            n += wire::delimited_len(4, special::time_len(Some(t)));
        }
        n += wire::delimited_len(6, opt_str(&m.fields_type).len());
        if let Some(f) = &m.fields_v1 {
            // FieldsV1 writes its Raw (field 1) only when non-empty.
            let raw = special::fields_v1_raw(f);
            n += wire::delimited_len(7, if raw.is_empty() { 0 } else { wire::delimited_len(1, raw.len()) });
        }
        n += wire::delimited_len(8, opt_str(&m.subresource).len());
        n
    }

    fn encode_raw(&self, buf: &mut impl BufMut) {
        let m = self;
        wire::put_bytes(1, opt_str(&m.manager).as_bytes(), buf);
        wire::put_bytes(2, opt_str(&m.operation).as_bytes(), buf);
        wire::put_bytes(3, opt_str(&m.api_version).as_bytes(), buf);
        if let Some(t) = &m.time {
            wire::put_header(4, special::time_len(Some(t)), buf);
            special::encode_time(Some(t), buf);
        }
        wire::put_bytes(6, opt_str(&m.fields_type).as_bytes(), buf);
        if let Some(f) = &m.fields_v1 {
            let raw = special::fields_v1_raw(f);
            let inner = if raw.is_empty() { 0 } else { wire::delimited_len(1, raw.len()) };
            wire::put_header(7, inner, buf);
            if !raw.is_empty() {
                wire::put_bytes(1, &raw, buf);
            }
        }
        wire::put_bytes(8, opt_str(&m.subresource).as_bytes(), buf);
    }
}

// ---- k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta --------------------------------------------

impl Decode for ListMeta {
    fn decode(mut buf: &[u8], _ctx: Ctx) -> Result<Self, DecodeError> {
        let mut m = ListMeta::default();
        while !buf.is_empty() {
            let (tag, wt) = wire::key(&mut buf)?;
            match tag {
                1 => m.self_link = non_empty(wire::string(wt, &mut buf).at("selfLink")?),
                2 => m.resource_version = non_empty(wire::string(wt, &mut buf).at("resourceVersion")?),
                // `continue` -> k8s-openapi `continue_`
                3 => m.continue_ = non_empty(wire::string(wt, &mut buf).at("continue")?),
                4 => m.remaining_item_count = Some(wire::int64(wt, &mut buf).at("remainingItemCount")?),
                // shardInfo (5): *ShardInfo, not needed by the spike: skipped like an unknown field
                _ => wire::skip(tag, wt, &mut buf)?,
            }
        }
        Ok(m)
    }
}

impl Encode for ListMeta {
    fn encoded_len(&self) -> usize {
        let m = self;
        let mut n = wire::delimited_len(1, opt_str(&m.self_link).len())
            + wire::delimited_len(2, opt_str(&m.resource_version).len())
            + wire::delimited_len(3, opt_str(&m.continue_).len());
        if let Some(v) = m.remaining_item_count {
            n += wire::varint_field_len(4, v as u64);
        }
        n
    }

    fn encode_raw(&self, buf: &mut impl BufMut) {
        let m = self;
        wire::put_bytes(1, opt_str(&m.self_link).as_bytes(), buf);
        wire::put_bytes(2, opt_str(&m.resource_version).as_bytes(), buf);
        wire::put_bytes(3, opt_str(&m.continue_).as_bytes(), buf);
        if let Some(v) = m.remaining_item_count {
            wire::put_varint(4, v as u64, buf);
        }
    }
}

// ---- k8s.io.api.core.v1.ConfigMap --------------------------------------------------------------

impl Decode for ConfigMap {
    fn decode(mut buf: &[u8], ctx: Ctx) -> Result<Self, DecodeError> {
        let mut m = ConfigMap::default();
        while !buf.is_empty() {
            let (tag, wt) = wire::key(&mut buf)?;
            match tag {
                // metadata: ObjectMeta (value), Rust required -> message-value
                1 => m.metadata = wire::message(wt, &mut buf, ctx).at("metadata")?,
                2 => {
                    let (k, v) = wire::map_entry(wt, &mut buf, ctx, wire::string, |wt, b, _| wire::string(wt, b)).at("data")?;
                    m.data.get_or_insert_with(BTreeMap::new).insert(k, v);
                }
                // binaryData: map<string, bytes> -> Rust BTreeMap<String, ByteString>
                3 => {
                    let (k, v) = wire::map_entry(wt, &mut buf, ctx, wire::string, |wt, b, _| wire::bytes(wt, b).map(ByteString)).at("binaryData")?;
                    m.binary_data.get_or_insert_with(BTreeMap::new).insert(k, v);
                }
                // immutable: *bool -> pointer
                4 => m.immutable = Some(wire::boolean(wt, &mut buf).at("immutable")?),
                _ => wire::skip(tag, wt, &mut buf)?,
            }
        }
        Ok(m)
    }
}

impl Encode for ConfigMap {
    fn encoded_len(&self) -> usize {
        let m = self;
        let mut n = wire::message_field_len(1, &m.metadata);
        if let Some(map) = &m.data {
            n += wire::bytes_map_len(2, map);
        }
        if let Some(map) = &m.binary_data {
            n += wire::bytes_map_len(3, map.iter().map(|(k, v)| (k, &v.0)));
        }
        if let Some(v) = m.immutable {
            n += wire::varint_field_len(4, v as u64);
        }
        n
    }

    fn encode_raw(&self, buf: &mut impl BufMut) {
        let m = self;
        wire::put_message(1, &m.metadata, buf);
        if let Some(map) = &m.data {
            wire::put_bytes_map(2, map, buf);
        }
        if let Some(map) = &m.binary_data {
            wire::put_bytes_map(3, map.iter().map(|(k, v)| (k, &v.0)), buf);
        }
        if let Some(v) = m.immutable {
            wire::put_varint(4, v as u64, buf);
        }
    }
}

// ---- k8s.io.apimachinery.pkg.apis.meta.v1.Status (+ StatusDetails, StatusCause) -----------------

impl Decode for Status {
    fn decode(mut buf: &[u8], ctx: Ctx) -> Result<Self, DecodeError> {
        let mut m = Status::default();
        while !buf.is_empty() {
            let (tag, wt) = wire::key(&mut buf)?;
            match tag {
                1 => m.metadata = wire::message(wt, &mut buf, ctx).at("metadata")?,
                2 => m.status = non_empty(wire::string(wt, &mut buf).at("status")?),
                3 => m.message = non_empty(wire::string(wt, &mut buf).at("message")?),
                4 => m.reason = non_empty(wire::string(wt, &mut buf).at("reason")?),
                5 => m.details = Some(wire::message(wt, &mut buf, ctx).at("details")?),
                6 => m.code = non_zero(wire::int32(wt, &mut buf).at("code")?),
                _ => wire::skip(tag, wt, &mut buf)?,
            }
        }
        Ok(m)
    }
}

impl Decode for StatusDetails {
    fn decode(mut buf: &[u8], ctx: Ctx) -> Result<Self, DecodeError> {
        let mut m = StatusDetails::default();
        while !buf.is_empty() {
            let (tag, wt) = wire::key(&mut buf)?;
            match tag {
                1 => m.name = non_empty(wire::string(wt, &mut buf).at("name")?),
                2 => m.group = non_empty(wire::string(wt, &mut buf).at("group")?),
                3 => m.kind = non_empty(wire::string(wt, &mut buf).at("kind")?),
                4 => m.causes.get_or_insert_with(Vec::new).push(wire::message(wt, &mut buf, ctx).at("causes")?),
                5 => m.retry_after_seconds = non_zero(wire::int32(wt, &mut buf).at("retryAfterSeconds")?),
                6 => m.uid = non_empty(wire::string(wt, &mut buf).at("uid")?),
                _ => wire::skip(tag, wt, &mut buf)?,
            }
        }
        Ok(m)
    }
}

impl Decode for StatusCause {
    fn decode(mut buf: &[u8], _ctx: Ctx) -> Result<Self, DecodeError> {
        let mut m = StatusCause::default();
        while !buf.is_empty() {
            let (tag, wt) = wire::key(&mut buf)?;
            match tag {
                1 => m.reason = non_empty(wire::string(wt, &mut buf).at("reason")?),
                2 => m.message = non_empty(wire::string(wt, &mut buf).at("message")?),
                3 => m.field = non_empty(wire::string(wt, &mut buf).at("field")?),
                _ => wire::skip(tag, wt, &mut buf)?,
            }
        }
        Ok(m)
    }
}
