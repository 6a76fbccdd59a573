//! [`ListPager`]: paged lists (client-go's `tools/pager`).
//!
//! A large list is fetched in pages of [`DEFAULT_PAGE_SIZE`] objects, each request carrying
//! the previous page's continue token, so neither the server nor the client holds the whole
//! list in one response. All pages come from one consistent snapshot. If the snapshot expires
//! before the last page (the server answers `410 Expired` to a continue token, typically after
//! an etcd compaction), [`ListPager::list`] falls back to one full, unpaged list, as client-go's
//! `FullListIfExpired` does.

use std::fmt;
use std::marker::PhantomData;

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use kclient_core::{ApiStatus, ListOptions, ListerWatcher, ObjectList, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::client::ResourceClient;
use crate::error::Error;

/// The default page size (client-go's `tools/pager` `defaultPageSize`).
pub const DEFAULT_PAGE_SIZE: i64 = 500;

/// Lists a resource page by page (client-go's `pager.ListPager`), over any
/// [`ListerWatcher`]: a [`ResourceClient`], a [`FilteredListWatch`](crate::FilteredListWatch),
/// or a reflector's own lister.
///
/// ```no_run
/// use futures::TryStreamExt;
/// use k8s_openapi::api::core::v1::Pod;
/// use kclient_core::ListOptions;
/// use kclient_typed::{ListPager, ResourceClient};
///
/// # async fn run(pods: ResourceClient<Pod>) -> Result<(), kclient_typed::Error> {
/// // Everything, 100 at a time, falling back to a full list if the snapshot expires.
/// let all = ListPager::new(pods.clone()).page_size(100).list(&ListOptions::default()).await?;
/// // Or page by page, without holding more than one page.
/// let mut pages = pods.list_pages(&ListOptions::default());
/// while let Some(page) = pages.try_next().await? {
///     println!("{} pods", page.items.len());
/// }
/// # let _ = all; Ok(()) }
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
        let mut page_options = self.first_page_options(options);
        let mut result: Option<ObjectList<K>> = None;
        loop {
            let page = match self.lister.list(&page_options).await {
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
                    // The snapshot expired while we were paging: fall back to a full list at
                    // the requested resourceVersion.
                    let mut full = options.clone();
                    full.limit = None;
                    full.continue_token = None;
                    return self.lister.list(&full).await;
                }
            };
            let next = page.continue_token().map(str::to_owned);
            match &mut result {
                None => result = Some(page),
                Some(list) => list.items.extend(page.items),
            }
            let Some(token) = next else {
                let mut list = result.unwrap_or_default();
                list.metadata.continue_ = None;
                list.metadata.remaining_item_count = None;
                return Ok(list);
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

/// The options of the page after one that returned `token`: the token pins the snapshot, so
/// the resourceVersion (and its match rule) may not be sent with it.
fn next_page_options(mut options: ListOptions, token: String) -> ListOptions {
    options.continue_token = Some(token);
    options.resource_version = None;
    options.resource_version_match = None;
    options
}

impl<K> ResourceClient<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    /// A [`ListPager`] over this client, with client-go's defaults.
    pub fn pager(&self) -> ListPager<K, ResourceClient<K>> {
        ListPager::new(self.clone())
    }

    /// Lists every object in pages of [`DEFAULT_PAGE_SIZE`] (or `options.limit`), falling
    /// back to one full list if the continue token expires: [`ListPager::list`].
    pub async fn list_all(&self, options: &ListOptions) -> Result<ObjectList<K>, Error> {
        self.pager().list(options).await
    }

    /// The pages of a paged list, as a stream: [`ListPager::pages`].
    pub fn list_pages(
        &self,
        options: &ListOptions,
    ) -> BoxStream<'static, Result<ObjectList<K>, Error>> {
        self.pager().pages(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use k8s_openapi::api::core::v1::Pod;
    use kclient_rest::{Config, RestClient};

    #[test]
    fn defaults_are_client_gos() {
        assert_eq!(DEFAULT_PAGE_SIZE, 500);
        let rest = RestClient::new(Config::new("http://127.0.0.1:1")).unwrap();
        let pager = ResourceClient::<Pod>::namespaced(rest, "default").pager();
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
            .resource_version_match(kclient_core::ResourceVersionMatch::NotOlderThan)
            .labels("a=b");
        let next = next_page_options(first, "token".into());
        assert_eq!(next.continue_token.as_deref(), Some("token"));
        assert_eq!(next.resource_version, None);
        assert_eq!(next.resource_version_match, None);
        assert_eq!(next.label_selector.as_deref(), Some("a=b"));
        next.validate(false).unwrap();
    }
}
