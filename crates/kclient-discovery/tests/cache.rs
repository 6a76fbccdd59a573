//! The memory and disk caches against kclient-fake: what is fetched when, fresh and stale
//! semantics, invalidation, kubectl's file layout, TTL by file age and by an injected clock,
//! corrupt files, and concurrent writers.

use crate::support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroupList, APIResourceList};
use kclient_core::{ApiStatus, GroupVersion};
use kclient_discovery::disk::{SERVER_GROUPS_FILE, SERVER_RESOURCES_FILE};
use kclient_discovery::{
    kubectl_discovery_cache_dir, DeferredRestMapper, Discovery, DiscoveryClient,
    DiskCachedDiscoveryClient, Error, MemCacheClient, KUBECTL_DISCOVERY_TTL,
};
use kclient_fake::Failure;
use serde_json::Value;
use support::*;

fn disk_client(url: &str, dir: &Path) -> DiskCachedDiscoveryClient {
    DiskCachedDiscoveryClient::for_config(&config(url), dir, KUBECTL_DISCOVERY_TTL).unwrap()
}

/// A disk cache in the per-server directory `dir` with its own `ttl`, over a fresh memory
/// cache and discovery client of `url`.
fn disk_client_in(
    url: &str,
    dir: &Path,
    ttl: Duration,
) -> DiskCachedDiscoveryClient<MemCacheClient<DiscoveryClient>> {
    DiskCachedDiscoveryClient::new(
        MemCacheClient::new(DiscoveryClient::new(rest(url))),
        dir,
        ttl,
    )
}

/// Sets the modification time of every file under `dir`.
fn age_files(dir: &Path, age: Duration) {
    let when = SystemTime::now() - age;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            age_files(&path, age);
        } else {
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(when).unwrap();
        }
    }
}

fn has_crontabs(r: &kclient_discovery::ServerResources) -> bool {
    r.resources_for(&GroupVersion::new("stable.example.com", "v1"))
        .is_some()
}

#[tokio::test]
async fn the_memory_cache_fetches_once_until_invalidated() {
    let server = fake().await;
    let proxy = Proxy::start(&server.url()).await;
    let cache = MemCacheClient::new(DiscoveryClient::new(rest(&proxy.url())));
    assert!(!cache.fresh(), "nothing cached yet");
    let first = cache.server_groups_and_resources().await.unwrap();
    assert!(cache.fresh());
    assert_eq!(proxy.paths(), ["/api", "/apis"]);
    proxy.clear();

    let again = cache.server_groups_and_resources().await.unwrap();
    cache.server_groups().await.unwrap();
    let apps = cache
        .server_resources_for_group_version(&GroupVersion::new("apps", "v1"))
        .await
        .unwrap();
    assert_eq!(apps.group_version, "apps/v1");
    assert_eq!(first.resources.len(), again.resources.len());
    assert!(
        proxy.seen().is_empty(),
        "answered from memory: {:?}",
        proxy.paths()
    );

    create_crontab_crd(&server.url()).await;
    assert!(!has_crontabs(
        &cache.server_groups_and_resources().await.unwrap()
    ));
    cache.invalidate();
    assert!(!cache.fresh());
    assert!(has_crontabs(
        &cache.server_groups_and_resources().await.unwrap()
    ));
    assert_eq!(proxy.paths(), ["/api", "/apis"]);

    let err = cache
        .server_resources_for_group_version(&GroupVersion::new("nope.example.com", "v1"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotServed { .. }));
    assert!(err.is_not_found());
}

#[tokio::test]
async fn concurrent_first_calls_share_one_fetch() {
    let server = fake().await;
    let proxy = Proxy::start(&server.url()).await;
    let cache = Arc::new(MemCacheClient::new(DiscoveryClient::new(rest(
        &proxy.url(),
    ))));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let cache = cache.clone();
            tokio::spawn(async move { cache.server_groups_and_resources().await })
        })
        .collect();
    for t in tasks {
        assert!(t.await.unwrap().unwrap().is_complete());
    }
    assert_eq!(proxy.paths(), ["/api", "/apis"]);
}

