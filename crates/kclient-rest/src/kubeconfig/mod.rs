//! kubeconfig files: the types (client-go's `clientcmd/api/v1`), loading and merging them the way
//! kubectl does ([`LoadingRules`]), and turning a context into a [`Config`](crate::Config)
//! ([`KubeconfigOptions`]).
//!
//! The types read every kubeconfig kubectl reads and keep what they do not understand: each
//! struct has an `other` map that collects unknown keys, and writes them back unchanged.
//!
//! ```
//! use kclient_rest::kubeconfig::Kubeconfig;
//!
//! let kc = Kubeconfig::from_yaml(
//!     r#"
//! apiVersion: v1
//! kind: Config
//! current-context: dev
//! clusters:
//! - name: dev
//!   cluster: {server: "https://10.0.0.1:6443", some-future-field: 7}
//! users:
//! - name: me
//!   user: {token: secret}
//! contexts:
//! - name: dev
//!   context: {cluster: dev, user: me, namespace: team-a}
//! "#,
//! )
//! .unwrap();
//! assert_eq!(kc.current_context.as_deref(), Some("dev"));
//! let cluster = &kc.clusters[0].cluster.as_ref().unwrap();
//! assert_eq!(cluster.other["some-future-field"], 7);
//! assert!(!format!("{kc:?}").contains("secret"), "Debug redacts tokens");
//! ```

mod client_config;
mod error;
mod loader;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::transport::url::redacted_url;

pub(crate) use client_config::check_proxy_url;
pub use client_config::KubeconfigOptions;
pub use error::KubeconfigError;
pub use loader::{LoadingRules, KUBECONFIG_ENV, RECOMMENDED_FILE_NAME, RECOMMENDED_HOME_DIR};

/// Unknown keys of a kubeconfig object, kept as they were read.
pub type OtherFields = BTreeMap<String, Value>;

/// Shows how many unknown keys a section has, never their names or values: in a malformed
/// file (a token indented one level too deep, a secret pasted as a key) an unknown key can be
/// the secret itself.
struct UnknownKeys<'a>(&'a OtherFields);

impl fmt::Debug for UnknownKeys<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} unknown keys>", self.0.len())
    }
}

/// A kubeconfig file: clusters, users and the contexts that pair them.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
pub struct Kubeconfig {
    /// `v1`.
    #[serde(rename = "apiVersion", skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `Config`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// kubectl preferences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preferences: Option<Preferences>,
    /// The clusters, by name.
    #[serde(
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub clusters: Vec<NamedCluster>,
    /// The users (client-go's `AuthInfos`), by name.
    #[serde(
        rename = "users",
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub auth_infos: Vec<NamedAuthInfo>,
    /// The contexts, by name.
    #[serde(
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub contexts: Vec<NamedContext>,
    /// The context used when none is chosen explicitly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_context: Option<String>,
    /// Extensions, by name.
    #[serde(
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<NamedExtension>,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// kubectl preferences (`colors` and extensions).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
pub struct Preferences {
    /// Whether kubectl colours its output.
    #[serde(
        deserialize_with = "yaml11_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub colors: Option<bool>,
    /// Extensions, by name.
    #[serde(
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<NamedExtension>,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// A named extension: arbitrary data tools attach to a kubeconfig object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedExtension {
    /// The extension's name.
    pub name: String,
    /// Its content.
    #[serde(default)]
    pub extension: Value,
}

/// A cluster with its name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedCluster {
    /// The name contexts refer to.
    pub name: String,
    /// The cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<Cluster>,
}

