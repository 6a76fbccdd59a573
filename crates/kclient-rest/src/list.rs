//! Lists decoded as their bytes arrive ([`Request::fetch_list`](crate::Request::fetch_list)).
//!
//! A list answered from kube-apiserver's watch cache (a reflector's first list) comes in one
//! body whatever the page size: 25 MB of protobuf for 10k Pods, sent over a few hundred
//! milliseconds. Read whole and then decoded, the decoding would start when the transfer
//! ends. Here a format's reader ([`ListItems`]: kclient-protobuf's `ListReader`,
//! kclient-core's `JsonListReader`) is fed the body chunk by chunk; the list is handed over
//! as soon as its metadata has arrived (so that a pager asks for the next page at once), and
//! its items are decoded as their bytes arrive, while the connection goes on receiving.
//! Only the item being received is buffered beside what was decoded.

use futures::stream::{self, StreamExt as _};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kclient_core::json_list::{JsonListPiece, JsonListReader};
use kclient_core::managed_fields::decode_object;
use kclient_core::{FetchedList, ListPart, ObjectList};
use serde::de::DeserializeOwned;

use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use tokio::time::Instant;

use crate::compression;
use crate::error::Error;
use crate::response::decode_error;

/// The body of a list, read as it arrives ([`Request::fetch_list`](crate::Request::fetch_list)):
/// inflated chunk by chunk if it is gzip-compressed, each read bounded by the request's
/// deadline (the decoding that happens between reads counts against it, as in client-go,
/// whose decoder reads the body under the request's context).
pub(crate) struct ListBody {
    headers: http::HeaderMap,
    body: Incoming,
    inflater: Option<compression::Inflater>,
    /// Compressed bytes received and not inflated yet (a chunk is inflated a step at a time,
    /// so that a bomb is met by the list's reader, and refused, before it takes the memory).
    compressed: Bytes,
    /// A chunk read ahead and handed back ([`unread`](Self::unread)).
    unread: Option<Bytes>,
    deadline: Option<(Instant, std::time::Duration)>,
    url: String,
    ended: bool,
}

impl ListBody {
    pub(crate) fn new(
        response: http::Response<Incoming>,
        url: String,
        deadline: Option<(Instant, std::time::Duration)>,
        max_inflated_len: u64,
    ) -> Self {
        let (mut parts, body) = response.into_parts();
        let inflater = compression::is_gzip(&parts.headers)
            .then(|| compression::Inflater::incremental(&mut parts.headers, max_inflated_len));
        Self {
            headers: parts.headers,
            body,
            inflater,
            compressed: Bytes::new(),
            unread: None,
            deadline,
            url,
            ended: false,
        }
    }

    /// The response's headers (without those of the compression).
    pub(crate) fn headers(&self) -> &http::HeaderMap {
        &self.headers
    }

    /// The next bytes of the (inflated) body; `None` at its end. A compressed body comes
    /// [`INFLATE_STEP`](compression::INFLATE_STEP) at a time, and fails with
    /// [`Error::InflatedTooLarge`] past the request's bound.
    pub(crate) async fn next(&mut self) -> Result<Option<Bytes>, Error> {
        if let Some(chunk) = self.unread.take() {
            return Ok(Some(chunk));
        }
        while !self.ended {
            if let Some(inflater) = &mut self.inflater {
                if !self.compressed.is_empty() {
                    let used = inflater
                        .inflate(&self.compressed, compression::INFLATE_STEP)
                        .map_err(|e| e.into_error(&self.url))?;
                    bytes::Buf::advance(&mut self.compressed, used);
                    let inflated = inflater.take();
                    if !inflated.is_empty() {
                        return Ok(Some(Bytes::from(inflated)));
                    }
                    continue;
                }
            }
            let frame = match self.deadline {
                Some((at, timeout)) => tokio::time::timeout_at(at, self.body.frame())
                    .await
                    .map_err(|_| Error::Timeout {
                        timeout,
                        previous: None,
                    })?,
                None => self.body.frame().await,
            };
            let data = match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue, // trailers
                },
                Some(Err(e)) => return Err(self.transport(Box::new(e))),
                None => {
                    self.ended = true;
                    return match self.inflater.take() {
                        Some(inflater) => {
                            let rest = inflater.finish().map_err(|e| e.into_error(&self.url))?;
                            Ok(Some(rest).filter(|rest| !rest.is_empty()))
                        }
                        None => Ok(None),
                    };
                }
            };
            if self.inflater.is_none() {
                return Ok(Some(data));
            }
            self.compressed = data;
        }
        Ok(None)
    }

    /// Hands a chunk read with [`next`](Self::next) back: the next call returns it again.
    pub(crate) fn unread(&mut self, chunk: Bytes) {
        self.unread = Some(chunk);
    }

    fn transport(&self, source: Box<dyn std::error::Error + Send + Sync>) -> Error {
        Error::Transport {
            url: self.url.clone(),
            source,
        }
    }
}

