//! The tracing event of a long client-side rate-limiter wait (client-go logs waits over 50 ms).
//!
//! Alone in its test binary: tracing caches per-callsite interest process-wide, so a
//! thread-local subscriber can miss events while other tests run concurrently.

use crate::support;

use std::sync::Arc;

use kclient_rest::{Config, RestClient};
use parking_lot::Mutex;
use serde_json::json;
use support::{json, paused_runtime, TestServer};
use tracing_subscriber::layer::SubscriberExt as _;

/// Records the messages of tracing events.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Events {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut m = Message(String::new());
        event.record(&mut m);
        self.0.lock().push(m.0);
    }
}

#[test]
fn long_waits_produce_a_tracing_event() {
    let events = Events::default();
    let subscriber = tracing_subscriber::registry().with(events.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    paused_runtime().block_on(async {
        let server = TestServer::http(|_| async { json(200, json!({})) }).await;
        let mut c = Config::new(server.url());
        c.proxy = kclient_rest::Proxy::Direct;
        c.qps = Some(10.0);
        c.burst = 1;
        let client = RestClient::new(c).unwrap();
        client.get().abs_path("/x").send().await.unwrap();
        assert!(!events
            .0
            .lock()
            .iter()
            .any(|m| m.contains("Waited before sending request")));
        client.get().abs_path("/x").send().await.unwrap();
    });
    let waited: Vec<_> = events
        .0
        .lock()
        .iter()
        .filter(|m| m.contains("Waited before sending request"))
        .cloned()
        .collect();
    assert_eq!(
        waited.len(),
        1,
        "the second request waited 100 ms: {waited:?}"
    );
}
