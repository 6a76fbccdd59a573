//! Starting, checking and stopping the cluster: etcd, kube-apiserver and
//! kube-controller-manager as child processes on 127.0.0.1, with the state recorded in
//! `<run dir>/state.json` so that a later `down` (or a second `up`) finds them.

use std::fs;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::build::{self, Binaries};
use super::kubeconfig::{self, Credentials, CLUSTER_NAME, TOKEN_CONTEXT};
use super::layout::run_dir;
use super::pki::{self, Pki, SERVICE_CLUSTER_IP_RANGE};
use super::process::{spawn, Started};
use super::{KUBECONFIG_ENV, KUBECTL_ENV};

/// How long etcd may take to answer `/health`.
const ETCD_TIMEOUT: Duration = Duration::from_secs(60);
/// How long kube-apiserver may take to report `/readyz` ok (a cold start on a busy 2-core
/// machine takes well under a minute; this bound is generous).
const APISERVER_TIMEOUT: Duration = Duration::from_secs(240);
/// How long kube-controller-manager may take to create the `default` ServiceAccount.
const CONTROLLER_MANAGER_TIMEOUT: Duration = Duration::from_secs(120);
/// How long each process gets to exit after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(20);
/// Between two readiness probes.
const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// What `up` records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct State {
    pub(crate) kubernetes_version: String,
    pub(crate) etcd_version: String,
    /// `https://127.0.0.1:<port>`
    pub(crate) server: String,
    pub(crate) etcd_url: String,
    /// The admin kubeconfig.
    pub(crate) kubeconfig: PathBuf,
    /// The kubectl built with the server.
    pub(crate) kubectl: PathBuf,
    /// In start order; stopped in reverse.
    pub(crate) processes: Vec<Started>,
}

/// A cluster that is up, from `up`.
#[derive(Debug)]
pub(crate) struct Cluster {
    pub(crate) kubernetes_version: String,
    pub(crate) kubeconfig: PathBuf,
    pub(crate) kubectl: PathBuf,
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
    Ok(load_state(&run)?.filter(|state| state.processes.iter().all(Started::is_alive)))
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

    if let Some(state) = load_state(&run)? {
        let alive = state.processes.iter().all(Started::is_alive);
        let same_version = state.kubernetes_version == bins.pins.kubernetes
            && state.kubectl == bins.path(build::KUBECTL);
        if alive && same_version && probe_readyz(&state.kubectl, &state.kubeconfig).is_ok() {
            eprintln!(
                "e2e: reusing the running cluster (Kubernetes {}) at {}",
                state.kubernetes_version, state.server
            );
            print_how_to_use(&state);
            return Ok(Cluster {
                kubernetes_version: state.kubernetes_version,
                kubeconfig: state.kubeconfig,
                kubectl: state.kubectl,
                started_here: false,
            });
        }
        eprintln!(
            "e2e: the recorded cluster is {}: stopping what is left of it",
            if !alive {
                "not (entirely) running"
            } else if !same_version {
                "of another version"
            } else {
                "not ready"
            }
        );
        stop_all(&state)?;
    }

    let started = Instant::now();
    prepare_run_dir(&run)?;
    let result = start(&bins, &run);
    match result {
        Ok(state) => {
            eprintln!(
                "e2e: cluster up in {:.1}s (Kubernetes {}, etcd {})",
                started.elapsed().as_secs_f64(),
                state.kubernetes_version,
                state.etcd_version
            );
            print_how_to_use(&state);
            Ok(Cluster {
                kubernetes_version: state.kubernetes_version,
                kubeconfig: state.kubeconfig,
                kubectl: state.kubectl,
                started_here: true,
            })
        }
        Err(err) => {
            // Leave nothing running; keep the logs for the error message's reader.
            if let Some(state) = load_state(&run).ok().flatten() {
                if let Err(stop_err) = stop_all(&state) {
                    eprintln!("e2e: while cleaning up: {stop_err:#}");
                }
                let _ = fs::remove_file(state_path(&run));
            }
            Err(err.context(format!(
                "the e2e cluster did not come up (logs in {})",
                run.join("logs").display()
            )))
        }
    }
}

