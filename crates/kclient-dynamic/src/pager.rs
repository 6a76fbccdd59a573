//! Paged lists on a [`DynamicResource`]: [`pager`](DynamicResource::pager),
//! [`list_all`](DynamicResource::list_all) and [`list_pages`](DynamicResource::list_pages),
//! over kclient-core's [`ListPager`] (client-go's `tools/pager`).

use futures::stream::{BoxStream, StreamExt as _, TryStreamExt as _};
use kclient_core::{ListOptions, ListPager, ObjectList};

use crate::error::Error;
use crate::resource::DynamicResource;
use crate::view::ObjectView;

impl<T: ObjectView> DynamicResource<T> {
    /// A [`ListPager`] over this resource, with client-go's defaults (pages of
    /// [`DEFAULT_PAGE_SIZE`](kclient_core::DEFAULT_PAGE_SIZE), a full list when a continue
    /// token expires). Its failures are kclient-core's
    /// [`PagedListError`](kclient_core::PagedListError), which converts into [`Error`].
    ///
    /// ```no_run
    /// use futures::TryStreamExt;
    /// use kclient_core::{GroupVersionResource, ListOptions};
    /// use kclient_dynamic::DynamicClient;
    ///
    /// # async fn run(client: DynamicClient) -> Result<(), kclient_dynamic::Error> {
    /// let crontabs = client
    ///     .resource(&GroupVersionResource::new("stable.example.com", "v1", "crontabs"))
    ///     .namespace("default");
    /// // Everything, 100 at a time, falling back to a full list if the snapshot expires.
    /// let all = crontabs.pager().page_size(100).list(&ListOptions::default()).await?;
    /// // Or page by page, without holding more than one page.
    /// let mut pages = crontabs.list_pages(&ListOptions::default());
    /// while let Some(page) = pages.try_next().await? {
    ///     println!("{} crontabs", page.items.len());
    /// }
    /// # let _ = all; Ok(()) }
    /// ```
    pub fn pager(&self) -> ListPager<T, Self> {
        ListPager::new(self.clone())
    }

    /// Lists every object in pages of [`DEFAULT_PAGE_SIZE`](kclient_core::DEFAULT_PAGE_SIZE)
    /// (or `options.limit`), falling back to one full list if the continue token expires:
    /// [`ListPager::list`]. Items get their type as in [`list`](Self::list).
    pub async fn list_all(&self, options: &ListOptions) -> Result<ObjectList<T>, Error> {
        Ok(self.pager().list(options).await?)
    }

    /// The pages of a paged list, as a stream: [`ListPager::pages`].
    pub fn list_pages(
        &self,
        options: &ListOptions,
    ) -> BoxStream<'static, Result<ObjectList<T>, Error>> {
        self.pager().pages(options).map_err(Error::from).boxed()
    }
}
