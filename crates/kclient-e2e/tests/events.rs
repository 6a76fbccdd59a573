//! Events end to end, on every available target (the real kube-apiserver when
//! `KCLIENT_E2E_KUBECONFIG` is set, and always a fresh kclient-fake): a ConfigMap's events
//! recorded through kclient-tools' core/v1 broadcaster are deduplicated into a count and
//! aggregated as client-go's correlator does, as the independent client (`kubectl get events
//! -o json`, or the typed client where there is no kubectl) shows them; an events.k8s.io/v1
//! event recorded repeatedly is one Event with a series.

use anyhow::{ensure, Context, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kclient_core::{CreateOptions, ListOptions};
use kclient_e2e::scenarios::Namespace;
use kclient_e2e::Target;
use kclient_tools::events::{new_broadcaster, object_reference, v1, EventType, Shutdown};
use kclient_typed::Clientset;
use serde_json::Value;

/// The namespace's core/v1 Events as JSON: from kubectl when the target has one.
async fn events_json(
    target: &Target,
    clientset: &Clientset,
    namespace: &str,
) -> Result<Vec<Value>> {
    if let Some(output) = target
        .kubectl(&["get", "events", "-n", namespace, "-o", "json"])
        .await
    {
        let list: Value = serde_json::from_str(&output?).context("kubectl's JSON")?;
        return Ok(list["items"].as_array().cloned().unwrap_or_default());
    }
    let list = clientset
        .core_v1()
        .events(namespace)
        .list(&ListOptions::default())
        .await?;
    Ok(list
        .items
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?)
}

async fn events_on(target: &Target) -> Result<()> {
    let api = target.client()?;
    let ns = Namespace::create(&api, "events").await?;
    let outcome = scenario(target, &ns.name).await;
    ns.delete().await?;
    outcome
}

async fn scenario(target: &Target, namespace: &str) -> Result<()> {
    let clientset = Clientset::new(target.config.clone())?;
    let mut config_map = ConfigMap::default();
    config_map.metadata.name = Some("settings".into());
    config_map.metadata.namespace = Some(namespace.into());
    let config_map = clientset
        .core_v1()
        .config_maps(namespace)
        .create(&config_map, &CreateOptions::default())
        .await?;
    let reference = object_reference(&config_map);

    // core/v1: 5 identical events (one Event, count 5) and 12 similar ones (9 Events, then
    // one aggregate counted 3 times).
    let broadcaster = new_broadcaster();
    broadcaster.start_recording_to_sink(clientset.core_v1().events(""))?;
    let recorder = broadcaster.new_recorder("kclient-e2e", "");
    for _ in 0..5 {
        recorder.event(&reference, EventType::Normal, "Synced", "settings applied");
    }
    for i in 0..12 {
        recorder.eventf(
            &reference,
            EventType::Warning,
            "Failed",
            format_args!("attempt {i} failed"),
        );
    }
    ensure!(
        broadcaster.shutdown().await == Shutdown::Flushed,
        "core/v1 shutdown timed out"
    );

    let items = events_json(target, &clientset, namespace).await?;
    let by_reason =
        |reason: &str| -> Vec<&Value> { items.iter().filter(|e| e["reason"] == reason).collect() };
    let synced = by_reason("Synced");
    ensure!(synced.len() == 1, "one Synced Event, got {synced:#?}");
    let synced = synced[0];
    ensure!(synced["count"] == 5, "count 5: {synced:#}");
    ensure!(synced["message"] == "settings applied", "{synced:#}");
    ensure!(synced["type"] == "Normal", "{synced:#}");
    let involved = &synced["involvedObject"];
    ensure!(
        involved["kind"] == "ConfigMap"
            && involved["name"] == "settings"
            && involved["namespace"] == namespace
            && involved["uid"] == config_map.metadata.uid.clone().unwrap_or_default().as_str(),
        "involvedObject: {involved:#}"
    );
    ensure!(synced["source"]["component"] == "kclient-e2e", "{synced:#}");
    let failed = by_reason("Failed");
    ensure!(
        failed.len() == 10,
        "9 Failed Events and an aggregate, got {}",
        failed.len()
    );
    let aggregate: Vec<&&Value> = failed
        .iter()
        .filter(|e| {
            e["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("(combined from similar events): "))
        })
        .collect();
    ensure!(aggregate.len() == 1, "one aggregate: {failed:#?}");
    ensure!(
        aggregate[0]["count"] == 3,
        "aggregate counted 3 times: {:#}",
        aggregate[0]
    );
    ensure!(
        aggregate[0]["message"] == "(combined from similar events): attempt 11 failed",
        "{:#}",
        aggregate[0]
    );
    let typed: Vec<Event> = serde_json::from_value(Value::Array(items.clone()))?;
    ensure!(typed.len() >= 11, "every item decodes as a core/v1 Event");

    // events.k8s.io/v1: 4 occurrences, one Event with a series of 4 (written at shutdown).
    let broadcaster = v1::EventsV1Broadcaster::new(clientset.events_v1().events(""));
    broadcaster.start_recording_to_sink()?;
    let recorder = broadcaster.new_recorder_with_instance("kclient.dev/e2e", "e2e-1");
    for _ in 0..4 {
        recorder.eventf(
            &reference,
            None,
            EventType::Normal,
            "Rolled",
            "Rollout",
            "rolled out",
        );
    }
    ensure!(
        broadcaster.shutdown().await == Shutdown::Flushed,
        "events/v1 shutdown timed out"
    );
    let list = clientset
        .events_v1()
        .events(namespace)
        .list(&ListOptions::default())
        .await?;
    let rolled: Vec<_> = list
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("Rolled"))
        .collect();
    ensure!(rolled.len() == 1, "one Rolled Event: {rolled:#?}");
    let series = rolled[0].series.clone().context("a series")?;
    ensure!(series.count == 4, "series of 4: {series:?}");
    ensure!(rolled[0].action.as_deref() == Some("Rollout"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_recorded_counted_and_aggregated() -> Result<()> {
    let targets = Target::available().await?;
    let mut failures = Vec::new();
    for target in &targets {
        if let Err(e) = events_on(target).await {
            failures.push(format!("against {}: {e:#}", target.kind));
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}
