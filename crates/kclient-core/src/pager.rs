//! [`ListPager`]: paged lists (client-go's `tools/pager`), over any [`ListerWatcher`].
//!
//! A large list is fetched in pages of [`DEFAULT_PAGE_SIZE`] objects, each request carrying
//! the previous page's continue token, so neither the server nor the client holds the whole
//! list in one response. All pages come from one consistent snapshot. If the snapshot expires
//! before the last page (the server answers `410 Expired` to a continue token, typically after
//! an etcd compaction), [`ListPager::list`] falls back to one full, unpaged list, as client-go's
//! `FullListIfExpired` does.
//!
//! The pager does no I/O of its own: every request goes through the lister it is given, so it
//! pages a typed client, a dynamic resource, a filtered lister over either, or an in-memory
//! lister in a test alike. The clients offer it as `pager()`, `list_all()` and `list_pages()`.

use std::fmt;
use std::marker::PhantomData;

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};

use crate::api_error::ApiStatus;
use crate::lister_watcher::ListerWatcher;
use crate::object_list::ObjectList;
use crate::options::ListOptions;

/// The default page size (client-go's `tools/pager` `defaultPageSize`).
pub const DEFAULT_PAGE_SIZE: i64 = 500;

/// Lists a resource page by page (client-go's `pager.ListPager`), over any
/// [`ListerWatcher`]: a typed or dynamic client, a filtered lister over one, or a reflector's
/// own lister.
///
/// ```
/// use futures::TryStreamExt;
/// use kclient_core::{DynamicObject, ListOptions, ListPager, ListerWatcher};
///
/// async fn everything<L>(lister: L) -> Result<Vec<DynamicObject>, L::Error>
/// where
///     L: ListerWatcher<DynamicObject> + Clone + 'static,
/// {
///     // Everything, 100 at a time, falling back to a full list if the snapshot expires.
///     let all = ListPager::new(lister.clone()).page_size(100).list(&ListOptions::default()).await?;
///     // Or page by page, without holding more than one page.
///     let mut pages = ListPager::new(lister).pages(&ListOptions::default());
///     while let Some(page) = pages.try_next().await? {
///         println!("{} objects", page.items.len());
///     }
///     Ok(all.items)
/// }
/// ```
pub struct ListPager<K, L> {
    lister: L,
    page_size: i64,
    full_list_if_expired: bool,
    _kind: PhantomData<fn() -> K>,
}

impl<K, L: Clone> Clone for ListPager<K, L> {
    fn clone(&self) -> Self {
        Self {
            lister: self.lister.clone(),
            page_size: self.page_size,
            full_list_if_expired: self.full_list_if_expired,
            _kind: PhantomData,
        }
    }
}

impl<K, L: fmt::Debug> fmt::Debug for ListPager<K, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListPager")
            .field("lister", &self.lister)
            .field("page_size", &self.page_size)
            .field("full_list_if_expired", &self.full_list_if_expired)
            .finish()
    }
}

