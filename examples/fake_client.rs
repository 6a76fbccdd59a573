//! Testing a controller with kclient-fake (client-go's `examples/fake-client`, which tests
//! an informer against the fake clientset). kclient-fake is a real API server in the test's
//! process, over real HTTP: the controller under test runs unchanged (the same clientset,
//! informers, reflector, watch and retries as in production), and the test
//!
//! * seeds objects when it starts the server (`FakeApiServer::builder().objects(...)`);
//! * reads and changes the server's objects directly, without HTTP and without faults
//!   (`server.get`, `server.modify`), to check what the controller wrote and to change the
//!   world behind its back;
//! * breaks things on purpose (`server.faults()`): failed requests, dropped watches, a
//!   compacted history;
//! * waits for conditions with `kclient_tools::wait::poll_until_timeout`, never a fixed sleep.
//!
//! The controller under test stamps every ConfigMap labelled `stamp=wanted` with
//! `data.stamped-by`. The tests at the end of this file are the point; `main` runs the same
//! scenario and prints it.
//!
//! ```text
//! cargo test -p kclient --features fake,tools --example fake_client
//! cargo run -p kclient --features fake,tools --example fake_client
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kclient::core::UpdateOptions;
use kclient::fake::FakeApiServer;
use kclient::prelude::*;
use serde_json::{json, Value};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The controller's name, written into what it stamps.
const STAMPER: &str = "stamper";

/// The controller under test.
#[derive(Clone)]
struct Stamper {
    clientset: Clientset,
    config_maps: Lister<ConfigMap>,
    queue: RateLimitingQueue<String>,
    /// Failed syncs re-queued with backoff (what a test of retries looks at).
    retries: Arc<AtomicUsize>,
}

fn wanted(cm: &ConfigMap) -> bool {
    cm.labels().get("stamp").map(String::as_str) == Some("wanted")
}

impl Stamper {
    /// Builds the controller on the factory's ConfigMap informer, and its workers.
    fn start(
        clientset: Clientset,
        factory: &SharedInformerFactory<Clientset>,
    ) -> Result<(Self, tokio::task::JoinHandle<()>), Error> {
        let informer = factory.core_v1().config_maps().informer();
        let queue = RateLimitingQueue::new(default_controller_rate_limiter());
        let sink = queue.clone();
        informer.add_event_handler(EnqueueObjectKey::new(move |key| sink.add(key)))?;
        let stamper = Self {
            clientset,
            config_maps: informer.lister(),
            queue,
            retries: Arc::default(),
        };
        let worker = tokio::spawn({
            let stamper = stamper.clone();
            async move {
                while let Some(key) = stamper.queue.get().await {
                    match stamper.sync(&key).await {
                        Ok(()) => stamper.queue.forget(&key),
                        Err(_) => {
                            stamper.retries.fetch_add(1, Ordering::SeqCst);
                            stamper.queue.add_rate_limited(key.clone());
                        }
                    }
                    stamper.queue.done(&key);
                }
            }
        });
        Ok((stamper, worker))
    }

    async fn sync(&self, key: &str) -> Result<(), kclient::Error> {
        let (namespace, name) = kclient::core::split_meta_namespace_key(key)?;
        let cm = match self.config_maps.namespaced(namespace).get(name) {
            Ok(cm) => cm,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let stamped = cm.data.as_ref().and_then(|d| d.get("stamped-by"));
        if !wanted(&cm) || stamped.map(String::as_str) == Some(STAMPER) {
            return Ok(());
        }
        let mut updated = ConfigMap::clone(&cm);
        updated
            .data
            .get_or_insert_with(BTreeMap::new)
            .insert("stamped-by".into(), STAMPER.into());
        self.clientset
            .core_v1()
            .config_maps(namespace)
            .update(&updated, &UpdateOptions::default())
            .await?;
        println!("  stamped {key}");
        Ok(())
    }
}

fn config_map(name: &str, wanted: bool) -> Value {
    let labels = if wanted {
        json!({"stamp": "wanted"})
    } else {
        json!({})
    };
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "default", "labels": labels},
           "data": {"purpose": "a test"}})
}

/// kclient-fake seeded with two wanted ConfigMaps and one not wanted.
async fn seeded_server() -> Result<FakeApiServer, Error> {
    Ok(FakeApiServer::builder()
        .objects([
            config_map("a", true),
            config_map("b", true),
            config_map("c", false),
        ])
        .start()
        .await?)
}

