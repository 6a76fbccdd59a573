//! Exec, attach and port-forward, proven against a real implementation of the protocols:
//! the real `kubectl` (client-go's WebSocket executor, its SPDY tunnel and its SPDY
//! fallback) and kclient-streaming's clients run the same sessions against one kclient-fake
//! whose handlers play the container, and must see the same bytes and exit codes (and the
//! handlers must see the same requests, stdin and terminal sizes from both).
//!
//! Needs `KCLIENT_E2E_KUBECTL` (set by `cargo xtask e2e test`); without it the tests say
//! so and skip. (The e2e cluster has no kubelet, so kube-apiserver's own proxying of these
//! subresources is not exercised here; see docs/testing.md.)

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use kclient_core::ApiStatus;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use kclient_fake::{ExecRequest, FakeApiServer, Process};
use kclient_streaming::portforward::{self, Dialer, PortForwarder};
use kclient_streaming::remotecommand::{
    AttachOptions, ExecOptions, Executor, StreamOptions, TerminalSize,
};
use parking_lot::Mutex;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const TOKEN: &str = "kclient-e2e-streaming";

/// What the fake's process saw of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Observed {
    request: ExecRequest,
    stdin: Vec<u8>,
    resizes: Vec<TerminalSize>,
}

/// What a client saw of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    exit_code: i32,
}

struct Fixture {
    server: FakeApiServer,
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    kubectl: PathBuf,
    observed: Arc<Mutex<Vec<Observed>>>,
}

fn kubectl_path() -> Option<PathBuf> {
    let path = std::env::var_os(kclient_e2e::target::KUBECTL_ENV).filter(|v| !v.is_empty());
    if path.is_none() {
        eprintln!(
            "kclient-e2e streaming: skipping the kubectl comparison: {} is not set (run `cargo xtask e2e test`, or export the kubectl `cargo xtask e2e up` prints)",
            kclient_e2e::target::KUBECTL_ENV
        );
    }
    path.map(PathBuf::from)
}

/// The process the fake runs for `sh -c SCRIPT` (and for an attach): a few scripts, each
/// with fixed output, that read stdin where a shell would.
async fn run_process(mut process: Process, observed: Arc<Mutex<Vec<Observed>>>) -> i32 {
    let mut stdin = Vec::new();
    let mut resizes = Vec::new();
    let script = process.request.command.last().cloned().unwrap_or_default();
    let exit_code = match script.as_str() {
        // `cat`: stdin to stdout, to its end.
        "cat" => {
            let _ = process.stdin.read_to_end(&mut stdin).await;
            let _ = process.stdout.write_all(&stdin).await;
            0
        }
        // Output on both streams, then a failure.
        "echo out; echo err >&2; exit 3" => {
            let _ = process.stdout.write_all(b"out\n").await;
            let _ = process.stderr.write_all(b"err\n").await;
            3
        }
        // A terminal: the size it was given, then what is typed up to `q`.
        "read line" => {
            if let Some(size) = process.resizes.recv().await {
                resizes.push(size);
            }
            let mut byte = [0u8; 1];
            while process.stdin.read(&mut byte).await.unwrap_or(0) == 1 {
                stdin.push(byte[0]);
                if byte[0] == b'q' {
                    break;
                }
            }
            let _ = process
                .stdout
                .write_all(format!("typed {}\r\n", String::from_utf8_lossy(&stdin)).as_bytes())
                .await;
            if let Some(size) = resizes.first() {
                let _ = process
                    .stdout
                    .write_all(format!("size {}x{}\r\n", size.width, size.height).as_bytes())
                    .await;
            }
            0
        }
        // An attach: the main process's output.
        "" => {
            let _ = process
                .stdout
                .write_all(b"attached to the main process\n")
                .await;
            let _ = process.stderr.write_all(b"and its stderr\n").await;
            0
        }
        other => {
            let _ = process
                .stderr
                .write_all(format!("sh: {other}: not found\n").as_bytes())
                .await;
            127
        }
    };
    observed.lock().push(Observed {
        request: process.request.clone(),
        stdin,
        resizes,
    });
    exit_code
}

