//! `cargo xtask build-compare [--skip-dev]`: the same small operator built on kclient and on
//! kube-rs (issue 48) — `bench/peers/kclient-memcached` and `bench/peers/kube-rs-memcached`,
//! operator-sdk's memcached operator written as a user's project on each — one after the
//! other on this machine, reporting build times and stripped binary sizes side by side.
//!
//! For each project, in a target directory of its own that starts empty and is removed at the
//! end (`target/build-compare/<project>`; the registry's downloads are kept, as on a
//! developer's machine):
//!
//! 1. a cold release build (`cargo build --release`), and the stripped size of its binary;
//! 2. an incremental release build after one line of `main.rs` changed (the message `main`
//!    prints), as when a release is rebuilt after a fix;
//! 3. unless `--skip-dev`: a cold dev build and a dev build after the same one-line change
//!    (the developer's edit-compile loop).
//!
//! Cargo's defaults decide what is built incrementally: no `CARGO_INCREMENTAL` is passed on,
//! since it would force every path dependency to be built incrementally, kclient's crates
//! included, which a user's project gets from crates.io and cargo builds as a finished library
//! (both projects' `[profile.dev.package."*"]` says so).
//!
//! The changed line is put back afterwards. The figures are printed as a table and written
//! to `docs/benchmarks/build-compare.json` with the date, the commit and the load average;
//! docs/benchmarks.md records them. Nothing else may build meanwhile: the two cores are the
//! measurement.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::bench::{command_line, load};
use crate::{target_dir, workspace_root};

/// The two projects, and their binaries' names.
const PROJECTS: &[(&str, &str)] = &[
    ("kclient-memcached", "kclient-memcached"),
    ("kube-rs-memcached", "kube-rs-memcached"),
];

/// The line both projects' `main` prints, and what the one-line change makes of it.
const LINE: &str = "until Ctrl-C\"";
const CHANGED_LINE: &str = "until Ctrl-C (rebuilt)\"";

pub(crate) fn run(args: &[String]) -> Result<()> {
    let mut dev = true;
    for arg in args {
        match arg.as_str() {
            "--skip-dev" => dev = false,
            other => bail!("`cargo xtask build-compare` takes [--skip-dev] (got {other:?})"),
        }
    }
    let (mut results, mut loads) = (Vec::new(), Vec::new());
    for (project, binary) in PROJECTS {
        loads.push(load());
        results.push(measure(project, binary, dev)?);
    }
    print_table(&results);
    let record = json!({
        "date": command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        "commit": command_line("git", &["rev-parse", "--short", "HEAD"]),
        "load_before_each": loads,
        "results": results,
    });
    let path = workspace_root().join("docs/benchmarks/build-compare.json");
    std::fs::write(&path, serde_json::to_string_pretty(&record)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("build-compare: written to {}", path.display());
    Ok(())
}

/// Every build of one project, from an empty target directory, which is removed afterwards
/// (some 2 GB a project; the next run starts from an empty one anyway).
fn measure(project: &str, binary: &str, dev: bool) -> Result<Value> {
    let dir = workspace_root().join("bench/peers").join(project);
    let target = target_dir()?.join("build-compare").join(project);
    remove_target(&target)?;
    let result = builds(project, &dir, &target, binary, dev);
    remove_target(&target)?;
    result
}

fn remove_target(target: &Path) -> Result<()> {
    if target.exists() {
        std::fs::remove_dir_all(target)
            .with_context(|| format!("removing {}", target.display()))?;
    }
    Ok(())
}

/// The builds of one project into `target`, and its binary's stripped size.
fn builds(project: &str, dir: &Path, target: &Path, binary: &str, dev: bool) -> Result<Value> {
    let release_cold = build(dir, target, true)?;
    let size = stripped_size(&target.join("release").join(binary), target)?;
    let release_one_line = with_one_line_changed(dir, || build(dir, target, true))?;
    let mut result = json!({
        "project": project,
        "release_cold_s": release_cold,
        "release_one_line_s": release_one_line,
        "stripped_bytes": size,
    });
    if dev {
        result["dev_cold_s"] = json!(build(dir, target, false)?);
        result["dev_one_line_s"] = json!(with_one_line_changed(dir, || build(dir, target, false))?);
    }
    Ok(result)
}

/// One `cargo build` of the project at `dir` into `target`; its wall time in seconds.
fn build(dir: &Path, target: &Path, release: bool) -> Result<f64> {
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .current_dir(dir)
        .args(["build", "--quiet"])
        .env("CARGO_TARGET_DIR", target)
        // The project's own workspace, not xtask's environment.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_INCREMENTAL");
    if release {
        cargo.arg("--release");
    }
    let started = Instant::now();
    let status = cargo
        .status()
        .with_context(|| format!("running cargo build in {}", dir.display()))?;
    if !status.success() {
        bail!("cargo build in {} failed ({status})", dir.display());
    }
    let seconds = started.elapsed().as_secs_f64();
    let what = if release { "release" } else { "dev" };
    eprintln!(
        "build-compare: {} {what} build in {seconds:.1}s",
        dir.display()
    );
    Ok(seconds)
}

/// Runs `f` with `main.rs`'s printed line changed, and puts the line back.
fn with_one_line_changed(dir: &Path, f: impl FnOnce() -> Result<f64>) -> Result<f64> {
    let main = dir.join("src/main.rs");
    let source =
        std::fs::read_to_string(&main).with_context(|| format!("reading {}", main.display()))?;
    if source.matches(LINE).count() != 1 {
        bail!("{} must print {LINE:?} exactly once", main.display());
    }
    std::fs::write(&main, source.replace(LINE, CHANGED_LINE))?;
    let result = f();
    std::fs::write(&main, &source).with_context(|| format!("restoring {}", main.display()))?;
    result
}

/// The size of the binary at `path` once stripped (`strip`, into `scratch`).
fn stripped_size(path: &Path, scratch: &Path) -> Result<u64> {
    let stripped: PathBuf = scratch.join("stripped");
    let status = Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(path)
        .status()
        .context("running strip")?;
    if !status.success() {
        bail!("strip {} failed ({status})", path.display());
    }
    Ok(std::fs::metadata(&stripped)?.len())
}

fn print_table(results: &[Value]) {
    println!("| project | release cold | release, one line | dev cold | dev, one line | stripped binary |");
    println!("|---|---:|---:|---:|---:|---:|");
    let seconds = |v: &Value| v.as_f64().map_or("–".to_owned(), |s| format!("{s:.1} s"));
    for r in results {
        println!(
            "| {} | {} | {} | {} | {} | {:.1} MB |",
            r["project"].as_str().unwrap_or("?"),
            seconds(&r["release_cold_s"]),
            seconds(&r["release_one_line_s"]),
            seconds(&r["dev_cold_s"]),
            seconds(&r["dev_one_line_s"]),
            r["stripped_bytes"].as_f64().unwrap_or(0.0) / 1e6,
        );
    }
}