#[tokio::test]
async fn the_memory_cache_retries_transient_failures_and_keeps_the_others() {
    let server = fake().await;
    let proxy = Proxy::start(&server.url()).await;
    proxy.legacy_only(true);
    proxy.fail("/apis/apps/v1", 503, Some(1));
    proxy.fail("/apis/batch/v1", 403, None);
    let cache = MemCacheClient::new(DiscoveryClient::new(rest(&proxy.url())));

    let first = cache.groups_and_maybe_resources().await.unwrap();
    let apps = GroupVersion::new("apps", "v1");
    let batch = GroupVersion::new("batch", "v1");
    // The 503 was retried on the way out (it is transient); the 403 stays.
    assert!(first.resources.as_ref().unwrap().contains_key(&apps));
    assert!(
        first.failed.get(&batch).is_some_and(|e| e.is_forbidden()),
        "{:?} {:?}",
        first.failed,
        proxy.paths()
    );
    assert_eq!(proxy.count("/apis/apps/v1"), 2);

    proxy.clear();
    let err = cache
        .server_resources_for_group_version(&batch)
        .await
        .unwrap_err();
    assert!(err.is_forbidden(), "{err}");
    assert!(matches!(err, Error::Shared(_)));
    assert_eq!(proxy.count("/apis/batch/v1"), 0, "not transient: cached");

    let all = cache.server_groups_and_resources().await.unwrap();
    assert_eq!(all.failed.keys().collect::<Vec<_>>(), [&batch]);
}

#[tokio::test]
async fn the_disk_cache_writes_kubectls_layout() {
    let server = fake().await;
    let root = tempfile::tempdir().unwrap();
    let d = disk_client(&server.url(), root.path());
    let port = server.address().port();
    let dir = root
        .path()
        .join("discovery")
        .join(format!("127.0.0.1_{port}"));
    assert_eq!(d.directory(), dir);
    assert_eq!(kubectl_discovery_cache_dir(root.path(), &server.url()), dir);

    let all = d.server_groups_and_resources().await.unwrap();
    assert!(all.is_complete());
    let groups: Value =
        serde_json::from_slice(&std::fs::read(dir.join(SERVER_GROUPS_FILE)).unwrap()).unwrap();
    assert_eq!(groups["kind"], "APIGroupList");
    assert_eq!(groups["apiVersion"], "v1");
    assert_eq!(groups["groups"][0]["name"], "");
    assert_eq!(groups["groups"][0]["versions"][0]["groupVersion"], "v1");
    let core: Value =
        serde_json::from_slice(&std::fs::read(dir.join("v1").join(SERVER_RESOURCES_FILE)).unwrap())
            .unwrap();
    assert_eq!(core["kind"], "APIResourceList");
    assert_eq!(core["groupVersion"], "v1");
    assert!(core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "pods"));
    for gv in &all.resources {
        let path = d.resources_file(&GroupVersion::parse(&gv.group_version).unwrap());
        let list: APIResourceList = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(&list, gv, "{}", path.display());
    }
    assert!(dir.join("apps/v1/serverresources.json").is_file());
    assert!(d.fresh(), "every file read was written by this client");
}

#[tokio::test]
async fn a_second_process_reads_the_cache_without_asking_the_server() {
    let server = fake().await;
    let root = tempfile::tempdir().unwrap();
    let first = disk_client(&server.url(), root.path());
    let expected = first.server_groups_and_resources().await.unwrap();

    server.faults().fail_next(1000, Failure::status(503));
    let second = disk_client(&server.url(), root.path());
    let cached = second.server_groups_and_resources().await.unwrap();
    assert_eq!(
        server.faults().pending_failures(),
        1000,
        "no request reached the server"
    );
    assert_eq!(cached.resources, expected.resources);
    assert_eq!(cached.groups, expected.groups);
    assert!(!second.fresh(), "it read files another client wrote");
    server.faults().clear_failures();
}

