//! The protobuf side of requests: what a request asks for when it prefers protobuf, how a
//! response in protobuf is recognised, and the decoding of its objects, lists and watch frames
//! with kclient-protobuf's codecs.
//!
//! As in client-go, a request that prefers protobuf sends
//! `Accept: application/vnd.kubernetes.protobuf,application/json` and decodes whatever comes
//! back by its `Content-Type`: a server (or a type, such as a custom resource) that answers
//! JSON is decoded as JSON. A type without a codec never asks for protobuf.

use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kclient_core::{ObjectList, TypeMeta, WatchDecodeError, WatchEvent, WatchStream};
use kclient_protobuf::envelope::{self, FrameDecoder};
use kclient_protobuf::list_reader::{ListPiece, ListReader};
use kclient_protobuf::registry::{self, Codec};
use kclient_protobuf::{core_types, Ctx, DecodeError};

use crate::error::{Error, DECODE_SNIPPET_LEN};
use crate::list::ListItems;
use crate::watch::{decode_events, EventFrames};

/// The media type of Kubernetes protobuf.
pub const PROTOBUF_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The `Accept` header of a request that prefers protobuf (client-go's generated clients').
pub const PROTOBUF_ACCEPT: &str = "application/vnd.kubernetes.protobuf,application/json";

/// Whether a response body is protobuf: by its `Content-Type`, or, without one, by the
/// `k8s\0` magic.
pub(crate) fn is_protobuf(content_type: Option<&str>, body: &[u8]) -> bool {
    match content_type {
        Some(ct) => ct
            .trim_start()
            .to_ascii_lowercase()
            .starts_with(PROTOBUF_MEDIA_TYPE),
        None => body.starts_with(&envelope::MAGIC),
    }
}

/// The codec of `K`, or the error of a protobuf answer for a type that has none (a server
/// that answered protobuf to a request that did not ask for it).
fn codec_of<K: 'static>(body: &[u8]) -> Result<&'static Codec<K>, Error> {
    registry::codec::<K>().ok_or_else(|| {
        decode_error::<K>(
            body,
            DecodeError::new("the server answered protobuf, and this type has no protobuf codec"),
        )
    })
}

fn decode_error<K>(body: &[u8], source: DecodeError) -> Error {
    Error::ProtobufDecode {
        what: std::any::type_name::<K>(),
        snippet: kclient_core::snippet(body, DECODE_SNIPPET_LEN),
        source: Box::new(source),
    }
}

/// Decodes a protobuf body as one `K`.
pub(crate) fn decode_object<K: 'static>(body: &[u8]) -> Result<K, Error> {
    codec_of::<K>(body)?
        .decode_body(body, Ctx::default())
        .map_err(|e| decode_error::<K>(body, e))
}

/// A protobuf list's items (kclient-protobuf's `ListReader`), each decoded with `K`'s codec,
/// without `metadata.managedFields` if asked; fed by `list::streaming_list`.
pub(crate) struct ProtobufItems<K: 'static> {
    reader: ListReader,
    codec: &'static Codec<K>,
    ctx: Ctx,
    metadata: Option<ListMeta>,
}

impl<K: 'static> ProtobufItems<K> {
    /// The items of a list of `K`; an error if `K` has no codec.
    pub(crate) fn new(max_item_len: usize, omit_managed_fields: bool) -> Result<Self, Error> {
        let codec = codec_of::<K>(b"")?;
        Ok(Self {
            // The items carry no type of their own: a list of another kind would be decoded
            // as `K`s (its items' bytes read as a `K`'s fields), so its kind is checked.
            reader: ListReader::new(max_item_len).expecting(format!("{}List", codec.kind())),
            codec,
            ctx: Ctx {
                skip_managed_fields: omit_managed_fields,
                ..Ctx::default()
            },
            metadata: None,
        })
    }
}

impl<K: Send + 'static> ListItems<K> for ProtobufItems<K> {
    fn push(&mut self, chunk: &[u8]) {
        self.reader.push(chunk);
    }

    fn decode_arrived(&mut self, items: &mut Vec<K>) -> Result<(), Error> {
        while let Some(piece) = self
            .reader
            .next_piece()
            .map_err(|e| decode_error::<ObjectList<K>>(b"", e))?
        {
            match piece {
                ListPiece::Metadata(metadata) => self.metadata = Some(metadata),
                ListPiece::Item(bytes) => {
                    let item = self
                        .ctx
                        .enter()
                        .and_then(|ctx| self.codec.decode_message(bytes, ctx))
                        .map_err(|e| decode_error::<K>(bytes, e.at("items")))?;
                    items.push(item);
                }
            }
        }
        Ok(())
    }

    fn metadata(&self) -> Option<&ListMeta> {
        self.metadata.as_ref()
    }

    fn finish(&mut self) -> Result<ObjectList<()>, Error> {
        self.reader
            .finish()
            .map_err(|e| decode_error::<ObjectList<K>>(b"", e))?;
        let mut list = ObjectList::new(Vec::new(), "");
        list.types = Some(TypeMeta::new(self.reader.api_version(), self.reader.kind()));
        list.metadata = self.metadata.take().unwrap_or_default();
        Ok(list)
    }
}

/// Length-prefixed protobuf frames, each a `metav1.WatchEvent` decoded with `K`'s codec.
struct ProtobufEvents<K: 'static> {
    frames: FrameDecoder,
    codec: &'static Codec<K>,
    ctx: Ctx,
}

