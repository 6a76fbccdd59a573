//! [`KubeconfigOptions`]: choosing a context (and overriding parts of it) and building a
//! [`Config`] from it, as client-go's `DirectClientConfig.ClientConfig` does.

use std::path::PathBuf;

use base64::Engine as _;

use super::{
    AuthInfo, Cluster, Context, ExecInteractiveMode, Kubeconfig, KubeconfigError, LoadingRules,
};
use crate::config::{BasicAuth, Config, ImpersonationConfig, Proxy};
use crate::error::Error;
use crate::transport::url::redacted_url;

/// The cluster extension passed to exec plugins as `spec.cluster.config`.
const EXEC_CLUSTER_EXTENSION: &str = "client.authentication.k8s.io/exec";

/// Which kubeconfig to read and which parts of it to use or override (kubectl's
/// `--kubeconfig`, `--context`, `--cluster`, `--user`, `--namespace` and `--server`).
///
/// ```no_run
/// use kclient_rest::{Config, KubeconfigOptions};
///
/// let config = Config::from_kubeconfig(&KubeconfigOptions {
///     context: Some("staging".into()),
///     namespace: Some("team-a".into()),
///     ..KubeconfigOptions::default()
/// })
/// .unwrap();
/// assert_eq!(config.namespace(), "team-a");
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct KubeconfigOptions {
    /// Read only this file (it must exist) instead of `KUBECONFIG` or `~/.kube/config`.
    pub path: Option<PathBuf>,
    /// The context to use instead of `current-context`. It must exist.
    pub context: Option<String>,
    /// The cluster to use instead of the context's. It must exist.
    pub cluster: Option<String>,
    /// The user to use instead of the context's. It must exist.
    pub user: Option<String>,
    /// The namespace to use instead of the context's.
    pub namespace: Option<String>,
    /// The server address to use instead of the cluster's (this also drops the cluster's
    /// `tls-server-name`, as client-go does).
    pub server: Option<String>,
}

/// Shows a password in `server` as Go's `url.URL.Redacted` does (`user:xxxxx@`).
impl std::fmt::Debug for KubeconfigOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeconfigOptions")
            .field("path", &self.path)
            .field("context", &self.context)
            .field("cluster", &self.cluster)
            .field("user", &self.user)
            .field("namespace", &self.namespace)
            .field("server", &self.server.as_deref().map(redacted_url))
            .finish()
    }
}

impl KubeconfigOptions {
    /// The loading rules these options imply: the explicit path, or kubectl's defaults.
    pub fn loading_rules(&self) -> LoadingRules {
        match &self.path {
            Some(p) => LoadingRules::explicit(p.clone()),
            None => LoadingRules::from_env(),
        }
    }

    /// Loads the kubeconfig and builds the configuration.
    pub(crate) fn load_config(&self) -> Result<Config, Error> {
        let (kubeconfig, missing) = self.loading_rules().load_reporting_missing()?;
        self.build_reporting(&kubeconfig, missing)
    }

    /// Builds the configuration of the selected context of an already loaded kubeconfig.
    pub fn build(&self, kubeconfig: &Kubeconfig) -> Result<Config, Error> {
        self.build_reporting(kubeconfig, Vec::new())
    }

    fn build_reporting(
        &self,
        kubeconfig: &Kubeconfig,
        missing: Vec<PathBuf>,
    ) -> Result<Config, Error> {
        let selected = self.select(kubeconfig)?;
        selected.confirm_usable(missing)?;
        selected.into_config()
    }

    /// Picks the context, cluster and user, with overrides applied.
    fn select<'a>(&'a self, kc: &'a Kubeconfig) -> Result<Selected<'a>, KubeconfigError> {
        let (context_name, context_required) = match &self.context {
            Some(c) if !c.is_empty() => (c.as_str(), true),
            _ => (kc.current_context.as_deref().unwrap_or(""), false),
        };
        let mut context = match kc.context(context_name) {
            Some(c) => c.clone(),
            None if context_required => {
                return Err(KubeconfigError::ContextNotFound(context_name.to_owned()))
            }
            None => Context::default(),
        };
        let context_missing = !context_name.is_empty() && kc.context(context_name).is_none();
        if let Some(cluster) = self.cluster.as_ref().filter(|c| !c.is_empty()) {
            if kc.cluster(cluster).is_none() {
                return Err(KubeconfigError::ClusterNotFound(cluster.clone()));
            }
            context.cluster = cluster.clone();
        }
        if let Some(user) = self.user.as_ref().filter(|c| !c.is_empty()) {
            if kc.auth_info(user).is_none() {
                return Err(KubeconfigError::UserNotFound(user.clone()));
            }
            context.auth_info = user.clone();
        }
        if let Some(ns) = self.namespace.as_ref().filter(|c| !c.is_empty()) {
            context.namespace = Some(ns.clone());
        }
        let mut cluster = kc.cluster(&context.cluster).cloned().unwrap_or_default();
        if let Some(server) = self.server.as_ref().filter(|c| !c.is_empty()) {
            cluster.server = Some(server.clone());
            cluster.tls_server_name = None;
        }
        let auth_info = kc
            .auth_info(&context.auth_info)
            .cloned()
            .unwrap_or_default();
        Ok(Selected {
            context_name,
            context_missing,
            context,
            cluster,
            auth_info,
        })
    }
}

