//! The environment: its builder, the start (binaries, PKI, kubeconfigs, each server started
//! and waited for), the running servers, and their end — stopped on drop, by
//! [`Environment::stop`], or left running by [`Environment::detach`].

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kclient_rest::{Config, RestClient};
use serde::{Deserialize, Serialize};

use crate::binaries::{
    check_version, BinaryAssets, Lookup, ETCD, KUBE_APISERVER, KUBE_CONTROLLER_MANAGER,
};
use crate::kubeconfig::{self, Credentials, CLUSTER_NAME, TOKEN_CONTEXT};
use crate::ports::{self, HeldPort, Ports};
use crate::process::{ProcessRecord, Server};
use crate::watchdog::Watchdog;
use crate::{apiserver, controller_manager, etcd, pki, wait, Error};

/// How long each server may take to become ready, unless told otherwise.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(90);
/// How long each server gets between SIGTERM and SIGKILL, unless told otherwise.
pub const DEFAULT_STOP_TIMEOUT: Duration = Duration::from_secs(20);
/// How many times the servers start, on other ports each time, when a port chosen for one of
/// them was taken meanwhile (see `ports`).
const PORT_ATTEMPTS: u32 = 3;

/// What to start: see [`Environment::builder`].
#[derive(Debug, Clone)]
#[must_use = "an EnvironmentBuilder does nothing until `start` is awaited"]
pub struct EnvironmentBuilder {
    binary_assets_directory: Option<PathBuf>,
    kubernetes_version: Option<String>,
    controller_manager: bool,
    directory: Option<PathBuf>,
    apiserver_port: Option<u16>,
    apiserver_args: Vec<String>,
    start_timeout: Duration,
    stop_timeout: Duration,
    #[cfg(feature = "clientset")]
    pub(crate) install: crate::install::Install,
}

impl Default for EnvironmentBuilder {
    fn default() -> Self {
        EnvironmentBuilder {
            binary_assets_directory: None,
            kubernetes_version: None,
            controller_manager: false,
            directory: None,
            apiserver_port: None,
            apiserver_args: Vec::new(),
            start_timeout: DEFAULT_START_TIMEOUT,
            stop_timeout: DEFAULT_STOP_TIMEOUT,
            #[cfg(feature = "clientset")]
            install: crate::install::Install::default(),
        }
    }
}

impl EnvironmentBuilder {
    /// Runs the binaries of `directory` (before `KUBEBUILDER_ASSETS` and kclient's build
    /// cache: see [`binaries`](crate::binaries)).
    pub fn binary_assets_directory(mut self, directory: impl Into<PathBuf>) -> Self {
        self.binary_assets_directory = Some(directory.into());
        self
    }

    /// Requires this Kubernetes version (`1.37.1`, `v1.37.1`, or `1.37` for any patch
    /// release): `kube-apiserver --version` must report it, and kclient's build cache is
    /// searched for it.
    pub fn kubernetes_version(mut self, version: impl Into<String>) -> Self {
        self.kubernetes_version = Some(version.into());
        self
    }

    /// Also runs kube-controller-manager (off by default, as in controller-runtime's
    /// envtest): namespace deletion, garbage collection, Deployments' ReplicaSets, the
    /// `default` ServiceAccount. setup-envtest's directories lack it; kclient's build has it.
    pub fn controller_manager(mut self, run: bool) -> Self {
        self.controller_manager = run;
        self
    }

    /// Keeps the PKI, kubeconfig, etcd data and logs in `directory` (created if missing;
    /// never removed), instead of a temporary directory removed when the environment stops.
    pub fn directory(mut self, directory: impl Into<PathBuf>) -> Self {
        self.directory = Some(directory.into());
        self
    }

    /// Serves the API on this port of 127.0.0.1 instead of a free one.
    pub fn apiserver_port(mut self, port: u16) -> Self {
        self.apiserver_port = Some(port);
        self
    }

    /// Adds a flag to kube-apiserver's, after its own (`--feature-gates=...`).
    pub fn apiserver_arg(mut self, arg: impl Into<String>) -> Self {
        self.apiserver_args.push(arg.into());
        self
    }

    /// How long each server may take to become ready ([`DEFAULT_START_TIMEOUT`]).
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// How long each server gets to exit after SIGTERM before SIGKILL
    /// ([`DEFAULT_STOP_TIMEOUT`]).
    pub fn stop_timeout(mut self, timeout: Duration) -> Self {
        self.stop_timeout = timeout;
        self
    }