/// A list format's reader and item decoder, fed the body by [`streaming_list`].
pub(crate) trait ListItems<K>: Send + 'static {
    /// Adds the next bytes of the body.
    fn push(&mut self, chunk: &[u8]);

    /// Decodes the items whose bytes have all arrived into `items` (and keeps the list's
    /// metadata when it arrives).
    fn decode_arrived(&mut self, items: &mut Vec<K>) -> Result<(), Error>;

    /// The list's metadata, once it has arrived.
    fn metadata(&self) -> Option<&ListMeta>;

    /// At the end of the body: an error if it was cut short, else the list without items.
    fn finish(&mut self) -> Result<ObjectList<()>, Error>;
}

/// Reads `body` with `items` up to the list's metadata, and hands the list over with the
/// rest to decode as it arrives. Items that came before the metadata (no API server writes
/// them there) are the first ones handed out; a body that ends before any metadata is a list
/// decoded whole.
///
/// The reader is boxed, whichever its encoding, so that a program compiles this once per
/// kind, not once per encoding (`docs/architecture.md`, "Compiled once"): a virtual call per
/// chunk of the body, never per item.
pub(crate) async fn streaming_list<K: Send + 'static>(
    body: ListBody,
    items: Box<dyn ListItems<K>>,
) -> Result<FetchedList<K, Error>, Error> {
    let mut list = StreamingList {
        body,
        items,
        ended: false,
    };
    let mut first = Vec::new();
    loop {
        list.items.decode_arrived(&mut first)?;
        if list.items.metadata().is_some() {
            break;
        }
        if let Some(end) = list.read().await? {
            return Ok(FetchedList::decoded(ObjectList {
                types: end.types,
                metadata: end.metadata,
                items: first,
            }));
        }
    }
    let metadata = list.items.metadata().cloned().unwrap_or_default();
    let first = (!first.is_empty()).then_some(Ok(ListPart::Items(first)));
    let rest = stream::unfold(list, |mut list| async move {
        let part = list.next_part().await?;
        Some((part, list))
    });
    Ok(FetchedList::streaming(
        metadata,
        stream::iter(first).chain(rest).boxed(),
    ))
}

/// The state of a [`streaming_list`] after its metadata.
struct StreamingList<K> {
    body: ListBody,
    items: Box<dyn ListItems<K>>,
    /// Whether the end (or an error) was handed out.
    ended: bool,
}

impl<K: 'static> StreamingList<K> {
    /// Reads the next bytes of the body into the reader; at the end of the body, the list
    /// without items (an error if the body was cut short).
    async fn read(&mut self) -> Result<Option<ObjectList<()>>, Error> {
        match self.body.next().await? {
            Some(chunk) => {
                self.items.push(&chunk);
                Ok(None)
            }
            None => self.items.finish().map(Some),
        }
    }

    /// The items decoded from the next bytes, the end, or an error; `None` after the end or
    /// an error.
    async fn next_part(&mut self) -> Option<Result<ListPart<K>, Error>> {
        if self.ended {
            return None;
        }
        let part = self.decode_more().await;
        self.ended = !matches!(part, Ok(ListPart::Items(_)));
        Some(part)
    }

    async fn decode_more(&mut self) -> Result<ListPart<K>, Error> {
        let mut items = Vec::new();
        loop {
            self.items.decode_arrived(&mut items)?;
            if !items.is_empty() {
                return Ok(ListPart::Items(items));
            }
            if let Some(end) = self.read().await? {
                return Ok(ListPart::End(end));
            }
        }
    }
}

/// A JSON list's items (kclient-core's `JsonListReader`), each decoded with serde_json,
/// without `metadata.managedFields` if asked.
pub(crate) struct JsonItems<K> {
    reader: JsonListReader,
    omit_managed_fields: bool,
    metadata: Option<ListMeta>,
    _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K> JsonItems<K> {
    pub(crate) fn new(max_item_len: usize, omit_managed_fields: bool) -> Self {
        Self {
            reader: JsonListReader::new(max_item_len),
            omit_managed_fields,
            metadata: None,
            _kind: std::marker::PhantomData,
        }
    }
}

impl<K: DeserializeOwned + Send + 'static> ListItems<K> for JsonItems<K> {
    fn push(&mut self, chunk: &[u8]) {
        self.reader.push(chunk);
    }

    fn decode_arrived(&mut self, items: &mut Vec<K>) -> Result<(), Error> {
        let omit = self.omit_managed_fields;
        loop {
            let piece = self
                .reader
                .next_piece()
                .map_err(|e| decode_error::<ObjectList<K>>(b"", e))?;
            match piece {
                None => return Ok(()),
                Some(JsonListPiece::Head(head)) => {
                    if self.reader.head_has_metadata() {
                        self.metadata = Some(head.metadata);
                    }
                }
                Some(JsonListPiece::Item(json)) => {
                    items.push(decode_object(json, omit).map_err(|e| decode_error::<K>(json, e))?);
                }
            }
        }
    }

    fn metadata(&self) -> Option<&ListMeta> {
        self.metadata.as_ref()
    }

    fn finish(&mut self) -> Result<ObjectList<()>, Error> {
        self.reader
            .finish()
            .map_err(|e| decode_error::<ObjectList<K>>(b"", e))
    }
}
