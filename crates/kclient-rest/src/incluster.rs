//! The in-cluster configuration: a pod's service account (client-go's `rest.InClusterConfig`).

use std::path::{Path, PathBuf};

use crate::config::{Config, ConfigError};
use crate::error::Error;

/// The service account token file every pod gets.
pub const SERVICE_ACCOUNT_TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";
/// The cluster CA bundle every pod gets.
pub const SERVICE_ACCOUNT_CA_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
/// The pod's namespace.
pub const SERVICE_ACCOUNT_NAMESPACE_FILE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
/// The API server's service address, set in every pod.
pub const SERVICE_HOST_ENV: &str = "KUBERNETES_SERVICE_HOST";
/// The API server's service port, set in every pod.
pub const SERVICE_PORT_ENV: &str = "KUBERNETES_SERVICE_PORT";
/// Overrides the namespace file, as in client-go.
pub const POD_NAMESPACE_ENV: &str = "POD_NAMESPACE";

/// Where the in-cluster configuration comes from. [`InCluster::from_env`] reads the real
/// environment and paths; tests point the fields elsewhere.
///
/// ```
/// use kclient_rest::incluster::InCluster;
///
/// let dir = std::env::temp_dir().join(format!("kclient-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("token"), "tok").unwrap();
/// let config = InCluster {
///     service_host: Some("10.96.0.1".into()),
///     service_port: Some("443".into()),
///     pod_namespace: None,
///     ..InCluster::at_dir(&dir)
/// }
/// .load()
/// .unwrap();
/// assert_eq!(config.host, "https://10.96.0.1:443");
/// assert_eq!(config.namespace(), "default");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InCluster {
    /// `KUBERNETES_SERVICE_HOST`.
    pub service_host: Option<String>,
    /// `KUBERNETES_SERVICE_PORT`.
    pub service_port: Option<String>,
    /// `POD_NAMESPACE`.
    pub pod_namespace: Option<String>,
    /// The token file.
    pub token_file: PathBuf,
    /// The CA file.
    pub ca_file: PathBuf,
    /// The namespace file.
    pub namespace_file: PathBuf,
}

impl InCluster {
    /// The real environment and the standard service-account paths.
    pub fn from_env() -> Self {
        let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        Self {
            service_host: var(SERVICE_HOST_ENV),
            service_port: var(SERVICE_PORT_ENV),
            pod_namespace: var(POD_NAMESPACE_ENV),
            token_file: SERVICE_ACCOUNT_TOKEN_FILE.into(),
            ca_file: SERVICE_ACCOUNT_CA_FILE.into(),
            namespace_file: SERVICE_ACCOUNT_NAMESPACE_FILE.into(),
        }
    }

    /// No environment, and the files `token`, `ca.crt` and `namespace` in `dir`.
    pub fn at_dir(dir: &Path) -> Self {
        Self {
            service_host: None,
            service_port: None,
            pod_namespace: None,
            token_file: dir.join("token"),
            ca_file: dir.join("ca.crt"),
            namespace_file: dir.join("namespace"),
        }
    }

    /// Whether the service environment variables are set.
    pub fn possible(&self) -> bool {
        self.service_host.is_some() && self.service_port.is_some()
    }

    /// Builds the configuration: `https://host:port`, the token file (read now, and re-read
    /// every minute by the client), the CA file if it exists and holds certificates (client-go
    /// only logs when it does not), and the namespace (`POD_NAMESPACE`, else the namespace
    /// file, else `default`).
    pub fn load(&self) -> Result<Config, Error> {
        let (Some(host), Some(port)) = (&self.service_host, &self.service_port) else {
            return Err(ConfigError::NotInCluster.into());
        };
        let token =
            std::fs::read_to_string(&self.token_file).map_err(|source| ConfigError::ReadFile {
                what: "service account token",
                path: self.token_file.clone(),
                source,
            })?;
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("https://[{host}]:{port}")
        } else {
            format!("https://{host}:{port}")
        };
        let mut config = Config::new(host);
        config.bearer_token = Some(token);
        config.bearer_token_file = Some(self.token_file.clone());
        match std::fs::read(&self.ca_file) {
            Ok(pem) if crate::transport::tls::pem_has_certificates(&pem) => {
                config.tls.ca_file = Some(self.ca_file.clone());
            }
            Ok(_) => tracing::error!(
                path = %self.ca_file.display(),
                "expected to load root CA config, but the file holds no certificates"
            ),
            Err(e) => tracing::error!(
                path = %self.ca_file.display(),
                error = %e,
                "expected to load root CA config"
            ),
        }
        config.namespace = Some(self.namespace());
        Ok(config)
    }

    /// The pod's namespace: `POD_NAMESPACE`, else the namespace file, else `default`.
    pub fn namespace(&self) -> String {
        if let Some(ns) = &self.pod_namespace {
            return ns.clone();
        }
        match std::fs::read_to_string(&self.namespace_file) {
            Ok(ns) if !ns.trim().is_empty() => ns.trim().to_owned(),
            _ => crate::config::DEFAULT_NAMESPACE.to_owned(),
        }
    }
}

/// Whether the process runs in a pod (the service environment variables are set).
pub(crate) fn possible() -> bool {
    InCluster::from_env().possible()
}

impl Config {
    /// The in-cluster configuration of the pod this process runs in: the API server's service
    /// address and the pod's service account (token re-read every minute, CA, namespace).
    pub fn incluster() -> Result<Self, Error> {
        InCluster::from_env().load()
    }
}
