//! The differential suite. Each test runs one scenario against every available target (the
//! real kube-apiserver when `KCLIENT_E2E_KUBECONFIG` is set, and always a fresh kclient-fake)
//! and, where the scenario is differential, requires the transcripts to agree. Run
//! `cargo xtask e2e test` for the real server.

use anyhow::Result;
use kclient_e2e::scenarios::{self, run_everywhere, Scenario, DIFFERENTIAL};
use kclient_e2e::{TargetKind, Transcript};

fn differential(name: &str) -> Scenario {
    DIFFERENTIAL
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
        .expect("a differential scenario of that name")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_version() -> Result<()> {
    let only_real: Scenario = |t| {
        Box::pin(async move {
            if t.kind == TargetKind::Real {
                scenarios::server_version(t).await
            } else {
                Ok(Transcript::new())
            }
        })
    };
    run_everywhere("server_version", only_real, false).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_map_crud() -> Result<()> {
    run_everywhere("config_map_crud", differential("config_map_crud"), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_selectors_and_paging() -> Result<()> {
    let name = "list_selectors_and_paging";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_from_resource_version() -> Result<()> {
    let name = "watch_from_resource_version";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_too_old_resource_version() -> Result<()> {
    let name = "watch_too_old_resource_version";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_list() -> Result<()> {
    run_everywhere("streaming_list", differential("streaming_list"), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_run() -> Result<()> {
    let only_real: Scenario = |t| {
        Box::pin(async move {
            if t.kind == TargetKind::Real {
                scenarios::controllers_run(t).await
            } else {
                Ok(Transcript::new())
            }
        })
    };
    run_everywhere("controllers_run", only_real, false).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_bookmarks() -> Result<()> {
    run_everywhere("watch_bookmarks", differential("watch_bookmarks"), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches() -> Result<()> {
    run_everywhere("patches", differential("patches"), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_patch_semantics() -> Result<()> {
    let name = "json_patch_semantics";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strategic_merge_patch() -> Result<()> {
    let name = "strategic_merge_patch";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply() -> Result<()> {
    let name = "server_side_apply";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_subresource() -> Result<()> {
    let name = "status_subresource";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizers() -> Result<()> {
    run_everywhere("finalizers", differential("finalizers"), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_create_then_use() -> Result<()> {
    let name = "crd_create_then_use";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn derived_crds() -> Result<()> {
    run_everywhere("derived_crds", differential("derived_crds"), true).await
}

/// The server under test calling kclient's webhook server: admission (validating and
/// defaulting) and CRD conversion, the same on kube-apiserver and kclient-fake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks() -> Result<()> {
    run_everywhere("webhooks", differential("webhooks"), true).await
}

/// The derive's CEL rules, on kube-apiserver (kclient-fake does not evaluate CEL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn derived_crd_rules() -> Result<()> {
    let scenario: Scenario = |t| Box::pin(scenarios::derived_crd_rules(t));
    run_everywhere("derived_crd_rules", scenario, false).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery() -> Result<()> {
    run_everywhere("discovery", differential("discovery"), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_collection() -> Result<()> {
    let name = "garbage_collection";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes() -> Result<()> {
    run_everywhere("writes", differential("writes"), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_selector_transitions() -> Result<()> {
    let name = "watch_selector_transitions";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_accept_variants() -> Result<()> {
    let name = "metadata_accept_variants";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_custom_resource() -> Result<()> {
    let name = "metadata_custom_resource";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_watch() -> Result<()> {
    run_everywhere("metadata_watch", differential("metadata_watch"), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_built_in_kinds() -> Result<()> {
    let name = "protobuf_built_in_kinds";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_list_and_watch() -> Result<()> {
    let name = "sharded_list_and_watch";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn immutable_pods() -> Result<()> {
    run_everywhere("immutable_pods", differential("immutable_pods"), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn immutable_service_cluster_ip() -> Result<()> {
    let name = "immutable_service_cluster_ip";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn immutable_workload_selectors() -> Result<()> {
    let name = "immutable_workload_selectors";
    run_everywhere(name, differential(name), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn immutable_jobs() -> Result<()> {
    run_everywhere("immutable_jobs", differential("immutable_jobs"), true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn immutable_config_and_secrets() -> Result<()> {
    let name = "immutable_config_and_secrets";
    run_everywhere(name, differential(name), true).await
}
