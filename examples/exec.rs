//! Running a command in a pod (`kubectl exec`): `sh -c SCRIPT` in a container, its output
//! printed, its exit code printed and returned as the program's own.
//!
//! The session is a WebSocket (`v5.channel.k8s.io`) on the client's connection to the API
//! server, as client-go's executor opens it; a non-zero exit is an exit code, any other
//! failure (a missing pod or container, a container that is not running) the server's
//! `Status`.
//!
//! With a kubeconfig (`KUBECONFIG` or `~/.kube/config`), it runs in a real pod. Without one
//! it starts kclient-fake with a pod whose "container" is a handler that understands
//! `echo …`, `echo … >&2` and `exit N`, so the same code path runs.
//!
//! ```text
//! cargo run -p kclient --features fake,streaming --example exec                        # kclient-fake
//! cargo run -p kclient --features fake,streaming --example exec -- -n default web 'echo hi; exit 3'
//! ```

use std::path::PathBuf;

use kclient::core::ErrorReport;
use kclient::fake::{FakeApiServer, Process};
use kclient::rest::Config;
use kclient::streaming::remotecommand::{ExecOptions, Output};
use kclient::typed::Clientset;
use tokio::io::AsyncWriteExt;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The script run when none is given.
const DEFAULT_SCRIPT: &str = "echo hello from the pod; echo a warning >&2; exit 3";

/// The command line: `[-n NAMESPACE] [POD [SCRIPT]]`.
#[derive(Debug, PartialEq)]
struct Args {
    namespace: Option<String>,
    pod: String,
    script: String,
}

fn parse_args(args: &[String]) -> Result<Args, Error> {
    let mut namespace = None;
    let mut positional = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-n" | "--namespace" => {
                namespace = Some(args.next().ok_or("-n needs a namespace")?.clone())
            }
            other if other.starts_with('-') => {
                return Err(format!(
                    "unknown option {other:?} (usage: [-n NAMESPACE] [POD [SCRIPT]])"
                )
                .into())
            }
            other => positional.push(other.to_owned()),
        }
    }
    if positional.len() > 2 {
        return Err("usage: [-n NAMESPACE] [POD [SCRIPT]]".into());
    }
    let mut positional = positional.into_iter();
    Ok(Args {
        namespace,
        pod: positional.next().unwrap_or_else(|| "web".to_owned()),
        script: positional
            .next()
            .unwrap_or_else(|| DEFAULT_SCRIPT.to_owned()),
    })
}

/// Runs `sh -c script` in `pod`: what it printed and its exit code (a non-zero exit is a
/// value here, not an error).
async fn run(config: Config, namespace: &str, pod: &str, script: &str) -> Result<Output, Error> {
    let pods = Clientset::new(config)?.core_v1().pods(namespace);
    let options = ExecOptions::command(["sh", "-c", script]).stdout().stderr();
    Ok(pods.exec(pod, &options)?.output(None).await?)
}

/// The fake's container: `sh -c` for scripts of `echo …`, `echo … >&2` and `exit N`
/// separated by `;` (anything else is "not found", exit 127).
async fn toy_shell(mut process: Process) -> i32 {
    let script = process.request.command.last().cloned().unwrap_or_default();
    for statement in script.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        if let Some(code) = statement.strip_prefix("exit ") {
            return code.trim().parse().unwrap_or(2);
        }
        let Some(text) = statement.strip_prefix("echo ") else {
            let _ = process
                .stderr
                .write_all(format!("sh: {statement}: not found\n").as_bytes())
                .await;
            return 127;
        };
        let line = |t: &str| format!("{}\n", t.trim());
        let _ = match text.strip_suffix(">&2") {
            Some(text) => process.stderr.write_all(line(text).as_bytes()).await,
            None => process.stdout.write_all(line(text).as_bytes()).await,
        };
    }
    0
}

/// kclient-fake with a running pod `default/web` and the toy shell as its container.
async fn fake() -> Result<FakeApiServer, Error> {
    let server = FakeApiServer::builder()
        .object(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "busybox"}]},
            "status": {"phase": "Running"},
        }))
        .start()
        .await?;
    server.set_exec_handler(toy_shell);
    Ok(server)
}

fn kubeconfig_available() -> bool {
    std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty())
        || std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".kube/config").exists())
            .unwrap_or(false)
}

#[tokio::main]
async fn main() -> Result<(), ErrorReport> {
    let args = parse_args(&std::env::args().skip(1).collect::<Vec<_>>())?;
    let (_server, config) = if kubeconfig_available() {
        (None, Config::infer()?)
    } else {
        let server = fake().await?;
        eprintln!("No kubeconfig found: running against kclient-fake");
        let config = server.config()?;
        (Some(server), config)
    };
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| config.namespace().to_owned());
    let output = run(config, &namespace, &args.pod, &args.script).await?;
    {
        use std::io::Write;
        std::io::stdout().write_all(&output.stdout)?;
        std::io::stderr().write_all(&output.stderr)?;
    }
    println!("exit code {}", output.exit_code);
    std::process::exit(output.exit_code);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() -> Result<(), Error> {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_args(&args(&[]))?,
            Args {
                namespace: None,
                pod: "web".into(),
                script: DEFAULT_SCRIPT.into()
            }
        );
        let parsed = parse_args(&args(&["-n", "ns", "db", "exit 4"]))?;
        assert_eq!(
            (
                parsed.namespace.as_deref(),
                parsed.pod.as_str(),
                parsed.script.as_str()
            ),
            (Some("ns"), "db", "exit 4")
        );
        assert!(parse_args(&args(&["-n"])).is_err());
        assert!(parse_args(&args(&["a", "b", "c"])).is_err());
        Ok(())
    }

    #[tokio::test]
    async fn runs_a_script_and_returns_its_output_and_exit_code() -> Result<(), Error> {
        let server = fake().await?;
        let ran = run(server.config()?, "default", "web", DEFAULT_SCRIPT).await?;
        assert_eq!(ran.stdout, b"hello from the pod\n");
        assert_eq!(ran.stderr, b"a warning\n");
        assert_eq!(ran.exit_code, 3);
        let ok = run(server.config()?, "default", "web", "echo fine").await?;
        assert_eq!((ok.stdout.as_slice(), ok.exit_code), (&b"fine\n"[..], 0));
        let missing = run(server.config()?, "default", "nope", "echo x")
            .await
            .unwrap_err();
        assert!(
            missing.to_string().contains("pods \"nope\" not found"),
            "{missing}"
        );
        Ok(())
    }
}