/// Removes the previous run's state (the directory holds nothing else of value) and creates
/// the layout.
fn prepare_run_dir(run: &Path) -> Result<()> {
    if run.exists() {
        fs::remove_dir_all(run).with_context(|| format!("could not clear {}", run.display()))?;
    }
    for sub in ["pki", "etcd", "logs"] {
        fs::create_dir_all(run.join(sub))
            .with_context(|| format!("could not create {}", run.join(sub).display()))?;
    }
    Ok(())
}

fn start(bins: &Binaries, run: &Path) -> Result<State> {
    let pki = pki::generate(&run.join("pki"))?;
    let etcd_client = free_port()?;
    let etcd_peer = free_port()?;
    let apiserver_port = free_port()?;
    let server = format!("https://127.0.0.1:{apiserver_port}");
    let etcd_url = format!("http://127.0.0.1:{etcd_client}");

    let kubeconfig_path = run.join("kubeconfig");
    pki::write_private(
        &kubeconfig_path,
        &kubeconfig::render(
            &server,
            &pki.ca_pem,
            &[
                (CLUSTER_NAME, Credentials::ClientCert(&pki.admin)),
                (TOKEN_CONTEXT, Credentials::Token(&pki.admin_token)),
            ],
        ),
    )?;
    let controller_manager_kubeconfig = run.join("pki").join("kube-controller-manager.kubeconfig");
    pki::write_private(
        &controller_manager_kubeconfig,
        &kubeconfig::render(
            &server,
            &pki.ca_pem,
            &[(
                "kube-controller-manager",
                Credentials::ClientCert(&pki.controller_manager),
            )],
        ),
    )?;

    let mut state = State {
        kubernetes_version: bins.pins.kubernetes.clone(),
        etcd_version: bins.pins.etcd.clone(),
        server,
        etcd_url: etcd_url.clone(),
        kubeconfig: kubeconfig_path.clone(),
        kubectl: bins.path(build::KUBECTL),
        processes: Vec::new(),
    };
    let logs = run.join("logs");

    // etcd
    let etcd = spawn(
        "etcd",
        &bins.path(build::ETCD),
        &etcd_args(&run.join("etcd"), etcd_client, etcd_peer),
        &logs.join("etcd.log"),
    )?;
    state.processes.push(etcd.clone());
    save_state(run, &state)?;
    wait_until("etcd /health", ETCD_TIMEOUT, &[&etcd], || {
        probe_etcd(etcd_client)
    })?;
    seed_etcd(etcd_client)?;

    // kube-apiserver
    let apiserver = spawn(
        "kube-apiserver",
        &bins.path(build::KUBE_APISERVER),
        &apiserver_args(&pki, &etcd_url, apiserver_port, &run.join("pki")),
        &logs.join("kube-apiserver.log"),
    )?;
    state.processes.push(apiserver.clone());
    save_state(run, &state)?;
    wait_until(
        "kube-apiserver /readyz",
        APISERVER_TIMEOUT,
        &[&etcd, &apiserver],
        || probe_readyz(&state.kubectl, &kubeconfig_path),
    )?;

    // kube-controller-manager
    let controller_manager = spawn(
        "kube-controller-manager",
        &bins.path(build::KUBE_CONTROLLER_MANAGER),
        &controller_manager_args(&pki, &controller_manager_kubeconfig),
        &logs.join("kube-controller-manager.log"),
    )?;
    state.processes.push(controller_manager.clone());
    save_state(run, &state)?;
    wait_until(
        "kube-controller-manager (the default ServiceAccount)",
        CONTROLLER_MANAGER_TIMEOUT,
        &[&etcd, &apiserver, &controller_manager],
        || {
            kubectl_ok(
                &state.kubectl,
                &kubeconfig_path,
                &[
                    "get",
                    "serviceaccount",
                    "default",
                    "-n",
                    "default",
                    "-o",
                    "name",
                ],
            )
        },
    )?;
    Ok(state)
}

