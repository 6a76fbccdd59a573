//! `cargo xtask bench [--quick] [--real] [--smoke]`: kclient side by side with client-go and
//! kube-rs (issue 17).
//!
//! It builds the three programs (`crates/kclient-bench`, `bench/peers/client-go`,
//! `bench/peers/kube-rs`), serves the same objects to all of them, runs every scenario for
//! every client in alternation, round after round, and writes what it measured to
//! `docs/benchmarks/peers-<server>.json`; then it renders the generated section of
//! `docs/benchmarks.md` and its plots from the result files there ([`report`]).
//!
//! * Without `--real` the server is `kclient-fake-apiserver` (HTTPS, a bearer token), loaded
//!   with kclient-fake's deterministic realistic Pods (with managedFields) and the watch
//!   scenario's ConfigMaps; it is started once per Pod count.
//! * With `--real` it is the e2e harness's kube-apiserver, which must already run (`cargo
//!   xtask e2e up`); the objects are created through the API in a namespace of this run's
//!   own, deleted at the end. client-go then runs twice: as it comes (protobuf) and asking
//!   for JSON.
//! * `--quick`: fewer sizes and rounds (a few minutes). `--smoke`: tiny sizes, kclient only,
//!   the debug build of `cargo xtask test`'s tests (their packages and features, so that it
//!   reuses it), no waiting for a quiet machine and nothing written: `cargo xtask test` runs
//!   it so the harness stays buildable and runnable.
//! * `--only <id prefix>` (repeatable): only the scenarios whose id starts so (`--only
//!   representations`); their results replace theirs in the server's result file, marked
//!   with this run's date and commit, and the other scenarios' stay as they were.
//!
//! The machine is shared: before each group of runs the 1-minute load average is read, and
//! while it is above `KCLIENT_BENCH_MAX_LOAD` (default 1.0) the harness waits a minute, a
//! few times at most; the load at the start of every run is recorded with its result.

mod report;
mod scenarios;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use std::{env, fs};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{cargo, e2e, step, target_dir, workspace_root};
use scenarios::{Kind, Scenario};

/// How the run was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mode {
    quick: bool,
    real: bool,
    smoke: bool,
}

/// One measured run of one client in one scenario.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Run {
    pub(crate) scenario: String,
    pub(crate) client: String,
    pub(crate) round: usize,
    /// The 1-minute load average when the run started.
    pub(crate) load: f64,
    pub(crate) result: Value,
}

/// What one `cargo xtask bench` measured on one server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Results {
    /// `kclient-fake` or `kube-apiserver`.
    pub(crate) server: String,
    pub(crate) quick: bool,
    pub(crate) date: String,
    pub(crate) commit: String,
    pub(crate) machine: Vec<(String, String)>,
    pub(crate) versions: Vec<(String, String)>,
    pub(crate) scenarios: Vec<Scenario>,
    pub(crate) runs: Vec<Run>,
}

pub(crate) fn run(args: &[String]) -> Result<()> {
    let mut mode = Mode {
        quick: false,
        real: false,
        smoke: false,
    };
    let mut only = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => mode.quick = true,
            "--real" => mode.real = true,
            "--smoke" => mode.smoke = true,
            "--only" => only.push(args.next().context("--only needs a scenario id prefix")?),
            "report" => return report::render(&workspace_root()),
            other => bail!(
                "`cargo xtask bench` takes --quick, --real, --smoke, --only <id prefix> or \
                 `report` (got {other:?})"
            ),
        }
    }
    let plan = Plan::new(mode, &only)?;
    let programs = build(mode)?;
    let work = tempdir()?;
    let results = match plan {
        Plan::Real {
            namespace,
            pods,
            scenarios,
        } => run_real(mode, &programs, &work, &namespace, pods, scenarios)?,
        Plan::Fake(runs) => run_fake(mode, &programs, &work, runs)?,
    };
    let _ = fs::remove_dir_all(&work);
    if mode.smoke {
        check_smoke(&results)?;
        eprintln!("bench: smoke run passed ({} runs)", results.runs.len());
        return Ok(());
    }
    let dir = workspace_root().join("docs").join("benchmarks");
    fs::create_dir_all(&dir)?;
    let file = dir.join(format!("peers-{}.json", results.server));
    let results = match (only.is_empty(), fs::read_to_string(&file)) {
        (false, Ok(earlier)) => merge(serde_json::from_str(&earlier)?, results),
        _ => results,
    };
    fs::write(&file, serde_json::to_string_pretty(&results)? + "\n")?;
    eprintln!("bench: results in {}", file.display());
    report::render(&workspace_root())
}

