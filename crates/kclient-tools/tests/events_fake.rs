//! Events written to kclient-fake over real HTTP through the typed clients: a core/v1 event
//! recorded 20 times is one Event with count 20, an events.k8s.io/v1 event one Event with a
//! series of 20; writes through a failing server are retried; the adapter picks the API by
//! discovery.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, ObjectReference};
use k8s_openapi::api::events::v1::Event as EventsV1Event;
use kclient_fake::{Failure, FakeApiServer};
use kclient_rest::{Config, RestClient};
use kclient_tools::events::v1::{AdapterRecorder, EventBroadcasterAdapter, EventsV1Broadcaster};
use kclient_tools::events::{new_broadcaster, object_reference, EventType, Shutdown};
use kclient_typed::Clientset;

async fn fake() -> (FakeApiServer, Clientset) {
    let server = FakeApiServer::builder().start().await.unwrap();
    let mut config = Config::new(server.url());
    config.qps = None;
    let clientset = Clientset::from_client(RestClient::new(config).unwrap());
    (server, clientset)
}

fn config_map() -> ObjectReference {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("settings".into());
    cm.metadata.namespace = Some("default".into());
    object_reference(&cm)
}

#[tokio::test(start_paused = true)]
async fn a_core_event_recorded_20_times_is_one_event_with_count_20() {
    let (server, clientset) = fake().await;
    let broadcaster = new_broadcaster();
    broadcaster
        .start_recording_to_sink(clientset.core_v1().events(""))
        .unwrap();
    let recorder = broadcaster.new_recorder("kclient-test", "");
    for _ in 0..20 {
        recorder.event(
            &config_map(),
            EventType::Normal,
            "Synced",
            "settings applied",
        );
    }
    assert_eq!(broadcaster.shutdown().await, Shutdown::Flushed);

    let events: Vec<CoreEvent> = server.list(Some("default"));
    assert_eq!(events.len(), 1, "{events:#?}");
    let event = &events[0];
    assert_eq!(event.count, Some(20));
    assert_eq!(event.reason.as_deref(), Some("Synced"));
    assert_eq!(event.message.as_deref(), Some("settings applied"));
    assert_eq!(event.involved_object.name.as_deref(), Some("settings"));
    assert_eq!(event.involved_object.kind.as_deref(), Some("ConfigMap"));
    server.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_events_v1_event_recorded_20_times_is_one_series() {
    let (server, clientset) = fake().await;
    let broadcaster = EventsV1Broadcaster::new(clientset.events_v1().events(""));
    broadcaster.start_recording_to_sink().unwrap();
    let recorder = broadcaster.new_recorder_with_instance("kclient.dev/test", "test-1");
    for _ in 0..20 {
        recorder.eventf(
            &config_map(),
            None,
            EventType::Normal,
            "Synced",
            "Sync",
            "applied",
        );
    }
    assert_eq!(broadcaster.shutdown().await, Shutdown::Flushed);

    let events: Vec<EventsV1Event> = server.list(Some("default"));
    assert_eq!(events.len(), 1, "{events:#?}");
    let series = events[0].series.clone().expect("a series");
    assert_eq!(series.count, 20);
    assert_eq!(events[0].note.as_deref(), Some("applied"));
    server.shutdown().await;
}

/// A server answering 500 to the first writes: the event is retried until it is stored.
#[tokio::test(start_paused = true)]
async fn writes_through_a_failing_server_are_retried() {
    let (server, clientset) = fake().await;
    let broadcaster = new_broadcaster();
    broadcaster
        .start_recording_to_sink(clientset.core_v1().events(""))
        .unwrap();
    server.faults().fail_next(3, Failure::status(500));
    broadcaster.new_recorder("kclient-test", "").event(
        &config_map(),
        EventType::Warning,
        "Failed",
        "try again",
    );
    assert_eq!(
        broadcaster
            .shutdown_with_timeout(Duration::from_secs(120))
            .await,
        Shutdown::Flushed
    );
    assert_eq!(
        server.faults().pending_failures(),
        0,
        "the failures were served"
    );
    let events: Vec<CoreEvent> = server.list(Some("default"));
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].message.as_deref(), Some("try again"));
    server.shutdown().await;
}

/// kclient-fake serves events.k8s.io/v1, so the adapter records through it; told to use
/// core/v1, it writes core/v1 Events.
#[tokio::test(start_paused = true)]
async fn the_adapter_chooses_the_api_by_discovery() {
    let (server, clientset) = fake().await;
    let adapter = EventBroadcasterAdapter::new(&clientset).await;
    assert!(adapter.uses_events_v1());
    adapter.start_recording_to_sink().unwrap();
    let recorder = adapter.new_recorder("kclient-test");
    assert!(matches!(recorder, AdapterRecorder::EventsV1(_)));
    recorder.eventf(
        &config_map(),
        None,
        EventType::Normal,
        "Synced",
        "Sync",
        "through v1",
    );
    assert_eq!(adapter.shutdown().await, Shutdown::Flushed);
    let v1: Vec<EventsV1Event> = server.list(Some("default"));
    assert_eq!(v1.len(), 1);

    let legacy = EventBroadcasterAdapter::choose(&clientset, false);
    legacy.start_recording_to_sink().unwrap();
    let recorder = legacy.new_recorder("kclient-test");
    recorder.eventf(
        &config_map(),
        None,
        EventType::Normal,
        "Legacy",
        "Sync",
        "through core",
    );
    assert_eq!(legacy.shutdown().await, Shutdown::Flushed);
    let core: Vec<CoreEvent> = server.list(Some("default"));
    let legacy_event = core
        .iter()
        .find(|e| e.reason.as_deref() == Some("Legacy"))
        .unwrap();
    assert_eq!(legacy_event.message.as_deref(), Some("through core"));
    server.shutdown().await;
}
