//! The e2e smoke suite. Each test runs one scenario against every available target and, where
//! the scenario is differential and there are two targets, requires their transcripts to
//! agree. Without `KCLIENT_E2E_KUBECONFIG` (and no fake target yet) each test says so and
//! passes: run `cargo xtask e2e test` for the real thing.

use anyhow::{Context, Result};
use kclient_e2e::scenarios::{self, Scenario, DIFFERENTIAL};
use kclient_e2e::{Target, TargetKind, Transcript};

/// Runs `scenario` on every target; compares the transcripts when `differential`.
async fn run_everywhere(name: &str, scenario: Scenario, differential: bool) -> Result<()> {
    let targets = Target::available()?;
    if targets.is_empty() {
        eprintln!("kclient-e2e: {name}: SKIPPED (no target)");
        return Ok(());
    }
    let mut transcripts: Vec<(TargetKind, Transcript)> = Vec::new();
    for target in &targets {
        let transcript = scenario(target)
            .await
            .with_context(|| format!("scenario {name} against {}", target.kind))?;
        eprintln!("kclient-e2e: {name} against {}:\n{transcript}", target.kind);
        transcripts.push((target.kind, transcript));
    }
    if differential {
        if let [(a_kind, a), (b_kind, b), ..] = transcripts.as_slice() {
            if let Some(difference) = a.first_difference(b) {
                anyhow::bail!("{name}: {a_kind} and {b_kind} disagree at {difference}");
            }
        }
    }
    Ok(())
}

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
