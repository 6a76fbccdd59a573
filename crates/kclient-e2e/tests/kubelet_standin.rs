//! kube-apiserver's own proxying of exec, attach and port-forward, to a kubelet stand-in
//! (kclient-fake's `FakeKubelet`, registered as a Node whose status names its address and
//! port): a client's WebSocket is translated by kube-apiserver into SPDY to the kubelet
//! (exec, attach: its stream translator) or tunnelled to it unchanged (port-forward), as on a
//! cluster. kclient's clients and, when there is one, the real kubectl run against it.
//!
//! Needs the real server (`KCLIENT_E2E_KUBECONFIG`, set by `cargo xtask e2e test`); without it
//! the test says so and skips.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use k8s_openapi::api::core::v1::{Node, Pod};
use kclient_core::{CreateOptions, DeleteOptions, UpdateOptions};
use kclient_e2e::scenarios::Namespace;
use kclient_e2e::Target;
use kclient_fake::{echo_port, FakeKubelet, Process};
use kclient_streaming::remotecommand::ExecOptions;
use kclient_tools::retry::{retry_on_conflict, DEFAULT_RETRY};
use kclient_typed::Clientset;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `sh -c "echo out; echo err >&2; exit 3"`, and `cat`.
async fn process(mut process: Process) -> i32 {
    match process.request.command.last().map(String::as_str) {
        Some("cat") => {
            let mut input = Vec::new();
            let _ = process.stdin.read_to_end(&mut input).await;
            let _ = process.stdout.write_all(&input).await;
            0
        }
        _ => {
            let _ = process.stdout.write_all(b"out\n").await;
            let _ = process.stderr.write_all(b"err\n").await;
            3
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_apiserver_proxies_exec_and_port_forward_to_a_kubelet_stand_in() -> Result<()> {
    let Some(target) = Target::real_from_env()? else {
        eprintln!(
            "kclient-e2e kubelet_standin: skipping: {} is not set (run `cargo xtask e2e test`)",
            kclient_e2e::target::KUBECONFIG_ENV
        );
        return Ok(());
    };
    let kubelet = FakeKubelet::start().await?;
    kubelet.set_exec_handler(process);
    kubelet.set_port_forward_handler(echo_port);
    let clientset = Clientset::new(target.config.clone())?;
    let nodes = clientset.core_v1().nodes();
    let node_name = format!("kclient-e2e-kubelet-{}", std::process::id());
    let node: Node = serde_json::from_value(kubelet.node(&node_name))?;
    nodes.create(&node, &CreateOptions::default()).await?;
    let outcome = with_node(&target, &clientset, &node_name, node).await;
    let _ = nodes.delete(&node_name, &DeleteOptions::default()).await;
    outcome
}

async fn with_node(
    target: &Target,
    clientset: &Clientset,
    node_name: &str,
    node: Node,
) -> Result<()> {
    // kube-controller-manager's node controllers write the new Node too (taints,
    // annotations): the status goes on a fresh read, again after a conflict.
    let nodes = clientset.core_v1().nodes();
    retry_on_conflict(DEFAULT_RETRY, || async {
        let mut current = nodes.get(node_name).await?;
        current.status = node.status.clone();
        nodes
            .update_status(&current, &UpdateOptions::default())
            .await
    })
    .await
    .context("the node's status")?;
    let ns = Namespace::create(&target.client()?, "kubelet").await?;
    let outcome = in_namespace(target, clientset, node_name, &ns.name).await;
    ns.delete().await?;
    outcome
}

async fn in_namespace(
    target: &Target,
    clientset: &Clientset,
    node_name: &str,
    namespace: &str,
) -> Result<()> {
    let pods = clientset.core_v1().pods(namespace);
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"nodeName": node_name, "containers": [{"name": "app", "image": "busybox"}]},
    }))?;
    let mut pod = pods.create(&pod, &CreateOptions::default()).await?;
    let mut status = pod.status.take().unwrap_or_default();
    status.phase = Some("Running".into());
    pod.status = Some(status);
    pods.update_status(&pod, &UpdateOptions::default()).await?;

    // Exec through kube-apiserver's stream translator (WebSocket v5 to it, SPDY to the kubelet).
    let options = ExecOptions::command(["sh", "-c", "echo out; echo err >&2; exit 3"])
        .stdout()
        .stderr();
    let output = pods.exec("web", &options)?.output(None).await?;
    ensure!(
        (
            output.stdout.as_slice(),
            output.stderr.as_slice(),
            output.exit_code
        ) == (&b"out\n"[..], &b"err\n"[..], 3),
        "{output:?}"
    );
    eprintln!(
        "kclient-e2e kubelet_standin: exec through {}: {output:?}",
        target.server
    );
    let input = b"through kube-apiserver\n".repeat(1000);
    let options = ExecOptions::command(["cat"]).stdin().stdout();
    let output = pods.exec("web", &options)?.output(Some(&input)).await?;
    ensure!(
        output.stdout == input && output.exit_code == 0,
        "cat gave {} bytes, exit {}",
        output.stdout.len(),
        output.exit_code
    );

    // Port-forward through its tunnel (SPDY through the WebSocket, passed to the kubelet).
    let forward = pods.forward("web", 0, 80).await?;
    let mut conn =
        tokio::net::TcpStream::connect(forward.local_addr(80).context("address")?).await?;
    conn.write_all(b"ping").await?;
    conn.shutdown().await?;
    let mut back = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), conn.read_to_end(&mut back)).await??;
    ensure!(back == b"ping", "{back:?}");
    forward.stop().await?;

    // The real kubectl, the same way.
    if let Some(said) = target
        .kubectl(&["exec", "-n", namespace, "web", "--", "sh", "-c", "cat"])
        .await
    {
        ensure!(
            said?.is_empty(),
            "kubectl exec with no stdin prints nothing"
        );
    }
    Ok(())
}
