//! The metadata client and a metadata informer end to end, on every available target (the
//! real kube-apiserver when `KCLIENT_E2E_KUBECONFIG` is set, and always a fresh
//! kclient-fake): every verb of the `MetadataClient` reads what the server converts, and an
//! informer from the metadata factory follows changes made by kubectl (when there is one)
//! until its cache equals a fresh metadata list, managedFields stripped.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::SharedInformerFactory;
use kclient_core::{
    CancellationToken, DeleteOptions, DeleteResponse, GetOptions, ListOptions,
    PartialObjectMetadata, Patch, PatchOptions, Resource, ResourceExt, TypeMeta, WatchEvent,
};
use kclient_dynamic::MetadataClient;
use kclient_e2e::scenarios::Namespace;
use kclient_e2e::Target;
use serde_json::json;

fn partial_type() -> Option<TypeMeta> {
    Some(TypeMeta::new("meta.k8s.io/v1", "PartialObjectMetadata"))
}

/// Name → resourceVersion, without `kube-root-ca.crt` (kube-controller-manager's).
fn names<'a>(
    objects: impl IntoIterator<Item = &'a PartialObjectMetadata>,
) -> BTreeMap<String, String> {
    objects
        .into_iter()
        .map(|o| {
            (
                o.name_any().to_owned(),
                o.resource_version().unwrap_or_default().to_owned(),
            )
        })
        .filter(|(name, _)| name != "kube-root-ca.crt")
        .collect()
}

async fn metadata_on(target: &Target) -> Result<()> {
    let api = target.client()?;
    let ns = Namespace::create(&api, "metaclient").await?;
    let outcome = run(target, &ns.name).await;
    ns.delete().await?;
    outcome
}

async fn run(target: &Target, namespace: &str) -> Result<()> {
    let client = MetadataClient::for_config(target.config.clone())?;
    let config_maps = ConfigMap::api_resource(&());
    let cms = client.resource(&config_maps).namespace(namespace);
    let api = target.client()?;
    let path = format!("/api/v1/namespaces/{namespace}/configmaps");
    for name in ["a", "b"] {
        api.post(
            &path,
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "labels": {"app": "web"}}, "data": {"v": "1"}}),
        )
        .await?
        .expect(http::StatusCode::CREATED)?;
    }

    // The verbs.
    let a = cms.get("a", &GetOptions::default()).await?;
    ensure!(
        a.types == partial_type() && a.labels()["app"] == "web",
        "{a:?}"
    );
    let listed = cms.list_all(&ListOptions::default().limit(1)).await?;
    ensure!(
        names(&listed.items).keys().collect::<Vec<_>>() == ["a", "b"],
        "{listed:?}"
    );
    let patched = cms
        .patch(
            "b",
            &Patch::Merge(json!({"metadata": {"annotations": {"owner": "team-a"}}})),
            &PatchOptions::default(),
        )
        .await?;
    ensure!(patched.annotations()["owner"] == "team-a", "{patched:?}");
    let mut watch = cms
        .watch(
            &ListOptions::default()
                .resource_version(patched.resource_version().unwrap_or_default())
                .timeout_seconds(60),
        )
        .await?;
    let deleted = cms.delete("b", &DeleteOptions::default()).await?;
    ensure!(matches!(deleted, DeleteResponse::Status(_)), "{deleted:?}");
    let event = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match futures::StreamExt::next(&mut watch).await {
                Some(Ok(WatchEvent::Bookmark(_))) => continue,
                other => break other,
            }
        }
    })
    .await
    .context("no watch event")?;
    match event {
        Some(Ok(WatchEvent::Deleted(o))) => {
            ensure!(o.name_any() == "b" && o.types == partial_type(), "{o:?}")
        }
        other => anyhow::bail!("expected the deletion of b, got {other:?}"),
    }

    // The informer.
    let factory = SharedInformerFactory::builder(client.clone())
        .namespace(namespace)
        .build();
    let informer = factory
        .for_resource::<PartialObjectMetadata>(&config_maps)
        .into_informer();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    let synced = tokio::time::timeout(
        Duration::from_secs(60),
        factory.wait_for_cache_sync(&cancel),
    )
    .await
    .context("the metadata informer did not sync within a minute")?;
    ensure!(synced.all_synced(), "{synced:?}");
    let outcome = async {
        let manifest = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "by-kubectl", "namespace": namespace, "labels": {"app": "db"}}});
        match target.kubectl_create(&manifest).await {
            Some(created) => {
                created?;
            }
            None => {
                api.post(&path, &manifest)
                    .await?
                    .expect(http::StatusCode::CREATED)?;
            }
        }
        cms.patch(
            "a",
            &Patch::Merge(json!({"metadata": {"labels": {"app": "api"}}})),
            &PatchOptions::default(),
        )
        .await?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let fresh = names(&cms.list(&ListOptions::default()).await?.items);
            let cached = names(informer.get_store().list().iter().map(|o| o.as_ref()));
            if fresh == cached && fresh.contains_key("by-kubectl") {
                break;
            }
            ensure!(
                tokio::time::Instant::now() < deadline,
                "the cache {cached:?} never equalled the server {fresh:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let lister = informer.lister().namespaced(namespace);
        let a = lister.get("a")?;
        ensure!(a.labels()["app"] == "api", "{a:?}");
        ensure!(
            a.metadata.managed_fields.is_none(),
            "managedFields are stripped"
        );
        let db = lister.list(&"app=db".parse()?);
        ensure!(db.len() == 1 && db[0].name_any() == "by-kubectl", "{db:?}");
        Ok(())
    }
    .await;
    factory.shutdown().await;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metadata_client_and_informer_follow_the_server() -> Result<()> {
    let targets = Target::available().await?;
    let mut failures = Vec::new();
    for target in &targets {
        if let Err(e) = metadata_on(target).await {
            failures.push(format!("against {}: {e:#}", target.kind));
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}