fn etcd_args(data_dir: &Path, client_port: u16, peer_port: u16) -> Vec<String> {
    let client = format!("http://127.0.0.1:{client_port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    vec![
        "--name=kclient-e2e".into(),
        format!("--data-dir={}", data_dir.display()),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster=kclient-e2e={peer}"),
        "--initial-cluster-state=new".into(),
        "--log-level=warn".into(),
        // A throwaway test store: durability is not worth the fsync latency.
        "--unsafe-no-fsync=true".into(),
    ]
}

fn apiserver_args(pki: &Pki, etcd_url: &str, port: u16, cert_dir: &Path) -> Vec<String> {
    let path = |p: &Path| p.display().to_string();
    vec![
        "--bind-address=127.0.0.1".into(),
        "--advertise-address=127.0.0.1".into(),
        // The `kubernetes` Service's endpoints would be 127.0.0.1, which the endpoint
        // reconciler refuses (loopback); nothing in the suite needs them.
        "--endpoint-reconciler-type=none".into(),
        format!("--secure-port={port}"),
        format!("--cert-dir={}", cert_dir.display()),
        format!("--tls-cert-file={}", path(&pki.serving_cert)),
        format!("--tls-private-key-file={}", path(&pki.serving_key)),
        format!("--client-ca-file={}", path(&pki.ca_cert)),
        format!("--token-auth-file={}", path(&pki.token_file)),
        format!("--etcd-servers={etcd_url}"),
        "--service-account-issuer=https://kubernetes.default.svc".into(),
        format!(
            "--service-account-key-file={}",
            path(&pki.service_account_public_key)
        ),
        format!(
            "--service-account-signing-key-file={}",
            path(&pki.service_account_key)
        ),
        "--authorization-mode=Node,RBAC".into(),
        format!("--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}"),
        "--allow-privileged=true".into(),
        "--profiling=false".into(),
    ]
}

fn controller_manager_args(pki: &Pki, kubeconfig: &Path) -> Vec<String> {
    let path = |p: &Path| p.display().to_string();
    vec![
        format!("--kubeconfig={}", path(kubeconfig)),
        "--bind-address=127.0.0.1".into(),
        // No HTTPS endpoint of its own: nothing here scrapes it.
        "--secure-port=0".into(),
        "--leader-elect=false".into(),
        "--use-service-account-credentials=true".into(),
        format!(
            "--service-account-private-key-file={}",
            path(&pki.service_account_key)
        ),
        format!("--root-ca-file={}", path(&pki.ca_cert)),
        format!("--cluster-signing-cert-file={}", path(&pki.ca_cert)),
        format!("--cluster-signing-key-file={}", path(&pki.ca_key)),
        format!("--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}"),
        "--profiling=false".into(),
    ]
}

/// A port free on 127.0.0.1 right now.
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .context("could not find a free port on 127.0.0.1")?;
    Ok(listener.local_addr()?.port())
}

/// Polls `probe` until it succeeds or `limit` passes; fails early, with the log's end, when
/// one of `processes` exits.
fn wait_until(
    what: &str,
    limit: Duration,
    processes: &[&Started],
    mut probe: impl FnMut() -> Result<()>,
) -> Result<()> {
    let started = Instant::now();
    loop {
        let last = match probe() {
            Ok(()) => {
                eprintln!(
                    "e2e: {what}: ready after {:.1}s",
                    started.elapsed().as_secs_f64()
                );
                return Ok(());
            }
            Err(err) => err,
        };
        if let Some(dead) = processes.iter().find(|p| !p.is_alive()) {
            bail!(
                "{} exited while waiting for {what}; the end of {}:\n{}",
                dead.name,
                dead.log.display(),
                dead.log_tail(30)
            );
        }
        if started.elapsed() >= limit {
            let newest = processes.last().expect("at least one process");
            bail!(
                "{what} not ready after {}s (last probe: {last:#}); the end of {}:\n{}",
                limit.as_secs(),
                newest.log.display(),
                newest.log_tail(30)
            );
        }
        thread::sleep(POLL_INTERVAL);
    }
}

