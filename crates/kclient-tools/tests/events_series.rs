//! The events.k8s.io/v1 broadcaster on tokio's paused clock: a repeated event becomes an
//! EventSeries (created once, patched into a series, counted, finished after 6 minutes
//! without an occurrence, refreshed every 30 minutes), and shutdown writes the counts.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::api::events::v1::Event;
use kclient_tools::events::v1::{
    EventsV1Broadcaster, EventsV1BroadcasterOptions, FINISH_TIME, REFRESH_TIME,
};
use kclient_tools::events::{
    object_reference, EventError, EventType, MemorySink, Shutdown, SinkCall,
};
use tokio::time::advance;

fn config_map(name: &str) -> ObjectReference {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some("prod".into());
    object_reference(&cm)
}

fn started() -> (EventsV1Broadcaster, MemorySink<Event>) {
    let sink = MemorySink::new();
    let broadcaster = EventsV1Broadcaster::new(sink.clone());
    broadcaster.start_recording_to_sink().unwrap();
    (broadcaster, sink)
}

/// Lets the recording task run (no time passes).
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[test]
fn the_defaults_are_client_gos() {
    assert_eq!(FINISH_TIME, Duration::from_secs(360));
    assert_eq!(REFRESH_TIME, Duration::from_secs(1800));
    let options = EventsV1BroadcasterOptions::default();
    assert_eq!(
        (
            options.finish_time,
            options.refresh_time,
            options.sleep_duration,
            options.queue_length
        ),
        (FINISH_TIME, REFRESH_TIME, Duration::from_secs(10), 1000)
    );
}

#[tokio::test(start_paused = true)]
async fn an_event_carries_what_was_recorded() {
    let (broadcaster, sink) = started();
    let recorder = broadcaster.new_recorder_with_instance("example.com/ctl", "ctl-1");
    let related = config_map("other");
    recorder.eventf(
        &config_map("a"),
        Some(&related),
        EventType::Warning,
        "Invalid",
        "Validate",
        format_args!("key {} missing", "x"),
    );
    assert_eq!(broadcaster.shutdown().await, Shutdown::Flushed);
    let events = sink.events();
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(e.note.as_deref(), Some("key x missing"));
    assert_eq!(e.action.as_deref(), Some("Validate"));
    assert_eq!(e.reason.as_deref(), Some("Invalid"));
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(e.reporting_controller.as_deref(), Some("example.com/ctl"));
    assert_eq!(e.reporting_instance.as_deref(), Some("ctl-1"));
    assert_eq!(e.regarding, Some(config_map("a")));
    assert_eq!(e.related, Some(related));
    assert!(e.event_time.is_some());
    assert!(e.series.is_none());
    assert_eq!(e.metadata.namespace.as_deref(), Some("prod"));
    let default_instance = broadcaster.new_recorder("ctl");
    assert!(
        format!("{default_instance:?}").contains("ctl-"),
        "controller-hostname"
    );
}

/// 20 occurrences: one create, one patch into a series of 2, then counting in memory; the
/// finish after 6 quiet minutes writes the final count 20 and forgets the series, so the
/// next occurrence is a new Event.
#[tokio::test(start_paused = true)]
async fn a_repeated_event_becomes_a_series_finished_after_six_minutes() {
    let (broadcaster, sink) = started();
    let recorder = broadcaster.new_recorder("ctl");
    let record = || {
        recorder.eventf(
            &config_map("a"),
            None,
            EventType::Normal,
            "Synced",
            "Sync",
            "ok",
        )
    };
    for _ in 0..20 {
        record();
        advance(Duration::from_secs(1)).await;
        settle().await;
    }
    let events = sink.events();
    assert_eq!(events.len(), 1);
    let series = events[0].series.clone().unwrap();
    assert_eq!(
        series.count, 2,
        "later occurrences are only counted until the series ends"
    );
    let name = events[0].metadata.name.clone().unwrap();
    assert_eq!(
        sink.calls(),
        [
            SinkCall::Create(name.clone()),
            SinkCall::Patch(name.clone())
        ]
    );

    // The finish runs every 6 minutes and ends series quiet for more than 6 minutes.
    // The tick at 6 min finds the series quiet for only 5 min 41 s; the one at 12 min ends it.
    advance(FINISH_TIME).await;
    settle().await;
    assert_eq!(sink.calls().len(), 2);
    advance(FINISH_TIME).await;
    settle().await;
    let events = sink.events();
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].series.as_ref().unwrap().count,
        20,
        "the final count"
    );
    assert_eq!(sink.calls().len(), 3);

    record();
    settle().await;
    assert_eq!(
        sink.events().len(),
        2,
        "the series was forgotten: a new Event"
    );
    broadcaster.shutdown().await;
}

/// A single event is forgotten after 6 minutes: its repeat is a new Event, not a series.
#[tokio::test(start_paused = true)]
async fn single_events_are_forgotten_after_six_minutes() {
    let (broadcaster, sink) = started();
    let recorder = broadcaster.new_recorder("ctl");
    let record = || {
        recorder.eventf(
            &config_map("a"),
            None,
            EventType::Normal,
            "Synced",
            "Sync",
            "ok",
        )
    };
    record();
    settle().await;
    advance(Duration::from_secs(5 * 60)).await;
    settle().await;
    record();
    settle().await;
    assert_eq!(sink.events().len(), 1, "within 6 minutes: a series");
    advance(Duration::from_secs(13 * 60)).await; // the series ends and is forgotten
    settle().await;
    record();
    settle().await;
    assert_eq!(sink.events().len(), 2);
    broadcaster.shutdown().await;
}

/// An open series is written again every 30 minutes.
#[tokio::test(start_paused = true)]
async fn open_series_are_refreshed_every_thirty_minutes() {
    let options = EventsV1BroadcasterOptions {
        finish_time: Duration::from_secs(3600),
        ..EventsV1BroadcasterOptions::default()
    };
    let sink = MemorySink::new();
    let broadcaster = EventsV1Broadcaster::with_options(sink.clone(), options).unwrap();
    broadcaster.start_recording_to_sink().unwrap();
    let recorder = broadcaster.new_recorder("ctl");
    for _ in 0..3 {
        recorder.eventf(
            &config_map("a"),
            None,
            EventType::Normal,
            "Synced",
            "Sync",
            "ok",
        );
        settle().await;
    }
    assert_eq!(sink.calls().len(), 2);
    advance(REFRESH_TIME).await;
    settle().await;
    assert_eq!(sink.calls().len(), 3, "refreshed");
    assert_eq!(sink.events()[0].series.as_ref().unwrap().count, 3);
    broadcaster.shutdown().await;
}

/// Shutdown writes the series counts not yet written.
#[tokio::test(start_paused = true)]
async fn shutdown_writes_the_series_counts() {
    let (broadcaster, sink) = started();
    let recorder = broadcaster.new_recorder("ctl");
    for _ in 0..7 {
        recorder.eventf(
            &config_map("a"),
            None,
            EventType::Normal,
            "Synced",
            "Sync",
            "ok",
        );
    }
    assert_eq!(broadcaster.shutdown().await, Shutdown::Flushed);
    let events = sink.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].series.as_ref().unwrap().count, 7);
}

#[tokio::test]
async fn options_are_checked() {
    let bad = EventsV1BroadcasterOptions {
        finish_time: Duration::ZERO,
        ..EventsV1BroadcasterOptions::default()
    };
    assert!(matches!(
        EventsV1Broadcaster::with_options(MemorySink::new(), bad),
        Err(EventError::InvalidOption {
            option: "finish_time",
            ..
        })
    ));
}
