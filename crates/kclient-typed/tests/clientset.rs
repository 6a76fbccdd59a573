//! The generated Clientset: accessors per group-version and resource, over one shared
//! transport, against kclient-fake.

use crate::common;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{Namespace, Node};
use kclient_core::{CreateOptions, ListOptions, Resource, ResourceExt};
use kclient_rest::Config;
use kclient_typed::core_v1::CoreV1Client;
use kclient_typed::{Clientset, KUBERNETES_VERSION};

use common::{config_map, deployment, fake, meta, pod_template};

#[tokio::test]
async fn accessors_address_their_resources() {
    let (_server, clientset) = fake().await;

    let cm = clientset
        .core_v1()
        .config_maps("default")
        .create(&config_map("settings", &[], "x"), &CreateOptions::default())
        .await
        .unwrap();
    assert_eq!(cm.namespace(), Some("default"));
    let listed = clientset
        .core_v1()
        .config_maps("")
        .list(&ListOptions::default())
        .await
        .unwrap();
    assert!(listed.iter().any(|c| c.name_any() == "settings"));

    let d = clientset
        .apps_v1()
        .deployments("default")
        .create(&deployment("web", 2), &CreateOptions::default())
        .await
        .unwrap();
    assert_eq!(d.name_any(), "web");
    let scale = clientset
        .apps_v1()
        .deployments("default")
        .get_scale("web")
        .await
        .unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));

    let job = Job {
        metadata: meta("once", &[]),
        spec: Some(JobSpec {
            template: pod_template("once"),
            ..JobSpec::default()
        }),
        ..Job::default()
    };
    clientset
        .batch_v1()
        .jobs("default")
        .create(&job, &CreateOptions::default())
        .await
        .unwrap();
    assert!(clientset
        .batch_v1()
        .jobs("default")
        .get("once")
        .await
        .is_ok());

    let lease = Lease {
        metadata: meta("leader", &[]),
        spec: Some(LeaseSpec {
            holder_identity: Some("me".into()),
            ..LeaseSpec::default()
        }),
    };
    let created = clientset
        .coordination_v1()
        .leases("kube-system")
        .create(&lease, &CreateOptions::default())
        .await
        .unwrap();
    assert_eq!(created.spec.unwrap().holder_identity.as_deref(), Some("me"));

    // Cluster-scoped resources take no namespace.
    let nodes = clientset.core_v1().nodes();
    assert_eq!(nodes.api_resource(), &Node::api_resource(&()));
    nodes
        .create(
            &Node {
                metadata: meta("n1", &[]),
                ..Node::default()
            },
            &CreateOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        nodes
            .list(&ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let namespaces = clientset.core_v1().namespaces();
    assert!(namespaces.namespace().is_none());
    assert_eq!(
        namespaces.get("default").await.unwrap().name_any(),
        "default"
    );
    let missing: Option<Namespace> = namespaces.get_opt("nope").await.unwrap();
    assert_eq!(missing, None);
}

#[tokio::test]
async fn every_client_shares_one_transport_and_rate_limiter() {
    let clientset = Clientset::new(Config::new("http://127.0.0.1:1")).unwrap();
    let core = clientset.core_v1();
    assert!(
        clientset.rest_client().rate_limiter().is_some(),
        "client-go's 5 QPS / 10 burst by default"
    );
    for other in [
        clientset.apps_v1().rest_client(),
        clientset.batch_v1().rest_client(),
        clientset.rbac_v1().rest_client(),
        core.pods("a").rest_client(),
        clientset.networking_v1().ingresses("b").rest_client(),
    ] {
        assert!(core.rest_client().shares_state_with(other));
    }
    let from_rest = CoreV1Client::new(clientset.rest_client().clone());
    assert!(from_rest
        .rest_client()
        .shares_state_with(clientset.rest_client()));
    assert_eq!(
        KUBERNETES_VERSION,
        if cfg!(feature = "v1_35") {
            "1.35"
        } else if cfg!(feature = "v1_36") {
            "1.36"
        } else {
            "1.37"
        },
        "the version the features pick, 1.37 by default"
    );
}

#[test]
fn accessors_pick_type_scope_and_plural() {
    let clientset = Clientset::new(Config::new("http://127.0.0.1:1")).unwrap();
    let pods = clientset.core_v1().pods("prod");
    assert_eq!(pods.namespace(), Some("prod"));
    assert_eq!(pods.api_resource().plural, "pods");
    let policies = clientset.networking_v1().network_policies("prod");
    assert_eq!(policies.api_resource().gvk().kind, "NetworkPolicy");
    let crb = clientset.rbac_v1().cluster_role_bindings();
    assert!(!crb.api_resource().namespaced);
    assert_eq!(crb.api_resource().group, "rbac.authorization.k8s.io");
    let reviews = clientset.authorization_v1().self_subject_access_reviews();
    assert_eq!(reviews.api_resource().plural, "selfsubjectaccessreviews");
    let crds = clientset.apiextensions_v1().custom_resource_definitions();
    assert_eq!(crds.api_resource().plural, "customresourcedefinitions");
    let endpoints = clientset.core_v1().endpoints("prod");
    assert_eq!(endpoints.api_resource().plural, "endpoints");
}
