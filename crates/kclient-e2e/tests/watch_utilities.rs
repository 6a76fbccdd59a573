//! kclient-tools' watch utilities end to end, on every available target (the real
//! kube-apiserver when `KCLIENT_E2E_KUBECONFIG` is set, and always a fresh kclient-fake):
//! a `RetryWatcher` from a list's resourceVersion delivers every change kubectl (or, without
//! kubectl, the typed client) makes, once and in order; `until_with_sync` waits for a label
//! set later, and its precondition ends a `--for=delete` wait on an absent object at once.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_core::{CreateOptions, ListOptions, PatchOptions, WatchEvent};
use kclient_e2e::scenarios::Namespace;
use kclient_e2e::Target;
use kclient_tools::watch::{
    condition, conditions, until_with_sync, Condition, Precondition, RetryWatcher,
};
use kclient_typed::Clientset;
use serde_json::json;

/// Sets `data.v` of ConfigMap `name`: with kubectl when there is one, else the typed client.
async fn set_value(
    target: &Target,
    clientset: &Clientset,
    ns: &str,
    name: &str,
    v: &str,
) -> Result<()> {
    let patch = json!({"data": {"v": v}}).to_string();
    if let Some(out) = target
        .kubectl(&[
            "patch",
            "configmap",
            name,
            "-n",
            ns,
            "--type=merge",
            "-p",
            &patch,
        ])
        .await
    {
        out?;
        return Ok(());
    }
    clientset
        .core_v1()
        .config_maps(ns)
        .patch(
            name,
            &kclient_core::Patch::Merge(json!({"data": {"v": v}})),
            &PatchOptions::default(),
        )
        .await?;
    Ok(())
}

async fn scenario(target: &Target, ns: &str) -> Result<()> {
    let clientset = Clientset::new(target.config.clone())?;
    let config_maps = clientset.core_v1().config_maps(ns);
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "watched"}, "data": {"v": "0"}
    }))?;
    config_maps.create(&cm, &CreateOptions::default()).await?;
    let start = config_maps.list(&ListOptions::default()).await?;
    let rv = start
        .resource_version()
        .context("a list's resourceVersion")?;

    // A retry watcher sees every change once, in order.
    let mut watcher = RetryWatcher::new(rv, config_maps.clone())?;
    for v in 1..=5 {
        set_value(target, &clientset, ns, "watched", &v.to_string()).await?;
    }
    let mut seen = Vec::new();
    while seen.len() < 5 {
        let event = tokio::time::timeout(Duration::from_secs(30), watcher.next())
            .await
            .context("a change within 30 s")?
            .context("the retry watcher ended")?;
        // Other objects of the namespace (the real server's controller-manager adds
        // `kube-root-ca.crt` to new namespaces) are not this test's.
        if event.object().and_then(|o| o.metadata.name.as_deref()) != Some("watched") {
            continue;
        }
        match event {
            WatchEvent::Modified(cm) => seen.push(cm.data.unwrap_or_default()["v"].clone()),
            other => anyhow::bail!("unexpected event {other:?}"),
        }
    }
    ensure!(
        seen == ["1", "2", "3", "4", "5"],
        "changes as delivered: {seen:?}"
    );
    watcher.stop();

    // until_with_sync: the wait starts, then the label is set.
    let labelled: Condition<ConfigMap> = conditions::named(
        ns,
        "watched",
        condition(|e: &WatchEvent<Arc<ConfigMap>>| {
            Ok(e.object().is_some_and(|cm| {
                cm.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("ready"))
                    .map(String::as_str)
                    == Some("yes")
            }))
        }),
    );
    let wait = tokio::spawn(until_with_sync(config_maps.clone(), None, [labelled]));
    let label = ["label", "configmap", "watched", "ready=yes", "-n", ns];
    match target.kubectl(&label).await {
        Some(out) => {
            out?;
        }
        None => {
            config_maps
                .patch(
                    "watched",
                    &kclient_core::Patch::Merge(json!({"metadata": {"labels": {"ready": "yes"}}})),
                    &PatchOptions::default(),
                )
                .await?;
        }
    }
    let met = tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .context("the label within 30 s")???
        .context("an event")?;
    ensure!(
        matches!(met, WatchEvent::Added(_) | WatchEvent::Modified(_)),
        "{met:?}"
    );

    // A wait for the deletion of an object that is not there ends at once.
    let absent = format!("{ns}/absent");
    let gone: Precondition<ConfigMap> =
        Box::new(move |indexer| Ok(indexer.get_by_key(&absent).is_none()));
    let result = tokio::time::timeout(
        Duration::from_secs(30),
        until_with_sync(config_maps, Some(gone), [conditions::deleted()]),
    )
    .await
    .context("the precondition within 30 s")??;
    ensure!(result.is_none(), "{result:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_watcher_and_until_with_sync_follow_the_server() -> Result<()> {
    let targets = Target::available().await?;
    let mut failures = Vec::new();
    for target in &targets {
        let ns = Namespace::create(&target.client()?, "watch-utilities").await?;
        let outcome = scenario(target, &ns.name).await;
        ns.delete().await?;
        match outcome {
            Ok(()) => eprintln!("kclient-e2e: watch utilities against {}: ok", target.kind),
            Err(e) => failures.push(format!("{}: {e:#}", target.kind)),
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}