/// How to reach a cluster: its address and how to trust it.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
pub struct Cluster {
    /// The API server's address (`https://host:port`, possibly with a path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The name to verify the server's certificate against (and to send as SNI), when it
    /// differs from the host in `server`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_server_name: Option<String>,
    /// Skip verifying the server's certificate. Insecure.
    #[serde(
        deserialize_with = "yaml11_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub insecure_skip_tls_verify: Option<bool>,
    /// A PEM file of CA certificates to trust.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate_authority: Option<String>,
    /// Base64 of PEM CA certificates to trust; wins over `certificate-authority`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate_authority_data: Option<String>,
    /// A proxy for every request to this cluster (`http://`, `https://` or `socks5://`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_url: Option<String>,
    /// Do not ask the server for compressed responses.
    #[serde(
        deserialize_with = "yaml11_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub disable_compression: Option<bool>,
    /// Extensions, by name (`client.authentication.k8s.io/exec` is passed to exec plugins).
    #[serde(
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<NamedExtension>,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// Shows everything but a password in `server` and `proxy-url` (as Go's `url.URL.Redacted`
/// shows a URL).
impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster")
            .field("server", &self.server.as_deref().map(redacted_url))
            .field("tls_server_name", &self.tls_server_name)
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field("certificate_authority", &self.certificate_authority)
            .field(
                "certificate_authority_data",
                &self.certificate_authority_data.as_ref().map(|_| "<data>"),
            )
            .field("proxy_url", &self.proxy_url.as_deref().map(redacted_url))
            .field("disable_compression", &self.disable_compression)
            .field("extensions", &self.extensions)
            .field("other", &UnknownKeys(&self.other))
            .finish()
    }
}

/// A user with its name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedAuthInfo {
    /// The name contexts refer to.
    pub name: String,
    /// The credentials.
    #[serde(default, rename = "user", skip_serializing_if = "Option::is_none")]
    pub auth_info: Option<AuthInfo>,
}

/// Who the client is: one of a client certificate, a bearer token (inline or in a file), basic
/// auth, an exec plugin or an auth provider, plus optional impersonation.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
pub struct AuthInfo {
    /// A PEM client certificate file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_certificate: Option<String>,
    /// Base64 of a PEM client certificate; wins over `client-certificate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_certificate_data: Option<String>,
    /// A PEM private key file for the client certificate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_key: Option<String>,
    /// Base64 of a PEM private key; wins over `client-key`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_key_data: Option<String>,
    /// A bearer token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// A file holding a bearer token, re-read periodically.
    #[serde(rename = "tokenFile", skip_serializing_if = "Option::is_none")]
    pub token_file: Option<String>,
    /// The user to impersonate.
    #[serde(rename = "as", skip_serializing_if = "Option::is_none")]
    pub impersonate: Option<String>,
    /// The UID to impersonate.
    #[serde(rename = "as-uid", skip_serializing_if = "Option::is_none")]
    pub impersonate_uid: Option<String>,
    /// The groups to impersonate.
    #[serde(
        rename = "as-groups",
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub impersonate_groups: Vec<String>,
    /// Extra fields of the impersonated user.
    #[serde(
        rename = "as-user-extra",
        deserialize_with = "null_as_empty",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub impersonate_user_extra: BTreeMap<String, Vec<String>>,
    /// Basic-auth user name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Basic-auth password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// A legacy auth-provider plugin (gcp, azure, oidc); kept for information, not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_provider: Option<AuthProviderConfig>,
    /// An exec credential plugin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecConfig>,
    /// Extensions, by name.
    #[serde(
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<NamedExtension>,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub other: OtherFields,
}

impl fmt::Debug for AuthInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redact = |v: &Option<String>| v.as_ref().map(|_| "<redacted>");
        f.debug_struct("AuthInfo")
            .field("client_certificate", &self.client_certificate)
            .field(
                "client_certificate_data",
                &self.client_certificate_data.as_ref().map(|_| "<data>"),
            )
            .field("client_key", &self.client_key)
            .field("client_key_data", &redact(&self.client_key_data))
            .field("token", &redact(&self.token))
            .field("token_file", &self.token_file)
            .field("impersonate", &self.impersonate)
            .field("impersonate_uid", &self.impersonate_uid)
            .field("impersonate_groups", &self.impersonate_groups)
            .field("impersonate_user_extra", &self.impersonate_user_extra)
            .field("username", &self.username)
            .field("password", &redact(&self.password))
            .field("auth_provider", &self.auth_provider)
            .field("exec", &self.exec)
            .field("extensions", &self.extensions)
            .field("other", &UnknownKeys(&self.other))
            .finish()
    }
}

