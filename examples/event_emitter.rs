//! Kubernetes Events with client-go's `record` package in kclient: a controller records
//! events about a ConfigMap through an `EventBroadcaster`.
//!
//! * an identical event recorded five times is stored as one Event with `count: 5` (the
//!   correlator's deduplication: one create, then patches);
//! * twelve events differing only in their message become nine Events and one aggregate,
//!   `"(combined from similar events): …"`, counted three times;
//! * recording never blocks, and `shutdown` writes whatever is still queued before the
//!   program exits.
//!
//! ```text
//! cargo run -p kclient --features fake,tools --example event_emitter             # against kclient-fake
//! cargo run -p kclient --features fake,tools --example event_emitter -- --kubeconfig ~/.kube/config [--namespace NS]
//! ```

use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kclient::core::{ApiStatus, CreateOptions, ErrorReport, ListOptions};
use kclient::fake::FakeApiServer;
use kclient::rest::{Config, KubeconfigOptions, RestClient};
use kclient::tools::events::{new_broadcaster, object_reference, EventType, Shutdown};
use kclient::typed::Clientset;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The ConfigMap the events are about.
const NAME: &str = "event-emitter-demo";

/// Records the events, shuts the broadcaster down and returns the ConfigMap's Events as the
/// server stores them.
async fn run(clientset: &Clientset, namespace: &str) -> Result<Vec<Event>, Error> {
    let config_maps = clientset.core_v1().config_maps(namespace);
    let mut config_map = ConfigMap::default();
    config_map.metadata.name = Some(NAME.into());
    let config_map = match config_maps
        .create(&config_map, &CreateOptions::default())
        .await
    {
        Ok(created) => created,
        Err(e) if e.is_already_exists() => config_maps.get(NAME).await?,
        Err(e) => return Err(e.into()),
    };
    let reference = object_reference(&config_map);

    let broadcaster = new_broadcaster();
    broadcaster.start_recording_to_sink(clientset.core_v1().events(""))?;
    broadcaster.start_event_watcher(|event| {
        println!(
            "  recorded {:<8} {:<9} {}",
            event.type_.as_deref().unwrap_or_default(),
            event.reason.as_deref().unwrap_or_default(),
            event.message.as_deref().unwrap_or_default()
        );
    })?;
    let recorder = broadcaster.new_recorder("event-emitter", "");

    println!("Recording 5 identical events and 12 similar ones about configmap/{NAME}:");
    for _ in 0..5 {
        recorder.event(&reference, EventType::Normal, "Synced", "settings applied");
    }
    for attempt in 1..=12 {
        recorder.eventf(
            &reference,
            EventType::Warning,
            "Retrying",
            format_args!("attempt {attempt} could not reach the backend"),
        );
    }
    match broadcaster.shutdown().await {
        Shutdown::Flushed => println!("Shut down: every queued event was written."),
        Shutdown::TimedOut => println!("Shut down: timed out with events still queued."),
    }
    println!(
        "Events dropped on the way: {}",
        broadcaster.dropped_events()
    );

    let uid = config_map.metadata.uid.clone();
    let mut events: Vec<Event> = clientset
        .core_v1()
        .events(namespace)
        .list(&ListOptions::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.involved_object.uid == uid)
        .collect();
    events.sort_by_key(|e| e.metadata.creation_timestamp.clone().map(|t| t.0));
    println!("\nThe server's Events about configmap/{NAME}:");
    println!("  {:<6} {:<8} {:<9} MESSAGE", "COUNT", "TYPE", "REASON");
    for e in &events {
        println!(
            "  {:<6} {:<8} {:<9} {}",
            e.count.unwrap_or_default(),
            e.type_.as_deref().unwrap_or_default(),
            e.reason.as_deref().unwrap_or_default(),
            e.message.as_deref().unwrap_or_default()
        );
    }
    Ok(events)
}

#[tokio::main]
async fn main() -> Result<(), ErrorReport> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    match flag("--kubeconfig") {
        Some(path) => {
            let config = Config::from_kubeconfig(&KubeconfigOptions {
                path: Some(path.into()),
                ..Default::default()
            })?;
            let namespace = flag("--namespace").unwrap_or_else(|| "default".into());
            run(&Clientset::new(config)?, &namespace).await?;
        }
        None => {
            let server = FakeApiServer::builder().start().await?;
            println!(
                "Started kclient-fake at {} (pass --kubeconfig for a cluster)\n",
                server.url()
            );
            let clientset = Clientset::from_client(RestClient::new(Config::new(server.url()))?);
            run(&clientset, "default").await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn events_are_counted_aggregated_and_flushed() -> Result<(), Error> {
        let server = FakeApiServer::builder().start().await?;
        let clientset = Clientset::from_client(RestClient::new(Config::new(server.url()))?);
        let events = run(&clientset, "default").await?;
        let synced: Vec<&Event> = events
            .iter()
            .filter(|e| e.reason.as_deref() == Some("Synced"))
            .collect();
        assert_eq!(synced.len(), 1);
        assert_eq!(synced[0].count, Some(5));
        let retrying: Vec<&Event> = events
            .iter()
            .filter(|e| e.reason.as_deref() == Some("Retrying"))
            .collect();
        assert_eq!(retrying.len(), 10, "9 single events and the aggregate");
        let aggregate = retrying
            .iter()
            .find(|e| e.count == Some(3))
            .expect("the aggregate, counted 3 times");
        assert_eq!(
            aggregate.message.as_deref(),
            Some("(combined from similar events): attempt 12 could not reach the backend")
        );
        Ok(())
    }
}