/// An echo server on port 80 of every pod; other ports refuse.
fn port_handler(
    request: kclient_fake::PortForwardRequest,
    stream: kclient_streaming::spdy::Stream,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>> {
    if request.port != 80 {
        return Box::pin(async move {
            drop(stream);
            Err(format!(
                "dial tcp4 127.0.0.1:{}: connect: connection refused",
                request.port
            ))
        });
    }
    kclient_fake::echo_port(request, stream)
}

impl Fixture {
    async fn start(kubectl: PathBuf) -> Result<Self> {
        let server = FakeApiServer::builder()
            .https()
            .token(TOKEN)
            .start()
            .await?;
        server.seed(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "streams"},
            "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "busybox"}]},
            "status": {"phase": "Running"},
        }))?;
        let observed = Arc::new(Mutex::new(Vec::new()));
        let log = observed.clone();
        server.set_exec_handler(move |process| run_process(process, log.clone()));
        server.set_port_forward_handler(port_handler);
        let dir = tempfile::tempdir()?;
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig)?;
        Ok(Self {
            server,
            _dir: dir,
            kubeconfig,
            kubectl,
            observed,
        })
    }

    fn client(&self) -> Result<kclient_rest::RestClient> {
        Ok(kclient_rest::RestClient::new(self.server.config()?)?)
    }

    fn take_observed(&self) -> Vec<Observed> {
        std::mem::take(&mut *self.observed.lock())
    }

    /// Runs kubectl with `stdin`; what it printed and its exit code.
    async fn kubectl(&self, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Result<Seen> {
        let mut child = tokio::process::Command::new(&self.kubectl)
            .arg(format!("--kubeconfig={}", self.kubeconfig.display()))
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("could not run {}", self.kubectl.display()))?;
        // Stdin is written while the output is read: written first, a large input echoed
        // back would fill the output pipe and stop kubectl reading its stdin.
        let mut input = child.stdin.take().context("stdin")?;
        let stdin = stdin.to_vec();
        let writer = tokio::spawn(async move {
            let written = input.write_all(&stdin).await;
            drop(input);
            written
        });
        let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .context("kubectl did not finish within 60 s")??;
        writer.await??;
        Ok(Seen {
            stdout: output.stdout,
            stderr: output.stderr,
            exit_code: output.status.code().unwrap_or(-1),
        })
    }

    /// Runs kubectl in a pseudo-terminal (`script`), its terminal `cols`×`rows`, typing
    /// `typed`.
    async fn kubectl_in_terminal(
        &self,
        args: &[&str],
        typed: &[u8],
        cols: u16,
        rows: u16,
    ) -> Result<Seen> {
        let command = format!(
            "stty cols {cols} rows {rows}; exec {} --kubeconfig={} {}",
            self.kubectl.display(),
            self.kubeconfig.display(),
            args.join(" ")
        );
        let mut child = tokio::process::Command::new("script")
            .args(["-qefc", &command, "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("could not run script(1) for a terminal")?;
        let mut input = child.stdin.take().context("stdin")?;
        // The terminal is in raw mode once the session runs; type after a moment.
        tokio::time::sleep(Duration::from_millis(500)).await;
        input.write_all(typed).await?;
        let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .context("kubectl did not finish within 60 s")??;
        drop(input);
        Ok(Seen {
            stdout: output.stdout,
            stderr: output.stderr,
            exit_code: output.status.code().unwrap_or(-1),
        })
    }
}

/// kclient's session: the same request, what it printed, its exit code.
async fn kclient_session(
    executor: Executor,
    stdin: Option<&[u8]>,
    tty: Option<TerminalSize>,
) -> Result<Seen> {
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let mut options = StreamOptions::new().stdout(&mut stdout).stderr(&mut stderr);
    if let Some(input) = stdin {
        options = options.stdin(input);
    }
    if let Some(size) = tty {
        options = options
            .tty(true)
            .terminal_size_queue(futures::stream::iter([size]));
    }
    let exit_code = match executor.stream(options).await {
        Ok(()) => 0,
        Err(e) => e
            .exit_code()
            .with_context(|| format!("the session failed: {e}"))?,
    };
    Ok(Seen {
        stdout,
        stderr,
        exit_code,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_stdin_output_and_exit_codes_match_kubectl() -> Result<()> {
    let Some(kubectl) = kubectl_path() else {
        return Ok(());
    };
    let f = Fixture::start(kubectl).await?;
    let client = f.client()?;

    // Output on both streams and an exit code.
    let script = "echo out; echo err >&2; exit 3";
    let by_kubectl = f
        .kubectl(
            &["exec", "-n", "streams", "web", "--", "sh", "-c", script],
            b"",
            &[],
        )
        .await?;
    let kubectl_saw = f.take_observed();
    let options = ExecOptions::command(["sh", "-c", script]).stdout().stderr();
    let by_kclient = kclient_session(
        Executor::exec(&client, "streams", "web", &options),
        None,
        None,
    )
    .await?;
    let kclient_saw = f.take_observed();
    ensure!(by_kubectl.exit_code == 3, "kubectl: {by_kubectl:?}");
    ensure!(
        by_kubectl.stdout == by_kclient.stdout,
        "stdout: {by_kubectl:?} vs {by_kclient:?}"
    );
    ensure!(by_kclient.stderr == b"err\n", "{by_kclient:?}");
    ensure!(
        String::from_utf8_lossy(&by_kubectl.stderr) == "err\ncommand terminated with exit code 3\n",
        "kubectl's stderr: {:?}",
        String::from_utf8_lossy(&by_kubectl.stderr)
    );
    ensure!(by_kubectl.exit_code == by_kclient.exit_code);
    ensure!(
        kubectl_saw == kclient_saw,
        "the process saw {kubectl_saw:?} vs {kclient_saw:?}"
    );

    // Stdin to its end (v5's CLOSE signal), large enough for several messages.
    let input: Vec<u8> = (0..200_000u32)
        .flat_map(|i| format!("{i}\n").into_bytes())
        .collect();
    let by_kubectl = f
        .kubectl(
            &[
                "exec", "-i", "-n", "streams", "web", "--", "sh", "-c", "cat",
            ],
            &input,
            &[],
        )
        .await?;
    let kubectl_saw = f.take_observed();
    let options = ExecOptions::command(["sh", "-c", "cat"])
        .stdin()
        .stdout()
        .stderr();
    let by_kclient = kclient_session(
        Executor::exec(&client, "streams", "web", &options),
        Some(&input),
        None,
    )
    .await?;
    let kclient_saw = f.take_observed();
    ensure!(
        by_kubectl.exit_code == 0,
        "kubectl: {:?}",
        String::from_utf8_lossy(&by_kubectl.stderr)
    );
    ensure!(
        by_kubectl.stdout == input,
        "kubectl's stdout is the input ({} bytes of {})",
        by_kubectl.stdout.len(),
        input.len()
    );
    ensure!(by_kclient == by_kubectl, "kclient saw what kubectl saw");
    ensure!(
        kubectl_saw == kclient_saw,
        "the process saw the same stdin from both"
    );

    // An unknown command: the shell's 127.
    let by_kubectl = f
        .kubectl(
            &["exec", "-n", "streams", "web", "--", "sh", "-c", "nope"],
            b"",
            &[],
        )
        .await?;
    let options = ExecOptions::command(["sh", "-c", "nope"]).stdout().stderr();
    let by_kclient = kclient_session(
        Executor::exec(&client, "streams", "web", &options),
        None,
        None,
    )
    .await?;
    ensure!(
        (by_kubectl.exit_code, by_kclient.exit_code) == (127, 127),
        "{by_kubectl:?} {by_kclient:?}"
    );
    f.take_observed();
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_with_a_terminal_matches_kubectl() -> Result<()> {
    let Some(kubectl) = kubectl_path() else {
        return Ok(());
    };
    let f = Fixture::start(kubectl).await?;
    let client = f.client()?;
    let by_kubectl = f
        .kubectl_in_terminal(
            &[
                "exec",
                "-it",
                "-n",
                "streams",
                "web",
                "--",
                "sh",
                "-c",
                "'read line'",
            ],
            b"hi q",
            100,
            30,
        )
        .await?;
    let kubectl_saw = f.take_observed();
    let options = ExecOptions::command(["sh", "-c", "read line"])
        .stdin()
        .stdout()
        .tty();
    let size = TerminalSize {
        width: 100,
        height: 30,
    };
    let by_kclient = kclient_session(
        Executor::exec(&client, "streams", "web", &options),
        Some(b"hi q"),
        Some(size),
    )
    .await?;
    let kclient_saw = f.take_observed();
    ensure!(by_kubectl.exit_code == 0, "kubectl: {by_kubectl:?}");
    ensure!(
        by_kclient.stdout == b"typed hi q\r\nsize 100x30\r\n",
        "{by_kclient:?}"
    );
    let terminal = String::from_utf8_lossy(&by_kubectl.stdout);
    ensure!(
        terminal.contains("typed hi q") && terminal.contains("size 100x30"),
        "kubectl's terminal showed {terminal:?}"
    );
    ensure!(kubectl_saw.len() == 1 && kclient_saw.len() == 1);
    let (k, c) = (&kubectl_saw[0], &kclient_saw[0]);
    ensure!(
        k.request == c.request,
        "requests: {:?} vs {:?}",
        k.request,
        c.request
    );
    ensure!(
        k.request.tty && !k.request.stderr,
        "a terminal carries no stderr"
    );
    ensure!(k.stdin == c.stdin, "stdin: {:?} vs {:?}", k.stdin, c.stdin);
    ensure!(
        k.resizes == c.resizes && c.resizes == [size],
        "sizes: {:?} vs {:?}",
        k.resizes,
        c.resizes
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_matches_kubectl() -> Result<()> {
    let Some(kubectl) = kubectl_path() else {
        return Ok(());
    };
    let f = Fixture::start(kubectl).await?;
    let client = f.client()?;
    let by_kubectl = f
        .kubectl(&["attach", "-n", "streams", "web"], b"", &[])
        .await?;
    let kubectl_saw = f.take_observed();
    let options = AttachOptions::default().container("app").stdout().stderr();
    let by_kclient = kclient_session(
        Executor::attach(&client, "streams", "web", &options),
        None,
        None,
    )
    .await?;
    let kclient_saw = f.take_observed();
    ensure!(by_kubectl.exit_code == 0, "kubectl: {by_kubectl:?}");
    ensure!(
        by_kubectl.stdout == by_kclient.stdout
            && by_kclient.stdout == b"attached to the main process\n"
    );
    ensure!(
        String::from_utf8_lossy(&by_kubectl.stderr).contains("and its stderr")
            && by_kclient.stderr == b"and its stderr\n",
        "{by_kubectl:?} {by_kclient:?}"
    );
    ensure!(
        kubectl_saw == kclient_saw,
        "{kubectl_saw:?} vs {kclient_saw:?}"
    );
    Ok(())
}

/// kubectl's refusals for a missing container are the server's; kclient's error carries
/// the same `Status`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_container_is_refused_to_both() -> Result<()> {
    let Some(kubectl) = kubectl_path() else {
        return Ok(());
    };
    let f = Fixture::start(kubectl).await?;
    let client = f.client()?;
    // kubectl checks the container itself first; `--` with an explicit -c reaches the server.
    let by_kubectl = f
        .kubectl(
            &["exec", "-n", "streams", "web", "-c", "nope", "--", "ls"],
            b"",
            &[],
        )
        .await?;
    let options = ExecOptions::command(["ls"]).container("nope").stdout();
    let error = Executor::exec(&client, "streams", "web", &options)
        .output(None)
        .await
        .err()
        .context("kclient's exec should fail")?;
    let message = &error.api_status().context("a Status")?.message;
    ensure!(
        message == "container nope is not valid for pod web",
        "{error:?}"
    );
    let kubectl_said = String::from_utf8_lossy(&by_kubectl.stderr);
    ensure!(
        by_kubectl.exit_code != 0 && kubectl_said.contains(message.as_str()),
        "kubectl said {kubectl_said:?}"
    );
    Ok(())
}

/// Waits for kubectl port-forward's `Forwarding from 127.0.0.1:PORT -> REMOTE` line; the
/// rest of its output is read on (kubectl dies of SIGPIPE if its stdout closes).
async fn forwarded_port(child: &mut tokio::process::Child) -> Result<u16> {
    let stdout = child.stdout.take().context("stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await? {
            if let Some(rest) = line.strip_prefix("Forwarding from 127.0.0.1:") {
                return Ok::<_, anyhow::Error>(rest.to_owned());
            }
        }
        bail!("kubectl port-forward printed no forwarding line")
    })
    .await
    .context("kubectl port-forward did not start within 30 s")??;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let port = line.split_whitespace().next().unwrap_or_default();
    port.parse().with_context(|| format!("a port in {line:?}"))
}

async fn echo_through(address: &str, data: &[u8]) -> Result<Vec<u8>> {
    let mut conn = tokio::net::TcpStream::connect(address).await?;
    conn.write_all(data).await?;
    conn.shutdown().await?;
    let mut back = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), conn.read_to_end(&mut back))
        .await
        .context("no echo within 30 s")??;
    Ok(back)
}

/// What a killed kubectl wrote on stderr.
async fn stderr_of(mut child: tokio::process::Child) -> String {
    let _ = child.kill().await;
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr).await;
    }
    stderr
}