/// The context, cluster and user a configuration is built from.
struct Selected<'a> {
    context_name: &'a str,
    context_missing: bool,
    context: Context,
    cluster: Cluster,
    auth_info: AuthInfo,
}

fn non_empty(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.is_empty())
}

impl Selected<'_> {
    /// client-go's `ConfirmUsable`: every problem with the selection, or `Empty` when there is
    /// no cluster at all.
    fn confirm_usable(&self, missing: Vec<PathBuf>) -> Result<(), KubeconfigError> {
        let mut errors = Vec::new();
        if self.context_missing {
            errors.push(format!(
                "context was not found for specified context: {}",
                self.context_name
            ));
        }
        auth_info_errors(&self.context.auth_info, &self.auth_info, &mut errors);
        if self.cluster == Cluster::default() {
            if errors.is_empty() {
                return Err(KubeconfigError::Empty { missing });
            }
        } else {
            cluster_errors(&self.context.cluster, &self.cluster, &mut errors);
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(KubeconfigError::Invalid(errors))
        }
    }

    fn into_config(self) -> Result<Config, Error> {
        let c = self.cluster;
        let a = self.auth_info;
        let mut config = Config::new(non_empty(&c.server).unwrap_or_default());
        if let Some(proxy) = non_empty(&c.proxy_url) {
            config.proxy = Proxy::Url(proxy.to_owned());
        }
        config.namespace = non_empty(&self.context.namespace).map(str::to_owned);
        if let Some(user) = non_empty(&a.impersonate) {
            config.impersonate = ImpersonationConfig {
                user: Some(user.to_owned()),
                uid: non_empty(&a.impersonate_uid).map(str::to_owned),
                groups: a.impersonate_groups.clone(),
                extra: a.impersonate_user_extra.clone(),
            };
        }
        // As in client-go, credentials and CA settings apply only to https servers.
        let is_tls = config
            .host
            .get(..8)
            .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
        if !is_tls {
            return Ok(config);
        }
        set_credentials(&mut config, &a, &self.context.auth_info, &c)?;
        config.tls.ca_file = non_empty(&c.certificate_authority).map(PathBuf::from);
        config.tls.ca_data = decode_base64(
            "certificate-authority-data",
            &self.context.cluster,
            &c.certificate_authority_data,
        )?;
        config.tls.insecure = c.insecure_skip_tls_verify.unwrap_or(false);
        config.tls.server_name = non_empty(&c.tls_server_name).map(str::to_owned);
        Ok(config)
    }
}

/// The problems of user `user`'s credentials `a` (client-go's `validateAuthInfo`): more than
/// one method, a certificate without its key, unreadable files, an incomplete exec plugin,
/// impersonation details without a user.
fn auth_info_errors(user: &str, a: &AuthInfo, errors: &mut Vec<String>) {
    let mut methods = Vec::new();
    if non_empty(&a.token).is_some() {
        methods.push("token");
    }
    if non_empty(&a.username).is_some() || non_empty(&a.password).is_some() {
        methods.push("basicAuth");
    }
    if methods.len() > 1 {
        errors.push(format!(
            "more than one authentication method found for {user}; found {methods:?}, only one is allowed"
        ));
    }
    let has_cert = non_empty(&a.client_certificate).is_some()
        || non_empty(&a.client_certificate_data).is_some();
    let has_key = non_empty(&a.client_key).is_some() || non_empty(&a.client_key_data).is_some();
    if has_cert && !has_key {
        errors.push(format!(
            "client-key-data or client-key must be specified for {user} to use the clientCert authentication method"
        ));
    }
    if has_cert {
        for (what, file) in [
            ("client-cert", &a.client_certificate),
            ("client-key", &a.client_key),
        ] {
            if let Some(f) = non_empty(file) {
                if let Err(e) = std::fs::metadata(f) {
                    errors.push(format!("unable to read {what} {f} for {user} due to {e}"));
                }
            }
        }
    }
    if let Some(exec) = &a.exec {
        exec_errors(user, exec, a.auth_provider.is_some(), errors);
    }
    if (non_empty(&a.impersonate_uid).is_some()
        || !a.impersonate_groups.is_empty()
        || !a.impersonate_user_extra.is_empty())
        && non_empty(&a.impersonate).is_none()
    {
        errors.push(format!(
            "requesting uid, groups or user-extra for {user} without impersonating a user"
        ));
    }
}

