//! Paged lists on a [`ResourceClient`]: [`pager`](ResourceClient::pager),
//! [`list_all`](ResourceClient::list_all) and [`list_pages`](ResourceClient::list_pages),
//! over kclient-core's [`ListPager`] (client-go's `tools/pager`).

use futures::stream::{BoxStream, StreamExt as _, TryStreamExt as _};
use kclient_core::{ListOptions, ListPager, ObjectList, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::client::ResourceClient;
use crate::error::Error;

impl<K> ResourceClient<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    /// A [`ListPager`] over this client, with client-go's defaults.
    ///
    /// ```no_run
    /// use futures::TryStreamExt;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kclient_core::{ListOptions, ListPager};
    /// use kclient_typed::ResourceClient;
    ///
    /// # async fn run(pods: ResourceClient<Pod>) -> Result<(), kclient_typed::Error> {
    /// // Everything, 100 at a time, falling back to a full list if the snapshot expires.
    /// let all = ListPager::new(pods.clone()).page_size(100).list(&ListOptions::default()).await?;
    /// // Or page by page, without holding more than one page.
    /// let mut pages = pods.list_pages(&ListOptions::default());
    /// while let Some(page) = pages.try_next().await? {
    ///     println!("{} pods", page.items.len());
    /// }
    /// # let _ = (all, pods.pager()); Ok(()) }
    /// ```
    pub fn pager(&self) -> ListPager<K, ResourceClient<K>> {
        ListPager::new(self.clone())
    }

    /// Lists every object in pages of [`DEFAULT_PAGE_SIZE`](kclient_core::DEFAULT_PAGE_SIZE) (or
    /// `options.limit`), falling back to one full list if the continue token expires:
    /// [`ListPager::list`].
    pub async fn list_all(&self, options: &ListOptions) -> Result<ObjectList<K>, Error> {
        Ok(self.pager().list(options).await?)
    }

    /// The pages of a paged list, as a stream: [`ListPager::pages`].
    pub fn list_pages(
        &self,
        options: &ListOptions,
    ) -> BoxStream<'static, Result<ObjectList<K>, Error>> {
        self.pager().pages(options).map_err(Error::from).boxed()
    }
}
