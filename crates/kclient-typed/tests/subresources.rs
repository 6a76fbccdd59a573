//! The status and scale subresources against kclient-fake, and the pod extensions (logs,
//! eviction, binding).

use crate::common;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet, StatefulSet};
use k8s_openapi::api::autoscaling::v1::{Scale, ScaleSpec};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kclient_core::{ApiStatus, CreateOptions, Patch, PatchOptions, ResourceExt, UpdateOptions};
use kclient_typed::{ApplyOptions, HasScale, LogOptions, ResourceClient};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::json;

use common::{deployment, fake, from_json, meta, pod_template, SpecOf};

fn replica_set(name: &str, replicas: i32) -> ReplicaSet {
    from_json(json!({
        "metadata": meta(name, &[("app", name)]),
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": pod_template(name),
        }
    }))
}

fn stateful_set(name: &str, replicas: i32) -> StatefulSet {
    from_json(json!({
        "metadata": meta(name, &[("app", name)]),
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": pod_template(name),
            "serviceName": name,
        }
    }))
}

/// Every scale call on one workload kind: get, update, patch and `scale_to`.
async fn exercise_scale<K>(
    client: &ResourceClient<K>,
    object: K,
    replicas_of: fn(&K) -> Option<i32>,
) where
    K: HasScale + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    let name = object.name_any().to_owned();
    client
        .create(&object, &CreateOptions::default())
        .await
        .unwrap();

    let scale = client.get_scale(&name).await.unwrap();
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(1));
    assert_eq!(scale.metadata.name.as_deref(), Some(name.as_str()));

    let wanted = Scale {
        metadata: scale.metadata.clone(),
        spec: Some(ScaleSpec { replicas: Some(4) }),
        ..Scale::default()
    };
    let updated = client
        .update_scale(&name, &wanted, &UpdateOptions::default())
        .await
        .unwrap();
    assert_eq!(updated.spec.and_then(|s| s.replicas), Some(4));
    assert_eq!(replicas_of(&client.get(&name).await.unwrap()), Some(4));

    let patch = Patch::Merge(json!({ "spec": { "replicas": 2 } }));
    let patched = client
        .patch_scale(&name, &patch, &PatchOptions::default())
        .await
        .unwrap();
    assert_eq!(patched.spec.and_then(|s| s.replicas), Some(2));

    let scaled = client.scale_to(&name, 0).await.unwrap();
    // `ScaleSpec.replicas` is Go's `int32` with `omitempty`: zero is left out, as
    // kube-apiserver's JSON leaves it out, and protobuf (which the typed client reads) says 0.
    assert_eq!(scaled.spec.and_then(|s| s.replicas).unwrap_or(0), 0);
    assert_eq!(replicas_of(&client.get(&name).await.unwrap()), Some(0));

    let missing = client.get_scale("missing").await.unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
}

#[tokio::test]
async fn deployment_scale() {
    let (_server, clientset) = fake().await;
    exercise_scale(
        &clientset.namespaced::<Deployment>("default"),
        deployment("web", 1),
        |d| d.spec_of().and_then(|s| s.replicas),
    )
    .await;
}

#[tokio::test]
async fn replica_set_scale() {
    let (_server, clientset) = fake().await;
    exercise_scale(
        &clientset.namespaced::<ReplicaSet>("default"),
        replica_set("web", 1),
        |r| r.spec_of().and_then(|s| s.replicas),
    )
    .await;
}

#[tokio::test]
async fn stateful_set_scale() {
    let (_server, clientset) = fake().await;
    exercise_scale(
        &clientset.namespaced::<StatefulSet>("default"),
        stateful_set("db", 1),
        |s| s.spec_of().and_then(|s| s.replicas),
    )
    .await;
}

#[tokio::test]
async fn status_is_written_only_through_the_subresource() {
    let (_server, clientset) = fake().await;
    let deployments = clientset.namespaced::<Deployment>("default");
    let created = deployments
        .create(&deployment("web", 1), &CreateOptions::default())
        .await
        .unwrap();

    // update_status writes the status...
    let mut with_status = created.clone();
    with_status.status = Some(DeploymentStatus {
        replicas: Some(1),
        ready_replicas: Some(1),
        ..DeploymentStatus::default()
    });
    let updated = deployments
        .update_status(&with_status, &UpdateOptions::default())
        .await
        .unwrap();
    assert_eq!(updated.status.as_ref().unwrap().ready_replicas, Some(1));

    // ...and a plain update leaves it alone.
    let mut main = updated.clone();
    main.status.as_mut().unwrap().ready_replicas = Some(7);
    main.metadata.labels = Some(BTreeMap::from([("tier".into(), "fe".into())]));
    let after = deployments
        .update(&main, &UpdateOptions::default())
        .await
        .unwrap();
    assert_eq!(after.status.as_ref().unwrap().ready_replicas, Some(1));
    assert_eq!(after.labels()["tier"], "fe");

    // patch_status with a merge patch.
    let patched = deployments
        .patch_status(
            "web",
            &Patch::Merge(json!({ "status": { "availableReplicas": 1 } })),
            &PatchOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(patched.status.as_ref().unwrap().available_replicas, Some(1));

    // apply_status as a status controller would.
    let applied = deployments
        .apply_status(
            "web",
            &json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": { "name": "web" },
                "status": { "observedGeneration": 1, "updatedReplicas": 1 }
            }),
            &ApplyOptions::new("status-controller").force(),
        )
        .await
        .unwrap();
    assert_eq!(applied.status.as_ref().unwrap().updated_replicas, Some(1));
    assert_eq!(applied.spec, created.spec, "the spec is untouched");
}

fn pod(name: &str) -> Pod {
    Pod {
        metadata: meta(name, &[]),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some("busybox".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

#[tokio::test]
async fn pod_logs_from_the_fake() {
    let (server, clientset) = fake().await;
    let pods = clientset.namespaced::<Pod>("default");
    pods.create(&pod("web-0"), &CreateOptions::default())
        .await
        .unwrap();
    server.set_pod_log("default", "web-0", "app", "line 1\nline 2\n");
    let text = pods.logs("web-0", &LogOptions::default()).await.unwrap();
    assert_eq!(text, "line 1\nline 2\n");
}

#[tokio::test]
async fn pod_eviction_against_the_fake() {
    let (_server, clientset) = fake().await;
    let pods = clientset.namespaced::<Pod>("default");
    pods.create(&pod("web-0"), &CreateOptions::default())
        .await
        .unwrap();
    pods.evict("web-0", None).await.unwrap();
    // The fake has no kubelet: an evicted pod is deleted at once.
    assert!(pods.get_opt("web-0").await.unwrap().is_none());
}

#[tokio::test]
async fn pod_binding_against_the_fake() {
    let (_server, clientset) = fake().await;
    let pods = clientset.namespaced::<Pod>("default");
    pods.create(&pod("web-0"), &CreateOptions::default())
        .await
        .unwrap();
    pods.bind_to_node("web-0", "node-1").await.unwrap();
    let bound = pods.get("web-0").await.unwrap();
    assert_eq!(bound.spec.unwrap().node_name.as_deref(), Some("node-1"));
}