#[tokio::test]
async fn a_stale_disk_cache_is_refetched() {
    let server = fake().await;
    let root = tempfile::tempdir().unwrap();
    let first = disk_client(&server.url(), root.path());
    first.server_groups_and_resources().await.unwrap();
    create_crontab_crd(&server.url()).await;

    // Younger than the TTL: still served from disk, so the CRD is not seen.
    age_files(first.directory(), Duration::from_secs(5 * 3600));
    let young = disk_client(&server.url(), root.path());
    assert!(!has_crontabs(
        &young.server_groups_and_resources().await.unwrap()
    ));

    // Older than the TTL: fetched again, and rewritten.
    age_files(first.directory(), Duration::from_secs(7 * 3600));
    let old = disk_client(&server.url(), root.path());
    assert!(has_crontabs(
        &old.server_groups_and_resources().await.unwrap()
    ));
    assert!(old.fresh());
    let groups: APIGroupList =
        serde_json::from_slice(&std::fs::read(first.directory().join(SERVER_GROUPS_FILE)).unwrap())
            .unwrap();
    assert!(groups.groups.iter().any(|g| g.name == "stable.example.com"));
    let modified = std::fs::metadata(first.directory().join(SERVER_GROUPS_FILE))
        .unwrap()
        .modified()
        .unwrap();
    assert!(SystemTime::now().duration_since(modified).unwrap() < Duration::from_secs(3600));
}

#[tokio::test]
async fn the_ttl_follows_an_injected_clock() {
    let server = fake().await;
    let root = tempfile::tempdir().unwrap();
    disk_client(&server.url(), root.path())
        .server_groups_and_resources()
        .await
        .unwrap();
    create_crontab_crd(&server.url()).await;
    let dir = kubectl_discovery_cache_dir(root.path(), &server.url());
    let now = SystemTime::now();
    let in_an_hour = disk_client_in(&server.url(), &dir, KUBECTL_DISCOVERY_TTL)
        .with_clock(move || now + Duration::from_secs(3600));
    assert!(!has_crontabs(
        &in_an_hour.server_groups_and_resources().await.unwrap()
    ));
    let in_a_day = disk_client_in(&server.url(), &dir, KUBECTL_DISCOVERY_TTL)
        .with_clock(move || now + Duration::from_secs(24 * 3600));
    assert!(has_crontabs(
        &in_a_day.server_groups_and_resources().await.unwrap()
    ));
}

/// Issue 19, item 2 (the audit of every time + duration): a TTL of `Duration::MAX` means
/// "never expire"; adding it to a file's time overflowed and panicked the read.
#[tokio::test]
async fn a_ttl_of_duration_max_never_expires_and_does_not_panic() {
    let server = fake().await;
    let root = tempfile::tempdir().unwrap();
    disk_client(&server.url(), root.path())
        .server_groups_and_resources()
        .await
        .unwrap();
    create_crontab_crd(&server.url()).await;
    let dir = kubectl_discovery_cache_dir(root.path(), &server.url());
    age_files(&dir, Duration::from_secs(10 * 365 * 24 * 3600));
    let forever = disk_client_in(&server.url(), &dir, Duration::MAX);
    assert!(
        !has_crontabs(&forever.server_groups_and_resources().await.unwrap()),
        "a ten-year-old file is still used"
    );
    assert!(!forever.fresh());
}

#[tokio::test]
async fn invalidation_ignores_files_other_processes_wrote() {
    let server = fake().await;
    let root = tempfile::tempdir().unwrap();
    disk_client(&server.url(), root.path())
        .server_groups_and_resources()
        .await
        .unwrap();
    create_crontab_crd(&server.url()).await;
    let d = disk_client(&server.url(), root.path());
    assert!(!has_crontabs(
        &d.server_groups_and_resources().await.unwrap()
    ));
    assert!(!d.fresh());
    d.invalidate();
    assert!(d.fresh());
    assert!(has_crontabs(
        &d.server_groups_and_resources().await.unwrap()
    ));
    assert!(
        d.fresh(),
        "everything read since was written by this client"
    );
}

#[tokio::test]
async fn a_deferred_mapper_over_a_stale_disk_cache_finds_new_resources() {
    let server = fake().await;
    let root = tempfile::tempdir().unwrap();
    disk_client(&server.url(), root.path())
        .server_groups_and_resources()
        .await
        .unwrap();
    create_crontab_crd(&server.url()).await;
    // A new process: the cache files are younger than the TTL but miss the CRD.
    let mapper = DeferredRestMapper::new(disk_client(&server.url(), root.path()));
    let ct = mapper.find("ct").await.unwrap();
    assert_eq!(ct.resource.resource, "crontabs");
    assert!(mapper.discovery().fresh());
}

