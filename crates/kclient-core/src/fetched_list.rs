//! [`FetchedList`]: one list response as it comes off the wire, its metadata read and its
//! items not decoded yet.
//!
//! Decoding a page of 500 Pods takes several times longer than fetching it. Handing out the
//! page's continue token before its items are decoded lets [`ListPager`](crate::ListPager)
//! ask for page n+1 while page n decodes (client-go's pager buffers pages the same way), so a
//! paged list takes about as long as its decoding instead of decoding plus transfer.
//!
//! A list may also still be arriving: kube-apiserver answers a list from its watch cache (a
//! reflector's first list) in one body whatever the limit, 25 MB for 10k Pods sent over a few
//! hundred milliseconds. A [streaming](FetchedList::streaming) list hands out its metadata as
//! soon as it has arrived and decodes each item as soon as its bytes have, so that decoding
//! overlaps the transfer — which is why [`decode`](FetchedList::decode) is `async`.
//!
//! A [`ListerWatcher`](crate::ListerWatcher) returns one from `fetch_list`; the typed and
//! dynamic clients defer the decoding, other listers hand over a list they already decoded.
//!
//! ```
//! use kclient_core::{FetchedList, ObjectList};
//!
//! # futures::executor::block_on(async {
//! let page: FetchedList<u32, std::convert::Infallible> =
//!     FetchedList::decoded(ObjectList::new(vec![1, 2, 3], "7"));
//! assert_eq!(page.metadata().resource_version.as_deref(), Some("7"));
//! let doubled = page.decode_mapped(|n| n * 2).await.unwrap();
//! assert_eq!(doubled.items, [2, 4, 6]);
//! # });
//! ```

use std::fmt;

use futures::stream::{BoxStream, StreamExt as _};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;

use crate::object_list::ObjectList;

/// A piece of a [streaming](FetchedList::streaming) list, in the order of the body.
#[derive(Debug)]
pub enum ListPart<K> {
    /// Items, decoded as their bytes arrived.
    Items(Vec<K>),
    /// The end of the list: its type fields and metadata, without items.
    End(ObjectList<()>),
}

/// One list response whose items may not be decoded yet; see the [module docs](self).
pub struct FetchedList<K, E> {
    metadata: ListMeta,
    items: Items<K, E>,
}

enum Items<K, E> {
    Decoded(ObjectList<K>),
    Streaming(BoxStream<'static, Result<ListPart<K>, E>>),
}

impl<K, E> FetchedList<K, E> {
    /// A list that is already decoded.
    pub fn decoded(list: ObjectList<K>) -> Self {
        Self {
            metadata: list.metadata.clone(),
            items: Items::Decoded(list),
        }
    }

    /// A list still arriving: its `metadata` has (the server writes it before the items),
    /// `parts` are its items as they are decoded, then its [end](ListPart::End) — or an
    /// error, after which nothing follows. A `parts` that ends without an end or an error is
    /// a list whose metadata is the one given here.
    pub fn streaming(
        metadata: ListMeta,
        parts: BoxStream<'static, Result<ListPart<K>, E>>,
    ) -> Self {
        Self {
            metadata,
            items: Items::Streaming(parts),
        }
    }

    /// The list's metadata: resourceVersion, continue token, remaining item count.
    pub fn metadata(&self) -> &ListMeta {
        &self.metadata
    }

    /// The token that fetches the next page, if there is one.
    pub fn continue_token(&self) -> Option<&str> {
        self.metadata.continue_.as_deref().filter(|c| !c.is_empty())
    }

    /// Whether the items are still to be decoded (or to arrive).
    pub fn is_encoded(&self) -> bool {
        !matches!(self.items, Items::Decoded(_))
    }

    /// Decodes the items, handing each to `f` as soon as it is decoded (for a streaming
    /// list, as soon as its bytes have arrived).
    pub async fn decode_mapped<T>(self, mut f: impl FnMut(K) -> T) -> Result<ObjectList<T>, E> {
        let mut parts = match self.items {
            Items::Decoded(list) => return Ok(list.map_items(f)),
            Items::Streaming(parts) => parts,
        };
        let mut items = Vec::new();
        while let Some(part) = parts.next().await {
            match part? {
                ListPart::Items(batch) => items.extend(batch.into_iter().map(&mut f)),
                ListPart::End(list) => {
                    return Ok(ObjectList {
                        types: list.types,
                        metadata: list.metadata,
                        items,
                    })
                }
            }
        }
        Ok(ObjectList {
            types: None,
            metadata: self.metadata,
            items,
        })
    }