fn spawn_port_forward(f: &Fixture, spec: &str, websockets: bool) -> Result<tokio::process::Child> {
    Ok(tokio::process::Command::new(&f.kubectl)
        .arg(format!("--kubeconfig={}", f.kubeconfig.display()))
        .args(["port-forward", "-n", "streams", "pod/web", spec])
        .env(
            "KUBECTL_PORT_FORWARD_WEBSOCKETS",
            if websockets { "true" } else { "false" },
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?)
}

/// kubectl's port-forward, through the WebSocket tunnel and over SPDY, and kclient's, carry
/// the same bytes to the pod and back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_forward_matches_kubectl_over_both_transports() -> Result<()> {
    let Some(kubectl) = kubectl_path() else {
        return Ok(());
    };
    let f = Fixture::start(kubectl).await?;
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
    for websockets in [true, false] {
        let mut child = spawn_port_forward(&f, ":80", websockets)?;
        let port = forwarded_port(&mut child).await?;
        for _ in 0..3 {
            let back = match echo_through(&format!("127.0.0.1:{port}"), &data).await {
                Ok(back) => back,
                Err(e) => bail!("{e:#}; kubectl said {:?}", stderr_of(child).await),
            };
            ensure!(
                back == data,
                "kubectl (websockets={websockets}) carried {} bytes of {}",
                back.len(),
                data.len()
            );
        }
        child.kill().await?;
    }
    let client = f.client()?;
    let forward = PortForwarder::new(Dialer::for_pod(&client, "streams", "web"), &[":80"])?
        .start()
        .await?;
    let address = forward.local_addr(80).context("a local address")?;
    for _ in 0..3 {
        ensure!(echo_through(&address.to_string(), &data).await? == data);
    }
    forward.stop().await?;
    Ok(())
}

