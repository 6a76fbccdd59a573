//! kube-rs as the client (issue 49): the `e2e/peers/kube-rs` program runs kube-runtime's
//! `finalizer()` step by step on a ConfigMap, then a kube-runtime `Controller` that adds,
//! applies and cleans up through it, against the target; what it saw is the transcript. On
//! kube-apiserver and kclient-fake they must be equal: kclient-fake is a test server for
//! kube-rs operators too.

use anyhow::{ensure, Context, Result};

use super::Namespace;
use crate::target::Target;
use crate::transcript::Transcript;

/// Runs the kube-rs program against `target` in a namespace of its own (an empty transcript
/// when kube-rs is skipped).
pub async fn kube_rs_finalizer(target: &Target) -> Result<Transcript> {
    let mut t = Transcript::new();
    let Some(program) = crate::peers::kube_rs().await? else {
        return Ok(t);
    };
    let client = target.client()?;
    let ns = Namespace::create(&client, "kube-rs").await?;
    let output = tokio::process::Command::new(&program)
        .arg("--kubeconfig")
        .arg(&target.kubeconfig)
        .args(["--namespace", &ns.name])
        .output()
        .await
        .with_context(|| format!("could not run {}", program.display()))?;
    ensure!(
        output.status.success(),
        "the kube-rs program failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let steps: Vec<(String, serde_json::Value)> = serde_json::from_slice(&output.stdout)
        .with_context(|| {
            format!(
                "the kube-rs program printed no transcript: {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })?;
    // What must hold on any server, so that a run against the fake alone fails too.
    let seen = |step: &str| {
        steps
            .iter()
            .find(|(s, _)| s == step)
            .map(|(_, v)| v.clone())
    };
    let first = seen("the first reconcile adds the finalizer").unwrap_or_default();
    ensure!(
        first["result"].is_string(),
        "kube-runtime's finalizer() could not add its finalizer: {first}"
    );
    for step in [
        "the controller added its finalizer and applied",
        "the controller cleaned up and the object went",
    ] {
        ensure!(
            seen(step) == Some(serde_json::Value::Bool(true)),
            "{step}: not within the kube-rs program's bound"
        );
    }
    for (step, seen) in steps {
        t.record(step, seen);
    }
    ns.delete().await?;
    Ok(t)
}
