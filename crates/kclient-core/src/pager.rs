//! [`ListPager`]: paged lists (client-go's `tools/pager`), over any [`ListerWatcher`].
//!
//! A large list is fetched in pages of [`DEFAULT_PAGE_SIZE`] objects, each request carrying
//! the previous page's continue token, so neither the server nor the client holds the whole
//! list in one response. All pages come from one consistent snapshot. If the snapshot expires
//! before the last page (the server answers `410 Expired` to a continue token, typically after
//! an etcd compaction), [`ListPager::list`] falls back to one full, unpaged list, as client-go's
//! `FullListIfExpired` does.
//!
//! [`ListPager::list`] fetches the next page while the current one decodes (the lister's
//! [`fetch_list`](crate::ListerWatcher::fetch_list) reads a page's continue token before its
//! items), so a paged list takes about as long as decoding it: client-go's pager buffers
//! pages for the same reason.
//!
//! A server (or a proxy in front of it) that hands out a continue token it handed out before
//! would have the list go round in circles, gathering the same pages forever. Every list
//! remembers the continue tokens it was given and fails with
//! [`PagerError::RepeatedContinueToken`] at the first one it sees twice (client-go has no
//! such check). The pager's failures are its own [`PagedListError`]: the lister's error, or
//! the pager's reason to give up; a lister's error type need not know the pager.
//! A page with no items and a new token is progress: kube-apiserver may answer a filtered
//! page with no items and a continue token past the objects it read.
//!
//! The pager does no I/O of its own: every request goes through the lister it is given, so it
//! pages a typed client, a dynamic resource, a filtered lister over either, or an in-memory
//! lister in a test alike. The clients offer it as `pager()`, `list_all()` and `list_pages()`.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};

use crate::api_error::{ApiError, ApiStatus};
use crate::fetched_list::FetchedList;
use crate::lister_watcher::ListerWatcher;
use crate::object_list::ObjectList;
use crate::options::ListOptions;
use crate::status::{Status, StatusReason};

/// The default page size (client-go's `tools/pager` `defaultPageSize`).
pub const DEFAULT_PAGE_SIZE: i64 = 500;

/// Why a paged list failed: a request of it failed (the lister's error `E`), or the pager
/// gave up on a list the server answered without an error ([`PagerError`]). The typed and
/// dynamic clients' errors convert it (their `Error::Pager`), so their `list_all` and
/// `list_pages` fail with the client's own error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PagedListError<E> {
    /// A list request failed, or its page could not be decoded: the lister's error.
    #[error(transparent)]
    Lister(E),
    /// The pager abandoned the list (a continue token seen twice).
    #[error(transparent)]
    Pager(PagerError),
}

impl<E> PagedListError<E> {
    /// The same failure with the lister's error mapped by `f` (the pager's own kept).
    pub fn map_lister<F>(self, f: impl FnOnce(E) -> F) -> PagedListError<F> {
        match self {
            PagedListError::Lister(e) => PagedListError::Lister(f(e)),
            PagedListError::Pager(e) => PagedListError::Pager(e),
        }
    }
}

impl<E: From<PagerError>> PagedListError<E> {
    /// The failure as the lister's error type, for an error that can carry the pager's (the
    /// typed and dynamic clients' `Error::Pager`).
    pub fn into_lister_error(self) -> E {
        match self {
            PagedListError::Lister(e) => e,
            PagedListError::Pager(e) => e.into(),
        }
    }
}

impl<E> From<PagerError> for PagedListError<E> {
    fn from(e: PagerError) -> Self {
        PagedListError::Pager(e)
    }
}

/// The lister's error's status; none for the pager's own failure (the server answered every
/// request).
impl<E: ApiStatus> ApiStatus for PagedListError<E> {
    fn api_status(&self) -> Option<&Status> {
        match self {
            PagedListError::Lister(e) => e.api_status(),
            PagedListError::Pager(_) => None,
        }
    }

    fn is_connection_refused(&self) -> bool {
        match self {
            PagedListError::Lister(e) => e.is_connection_refused(),
            PagedListError::Pager(_) => false,
        }
    }
}

