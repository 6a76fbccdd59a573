//! Exec credential plugins (client-go's `plugin/pkg/client/auth/exec`): run a command, read the
//! `ExecCredential` it prints (`client.authentication.k8s.io/v1` or `v1beta1`), and use its
//! token or client certificate until its `expirationTimestamp`.
//!
//! Differences from client-go, all in the caller's favour: a plugin that runs longer than
//! [`Config::exec_timeout`](crate::Config::exec_timeout) is killed and reported, and a request
//! answered `401` after fresh credentials were obtained is retried once with them (client-go
//! only refreshes for the next request).

use std::io::IsTerminal as _;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::kubeconfig::{ExecConfig, ExecInteractiveMode};
use crate::metrics::RequestMetrics;
use crate::transport::url::redacted_url;

pub use super::exec_error::ExecError;

/// The environment variable that carries the `ExecCredential` request to the plugin.
pub const EXEC_INFO_ENV: &str = "KUBERNETES_EXEC_INFO";
/// The `ExecCredential` versions this client speaks.
pub const SUPPORTED_EXEC_VERSIONS: [&str; 2] = [
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
];
/// How many times per hour the install hint is shown (client-go: 10 per hour).
const INSTALL_HINT_PER_HOUR: u32 = 10;

/// What the plugin is told about the cluster with `provideClusterInfo`
/// (`ExecCredential.spec.cluster`). Its `Debug` output shows the URLs without their passwords
/// and no CA data or plugin configuration.
#[derive(Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) struct ExecClusterInfo {
    pub(crate) server: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tls_server_name: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) insecure_skip_tls_verify: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) certificate_authority_data: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) proxy_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) config: Option<serde_json::Value>,
}

impl std::fmt::Debug for ExecClusterInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecClusterInfo")
            .field("server", &redacted_url(&self.server))
            .field("tls_server_name", &self.tls_server_name)
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field(
                "certificate_authority_data",
                &self.certificate_authority_data.as_ref().map(|_| "<data>"),
            )
            .field("proxy_url", &self.proxy_url.as_deref().map(redacted_url))
            .field("config", &self.config.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl ExecClusterInfo {
    pub(crate) fn new(
        server: String,
        tls: &crate::transport::tls::TlsMaterial,
        proxy: &crate::config::Proxy,
        config: Option<serde_json::Value>,
    ) -> Self {
        Self {
            server,
            tls_server_name: tls.server_name.clone(),
            insecure_skip_tls_verify: tls.insecure,
            certificate_authority_data: tls
                .ca_pem
                .as_ref()
                .map(|pem| base64::engine::general_purpose::STANDARD.encode(pem)),
            proxy_url: match proxy {
                crate::config::Proxy::Url(u) => Some(u.clone()),
                _ => None,
            },
            config,
        }
    }
}

/// Credentials from one plugin run.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ExecCredentials {
    pub(crate) token: Option<String>,
    /// PEM certificate and key.
    pub(crate) client_cert: Option<(Vec<u8>, Vec<u8>)>,
    expiry: Option<jiff::Timestamp>,
    /// Which run produced them.
    pub(crate) generation: u64,
}

impl std::fmt::Debug for ExecCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecCredentials")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field(
                "client_cert",
                &self.client_cert.as_ref().map(|_| "<redacted>"),
            )
            .field("expiry", &self.expiry)
            .field("generation", &self.generation)
            .finish()
    }
}

