//! The code generated from the fixture CRDs (`tests/crd_generated/`, kept equal to the
//! generator's output by `golden.rs`) compiles, round-trips objects losslessly, and works
//! against kclient-fake once the CRD is created through the API.

#[path = "crd_generated/mod.rs"]
#[allow(dead_code)] // a test binary uses only part of the generated API
mod crds;

use std::collections::BTreeMap;

use crds::cron_tab::{v1, v2beta1};
use crds::widget::v1alpha1;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kclient_core::{
    ApiStatus, CreateOptions, DeleteOptions, DeleteResponse, ListOptions, Patch, PatchOptions,
    Resource, ResourceExt, UpdateOptions,
};
use kclient_fake::FakeApiServer;
use kclient_rest::{Config, RestClient};
use kclient_typed::{ApplyOptions, Clientset};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

/// Decodes `value` as `T` and encodes it again: the result must be the same JSON.
fn assert_round_trip<T: Serialize + DeserializeOwned + std::fmt::Debug>(value: Value) -> T {
    let typed: T = serde_json::from_value(value.clone()).unwrap();
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        back,
        value,
        "lossy round trip through {}",
        std::any::type_name::<T>()
    );
    typed
}

fn crontab_json(name: &str) -> Value {
    json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": { "name": name, "labels": { "app": "backup" } },
        "spec": {
            "cronSpec": "*/5 * * * *",
            "image": "backup:1",
            "replicas": 2,
            "concurrencyPolicy": "Forbid",
            "port": "http",
            "timeoutSeconds": 3_000_000_000_i64,
            "cpuShare": 0.5,
            "suspend": false,
            "env": [{ "name": "MODE", "value": "full" }, { "name": "EMPTY" }],
            "labels": { "b": "2", "a": "1" },
            "resources": { "cpu": { "limit": "1" }, "memory": { "request": "1Gi" } },
            "template": { "anything": ["goes", 1, { "deep": null }] },
            "options": { "verbose": true, "unknownFlag": 7, "nested": { "kept": "yes" } },
            "schedule": { "timeZone": "UTC", "windows": [["mon", "tue"], []] }
        }
    })
}