/// The controller against `server`, started and synced; cancel the token to stop it.
async fn start_stamper(
    server: &FakeApiServer,
) -> Result<(Stamper, SharedInformerFactory<Clientset>, CancellationToken), Error> {
    let clientset = Clientset::new(server.config()?)?;
    let factory = SharedInformerFactory::builder(clientset.clone())
        .namespace("default")
        .build();
    let (stamper, _worker) = Stamper::start(clientset, &factory)?;
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    if !factory.wait_for_cache_sync(&cancel).await.all_synced() {
        return Err("the ConfigMap cache did not sync".into());
    }
    Ok((stamper, factory, cancel))
}

/// `data.stamped-by` of ConfigMap `default/name`, read from the server's store.
fn stamp_of(server: &FakeApiServer, name: &str) -> Option<String> {
    server
        .get::<ConfigMap>("default", name)?
        .data?
        .get("stamped-by")
        .cloned()
}

/// Waits (10 s at most, polling every 10 ms) until `names` are all stamped on the server.
async fn until_stamped(server: &FakeApiServer, names: &[&str]) -> Result<(), kclient::Error> {
    kclient::tools::wait::poll_until_timeout(
        &CancellationToken::new(),
        Duration::from_millis(10),
        Duration::from_secs(10),
        true,
        || {
            let done = names
                .iter()
                .all(|n| stamp_of(server, n).as_deref() == Some(STAMPER));
            async move { Ok::<_, kclient::Error>(done) }
        },
    )
    .await
    .map_err(kclient::Error::from)
}

#[tokio::main]
async fn main() -> Result<(), ErrorReport> {
    let server = seeded_server().await?;
    println!(
        "Started kclient-fake at {}, seeded with ConfigMaps a, b (wanted) and c",
        server.url()
    );
    let (stamper, factory, cancel) = start_stamper(&server).await?;
    until_stamped(&server, &["a", "b"]).await?;
    println!("A 503 storm, then a new wanted ConfigMap d...");
    server
        .faults()
        .fail_next(3, kclient::fake::Failure::status(503));
    server.seed(config_map("d", true))?;
    until_stamped(&server, &["d"]).await?;
    println!(
        "Stamped d after {} retries; c untouched: {:?}",
        stamper.retries.load(Ordering::SeqCst),
        stamp_of(&server, "c")
    );
    cancel.cancel();
    factory.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use kclient::fake::Failure;

    use super::*;

    #[tokio::test]
    async fn seeded_objects_are_stamped_and_others_left_alone() -> Result<(), Error> {
        let server = seeded_server().await?;
        let (_stamper, factory, cancel) = start_stamper(&server).await?;
        until_stamped(&server, &["a", "b"]).await?;
        assert_eq!(stamp_of(&server, "c"), None, "not labelled: not stamped");
        cancel.cancel();
        factory.shutdown().await;
        Ok(())
    }

    #[tokio::test]
    async fn failed_writes_are_retried_with_backoff() -> Result<(), Error> {
        let server = seeded_server().await?;
        let (stamper, factory, cancel) = start_stamper(&server).await?;
        until_stamped(&server, &["a", "b"]).await?;
        // The next three requests fail, whoever sends them: the controller's update of `d`.
        server.faults().fail_next(3, Failure::status(503));
        // Seeding goes around HTTP (and around the faults); the informer's watch sees it.
        server.seed(config_map("d", true))?;
        until_stamped(&server, &["d"]).await?;
        assert_eq!(stamper.retries.load(Ordering::SeqCst), 3);
        assert_eq!(server.faults().pending_failures(), 0);
        cancel.cancel();
        factory.shutdown().await;
        Ok(())
    }

    #[tokio::test]
    async fn a_change_behind_the_controllers_back_is_repaired_after_dropped_watches(
    ) -> Result<(), Error> {
        let server = seeded_server().await?;
        let (_stamper, factory, cancel) = start_stamper(&server).await?;
        until_stamped(&server, &["a", "b"]).await?;
        // Every watch ends; the reflector watches again from where it was, missing nothing.
        server.faults().drop_watches();
        server.modify(
            &kclient::core::GroupResource::new("", "configmaps"),
            "default",
            "a",
            |cm| cm["data"]["stamped-by"] = json!("someone-else"),
        )?;
        until_stamped(&server, &["a"]).await?;
        cancel.cancel();
        factory.shutdown().await;
        Ok(())
    }

    #[tokio::test]
    async fn after_a_compaction_the_informer_relists_and_catches_up() -> Result<(), Error> {
        let server = seeded_server().await?;
        let (_stamper, factory, cancel) = start_stamper(&server).await?;
        until_stamped(&server, &["a", "b"]).await?;
        // The watch gets `410 Gone` and ends; the reflector lists again.
        server.faults().compact_history();
        server.seed(config_map("e", true))?;
        until_stamped(&server, &["e"]).await?;
        cancel.cancel();
        factory.shutdown().await;
        Ok(())
    }
}