/// Why [`ListPager`] gave up on a list that the server answered without an error (in a
/// [`PagedListError::Pager`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PagerError {
    /// A page carried a continue token that the list was given before: the server (or a
    /// proxy) pages in a loop, and following it would gather the same pages forever. The
    /// token itself is not kept (it can be long, and it is the server's business).
    #[error("the list makes no progress: page {page} returned the continue token {}; the server pages in a loop, so the list was abandoned", repeated_from(*.first_seen))]
    RepeatedContinueToken {
        /// The page that repeated the token (the first page is 1).
        page: usize,
        /// The page that first returned it, or 0 for the token the caller started from.
        first_seen: usize,
    },
}

fn repeated_from(first_seen: usize) -> String {
    match first_seen {
        0 => "the list started from".to_owned(),
        page => format!("of page {page}"),
    }
}

impl ApiStatus for PagerError {
    /// No status: the server answered every request; the client gave up.
    fn api_status(&self) -> Option<&Status> {
        None
    }
}

/// A list the pager gave up on, as an error without reason or code (the server answered
/// every request), for the in-memory lister-watchers whose error is [`ApiError`].
impl From<PagerError> for ApiError {
    fn from(e: PagerError) -> Self {
        Status::failure(StatusReason::Unknown, 0, e.to_string()).into()
    }
}

/// The continue tokens one list was given so far, with the page that returned each: the
/// pager's guard against a server that pages in a loop.
#[derive(Debug, Default)]
struct ContinueTokens {
    seen: HashMap<String, usize>,
    pages: usize,
}

impl ContinueTokens {
    /// The tokens of a list whose first request carries `options` (a caller may start from a
    /// continue token of its own).
    fn starting_from(options: &ListOptions) -> Self {
        let mut tokens = Self::default();
        if let Some(token) = options.continue_token.as_deref().filter(|t| !t.is_empty()) {
            tokens.seen.insert(token.to_owned(), 0);
        }
        tokens
    }

    /// Counts one more page received, and records the continue token it carries, if any:
    /// an error if the list was given that token before.
    fn record(&mut self, token: Option<&str>) -> Result<(), PagerError> {
        self.pages += 1;
        let Some(token) = token else {
            return Ok(());
        };
        match self.seen.insert(token.to_owned(), self.pages) {
            None => Ok(()),
            Some(first_seen) => Err(PagerError::RepeatedContinueToken {
                page: self.pages,
                first_seen,
            }),
        }
    }
}

/// Lists a resource page by page (client-go's `pager.ListPager`), over any
/// [`ListerWatcher`]: a typed or dynamic client, a filtered lister over one, or a reflector's
/// own lister.
///
/// ```
/// use futures::TryStreamExt;
/// use kclient_core::{DynamicObject, ListOptions, ListPager, ListerWatcher, PagedListError};
///
/// async fn everything<L>(lister: L) -> Result<Vec<DynamicObject>, PagedListError<L::Error>>
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
    prefetch: bool,
    _kind: PhantomData<fn() -> K>,
}