#[test]
fn objects_round_trip_losslessly() {
    let tab: v1::CronTab = assert_round_trip(crontab_json("backup"));
    let spec = &tab.spec.as_ref().unwrap();
    assert_eq!(spec.cron_spec, "*/5 * * * *");
    assert_eq!(spec.replicas, Some(2));
    assert_eq!(
        spec.concurrency_policy,
        Some(v1::CronTabSpecConcurrencyPolicy::Forbid)
    );
    assert_eq!(spec.port, Some(IntOrString::String("http".into())));
    assert_eq!(spec.timeout_seconds, Some(3_000_000_000));
    assert_eq!(spec.env.as_ref().unwrap()[1].value, None);
    assert_eq!(
        spec.resources.as_ref().unwrap()["memory"]
            .request
            .as_deref(),
        Some("1Gi")
    );
    let options = spec.options.as_ref().unwrap();
    assert_eq!(options.verbose, Some(true));
    assert_eq!(options.unknown_fields["unknownFlag"], json!(7));

    // Status, with an empty-string enum value and an integer port.
    let mut with_status = crontab_json("backup");
    with_status["spec"]["port"] = json!(8080);
    with_status["status"] = json!({
        "replicas": 1,
        "labelSelector": "app=backup",
        "lastScheduleTime": "2025-01-01T00:00:00Z",
        "phase": "",
        "conditions": [{ "type": "Ready", "status": "True", "message": "ok" }]
    });
    let tab: v1::CronTab = assert_round_trip(with_status);
    assert_eq!(tab.spec.unwrap().port, Some(IntOrString::Int(8080)));
    assert_eq!(
        tab.status.unwrap().phase,
        Some(v1::CronTabStatusPhase::Empty)
    );

    // The deprecated version and the cluster-scoped kind.
    assert_round_trip::<v2beta1::CronTab>(json!({
        "apiVersion": "stable.example.com/v2beta1", "kind": "CronTab",
        "metadata": { "name": "b" },
        "spec": { "schedule": "@daily", "mode": "slow" }
    }));
    let widget: v1alpha1::Widget = assert_round_trip(json!({
        "apiVersion": "example.com/v1alpha1", "kind": "Widget",
        "metadata": { "name": "w" },
        "data": { "k": "v" },
        "spec": {
            "config": { "a": [1, 2], "b": { "c": null } },
            "ref": { "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "x" } },
            "ports": [80, "https"],
            "self": "me",
            "type": "round",
            "x-extra": "dash",
            "weight": 1.5
        }
    }));
    assert_eq!(widget.spec.self_.as_deref(), Some("me"));
    assert_eq!(widget.spec.r#type.as_deref(), Some("round"));
    assert_eq!(widget.spec.x_extra.as_deref(), Some("dash"));
}

#[test]
fn types_describe_their_resources() {
    let r = v1::CronTab::api_resource(&());
    assert_eq!(
        (
            r.group.as_str(),
            r.version.as_str(),
            r.kind.as_str(),
            r.plural.as_str()
        ),
        ("stable.example.com", "v1", "CronTab", "crontabs")
    );
    assert!(r.namespaced);
    assert!(!v1alpha1::Widget::api_resource(&()).namespaced);
    assert_eq!(v2beta1::CronTab::api_resource(&()).version, "v2beta1");

    // Defaults carry apiVersion and kind, so a new object serializes ready to send.
    let tab = v1::CronTab::new(
        "x",
        v1::CronTabSpec {
            cron_spec: "@hourly".into(),
            image: "i".into(),
            ..Default::default()
        },
    );
    let value = serde_json::to_value(&tab).unwrap();
    assert_eq!(value["apiVersion"], "stable.example.com/v1");
    assert_eq!(value["kind"], "CronTab");
    assert_eq!(value["metadata"]["name"], "x");
    assert_eq!(
        value["spec"],
        json!({ "cronSpec": "@hourly", "image": "i" })
    );
    // apiVersion and kind default when a document omits them.
    let bare: v1::CronTab = serde_json::from_value(json!({
        "metadata": { "name": "y" }, "spec": { "cronSpec": "c", "image": "i" }
    }))
    .unwrap();
    assert_eq!(bare.api_version, "stable.example.com/v1");
}

async fn fake_with_crds() -> (FakeApiServer, Clientset) {
    let server = FakeApiServer::builder().start().await.unwrap();
    let mut config = Config::new(server.url());
    config.qps = None;
    let clientset = Clientset::from_client(RestClient::new(config).unwrap());
    let crds = clientset.apiextensions_v1().custom_resource_definitions();
    for file in ["crontab.yaml", "widget.yaml"] {
        let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
        let crd: CustomResourceDefinition =
            serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        crds.create(&crd, &CreateOptions::default()).await.unwrap();
    }
    (server, clientset)
}

#[tokio::test]
async fn generated_clients_work_against_the_fake() {
    let (_server, clientset) = fake_with_crds().await;
    let tabs = v1::cron_tabs(&clientset, "default");

    let tab: v1::CronTab = serde_json::from_value(crontab_json("backup")).unwrap();
    let created = tabs.create(&tab, &CreateOptions::default()).await.unwrap();
    assert!(created.uid().is_some());
    assert_eq!(created.spec, tab.spec, "the spec comes back as sent");

    let listed = tabs
        .list(&ListOptions::default().labels("app=backup"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    let all = v1::cron_tabs(&clientset, "")
        .list_all(&ListOptions::default())
        .await
        .unwrap();
    assert_eq!(all.items.len(), 1);

    // Status through the status subresource.
    let mut status = created.clone();
    status.status = Some(v1::CronTabStatus {
        replicas: Some(2),
        label_selector: Some("app=backup".into()),
        phase: Some(v1::CronTabStatusPhase::Running),
        ..Default::default()
    });
    let updated = tabs
        .update_status(&status, &UpdateOptions::default())
        .await
        .unwrap();
    assert_eq!(
        updated.status.as_ref().unwrap().phase,
        Some(v1::CronTabStatusPhase::Running)
    );

    // Scale through the scale subresource the CRD declares.
    let scale = tabs.get_scale("backup").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    tabs.scale_to("backup", 5).await.unwrap();
    assert_eq!(
        tabs.get("backup").await.unwrap().spec.unwrap().replicas,
        Some(5)
    );

    // Patches and server-side apply.
    let patched = tabs
        .patch(
            "backup",
            &Patch::Merge(json!({ "spec": { "suspend": true } })),
            &PatchOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.unwrap().suspend, Some(true));
    let applied = tabs
        .apply(
            "backup",
            &json!({
                "apiVersion": "stable.example.com/v1", "kind": "CronTab",
                "metadata": { "name": "backup" },
                "spec": { "cronSpec": "@daily", "image": "backup:2" }
            }),
            &ApplyOptions::new("crd-test").force(),
        )
        .await
        .unwrap();
    assert_eq!(applied.spec.as_ref().unwrap().cron_spec, "@daily");

    // Another served version reads its own objects.
    let betas = v2beta1::cron_tabs(&clientset, "default");
    let beta = v2beta1::CronTab::new(
        "beta",
        v2beta1::CronTabSpec {
            schedule: Some("@weekly".into()),
            mode: Some(v2beta1::CronTabSpecMode::Fast),
            ..Default::default()
        },
    );
    betas
        .create(&beta, &CreateOptions::default())
        .await
        .unwrap();
    let got = betas.get("beta").await.unwrap();
    // Stored in v1, whose schema has no `mode`: the server prunes it (None conversion).
    let spec = got.spec.unwrap();
    assert_eq!(spec.schedule.as_deref(), Some("@weekly"));
    assert_eq!(spec.mode, None);

    // A custom resource deleted at once is answered with a Status, as kube-apiserver does.
    let deleted = tabs
        .delete("backup", &DeleteOptions::default())
        .await
        .unwrap();
    assert!(matches!(deleted, DeleteResponse::Status(ref s) if s.is_success()));
    assert!(tabs.get("backup").await.unwrap_err().is_not_found());
}

#[tokio::test]
async fn cluster_scoped_custom_resources() {
    let (_server, clientset) = fake_with_crds().await;
    let widgets = v1alpha1::widgets(&clientset);
    let mut widget = v1alpha1::Widget::new(
        "w1",
        v1alpha1::WidgetSpec {
            ports: Some(vec![
                IntOrString::Int(80),
                IntOrString::String("https".into()),
            ]),
            // `additionalProperties: true` keeps scalars and lists; the fields of a nested
            // object have no schema, so the server prunes them (kube-apiserver v1.37 does,
            // with an `unknown field` warning).
            config: Some(BTreeMap::from([
                ("a".to_owned(), json!(["b", 1])),
                ("nested".to_owned(), json!({"b": [1]})),
            ])),
            ..Default::default()
        },
    );
    widget.data = Some(BTreeMap::from([("k".to_owned(), "v".to_owned())]));
    let created = widgets
        .create(&widget, &CreateOptions::default())
        .await
        .unwrap();
    assert_eq!(created.namespace(), None);
    let mut pruned = widget.spec.clone();
    if let Some(config) = pruned.config.as_mut() {
        config.insert("nested".to_owned(), json!({}));
    }
    assert_eq!(created.spec, pruned);
    assert_eq!(created.data, widget.data);
    let listed = widgets.list(&ListOptions::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    widgets
        .delete("w1", &DeleteOptions::default())
        .await
        .unwrap();
    assert!(widgets.get_opt("w1").await.unwrap().is_none());
}

/// The generated informer accessor: a factory over the Clientset caches the custom
/// resources, and its lister finds them.
#[tokio::test]
async fn generated_informers_cache_custom_resources() {
    let (_server, clientset) = fake_with_crds().await;
    let tab: v1::CronTab = serde_json::from_value(crontab_json("nightly")).unwrap();
    v1::cron_tabs(&clientset, "default")
        .create(&tab, &CreateOptions::default())
        .await
        .unwrap();
    let factory = kclient_cache::SharedInformerFactory::new(clientset, std::time::Duration::ZERO);
    let tabs = v1::cron_tabs_informer(&factory);
    let informer = tabs.informer();
    let cancel = tokio_util::sync::CancellationToken::new();
    factory.start(&cancel);
    assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());
    assert_eq!(informer.get_store().len(), 1);
    let cached = tabs.lister().namespaced("default").get("nightly").unwrap();
    assert_eq!(cached.spec, tab.spec);
    factory.shutdown().await;
}
