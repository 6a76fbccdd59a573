//! Authentication against local servers: token files (rotation, 401 refresh) and exec credential
//! plugins (small shell scripts written to a temporary directory).
#![cfg(unix)]

use crate::support;

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use kclient_core::ApiStatus;
use kclient_rest::kubeconfig::{ExecConfig, ExecEnvVar, ExecInteractiveMode};
use kclient_rest::{Config, Error, ExecError, RequestMetrics, RestClient};
use parking_lot::Mutex;
use serde_json::json;
use support::{config, json, status, TestServer};

/// A server that accepts only `Bearer <accepted>` and echoes the header it got.
async fn token_server(accepted: &'static [&'static str]) -> TestServer {
    TestServer::http(move |r| async move {
        let auth = r.header("authorization").unwrap_or_default().to_owned();
        if accepted.iter().any(|t| auth == format!("Bearer {t}")) {
            json(200, json!({"auth": auth}))
        } else {
            status(401, "Unauthorized", "Unauthorized")
        }
    })
    .await
}

fn auth_headers(server: &TestServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_401_rereads_the_token_file_and_retries_once() {
    let server = token_server(&["rotated"]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "rotated").unwrap();
    let mut c = config(&server.url());
    c.bearer_token = Some("stale".into());
    c.bearer_token_file = Some(file);
    let client = RestClient::new(c).unwrap();
    client.get().abs_path("/api").send().await.unwrap();
    assert_eq!(auth_headers(&server), ["Bearer stale", "Bearer rotated"]);
    client.get().abs_path("/api").send().await.unwrap();
    assert_eq!(auth_headers(&server).len(), 3, "the new token is kept");
}

#[tokio::test]
async fn a_401_with_the_current_token_is_final() {
    let server = token_server(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "same").unwrap();
    let mut c = config(&server.url());
    c.bearer_token_file = Some(file);
    let err = RestClient::new(c)
        .unwrap()
        .get()
        .abs_path("/api")
        .send()
        .await
        .unwrap_err();
    assert!(err.is_unauthorized());
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn token_files_are_reread_every_minute() {
    support::paused_runtime().block_on(async {
        let server = token_server(&["one", "two"]).await;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "one\n").unwrap();
        let mut c = config(&server.url());
        c.bearer_token_file = Some(file.clone());
        let client = RestClient::new(c).unwrap();
        client.get().abs_path("/api").send().await.unwrap();
        std::fs::write(&file, "two\n").unwrap();
        tokio::time::advance(Duration::from_secs(61)).await;
        client.get().abs_path("/api").send().await.unwrap();
        assert_eq!(auth_headers(&server), ["Bearer one", "Bearer two"]);
    });
}

/// Writes a plugin script; it runs through `/bin/sh` so the test never executes a file it just
/// wrote (which can fail with "text file busy" while other tests fork).
fn plugin(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("plugin.sh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    path
}

fn exec_config(script: &Path, extra_args: &[&str], version: &str) -> ExecConfig {
    let mut args = vec![script.to_string_lossy().into_owned()];
    args.extend(extra_args.iter().map(|s| (*s).to_owned()));
    ExecConfig {
        command: "/bin/sh".into(),
        args,
        api_version: version.into(),
        interactive_mode: Some(ExecInteractiveMode::Never),
        ..ExecConfig::default()
    }
}

const V1: &str = "client.authentication.k8s.io/v1";

/// A plugin that counts its runs in `runs` and prints token `tok-<run>` with `expiry`.
fn counting_plugin(dir: &Path, expiry: &str) -> PathBuf {
    plugin(
        dir,
        &format!(
            r#"echo run >> "$1"
n=$(wc -l < "$1" | tr -d ' ')
printf '%s' "$KUBERNETES_EXEC_INFO" > "$2"
printf '{{"apiVersion":"{V1}","kind":"ExecCredential","status":{{"token":"tok-%s%s","expirationTimestamp":"{expiry}"}}}}' "$n" "$SUFFIX""#
        ),
    )
}

fn runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("runs"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

fn exec_client(server: &TestServer, exec: ExecConfig) -> RestClient {
    let mut c = config(&server.url());
    c.exec = Some(exec);
    RestClient::new(c).unwrap()
}

#[derive(Default)]
struct ExecCalls(Mutex<Vec<String>>);

impl RequestMetrics for ExecCalls {
    fn exec_plugin_call(&self, result: &str) {
        self.0.lock().push(result.to_owned());
    }
}

#[tokio::test]
async fn exec_tokens_are_cached_until_they_expire() {
    let server = token_server(&["tok-1", "tok-2", "tok-3"]).await;
    let dir = tempfile::tempdir().unwrap();
    let script = counting_plugin(dir.path(), "2999-01-01T00:00:00Z");
    let runs_file = dir.path().join("runs");
    let info_file = dir.path().join("info");
    let mut exec = exec_config(
        &script,
        &[runs_file.to_str().unwrap(), info_file.to_str().unwrap()],
        V1,
    );
    exec.provide_cluster_info = true;
    exec.cluster_config = Some(json!({"audience": "test"}));
    let calls = Arc::new(ExecCalls::default());
    let mut c = config(&server.url());
    c.exec = Some(exec);
    c.metrics = Some(calls.clone());
    let client = RestClient::new(c).unwrap();
    for _ in 0..3 {
        client.get().abs_path("/api").send().await.unwrap();
    }
    assert_eq!(runs(dir.path()), 1, "one run, cached");
    assert_eq!(auth_headers(&server), ["Bearer tok-1"; 3]);
    assert_eq!(*calls.0.lock(), ["success"]);

    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&info_file).unwrap()).unwrap();
    assert_eq!(info["kind"], "ExecCredential");
    assert_eq!(info["apiVersion"], V1);
    assert_eq!(info["spec"]["interactive"], false);
    assert_eq!(info["spec"]["cluster"]["server"], server.url());
    assert_eq!(info["spec"]["cluster"]["config"]["audience"], "test");
}

#[tokio::test]
async fn expired_exec_credentials_are_refreshed() {
    let server = token_server(&["tok-1", "tok-2"]).await;
    let dir = tempfile::tempdir().unwrap();
    let script = counting_plugin(dir.path(), "2000-01-01T00:00:00Z");
    let runs_file = dir.path().join("runs");
    let info = dir.path().join("info");
    let client = exec_client(
        &server,
        exec_config(
            &script,
            &[runs_file.to_str().unwrap(), info.to_str().unwrap()],
            V1,
        ),
    );
    client.get().abs_path("/api").send().await.unwrap();
    client.get().abs_path("/api").send().await.unwrap();
    assert_eq!(runs(dir.path()), 2);
    assert_eq!(auth_headers(&server), ["Bearer tok-1", "Bearer tok-2"]);
}

#[tokio::test]
async fn a_401_reruns_the_plugin_and_retries_once() {
    let server = token_server(&["tok-2"]).await;
    let dir = tempfile::tempdir().unwrap();
    let script = counting_plugin(dir.path(), "2999-01-01T00:00:00Z");
    let runs_file = dir.path().join("runs");
    let info = dir.path().join("info");
    let client = exec_client(
        &server,
        exec_config(
            &script,
            &[runs_file.to_str().unwrap(), info.to_str().unwrap()],
            V1,
        ),
    );
    client.get().abs_path("/api").send().await.unwrap();
    assert_eq!(runs(dir.path()), 2);
    assert_eq!(auth_headers(&server), ["Bearer tok-1", "Bearer tok-2"]);
}

#[tokio::test]
async fn plugin_environment_and_v1beta1() {
    let server = token_server(&["tok-1-from-env"]).await;
    let dir = tempfile::tempdir().unwrap();
    let script = plugin(
        dir.path(),
        r#"printf '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"tok-1%s"}}' "$SUFFIX""#,
    );
    let mut exec = exec_config(&script, &[], "client.authentication.k8s.io/v1beta1");
    exec.env = vec![ExecEnvVar {
        name: "SUFFIX".into(),
        value: "-from-env".into(),
    }];
    exec_client(&server, exec)
        .get()
        .abs_path("/api")
        .send()
        .await
        .unwrap();
}

async fn exec_error(exec: ExecConfig) -> ExecError {
    let server = token_server(&["x"]).await;
    let err = exec_client(&server, exec)
        .get()
        .abs_path("/api")
        .send()
        .await
        .unwrap_err();
    assert!(
        server.requests().is_empty(),
        "no request without credentials"
    );
    match err {
        Error::ExecPlugin(e) => e,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_missing_plugin_says_so_with_the_install_hint() {
    let err = exec_error(ExecConfig {
        command: "/nonexistent/kubectl-login".into(),
        api_version: V1.into(),
        install_hint: Some("Install kubectl-login from your cloud's docs.".into()),
        interactive_mode: Some(ExecInteractiveMode::Never),
        ..ExecConfig::default()
    })
    .await;
    assert!(matches!(err, ExecError::NotFound { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("/nonexistent/kubectl-login not found"),
        "{text}"
    );
    assert!(text.contains("Install kubectl-login"), "{text}");
}

#[tokio::test]
async fn a_failing_plugin_reports_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let script = plugin(dir.path(), "echo 'login failed' >&2\nexit 3");
    let err = exec_error(exec_config(&script, &[], V1)).await;
    assert!(
        matches!(err, ExecError::Failed { code: Some(3), .. }),
        "{err:?}"
    );
}

/// Issue 19, item 4: a plugin printing truncated JSON with a token in it: the error (and so
/// the log after a 401) says where decoding failed, never what was printed.
#[tokio::test]
async fn decode_errors_never_quote_the_plugin_output() {
    let dir = tempfile::tempdir().unwrap();
    let script = plugin(
        dir.path(),
        r#"printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"TOKEN-SECRET'"#,
    );
    let err = exec_error(exec_config(&script, &[], V1)).await;
    assert!(matches!(err, ExecError::Decode { .. }), "{err:?}");
    for shown in [err.to_string(), format!("{err:?}")] {
        assert!(!shown.contains("TOKEN-SECRET"), "{shown}");
    }
    let script = plugin(
        dir.path(),
        r#"printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":"TOKEN-SECRET"}'"#,
    );
    let err = exec_error(exec_config(&script, &[], V1)).await;
    assert!(!err.to_string().contains("TOKEN-SECRET"), "{err}");
}

#[tokio::test]
async fn garbage_output_is_a_decode_error() {
    let dir = tempfile::tempdir().unwrap();
    let script = plugin(
        dir.path(),
        "echo 'Please visit https://login.example to sign in'",
    );
    let err = exec_error(exec_config(&script, &[], V1)).await;
    match &err {
        ExecError::Decode { what, line: 1, .. } => assert_eq!(*what, "invalid JSON"),
        other => panic!("{other:?}"),
    }
    assert!(!err.to_string().contains("Please visit"), "{err}");
    let script = plugin(
        dir.path(),
        r#"printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}}'"#,
    );
    let err = exec_error(exec_config(&script, &[], V1)).await;
    assert!(err.to_string().contains("didn't return a token"), "{err}");
}

#[test]
fn a_hanging_plugin_is_killed_after_the_timeout() {
    support::paused_runtime().block_on(async {
        let server = token_server(&["x"]).await;
        let dir = tempfile::tempdir().unwrap();
        let script = plugin(dir.path(), "exec sleep 3600");
        let mut c = config(&server.url());
        c.exec = Some(exec_config(&script, &[], V1));
        c.exec_timeout = Some(Duration::from_secs(20));
        let err = RestClient::new(c).unwrap().get().abs_path("/api").send().await.unwrap_err();
        assert!(
            matches!(err, Error::ExecPlugin(ExecError::TimedOut { timeout, .. }) if timeout == Duration::from_secs(20)),
            "{err:?}"
        );
    });
}

#[tokio::test]
async fn always_interactive_needs_a_terminal() {
    let server = token_server(&["tok"]).await;
    let dir = tempfile::tempdir().unwrap();
    let script = plugin(
        dir.path(),
        r#"printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"tok"}}'"#,
    );
    let mut exec = exec_config(&script, &[], V1);
    exec.interactive_mode = Some(ExecInteractiveMode::Always);
    let result = exec_client(&server, exec)
        .get()
        .abs_path("/api")
        .send()
        .await;
    if std::io::stdin().is_terminal() {
        assert!(result.is_ok(), "{result:?}");
    } else {
        let err = result.unwrap_err();
        assert!(
            matches!(err, Error::ExecPlugin(ExecError::Interactive(_))),
            "{err:?}"
        );
    }
}

#[tokio::test]
async fn exec_client_certificates_are_presented() {
    let pki = support::Pki::new();
    let server = TestServer::https(pki.server_config(), |r| async move {
        match r.client_cert {
            Some(_) => json(200, json!({})),
            None => status(401, "Unauthorized", "Unauthorized"),
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let credential = json!({
        "apiVersion": V1, "kind": "ExecCredential",
        "status": {"clientCertificateData": pki.client_cert_pem, "clientKeyData": pki.client_key_pem},
    });
    let encoded = base64::engine::general_purpose::STANDARD.encode(credential.to_string());
    let script = plugin(dir.path(), &format!("echo '{encoded}' | base64 -d"));
    let mut c: Config = config(&server.url());
    c.tls.ca_data = Some(pki.ca_pem.clone().into_bytes());
    c.exec = Some(exec_config(&script, &[], V1));
    let client = RestClient::new(c).unwrap();
    client.get().abs_path("/api").send().await.unwrap();
    client.get().abs_path("/api").send().await.unwrap();
    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    assert!(seen
        .iter()
        .all(|r| r.client_cert.as_deref() == Some(&pki.client_cert_der[..])));
    assert!(seen.iter().all(|r| r.header("authorization").is_none()));
}

/// client-go's certificate-callback rotation (`transport/cert_rotation.go` over an exec
/// plugin's credential): when the plugin returns another client certificate (here after a
/// `401` rejected the first), requests present the new one and the connections that
/// presented the old one are closed — a watch in flight included.
#[tokio::test]
async fn a_new_exec_client_certificate_closes_the_old_connections() {
    let pki = support::Pki::new();
    let (new_cert, new_key, new_der) = pki.client_identity("jane-rotated");
    let first_der = pki.client_cert_der.clone();
    let watches = Arc::new(Mutex::new(Vec::new()));
    let open = watches.clone();
    let server = TestServer::https(pki.server_config(), move |r| {
        let (open, first_der) = (open.clone(), first_der.clone());
        async move {
            if r.uri.path() == "/watch" {
                let (tx, response) = support::streaming(http::StatusCode::OK);
                open.lock().push(tx);
                response
            } else if r.client_cert.as_deref() == Some(&first_der[..]) {
                status(401, "Unauthorized", "Unauthorized")
            } else {
                json(200, json!({}))
            }
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let credential = |cert: &str, key: &str| {
        let c = json!({
            "apiVersion": V1, "kind": "ExecCredential",
            "status": {"clientCertificateData": cert, "clientKeyData": key},
        });
        base64::engine::general_purpose::STANDARD.encode(c.to_string())
    };
    let (first, second) = (
        credential(&pki.client_cert_pem, &pki.client_key_pem),
        credential(&new_cert, &new_key),
    );
    let count = dir.path().join("count");
    let script = plugin(
        dir.path(),
        &format!(
            "if [ -e '{c}' ]; then echo '{second}' | base64 -d; else touch '{c}'; echo '{first}' | base64 -d; fi",
            c = count.display()
        ),
    );
    let mut c: Config = config(&server.url());
    c.tls.ca_data = Some(pki.ca_pem.clone().into_bytes());
    c.exec = Some(exec_config(&script, &[], V1));
    let client = RestClient::new(c).unwrap();
    let mut watch = client.get().abs_path("/watch").stream().await.unwrap();
    client.get().abs_path("/api").send().await.unwrap();
    let ended = futures::StreamExt::next(&mut watch).await;
    assert!(
        matches!(ended, None | Some(Err(_))),
        "the watch on the old certificate's connection was closed: {ended:?}"
    );
    let seen = server.requests();
    assert_eq!(
        seen.last().unwrap().client_cert.as_deref(),
        Some(&new_der[..])
    );
    assert_eq!(watches.lock().len(), 1);
}