fn watch_error(e: DecodeError) -> WatchDecodeError {
    WatchDecodeError::Protobuf {
        message: e.to_string(),
    }
}

impl<K: Send + 'static> EventFrames<K> for ProtobufEvents<K> {
    fn push(&mut self, chunk: &[u8]) {
        self.frames.push(chunk);
    }

    fn next_event(&mut self) -> Option<Result<WatchEvent<K>, WatchDecodeError>> {
        let frame = self.frames.next_frame()?;
        Some(
            frame
                .and_then(|f| core_types::decode_event(&f, self.codec, self.ctx))
                .map_err(watch_error),
        )
    }

    fn finish(&self) -> Result<(), WatchDecodeError> {
        if self.frames.has_partial() {
            return Err(WatchDecodeError::Truncated {
                buffered: self.frames.partial_len(),
            });
        }
        Ok(())
    }
}

/// Turns a `;stream=watch` protobuf body into a watch stream of `K`, as
/// [`decode_watch`](crate::watch::decode_watch) does for JSON (the same loop, the same ending
/// rules).
pub(crate) fn decode_watch<K: Send + 'static>(
    body: BoxStream<'static, Result<Bytes, Error>>,
    max_frame_len: usize,
    omit_managed_fields: bool,
) -> WatchStream<K, Error> {
    let Some(codec) = registry::codec::<K>() else {
        let error = Error::Watch(watch_error(DecodeError::new(format!(
            "the server answered protobuf, and {} has no protobuf codec",
            std::any::type_name::<K>()
        ))));
        return stream::once(async move { Err(error) }).boxed();
    };
    let frames = ProtobufEvents {
        frames: FrameDecoder::new(max_frame_len),
        codec,
        ctx: Ctx {
            skip_managed_fields: omit_managed_fields,
            ..Ctx::default()
        },
    };
    decode_events(body, frames)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn cm(name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                resource_version: Some("5".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn framed(events: &[(&str, &ConfigMap)]) -> Vec<u8> {
        let codec = registry::codec::<ConfigMap>().unwrap();
        let mut out = Vec::new();
        for (ty, object) in events {
            out.extend_from_slice(&core_types::encode_event_frame(
                ty,
                &codec.encode_body(object),
            ));
        }
        out
    }

    fn watch(body: Vec<u8>, split: usize) -> Vec<Result<WatchEvent<ConfigMap>, Error>> {
        let chunks: Vec<Result<Bytes, Error>> = body
            .chunks(split)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        futures::executor::block_on(
            decode_watch::<ConfigMap>(stream::iter(chunks).boxed(), 1 << 20, false).collect(),
        )
    }

    #[test]
    fn content_types_and_magic_are_recognised() {
        assert!(is_protobuf(
            Some("application/vnd.kubernetes.protobuf"),
            b"{"
        ));
        assert!(is_protobuf(
            Some("application/vnd.kubernetes.protobuf;stream=watch"),
            b""
        ));
        assert!(!is_protobuf(Some("application/json"), &envelope::MAGIC));
        assert!(is_protobuf(None, &envelope::MAGIC));
        assert!(!is_protobuf(None, b"{}"));
    }

    #[test]
    fn watch_frames_split_anywhere_decode() {
        let (a, b) = (cm("a"), cm("b"));
        let body = framed(&[("ADDED", &a), ("MODIFIED", &b), ("DELETED", &a)]);
        for split in [1, 3, 7, body.len()] {
            let events: Vec<_> = watch(body.clone(), split)
                .into_iter()
                .map(Result::unwrap)
                .collect();
            assert_eq!(
                events,
                [
                    WatchEvent::Added(a.clone()),
                    WatchEvent::Modified(b.clone()),
                    WatchEvent::Deleted(a.clone())
                ]
            );
        }
    }

    #[test]
    fn a_truncated_or_malformed_watch_ends_with_one_error() {
        let mut body = framed(&[("ADDED", &cm("a"))]);
        body.extend_from_slice(&[0, 0, 0, 9, 1, 2]);
        let events = watch(body, 4);
        assert_eq!(events.len(), 2);
        assert!(matches!(
            events[1],
            Err(Error::Watch(WatchDecodeError::Truncated { buffered: 6 }))
        ));

        let bad = [0, 0, 0, 2, 0xff, 0xff];
        let events = watch(bad.to_vec(), 6);
        assert!(
            matches!(
                &events[..],
                [Err(Error::Watch(WatchDecodeError::Protobuf { .. }))]
            ),
            "{events:?}"
        );
        let events = futures::executor::block_on(
            decode_watch::<ConfigMap>(
                stream::iter([Ok(Bytes::from_static(&[0, 0, 1, 0]))]).boxed(),
                16,
                false,
            )
            .collect::<Vec<_>>(),
        );
        assert!(
            matches!(&events[..], [Err(Error::Watch(WatchDecodeError::Protobuf { message }))] if message.contains("limit")),
            "{events:?}"
        );
    }

    #[test]
    fn a_type_without_codec_is_a_typed_error() {
        let body = registry::codec::<ConfigMap>()
            .unwrap()
            .encode_body(&cm("a"));
        let err = decode_object::<serde_json::Value>(&body).unwrap_err();
        assert!(matches!(err, Error::ProtobufDecode { .. }), "{err:?}");
        assert!(err.to_string().contains("no protobuf codec"), "{err}");
    }
}
