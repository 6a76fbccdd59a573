//! Issue 29 against a server that misbehaves on purpose (`misbehaving_server`), through the
//! typed and dynamic clients over HTTP/1.1 and HTTP/2, on tokio's paused clock:
//!
//! * a watch answered with `200` and headers, then silence, `timeoutSeconds` ignored: the
//!   reflector ends it at its client-side deadline (`timeoutSeconds` +
//!   `WATCH_DEADLINE_GRACE`) and watches again from the last resourceVersion, without a
//!   relist; a streaming list stuck the same way starts over;
//! * a list whose continue token repeats forever: the clients fail it with `Error::Pager`
//!   at the second page, and the reflector backs off and lists again.

use crate::misbehaving_server;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::{Reflector, ReflectorError, ReflectorOptions, WATCH_DEADLINE_GRACE};
use kclient_core::{GroupVersionResource, ListOptions, PagerError};
use kclient_dynamic::DynamicClient;
use kclient_typed::{Clientset, ResourceClient};
use misbehaving_server::{
    config_map, list, next_write, silent_watch, watch_then_silence, MisbehavingServer, Protocol,
    Seen, Writes,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

fn config_maps(server: &MisbehavingServer) -> ResourceClient<ConfigMap> {
    Clientset::from_client(server.rest()).namespaced::<ConfigMap>("default")
}

type TypedReflector = Reflector<ConfigMap, ResourceClient<ConfigMap>, Writes<ConfigMap>>;

/// A reflector of `server`'s ConfigMaps into a [`Writes`] store, running until the token is
/// cancelled.
fn run_reflector(
    server: &MisbehavingServer,
    options: ReflectorOptions<ConfigMap>,
) -> (
    Arc<TypedReflector>,
    tokio::sync::mpsc::UnboundedReceiver<String>,
    CancellationToken,
) {
    let (store, writes) = Writes::new();
    let reflector = Arc::new(Reflector::new(config_maps(server), store, options));
    let stop = CancellationToken::new();
    tokio::spawn({
        let (reflector, stop) = (Arc::clone(&reflector), stop.clone());
        async move { reflector.run(stop).await }
    });
    (reflector, writes, stop)
}

/// The first watch the server gets answers with `200` and then nothing; the later ones
/// bring ConfigMap `b` at resourceVersion 11, then nothing. Lists list `a` at 10.
fn first_watch_silent() -> impl Fn(&Seen) -> http::Response<misbehaving_server::Body> {
    let watches = AtomicUsize::new(0);
    move |seen: &Seen| {
        if !seen.is_watch() {
            return list(vec![config_map("a", "10")], "10", None);
        }
        match watches.fetch_add(1, Ordering::SeqCst) {
            0 => silent_watch(),
            _ => watch_then_silence(vec![("ADDED", config_map("b", "11"))]),
        }
    }
}

/// Issue 29 item 1: list, then a watch the server answers and leaves silent past its
/// timeout. The reflector watches again at the deadline, from the list's resourceVersion,
/// without listing again, and what the new watch brings reaches the store.
async fn a_silent_watch_is_watched_again_at_its_deadline(protocol: Protocol) {
    let mut server = MisbehavingServer::start(protocol, first_watch_silent()).await;
    let options = ReflectorOptions::default().use_watch_list(false);
    let (reflector, mut writes, stop) = run_reflector(&server, options);
    let listed = server.next_request().await;
    assert!(!listed.is_watch(), "{listed:?}");
    assert_eq!(next_write(&mut writes).await, "replace [default/a] 10");
    let silent = server.next_request().await;
    assert!(silent.is_watch(), "{silent:?}");
    assert_eq!(silent.param("resourceVersion"), Some("10"));

    let again = server.next_request().await;
    assert!(again.is_watch(), "a watch, not a relist: {again:?}");
    assert_eq!(again.param("resourceVersion"), Some("10"));
    let deadline = silent.at + silent.timeout() + WATCH_DEADLINE_GRACE;
    assert!(again.at >= deadline, "watched again before the deadline");
    assert_eq!(next_write(&mut writes).await, "add default/b 11");
    assert_eq!(reflector.last_sync_resource_version(), "11");
    stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_silent_watch_is_watched_again_at_its_deadline_over_http1() {
    a_silent_watch_is_watched_again_at_its_deadline(Protocol::Http1).await;
}

#[tokio::test(start_paused = true)]
async fn a_silent_watch_is_watched_again_at_its_deadline_over_http2() {
    a_silent_watch_is_watched_again_at_its_deadline(Protocol::Http2).await;
}

/// Issue 29 item 1: a streaming list (`sendInitialEvents`) the server answers and leaves
/// silent, without its closing bookmark: at the deadline it starts over (the reflector's
/// rule for a streaming list closed early), and the next one syncs.
async fn a_silent_streaming_list_starts_over_at_its_deadline(protocol: Protocol) {
    let watches = AtomicUsize::new(0);
    let mut server = MisbehavingServer::start(protocol, move |seen: &Seen| {
        if !seen.is_watch() {
            return list(Vec::new(), "10", None);
        }
        match watches.fetch_add(1, Ordering::SeqCst) {
            0 => silent_watch(),
            _ => {
                let mut end = config_map("", "12");
                end["metadata"]["annotations"] =
                    serde_json::json!({"k8s.io/initial-events-end": "true"});
                watch_then_silence(vec![("ADDED", config_map("b", "12")), ("BOOKMARK", end)])
            }
        }
    })
    .await;
    let (reflector, mut writes, stop) = run_reflector(&server, ReflectorOptions::default());
    let silent = server.next_request().await;
    assert!(silent.is_watch() && silent.param("sendInitialEvents") == Some("true"));

    let again = server.next_request().await;
    assert!(
        again.is_watch(),
        "a streaming list again, not a list: {again:?}"
    );
    assert_eq!(again.param("sendInitialEvents"), Some("true"));
    assert!(again.at >= silent.at + silent.timeout() + WATCH_DEADLINE_GRACE);
    assert_eq!(next_write(&mut writes).await, "replace [default/b] 12");
    assert_eq!(reflector.last_sync_resource_version(), "12");
    stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_silent_streaming_list_starts_over_at_its_deadline_over_http1() {
    a_silent_streaming_list_starts_over_at_its_deadline(Protocol::Http1).await;
}

#[tokio::test(start_paused = true)]
async fn a_silent_streaming_list_starts_over_at_its_deadline_over_http2() {
    a_silent_streaming_list_starts_over_at_its_deadline(Protocol::Http2).await;
}

/// Every list answers with one ConfigMap and the continue token `again`; after 100 pages
/// the token is dropped, so that a client that follows the loop ends (and fails the test)
/// instead of running forever.
fn repeating_continue_token() -> impl Fn(&Seen) -> http::Response<misbehaving_server::Body> {
    let lists = AtomicUsize::new(0);
    move |seen: &Seen| {
        assert!(!seen.is_watch(), "{seen:?}");
        let token = (lists.fetch_add(1, Ordering::SeqCst) < 100).then_some("again");
        list(vec![config_map("a", "10")], "10", token)
    }
}

fn repeated() -> PagerError {
    PagerError::RepeatedContinueToken {
        page: 2,
        first_seen: 1,
    }
}

/// Issue 29 item 2: a server whose continue token repeats forever. The typed and the
/// dynamic client fail the list with `Error::Pager` at the second page.
async fn a_repeating_continue_token_fails_the_list(protocol: Protocol) {
    let mut server = MisbehavingServer::start(protocol, repeating_continue_token()).await;
    let err = config_maps(&server)
        .list_all(&ListOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kclient_typed::Error::Pager(e) if *e == repeated()),
        "{err:?}"
    );
    let first = server.next_request().await;
    assert_eq!(first.param("continue"), None);
    assert_eq!(server.next_request().await.param("continue"), Some("again"));

    let dynamic = DynamicClient::new(server.rest())
        .resource(GroupVersionResource::new("", "v1", "configmaps"))
        .namespace("default");
    let err = dynamic.list_all(&ListOptions::default()).await.unwrap_err();
    assert!(
        matches!(&err, kclient_dynamic::Error::Pager(e) if *e == repeated()),
        "{err:?}"
    );
    assert_eq!(server.next_request().await.param("continue"), None);
    assert_eq!(server.next_request().await.param("continue"), Some("again"));
}

#[tokio::test(start_paused = true)]
async fn a_repeating_continue_token_fails_the_list_over_http1() {
    a_repeating_continue_token_fails_the_list(Protocol::Http1).await;
}

#[tokio::test(start_paused = true)]
async fn a_repeating_continue_token_fails_the_list_over_http2() {
    a_repeating_continue_token_fails_the_list(Protocol::Http2).await;
}

/// Issue 29 item 2: the reflector over that server: each list fails with the pager's error
/// (reported to the watch-error handler), and the next one follows after the backoff, a
/// fresh list from its first page.
#[tokio::test(start_paused = true)]
async fn a_reflector_backs_off_and_relists_when_the_continue_token_repeats() {
    let mut server = MisbehavingServer::start(Protocol::Http1, repeating_continue_token()).await;
    let (store, _writes) = Writes::new();
    let errors = Arc::new(Mutex::new(Vec::new()));
    let options = ReflectorOptions::default()
        .use_watch_list(false)
        .watch_error_handler({
            let errors = Arc::clone(&errors);
            move |_, e| {
                let e = e
                    .reflector_error::<kclient_typed::Error>()
                    .expect("a reflector error");
                let ReflectorError::Pager { source, .. } = e else {
                    panic!("not the pager's list error: {e}");
                };
                assert_eq!(*source, repeated());
                errors.lock().push(e.to_string());
            }
        });
    let reflector = Arc::new(Reflector::new(config_maps(&server), store, options));
    let stop = CancellationToken::new();
    tokio::spawn({
        let (reflector, stop) = (Arc::clone(&reflector), stop.clone());
        async move { reflector.run(stop).await }
    });
    let mut failed_at = Vec::new();
    for _ in 0..3 {
        let first = server.next_request().await;
        assert_eq!(first.param("continue"), None, "a fresh list: {first:?}");
        let second = server.next_request().await;
        assert_eq!(second.param("continue"), Some("again"));
        failed_at.push(second.at);
    }
    // Between two failed lists, at least the backoff's first wait (0.8 s, then 1.6 s).
    let next = server.next_request().await;
    assert!(failed_at[1] - failed_at[0] >= std::time::Duration::from_millis(800));
    assert!(failed_at[2] - failed_at[1] >= std::time::Duration::from_millis(1600));
    assert!(next.at - failed_at[2] >= std::time::Duration::from_millis(3200));
    assert!(errors.lock().len() >= 3, "{:?}", errors.lock());
    assert!(
        errors.lock()[0].contains("continue token"),
        "{:?}",
        errors.lock()
    );
    stop.cancel();
}
