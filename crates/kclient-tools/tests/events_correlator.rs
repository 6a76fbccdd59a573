//! client-go's EventCorrelator (`tools/record/events_cache_test.go`'s cases, written anew)
//! on tokio's paused clock: deduplication into counts, aggregation of similar events, the
//! spam filter's token buckets, and custom options.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use kclient_tools::events::{
    event_aggregator_by_reason, event_aggregator_by_reason_message, Correlation, CorrelatorOptions,
    EventCorrelator, EventError, AGGREGATE_MESSAGE_PREFIX, DEFAULT_AGGREGATE_INTERVAL,
    DEFAULT_AGGREGATE_MAX_EVENTS, DEFAULT_SPAM_BURST, DEFAULT_SPAM_QPS, MAX_LRU_CACHE_ENTRIES,
};
use tokio::time::advance;

fn object(kind: &str, name: &str, namespace: &str) -> ObjectReference {
    ObjectReference {
        kind: Some(kind.into()),
        name: Some(name.into()),
        namespace: Some(namespace.into()),
        uid: Some(name.into()),
        api_version: Some("v1".into()),
        ..Default::default()
    }
}

fn event(reason: &str, message: &str, involved: ObjectReference) -> Event {
    Event {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(format!("{}.1", involved.name.clone().unwrap_or_default())),
            namespace: involved.namespace.clone(),
            ..Default::default()
        },
        involved_object: involved,
        reason: Some(reason.into()),
        message: Some(message.into()),
        source: Some(EventSource {
            component: Some("kubelet".into()),
            host: Some("node-1".into()),
        }),
        count: Some(1),
        type_: Some("Normal".into()),
        ..Default::default()
    }
}

fn pod() -> ObjectReference {
    object("Pod", "my-pod", "my-ns")
}

/// Correlates `event`, noting the stored result like the broadcaster does.
fn play(correlator: &mut EventCorrelator, event: &Event) -> Correlation {
    let result = correlator.correlate(event.clone());
    match &result {
        Correlation::Create(e) | Correlation::Patch { event: e, .. } => correlator.update_state(e),
        Correlation::Skip => {}
    }
    result
}

/// Plays `previous` `interval` apart, then `next` after another interval.
async fn scenario(previous: &[Event], next: &Event, interval: Duration) -> Correlation {
    let mut correlator = EventCorrelator::default();
    for e in previous {
        play(&mut correlator, e);
        advance(interval).await;
    }
    play(&mut correlator, next)
}

fn written(result: Correlation) -> Event {
    match result {
        Correlation::Create(e) | Correlation::Patch { event: e, .. } => e,
        Correlation::Skip => panic!("the event was skipped"),
    }
}

fn similar(n: usize, template: &Event) -> Vec<Event> {
    (0..n)
        .map(|i| {
            let mut e = template.clone();
            e.message = Some(format!(
                "{}{i}",
                template.message.clone().unwrap_or_default()
            ));
            e
        })
        .collect()
}

#[test]
fn the_defaults_are_client_gos() {
    let options = CorrelatorOptions::default();
    assert_eq!(options.lru_cache_size, MAX_LRU_CACHE_ENTRIES);
    assert_eq!(MAX_LRU_CACHE_ENTRIES, 4096);
    assert_eq!((options.burst_size, DEFAULT_SPAM_BURST), (25, 25));
    assert_eq!(options.qps, DEFAULT_SPAM_QPS);
    assert_eq!(DEFAULT_SPAM_QPS, 1.0 / 300.0);
    assert_eq!((options.max_events, DEFAULT_AGGREGATE_MAX_EVENTS), (10, 10));
    assert_eq!(options.max_interval, DEFAULT_AGGREGATE_INTERVAL);
    assert_eq!(DEFAULT_AGGREGATE_INTERVAL, Duration::from_secs(600));
}

