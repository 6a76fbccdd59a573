//! Starting, checking and stopping the cluster: kclient-envtest starts etcd, kube-apiserver
//! and kube-controller-manager on 127.0.0.1 (its PKI, kubeconfig and readiness checks) and
//! detaches them, so that they outlive `cargo xtask e2e up`; what it started is recorded in
//! `<run dir>/state.json`, where a later `down` (or a second `up`) finds it.

use std::fs;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use kclient_envtest::{Detached, Environment};
use serde::{Deserialize, Serialize};

use super::build;
use super::layout::run_dir;
use super::{KUBECONFIG_ENV, KUBECTL_ENV};

/// How long each server may take to become ready (a cold start on a busy 2-core machine takes
/// well under a minute; this bound is generous).
const START_TIMEOUT: Duration = Duration::from_secs(240);
/// How long each process gets to exit after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(20);
/// kube-apiserver's alpha gates the scenarios need: `ShardedListAndWatch` (KEP-5866) for
/// the `sharded_list_and_watch` scenario (kclient-fake's e2e target turns it on too).
const FEATURE_GATES: &str = "ShardedListAndWatch=true";

/// What `up` records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct State {
    pub(crate) kubernetes_version: String,
    pub(crate) etcd_version: String,
    /// kube-apiserver's `--feature-gates` (a cluster started with others is not reused).
    #[serde(default)]
    pub(crate) feature_gates: String,
    /// The kubectl built with the server.
    pub(crate) kubectl: PathBuf,
    /// The servers, their URLs and the admin kubeconfig.
    #[serde(flatten)]
    pub(crate) cluster: Detached,
}

/// A cluster that is up, from `up`.
#[derive(Debug)]
pub(crate) struct Cluster {
    pub(crate) kubernetes_version: String,
    pub(crate) kubeconfig: PathBuf,
    pub(crate) kubectl: PathBuf,
    /// The directory of the binaries it runs.
    pub(crate) bin_dir: PathBuf,
    /// False when `up` found it already running (then the caller should leave it running).
    pub(crate) started_here: bool,
}

fn state_path(run: &Path) -> PathBuf {
    run.join("state.json")
}

fn load_state(run: &Path) -> Result<Option<State>> {
    let path = state_path(run);
    match fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("{} is not a state file of this xtask", path.display())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("could not read {}", path.display())),
    }
}

fn save_state(run: &Path, state: &State) -> Result<()> {
    let path = state_path(run);
    let tmp = run.join("state.json.tmp");
    fs::write(&tmp, serde_json::to_vec_pretty(state)?)
        .with_context(|| format!("could not write {}", tmp.display()))?;
    fs::rename(&tmp, &path).with_context(|| format!("could not write {}", path.display()))
}

/// The recorded cluster, if all its processes are still running.
pub(crate) fn running() -> Result<Option<State>> {
    let run = run_dir()?;
    Ok(load_state(&run)?.filter(|state| state.cluster.is_running()))
}

/// Holds an exclusive lock on the run directory (a file beside it, as the directory itself is
/// recreated) while `up` or `down` changes it, so two of them on one machine do not race. The
/// lock is released when the returned file is dropped, or when the process dies.
fn lock_run_dir(run: &Path) -> Result<fs::File> {
    let mut name = run.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    let path = run.with_file_name(name);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .with_context(|| format!("could not create {}", parent.display()))?;
    }
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("could not open {}", path.display()))?;
    if file.try_lock().is_err() {
        eprintln!(
            "e2e: another `cargo xtask e2e` holds {}: waiting for it",
            path.display()
        );
        file.lock()
            .with_context(|| format!("could not lock {}", path.display()))?;
    }
    Ok(file)
}

