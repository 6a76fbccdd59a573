//! What the scenarios run against.

use std::env;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::Deserialize;

use crate::http::HttpClient;

/// The admin kubeconfig of the real server (set by `cargo xtask e2e test`).
pub const KUBECONFIG_ENV: &str = "KCLIENT_E2E_KUBECONFIG";
/// The kubectl built with the real server (set by `cargo xtask e2e test`).
pub const KUBECTL_ENV: &str = "KCLIENT_E2E_KUBECTL";
/// The Kubernetes version the real server was built as (set by `cargo xtask e2e test`).
pub const KUBERNETES_VERSION_ENV: &str = "KCLIENT_E2E_KUBERNETES_VERSION";

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
#[derive(Debug, Clone)]
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
    pub(crate) credentials: Credentials,
}

/// How a target is reached: TLS roots and the client identity.
#[derive(Debug, Clone)]
pub(crate) struct Credentials {
    pub(crate) ca_pem: Option<Vec<u8>>,
    pub(crate) client_cert_pem: Option<Vec<u8>>,
    pub(crate) client_key_pem: Option<Vec<u8>>,
    pub(crate) token: Option<String>,
}

impl Target {
    /// The real server named by `KCLIENT_E2E_KUBECONFIG`, or `None` when it is unset (the
    /// caller then skips, saying so).
    pub fn real_from_env() -> Result<Option<Target>> {
        let Some(path) = env::var_os(KUBECONFIG_ENV).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        let mut target = Target::from_kubeconfig(TargetKind::Real, Path::new(&path))?;
        target.kubectl = env::var_os(KUBECTL_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        target.expected_version = env::var(KUBERNETES_VERSION_ENV)
            .ok()
            .filter(|v| !v.is_empty());
        Ok(Some(target))
    }

    /// Every target available to this run: the real server when configured and, once
    /// kclient-fake can be started from here, the fake. Prints why a target is missing.
    pub fn available() -> Result<Vec<Target>> {
        let mut targets = Vec::new();
        match Target::real_from_env()? {
            Some(real) => targets.push(real),
            None => eprintln!(
                "kclient-e2e: skipping the real kube-apiserver: {KUBECONFIG_ENV} is not set \
                 (run `cargo xtask e2e test`, or `cargo xtask e2e up` and export the printed \
                 variables)"
            ),
        }
        // kclient-fake joins here (TargetKind::Fake) once its server can be started in-process.
        Ok(targets)
    }

    /// A target from a kubeconfig file (its current context).
    pub fn from_kubeconfig(kind: TargetKind, path: &Path) -> Result<Target> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("could not read kubeconfig {}", path.display()))?;
        let config: Kubeconfig = serde_yaml_ng::from_str(&text)
            .with_context(|| format!("{} is not a kubeconfig", path.display()))?;
        let context_name = config
            .current_context
            .as_deref()
            .with_context(|| format!("{} has no current-context", path.display()))?;
        let context = &config
            .contexts
            .iter()
            .find(|c| c.name == context_name)
            .with_context(|| format!("no context {context_name:?} in {}", path.display()))?
            .context;
        let cluster = &config
            .clusters
            .iter()
            .find(|c| c.name == context.cluster)
            .with_context(|| format!("no cluster {:?} in {}", context.cluster, path.display()))?
            .cluster;
        let user = config
            .users
            .iter()
            .find(|u| u.name == context.user)
            .map(|u| u.user.clone())
            .unwrap_or_default();
        let decode = |field: &str, value: &Option<String>| -> Result<Option<Vec<u8>>> {
            value
                .as_deref()
                .map(|v| STANDARD.decode(v.trim()))
                .transpose()
                .with_context(|| format!("{field} in {} is not base64", path.display()))
        };
        let read = |value: &Option<String>| -> Result<Option<Vec<u8>>> {
            value
                .as_deref()
                .map(|file| {
                    let file = path.parent().unwrap_or(Path::new(".")).join(file);
                    std::fs::read(&file)
                        .with_context(|| format!("could not read {}", file.display()))
                })
                .transpose()
        };
        let either = |data: Option<Vec<u8>>, file: Option<Vec<u8>>| data.or(file);
        let credentials = Credentials {
            ca_pem: either(
                decode(
                    "certificate-authority-data",
                    &cluster.certificate_authority_data,
                )?,
                read(&cluster.certificate_authority)?,
            ),
            client_cert_pem: either(
                decode("client-certificate-data", &user.client_certificate_data)?,
                read(&user.client_certificate)?,
            ),
            client_key_pem: either(
                decode("client-key-data", &user.client_key_data)?,
                read(&user.client_key)?,
            ),
            token: user.token.clone(),
        };
        if credentials.client_cert_pem.is_some() != credentials.client_key_pem.is_some() {
            bail!(
                "{}: a client certificate needs both the certificate and the key",
                path.display()
            );
        }
        Ok(Target {
            kind,
            server: cluster.server.trim_end_matches('/').to_string(),
            kubeconfig: path.to_path_buf(),
            kubectl: None,
            expected_version: None,
            credentials,
        })
    }

    /// An HTTP client for this target.
    pub fn client(&self) -> Result<HttpClient> {
        HttpClient::new(&self.server, &self.credentials)
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

#[derive(Deserialize)]
struct Kubeconfig {
    #[serde(rename = "current-context")]
    current_context: Option<String>,
    #[serde(default)]
    clusters: Vec<Named<ClusterEntry>>,
    #[serde(default)]
    users: Vec<NamedUser>,
    #[serde(default)]
    contexts: Vec<NamedContext>,
}

#[derive(Deserialize)]
struct Named<T> {
    name: String,
    cluster: T,
}

#[derive(Deserialize)]
struct ClusterEntry {
    server: String,
    #[serde(rename = "certificate-authority-data")]
    certificate_authority_data: Option<String>,
    #[serde(rename = "certificate-authority")]
    certificate_authority: Option<String>,
}

#[derive(Deserialize)]
struct NamedUser {
    name: String,
    #[serde(default)]
    user: UserEntry,
}

#[derive(Deserialize, Default, Clone)]
struct UserEntry {
    #[serde(rename = "client-certificate-data")]
    client_certificate_data: Option<String>,
    #[serde(rename = "client-certificate")]
    client_certificate: Option<String>,
    #[serde(rename = "client-key-data")]
    client_key_data: Option<String>,
    #[serde(rename = "client-key")]
    client_key: Option<String>,
    token: Option<String>,
}

#[derive(Deserialize)]
struct NamedContext {
    name: String,
    context: ContextEntry,
}

#[derive(Deserialize)]
struct ContextEntry {
    cluster: String,
    user: String,
}
