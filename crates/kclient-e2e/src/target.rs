//! What the scenarios run against.

use std::env;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use kclient_fake::FakeApiServer;
use kclient_rest::{Config, RestClient};

use crate::client::ApiClient;

/// The admin kubeconfig of the real server (set by `cargo xtask e2e test`).
pub const KUBECONFIG_ENV: &str = "KCLIENT_E2E_KUBECONFIG";
/// The kubectl built with the real server (set by `cargo xtask e2e test`).
pub const KUBECTL_ENV: &str = "KCLIENT_E2E_KUBECTL";
/// The Kubernetes version the real server was built as (set by `cargo xtask e2e test`).
pub const KUBERNETES_VERSION_ENV: &str = "KCLIENT_E2E_KUBERNETES_VERSION";
/// The bearer token the fake target accepts (the real server's admin identity is a client
/// certificate; both are what their kubeconfigs carry).
const FAKE_TOKEN: &str = "kclient-e2e-admin";

/// Which kind of server a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// A real kube-apiserver (with etcd and kube-controller-manager).
    Real,
    /// kclient-fake's in-memory API server.
    Fake,
}

impl fmt::Display for TargetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TargetKind::Real => "kube-apiserver",
            TargetKind::Fake => "kclient-fake",
        })
    }
}

/// A server to run scenarios against, with admin credentials.
#[derive(Clone)]
pub struct Target {
    /// Real or fake.
    pub kind: TargetKind,
    /// The server's base URL (`https://127.0.0.1:PORT`).
    pub server: String,
    /// A kubeconfig for it, for independent clients (kubectl).
    pub kubeconfig: PathBuf,
    /// The kubectl to use as an independent client, if there is one.
    pub kubectl: Option<PathBuf>,
    /// The version the server must report at `/version`, if known.
    pub expected_version: Option<String>,
    /// How kclient-rest reaches it (from the kubeconfig), with client-side rate limiting off.
    pub config: Config,
    /// The fake server and the directory of its kubeconfig, kept alive as long as the target.
    fake: Option<Arc<FakeRun>>,
}

/// A running kclient-fake with its kubeconfig on disk.
struct FakeRun {
    _server: FakeApiServer,
    _dir: tempfile::TempDir,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target")
            .field("kind", &self.kind)
            .field("server", &self.server)
            .field("kubeconfig", &self.kubeconfig)
            .finish_non_exhaustive()
    }
}

impl Target {
    /// The real server named by `KCLIENT_E2E_KUBECONFIG`, or `None` when it is unset (the
    /// caller then skips, saying so).
    pub fn real_from_env() -> Result<Option<Target>> {
        let Some(path) = env::var_os(KUBECONFIG_ENV).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        let mut target = Target::from_kubeconfig(TargetKind::Real, Path::new(&path))?;
        target.kubectl = kubectl_from_env();
        target.expected_version = env::var(KUBERNETES_VERSION_ENV)
            .ok()
            .filter(|v| !v.is_empty());
        Ok(Some(target))
    }

    /// A fresh kclient-fake on 127.0.0.1 (HTTPS, bearer-token admin), with a kubeconfig for
    /// independent clients and the real server's kubectl when there is one. The server lives
    /// as long as the target (and its clones) and the tokio runtime that started it. Its
    /// alpha gates are the e2e cluster's (`ShardedListAndWatch`).
    pub async fn fake() -> Result<Target> {
        let server = FakeApiServer::builder()
            .https()
            .token(FAKE_TOKEN)
            .sharded_list_and_watch(true)
            .start()
            .await
            .context("could not start kclient-fake")?;
        let dir = tempfile::Builder::new()
            .prefix("kclient-e2e-fake-")
            .tempdir()
            .context("could not create a directory for the fake's kubeconfig")?;
        let kubeconfig = dir.path().join("kubeconfig");
        server
            .write_kubeconfig(&kubeconfig)
            .context("could not write the fake's kubeconfig")?;
        let mut target = Target::from_kubeconfig(TargetKind::Fake, &kubeconfig)?;
        target.kubectl = kubectl_from_env();
        target.fake = Some(Arc::new(FakeRun {
            _server: server,
            _dir: dir,
        }));
        Ok(target)
    }

    /// Every target available to this run: the real server when configured (first), and a
    /// fresh kclient-fake (always). Prints why the real server is missing.
    pub async fn available() -> Result<Vec<Target>> {
        let mut targets = Vec::new();
        match Target::real_from_env()? {
            Some(real) => targets.push(real),
            None => eprintln!(
                "kclient-e2e: skipping the real kube-apiserver: {KUBECONFIG_ENV} is not set \
                 (run `cargo xtask e2e test`, or `cargo xtask e2e up` and export the printed \
                 variables)"
            ),
        }
        targets.push(Target::fake().await?);
        Ok(targets)
    }

    /// A target from a kubeconfig file (its current context), loaded by kclient-rest.
    pub fn from_kubeconfig(kind: TargetKind, path: &Path) -> Result<Target> {
        let mut config = Config::from_kubeconfig_file(path)
            .with_context(|| format!("could not load kubeconfig {}", path.display()))?;
        // The suite's requests are few and must not wait for client-side throttling.
        config.qps = None;
        Ok(Target {
            kind,
            server: config.host.trim_end_matches('/').to_string(),
            kubeconfig: path.to_path_buf(),
            kubectl: None,
            expected_version: None,
            config,
            fake: None,
        })
    }

    /// A client for this target (kclient-rest's `RestClient` underneath).
    pub fn client(&self) -> Result<ApiClient> {
        let rest = RestClient::new(self.config.clone()).context("could not build a RestClient")?;
        Ok(ApiClient::new(rest))
    }

    /// Creates `manifest` with the independent client (`kubectl create -f`); `None` when
    /// there is no kubectl. (A manifest, not a generator such as `kubectl create configmap`:
    /// those send protobuf, which kclient-fake does not speak.)
    pub async fn kubectl_create(&self, manifest: &serde_json::Value) -> Option<Result<String>> {
        self.kubectl.as_ref()?;
        let written = (|| -> Result<tempfile::NamedTempFile> {
            let mut file = tempfile::Builder::new()
                .prefix("kclient-e2e-manifest-")
                .suffix(".json")
                .tempfile()?;
            serde_json::to_writer(&mut file, manifest)?;
            Ok(file)
        })();
        let file = match written.context("could not write a manifest for kubectl") {
            Ok(file) => file,
            Err(error) => return Some(Err(error)),
        };
        let path = file.path().to_string_lossy().into_owned();
        self.kubectl(&["create", "-f", &path]).await
    }

    /// Runs the independent client (kubectl) with this target's kubeconfig; `None` when there
    /// is no kubectl.
    pub async fn kubectl(&self, args: &[&str]) -> Option<Result<String>> {
        let kubectl = self.kubectl.as_ref()?;
        let run = async {
            let output = tokio::process::Command::new(kubectl)
                .arg(format!("--kubeconfig={}", self.kubeconfig.display()))
                .args(args)
                .output()
                .await
                .with_context(|| format!("could not run {}", kubectl.display()))?;
            if !output.status.success() {
                bail!(
                    "kubectl {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&output.stderr).trim()
                );
            }
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        };
        Some(run.await)
    }
}

/// The kubectl named by `KCLIENT_E2E_KUBECTL`, if any.
fn kubectl_from_env() -> Option<PathBuf> {
    env::var_os(KUBECTL_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}