impl<K, L> ListPager<K, L>
where
    K: Send + 'static,
    L: ListerWatcher<K>,
{
    /// A pager over `lister` with client-go's defaults: pages of [`DEFAULT_PAGE_SIZE`], and a
    /// full list when the continue token expires.
    pub fn new(lister: L) -> Self {
        Self {
            lister,
            page_size: DEFAULT_PAGE_SIZE,
            full_list_if_expired: true,
            _kind: PhantomData,
        }
    }

    /// The page size used when the options set no `limit` (0 disables paging).
    pub fn page_size(mut self, page_size: i64) -> Self {
        self.page_size = page_size;
        self
    }

    /// Whether [`list`](Self::list) falls back to one full list when a continue token expires
    /// (default `true`).
    pub fn full_list_if_expired(mut self, fall_back: bool) -> Self {
        self.full_list_if_expired = fall_back;
        self
    }

    /// The options of the first page: the caller's `limit`, or the pager's page size.
    fn first_page_options(&self, options: &ListOptions) -> ListOptions {
        let mut options = options.clone();
        if options.limit.unwrap_or(0) == 0 {
            options.limit = Some(self.page_size).filter(|size| *size > 0);
        }
        options
    }

    /// Lists every object, page by page, into one list (client-go's `ListPager.List`).
    ///
    /// The result carries the list metadata of the first page (every page is served from that
    /// snapshot, so its resourceVersion is the list's) without a continue token. If a continue
    /// token expires (`410 Expired`, from the second page on) and the fallback is on, the
    /// pages read so far are dropped and one unpaged list at the caller's original
    /// resourceVersion is returned instead.
    pub async fn list(&self, options: &ListOptions) -> Result<ObjectList<K>, L::Error> {
        Ok(self.list_map(options, |item| item).await?.list)
    }

    /// Lists every object like [`list`](Self::list), passing each item through `f` as its
    /// page arrives, so that only one page of `K` is held at a time (the reflector wraps each
    /// object in an `Arc` this way). Also says whether the server paginated the result
    /// (client-go's `paginatedResult`).
    pub async fn list_map<T: Send>(
        &self,
        options: &ListOptions,
        mut f: impl FnMut(K) -> T + Send,
    ) -> Result<PagedList<T>, L::Error>
    where
        K: Send,
    {
        let mut page_options = self.first_page_options(options);
        let mut result: Option<ObjectList<T>> = None;
        loop {
            let page = match self.lister.list_mapped(&page_options, &mut f).await {
                Ok(page) => page,
                Err(e) => {
                    let expired_midway = e.is_resource_expired()
                        && page_options
                            .continue_token
                            .as_deref()
                            .is_some_and(|c| !c.is_empty());
                    if !expired_midway || !self.full_list_if_expired {
                        return Err(e);
                    }
                    // The snapshot expired while we were paging: drop what was read and fall
                    // back to a full list at the requested resourceVersion.
                    drop(result);
                    let mut full = options.clone();
                    full.limit = None;
                    full.continue_token = None;
                    let list = self.lister.list_mapped(&full, &mut f).await?;
                    return Ok(PagedList {
                        list,
                        paginated: true,
                    });
                }
            };
            let next = page.continue_token().map(str::to_owned);
            match &mut result {
                None => result = Some(page),
                Some(list) => list.items.extend(page.items),
            }
            let Some(token) = next else {
                let mut list = result.unwrap_or_default();
                let paginated = list
                    .metadata
                    .continue_
                    .take()
                    .is_some_and(|c| !c.is_empty());
                list.metadata.remaining_item_count = None;
                return Ok(PagedList { list, paginated });
            };
            page_options = next_page_options(page_options, token);
        }
    }

    /// The pages, one list per request (client-go's `EachListChunk`), as a stream that ends
    /// after the last page.
    ///
    /// There is no fallback here: pages already handed out cannot be taken back, so an
    /// expired continue token ends the stream with the `410 Expired` error
    /// (`is_resource_expired()`), and the caller starts over.
    pub fn pages(
        &self,
        options: &ListOptions,
    ) -> BoxStream<'static, Result<ObjectList<K>, L::Error>>
    where
        L: Clone + 'static,
    {
        let lister = self.lister.clone();
        let first = Some(self.first_page_options(options));
        stream::try_unfold(first, move |next| {
            let lister = lister.clone();
            async move {
                let Some(options) = next else {
                    return Ok(None);
                };
                let page = lister.list(&options).await?;
                let following = page
                    .continue_token()
                    .map(|token| next_page_options(options, token.to_owned()));
                Ok(Some((page, following)))
            }
        })
        .boxed()
    }

    /// Every object, page by page (client-go's `EachListItem`), with the same error rules as
    /// [`pages`](Self::pages).
    pub fn items(&self, options: &ListOptions) -> BoxStream<'static, Result<K, L::Error>>
    where
        L: Clone + 'static,
    {
        self.pages(options)
            .map_ok(|page| stream::iter(page.items.into_iter().map(Ok)))
            .try_flatten()
            .boxed()
    }
}

/// A list gathered page by page, and whether the server paginated it.
#[derive(Debug, Clone, PartialEq)]
pub struct PagedList<T> {
    /// The objects, with the first page's list metadata (no continue token).
    pub list: ObjectList<T>,
    /// Whether the server answered in more than one page (or with a continue token).
    pub paginated: bool,
}