    /// Starts the servers, waits until each is ready, then installs what was asked. Whatever
    /// fails, nothing started is left running.
    pub async fn start(self) -> Result<Environment, Error> {
        let mut needed = vec![ETCD, KUBE_APISERVER];
        if self.controller_manager {
            needed.push(KUBE_CONTROLLER_MANAGER);
        }
        let lookup = Lookup::from_env(
            self.binary_assets_directory.clone(),
            self.kubernetes_version.clone(),
        );
        let binaries = lookup.locate(&needed)?;
        if let Some(version) = &self.kubernetes_version {
            check_version(&binaries.path(KUBE_APISERVER), version).await?;
        }
        if let Some(port) = self.apiserver_port {
            // Refused before anything is made; held again when the servers start.
            drop(HeldPort::exactly(port)?);
        }
        let (directory, temporary) = match &self.directory {
            Some(directory) => (directory.clone(), false),
            None => {
                let made = tempfile::Builder::new()
                    .prefix("kclient-envtest-")
                    .tempdir()
                    .map_err(Error::io("creating a temporary directory"))?;
                (made.keep(), true)
            }
        };
        let mut env = Environment {
            kubeconfig: directory.join("kubeconfig"),
            directory,
            temporary,
            binaries,
            server: String::new(),
            etcd_url: String::new(),
            config: Config::default(),
            servers: Vec::new(),
            watchdog: None,
            stop_timeout: self.stop_timeout,
        };
        // From here on, an error drops `env`, which stops what started.
        let remove = env.temporary.then_some(env.directory.as_path());
        env.watchdog = Some(Watchdog::start(self.stop_timeout, remove)?);
        env.boot(&self).await?;
        #[cfg(feature = "clientset")]
        self.install.run(&env).await?;
        Ok(env)
    }
}

/// A running etcd and kube-apiserver (and kube-controller-manager if asked), with an admin
/// kubeconfig. Dropping it stops them and removes its temporary directory (a panicking test
/// drops it too); if the process dies without dropping it, its watchdog does the same.
#[derive(Debug)]
pub struct Environment {
    directory: PathBuf,
    temporary: bool,
    binaries: BinaryAssets,
    server: String,
    etcd_url: String,
    kubeconfig: PathBuf,
    config: Config,
    /// In start order; stopped in reverse.
    servers: Vec<Server>,
    watchdog: Option<Watchdog>,
    stop_timeout: Duration,
}

impl Environment {
    /// What to start: binaries from `KUBEBUILDER_ASSETS` or kclient's build cache, etcd and
    /// kube-apiserver on free ports, no CRDs.
    pub fn builder() -> EnvironmentBuilder {
        EnvironmentBuilder::default()
    }