/// A legacy auth-provider plugin's configuration.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuthProviderConfig {
    /// The provider (`oidc`, `gcp`, `azure`).
    pub name: String,
    /// Its settings (which hold tokens and secrets).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub config: BTreeMap<String, String>,
}

impl fmt::Debug for AuthProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthProviderConfig")
            .field("name", &self.name)
            .field("config", &self.config.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// An exec credential plugin: a command that prints an `ExecCredential` with a token or a
/// client certificate (client-go's `clientcmdapi.ExecConfig`). Its `Debug` output hides the
/// arguments, the environment and the cluster configuration, which often hold secrets
/// (`--client-secret=…`), as client-go's `String()` does.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecConfig {
    /// The command to run: a path (relative paths resolve against the kubeconfig's directory)
    /// or a name looked up in `PATH`.
    pub command: String,
    /// Its arguments.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub args: Vec<String>,
    /// Extra environment variables for it.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub env: Vec<ExecEnvVar>,
    /// The `ExecCredential` version to speak: `client.authentication.k8s.io/v1` or
    /// `client.authentication.k8s.io/v1beta1`.
    #[serde(default, rename = "apiVersion")]
    pub api_version: String,
    /// A message shown when the command is not found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_hint: Option<String>,
    /// Pass the cluster's details to the plugin in `KUBERNETES_EXEC_INFO`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provide_cluster_info: bool,
    /// `Never`, `IfAvailable` or `Always`: whether the plugin may use standard input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interactive_mode: Option<ExecInteractiveMode>,
    /// The cluster's `client.authentication.k8s.io/exec` extension, passed to the plugin as
    /// `spec.cluster.config` (not part of the file format: filled in from the cluster).
    #[serde(skip)]
    pub cluster_config: Option<Value>,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// What `Debug` prints in place of a secret, as client-go.
const REDACTED: &str = "--- REDACTED ---";

impl fmt::Debug for ExecConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = |empty: bool| if empty { None } else { Some(REDACTED) };
        f.debug_struct("ExecConfig")
            .field("command", &self.command)
            .field("args", &hidden(self.args.is_empty()))
            .field("env", &hidden(self.env.is_empty()))
            .field("api_version", &self.api_version)
            .field("install_hint", &self.install_hint)
            .field("provide_cluster_info", &self.provide_cluster_info)
            .field("interactive_mode", &self.interactive_mode)
            .field("cluster_config", &hidden(self.cluster_config.is_none()))
            .field("other", &UnknownKeys(&self.other))
            .finish()
    }
}

/// One environment variable of an exec plugin.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecEnvVar {
    /// The variable's name.
    pub name: String,
    /// Its value.
    #[serde(default)]
    pub value: String,
}

/// Whether an exec plugin may read standard input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExecInteractiveMode {
    /// Never give the plugin standard input.
    Never,
    /// Give it standard input when that is a terminal (the default for `v1beta1`).
    IfAvailable,
    /// Always give it standard input; fail if that is not a terminal.
    Always,
}

/// A context with its name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedContext {
    /// The name to select it by.
    pub name: String,
    /// The context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Context>,
}

/// A cluster, a user and a default namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
pub struct Context {
    /// The cluster's name.
    pub cluster: String,
    /// The user's name.
    #[serde(rename = "user")]
    pub auth_info: String,
    /// The default namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Extensions, by name.
    #[serde(
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<NamedExtension>,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub other: OtherFields,
}

/// Deserializes `null` (and an absent key, with `default`) as the type's default.
fn null_as_empty<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

impl fmt::Debug for Kubeconfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kubeconfig")
            .field("current_context", &self.current_context)
            .field("clusters", &self.clusters)
            .field("auth_infos", &self.auth_infos)
            .field("contexts", &self.contexts)
            .field("preferences", &self.preferences)
            .field("extensions", &self.extensions)
            .field("other", &UnknownKeys(&self.other))
            .finish()
    }
}