/// A port nothing listens on: the pod side's error reaches both, and ends both forwards
/// (client-go closes the connection on it; so does kclient's forwarder).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_port_ends_both_forwards_with_the_pod_side_error() -> Result<()> {
    let Some(kubectl) = kubectl_path() else {
        return Ok(());
    };
    let f = Fixture::start(kubectl).await?;
    let mut child = spawn_port_forward(&f, ":81", true)?;
    let port = forwarded_port(&mut child).await?;
    let _ = echo_through(&format!("127.0.0.1:{port}"), b"hello").await;
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .context("kubectl port-forward did not end within 30 s")??;
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        err.read_to_string(&mut stderr).await?;
    }
    let expected = "error forwarding port 81 to pod web, uid ";
    ensure!(
        !status.success(),
        "kubectl port-forward should fail: {stderr}"
    );
    ensure!(
        stderr.contains(expected) && stderr.contains("connection refused"),
        "kubectl said {stderr:?}"
    );
    ensure!(
        stderr.contains("lost connection to pod"),
        "kubectl said {stderr:?}"
    );

    let client = f.client()?;
    let connection = Dialer::for_pod(&client, "streams", "web").dial().await?;
    let mut stream = connection.connect(81).await?;
    let mut buf = Vec::new();
    let error = stream
        .read_to_end(&mut buf)
        .await
        .err()
        .context("the read should fail")?;
    let remote = error
        .get_ref()
        .and_then(|e| e.downcast_ref::<portforward::Error>());
    let Some(portforward::Error::Remote { message, .. }) = remote else {
        bail!("{error:?}");
    };
    ensure!(message.starts_with(expected), "{message}");
    ensure!(
        stderr.contains(message.as_str()),
        "kubectl printed the same message: {stderr:?}"
    );

    let mut forward = PortForwarder::new(Dialer::for_pod(&client, "streams", "web"), &[":81"])?
        .start()
        .await?;
    let _ = echo_through(
        &forward.local_addr(81).context("address")?.to_string(),
        b"hello",
    )
    .await;
    let ended = tokio::time::timeout(Duration::from_secs(30), forward.done()).await?;
    ensure!(
        matches!(ended, Err(portforward::Error::LostConnectionToPod(_))),
        "{ended:?}"
    );
    Ok(())
}