    /// One environment for the whole test binary, started by the first caller from its
    /// `configure` (the later callers' are not called) and never stopped by a drop: its
    /// watchdog stops it when the test binary exits. Each caller gets its own clients with
    /// [`config`](Self::config) (a client is tied to the tokio runtime that made it, and each
    /// `#[tokio::test]` has its own). A failed start fails every caller, with
    /// [`Error::Shared`].
    pub async fn shared(
        configure: impl FnOnce() -> EnvironmentBuilder,
    ) -> Result<&'static Environment, Error> {
        static SHARED: tokio::sync::OnceCell<Result<Environment, Arc<Error>>> =
            tokio::sync::OnceCell::const_new();
        let started = SHARED
            .get_or_init(|| async { configure().start().await.map_err(Arc::new) })
            .await;
        started.as_ref().map_err(|e| Error::Shared(Arc::clone(e)))
    }

    /// The admin's client configuration: the kubeconfig's current context (a client
    /// certificate of group `system:masters`), client-side rate limiting off.
    pub fn config(&self) -> Config {
        self.config.clone()
    }

    /// The admin kubeconfig: context `envtest` (current; client certificate) and
    /// `envtest-token` (bearer token), both cluster-admin, namespace `default`.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The API server's URL, `https://127.0.0.1:<port>`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// etcd's client URL, `http://127.0.0.1:<port>`.
    pub fn etcd_url(&self) -> &str {
        &self.etcd_url
    }

    /// Where the PKI, kubeconfig, etcd data and logs (`logs/<server>.log`) are.
    pub fn directory(&self) -> &Path {
        &self.directory
    }

    /// The binaries it runs.
    pub fn binaries(&self) -> &BinaryAssets {
        &self.binaries
    }

    /// Its server processes, in start order.
    pub fn processes(&self) -> Vec<ProcessRecord> {
        self.servers.iter().map(|s| s.record.clone()).collect()
    }

    /// Stops the servers (SIGTERM, then SIGKILL after the stop timeout) and removes the
    /// temporary directory, reporting what failed (a drop does the same, silently).
    pub fn stop(mut self) -> Result<(), Error> {
        self.shutdown()
    }

    /// Leaves the servers running after this handle and this process are gone (the watchdog
    /// is disarmed, the directory kept), and returns what finds and stops them later.
    pub fn detach(mut self) -> Detached {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.disarm();
        }
        self.temporary = false;
        Detached {
            server: self.server.clone(),
            etcd_url: self.etcd_url.clone(),
            kubeconfig: self.kubeconfig.clone(),
            directory: self.directory.clone(),
            processes: self.servers.drain(..).map(Server::detach).collect(),
        }
    }

    /// Makes the directories and the PKI, then starts the servers; a server that exits because
    /// a port chosen for it was taken meanwhile is stopped with the others and the servers
    /// start again on other ports (at most [`PORT_ATTEMPTS`] times).
    async fn boot(&mut self, builder: &EnvironmentBuilder) -> Result<(), Error> {
        for sub in ["pki", "etcd", "logs"] {
            let path = self.directory.join(sub);
            fs::create_dir_all(&path).map_err(Error::io(format!("creating {}", path.display())))?;
        }
        let pki = pki::generate(&self.directory.join("pki"))?;
        let mut attempt = 1;
        loop {
            let ports = Ports::choose(builder.apiserver_port)?;
            match self.start_servers(builder, &pki, ports).await {
                // (A port the user chose is not changed.)
                Err(e)
                    if attempt < PORT_ATTEMPTS
                        && ports::exited_on_taken_port(&e).is_some_and(|component| {
                            component != KUBE_APISERVER || builder.apiserver_port.is_none()
                        }) =>
                {
                    tracing::warn!("starting again on other ports: {e}");
                    self.stop_servers()?;
                    let data = self.directory.join("etcd");
                    fs::remove_dir_all(&data)
                        .and_then(|()| fs::create_dir_all(&data))
                        .map_err(Error::io(format!("emptying {}", data.display())))?;
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    /// Writes the kubeconfigs for `ports`, then starts each server and waits until it is
    /// ready.
    async fn start_servers(
        &mut self,
        builder: &EnvironmentBuilder,
        pki: &pki::Pki,
        mut ports: Ports,
    ) -> Result<(), Error> {
        let pki_dir = self.directory.join("pki");
        let (etcd_client, apiserver_port) = (ports.etcd_client.port(), ports.apiserver.port());
        self.server = format!("https://127.0.0.1:{apiserver_port}");
        self.etcd_url = format!("http://127.0.0.1:{etcd_client}");
        pki::write_private(
            &self.kubeconfig,
            &kubeconfig::render(
                &self.server,
                &pki.ca_pem,
                &[
                    (CLUSTER_NAME, Credentials::ClientCert(&pki.admin)),
                    (TOKEN_CONTEXT, Credentials::Token(&pki.admin_token)),
                ],
            ),
        )?;
        let controller_manager_kubeconfig = pki_dir.join("kube-controller-manager.kubeconfig");
        pki::write_private(
            &controller_manager_kubeconfig,
            &kubeconfig::render(
                &self.server,
                &pki.ca_pem,
                &[(
                    "kube-controller-manager",
                    Credentials::ClientCert(&pki.controller_manager),
                )],
            ),
        )?;
        let mut config = Config::from_kubeconfig_file(&self.kubeconfig)?;
        config.qps = None;
        self.config = config;
        let client = RestClient::new(self.config.clone())?;
        let timeout = builder.start_timeout;

        let data = self.directory.join("etcd");
        let etcd_args = etcd::args(
            &data,
            ports.etcd_client.release(),
            ports.etcd_peer.release(),
        );
        self.spawn(ETCD, &etcd_args)?;
        wait::until_ready("etcd", timeout, &mut self.servers, || {
            etcd::probe(etcd_client)
        })
        .await?;
        wait::until_ready("etcd's first revisions", timeout, &mut self.servers, || {
            etcd::seed(etcd_client)
        })
        .await?;

        let args = apiserver::args(
            pki,
            &self.etcd_url,
            ports.apiserver.release(),
            &pki_dir,
            &builder.apiserver_args,
        );
        self.spawn(KUBE_APISERVER, &args)?;
        wait::until_ready(KUBE_APISERVER, timeout, &mut self.servers, || {
            apiserver::probe(&client)
        })
        .await?;

        if builder.controller_manager {
            let args = controller_manager::args(pki, &controller_manager_kubeconfig);
            self.spawn(KUBE_CONTROLLER_MANAGER, &args)?;
            wait::until_ready(KUBE_CONTROLLER_MANAGER, timeout, &mut self.servers, || {
                controller_manager::probe(&client)
            })
            .await?;
        }
        Ok(())
    }

    /// Starts the binary `name` with `args`, its output in `logs/<name>.log`, watched.
    fn spawn(&mut self, name: &str, args: &[String]) -> Result<(), Error> {
        let log = self.directory.join("logs").join(format!("{name}.log"));
        let server = Server::spawn(name, &self.binaries.path(name), args, &log)?;
        let pid = server.record.pid;
        self.servers.push(server);
        match &mut self.watchdog {
            Some(watchdog) => watchdog.watch(pid),
            None => Ok(()),
        }
    }

    /// Stops the servers, newest first, each forgotten by the watchdog once gone.
    fn stop_servers(&mut self) -> Result<(), Error> {
        let mut first_error = None;
        while let Some(mut server) = self.servers.pop() {
            match server.stop(self.stop_timeout) {
                Ok(()) => {
                    if let Some(watchdog) = &mut self.watchdog {
                        watchdog.forget(server.record.pid)?;
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn shutdown(&mut self) -> Result<(), Error> {
        let mut first_error = self.stop_servers().err();
        if let Some(watchdog) = self.watchdog.take() {
            if first_error.is_none() {
                watchdog.disarm();
            }
            // Otherwise dropping it closes its input: it tries again.
        }
        if std::mem::take(&mut self.temporary) {
            if let Err(e) = fs::remove_dir_all(&self.directory) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    let what = format!("removing {}", self.directory.display());
                    first_error.get_or_insert(Error::io(what)(e));
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for Environment {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            tracing::warn!("stopping the test environment: {e}");
        }
    }
}

/// A detached environment's servers ([`Environment::detach`]): serialisable, to find and
/// stop them from another process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Detached {
    /// The API server's URL.
    pub server: String,
    /// etcd's client URL.
    pub etcd_url: String,
    /// The admin kubeconfig.
    pub kubeconfig: PathBuf,
    /// The environment's directory.
    #[serde(default)]
    pub directory: PathBuf,
    /// The servers, in start order.
    pub processes: Vec<ProcessRecord>,
}

impl Detached {
    /// Whether every server still runs.
    pub fn is_running(&self) -> bool {
        self.processes.iter().all(ProcessRecord::is_alive)
    }

    /// Whether the API server answers `/readyz` with `ok`, through the admin kubeconfig.
    pub async fn probe_ready(&self) -> Result<(), Error> {
        let client = RestClient::new(Config::from_kubeconfig_file(&self.kubeconfig)?)?;
        apiserver::probe(&client).await.map_err(|last_probe| {
            let apiserver = self.processes.iter().find(|p| p.name == KUBE_APISERVER);
            Error::NotReady {
                component: KUBE_APISERVER.to_owned(),
                timeout: Duration::ZERO,
                last_probe,
                log: apiserver.map(|p| p.log.clone()).unwrap_or_default(),
                log_tail: apiserver.map(|p| p.log_tail(10)).unwrap_or_default(),
            }
        })
    }

    /// Stops the servers, newest first (SIGTERM, then SIGKILL after `grace`); the directory
    /// stays. Those already gone count as stopped.
    pub fn stop(&self, grace: Duration) -> Result<(), Error> {
        let mut first_error = None;
        for process in self.processes.iter().rev() {
            if let Err(e) = process.stop(grace) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