/// etcd's `/health` over plain HTTP on loopback.
fn probe_etcd(port: u16) -> Result<()> {
    let response = etcd_http(port, "GET", "/health", "")?;
    if response.contains("\"health\":\"true\"") {
        Ok(())
    } else {
        bail!(
            "etcd /health: {}",
            response.lines().last().unwrap_or_default()
        )
    }
}

/// How many revisions [`seed_etcd`] writes.
const SEED_REVISIONS: usize = 16;

/// Moves etcd's revision past 1 before the apiserver starts, with writes to a key outside the
/// apiserver's `/registry` prefix. A new etcd starts at revision 1, and the apiserver's watch
/// caches start from the revision they first list at; without this, a watch cache started on a
/// brand-new etcd can still serve "resourceVersion 1", where any cluster that has lived answers
/// 410 Gone (Expired). With it, resourceVersion 1 is too old on every resource, as the suite
/// expects.
fn seed_etcd(port: u16) -> Result<()> {
    // etcd's JSON gateway takes base64 keys and values: "/kclient-e2e/seed" and "1".
    let body = r#"{"key":"L2tjbGllbnQtZTJlL3NlZWQ=","value":"MQ=="}"#;
    for _ in 0..SEED_REVISIONS {
        let response = etcd_http(port, "POST", "/v3/kv/put", body)?;
        if !response.contains("\"revision\"") {
            bail!("etcd did not accept a write: {response}");
        }
    }
    Ok(())
}

/// One plain HTTP/1.0 request to etcd on loopback; the whole response.
fn etcd_http(port: u16, method: &str, path: &str, body: &str) -> Result<String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}

/// The apiserver's `/readyz`, through the built kubectl and the admin kubeconfig (which so
/// gets checked too).
fn probe_readyz(kubectl: &Path, kubeconfig: &Path) -> Result<()> {
    kubectl_ok(kubectl, kubeconfig, &["get", "--raw", "/readyz"])
}

fn kubectl_ok(kubectl: &Path, kubeconfig: &Path, args: &[&str]) -> Result<()> {
    let output = Command::new(kubectl)
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .arg("--request-timeout=5s")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("could not run {}", kubectl.display()))?;
    if output.status.success() {
        Ok(())
    } else {
        bail!(
            "kubectl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )
    }
}

fn print_how_to_use(state: &State) {
    eprintln!(
        "e2e: admin kubeconfig: {kubeconfig}\n\
         e2e: kubectl:          {kubectl}\n\
         e2e: to use it from a shell:\n  \
           export {KUBECONFIG_ENV}={kubeconfig} {KUBECTL_ENV}={kubectl}\n  \
           {kubectl} --kubeconfig {kubeconfig} get namespaces\n\
         e2e: stop it with `cargo xtask e2e down`",
        kubeconfig = state.kubeconfig.display(),
        kubectl = state.kubectl.display(),
    );
    // The path alone on stdout, for scripts: KUBECONFIG=$(cargo xtask e2e up).
    println!("{}", state.kubeconfig.display());
}

/// Stops the recorded processes, newest first.
fn stop_all(state: &State) -> Result<()> {
    let mut failures = Vec::new();
    for process in state.processes.iter().rev() {
        if let Err(err) = process.stop(STOP_GRACE) {
            failures.push(format!("{err:#}"));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        bail!("{}", failures.join("; "))
    }
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
    stop_all(&state)?;
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
    for process in &state.processes {
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
    match probe_readyz(&state.kubectl, &state.kubeconfig) {
        Ok(()) => {
            eprintln!(
                "e2e: Kubernetes {} at {} is ready",
                state.kubernetes_version, state.server
            );
            print_how_to_use(&state);
            Ok(())
        }
        Err(err) => bail!("the recorded cluster is not ready: {err:#}"),
    }
}