/// `cargo xtask e2e up`.
pub(crate) fn up() -> Result<Cluster> {
    let bins = build::ensure_built()?;
    let run = run_dir()?;
    let _lock = lock_run_dir(&run)?;
    let cluster = |state: &State, started_here| Cluster {
        kubernetes_version: state.kubernetes_version.clone(),
        kubeconfig: state.cluster.kubeconfig.clone(),
        kubectl: state.kubectl.clone(),
        bin_dir: bins.dir.clone(),
        started_here,
    };

    if let Some(state) = load_state(&run)? {
        let alive = state.cluster.is_running();
        let same_version = state.kubernetes_version == bins.pins.kubernetes
            && state.kubectl == bins.path(build::KUBECTL)
            && state.feature_gates == FEATURE_GATES;
        if alive && same_version && block_on(state.cluster.probe_ready())?.is_ok() {
            eprintln!(
                "e2e: reusing the running cluster (Kubernetes {}) at {}",
                state.kubernetes_version, state.cluster.server
            );
            print_how_to_use(&state);
            return Ok(cluster(&state, false));
        }
        eprintln!(
            "e2e: the recorded cluster is {}: stopping what is left of it",
            if !alive {
                "not (entirely) running"
            } else if !same_version {
                "of another version or with other feature gates"
            } else {
                "not ready"
            }
        );
        state.cluster.stop(STOP_GRACE)?;
    }

    let started = Instant::now();
    if run.exists() {
        // The previous run's state: nothing of value without its processes.
        fs::remove_dir_all(&run).with_context(|| format!("could not clear {}", run.display()))?;
    }
    let environment = Environment::builder()
        .binary_assets_directory(&bins.dir)
        .kubernetes_version(&bins.pins.kubernetes)
        .controller_manager(true)
        .apiserver_arg(format!("--feature-gates={FEATURE_GATES}"))
        .directory(&run)
        .start_timeout(START_TIMEOUT)
        .stop_timeout(STOP_GRACE)
        .start();
    // On an error nothing is left running; the logs stay for the error message's reader.
    let environment = block_on(environment)?.with_context(|| {
        format!(
            "the e2e cluster did not come up (logs in {})",
            run.join("logs").display()
        )
    })?;
    let state = State {
        kubernetes_version: bins.pins.kubernetes.clone(),
        etcd_version: bins.pins.etcd.clone(),
        feature_gates: FEATURE_GATES.to_owned(),
        kubectl: bins.path(build::KUBECTL),
        cluster: environment.detach(),
    };
    if let Err(err) = save_state(&run, &state) {
        let _ = state.cluster.stop(STOP_GRACE);
        return Err(err);
    }
    eprintln!(
        "e2e: cluster up in {:.1}s (Kubernetes {}, etcd {})",
        started.elapsed().as_secs_f64(),
        state.kubernetes_version,
        state.etcd_version
    );
    print_how_to_use(&state);
    Ok(cluster(&state, true))
}

/// Runs `future` to completion on a runtime of its own (the readiness probes are kclient-rest
/// requests).
fn block_on<F: Future>(future: F) -> Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("could not start a tokio runtime")?;
    Ok(runtime.block_on(future))
}

fn print_how_to_use(state: &State) {
    eprintln!(
        "e2e: admin kubeconfig: {kubeconfig}\n\
         e2e: kubectl:          {kubectl}\n\
         e2e: to use it from a shell:\n  \
           export {KUBECONFIG_ENV}={kubeconfig} {KUBECTL_ENV}={kubectl}\n  \
           {kubectl} --kubeconfig {kubeconfig} get namespaces\n\
         e2e: stop it with `cargo xtask e2e down`",
        kubeconfig = state.cluster.kubeconfig.display(),
        kubectl = state.kubectl.display(),
    );
    // The path alone on stdout, for scripts: KUBECONFIG=$(cargo xtask e2e up).
    println!("{}", state.cluster.kubeconfig.display());
}

/// `cargo xtask e2e down`.
pub(crate) fn down() -> Result<()> {
    let run = run_dir()?;
    let _lock = lock_run_dir(&run)?;
    let Some(state) = load_state(&run)? else {
        eprintln!(
            "e2e: no cluster is recorded in {}: nothing to stop",
            run.display()
        );
        return Ok(());
    };
    state.cluster.stop(STOP_GRACE)?;
    // Keep the logs (for a look after a failed run); the rest is useless without the processes.
    for stale in ["state.json", "kubeconfig", "pki", "etcd"] {
        let path = run.join(stale);
        let removed = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        if let Err(err) = removed {
            if err.kind() != std::io::ErrorKind::NotFound {
                return Err(err).with_context(|| format!("could not remove {}", path.display()));
            }
        }
    }
    eprintln!(
        "e2e: stopped {} (logs kept in {})",
        state
            .cluster
            .processes
            .iter()
            .map(|p| format!("{} (pid {})", p.name, p.pid))
            .collect::<Vec<_>>()
            .join(", "),
        run.join("logs").display()
    );
    Ok(())
}

/// `cargo xtask e2e status`.
pub(crate) fn status() -> Result<()> {
    let run = run_dir()?;
    let Some(state) = load_state(&run)? else {
        eprintln!(
            "e2e: no cluster is up (nothing recorded in {})",
            run.display()
        );
        return Ok(());
    };
    for process in &state.cluster.processes {
        eprintln!(
            "e2e: {:<24} pid {:<8} {}",
            process.name,
            process.pid,
            if process.is_alive() {
                "running"
            } else {
                "NOT RUNNING"
            }
        );
    }
    match block_on(state.cluster.probe_ready())? {
        Ok(()) => {
            eprintln!(
                "e2e: Kubernetes {} at {} is ready",
                state.kubernetes_version, state.cluster.server
            );
            print_how_to_use(&state);
            Ok(())
        }
        Err(err) => bail!("the recorded cluster is not ready: {err:#}"),
    }
}
