//! The wire around the messages: the `k8s\0` magic and `runtime.Unknown` envelope, lists read
//! item by item, and `;stream=watch` frames.

#[cfg(feature = "encode")]
use bytes::BufMut;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;

#[cfg(feature = "encode")]
use crate::wire::Encode;
use crate::wire::{self, At, Ctx, Decode, DecodeError};

/// The four bytes every protobuf body of kube-apiserver starts with (apimachinery
/// `runtime/serializer/protobuf/protobuf.go`, `protoEncodingPrefix`).
pub const MAGIC: [u8; 4] = [0x6b, 0x38, 0x73, 0x00];

/// A decoded `runtime.Unknown` (the envelope): the type and the undecoded bytes of the object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Unknown<'a> {
    /// `typeMeta.apiVersion`.
    pub api_version: String,
    /// `typeMeta.kind`.
    pub kind: String,
    /// The object's message (without magic or envelope).
    pub raw: &'a [u8],
    /// `contentEncoding` (always empty from kube-apiserver).
    pub content_encoding: String,
    /// `contentType` (always empty from kube-apiserver: the raw bytes are protobuf).
    pub content_type: String,
}

/// Reads the magic and the envelope of a protobuf body.
///
/// The envelope must hold its object (`raw`, which kube-apiserver always writes, even for an
/// empty message): a body cut right after its `typeMeta` would otherwise read as an empty
/// object. The object must be protobuf: a `contentType` other than empty or
/// `application/vnd.kubernetes.protobuf` (a hostile or broken server's JSON in the envelope) or any
/// `contentEncoding` is an error naming what was found, not bytes decoded as what they are not.
pub fn decode_envelope(body: &[u8]) -> Result<Unknown<'_>, DecodeError> {
    let Some(mut buf) = body.strip_prefix(&MAGIC[..]) else {
        return Err(DecodeError::new(
            "not a Kubernetes protobuf body (no k8s\\0 prefix)",
        ));
    };
    let mut unk = Unknown::default();
    let mut has_raw = false;
    while !buf.is_empty() {
        let (tag, wt) = wire::key(&mut buf)?;
        match tag {
            1 => {
                let type_meta = wire::delimited(wt, &mut buf).at("typeMeta")?;
                (unk.api_version, unk.kind) = decode_type_meta(type_meta)?;
            }
            2 => {
                unk.raw = wire::delimited(wt, &mut buf).at("raw")?;
                has_raw = true;
            }
            3 => unk.content_encoding = wire::string(wt, &mut buf).at("contentEncoding")?,
            4 => unk.content_type = wire::string(wt, &mut buf).at("contentType")?,
            _ => wire::skip(tag, wt, &mut buf)?,
        }
    }
    check_content_encoding(&unk.content_encoding)?;
    check_content_type(&unk.content_type)?;
    if !has_raw {
        return Err(DecodeError::new(format!(
            "the envelope of {:?} has no object (raw): a body cut short",
            unk.kind
        )));
    }
    Ok(unk)
}

/// The media type of Kubernetes protobuf: what an envelope's `contentType` may say (besides
/// nothing, which is what kube-apiserver writes).
const PROTOBUF_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// An envelope's `contentType`: empty or `application/vnd.kubernetes.protobuf` (parameters and case aside),
/// else an error naming it.
pub(crate) fn check_content_type(content_type: &str) -> Result<(), DecodeError> {
    let media_type = content_type.split(';').next().unwrap_or_default().trim();
    if media_type.is_empty() || media_type.eq_ignore_ascii_case(PROTOBUF_MEDIA_TYPE) {
        return Ok(());
    }
    Err(DecodeError::new(format!(
        "the envelope's object is {content_type:?}, not {PROTOBUF_MEDIA_TYPE}"
    ))
    .at("contentType"))
}

/// An envelope's `contentEncoding`: empty (kclient decodes no encoded object), else an error
/// naming it.
pub(crate) fn check_content_encoding(content_encoding: &str) -> Result<(), DecodeError> {
    if content_encoding.is_empty() {
        return Ok(());
    }
    Err(DecodeError::new(format!(
        "the envelope's object is encoded as {content_encoding:?}, which kclient does not decode"
    ))
    .at("contentEncoding"))
}

