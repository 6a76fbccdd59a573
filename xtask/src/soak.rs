//! `cargo xtask soak [--minutes N] [--objects N] [--heap]`: kclient-bench's `soak` scenario in a
//! release build — an informer factory and a controller over `--objects` parents (10,000 by
//! default) against kclient-fake (in a process of its own, with the churn and a fault every
//! 30 s), for `--minutes` (60 by default), sampled every 10 s — printing the result (JSON) and
//! a summary of how the client's resident set, threads, descriptors and tasks grew after the
//! warm-up (issue 46; docs/testing.md records a run). The test command runs a short soak as
//! an integration test of kclient-bench (`tests/soak.rs`). `--heap` builds it with a counting allocator, so that each
//! sample has the heap's live bytes beside the resident set (a leak grows both; memory the
//! allocator keeps grows only the resident set).

use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::{cargo, step, target_dir};

pub(crate) fn run(args: &[String]) -> Result<()> {
    let (mut minutes, mut objects, mut heap) = (60u64, 10_000u64, false);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--heap" {
            heap = true;
            continue;
        }
        let value = it
            .next()
            .with_context(|| format!("{flag} needs a value"))?
            .parse::<u64>()
            .with_context(|| format!("{flag} takes a whole number"))?;
        match flag.as_str() {
            "--minutes" => minutes = value.max(1),
            "--objects" => objects = value.max(1),
            other => {
                bail!("unknown option {other} (soak takes --minutes N, --objects N and --heap)")
            }
        }
    }
    let mut build = cargo();
    build.args(["build", "--release", "-p", "kclient-bench"]);
    if heap {
        // The heap's live bytes in every sample (a counting allocator: a little slower).
        build.args(["--features", "kclient-bench/heap-count"]);
    }
    step("build kclient-bench (release)", build)?;
    let bench = target_dir()?.join("release").join("kclient-bench");
    eprintln!("==> soak: {objects} objects for {minutes} min");
    let output = Command::new(&bench)
        .args(["soak", "--objects", &objects.to_string()])
        .args(["--seconds", &(minutes * 60).to_string()])
        .args(["--sample", "10", "--fault-every", "30"])
        .output()
        .with_context(|| format!("could not run {}", bench.display()))?;
    if !output.status.success() {
        bail!(
            "the soak failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let result: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("the soak's result is not JSON")?;
    println!("{result}");
    let figure = |name: &str| {
        format!(
            "{} after the warm-up, {} at most after it",
            result[name]["after_warm_up"], result[name]["highest_after"]
        )
    };
    eprintln!(
        "<== soak: {} writes, {} faults, {} reconciles; resident set {} MiB after the warm-up, \
         {} MiB at the end ({}%); threads {}; descriptors {}; tasks {}; {} parents at the end, \
         {} of them not converged",
        result["writes"],
        result["faults"],
        result["reconciles"],
        result["rss_mib_after_warm_up"],
        result["rss_mib_at_end"],
        result["rss_growth_pct"],
        figure("threads"),
        figure("fds"),
        figure("tasks"),
        result["parents_at_end"],
        result["unconverged_at_end"],
    );
    eprintln!(
        "<== soak: the server's process (not judged): resident set {} MiB after the warm-up, {} \
         MiB at the end ({}%)",
        result["server_rss_mib_after_warm_up"],
        result["server_rss_mib_at_end"],
        result["server_rss_growth_pct"]
    );
    if heap {
        eprintln!(
            "<== soak: heap {} MiB after the warm-up, {} MiB at the end ({}%)",
            result["heap_mib_after_warm_up"], result["heap_mib_at_end"], result["heap_growth_pct"]
        );
    }
    if result["unconverged_at_end"] != 0 {
        bail!("the soak ended with parents not converged");
    }
    Ok(())
}
