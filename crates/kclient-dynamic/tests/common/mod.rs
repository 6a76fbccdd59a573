//! Shared setup: an in-process kclient-fake server and a dynamic client pointed at it.

use kclient_dynamic::DynamicClient;
use kclient_fake::FakeApiServer;
use kclient_rest::{Config, RestClient};

/// A fake API server and a dynamic client for it (no client-side rate limit, so tests are not
/// throttled).
pub async fn setup() -> (FakeApiServer, DynamicClient) {
    let server = FakeApiServer::builder().start().await.unwrap();
    let mut config = Config::new(server.url());
    config.qps = None;
    let client = DynamicClient::new(RestClient::new(config).unwrap());
    (server, client)
}