impl ExecCredentials {
    fn expired(&self) -> bool {
        self.expiry.is_some_and(|e| jiff::Timestamp::now() > e)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredentialOut {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    status: Option<ExecCredentialStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredentialStatus {
    #[serde(default)]
    expiration_timestamp: Option<String>,
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    client_certificate_data: Option<String>,
    #[serde(default)]
    client_key_data: Option<String>,
}

#[derive(Default)]
struct State {
    current: Option<Arc<ExecCredentials>>,
    runs: u64,
}

/// Runs a plugin when needed and caches its credentials.
pub(crate) struct ExecAuthenticator {
    config: ExecConfig,
    cluster: Option<ExecClusterInfo>,
    timeout: Option<Duration>,
    metrics: Option<Arc<dyn RequestMetrics>>,
    state: tokio::sync::Mutex<State>,
    hints: parking_lot::Mutex<HintBudget>,
}

struct HintBudget {
    window_start: Option<tokio::time::Instant>,
    shown: u32,
}

impl ExecAuthenticator {
    pub(crate) fn new(
        config: ExecConfig,
        cluster: Option<ExecClusterInfo>,
        timeout: Option<Duration>,
        metrics: Option<Arc<dyn RequestMetrics>>,
    ) -> Result<Self, ExecError> {
        if config.command.is_empty() {
            return Err(ExecError::Config("no command".into()));
        }
        if !SUPPORTED_EXEC_VERSIONS.contains(&config.api_version.as_str()) {
            return Err(ExecError::Config(format!(
                "exec plugin: invalid apiVersion {:?}",
                config.api_version
            )));
        }
        Ok(Self {
            config,
            cluster,
            timeout,
            metrics,
            state: tokio::sync::Mutex::new(State::default()),
            hints: parking_lot::Mutex::new(HintBudget {
                window_start: None,
                shown: 0,
            }),
        })
    }

    /// The cached credentials, or fresh ones when there are none or they expired.
    pub(crate) async fn credentials(&self) -> Result<Arc<ExecCredentials>, ExecError> {
        let mut state = self.state.lock().await;
        if let Some(c) = state.current.as_ref().filter(|c| !c.expired()) {
            return Ok(c.clone());
        }
        self.refresh_locked(&mut state).await
    }

    /// After a 401 with `used`: runs the plugin again unless another request already did.
    /// Returns whether the credentials changed.
    pub(crate) async fn refresh_after_unauthorized(&self, used: &ExecCredentials) -> bool {
        let mut state = self.state.lock().await;
        if state
            .current
            .as_ref()
            .is_some_and(|c| c.generation != used.generation)
        {
            return true;
        }
        match self.refresh_locked(&mut state).await {
            Ok(fresh) => fresh.token != used.token || fresh.client_cert != used.client_cert,
            Err(e) => {
                tracing::error!(error = %e, "refreshing exec plugin credentials after 401");
                false
            }
        }
    }

    async fn refresh_locked(&self, state: &mut State) -> Result<Arc<ExecCredentials>, ExecError> {
        let result = self.run().await;
        if let Some(m) = &self.metrics {
            m.exec_plugin_call(match &result {
                Ok(_) => "success",
                Err(ExecError::NotFound { .. }) => "plugin_not_found_error",
                Err(ExecError::Failed { .. } | ExecError::TimedOut { .. }) => {
                    "plugin_execution_error"
                }
                Err(_) => "client_internal_error",
            });
        }
        let mut creds = result?;
        state.runs += 1;
        creds.generation = state.runs;
        let creds = Arc::new(creds);
        state.current = Some(creds.clone());
        Ok(creds)
    }

    fn interactive(&self) -> Result<bool, ExecError> {
        let terminal = std::io::stdin().is_terminal();
        match self
            .config
            .interactive_mode
            .unwrap_or(ExecInteractiveMode::IfAvailable)
        {
            ExecInteractiveMode::Never => Ok(false),
            ExecInteractiveMode::IfAvailable => Ok(terminal),
            ExecInteractiveMode::Always if terminal => Ok(true),
            ExecInteractiveMode::Always => Err(ExecError::Interactive(
                "standard input is not a terminal".into(),
            )),
        }
    }

    /// The `KUBERNETES_EXEC_INFO` value.
    fn exec_info(&self, interactive: bool) -> String {
        let mut spec = serde_json::json!({ "interactive": interactive });
        if self.config.provide_cluster_info {
            if let Some(cluster) = &self.cluster {
                spec["cluster"] = serde_json::to_value(cluster).unwrap_or_default();
            }
        }
        serde_json::json!({
            "kind": "ExecCredential",
            "apiVersion": self.config.api_version,
            "spec": spec,
        })
        .to_string()
    }

    async fn run(&self) -> Result<ExecCredentials, ExecError> {
        let command = self.config.command.clone();
        let interactive = self.interactive()?;
        let mut cmd = tokio::process::Command::new(&command);
        cmd.args(&self.config.args)
            .envs(self.config.env.iter().map(|e| (&e.name, &e.value)))
            .env(EXEC_INFO_ENV, self.exec_info(interactive))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .stdin(if interactive {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .kill_on_drop(true);
        let child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ExecError::NotFound {
                    command,
                    hint: self.install_hint(),
                })
            }
            Err(source) => return Err(ExecError::Spawn { command, source }),
        };
        let waiting = child.wait_with_output();
        let output = match self.timeout {
            Some(timeout) => match tokio::time::timeout(timeout, waiting).await {
                Ok(out) => out,
                Err(_) => return Err(ExecError::TimedOut { command, timeout }),
            },
            None => waiting.await,
        }
        .map_err(|source| ExecError::Spawn {
            command: command.clone(),
            source,
        })?;
        if !output.status.success() {
            return Err(ExecError::Failed {
                command,
                code: output.status.code(),
            });
        }
        self.parse_output(&command, &output.stdout)
    }

    /// The credentials in the plugin's output (client-go's `ExecCredential`, JSON or YAML),
    /// checked: its kind and apiVersion, a token or a whole certificate/key pair, a valid
    /// expiry.
    fn parse_output(&self, command: &str, stdout: &[u8]) -> Result<ExecCredentials, ExecError> {
        let invalid = |reason: String| ExecError::Invalid {
            command: command.to_owned(),
            reason,
        };
        let parsed = decode_output(command, stdout)?;
        if parsed.kind != "ExecCredential" && !parsed.kind.is_empty() {
            return Err(invalid(format!(
                "exec plugin returned kind {:?}, not ExecCredential",
                parsed.kind
            )));
        }
        if parsed.api_version != self.config.api_version {
            return Err(invalid(format!(
                "exec plugin is configured to use API version {}, plugin returned version {}",
                self.config.api_version, parsed.api_version
            )));
        }
        let status = parsed
            .status
            .ok_or_else(|| invalid("exec plugin didn't return a status field".into()))?;
        let non_empty = |s: Option<String>| s.filter(|s| !s.is_empty());
        let token = non_empty(status.token);
        let cert = non_empty(status.client_certificate_data);
        let key = non_empty(status.client_key_data);
        if token.is_none() && cert.is_none() && key.is_none() {
            return Err(invalid(
                "exec plugin didn't return a token or cert/key pair".into(),
            ));
        }
        if cert.is_some() != key.is_some() {
            return Err(invalid(
                "exec plugin returned only certificate or key, not both".into(),
            ));
        }
        let client_cert = match (cert, key) {
            (Some(cert), Some(key)) => {
                crate::transport::tls::parse_client_identity(cert.as_bytes(), key.as_bytes())
                    .map_err(|e| invalid(format!("failed parsing client key/certificate: {e}")))?;
                Some((cert.into_bytes(), key.into_bytes()))
            }
            _ => None,
        };
        let expiry = non_empty(status.expiration_timestamp)
            .map(|ts| {
                ts.parse::<jiff::Timestamp>()
                    .map_err(|e| invalid(format!("invalid expirationTimestamp {ts:?}: {e}")))
            })
            .transpose()?;
        Ok(ExecCredentials {
            token,
            client_cert,
            expiry,
            generation: 0,
        })
    }

    /// The install hint, at most ten times an hour.
    fn install_hint(&self) -> Option<String> {
        let hint = self.config.install_hint.clone().filter(|h| !h.is_empty())?;
        let mut budget = self.hints.lock();
        let now = tokio::time::Instant::now();
        match budget.window_start {
            Some(start) if now.duration_since(start) < Duration::from_secs(3600) => {}
            _ => {
                budget.window_start = Some(now);
                budget.shown = 0;
            }
        }
        if budget.shown >= INSTALL_HINT_PER_HOUR {
            return None;
        }
        budget.shown += 1;
        Some(hint)
    }
}

/// The plugin's output as an `ExecCredential`: JSON, or YAML as client-go's universal decoder
/// also reads (a shallow document with an apiVersion); what is neither is reported with the
/// JSON parser's position.
fn decode_output(command: &str, stdout: &[u8]) -> Result<ExecCredentialOut, ExecError> {
    let json_err = match serde_json::from_slice(stdout) {
        Ok(parsed) => return Ok(parsed),
        Err(e) => e,
    };
    let text = String::from_utf8_lossy(stdout);
    let shallow = kclient_core::yaml_nesting::check_yaml_nesting(
        &text,
        kclient_core::yaml_nesting::MAX_YAML_NESTING,
    )
    .is_ok();
    let yaml = shallow.then(|| serde_yaml_ng::from_str::<ExecCredentialOut>(&text));
    match yaml.and_then(Result::ok) {
        Some(parsed) if !parsed.api_version.is_empty() => Ok(parsed),
        _ => Err(ExecError::Decode {
            command: command.to_owned(),
            what: match json_err.classify() {
                serde_json::error::Category::Eof => "unexpected end of output",
                serde_json::error::Category::Data => "wrong shape",
                _ => "invalid JSON",
            },
            line: json_err.line(),
            column: json_err.column(),
            bytes: stdout.len(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authenticator(api_version: &str) -> ExecAuthenticator {
        ExecAuthenticator::new(
            ExecConfig {
                command: "plugin".into(),
                api_version: api_version.into(),
                install_hint: Some("install it".into()),
                provide_cluster_info: true,
                interactive_mode: Some(ExecInteractiveMode::Never),
                ..ExecConfig::default()
            },
            Some(ExecClusterInfo {
                server: "https://h:6443".into(),
                config: Some(serde_json::json!({"a": 1})),
                ..ExecClusterInfo::default()
            }),
            None,
            None,
        )
        .unwrap()
    }

    #[test]
    fn parses_tokens_and_expiry() {
        let a = authenticator("client.authentication.k8s.io/v1");
        let c = a
            .parse_output(
                "p",
                br#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t","expirationTimestamp":"2999-01-01T00:00:00Z"}}"#,
            )
            .unwrap();
        assert_eq!(c.token.as_deref(), Some("t"));
        assert!(!c.expired());
        let c = a
            .parse_output(
                "p",
                b"apiVersion: client.authentication.k8s.io/v1\nkind: ExecCredential\nstatus:\n  token: y\n  expirationTimestamp: 2000-01-01T00:00:00Z\n",
            )
            .unwrap();
        assert_eq!(c.token.as_deref(), Some("y"), "YAML output is accepted");
        assert!(c.expired());
    }

    #[test]
    fn rejects_bad_output() {
        let a = authenticator("client.authentication.k8s.io/v1beta1");
        let cases: &[(&[u8], &str)] = &[
            (b"garbage", "is not an ExecCredential"),
            (b"", "is not an ExecCredential"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t"}}"#, "configured to use API version"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential"}"#, "status field"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{}}"#, "token or cert/key"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"clientCertificateData":"x"}}"#, "only certificate or key"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"clientCertificateData":"x","clientKeyData":"y"}}"#, "failed parsing"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t","expirationTimestamp":"soon"}}"#, "expirationTimestamp"),
        ];
        for (out, expect) in cases {
            let err = a.parse_output("p", out).unwrap_err();
            assert!(
                err.to_string().contains(expect),
                "{err} should mention {expect}"
            );
        }
    }

    #[test]
    fn exec_info_carries_the_cluster() {
        let a = authenticator("client.authentication.k8s.io/v1");
        let info: serde_json::Value = serde_json::from_str(&a.exec_info(false)).unwrap();
        assert_eq!(info["kind"], "ExecCredential");
        assert_eq!(info["apiVersion"], "client.authentication.k8s.io/v1");
        assert_eq!(info["spec"]["interactive"], false);
        assert_eq!(info["spec"]["cluster"]["server"], "https://h:6443");
        assert_eq!(info["spec"]["cluster"]["config"]["a"], 1);
    }

    #[test]
    fn install_hints_are_rate_limited() {
        let a = authenticator("client.authentication.k8s.io/v1");
        let shown = (0..15).filter(|_| a.install_hint().is_some()).count();
        assert_eq!(shown, 10);
    }

    #[test]
    fn unsupported_versions_are_rejected() {
        let err = ExecAuthenticator::new(
            ExecConfig {
                command: "x".into(),
                api_version: "client.authentication.k8s.io/v1alpha1".into(),
                ..ExecConfig::default()
            },
            None,
            None,
            None,
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("apiVersion"), "{err}");
    }
}