impl<K, L: Clone> Clone for ListPager<K, L> {
    fn clone(&self) -> Self {
        Self {
            lister: self.lister.clone(),
            page_size: self.page_size,
            full_list_if_expired: self.full_list_if_expired,
            prefetch: self.prefetch,
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
            .field("prefetch", &self.prefetch)
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
            prefetch: true,
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

    /// Whether [`list_map`](Self::list_map) fetches the next page while the current one
    /// decodes (default `true`). The fetch runs as a task on the current tokio runtime; with
    /// no runtime (or with `false`) pages are fetched one after the other. Ahead-fetching
    /// holds one more undecoded page in memory.
    pub fn prefetch(mut self, prefetch: bool) -> Self {
        self.prefetch = prefetch;
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
    /// resourceVersion is returned instead. A continue token the list was given before fails
    /// it with [`PagerError::RepeatedContinueToken`] instead of following the server round in
    /// circles.
    pub async fn list(
        &self,
        options: &ListOptions,
    ) -> Result<ObjectList<K>, PagedListError<L::Error>>
    where
        L: Clone + 'static,
    {
        Ok(self.list_map(options, |item| item).await?.list)
    }

    /// Lists every object like [`list`](Self::list), passing each item through `f` as its
    /// page arrives, so that only one page of `K` is held at a time (the reflector wraps each
    /// object in an `Arc` this way). Also says whether the server paginated the result
    /// (client-go's `paginatedResult`).
    ///
    /// While a page decodes, the next one is already being fetched on a task of its own (see
    /// [`prefetch`](Self::prefetch)): the lister's
    /// [`fetch_list`](ListerWatcher::fetch_list) hands out a page's continue token before its
    /// items are decoded. At most one page is fetched ahead.
    pub async fn list_map<T: Send>(
        &self,
        options: &ListOptions,
        mut f: impl FnMut(K) -> T + Send,
    ) -> Result<PagedList<T>, PagedListError<L::Error>>
    where
        L: Clone + 'static,
    {
        let mut page_options = self.first_page_options(options);
        let mut tokens = ContinueTokens::starting_from(&page_options);
        let mut fetched = self.lister.fetch_list(&page_options).await;
        let mut result: Option<ObjectList<T>> = None;
        loop {
            let page = match fetched {
                Ok(page) => page,
                Err(e) => {
                    let expired_midway = e.is_resource_expired()
                        && page_options
                            .continue_token
                            .as_deref()
                            .is_some_and(|c| !c.is_empty());
                    if !expired_midway || !self.full_list_if_expired {
                        return Err(PagedListError::Lister(e));
                    }
                    // The snapshot expired while we were paging: drop what was read and fall
                    // back to a full list at the requested resourceVersion.
                    drop(result);
                    let mut full = options.clone();
                    full.limit = None;
                    full.continue_token = None;
                    let list = self
                        .lister
                        .list_mapped(&full, &mut f)
                        .await
                        .map_err(PagedListError::Lister)?;
                    return Ok(PagedList {
                        list,
                        paginated: true,
                    });
                }
            };
            tokens.record(page.continue_token())?;
            let next_options = page
                .continue_token()
                .map(|token| next_page_options(page_options.clone(), token.to_owned()));
            let next = next_options
                .as_ref()
                .map(|options| NextPage::start(&self.lister, options, self.prefetch));
            let page = page
                .decode_mapped(&mut f)
                .await
                .map_err(PagedListError::Lister)?;
            match &mut result {
                None => result = Some(page),
                Some(list) => list.items.extend(page.items),
            }
            let (Some(next), Some(options)) = (next, next_options) else {
                let mut list = result.unwrap_or_default();
                let paginated = list
                    .metadata
                    .continue_
                    .take()
                    .is_some_and(|c| !c.is_empty());
                list.metadata.remaining_item_count = None;
                return Ok(PagedList { list, paginated });
            };
            fetched = next.fetch(&self.lister, &options).await;
            page_options = options;
        }
    }

    /// The pages, one list per request (client-go's `EachListChunk`), as a stream that ends
    /// after the last page.
    ///
    /// There is no fallback here: pages already handed out cannot be taken back, so an
    /// expired continue token ends the stream with the `410 Expired` error
    /// (`is_resource_expired()`), and the caller starts over. A repeated continue token ends
    /// it with [`PagerError::RepeatedContinueToken`], before the repeated page is handed
    /// out.
    pub fn pages(
        &self,
        options: &ListOptions,
    ) -> BoxStream<'static, Result<ObjectList<K>, PagedListError<L::Error>>>
    where
        L: Clone + 'static,
    {
        let lister = self.lister.clone();
        let first = self.first_page_options(options);
        let tokens = ContinueTokens::starting_from(&first);
        stream::try_unfold((Some(first), tokens), move |(next, mut tokens)| {
            let lister = lister.clone();
            async move {
                let Some(options) = next else {
                    return Ok(None);
                };
                let page = lister
                    .list(&options)
                    .await
                    .map_err(PagedListError::Lister)?;
                tokens.record(page.continue_token())?;
                let following = page
                    .continue_token()
                    .map(|token| next_page_options(options, token.to_owned()));
                Ok(Some((page, (following, tokens))))
            }
        })
        .boxed()
    }

    /// Every object, page by page (client-go's `EachListItem`), with the same error rules as
    /// [`pages`](Self::pages).
    pub fn items(
        &self,
        options: &ListOptions,
    ) -> BoxStream<'static, Result<K, PagedListError<L::Error>>>
    where
        L: Clone + 'static,
    {
        self.pages(options)
            .map_ok(|page| stream::iter(page.items.into_iter().map(Ok)))
            .try_flatten()
            .boxed()
    }
}

/// The page after the one being decoded: already being fetched on a task of its own, or to
/// be fetched when it is needed.
enum NextPage<K, E> {
    /// The task's output is the page (a `Result<FetchedList<K, E>, E>`), boxed.
    Fetching(AbortOnDrop, PhantomData<fn() -> (K, E)>),
    Later,
}

impl<K: Send + 'static, E: Send + 'static> NextPage<K, E> {
    /// Starts fetching the page with `options` on a task, if there is a runtime to run it.
    fn start<L>(lister: &L, options: &ListOptions, prefetch: bool) -> Self
    where
        L: ListerWatcher<K, Error = E> + Clone + 'static,
    {
        let runtime = tokio::runtime::Handle::try_current();
        match runtime {
            Ok(runtime) if prefetch => {
                let (lister, options) = (lister.clone(), options.clone());
                let fetch: PrefetchTask = Box::pin(async move {
                    Box::new(lister.fetch_list(&options).await) as Box<dyn Any + Send>
                });
                NextPage::Fetching(AbortOnDrop(runtime.spawn(fetch)), PhantomData)
            }
            _ => NextPage::Later,
        }
    }

    /// The page: the prefetch's result, or a fetch now.
    async fn fetch<L>(self, lister: &L, options: &ListOptions) -> Result<FetchedList<K, E>, E>
    where
        L: ListerWatcher<K, Error = E>,
    {
        match self {
            NextPage::Later => lister.fetch_list(options).await,
            NextPage::Fetching(mut task, _) => match (&mut task.0).await {
                Ok(page) => match page.downcast::<Result<FetchedList<K, E>, E>>() {
                    Ok(page) => *page,
                    // Not reached: the task was made by `start` for this very type.
                    Err(_) => lister.fetch_list(options).await,
                },
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                // Cancelled by the runtime shutting down: fetch here, as without a runtime.
                Err(_) => lister.fetch_list(options).await,
            },
        }
    }
}

/// A page's prefetch as spawned: its future and its output are boxed, so that the runtime's
/// task code is compiled once, not once per kind a program lists.
type PrefetchTask = BoxFuture<'static, Box<dyn Any + Send>>;

/// A prefetch task aborted when its handle is dropped: a list abandoned (an error, a
/// cancelled reflector) does not leave its next page downloading.
struct AbortOnDrop(tokio::task::JoinHandle<Box<dyn Any + Send>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
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

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;

    use super::*;
    use crate::api_error::ApiError;
    use crate::fetched_list::ListPart;
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

        /// Everything, listed by a pager over a clone in pages of five, outside any runtime.
        fn list_in_fives(&self) -> ObjectList<usize> {
            block_on(
                ListPager::new(self.clone())
                    .page_size(5)
                    .list(&ListOptions::default()),
            )
            .unwrap()
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
        let all = lister.list_in_fives();
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

    /// A lister that answers every request with one item and the continue token `"again"`
    /// (or, with `cycle`, alternately `"a"` and `"b"`): a server paging in a loop. It counts
    /// the requests.
    #[derive(Clone, Default)]
    struct Looping {
        cycle: bool,
        requests: Arc<Mutex<usize>>,
    }

    impl ListerWatcher<usize> for Looping {
        type Error = ApiError;

        async fn list(&self, _: &ListOptions) -> Result<ObjectList<usize>, ApiError> {
            let n = {
                let mut requests = self.requests.lock().unwrap();
                *requests += 1;
                *requests
            };
            assert!(n < 100, "the pager follows the loop");
            let mut page = ObjectList::new(vec![n], "7");
            page.metadata.continue_ = Some(match (self.cycle, n % 2) {
                (false, _) => "again".into(),
                (true, 1) => "a".into(),
                (true, _) => "b".into(),
            });
            Ok(page)
        }

        async fn watch(&self, _: &ListOptions) -> Result<WatchStream<usize, ApiError>, ApiError> {
            Ok(futures::stream::empty().boxed())
        }
    }

    #[test]
    fn a_repeated_continue_token_fails_the_list_with_a_typed_error() {
        let expected = PagerError::RepeatedContinueToken {
            page: 2,
            first_seen: 1,
        };
        let lister = Looping::default();
        let err =
            block_on(ListPager::new(lister.clone()).list(&ListOptions::default())).unwrap_err();
        assert_eq!(err, PagedListError::Pager(expected.clone()));
        assert!(
            !err.is_resource_expired() && !err.is_internal_error(),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "the list makes no progress: page 2 returned the continue token of page 1; \
             the server pages in a loop, so the list was abandoned"
        );
        assert_eq!(*lister.requests.lock().unwrap(), 2, "stopped at once");

        // Also when the tokens go round a longer cycle, and page by page.
        let lister = Looping {
            cycle: true,
            ..Looping::default()
        };
        let err =
            block_on(ListPager::new(lister.clone()).list(&ListOptions::default())).unwrap_err();
        let cycled = PagerError::RepeatedContinueToken {
            page: 3,
            first_seen: 1,
        };
        assert_eq!(err, PagedListError::Pager(cycled));
        let results: Vec<_> = block_on(
            ListPager::new(Looping::default())
                .pages(&ListOptions::default())
                .collect::<Vec<_>>(),
        );
        assert_eq!(results.len(), 2, "one page, then the error, then the end");
        assert_eq!(results[0].as_ref().unwrap().items, [1]);
        assert_eq!(results[1], Err(PagedListError::Pager(expected)));

        // A caller's own starting token counts as given.
        let err = block_on(
            ListPager::new(Looping::default())
                .list(&ListOptions::default().continue_token("again")),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("page 1 returned the continue token the list started from"),
            "{err}"
        );
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

    /// Pages of `0..len` whose items decode only when asked: each page's decoder first
    /// waits (up to a generous bound, never forever) for the next page's fetch to have
    /// started, and records the order of fetches and decodes.
    #[derive(Clone)]
    struct SlowPages {
        len: usize,
        page: usize,
        log: Arc<Mutex<Vec<String>>>,
        fetch_started: tokio::sync::mpsc::UnboundedSender<usize>,
        started: Arc<tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<usize>>>,
        fail_decode_of: Option<usize>,
        dropped_fetches: Arc<std::sync::atomic::AtomicUsize>,
        fetch_dropped: Arc<tokio::sync::Notify>,
    }

    impl SlowPages {
        fn new(len: usize, page: usize) -> Self {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            Self {
                len,
                page,
                log: Arc::default(),
                fetch_started: tx,
                started: Arc::new(tokio::sync::Mutex::new(rx)),
                fail_decode_of: None,
                dropped_fetches: Arc::default(),
                fetch_dropped: Arc::default(),
            }
        }
    }

    /// Counts fetches dropped before they finished, and says so.
    struct CountDrop(
        Arc<std::sync::atomic::AtomicUsize>,
        Arc<tokio::sync::Notify>,
    );
    impl Drop for CountDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.1.notify_one();
        }
    }

    impl ListerWatcher<usize> for SlowPages {
        type Error = ApiError;

        async fn list(&self, options: &ListOptions) -> Result<ObjectList<usize>, ApiError> {
            self.fetch_list(options).await?.decode().await
        }

        #[allow(clippy::result_large_err)] // ApiError, as the clients return it
        async fn fetch_list(
            &self,
            options: &ListOptions,
        ) -> Result<FetchedList<usize, ApiError>, ApiError> {
            let start: usize = options
                .continue_token
                .as_deref()
                .map_or(0, |t| t.parse().unwrap());
            let index = start / self.page;
            self.log.lock().unwrap().push(format!("fetch {index}"));
            if index > 0 {
                let _ = self.fetch_started.send(index);
            }
            if self.fail_decode_of.is_some_and(|failing| failing < index) {
                // Pages after a failing one never arrive; the fetch must be abandoned.
                let _guard = CountDrop(self.dropped_fetches.clone(), self.fetch_dropped.clone());
                futures::future::pending::<()>().await;
            }
            let end = (start + self.page).min(self.len);
            let mut metadata = ListMeta {
                resource_version: Some("1".into()),
                ..ListMeta::default()
            };
            if end < self.len {
                metadata.continue_ = Some(end.to_string());
            }
            let this = self.clone();
            let has_next = end < self.len;
            let decode = async move {
                if has_next {
                    let mut started = this.started.lock().await;
                    let next =
                        tokio::time::timeout(std::time::Duration::from_secs(20), started.recv())
                            .await;
                    assert_eq!(
                        next,
                        Ok(Some(index + 1)),
                        "page {} fetched while {index} decodes",
                        index + 1
                    );
                }
                this.log.lock().unwrap().push(format!("decode {index}"));
                if this.fail_decode_of == Some(index) {
                    return Err(ApiError::bad_request("an undecodable page"));
                }
                Ok(ListPart::Items((start..end).collect()))
            };
            let end = ListPart::End(ObjectList {
                types: None,
                metadata: metadata.clone(),
                items: Vec::new(),
            });
            let parts = futures::stream::once(decode).chain(futures::stream::iter([Ok(end)]));
            Ok(FetchedList::streaming(metadata, parts.boxed()))
        }

        async fn watch(&self, _: &ListOptions) -> Result<WatchStream<usize, ApiError>, ApiError> {
            Ok(futures::stream::empty().boxed())
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_next_page_is_fetched_while_the_current_one_decodes() {
        let lister = SlowPages::new(10, 3);
        let all = ListPager::new(lister.clone())
            .page_size(3)
            .list(&ListOptions::default())
            .await
            .unwrap();
        assert_eq!(all.items, (0..10).collect::<Vec<_>>());
        assert_eq!(all.continue_token(), None);
        assert_eq!(
            *lister.log.lock().unwrap(),
            [
                "fetch 0", "fetch 1", "decode 0", "fetch 2", "decode 1", "fetch 3", "decode 2",
                "decode 3"
            ]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_page_that_fails_to_decode_abandons_the_fetch_of_the_next() {
        let lister = SlowPages {
            fail_decode_of: Some(1),
            ..SlowPages::new(20, 3)
        };
        let err = ListPager::new(lister.clone())
            .page_size(3)
            .list(&ListOptions::default())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            ApiError::bad_request("an undecodable page").to_string()
        );
        // The fetch of page 2 was started, then aborted (dropped) with the list. (The bound
        // only keeps a broken build from hanging; the drop wakes the test.)
        tokio::time::timeout(
            std::time::Duration::from_secs(30),
            lister.fetch_dropped.notified(),
        )
        .await
        .expect("the fetch of the page after the failing one is still running");
        assert_eq!(
            lister
                .dropped_fetches
                .load(std::sync::atomic::Ordering::SeqCst),
            1
        );
    }

    #[test]
    fn without_a_runtime_or_with_prefetch_off_pages_are_fetched_one_after_the_other() {
        let lister = Numbers::new(12);
        let all = lister.list_in_fives();
        assert_eq!(all.items.len(), 12);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let all = runtime
            .block_on(
                ListPager::new(lister.clone())
                    .page_size(5)
                    .prefetch(false)
                    .list(&ListOptions::default()),
            )
            .unwrap();
        assert_eq!(all.items.len(), 12);
        assert_eq!(lister.seen().len(), 6);
    }
}