impl Kubeconfig {
    /// Parses a kubeconfig from YAML (or JSON, which is YAML). An empty document is an empty
    /// kubeconfig, as in client-go. Relative paths are left as they are.
    pub fn from_yaml(text: &str) -> Result<Self, KubeconfigError> {
        Self::parse(text, None)
    }

    fn parse(text: &str, path: Option<&Path>) -> Result<Self, KubeconfigError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        kclient_core::yaml_nesting::check_yaml_nesting(
            text,
            kclient_core::yaml_nesting::MAX_YAML_NESTING,
        )
        .map_err(|e| KubeconfigError::Parse {
            path: path.map(Path::to_path_buf),
            message: e.to_string(),
        })?;
        let parsed: Option<Kubeconfig> =
            serde_yaml_ng::from_str(text).map_err(|e| KubeconfigError::Parse {
                path: path.map(Path::to_path_buf),
                message: without_quoted_values(&e.to_string()),
            })?;
        let mut kc = parsed.unwrap_or_default();
        // kubectl's decoder knows one kind in one version (and defaults both when absent).
        // The message names the field, never its value: a value in the wrong place can be a
        // credential (a continuation line folds into the plain scalar before it).
        let kind_ok = matches!(kc.kind.as_deref().unwrap_or_default(), "" | "Config");
        let version_ok = matches!(kc.api_version.as_deref().unwrap_or_default(), "" | "v1");
        let wrong = match (kind_ok, version_ok) {
            (true, true) => None,
            (false, true) => Some("its kind is not Config"),
            (true, false) => Some("its apiVersion is not v1"),
            (false, false) => Some("its kind is not Config and its apiVersion is not v1"),
        };
        if let Some(wrong) = wrong {
            return Err(KubeconfigError::Parse {
                path: path.map(Path::to_path_buf),
                message: format!(
                    "{wrong}: a kubeconfig is kind Config, apiVersion v1 (the value is not shown)"
                ),
            });
        }
        kc.dedupe_last_wins();
        Ok(kc)
    }

    /// Reads a kubeconfig file and resolves the relative paths in it (certificate, key and token
    /// files, and exec commands that contain a `/`) against the file's directory, as client-go's
    /// `LoadFromFile` + `ResolveLocalPaths` do.
    pub fn read_from(path: impl AsRef<Path>) -> Result<Self, KubeconfigError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| KubeconfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let text = decode_text(&bytes);
        let mut kc = Self::parse(&text, Some(path))?;
        let base = absolute_dir_of(path);
        kc.resolve_relative_paths(&base);
        Ok(kc)
    }

    /// Writes the kubeconfig as YAML, unknown fields included.
    pub fn to_yaml(&self) -> Result<String, KubeconfigError> {
        serde_yaml_ng::to_string(self).map_err(KubeconfigError::Serialize)
    }

    /// Merges `other` into `self` with client-go's rules, `self` taking precedence: a named
    /// cluster, user, context or extension already present is kept whole (even fields it lacks
    /// are not taken from `other`), and scalar values such as `current-context` are taken from
    /// `other` only when `self` has none.
    pub fn merge(mut self, other: Kubeconfig) -> Self {
        fn merge_named<T>(dst: &mut Vec<T>, src: Vec<T>, name: impl Fn(&T) -> &str) {
            for item in src {
                if !dst.iter().any(|d| name(d) == name(&item)) {
                    dst.push(item);
                }
            }
        }
        merge_named(&mut self.clusters, other.clusters, |c| &c.name);
        merge_named(&mut self.auth_infos, other.auth_infos, |c| &c.name);
        merge_named(&mut self.contexts, other.contexts, |c| &c.name);
        merge_named(&mut self.extensions, other.extensions, |c| &c.name);
        if self.current_context.as_deref().is_none_or(str::is_empty) {
            self.current_context = other.current_context;
        }
        if self.api_version.is_none() {
            self.api_version = other.api_version;
        }
        if self.kind.is_none() {
            self.kind = other.kind;
        }
        match (&mut self.preferences, other.preferences) {
            (Some(mine), Some(theirs)) => {
                if mine.colors.is_none() {
                    mine.colors = theirs.colors;
                }
                merge_named(&mut mine.extensions, theirs.extensions, |c| &c.name);
            }
            (None, theirs) => self.preferences = theirs,
            (Some(_), None) => {}
        }
        for (k, v) in other.other {
            self.other.entry(k).or_insert(v);
        }
        self
    }

    /// The cluster named `name`.
    pub fn cluster(&self, name: &str) -> Option<&Cluster> {
        self.clusters
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.cluster.as_ref())
    }

    /// The user named `name`.
    pub fn auth_info(&self, name: &str) -> Option<&AuthInfo> {
        self.auth_infos
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.auth_info.as_ref())
    }

    /// The context named `name`.
    pub fn context(&self, name: &str) -> Option<&Context> {
        self.contexts
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.context.as_ref())
    }

    /// Within one file, a name listed twice keeps its last entry (client-go reads the lists into
    /// maps).
    fn dedupe_last_wins(&mut self) {
        /// Keeps each name at its first position with its last value, in one pass (a
        /// kubeconfig with tens of thousands of entries must not take quadratic time).
        fn dedupe<T>(items: &mut Vec<T>, name: impl Fn(&T) -> &str) {
            let mut kept: Vec<T> = Vec::with_capacity(items.len());
            let mut position: std::collections::HashMap<String, usize> =
                std::collections::HashMap::with_capacity(items.len());
            for item in items.drain(..) {
                match position.get(name(&item)) {
                    Some(&pos) => kept[pos] = item,
                    None => {
                        position.insert(name(&item).to_owned(), kept.len());
                        kept.push(item);
                    }
                }
            }
            *items = kept;
        }
        dedupe(&mut self.clusters, |c| &c.name);
        dedupe(&mut self.auth_infos, |c| &c.name);
        dedupe(&mut self.contexts, |c| &c.name);
        dedupe(&mut self.extensions, |c| &c.name);
    }

    /// Makes relative file references absolute against `base`.
    pub(crate) fn resolve_relative_paths(&mut self, base: &Path) {
        let resolve = |p: &mut Option<String>| {
            if let Some(s) = p.as_mut() {
                if !s.is_empty() && Path::new(s.as_str()).is_relative() {
                    *s = base.join(s.as_str()).to_string_lossy().into_owned();
                }
            }
        };
        for c in self.clusters.iter_mut().filter_map(|c| c.cluster.as_mut()) {
            resolve(&mut c.certificate_authority);
        }
        for a in self
            .auth_infos
            .iter_mut()
            .filter_map(|a| a.auth_info.as_mut())
        {
            resolve(&mut a.client_certificate);
            resolve(&mut a.client_key);
            resolve(&mut a.token_file);
            if let Some(exec) = a.exec.as_mut() {
                if exec.command.contains(std::path::MAIN_SEPARATOR) {
                    let mut cmd = Some(std::mem::take(&mut exec.command));
                    resolve(&mut cmd);
                    exec.command = cmd.unwrap_or_default();
                }
            }
        }
    }
}