/// The problems of user `user`'s exec plugin (client-go's `validateAuthInfo`, its exec part).
fn exec_errors(
    user: &str,
    exec: &super::ExecConfig,
    has_auth_provider: bool,
    errors: &mut Vec<String>,
) {
    if has_auth_provider {
        errors.push(format!(
            "authProvider cannot be provided in combination with an exec plugin for {user}"
        ));
    }
    if exec.command.is_empty() {
        errors.push(format!(
            "command must be specified for {user} to use exec authentication plugin"
        ));
    }
    if exec.api_version.is_empty() {
        errors.push(format!(
            "apiVersion must be specified for {user} to use exec authentication plugin"
        ));
    }
    if exec.env.iter().any(|e| e.name.is_empty()) {
        errors.push(format!(
            "env variable name must be specified for {user} to use exec authentication plugin"
        ));
    }
    if effective_interactive_mode(exec).is_none() {
        errors.push(format!(
            "interactiveMode must be specified for {user} to use exec authentication plugin"
        ));
    }
}

/// The problems of cluster `cluster_name`, `c` (client-go's `validateClusterInfo`): no
/// server, an invalid proxy URL, an unreadable CA file.
fn cluster_errors(cluster_name: &str, c: &Cluster, errors: &mut Vec<String>) {
    if non_empty(&c.server).is_none() {
        if cluster_name.is_empty() {
            errors.push("default cluster has no server defined".to_owned());
        } else {
            errors.push(format!("no server found for cluster {cluster_name:?}"));
        }
    }
    if let Some(proxy) = non_empty(&c.proxy_url) {
        if let Err(reason) = check_proxy_url(proxy) {
            errors.push(format!(
                "invalid 'proxy-url' for cluster {cluster_name:?}: {reason}"
            ));
        }
    }
    if let Some(ca) = non_empty(&c.certificate_authority) {
        if let Err(e) = std::fs::metadata(ca) {
            errors.push(format!(
                "unable to read certificate-authority {ca} for {cluster_name} due to {e}"
            ));
        }
    }
}

/// Sets the credentials of user `user_name`, `a`, on `config`: a token (or token file), a
/// client certificate, basic auth, an auth provider, an exec plugin (with cluster `c`'s
/// exec extension).
fn set_credentials(
    config: &mut Config,
    a: &AuthInfo,
    user_name: &str,
    c: &Cluster,
) -> Result<(), Error> {
    if let Some(token) = non_empty(&a.token) {
        config.bearer_token = Some(token.to_owned());
        config.bearer_token_file = non_empty(&a.token_file).map(PathBuf::from);
    } else if let Some(file) = non_empty(&a.token_file) {
        let token =
            std::fs::read_to_string(file).map_err(|source| KubeconfigError::ReferencedFile {
                what: "tokenFile",
                path: PathBuf::from(file),
                source,
            })?;
        config.bearer_token = Some(token);
        config.bearer_token_file = Some(PathBuf::from(file));
    }
    if non_empty(&a.client_certificate).is_some() || non_empty(&a.client_certificate_data).is_some()
    {
        config.tls.cert_file = non_empty(&a.client_certificate).map(PathBuf::from);
        config.tls.cert_data = decode_base64(
            "client-certificate-data",
            user_name,
            &a.client_certificate_data,
        )?;
        config.tls.key_file = non_empty(&a.client_key).map(PathBuf::from);
        config.tls.key_data = decode_base64("client-key-data", user_name, &a.client_key_data)?;
    }
    if non_empty(&a.username).is_some() || non_empty(&a.password).is_some() {
        config.basic_auth = Some(BasicAuth {
            username: a.username.clone().unwrap_or_default(),
            password: a.password.clone().unwrap_or_default(),
        });
    }
    config.auth_provider = a.auth_provider.clone();
    if let Some(mut exec) = a.exec.clone() {
        exec.interactive_mode = effective_interactive_mode(&exec);
        exec.install_hint = exec.install_hint.as_deref().map(clean_control_characters);
        exec.cluster_config = c
            .extensions
            .iter()
            .find(|e| e.name == EXEC_CLUSTER_EXTENSION)
            .map(|e| e.extension.clone());
        config.exec = Some(exec);
    }
    Ok(())
}

