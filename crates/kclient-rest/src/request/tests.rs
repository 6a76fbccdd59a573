//! The request builder's paths, defaults and duration strings.

use std::time::Duration;

use http::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_TYPE};
use kclient_core::{go_duration, ApiResource, GroupVersion, Patch, PatchType, MAX_GO_DURATION};

use crate::client::RestClient;

use super::*;
use crate::config::Config;

fn client(host: &str) -> RestClient {
    RestClient::new(Config::new(host)).unwrap()
}

/// Issue 29, item 6: `Duration::MAX` was sent as `5124095576030431h0m15.999999999s`,
/// which Go's `time.ParseDuration` refuses (the server answers 400): what is sent is at
/// most Go's longest duration, `math.MaxInt64` nanoseconds.
#[test]
fn durations_beyond_go_are_sent_as_the_longest_go_duration() {
    const GO_MAX: &str = "2562047h47m16.854775807s";
    assert_eq!(MAX_GO_DURATION.as_nanos(), i64::MAX as u128);
    assert_eq!(go_duration(MAX_GO_DURATION), GO_MAX);
    assert_eq!(
        go_duration(MAX_GO_DURATION + Duration::from_nanos(1)),
        GO_MAX
    );
    assert_eq!(go_duration(Duration::MAX), GO_MAX);
    assert_eq!(
        go_duration(MAX_GO_DURATION - Duration::from_nanos(1)),
        "2562047h47m16.854775806s"
    );
    let mut config = Config::new("https://h");
    config.timeout = Some(Duration::MAX);
    let r = RestClient::new(config).unwrap().get().abs_path("/x");
    let uri = r.outgoing(Mode::Full).unwrap().uri.to_string();
    assert!(uri.ends_with("timeout=2562047h47m16.854775807s"), "{uri}");
}

#[test]
fn paths_follow_the_api_layout() {
    let c = client("https://h:6443");
    let core = GroupVersion::new("", "v1");
    let apps = GroupVersion::new("apps", "v1");
    assert_eq!(
        c.get().group_version(&core).resource("Pods").path(),
        "/api/v1/pods"
    );
    assert_eq!(
        c.get()
            .group_version(&core)
            .namespace("ns")
            .resource("pods")
            .name("p")
            .subresource("log")
            .path(),
        "/api/v1/namespaces/ns/pods/p/log"
    );
    assert_eq!(
        c.get()
            .group_version(&apps)
            .namespace("ns")
            .resource("deployments")
            .name("d")
            .url_template(),
        "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    );
    assert_eq!(c.get().abs_path("/version").path(), "/version");
    assert_eq!(c.get().abs_path("/apis/").path(), "/apis/");
    assert_eq!(c.get().path(), "/");
    assert_eq!(
        c.get()
            .group_version(&core)
            .namespace("")
            .resource("pods")
            .path(),
        "/api/v1/pods",
        "an empty namespace lists across namespaces"
    );
    let prefixed = client("https://h/rancher/k8s/");
    assert_eq!(
        prefixed.get().group_version(&core).resource("nodes").path(),
        "/rancher/k8s/api/v1/nodes"
    );
    let gv_client = c.for_group_version(apps.clone());
    assert_eq!(
        gv_client.get().resource("replicasets").path(),
        "/apis/apps/v1/replicasets"
    );
    assert_eq!(
        c.get()
            .group_version(&core)
            .resource("services")
            .name("s")
            .subresource("proxy")
            .suffix(["a", "b/c"])
            .path(),
        "/api/v1/services/s/proxy/a/b/c"
    );
}

#[test]
fn api_resources_address_by_scope() {
    let c = client("https://h");
    let nodes = ApiResource::from_gvk_with_plural(
        &kclient_core::GroupVersionKind::new("", "v1", "Node"),
        "nodes",
        false,
    );
    assert_eq!(
        c.get().namespace("x").api_resource(&nodes).path(),
        "/api/v1/nodes"
    );
    let cms = ApiResource::from_gvk_with_plural(
        &kclient_core::GroupVersionKind::new("", "v1", "ConfigMap"),
        "configmaps",
        true,
    );
    assert_eq!(
        c.get().namespace("x").api_resource(&cms).path(),
        "/api/v1/namespaces/x/configmaps"
    );
}

#[test]
fn invalid_segments_are_deferred_errors() {
    let c = client("https://h");
    for r in [
        c.get().namespace("a/b"),
        c.get().name("x%2F"),
        c.get().name(""),
        c.get().resource(".."),
        c.get().subresource("a/b"),
        c.get().header("bad header", "v"),
        c.get().header("x", "bad\nvalue"),
    ] {
        assert!(r.error.is_some(), "{r:?}");
    }
    assert!(c.post().namespace("").preflight().is_err());
    assert!(c.get().namespace("").name("x").preflight().is_err());
    assert!(c.get().namespace("").preflight().is_ok());
}

#[test]
fn outgoing_requests_carry_defaults() {
    let c = client("https://h");
    let out = c
        .get()
        .abs_path("/api")
        .param("labelSelector", "a=b,c in (d)")
        .timeout(Duration::from_secs(30))
        .outgoing(Mode::Full)
        .unwrap();
    assert_eq!(
        out.uri.to_string(),
        "https://h/api?labelSelector=a%3Db%2Cc+in+%28d%29&timeout=30s"
    );
    assert_eq!(out.headers[ACCEPT], DEFAULT_ACCEPT);
    assert_eq!(out.headers[ACCEPT_ENCODING], "gzip");
    let watch = c.get().abs_path("/api").outgoing(Mode::Watch).unwrap();
    assert!(
        !watch.headers.contains_key(ACCEPT_ENCODING),
        "watches are not compressed"
    );
    assert!(
        !out.headers.contains_key(CONTENT_TYPE),
        "no body, no content type"
    );
    let out = c
        .post()
        .abs_path("/x")
        .json_body(&serde_json::json!({"a": 1}))
        .outgoing(Mode::Full)
        .unwrap();
    assert_eq!(out.headers[CONTENT_TYPE], "application/json");
    assert_eq!(&out.body[..], br#"{"a":1}"#);
    let patch = Patch::Merge(serde_json::json!({"spec": {}}));
    let out = c.patch(&patch).abs_path("/x").outgoing(Mode::Full).unwrap();
    assert_eq!(out.headers[CONTENT_TYPE], "application/merge-patch+json");
    assert_eq!(&out.body[..], br#"{"spec":{}}"#);
    let out = c
        .patch(PatchType::Apply)
        .abs_path("/x")
        .body("{}")
        .outgoing(Mode::Full)
        .unwrap();
    assert_eq!(out.headers[CONTENT_TYPE], "application/apply-patch+yaml");
}

#[test]
fn defaults_match_client_go() {
    assert_eq!(LONG_THROTTLE_LATENCY, Duration::from_millis(50));
    assert_eq!(EXTRA_LONG_THROTTLE_LATENCY, Duration::from_secs(1));
    assert_eq!(DEFAULT_ACCEPT, "application/json, */*");
    let r = client("https://h").get();
    assert_eq!(r.max_retries, 10);
    assert_eq!(r.timeout, None);
    let mut config = Config::new("https://h");
    config.timeout = Some(Duration::from_secs(5));
    let r = RestClient::new(config).unwrap().get().abs_path("/x");
    assert_eq!(
        r.timeout,
        Some(Duration::from_secs(5)),
        "the client's timeout is the default"
    );
    assert!(r
        .outgoing(Mode::Full)
        .unwrap()
        .uri
        .to_string()
        .ends_with("timeout=5s"));
}