/// Decodes a file's bytes as UTF-8, or as UTF-16 when it starts with a byte-order mark (some
/// Windows tools write kubeconfigs that way).
fn decode_text(bytes: &[u8]) -> String {
    let utf16 = |le: bool| {
        let units: Vec<u16> = bytes[2..]
            .chunks_exact(2)
            .map(|c| {
                if le {
                    u16::from_le_bytes([c[0], c[1]])
                } else {
                    u16::from_be_bytes([c[0], c[1]])
                }
            })
            .collect();
        String::from_utf16_lossy(&units)
    };
    match bytes {
        [0xff, 0xfe, ..] => utf16(true),
        [0xfe, 0xff, ..] => utf16(false),
        _ => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// The absolute directory of a file.
fn absolute_dir_of(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new(""));
    if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(dir))
            .unwrap_or_else(|_| dir.to_path_buf())
    }
}

/// A boolean as kubectl's YAML reads it (YAML 1.1): `true`/`false`, and also `yes`/`no`,
/// `on`/`off`, `y`/`n` in their usual capitalisations, which YAML 1.2 reads as strings.
fn yaml11_bool<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<bool>, D::Error> {
    use serde::de::Error as _;
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bool(bool),
        Text(String),
    }
    match Option::<Raw>::deserialize(deserializer)? {
        None => Ok(None),
        Some(Raw::Bool(b)) => Ok(Some(b)),
        Some(Raw::Text(t)) => match t.as_str() {
            "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "true" | "True" | "TRUE" => {
                Ok(Some(true))
            }
            "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "false" | "False"
            | "FALSE" => Ok(Some(false)),
            _ => Err(D::Error::custom("expected a boolean")),
        },
    }
}

