//! The tracing event of a long client-side rate-limiter wait (client-go logs waits over 50 ms).
//!
//! Captured with `kclient_testkit::trace`: tracing caches per-callsite interest process-wide,
//! so a subscriber of the test's thread alone could miss events while other tests run.

use crate::support;

use kclient_rest::{Config, RestClient};
use serde_json::json;
use support::{json, paused_runtime, TestServer};

#[test]
fn long_waits_produce_a_tracing_event() {
    let trace = kclient_testkit::trace::capture();
    let waited = || -> Vec<String> {
        let events = trace.events().into_iter();
        let messages = events.filter_map(|event| event.field("message").map(str::to_owned));
        messages
            .filter(|message| message.contains("Waited before sending request"))
            .collect()
    };
    paused_runtime().block_on(async {
        let server = TestServer::http(|_| async { json(200, json!({})) }).await;
        let mut c = Config::new(server.url());
        c.proxy = kclient_rest::Proxy::Direct;
        c.qps = Some(10.0);
        c.burst = 1;
        let client = RestClient::new(c).unwrap();
        client.get().abs_path("/x").send().await.unwrap();
        assert_eq!(waited(), Vec::<String>::new());
        client.get().abs_path("/x").send().await.unwrap();
    });
    let waited = waited();
    assert_eq!(
        waited.len(),
        1,
        "the second request waited 100 ms: {waited:?}"
    );
}