/// A page with `f` applied to its items.
/// The options of the page after one that returned `token`: the token pins the snapshot, so
/// the resourceVersion (and its match rule) may not be sent with it.
fn next_page_options(mut options: ListOptions, token: String) -> ListOptions {
    options.continue_token = Some(token);
    options.resource_version = None;
    options.resource_version_match = None;
    options
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use futures::executor::block_on;
    use futures::stream::StreamExt as _;

    use super::*;
    use crate::api_error::ApiError;
    use crate::lister_watcher::WatchStream;

    /// An in-memory lister over the numbers `0..len`: pages of `limit`, the continue token is
    /// the next index, and tokens expire once `expire_tokens` is set. It records every list.
    #[derive(Clone, Default)]
    struct Numbers {
        len: usize,
        expire_tokens: Arc<Mutex<bool>>,
        expire_after_first_list: bool,
        seen: Arc<Mutex<Vec<ListOptions>>>,
    }

    impl Numbers {
        fn new(len: usize) -> Self {
            Self {
                len,
                ..Self::default()
            }
        }

        fn seen(&self) -> Vec<ListOptions> {
            self.seen.lock().unwrap().clone()
        }
    }

    impl ListerWatcher<usize> for Numbers {
        type Error = ApiError;

        async fn list(&self, options: &ListOptions) -> Result<ObjectList<usize>, ApiError> {
            let first_list = {
                let mut seen = self.seen.lock().unwrap();
                seen.push(options.clone());
                seen.len() == 1
            };
            let start = match options.continue_token.as_deref() {
                Some(token) if *self.expire_tokens.lock().unwrap() => {
                    return Err(ApiError::resource_expired(format!(
                        "continue token {token} expired"
                    )))
                }
                Some(token) => token.parse().unwrap(),
                None => 0,
            };
            let end = match options.limit {
                Some(limit) => (start + limit as usize).min(self.len),
                None => self.len,
            };
            let mut page = ObjectList::new((start..end).collect(), "7");
            if end < self.len {
                page.metadata.continue_ = Some(end.to_string());
                page.metadata.remaining_item_count = Some((self.len - end) as i64);
            }
            if first_list && self.expire_after_first_list {
                *self.expire_tokens.lock().unwrap() = true;
            }
            Ok(page)
        }

        async fn watch(&self, _: &ListOptions) -> Result<WatchStream<usize, ApiError>, ApiError> {
            Ok(futures::stream::empty().boxed())
        }
    }

    #[test]
    fn defaults_are_client_gos() {
        assert_eq!(DEFAULT_PAGE_SIZE, 500);
        let pager = ListPager::new(Numbers::new(0));
        assert_eq!(pager.page_size, 500);
        assert!(pager.full_list_if_expired, "FullListIfExpired: true");
        let first = pager.first_page_options(&ListOptions::default());
        assert_eq!(first.limit, Some(500));
        let explicit = pager.first_page_options(&ListOptions::default().limit(7));
        assert_eq!(
            explicit.limit,
            Some(7),
            "an explicit limit is the page size"
        );
        let unpaged = pager
            .page_size(0)
            .first_page_options(&ListOptions::default());
        assert_eq!(unpaged.limit, None);
    }

    #[test]
    fn following_pages_drop_the_resource_version() {
        let first = ListOptions::default()
            .resource_version("10")
            .resource_version_match(crate::ResourceVersionMatch::NotOlderThan)
            .labels("a=b");
        let next = next_page_options(first, "token".into());
        assert_eq!(next.continue_token.as_deref(), Some("token"));
        assert_eq!(next.resource_version, None);
        assert_eq!(next.resource_version_match, None);
        assert_eq!(next.label_selector.as_deref(), Some("a=b"));
        next.validate(false).unwrap();
    }

    #[test]
    fn list_merges_the_pages_under_the_first_pages_metadata() {
        let lister = Numbers::new(12);
        let all = block_on(
            ListPager::new(lister.clone())
                .page_size(5)
                .list(&ListOptions::default()),
        )
        .unwrap();
        assert_eq!(all.items, (0..12).collect::<Vec<_>>());
        assert_eq!(all.resource_version(), Some("7"));
        assert_eq!(all.continue_token(), None);
        assert_eq!(all.metadata.remaining_item_count, None);
        let limits: Vec<_> = lister.seen().iter().map(|o| o.limit).collect();
        assert_eq!(limits, [Some(5); 3]);

        let pages: Vec<_> = block_on(
            ListPager::new(Numbers::new(12))
                .page_size(5)
                .pages(&ListOptions::default())
                .map(|page| page.unwrap().items.len())
                .collect::<Vec<_>>(),
        );
        assert_eq!(pages, [5, 5, 2]);
        let items: Vec<_> = block_on(
            ListPager::new(Numbers::new(12))
                .page_size(5)
                .items(&ListOptions::default())
                .map(Result::unwrap)
                .collect::<Vec<_>>(),
        );
        assert_eq!(items, (0..12).collect::<Vec<_>>());
    }

    #[test]
    fn an_expired_continue_token_falls_back_to_one_full_list_or_is_returned() {
        let lister = Numbers {
            expire_after_first_list: true,
            ..Numbers::new(12)
        };
        let options = ListOptions::default().resource_version("3");
        let all = block_on(ListPager::new(lister.clone()).page_size(5).list(&options)).unwrap();
        assert_eq!(all.items.len(), 12, "the full list, not the first page");
        let seen = lister.seen();
        assert_eq!(seen.len(), 3, "first page, expired second page, full list");
        assert_eq!(seen[2].limit, None, "the fallback is unpaged");
        assert_eq!(seen[2].continue_token, None);
        assert_eq!(
            seen[2].resource_version.as_deref(),
            Some("3"),
            "at the caller's resourceVersion"
        );

        let lister = Numbers {
            expire_after_first_list: true,
            ..Numbers::new(12)
        };
        let err = block_on(
            ListPager::new(lister.clone())
                .page_size(5)
                .full_list_if_expired(false)
                .list(&ListOptions::default()),
        )
        .unwrap_err();
        assert!(err.is_resource_expired(), "{err}");
        assert_eq!(lister.seen().len(), 2);

        let lister = Numbers {
            expire_after_first_list: true,
            ..Numbers::new(12)
        };
        let mut pages = ListPager::new(lister)
            .page_size(5)
            .pages(&ListOptions::default());
        assert_eq!(block_on(pages.next()).unwrap().unwrap().items.len(), 5);
        let err = block_on(pages.next()).unwrap().unwrap_err();
        assert!(err.is_resource_expired(), "no fallback for pages: {err}");
    }
}