/// The built programs.
pub(crate) struct Programs {
    kclient: PathBuf,
    server: PathBuf,
    client_go: Option<PathBuf>,
    kube_rs: Option<PathBuf>,
}

fn build(mode: Mode) -> Result<Programs> {
    let root = workspace_root();
    let profile = if mode.smoke { "debug" } else { "release" };
    let mut build = cargo();
    if mode.smoke {
        // As `cargo xtask test` builds its tests (the integration tests of kclient-fake and
        // kclient-bench have cargo build both programs): after it, nothing is built again.
        // `--tests` for the tests' dependencies and features; not `--all-targets`, which
        // would build the examples as programs, where the tests build them as tests.
        build.arg("build").args(crate::test::TESTED_PACKAGES).args([
            "--tests",
            "--bin",
            "kclient-bench",
            "--bin",
            "kclient-fake-apiserver",
        ]);
    } else {
        build.args([
            "build",
            "--release",
            "-p",
            "kclient-bench",
            "-p",
            "kclient-fake",
            "--features",
            "kclient-fake/apiserver",
        ]);
    }
    step("build kclient-bench and kclient-fake-apiserver", build)?;
    let target_dir = target_dir()?;
    let target = target_dir.join(profile);
    let mut programs = Programs {
        kclient: target.join("kclient-bench"),
        server: target.join("kclient-fake-apiserver"),
        client_go: None,
        kube_rs: None,
    };
    if mode.smoke {
        return Ok(programs);
    }
    let peers = root.join("bench").join("peers");
    let client_go = target_dir.join("bench").join("client-go-bench");
    let mut go = e2e::build::go_command(&peers.join("client-go"))?;
    go.args(["build", "-o"]).arg(&client_go).arg(".");
    step("build the client-go peer (go build)", go)?;
    // The peer is a workspace of its own: it builds into a directory of its own under ours,
    // wherever ours is (never into ours, whose `release/` holds kclient's programs).
    let kube_rs_target = target_dir.join("bench").join("kube-rs");
    let mut kube = cargo();
    kube.current_dir(peers.join("kube-rs"))
        .args(["build", "--release", "--locked", "--target-dir"])
        .arg(&kube_rs_target);
    step("build the kube-rs peer", kube)?;
    programs.client_go = Some(client_go);
    programs.kube_rs = Some(kube_rs_target.join("release").join("kube-rs-bench"));
    Ok(programs)
}