#[tokio::test]
async fn files_written_by_kubectl_are_read() {
    let server = fake().await;
    let root = tempfile::tempdir().unwrap();
    let dir = kubectl_discovery_cache_dir(root.path(), &server.url());
    std::fs::create_dir_all(dir.join("v1")).unwrap();
    std::fs::create_dir_all(dir.join("example.com/v1")).unwrap();
    // As client-go's LegacyCodec writes them: no kind on nested groups, no apiVersion on core
    // resources, fields in Go's order.
    std::fs::write(
        dir.join(SERVER_GROUPS_FILE),
        r#"{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"","versions":[{"groupVersion":"v1","version":"v1"}],"preferredVersion":{"groupVersion":"v1","version":"v1"}},{"name":"example.com","versions":[{"groupVersion":"example.com/v1","version":"v1"}],"preferredVersion":{"groupVersion":"example.com/v1","version":"v1"}}]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("v1").join(SERVER_RESOURCES_FILE),
        r#"{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"v1","resources":[{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get","list"],"shortNames":["po"],"categories":["all"],"storageVersionHash":"xPOwRZ+Yhw8="},{"name":"pods/status","singularName":"","namespaced":true,"kind":"Pod","verbs":["get"]}]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("example.com/v1").join(SERVER_RESOURCES_FILE),
        r#"{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"example.com/v1","resources":[{"name":"widgets","singularName":"widget","namespaced":false,"kind":"Widget","verbs":["get"],"shortNames":["wd"]}]}"#,
    )
    .unwrap();
    server.faults().fail_next(1000, Failure::status(503));
    let d = disk_client(&server.url(), root.path());
    let mapper = kclient_discovery::RestMapper::from_discovery(&d)
        .await
        .unwrap();
    assert_eq!(server.faults().pending_failures(), 1000);
    assert_eq!(mapper.find("wd").unwrap().resource.group, "example.com");
    assert_eq!(mapper.find("po").unwrap().subresources, ["status"]);
    server.faults().clear_failures();
}

#[tokio::test]
async fn corrupt_or_partial_files_are_refetched_and_replaced() {
    let server = fake().await;
    let root = tempfile::tempdir().unwrap();
    let d = disk_client(&server.url(), root.path());
    d.server_groups_and_resources().await.unwrap();
    let file = d.resources_file(&GroupVersion::new("apps", "v1"));
    std::fs::write(&file, br#"{"kind":"APIResourceList","groupVers"#).unwrap();
    std::fs::write(d.groups_file(), b"\xff\xfe garbage").unwrap();

    let again = disk_client(&server.url(), root.path());
    let all = again.server_groups_and_resources().await.unwrap();
    assert!(all.is_complete());
    let list: APIResourceList = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(list.group_version, "apps/v1");
    let _: APIGroupList =
        serde_json::from_slice(&std::fs::read(again.groups_file()).unwrap()).unwrap();
}

#[tokio::test]
async fn concurrent_writers_never_leave_partial_files() {
    let server = fake().await;
    let root = Arc::new(tempfile::tempdir().unwrap());
    let url = server.url();
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let root = root.clone();
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let d = disk_client(&url, root.path());
            for _ in 0..5 {
                d.invalidate();
                d.server_groups_and_resources().await.unwrap();
                // Every file on disk decodes, whoever wrote it last.
                let groups: APIGroupList =
                    serde_json::from_slice(&std::fs::read(d.groups_file()).unwrap()).unwrap();
                assert!(!groups.groups.is_empty());
                let apps: APIResourceList = serde_json::from_slice(
                    &std::fs::read(d.resources_file(&GroupVersion::new("apps", "v1"))).unwrap(),
                )
                .unwrap();
                assert_eq!(apps.group_version, "apps/v1");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let dir = kubectl_discovery_cache_dir(root.path(), &url);
    let leftovers: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(SERVER_GROUPS_FILE) && n != SERVER_GROUPS_FILE)
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}
