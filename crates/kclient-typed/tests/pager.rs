//! The pager (client-go's tools/pager) against kclient-fake: pages, the merged list, and the
//! full-list fallback when a continue token expires.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_core::{
    ApiStatus, ListOptions, ListPager, ListerWatcher, ObjectList, ResourceExt,
    ResourceVersionMatch, WatchStream, DEFAULT_PAGE_SIZE,
};
use kclient_fake::{FakeApiServer, Faults};
use kclient_typed::{Error, ResourceClient};
use serde_json::json;

use common::fake;

/// Seeds `n` ConfigMaps named `cm-000`, `cm-001` ... in `default`.
fn seed(server: &FakeApiServer, n: usize) {
    for i in 0..n {
        server
            .seed(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": format!("cm-{i:03}"), "namespace": "default" }
            }))
            .unwrap();
    }
}

fn names(list: &ObjectList<ConfigMap>) -> Vec<String> {
    list.iter().map(|c| c.name_any().to_owned()).collect()
}

/// A lister that counts its lists and compacts the server's history right after the first
/// one, so the continue token of the first page is expired by the time it is used.
#[derive(Clone)]
struct CompactAfterFirstPage {
    inner: ResourceClient<ConfigMap>,
    faults: Faults,
    lists: Arc<AtomicUsize>,
    seen: Arc<recorded::Seen>,
}

/// Records the options of every list (no external mutex crate needed).
mod recorded {
    use std::sync::Mutex;

    use kclient_core::ListOptions;

    #[derive(Default)]
    pub struct Seen(pub Mutex<Vec<ListOptions>>);
}

impl ListerWatcher<ConfigMap> for CompactAfterFirstPage {
    type Error = Error;

    async fn list(&self, options: &ListOptions) -> Result<ObjectList<ConfigMap>, Error> {
        self.seen.0.lock().unwrap().push(options.clone());
        let result = self.inner.list(options).await;
        if self.lists.fetch_add(1, Ordering::SeqCst) == 0 {
            self.faults.compact_history();
        }
        result
    }

    async fn watch(&self, options: &ListOptions) -> Result<WatchStream<ConfigMap, Error>, Error> {
        self.inner.watch(options).await
    }
}

fn compacting(server: &FakeApiServer, client: &ResourceClient<ConfigMap>) -> CompactAfterFirstPage {
    CompactAfterFirstPage {
        inner: client.clone(),
        faults: server.faults(),
        lists: Arc::new(AtomicUsize::new(0)),
        seen: Arc::default(),
    }
}

#[tokio::test]
async fn list_all_merges_the_pages_of_one_snapshot() {
    let (server, clientset) = fake().await;
    seed(&server, 25);
    let cms = clientset.namespaced::<ConfigMap>("default");

    let pages: Vec<ObjectList<ConfigMap>> = cms
        .pager()
        .page_size(10)
        .pages(&ListOptions::default())
        .try_collect()
        .await
        .unwrap();
    let sizes: Vec<usize> = pages.iter().map(|p| p.items.len()).collect();
    assert_eq!(sizes, [10, 10, 5]);
    assert!(pages[0].continue_token().is_some() && pages[2].continue_token().is_none());

    let all = ListPager::new(cms.clone())
        .page_size(10)
        .list(&ListOptions::default())
        .await
        .unwrap();
    assert_eq!(all.items.len(), 25);
    assert_eq!(
        names(&all),
        (0..25).map(|i| format!("cm-{i:03}")).collect::<Vec<_>>()
    );
    assert_eq!(all.continue_token(), None);
    assert_eq!(all.resource_version(), pages[0].resource_version());

    // The default page size holds everything here in one request.
    let default = cms.list_all(&ListOptions::default()).await.unwrap();
    assert_eq!(names(&default), names(&all));
    assert_eq!(DEFAULT_PAGE_SIZE, 500);

    // items() flattens the pages.
    let items: Vec<ConfigMap> = cms
        .pager()
        .page_size(7)
        .items(&ListOptions::default())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(items.len(), 25);
}

#[tokio::test]
async fn pages_continue_without_the_resource_version() {
    let (server, clientset) = fake().await;
    seed(&server, 5);
    let cms = clientset.namespaced::<ConfigMap>("default");
    let lister = CompactAfterFirstPage {
        lists: Arc::new(AtomicUsize::new(1)), // never compacts
        ..compacting(&server, &cms)
    };
    let first = cms.list(&ListOptions::default()).await.unwrap();
    let options = ListOptions::default()
        .resource_version(first.resource_version().unwrap())
        .resource_version_match(ResourceVersionMatch::NotOlderThan)
        .labels("!absent");
    let all = ListPager::new(lister.clone())
        .page_size(2)
        .list(&options)
        .await
        .unwrap();
    assert_eq!(all.items.len(), 5);
    let seen = lister.seen.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].resource_version, options.resource_version);
    assert_eq!(seen[0].limit, Some(2));
    for later in &seen[1..] {
        assert!(later.continue_token.is_some());
        assert_eq!(later.resource_version, None);
        assert_eq!(later.resource_version_match, None);
        assert_eq!(later.label_selector.as_deref(), Some("!absent"));
        assert_eq!(later.limit, Some(2));
    }
}

#[tokio::test]
async fn an_expired_continue_token_falls_back_to_one_full_list() {
    let (server, clientset) = fake().await;
    seed(&server, 12);
    let cms = clientset.namespaced::<ConfigMap>("default");
    let lister = compacting(&server, &cms);

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
    let seen = lister.seen.0.lock().unwrap().clone();
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
    let (server, clientset) = fake().await;
    seed(&server, 12);
    let cms = clientset.namespaced::<ConfigMap>("default");
    let err = ListPager::new(compacting(&server, &cms))
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
    let (server, clientset) = fake().await;
    seed(&server, 12);
    let cms = clientset.namespaced::<ConfigMap>("default");
    let mut pages = ListPager::new(compacting(&server, &cms))
        .page_size(5)
        .pages(&ListOptions::default());
    let first = pages.try_next().await.unwrap().unwrap();
    assert_eq!(first.items.len(), 5);
    let err = pages.try_next().await.unwrap_err();
    assert!(err.is_resource_expired(), "{err}");
}

#[tokio::test]
async fn an_expired_first_page_is_not_retried() {
    let (server, clientset) = fake().await;
    seed(&server, 3);
    let cms = clientset.namespaced::<ConfigMap>("default");
    let old = cms.list(&ListOptions::default()).await.unwrap();
    seed_more(&server);
    server.faults().compact_history();
    let lister = CompactAfterFirstPage {
        lists: Arc::new(AtomicUsize::new(1)),
        ..compacting(&server, &cms)
    };
    let exact = ListOptions::default()
        .resource_version(old.resource_version().unwrap())
        .resource_version_match(ResourceVersionMatch::Exact);
    let err = ListPager::new(lister.clone())
        .list(&exact)
        .await
        .unwrap_err();
    assert!(err.is_resource_expired(), "{err}");
    assert_eq!(
        lister.seen.0.lock().unwrap().len(),
        1,
        "no fallback for the first page"
    );
}

fn seed_more(server: &FakeApiServer) {
    server
        .seed(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": "later", "namespace": "default" }
        }))
        .unwrap();
}