fn tempdir() -> Result<PathBuf> {
    let dir = env::temp_dir().join(format!("kclient-bench-{}", std::process::id()));
    fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// A `kclient-fake-apiserver` child, killed when dropped.
struct FakeServer {
    child: Child,
    kubeconfig: PathBuf,
}

impl FakeServer {
    fn start(programs: &Programs, work: &Path, run: &scenarios::FakeRun) -> Result<Self> {
        let (pods, config_maps, owned) = (run.pods, run.config_maps, run.owned);
        let manifest = work.join(format!("objects-{pods}-{config_maps}-{owned}.json"));
        let status = Command::new(&programs.kclient)
            .args(["manifest", "--path"])
            .arg(&manifest)
            .args(["--count", &pods.to_string()])
            .args(["--objects", &config_maps.to_string()])
            .args(["--namespace", scenarios::WATCH_NAMESPACE])
            .args(["--owned", &owned.to_string()])
            .args(["--owned-namespace", scenarios::CONTROLLER_NAMESPACE])
            .status()?;
        if !status.success() {
            bail!("writing the manifest failed ({status})");
        }
        let kubeconfig = work.join(format!("kubeconfig-{pods}-{config_maps}-{owned}"));
        let _ = fs::remove_file(&kubeconfig);
        eprintln!(
            "bench: starting kclient-fake-apiserver with {pods} Pods, {config_maps} ConfigMaps \
             and {owned} ConfigMaps owning a Secret each"
        );
        let child = Command::new(&programs.server)
            .args(["--https", "--token", "bench-token", "--load"])
            .arg(&manifest)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            // The watch scenario's updates must stay in the history (a watch that falls
            // behind it ends with 410 Gone, and the relist would coalesce the updates).
            .args(["--history-window", "1000000"])
            .stdout(Stdio::null())
            .spawn()
            .context("starting kclient-fake-apiserver")?;
        let server = FakeServer { child, kubeconfig };
        let started = Instant::now();
        while !server.kubeconfig.exists() {
            if started.elapsed() > Duration::from_secs(600) {
                bail!("kclient-fake-apiserver did not start within 10 minutes");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = fs::remove_file(&manifest);
        Ok(server)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The scenarios a run measures, those `--only` selected (all without it), known before
/// anything is built or seeded.
enum Plan {
    /// kclient-fake's runs, one server each.
    Fake(Vec<scenarios::FakeRun>),
    /// The real kube-apiserver's scenarios, on `pods` Pods seeded in `namespace`.
    Real {
        namespace: String,
        pods: usize,
        scenarios: Vec<Scenario>,
    },
}

impl Plan {
    fn new(mode: Mode, only: &[&String]) -> Result<Self> {
        let selected =
            |s: &Scenario| only.is_empty() || only.iter().any(|o| s.id.starts_with(o.as_str()));
        let plan = if mode.real {
            let namespace = format!("kclient-bench-{}", std::process::id());
            let (pods, mut scenarios) = scenarios::real(mode, &namespace);
            scenarios.retain(selected);
            Plan::Real {
                namespace,
                pods,
                scenarios,
            }
        } else {
            let mut runs = scenarios::fake(mode);
            for run in &mut runs {
                run.scenarios.retain(selected);
            }
            runs.retain(|run| !run.scenarios.is_empty());
            Plan::Fake(runs)
        };
        let empty = match &plan {
            Plan::Fake(runs) => runs.is_empty(),
            Plan::Real { scenarios, .. } => scenarios.is_empty(),
        };
        if empty {
            bail!("no scenario's id starts with {only:?}");
        }
        Ok(plan)
    }
}

/// The results of an earlier run with those of a run of some scenarios only (`--only`) in
/// place of theirs, each marked with when it was measured.
fn merge(mut earlier: Results, only: Results) -> Results {
    let measured = only.measured_at();
    let replaced = |id: &str| only.scenarios.iter().any(|s| s.id == id);
    earlier.scenarios.retain(|s| !replaced(&s.id));
    earlier.runs.retain(|r| !replaced(&r.scenario));
    earlier
        .scenarios
        .extend(only.scenarios.into_iter().map(|mut s| {
            s.measured = Some(measured.clone());
            s
        }));
    earlier.runs.extend(only.runs);
    earlier
}

fn run_fake(
    mode: Mode,
    programs: &Programs,
    work: &Path,
    runs: Vec<scenarios::FakeRun>,
) -> Result<Results> {
    let mut results = results("kclient-fake", mode, None)?;
    for run in runs {
        let server = FakeServer::start(programs, work, &run)?;
        run_scenarios(
            mode,
            programs,
            &server.kubeconfig,
            &run.scenarios,
            &mut results,
        )?;
        results.scenarios.extend(run.scenarios);
    }
    Ok(results)
}

fn run_real(
    mode: Mode,
    programs: &Programs,
    work: &Path,
    namespace: &str,
    pods: usize,
    scenarios: Vec<Scenario>,
) -> Result<Results> {
    let state = e2e::cluster::running()?
        .context("no e2e cluster is up: start one with `cargo xtask e2e up`")?;
    let kubeconfig = work.join("kubeconfig");
    fs::copy(&state.cluster.kubeconfig, &kubeconfig)?;
    let mut results = results("kube-apiserver", mode, Some(&state.kubernetes_version))?;
    eprintln!("bench: seeding {pods} Pods in {namespace}");
    let seeded = kclient_json(
        programs,
        &[
            "seed",
            "--kubeconfig",
            &kubeconfig.to_string_lossy(),
            "--namespace",
            namespace,
            "--count",
            &pods.to_string(),
            "--objects",
            &scenarios::WATCH_OBJECTS.to_string(),
        ],
    );
    let measured = seeded.and_then(|seeded| {
        eprintln!("bench: seeded: {seeded}");
        run_scenarios(mode, programs, &kubeconfig, &scenarios, &mut results)
    });
    let cleaned = Command::new(&programs.kclient)
        .args(["cleanup", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["--namespace", namespace])
        .status();
    match cleaned {
        Ok(s) if s.success() => eprintln!("bench: deleted namespace {namespace}"),
        other => eprintln!("bench: could not delete namespace {namespace}: {other:?}"),
    }
    measured?;
    results.scenarios = scenarios;
    Ok(results)
}

impl Results {
    /// When it was measured: its date "at commit" its commit, and "with `--quick`" if so.
    pub(crate) fn measured_at(&self) -> String {
        format!(
            "{} at commit `{}`{}",
            self.date,
            self.commit,
            if self.quick { " with `--quick`" } else { "" }
        )
    }
}

fn results(server: &str, mode: Mode, kubernetes: Option<&str>) -> Result<Results> {
    Ok(Results {
        server: server.to_owned(),
        quick: mode.quick,
        date: command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        commit: command_line("git", &["rev-parse", "--short", "HEAD"]),
        machine: machine(),
        versions: versions(kubernetes),
        scenarios: Vec::new(),
        runs: Vec::new(),
    })
}

/// The 1-minute load average.
pub(crate) fn load() -> f64 {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Waits (a minute at a time, a few times at most) while the machine is busier than
/// `KCLIENT_BENCH_MAX_LOAD`, within a budget for the whole run (3 minutes with `--quick`, 5
/// without): a machine that stays busy is measured busy, and the report says how busy.
fn wait_for_quiet(mode: Mode) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static WAITED_MINUTES: AtomicU64 = AtomicU64::new(0);
    if mode.smoke {
        return;
    }
    let max: f64 = env::var("KCLIENT_BENCH_MAX_LOAD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    let (tries, budget) = if mode.quick { (1, 3) } else { (3, 5) };
    for _ in 0..tries {
        let now = load();
        if now <= max {
            return;
        }
        if WAITED_MINUTES.load(Ordering::Relaxed) >= budget {
            eprintln!("bench: load average {now:.2} > {max}, but the waiting budget is spent");
            return;
        }
        eprintln!("bench: load average {now:.2} > {max}: waiting a minute");
        WAITED_MINUTES.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_secs(60));
    }
    eprintln!("bench: load average still {:.2}; measuring anyway", load());
}

fn run_scenarios(
    mode: Mode,
    programs: &Programs,
    kubeconfig: &Path,
    scenarios: &[Scenario],
    results: &mut Results,
) -> Result<()> {
    for scenario in scenarios {
        let clients: Vec<&scenarios::Client> = scenario
            .clients
            .iter()
            .filter(|c| !mode.smoke || c.program == scenarios::Program::Kclient)
            .collect();
        wait_for_quiet(mode);
        for round in 0..scenario.rounds {
            eprintln!(
                "bench: {} round {}/{}",
                scenario.title,
                round + 1,
                scenario.rounds
            );
            // Alternate, starting with another client every round.
            for i in 0..clients.len() {
                let client = clients[(i + round) % clients.len()];
                let program = match client.program {
                    scenarios::Program::Kclient => &programs.kclient,
                    scenarios::Program::ClientGo => {
                        programs.client_go.as_ref().context("client-go")?
                    }
                    scenarios::Program::KubeRs => programs.kube_rs.as_ref().context("kube-rs")?,
                };
                let mut args = scenario.args.clone();
                args.extend(client.args.iter().cloned());
                if scenario.kind != Kind::Workqueue {
                    args.push("--kubeconfig".into());
                    args.push(kubeconfig.to_string_lossy().into_owned());
                }
                let load = load();
                let result = if scenario.kind == Kind::Watch {
                    run_watch(programs, program, &args, kubeconfig, scenario)
                } else {
                    run_json(program, &args)
                }
                .with_context(|| format!("{} ({})", scenario.title, client.name))?;
                results.runs.push(Run {
                    scenario: scenario.id.clone(),
                    client: client.name.clone(),
                    round,
                    load,
                    result,
                });
            }
        }
    }
    Ok(())
}

/// Runs a program and parses the last line of its output as JSON.
fn run_json(program: &Path, args: &[String]) -> Result<Value> {
    let output = Command::new(program)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", program.display()))?;
    if !output.status.success() {
        bail!(
            "{} {:?} failed ({})",
            program.display(),
            args,
            output.status
        );
    }
    last_json_line(&String::from_utf8_lossy(&output.stdout))
}

fn last_json_line(stdout: &str) -> Result<Value> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .context("no JSON result in the output")?;
    Ok(serde_json::from_str(line)?)
}

fn kclient_json(programs: &Programs, args: &[&str]) -> Result<Value> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    run_json(&programs.kclient, &args)
}

/// The watch scenario: the client runs until it is synced (`{"ready":true}`), then the
/// writer applies the updates; the client's result is its last line.
fn run_watch(
    programs: &Programs,
    program: &Path,
    args: &[String],
    kubeconfig: &Path,
    scenario: &Scenario,
) -> Result<Value> {
    let mut child = Command::new(program)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("running {}", program.display()))?;
    let stdout = child.stdout.take().context("the client's output")?;
    let mut lines = BufReader::new(stdout).lines();
    loop {
        match lines.next() {
            Some(line) => {
                if line?.contains("\"ready\"") {
                    break;
                }
            }
            None => bail!("the client ended before it was ready ({:?})", child.wait()?),
        }
    }
    let namespace = scenario.namespace.clone().unwrap_or_default();
    let written = kclient_json(
        programs,
        &[
            "write",
            "--kubeconfig",
            &kubeconfig.to_string_lossy(),
            "--namespace",
            &namespace,
            "--count",
            &scenario.updates.to_string(),
            "--objects",
            &scenarios::WATCH_OBJECTS.to_string(),
        ],
    )?;
    let rest: Vec<String> = lines.collect::<std::io::Result<_>>()?;
    let status = child.wait()?;
    if !status.success() {
        bail!("the watching client failed ({status})");
    }
    let mut result = last_json_line(&rest.join("\n"))?;
    result["writes_per_s"] = written["writes_per_s"].clone();
    Ok(result)
}

/// The smoke run checks that every scenario gave a result with the fields the report reads.
fn check_smoke(results: &Results) -> Result<()> {
    for scenario in &results.scenarios {
        let runs: Vec<&Run> = results
            .runs
            .iter()
            .filter(|r| r.scenario == scenario.id)
            .collect();
        if runs.is_empty() {
            bail!("smoke: no run of {}", scenario.id);
        }
        for run in runs {
            for field in scenario.kind.fields() {
                if run.result.get(field).and_then(Value::as_f64).is_none() {
                    bail!("smoke: {} gave no {field}: {}", scenario.id, run.result);
                }
            }
        }
    }
    Ok(())
}

pub(crate) fn command_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .current_dir(workspace_root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "?".into())
}

fn machine() -> Vec<(String, String)> {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "?".into());
    let cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let memory = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let kb: f64 = m
                .lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))?
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .ok()?;
            Some(format!("{:.0} GiB", kb / 1024.0 / 1024.0))
        })
        .unwrap_or_else(|| "?".into());
    vec![
        ("CPU".into(), format!("{cpus} × {model}")),
        ("memory".into(), memory),
        ("kernel".into(), command_line("uname", &["-sr"])),
    ]
}

