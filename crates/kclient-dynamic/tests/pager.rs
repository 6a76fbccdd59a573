//! Paged lists of a dynamic resource (kclient-core's pager, client-go's tools/pager) against
//! kclient-fake: `pager()`, `list_all()`, `list_pages()`, and the full-list fallback when a
//! continue token expires.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::TryStreamExt;
use kclient_core::{
    ApiStatus, DynamicObject, GroupVersionResource, ListOptions, ListPager, ListerWatcher,
    ObjectList, ResourceExt, TypeMeta, WatchStream, DEFAULT_PAGE_SIZE,
};
use kclient_dynamic::{DynamicResource, Error};
use kclient_fake::{FakeApiServer, Faults};
use serde_json::json;

use common::setup;

/// Seeds `n` ConfigMaps named `cm-000`, `cm-001` ... in `default`, and returns the dynamic
/// resource for ConfigMaps there.
async fn config_maps(n: usize) -> (FakeApiServer, DynamicResource) {
    let (server, client) = setup().await;
    for i in 0..n {
        server
            .seed(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": format!("cm-{i:03}"), "namespace": "default" }
            }))
            .unwrap();
    }
    let cms = client
        .resource(GroupVersionResource::new("", "v1", "configmaps"))
        .namespace("default");
    (server, cms)
}

fn names(list: &ObjectList<DynamicObject>) -> Vec<String> {
    list.iter().map(|c| c.name_any().to_owned()).collect()
}

/// A lister that records the options of its lists and compacts the server's history right
/// after the first one, so the continue token of the first page is expired by the time it is
/// used.
#[derive(Clone)]
struct CompactAfterFirstPage {
    inner: DynamicResource,
    faults: Faults,
    lists: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<ListOptions>>>,
}

impl CompactAfterFirstPage {
    fn new(server: &FakeApiServer, inner: &DynamicResource) -> Self {
        Self {
            inner: inner.clone(),
            faults: server.faults(),
            lists: Arc::new(AtomicUsize::new(0)),
            seen: Arc::default(),
        }
    }

    fn seen(&self) -> Vec<ListOptions> {
        self.seen.lock().unwrap().clone()
    }
}

impl ListerWatcher<DynamicObject> for CompactAfterFirstPage {
    type Error = Error;

    async fn list(&self, options: &ListOptions) -> Result<ObjectList<DynamicObject>, Error> {
        self.seen.lock().unwrap().push(options.clone());
        let result = self.inner.list(options).await;
        if self.lists.fetch_add(1, Ordering::SeqCst) == 0 {
            self.faults.compact_history();
        }
        result
    }

    async fn watch(
        &self,
        options: &ListOptions,
    ) -> Result<WatchStream<DynamicObject, Error>, Error> {
        self.inner.watch(options).await
    }
}

#[tokio::test]
async fn list_all_and_list_pages_page_one_snapshot() {
    let (_server, cms) = config_maps(25).await;

    let pages: Vec<ObjectList<DynamicObject>> = cms
        .pager()
        .page_size(10)
        .pages(&ListOptions::default())
        .try_collect()
        .await
        .unwrap();
    let sizes: Vec<usize> = pages.iter().map(|p| p.items.len()).collect();
    assert_eq!(sizes, [10, 10, 5]);
    assert!(pages[0].continue_token().is_some() && pages[2].continue_token().is_none());

    let by_limit: Vec<usize> = cms
        .list_pages(&ListOptions::default().limit(10))
        .map_ok(|page| page.items.len())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(by_limit, sizes, "an explicit limit is the page size");

    let all = cms
        .list_all(&ListOptions::default().limit(10))
        .await
        .unwrap();
    assert_eq!(
        names(&all),
        (0..25).map(|i| format!("cm-{i:03}")).collect::<Vec<_>>()
    );
    assert_eq!(all.continue_token(), None);
    assert_eq!(all.resource_version(), pages[0].resource_version());
    assert!(
        all.iter()
            .all(|o| o.types == Some(TypeMeta::new("v1", "ConfigMap"))),
        "items get their type from the list, page by page"
    );

    // The default page size holds everything here in one request.
    assert_eq!(DEFAULT_PAGE_SIZE, 500);
    let default = cms.list_all(&ListOptions::default()).await.unwrap();
    assert_eq!(names(&default), names(&all));
    let one_page: Vec<ObjectList<DynamicObject>> = cms
        .list_pages(&ListOptions::default())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(one_page.len(), 1);

    // items() flattens the pages.
    let items: Vec<DynamicObject> = cms
        .pager()
        .page_size(7)
        .items(&ListOptions::default())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(items.len(), 25);
}

#[tokio::test]
async fn an_expired_continue_token_falls_back_to_one_full_list() {
    let (server, cms) = config_maps(12).await;
    let lister = CompactAfterFirstPage::new(&server, &cms);

    let all = ListPager::new(lister.clone())
        .page_size(5)
        .list(&ListOptions::default())
        .await
        .unwrap();
    assert_eq!(
        all.items.len(),
        12,
        "the full list, not the first page plus nothing"
    );
    assert!(all
        .iter()
        .all(|o| o.types == Some(TypeMeta::new("v1", "ConfigMap"))));
    let seen = lister.seen();
    assert_eq!(
        seen.len(),
        3,
        "first page, expired second page, full list: {seen:?}"
    );
    assert!(seen[1].continue_token.is_some());
    assert_eq!(seen[2].limit, None, "the fallback is unpaged");
    assert_eq!(seen[2].continue_token, None);
}

#[tokio::test]
async fn without_the_fallback_the_410_is_returned() {
    let (server, cms) = config_maps(12).await;
    let err = ListPager::new(CompactAfterFirstPage::new(&server, &cms))
        .page_size(5)
        .full_list_if_expired(false)
        .list(&ListOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_resource_expired(), "{err}");
    assert_eq!(err.status_code(), Some(410));
}

#[tokio::test]
async fn the_page_stream_ends_with_the_410() {
    let (server, cms) = config_maps(12).await;
    let mut pages = cms.list_pages(&ListOptions::default().limit(5));
    let first = pages.try_next().await.unwrap().unwrap();
    assert_eq!(first.items.len(), 5);
    server.faults().compact_history();
    let err = pages.try_next().await.unwrap_err();
    assert!(err.is_resource_expired(), "{err}");
}