/// `message` with the content of every `"…"` and `` `…` `` taken out (serde's messages quote
/// the offending value: `invalid type: string "…", expected …`).
fn without_quoted_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut chars = message.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '"' || c == '`' {
            let mut escaped = false;
            for inner in chars.by_ref() {
                if inner == c && !escaped {
                    out.push('…');
                    out.push(c);
                    break;
                }
                escaped = inner == '\\' && !escaped;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_documents_are_empty_configs() {
        for text in ["", "   \n", "# only a comment\n", "---\n", "null"] {
            assert_eq!(Kubeconfig::from_yaml(text).unwrap(), Kubeconfig::default());
        }
    }

    #[test]
    fn nulls_are_empty_lists() {
        let kc = Kubeconfig::from_yaml(
            "clusters: null\nusers:\n- name: u\n  user:\n    exec: {command: x, apiVersion: v, args: null, env: null}\n",
        )
        .unwrap();
        assert!(kc.clusters.is_empty());
        let exec = kc.auth_info("u").unwrap().exec.as_ref().unwrap();
        assert!(exec.args.is_empty() && exec.env.is_empty());
    }

    #[test]
    fn unknown_fields_round_trip() {
        let text = "apiVersion: v1\nkind: Config\nfuture: {a: 1}\nclusters:\n- name: c\n  cluster:\n    server: https://x\n    shiny: true\nusers:\n- name: u\n  user:\n    token: t\n    weird: [1, 2]\n";
        let kc = Kubeconfig::from_yaml(text).unwrap();
        assert_eq!(kc.other["future"]["a"], 1);
        let again = Kubeconfig::from_yaml(&kc.to_yaml().unwrap()).unwrap();
        assert_eq!(again, kc);
        assert_eq!(again.auth_info("u").unwrap().other["weird"][1], 2);
    }

    #[test]
    fn duplicate_names_in_one_file_keep_the_last() {
        let kc = Kubeconfig::from_yaml(
            "clusters:\n- name: c\n  cluster: {server: https://first}\n- name: c\n  cluster: {server: https://second}\n",
        )
        .unwrap();
        assert_eq!(kc.clusters.len(), 1);
        assert_eq!(
            kc.cluster("c").unwrap().server.as_deref(),
            Some("https://second")
        );
    }

    #[test]
    fn utf16_files_are_read() {
        let text = "current-context: x\n";
        let mut bytes = vec![0xff, 0xfe];
        for unit in text.encode_utf16() {
            bytes.extend_from_slice(&unit.to_le_bytes());
        }
        let kc = Kubeconfig::parse(&decode_text(&bytes), None).unwrap();
        assert_eq!(kc.current_context.as_deref(), Some("x"));
    }

    #[test]
    fn debug_redacts_secrets() {
        let kc = Kubeconfig::from_yaml(
            "users:\n- name: u\n  user:\n    token: tok-123\n    password: pw-456\n    client-key-data: a2V5\n    auth-provider: {name: oidc, config: {id-token: idt-789}}\n",
        )
        .unwrap();
        let debug = format!("{kc:?}");
        for secret in ["tok-123", "pw-456", "a2V5", "idt-789"] {
            assert!(!debug.contains(secret), "{debug}");
        }
    }
}