fn versions(kubernetes: Option<&str>) -> Vec<(String, String)> {
    let root = workspace_root();
    let go_mod = fs::read_to_string(root.join("bench/peers/client-go/go.mod")).unwrap_or_default();
    let client_go = go_mod
        .lines()
        .find_map(|l| l.trim().strip_prefix("k8s.io/client-go "))
        .unwrap_or("?")
        .to_owned();
    let lock = fs::read_to_string(root.join("bench/peers/kube-rs/Cargo.lock")).unwrap_or_default();
    let locked = |name: &str| {
        lock.split("[[package]]")
            .find(|p| p.contains(&format!("name = \"{name}\"\n")))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
            .map(|v| v.trim_matches('"').to_owned())
            .unwrap_or_else(|| "?".into())
    };
    let go = e2e::build::require_go(None).unwrap_or_else(|_| "?".into());
    let mut versions = vec![
        ("rustc".into(), command_line("rustc", &["--version"])),
        ("go".into(), go),
        (
            "kclient".into(),
            format!("{} (this commit)", env!("CARGO_PKG_VERSION")),
        ),
        ("client-go".into(), client_go),
        ("kube (kube-rs)".into(), locked("kube")),
        (
            "k8s-openapi (kube-rs and kclient)".into(),
            locked("k8s-openapi"),
        ),
    ];
    if let Some(k) = kubernetes {
        versions.push(("kube-apiserver".into(), k.to_owned()));
    }
    versions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_json_line_is_the_result() {
        let out = "{\"ready\":true}\nsome log\n{\"a\":1}\n";
        assert_eq!(last_json_line(out).unwrap(), serde_json::json!({"a": 1}));
        assert!(last_json_line("no json here\n").is_err());
    }
}
