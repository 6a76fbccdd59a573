//! Client-side rate limiting over real requests, with tokio's paused clock: the default 5 QPS /
//! burst 10, one bucket shared by clones, the 50 ms tracing event, and turning it off.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use kclient_rest::{Config, RateLimiter, RequestMetrics, RestClient};
use parking_lot::Mutex;
use serde_json::json;
use support::{json, paused_runtime, TestServer};
use tokio::time::Instant;

#[derive(Default)]
struct Waits(Mutex<Vec<Duration>>);

impl RequestMetrics for Waits {
    fn rate_limiter_latency(&self, _verb: &str, _url_template: &str, latency: Duration) {
        self.0.lock().push(latency);
    }
}

fn limited(url: &str, waits: &Arc<Waits>) -> Config {
    let mut c = Config::new(url);
    c.proxy = kclient_rest::Proxy::Direct;
    c.metrics = Some(waits.clone());
    c
}

#[test]
fn the_default_bucket_is_five_per_second_with_a_burst_of_ten() {
    paused_runtime().block_on(async {
        let server = TestServer::http(|_| async { json(200, json!({})) }).await;
        let waits = Arc::new(Waits::default());
        let client = RestClient::new(limited(&server.url(), &waits)).unwrap();
        let limiter = client.rate_limiter().unwrap();
        assert_eq!((limiter.qps(), limiter.burst()), (5.0, 10));
        let clone = client.clone();
        let start = Instant::now();
        for i in 0..12 {
            // Alternate between the client and its clone: they share one bucket.
            let c = if i % 2 == 0 { &client } else { &clone };
            c.get().abs_path("/api").send().await.unwrap();
        }
        let waits = waits.0.lock().clone();
        assert_eq!(waits.len(), 12);
        assert!(
            waits[..10].iter().all(|w| w.is_zero()),
            "the burst is free: {waits:?}"
        );
        assert!(
            waits[10] > Duration::ZERO && waits[11] > Duration::ZERO,
            "{waits:?}"
        );
        assert!(
            start.elapsed() >= Duration::from_millis(400),
            "two tokens at 5 per second"
        );
    });
}

#[test]
fn clients_can_share_one_limiter() {
    paused_runtime().block_on(async {
        let server = TestServer::http(|_| async { json(200, json!({})) }).await;
        let shared = RateLimiter::new(1.0, 2).unwrap();
        let waits = Arc::new(Waits::default());
        let mut a = limited(&server.url(), &waits);
        a.rate_limiter = Some(shared.clone());
        let mut b = limited(&server.url(), &waits);
        b.rate_limiter = Some(shared.clone());
        b.user_agent = Some("another client".into());
        let a = RestClient::new(a).unwrap();
        let b = RestClient::new(b).unwrap();
        assert!(a
            .rate_limiter()
            .unwrap()
            .shares_bucket_with(b.rate_limiter().unwrap()));
        a.get().abs_path("/x").send().await.unwrap();
        b.get().abs_path("/x").send().await.unwrap();
        let start = Instant::now();
        a.get().abs_path("/x").send().await.unwrap();
        assert!(
            start.elapsed() >= Duration::from_secs(1),
            "the third request waits a second"
        );
    });
}

#[test]
fn rate_limiting_can_be_turned_off() {
    paused_runtime().block_on(async {
        let server = TestServer::http(|_| async { json(200, json!({})) }).await;
        for qps in [None, Some(-1.0)] {
            let waits = Arc::new(Waits::default());
            let mut c = limited(&server.url(), &waits);
            c.qps = qps;
            let client = RestClient::new(c).unwrap();
            assert!(client.rate_limiter().is_none());
            for _ in 0..30 {
                client.get().abs_path("/x").send().await.unwrap();
            }
            assert!(waits.0.lock().is_empty(), "no limiter, no wait recorded");
        }
    });
}