#[test]
fn aggregation_keys_ignore_the_message_and_messages_are_prefixed() {
    let fun = event("end-of-world", "it was fun", object("Pod", "pod1", "other"));
    let awful = event(
        "end-of-world",
        "it was awful",
        object("Pod", "pod1", "other"),
    );
    let bug = event("nevermind", "it was a bug", object("Pod", "pod1", "other"));
    let (key1, local1) = event_aggregator_by_reason(&fun);
    let (key2, local2) = event_aggregator_by_reason(&awful);
    let (key3, _) = event_aggregator_by_reason(&bug);
    assert_eq!(key1, key2, "same reason, other message: one group");
    assert_ne!(local1, local2);
    assert_ne!(key1, key3, "another reason: another group");
    assert_eq!(
        event_aggregator_by_reason_message(&fun),
        format!("{AGGREGATE_MESSAGE_PREFIX}it was fun")
    );
    assert_eq!(AGGREGATE_MESSAGE_PREFIX, "(combined from similar events): ");
}

#[tokio::test(start_paused = true)]
async fn a_single_event_is_created() {
    let first = event("first", "i am first", pod());
    let result = scenario(&[], &first, Duration::from_secs(5)).await;
    assert_eq!(result, Correlation::Create(first));
}

#[tokio::test(start_paused = true)]
async fn the_same_event_just_counts_and_is_patched() {
    let duplicate = event("duplicate", "me again", pod());
    match scenario(
        std::slice::from_ref(&duplicate),
        &duplicate,
        Duration::from_secs(5),
    )
    .await
    {
        Correlation::Patch { event, patch } => {
            assert_eq!(event.count, Some(2));
            assert_eq!(
                event.metadata.name, duplicate.metadata.name,
                "the first one's name"
            );
            assert_eq!(patch["count"], 2);
            assert_eq!(patch["message"], "me again");
            assert!(patch.get("lastTimestamp").is_some());
            assert_eq!(patch.as_object().map(|p| p.len()), Some(3), "{patch}");
        }
        other => panic!("expected a patch, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn the_same_event_counts_even_past_the_aggregation_threshold() {
    let duplicate = event("duplicate", "me again", pod());
    let previous = vec![duplicate.clone(); DEFAULT_AGGREGATE_MAX_EVENTS];
    // 30 s apart: enough to aggregate, too slow to be spam.
    let result = written(scenario(&previous, &duplicate, Duration::from_secs(30)).await);
    assert_eq!(result.count, Some(DEFAULT_AGGREGATE_MAX_EVENTS as i32 + 1));
    assert_eq!(
        result.message.as_deref(),
        Some("me again"),
        "identical events are not aggregated"
    );
}

#[tokio::test(start_paused = true)]
async fn the_same_event_too_often_is_spam() {
    let duplicate = event("duplicate", "me again", pod());
    let previous = vec![duplicate.clone(); DEFAULT_SPAM_BURST as usize + 1];
    let result = scenario(&previous, &duplicate, Duration::from_secs(1)).await;
    assert_eq!(result, Correlation::Skip);
}

#[tokio::test(start_paused = true)]
async fn many_unique_events_are_each_created() {
    let previous: Vec<Event> = (0..30)
        .map(|i| {
            event(
                &format!("reason{i}"),
                &format!("message{i}"),
                object("Pod", &format!("pod{i}"), "ns"),
            )
        })
        .collect();
    let unique = event("unique", "snowflake", pod());
    let result = scenario(&previous, &unique, Duration::from_secs(5)).await;
    assert_eq!(result, Correlation::Create(unique));
}

fn container_event() -> Event {
    let mut e = event("similar", "similar message", pod());
    e.involved_object.field_path = Some("spec.containers{container1}".into());
    e
}

#[tokio::test(start_paused = true)]
async fn similar_events_aggregate() {
    let similar_event = container_event();
    let previous = similar(DEFAULT_AGGREGATE_MAX_EVENTS - 1, &similar_event);
    let result = written(scenario(&previous, &similar_event, Duration::from_secs(5)).await);
    assert_eq!(result.count, Some(1));
    assert_eq!(
        result.message.as_deref(),
        Some("(combined from similar events): similar message")
    );
    assert_eq!(result.reason.as_deref(), Some("similar"));
    assert_eq!(result.involved_object, similar_event.involved_object);
    assert!(result.metadata.name.unwrap().starts_with("my-pod."));
}

#[tokio::test(start_paused = true)]
async fn further_similar_events_count_up_the_aggregate() {
    let similar_event = container_event();
    let previous = similar(DEFAULT_AGGREGATE_MAX_EVENTS, &similar_event);
    let result = scenario(&previous, &similar_event, Duration::from_secs(5)).await;
    match result {
        Correlation::Patch { event, patch } => {
            assert_eq!(event.count, Some(2));
            assert_eq!(
                patch["message"],
                "(combined from similar events): similar message"
            );
        }
        other => panic!("expected the aggregate to be patched, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn events_from_different_containers_do_not_aggregate() {
    let similar_event = container_event();
    let mut other_container = similar_event.clone();
    other_container.involved_object.field_path = Some("spec.containers{container2}".into());
    let result = scenario(&[other_container], &similar_event, Duration::from_secs(5)).await;
    assert_eq!(written(result).count, Some(1));
}

/// The aggregation window is open-ended at exactly the interval: a gap of 600 s still
/// aggregates, a gap of 601 s starts afresh.
#[tokio::test(start_paused = true)]
async fn similar_events_further_apart_than_the_interval_do_not_aggregate() {
    let similar_event = container_event();
    let previous = similar(DEFAULT_AGGREGATE_MAX_EVENTS - 1, &similar_event);
    let apart = DEFAULT_AGGREGATE_INTERVAL + Duration::from_secs(1);
    let result = written(scenario(&previous, &similar_event, apart).await);
    assert_eq!(result.message.as_deref(), Some("similar message"));
    assert_eq!(result.count, Some(1));

    let result = written(scenario(&previous, &similar_event, DEFAULT_AGGREGATE_INTERVAL).await);
    assert!(result
        .message
        .unwrap()
        .starts_with(AGGREGATE_MESSAGE_PREFIX));
}

/// The spam bucket starts with 25 tokens for a source and object (any reason) and gains one
/// every 300 s.
#[tokio::test(start_paused = true)]
async fn the_spam_filter_refills_one_token_per_five_minutes() {
    let mut correlator = EventCorrelator::default();
    let reasons = |i: usize| event(&format!("Reason{i}"), "m", pod());
    for i in 0..25 {
        assert!(
            matches!(play(&mut correlator, &reasons(i)), Correlation::Create(_)),
            "{i}"
        );
    }
    assert_eq!(
        play(&mut correlator, &reasons(25)),
        Correlation::Skip,
        "the 26th"
    );
    advance(Duration::from_secs(299)).await;
    assert_eq!(
        play(&mut correlator, &reasons(26)),
        Correlation::Skip,
        "not yet a token"
    );
    advance(Duration::from_secs(1)).await;
    assert!(matches!(
        play(&mut correlator, &reasons(27)),
        Correlation::Create(_)
    ));
    assert_eq!(play(&mut correlator, &reasons(28)), Correlation::Skip);
    // Another object has its own bucket.
    let other = event("Reason0", "m", object("Pod", "other", "my-ns"));
    assert!(matches!(
        play(&mut correlator, &other),
        Correlation::Create(_)
    ));
}

/// client-go's TestEventSpamFilter: burst 1, with the default spam key (source and object)
/// and a custom one that adds the reason.
#[tokio::test(start_paused = true)]
async fn custom_spam_keys_and_burst() {
    let original = event("original", "i am first", pod());
    let different_reason = event("duplicate", "me again", pod());
    let same_reason = event("original", "me again", pod());
    let by_reason: kclient_tools::events::EventSpamKeyFn = Arc::new(|e: &Event| {
        format!(
            "{}{}",
            kclient_tools::events::spam_key(e),
            e.reason.clone().unwrap_or_default()
        )
    });
    let cases = [
        (None, &different_reason, true),
        (Some(by_reason.clone()), &different_reason, false),
        (Some(by_reason), &same_reason, true),
    ];
    for (key, next, spam) in cases {
        let mut options = CorrelatorOptions {
            burst_size: 1,
            ..CorrelatorOptions::default()
        };
        if let Some(key) = key {
            options.spam_key_func = key;
        }
        let mut correlator = EventCorrelator::new(options).unwrap();
        play(&mut correlator, &original);
        advance(Duration::from_secs(1)).await;
        let result = play(&mut correlator, next);
        assert_eq!(result == Correlation::Skip, spam, "{next:?}");
    }
}

/// Custom max events, interval, key and message functions, refill rate and cache size.
#[tokio::test(start_paused = true)]
async fn custom_aggregation_options() {
    let options = CorrelatorOptions {
        max_events: 2,
        max_interval: Duration::from_secs(10),
        // Group by object only: any two events about it aggregate.
        key_func: Arc::new(|e: &Event| {
            (
                e.involved_object.name.clone().unwrap_or_default(),
                format!("{:?}{:?}", e.reason, e.message),
            )
        }),
        message_func: Arc::new(|e: &Event| {
            format!("many: {}", e.message.clone().unwrap_or_default())
        }),
        ..CorrelatorOptions::default()
    };
    let mut correlator = EventCorrelator::new(options).unwrap();
    assert!(matches!(
        play(&mut correlator, &event("A", "one", pod())),
        Correlation::Create(_)
    ));
    let second = written(play(&mut correlator, &event("B", "two", pod())));
    assert_eq!(second.message.as_deref(), Some("many: two"));
    advance(Duration::from_secs(11)).await;
    let later = written(play(&mut correlator, &event("C", "three", pod())));
    assert_eq!(later.message.as_deref(), Some("three"), "the window closed");
}

#[tokio::test(start_paused = true)]
async fn custom_rate_and_cache_size() {
    let options = CorrelatorOptions {
        burst_size: 1,
        qps: 1.0,
        lru_cache_size: 1,
        ..CorrelatorOptions::default()
    };
    let mut correlator = EventCorrelator::new(options).unwrap();
    let a = event("A", "a", pod());
    assert!(matches!(play(&mut correlator, &a), Correlation::Create(_)));
    assert_eq!(play(&mut correlator, &a), Correlation::Skip);
    advance(Duration::from_secs(1)).await;
    assert!(
        matches!(play(&mut correlator, &a), Correlation::Patch { .. }),
        "refilled after 1 s"
    );
    // A cache of one entry: another event evicts a's record, so a counts from 1 again.
    let b = event("B", "b", object("Pod", "other", "my-ns"));
    play(&mut correlator, &b);
    advance(Duration::from_secs(1)).await;
    assert!(
        matches!(play(&mut correlator, &a), Correlation::Create(_)),
        "a was forgotten"
    );
}

#[test]
fn invalid_options_are_refused() {
    let invalid = |options: CorrelatorOptions| match EventCorrelator::new(options) {
        Err(EventError::InvalidOption { option, .. }) => option,
        other => panic!("expected an invalid option, got {other:?}"),
    };
    let d = CorrelatorOptions::default;
    assert_eq!(
        invalid(CorrelatorOptions {
            lru_cache_size: 0,
            ..d()
        }),
        "lru_cache_size"
    );
    assert_eq!(
        invalid(CorrelatorOptions {
            burst_size: 0,
            ..d()
        }),
        "burst_size"
    );
    assert_eq!(invalid(CorrelatorOptions { qps: 0.0, ..d() }), "qps");
    assert_eq!(
        invalid(CorrelatorOptions {
            qps: f64::NAN,
            ..d()
        }),
        "qps"
    );
    assert_eq!(
        invalid(CorrelatorOptions {
            max_events: 0,
            ..d()
        }),
        "max_events"
    );
    assert_eq!(
        invalid(CorrelatorOptions {
            max_interval: Duration::ZERO,
            ..d()
        }),
        "max_interval"
    );
}