/// Reads the envelope's `typeMeta` message: its `apiVersion` and `kind`.
pub fn decode_type_meta(mut type_meta: &[u8]) -> Result<(String, String), DecodeError> {
    let (mut api_version, mut kind) = (String::new(), String::new());
    while !type_meta.is_empty() {
        let (tag, wt) = wire::key(&mut type_meta)?;
        match tag {
            1 => api_version = wire::string(wt, &mut type_meta).at("typeMeta.apiVersion")?,
            2 => kind = wire::string(wt, &mut type_meta).at("typeMeta.kind")?,
            _ => wire::skip(tag, wt, &mut type_meta)?,
        }
    }
    Ok((api_version, kind))
}

#[cfg(feature = "encode")]
/// Writes `msg` as kube-apiserver's protobuf serializer does (`Unknown.NestedMarshalTo`):
/// magic, `typeMeta` (both strings always), `raw`, then the empty `contentEncoding` and
/// `contentType`, which Go writes too.
pub fn encode_envelope(api_version: &str, kind: &str, msg: &impl Encode) -> Vec<u8> {
    encode_envelope_with(api_version, kind, msg.encoded_len(), |out| {
        msg.encode_raw(out)
    })
}

#[cfg(feature = "encode")]
/// [`encode_envelope`] for a message of `raw_len` bytes that `write_raw` appends.
pub fn encode_envelope_with(
    api_version: &str,
    kind: &str,
    raw_len: usize,
    write_raw: impl FnOnce(&mut Vec<u8>),
) -> Vec<u8> {
    let type_meta_len =
        wire::delimited_len(1, api_version.len()) + wire::delimited_len(2, kind.len());
    let total = MAGIC.len()
        + wire::delimited_len(1, type_meta_len)
        + wire::delimited_len(2, raw_len)
        + wire::delimited_len(3, 0)
        + wire::delimited_len(4, 0);
    let mut out = Vec::with_capacity(total);
    out.put_slice(&MAGIC);
    wire::put_header(1, type_meta_len, &mut out);
    wire::put_bytes(1, api_version.as_bytes(), &mut out);
    wire::put_bytes(2, kind.as_bytes(), &mut out);
    wire::put_header(2, raw_len, &mut out);
    let start = out.len();
    write_raw(&mut out);
    debug_assert_eq!(out.len() - start, raw_len);
    wire::put_bytes(3, b"", &mut out);
    wire::put_bytes(4, b"", &mut out);
    debug_assert_eq!(out.len(), total);
    out
}

#[cfg(feature = "encode")]
/// Writes a list body (`XxxList`: `metadata` = 1, then each of `items` = 2) as
/// kube-apiserver's protobuf serializer does.
pub fn encode_list<T: Encode>(
    api_version: &str,
    kind: &str,
    metadata: &ListMeta,
    items: &[T],
) -> Vec<u8> {
    let metadata_len = metadata.encoded_len();
    let items_len: usize = items
        .iter()
        .map(|item| wire::delimited_len(2, item.encoded_len()))
        .sum();
    let raw_len = wire::delimited_len(1, metadata_len) + items_len;
    encode_envelope_with(api_version, kind, raw_len, |out| {
        wire::put_header(1, metadata_len, out);
        metadata.encode_raw(out);
        for item in items {
            wire::put_header(2, item.encoded_len(), out);
            item.encode_raw(out);
        }
    })
}

/// Decodes one object from a protobuf body, checking the envelope's kind.
pub fn decode_object<T: Decode>(body: &[u8], kind: &str, ctx: Ctx) -> Result<T, DecodeError> {
    decode_object_with(body, kind, ctx, T::decode)
}

/// [`decode_object`] with the message's decoder given (a registry codec's).
pub fn decode_object_with<T>(
    body: &[u8],
    kind: &str,
    ctx: Ctx,
    decode: impl FnOnce(&[u8], Ctx) -> Result<T, DecodeError>,
) -> Result<T, DecodeError> {
    let unk = decode_envelope(body)?;
    if unk.kind != kind {
        return Err(DecodeError::new(format!(
            "expected a {kind}, got a {:?}",
            unk.kind
        )));
    }
    decode(unk.raw, ctx)
}

/// Reads the `metadata` (field 1) of a list message without decoding its items (a list's items
/// are field 2; skipping one costs a varint, not a decode) — so a pager can ask for the next
/// page before the items are decoded.
pub fn peek_list_meta(mut raw: &[u8]) -> Result<ListMeta, DecodeError> {
    let mut meta = ListMeta::default();
    while !raw.is_empty() {
        let (tag, wt) = wire::key(&mut raw)?;
        match tag {
            1 => meta = wire::message(wt, &mut raw, Ctx::default()).at("metadata")?,
            _ => wire::skip(tag, wt, &mut raw)?,
        }
    }
    Ok(meta)
}

