//! The helpers operator authors reach for daily, against kclient-fake: create_or_update and
//! create_or_patch (controller-runtime's controllerutil tests of CreateOrUpdate and
//! CreateOrPatch), owner references (SetOwnerReference, RemoveOwnerReference,
//! RemoveControllerReference, HasOwnerReference), finalizers written through them.

use std::convert::Infallible;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_controller::finalizer::{add_finalizer, contains_finalizer, remove_finalizer};
use kclient_controller::owner::{
    controller_of, has_controller_reference, has_owner_reference, remove_controller_reference,
    remove_owner_reference, set_controller_reference, set_controller_reference_with_options,
    set_owner_reference, OwnerReferenceError, OwnerReferenceOptions,
};
use kclient_controller::{create_or_patch, create_or_update, CreateOrUpdateError, OperationResult};
use kclient_core::{CreateOptions, UpdateOptions};
use kclient_fake::FakeApiServer;

use crate::support::{clientset, config_map, deployment};

#[derive(Debug, thiserror::Error)]
#[error("refused")]
struct Refused;

#[tokio::test]
async fn create_or_update_creates_updates_and_leaves_alone() {
    let server = FakeApiServer::start().await.unwrap();
    let client = clientset(&server).core_v1().config_maps("default");
    let set = |value: &'static str| {
        move |cm: &mut ConfigMap| {
            cm.data
                .get_or_insert_default()
                .insert("k".into(), value.into());
            Ok::<(), Infallible>(())
        }
    };
    let (created, result) = create_or_update(&client, config_map("default", "c", &[]), set("1"))
        .await
        .unwrap();
    assert_eq!(
        (result, created.data.unwrap()["k"].as_str()),
        (OperationResult::Created, "1")
    );
    let (_, result) = create_or_update(&client, config_map("default", "c", &[]), set("1"))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Unchanged);
    let (updated, result) = create_or_update(&client, config_map("default", "c", &[]), set("2"))
        .await
        .unwrap();
    assert_eq!(
        (result, updated.data.unwrap()["k"].as_str()),
        (OperationResult::Updated, "2")
    );
    assert_eq!(result.to_string(), "updated");

    let renamed = create_or_update(
        &client,
        config_map("default", "c", &[]),
        |cm: &mut ConfigMap| {
            cm.metadata.name = Some("other".into());
            Ok::<(), Infallible>(())
        },
    )
    .await
    .unwrap_err();
    assert_eq!(
        renamed.to_string(),
        "MutateFn cannot mutate object name and/or object namespace"
    );
    let failed = create_or_update(
        &client,
        config_map("default", "c", &[]),
        |_: &mut ConfigMap| Err(Refused),
    )
    .await;
    assert!(matches!(failed, Err(CreateOrUpdateError::Mutate(Refused))));
}

#[tokio::test]
async fn create_or_patch_patches_the_object_and_its_status_apart() {
    let server = FakeApiServer::start().await.unwrap();
    let client = clientset(&server).apps_v1().deployments("default");
    let replicas = |n: i32| {
        move |d: &mut Deployment| {
            d.spec.replicas = Some(n);
            Ok::<(), Infallible>(())
        }
    };
    let (_, result) = create_or_patch(&client, deployment("default", "web", 1), replicas(1))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Created);
    let (_, result) = create_or_patch(&client, deployment("default", "web", 1), replicas(1))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Unchanged);
    let (patched, result) = create_or_patch(&client, deployment("default", "web", 1), replicas(3))
        .await
        .unwrap();
    assert_eq!(
        (result, patched.spec.replicas),
        (OperationResult::Updated, Some(3))
    );

    let ready = |n: i32| {
        move |d: &mut Deployment| {
            d.status.get_or_insert_default().ready_replicas = Some(n);
            Ok::<(), Infallible>(())
        }
    };
    let (status_only, result) = create_or_patch(&client, deployment("default", "web", 1), ready(2))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::UpdatedStatusOnly);
    assert_eq!(status_only.status.unwrap().ready_replicas, Some(2));
    let (both, result) = create_or_patch(
        &client,
        deployment("default", "web", 1),
        |d: &mut Deployment| {
            d.spec.replicas = Some(4);
            d.status.get_or_insert_default().ready_replicas = Some(4);
            Ok::<(), Infallible>(())
        },
    )
    .await
    .unwrap();
    assert_eq!(result, OperationResult::UpdatedStatus);
    assert_eq!(
        (both.spec.replicas, both.status.unwrap().ready_replicas),
        (Some(4), Some(4))
    );
}

fn stored(d: &mut Deployment, uid: &str) {
    d.metadata.uid = Some(uid.into());
}

#[tokio::test]
async fn owner_references_set_removed_and_written() {
    let server = FakeApiServer::start().await.unwrap();
    let clientset = clientset(&server);
    let deployments = clientset.apps_v1().deployments("default");
    let web = deployments
        .create(&deployment("default", "web", 1), &CreateOptions::default())
        .await
        .unwrap();
    let mut api = deployment("default", "api", 1);
    stored(&mut api, "uid-api");

    let mut cm = config_map("default", "settings", &[]);
    set_owner_reference(&web, &mut cm).unwrap();
    set_owner_reference(&api, &mut cm).unwrap();
    assert!(has_owner_reference(&cm, &web) && has_owner_reference(&cm, &api));
    assert!(
        !has_controller_reference(&cm),
        "owner references are not controller references"
    );
    let refs = cm.metadata.owner_references.clone().unwrap();
    assert_eq!(
        (refs[0].controller, refs[0].block_owner_deletion),
        (None, None)
    );

    // A controller reference beside them, not blocking a foreground deletion.
    set_controller_reference_with_options(
        &web,
        &mut cm,
        OwnerReferenceOptions {
            block_owner_deletion: Some(false),
        },
    )
    .unwrap();
    assert_eq!(
        controller_of(&cm).unwrap().block_owner_deletion,
        Some(false)
    );
    assert!(matches!(
        remove_controller_reference(&api, &mut cm),
        Err(OwnerReferenceError::NotTheController { .. })
    ));
    remove_controller_reference(&web, &mut cm).unwrap();
    assert!(!has_controller_reference(&cm) && !has_owner_reference(&cm, &web));
    remove_owner_reference(&api, &mut cm).unwrap();
    assert!(matches!(
        remove_owner_reference(&api, &mut cm),
        Err(OwnerReferenceError::NoOwnerReferences { .. })
    ));

    // Written: the server keeps them, and the garbage collector follows them.
    set_controller_reference(&web, &mut cm).unwrap();
    add_finalizer(&mut cm, "example.com/keep");
    let config_maps = clientset.core_v1().config_maps("default");
    let written = config_maps
        .create(&cm, &CreateOptions::default())
        .await
        .unwrap();
    assert!(contains_finalizer(&written, "example.com/keep"));
    assert_eq!(
        controller_of(&written).unwrap().uid,
        web.metadata.uid.clone().unwrap()
    );
    let mut without = written.clone();
    assert!(remove_finalizer(&mut without, "example.com/keep"));
    let updated = config_maps
        .update(&without, &UpdateOptions::default())
        .await
        .unwrap();
    assert!(!contains_finalizer(&updated, "example.com/keep"));
}