    /// Decodes the items.
    pub async fn decode(self) -> Result<ObjectList<K>, E> {
        self.decode_mapped(|item| item).await
    }
}

impl<K: Send + 'static, E: Send + 'static> FetchedList<K, E> {
    /// The same list with each item passed through `f` when it is decoded.
    pub fn map<T: Send + 'static>(
        self,
        mut f: impl FnMut(K) -> T + Send + 'static,
    ) -> FetchedList<T, E> {
        FetchedList {
            metadata: self.metadata,
            items: match self.items {
                Items::Decoded(list) => Items::Decoded(list.map_items(f)),
                Items::Streaming(parts) => Items::Streaming(
                    parts
                        .map(move |part| {
                            part.map(|part| match part {
                                ListPart::Items(batch) => {
                                    ListPart::Items(batch.into_iter().map(&mut f).collect())
                                }
                                ListPart::End(list) => ListPart::End(list),
                            })
                        })
                        .boxed(),
                ),
            },
        }
    }

    /// The same list without the items `keep` refuses (checked as they are decoded).
    pub fn filter(self, mut keep: impl FnMut(&K) -> bool + Send + 'static) -> FetchedList<K, E> {
        FetchedList {
            metadata: self.metadata,
            items: match self.items {
                Items::Decoded(mut list) => {
                    list.items.retain(&mut keep);
                    Items::Decoded(list)
                }
                Items::Streaming(parts) => Items::Streaming(
                    parts
                        .map(move |part| {
                            part.map(|part| match part {
                                ListPart::Items(mut batch) => {
                                    batch.retain(&mut keep);
                                    ListPart::Items(batch)
                                }
                                ListPart::End(list) => ListPart::End(list),
                            })
                        })
                        .boxed(),
                ),
            },
        }
    }

    /// The same list with decoding errors converted by `f`.
    pub fn map_err<E2: Send + 'static>(
        self,
        f: impl FnOnce(E) -> E2 + Send + 'static,
    ) -> FetchedList<K, E2> {
        FetchedList {
            metadata: self.metadata,
            items: match self.items {
                Items::Decoded(list) => Items::Decoded(list),
                // The parts end at the first error (`f` runs once), as they are meant to.
                Items::Streaming(parts) => Items::Streaming(
                    parts
                        .scan(Some(f), |f, part| {
                            let part = match part {
                                Ok(part) => Some(Ok(part)),
                                Err(e) => f.take().map(|f| Err(f(e))),
                            };
                            std::future::ready(part)
                        })
                        .boxed(),
                ),
            },
        }
    }
}

impl<K, E> fmt::Debug for FetchedList<K, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchedList")
            .field("metadata", &self.metadata)
            .field("encoded", &self.is_encoded())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;

    /// A list of `json`'s items arriving in two parts.
    fn streaming(json: &'static str) -> FetchedList<u32, String> {
        let whole: ObjectList<serde_json::Value> = serde_json::from_str(json).unwrap();
        let mut items: Vec<Result<u32, String>> = whole
            .items
            .iter()
            .map(|v| {
                v.as_u64()
                    .map(|n| n as u32)
                    .ok_or(format!("not a number: {v}"))
            })
            .collect();
        let second = items.split_off(items.len() / 2);
        let part = |items: Vec<Result<u32, String>>| {
            items
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
                .map(ListPart::Items)
        };
        let end = ListPart::End(ObjectList {
            types: whole.types,
            metadata: whole.metadata.clone(),
            items: Vec::new(),
        });
        let parts = futures::stream::iter([part(items), part(second), Ok(end)]);
        FetchedList::streaming(whole.metadata, parts.boxed())
    }

    #[test]
    fn a_streaming_list_pages_before_it_decodes_and_decodes_like_a_decoded_one() {
        let json = r#"{"kind":"L","apiVersion":"v1","metadata":{"resourceVersion":"4","continue":"n"},"items":[1,2,3]}"#;
        let page = streaming(json);
        assert!(page.is_encoded());
        assert_eq!(page.continue_token(), Some("n"));
        let decoded = block_on(page.decode()).unwrap();
        let whole: ObjectList<u32> = serde_json::from_str(json).unwrap();
        assert_eq!(decoded, whole);
        let again = FetchedList::<u32, String>::decoded(whole.clone());
        assert!(!again.is_encoded());
        assert_eq!(block_on(again.decode()).unwrap(), whole);
    }

    #[test]
    fn map_and_map_err_compose_with_the_streaming_decoder() {
        let page = streaming(r#"{"metadata":{},"items":[1,2]}"#)
            .map(|n| n + 10)
            .map_err(|e| e.len());
        assert_eq!(block_on(page.decode()).unwrap().items, [11, 12]);
        let broken = streaming(r#"{"metadata":{"continue":"x"},"items":[1,2,"three"]}"#)
            .map_err(|e| format!("page: {e}"));
        assert_eq!(broken.continue_token(), Some("x"));
        assert!(block_on(broken.decode()).unwrap_err().starts_with("page: "));
    }

    #[test]
    fn parts_that_stop_without_an_end_keep_the_metadata_given() {
        let metadata = ListMeta {
            resource_version: Some("8".into()),
            ..ListMeta::default()
        };
        let parts = futures::stream::iter([Ok::<_, String>(ListPart::Items(vec![1u32]))]);
        let list = block_on(FetchedList::streaming(metadata.clone(), parts.boxed()).decode());
        assert_eq!(list.unwrap(), ObjectList::new(vec![1], "8"));
    }
}