/// The bytes of a `*-data` field (`field`) of the user or cluster `name`, base64-decoded.
fn decode_base64(
    field: &'static str,
    name: &str,
    data: &Option<String>,
) -> Result<Option<Vec<u8>>, KubeconfigError> {
    non_empty(data)
        .map(|d| {
            base64::engine::general_purpose::STANDARD
                .decode(d.trim())
                .map_err(|source| KubeconfigError::InvalidBase64 {
                    field,
                    name: name.to_owned(),
                    source,
                })
        })
        .transpose()
}

/// The interactive mode after client-go's defaulting: `v1beta1` (and `v1alpha1`) default to
/// `IfAvailable`; other versions must say.
fn effective_interactive_mode(exec: &super::ExecConfig) -> Option<ExecInteractiveMode> {
    exec.interactive_mode.or(match exec.api_version.as_str() {
        "client.authentication.k8s.io/v1beta1" | "client.authentication.k8s.io/v1alpha1" => {
            Some(ExecInteractiveMode::IfAvailable)
        }
        _ => None,
    })
}

/// Replaces control characters (other than whitespace) with their `U+XXXX` spelling, so an
/// install hint cannot send escape sequences to a terminal.
fn clean_control_characters(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        if ch.is_control() && !matches!(ch, '\t'..='\r') {
            out.push_str(&format!("U+{:04X}", ch as u32));
        } else {
            out.push(ch);
        }
    }
    out
}

/// client-go's `parseProxyURL`: a URL with scheme http, https or socks5, and a port of digits
/// if any (Go's `url.Parse` refuses `http://user:pa/ss@proxy`, whose authority would be
/// `user:pa`).
pub(crate) fn check_proxy_url(url: &str) -> Result<http::Uri, String> {
    // No message repeats the URL: it may carry a password (`http://user:pass@proxy`).
    let uri: http::Uri = url
        .parse()
        .map_err(|_| "could not parse it as a URL".to_owned())?;
    match uri.scheme_str() {
        Some("http" | "https" | "socks5") => {}
        other => {
            return Err(format!(
                "unsupported scheme {:?}, must be http, https, or socks5",
                other.unwrap_or("")
            ))
        }
    }
    if !uri.authority().is_some_and(|a| has_valid_port(a.as_str())) {
        return Err("invalid host or port".to_owned());
    }
    Ok(uri)
}

/// Whether the port of `authority` (`[user@]host[:port]`), if any, is digits (Go's
/// `validOptionalPort`).
fn has_valid_port(authority: &str) -> bool {
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    if host_port.ends_with(']') {
        return true; // an IPv6 address without a port
    }
    host_port
        .rsplit_once(':')
        .is_none_or(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_spelled_out() {
        assert_eq!(clean_control_characters("a\u{1b}[31mb\n"), "aU+001B[31mb\n");
    }

    #[test]
    fn proxy_schemes() {
        assert!(check_proxy_url("http://p:3128").is_ok());
        assert!(check_proxy_url("socks5://p:1080").is_ok());
        assert!(check_proxy_url("ftp://p").is_err());
        assert!(check_proxy_url("not a url").is_err());
        assert!(check_proxy_url("http://[::1]:3128").is_ok());
        assert!(check_proxy_url("http://[::1]").is_ok());
        assert!(check_proxy_url("http://u:p@p:3128").is_ok());
        assert!(check_proxy_url("http://p:").is_ok(), "an empty port, as Go");
        assert!(
            check_proxy_url("http://u:pa/ss@p:3128").is_err(),
            "Go: invalid port \":pa\" after host"
        );
    }

    #[test]
    fn interactive_mode_defaults_by_version() {
        let mut exec = super::super::ExecConfig {
            api_version: "client.authentication.k8s.io/v1beta1".into(),
            ..Default::default()
        };
        assert_eq!(
            effective_interactive_mode(&exec),
            Some(ExecInteractiveMode::IfAvailable)
        );
        exec.api_version = "client.authentication.k8s.io/v1".into();
        assert_eq!(effective_interactive_mode(&exec), None);
        exec.interactive_mode = Some(ExecInteractiveMode::Never);
        assert_eq!(
            effective_interactive_mode(&exec),
            Some(ExecInteractiveMode::Never)
        );
    }
}