/// Decodes a list message (`XxxList`: `metadata` = 1, `items` = 2), handing each item to `sink`
/// as soon as it is decoded; returns the list's metadata.
pub fn decode_list<T: Decode>(
    raw: &[u8],
    ctx: Ctx,
    sink: &mut dyn FnMut(T),
) -> Result<ListMeta, DecodeError> {
    decode_list_with(raw, ctx, T::decode, sink)
}

/// [`decode_list`] with the items' decoder given (a registry codec's).
pub fn decode_list_with<T>(
    mut raw: &[u8],
    ctx: Ctx,
    decode_item: impl Fn(&[u8], Ctx) -> Result<T, DecodeError>,
    sink: &mut dyn FnMut(T),
) -> Result<ListMeta, DecodeError> {
    let mut meta = ListMeta::default();
    while !raw.is_empty() {
        let (tag, wt) = wire::key(&mut raw)?;
        match tag {
            1 => meta = wire::message(wt, &mut raw, ctx).at("metadata")?,
            2 => {
                let bytes = wire::delimited(wt, &mut raw).at("items")?;
                let item = decode_item(bytes, ctx.enter()?).map_err(|e| e.at("items"))?;
                sink(item);
            }
            _ => wire::skip(tag, wt, &mut raw)?,
        }
    }
    Ok(meta)
}

/// Finds the frames of a `application/vnd.kubernetes.protobuf;stream=watch` body: each is a
/// 4-byte big-endian length and that many bytes (apimachinery `util/framer`,
/// `lengthDelimitedFrameWriter`). Only the incomplete frame is buffered, up to `max_frame_len`.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    pos: usize,
    max_frame_len: usize,
}

impl FrameDecoder {
    /// kclient's watch frame bound (client-go's streaming decoder stops at 16 MiB).
    pub const DEFAULT_MAX_FRAME_LEN: usize = 64 << 20;

    /// A decoder accepting frames up to `max_frame_len` bytes.
    pub fn new(max_frame_len: usize) -> Self {
        Self {
            buf: Vec::new(),
            pos: 0,
            max_frame_len,
        }
    }

    /// Adds bytes read from the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete frame, if one is buffered; an error for a frame over the limit (checked
    /// on the header, before its bytes arrive).
    pub fn next_frame(&mut self) -> Option<Result<Vec<u8>, DecodeError>> {
        let rest = &self.buf[self.pos..];
        if rest.len() < 4 {
            return None;
        }
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        if len > self.max_frame_len {
            return Some(Err(DecodeError::new(format!(
                "watch frame of {len} bytes exceeds the limit of {}",
                self.max_frame_len
            ))));
        }
        if rest.len() < 4 + len {
            return None;
        }
        let frame = rest[4..4 + len].to_vec();
        self.pos += 4 + len;
        if self.pos > self.buf.len() / 2 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        Some(Ok(frame))
    }

    /// Whether a partial frame is left (a truncated stream when the body ends).
    pub fn has_partial(&self) -> bool {
        self.pos < self.buf.len()
    }

    /// How many bytes of an incomplete frame are buffered.
    pub fn partial_len(&self) -> usize {
        self.buf.len() - self.pos
    }
}

/// A `metav1.WatchEvent` frame: `type` (1) and `object` (2, a `RawExtension` whose `raw` (1) is
/// a whole protobuf body with magic and envelope).
pub fn decode_watch_event(frame: &[u8]) -> Result<(String, &[u8]), DecodeError> {
    let mut buf = frame;
    let (mut ty, mut object): (String, &[u8]) = (String::new(), &[]);
    while !buf.is_empty() {
        let (tag, wt) = wire::key(&mut buf)?;
        match tag {
            1 => ty = wire::string(wt, &mut buf).at("type")?,
            2 => {
                let mut ext = wire::delimited(wt, &mut buf).at("object")?;
                while !ext.is_empty() {
                    let (tag, wt) = wire::key(&mut ext)?;
                    match tag {
                        1 => object = wire::delimited(wt, &mut ext).at("object.raw")?,
                        _ => wire::skip(tag, wt, &mut ext)?,
                    }
                }
            }
            _ => wire::skip(tag, wt, &mut buf)?,
        }
    }
    Ok((ty, object))
}
