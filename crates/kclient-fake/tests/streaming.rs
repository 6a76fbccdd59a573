//! Exec, attach and port-forward served by the fake through the test's handlers, driven by
//! kclient-streaming's clients: the protocols as kube-apiserver speaks them, and the
//! refusals a real cluster answers (a missing pod or container, no node, a pod that is not
//! running).

use std::sync::Arc;
use std::time::Duration;

use kclient_core::ApiStatus;
use kclient_fake::{echo_port, forward_to_address, ExecRequest, FakeApiServer, Process};
use kclient_streaming::portforward::{self, Dialer, PortForwarder, Transport};
use kclient_streaming::remotecommand::{
    self, AttachOptions, ExecOptions, Executor, StreamOptions, TerminalSize,
};
use kclient_streaming::upgrade::UpgradeError;
use parking_lot::Mutex;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A pod in `phase` on a node, with one container `app` (two when `sidecar`).
fn pod(name: &str, phase: &str, node: Option<&str>, sidecar: bool) -> serde_json::Value {
    let mut containers = vec![json!({"name": "app", "image": "busybox"})];
    if sidecar {
        containers.push(json!({"name": "sidecar", "image": "busybox"}));
    }
    let mut spec = json!({"containers": containers});
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
        "status": {"phase": phase},
    })
}

async fn server() -> FakeApiServer {
    let server = FakeApiServer::start().await.unwrap();
    server
        .seed(pod("web", "Running", Some("node-1"), false))
        .unwrap();
    server
        .seed(pod("multi", "Running", Some("node-1"), true))
        .unwrap();
    server
        .seed(pod("done", "Succeeded", Some("node-1"), false))
        .unwrap();
    server
        .seed(pod("unscheduled", "Pending", None, false))
        .unwrap();
    server
}

fn client(server: &FakeApiServer) -> kclient_rest::RestClient {
    kclient_rest::RestClient::new(server.config().unwrap()).unwrap()
}

/// A process like `sh -c`: echoes stdin to stdout upper-cased, says something on stderr,
/// and exits with the code in its last argument.
fn install_shell(server: &FakeApiServer, requests: Arc<Mutex<Vec<ExecRequest>>>) {
    server.set_exec_handler(move |mut process: Process| {
        let requests = requests.clone();
        async move {
            requests.lock().push(process.request.clone());
            let mut input = Vec::new();
            if process.request.stdin {
                process.stdin.read_to_end(&mut input).await.unwrap();
            }
            process.stdout.write_all(b"hello from ").await.unwrap();
            process
                .stdout
                .write_all(&input.to_ascii_uppercase())
                .await
                .unwrap();
            process.stderr.write_all(b"a warning").await.unwrap();
            process
                .request
                .command
                .last()
                .and_then(|c| c.parse().ok())
                .unwrap_or(0)
        }
    });
}

#[tokio::test]
async fn exec_runs_the_handler_s_process_with_stdin_stdout_stderr_and_exit_code() {
    let server = server().await;
    let requests = Arc::default();
    install_shell(&server, Arc::clone(&requests));
    let client = client(&server);

    let options = ExecOptions::command(["sh", "-c", "cat", "0"])
        .stdin()
        .stdout()
        .stderr();
    let executor = Executor::exec(&client, "ns", "web", &options);
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    executor
        .stream(
            StreamOptions::new()
                .stdin(&b"kclient"[..])
                .stdout(&mut stdout)
                .stderr(&mut stderr),
        )
        .await
        .unwrap();
    assert_eq!(stdout, b"hello from KCLIENT");
    assert_eq!(stderr, b"a warning");
    let request = requests.lock()[0].clone();
    assert_eq!(
        request,
        ExecRequest {
            namespace: "ns".into(),
            pod: "web".into(),
            container: "app".into(),
            command: vec!["sh".into(), "-c".into(), "cat".into(), "0".into()],
            attach: false,
            stdin: true,
            stdout: true,
            stderr: true,
            tty: false,
        }
    );

    let exit = ExecOptions::command(["sh", "-c", "exit", "42"])
        .stdout()
        .stderr();
    let output = Executor::exec(&client, "ns", "web", &exit)
        .output(None)
        .await
        .unwrap();
    assert_eq!(output.exit_code, 42);
    assert_eq!(output.stdout, b"hello from ");
    assert_eq!(output.stderr, b"a warning");

    // Streams not asked for are not sent.
    let quiet = ExecOptions::command(["true"]).stdout();
    let output = Executor::exec(&client, "ns", "web", &quiet)
        .output(None)
        .await
        .unwrap();
    assert_eq!(
        (output.stdout.as_slice(), output.stderr.as_slice()),
        (&b"hello from "[..], &b""[..])
    );
}

/// Runs an exec session of `options` in pod `web`, for 600 s at most: on the paused clock a
/// session that stalls reaches that bound at once (the clock jumps to the next timer when
/// every task waits), where a working one ends long before. Panics if it stalls or fails.
async fn exec_unless_stalled(
    client: &kclient_rest::RestClient,
    options: &ExecOptions,
    streams: StreamOptions<'_>,
) {
    let executor = Executor::exec(client, "ns", "web", options);
    tokio::time::timeout(Duration::from_secs(600), executor.stream(streams))
        .await
        .expect("the session stalled")
        .unwrap();
}

/// Echoes stdin to stdout as it reads it, as `cat` does.
fn install_cat(server: &FakeApiServer) {
    server.set_exec_handler(|mut process: Process| async move {
        match tokio::io::copy(&mut process.stdin, &mut process.stdout).await {
            Ok(_) => 0,
            Err(_) => 1,
        }
    });
}

/// The local side of a session is one program (a pipe from it to stdin, a pipe from stdout
/// to it, each of 1 KiB) that writes all its input before it reads any output: the session
/// must go on taking stdin while stdout waits for room (a regression: one loop that waited
/// on its stdout write read no more stdin, and the two pipes held each other up forever).
#[tokio::test(start_paused = true)]
async fn exec_takes_stdin_while_its_stdout_waits_for_room() {
    let server = server().await;
    install_cat(&server);
    let client = client(&server);
    let input: Vec<u8> = (0..32_768u32)
        .flat_map(|i| format!("{i:07}\n").into_bytes())
        .collect();
    let (mut to_stdin, stdin) = tokio::io::duplex(1024);
    let (stdout, mut from_stdout) = tokio::io::duplex(1024);
    let local = tokio::spawn({
        let input = input.clone();
        async move {
            to_stdin.write_all(&input).await.unwrap();
            drop(to_stdin);
            let mut output = Vec::new();
            from_stdout.read_to_end(&mut output).await.unwrap();
            output
        }
    });
    let options = ExecOptions::command(["cat"]).stdin().stdout().stderr();
    exec_unless_stalled(
        &client,
        &options,
        StreamOptions::new().stdin(stdin).stdout(stdout),
    )
    .await;
    assert!(local.await.unwrap() == input, "the output is the input");
}

/// Takes what is written; its first write waits `delay` first (a local stdout that is slow
/// to drain, a terminal scrolled back).
struct SlowFirstWrite {
    written: Arc<Mutex<Vec<u8>>>,
    delay: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl tokio::io::AsyncWrite for SlowFirstWrite {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if let Some(delay) = &mut self.delay {
            std::task::ready!(std::future::Future::poll(delay.as_mut(), cx));
            self.delay = None;
        }
        self.written.lock().extend_from_slice(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// The keepalive judges the server's silence, not the session's own: two minutes spent
/// writing the first output to a slow local stdout, while the server answers every ping,
/// is no reason to give up on it (a regression: the read deadline ran on while the session
/// was writing and sent no pings, and it ended with `HeartbeatTimeout` once it came back).
#[tokio::test(start_paused = true)]
async fn time_spent_writing_to_a_slow_stdout_is_not_the_server_s_silence() {
    let server = server().await;
    server.set_exec_handler(|mut process: Process| async move {
        process.stdout.write_all(b"first\n").await.unwrap();
        let mut input = Vec::new();
        process.stdin.read_to_end(&mut input).await.unwrap();
        process.stdout.write_all(&input).await.unwrap();
        0
    });
    let client = client(&server);
    // Stdin ends 130 s in, after the first write (120 s) has returned.
    let (mut to_stdin, stdin) = tokio::io::duplex(64);
    tokio::spawn(async move {
        to_stdin.write_all(b"last\n").await.unwrap();
        tokio::time::sleep(Duration::from_secs(130)).await;
    });
    let written = Arc::new(Mutex::new(Vec::new()));
    let stdout = SlowFirstWrite {
        written: Arc::clone(&written),
        delay: Some(Box::pin(tokio::time::sleep(Duration::from_secs(120)))),
    };
    let options = ExecOptions::command(["sh"]).stdin().stdout();
    let started = tokio::time::Instant::now();
    exec_unless_stalled(
        &client,
        &options,
        StreamOptions::new().stdin(stdin).stdout(stdout),
    )
    .await;
    assert_eq!(&*written.lock(), b"first\nlast\n");
    assert!(started.elapsed() >= Duration::from_secs(130));
}

/// A process that reads its stdin late (here after a second) still gets all of it, and
/// the session goes on meanwhile (a regression in the fake: the session drove the process
/// itself and, waiting for room in the process's stdin, stopped driving it; the client,
/// its pings unanswered, gave up after 61 s: the e2e suite's flake under load).
#[tokio::test(start_paused = true)]
async fn a_process_that_reads_its_stdin_late_gets_all_of_it() {
    let server = server().await;
    server.set_exec_handler(|mut process: Process| async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut input = Vec::new();
        process.stdin.read_to_end(&mut input).await.unwrap();
        process.stdout.write_all(&input).await.unwrap();
        0
    });
    let client = client(&server);
    let input: Vec<u8> = (0..131_072u32)
        .flat_map(|i| format!("{i:07}\n").into_bytes())
        .collect();
    let options = ExecOptions::command(["cat"]).stdin().stdout();
    let mut stdout = Vec::new();
    exec_unless_stalled(
        &client,
        &options,
        StreamOptions::new().stdin(&input[..]).stdout(&mut stdout),
    )
    .await;
    assert!(stdout == input, "the output is the input");
}

/// Attach has no command; a TTY merges stderr into stdout and delivers the resizes.
#[tokio::test]
async fn attach_with_a_terminal_gets_the_resizes() {
    let server = server().await;
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let seen = sizes.clone();
    server.set_exec_handler(move |mut process: Process| {
        let seen = seen.clone();
        async move {
            assert!(process.request.attach && process.request.tty);
            assert!(process.request.command.is_empty());
            assert_eq!(process.request.container, "sidecar");
            while let Some(size) = process.resizes.recv().await {
                seen.lock().push(size);
                if seen.lock().len() == 2 {
                    break;
                }
            }
            process.stderr.write_all(b"on the terminal").await.unwrap();
            0
        }
    });
    let client = client(&server);
    let options = AttachOptions::default()
        .container("sidecar")
        .stdin()
        .stdout()
        .tty();
    let executor = Executor::attach(&client, "ns", "multi", &options);
    let resizes = futures::stream::iter([
        TerminalSize {
            width: 80,
            height: 24,
        },
        TerminalSize {
            width: 100,
            height: 30,
        },
    ]);
    let mut stdout = Vec::new();
    let (_keep_open, stdin) = tokio::io::duplex(16);
    executor
        .stream(
            StreamOptions::new()
                .stdin(stdin)
                .stdout(&mut stdout)
                .tty(true)
                .terminal_size_queue(resizes),
        )
        .await
        .unwrap();
    assert_eq!(stdout, b"on the terminal");
    assert_eq!(
        *sizes.lock(),
        [
            TerminalSize {
                width: 80,
                height: 24
            },
            TerminalSize {
                width: 100,
                height: 30
            }
        ]
    );
}

/// A client that offers only v4 is served too (a real cluster serves it through the
/// kubelet); its stdin's end cannot be signalled.
#[tokio::test]
async fn a_v4_client_is_served() {
    let server = server().await;
    install_shell(&server, Arc::default());
    let client = client(&server);
    let executor = Executor::exec(
        &client,
        "ns",
        "web",
        &ExecOptions::command(["x", "3"]).stdout(),
    )
    .protocols(&[remotecommand::STREAM_PROTOCOL_V4_NAME]);
    let output = executor.output(None).await.unwrap();
    assert_eq!(output.exit_code, 3);
}

/// kube-apiserver's refusals before the upgrade, and the kubelet's after it.
#[tokio::test]
async fn missing_pods_containers_nodes_and_stopped_pods_are_refused_as_on_a_cluster() {
    let server = server().await;
    install_shell(&server, Arc::default());
    let client = client(&server);
    let run = |pod: &'static str, container: Option<&'static str>| {
        let mut options = ExecOptions::command(["ls"]).stdout();
        options.container = container.map(Into::into);
        let executor = Executor::exec(&client, "ns", pod, &options);
        async move { executor.output(None).await }
    };

    let missing = run("nope", None).await.unwrap_err();
    let status = missing.api_status().unwrap();
    assert_eq!(
        (status.code, status.message.as_str()),
        (404, "pods \"nope\" not found")
    );
    let remotecommand::Error::Upgrade(UpgradeError::Refused(rest)) = &missing else {
        panic!("{missing:?}");
    };
    assert!(rest.is_not_found());

    let container = run("web", Some("nope")).await.unwrap_err();
    assert_eq!(
        container.api_status().unwrap().message,
        "container nope is not valid for pod web"
    );
    assert_eq!(container.api_status().unwrap().code, 400);

    let several = run("multi", None).await.unwrap_err();
    assert_eq!(
        several.api_status().unwrap().message,
        "a container name must be specified for pod multi, choose one of: [app sidecar]"
    );

    let unscheduled = run("unscheduled", None).await.unwrap_err();
    assert_eq!(
        unscheduled.api_status().unwrap().message,
        "pod unscheduled does not have a host assigned"
    );

    // The upgrade succeeds; the kubelet finds no running container.
    let done = run("done", None).await.unwrap_err();
    let remotecommand::Error::Remote(status) = &done else {
        panic!("{done:?}");
    };
    assert_eq!(status.code, 500);
    assert_eq!(
        status.message,
        "Internal error occurred: unable to upgrade connection: container not found (\"app\")"
    );
    assert_eq!(done.to_string(), status.message);
}

/// An exec is a request as any other: recorded among the actions (a WebSocket handshake is a
/// `GET`, so kube-apiserver's verb is `get`, on the subresource `pods/exec`), and a reactor
/// on `pods/exec` answers it instead of the server (once here; the next exec runs).
#[tokio::test]
async fn exec_is_recorded_and_reactors_answer_it() {
    let server = server().await;
    install_shell(&server, Arc::default());
    let client = client(&server);
    let failure = kclient_fake::Failure::status(403);
    server.reactors().prepend(
        kclient_fake::Reactor::new(
            kclient_fake::ActionFilter::new("*", "pods/exec").name("web"),
            kclient_fake::Reaction::Fail(failure),
        )
        .times(1),
    );
    let exec = || {
        let options = ExecOptions::command(["sh", "0"]).stdout();
        let executor = Executor::exec(&client, "ns", "web", &options);
        async move { executor.output(None).await }
    };
    let refused = exec().await.unwrap_err();
    assert_eq!(refused.api_status().unwrap().code, 403, "{refused:?}");
    let ran = exec().await.unwrap();
    assert_eq!(ran.exit_code, 0);

    let recorded = server.actions_matching(&kclient_fake::ActionFilter::new("get", "pods/exec"));
    assert_eq!(recorded.len(), 2);
    assert_eq!(
        (
            recorded[0].namespace.as_deref(),
            recorded[0].name.as_deref()
        ),
        (Some("ns"), Some("web"))
    );
}

/// A plain request (no upgrade) and a SPDY upgrade for exec are refused with `400`.
#[tokio::test]
async fn requests_that_are_not_websocket_upgrades_are_refused() {
    let server = server().await;
    install_shell(&server, Arc::default());
    let client = client(&server);
    let plain = client
        .post()
        .abs_path("/api/v1/namespaces/ns/pods/web/exec")
        .param("command", "ls")
        .send()
        .await
        .unwrap_err();
    assert_eq!(plain.http_code(), Some(400));
}

/// An echo on every port, through the tunnel and over SPDY, one connection at a time and
/// through local listeners.
#[tokio::test]
async fn port_forward_reaches_the_handler_through_the_tunnel_and_over_spdy() {
    let server = server().await;
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    server.set_port_forward_handler(move |request, stream| {
        seen.lock().push(request.clone());
        echo_port(request, stream)
    });
    let client = client(&server);
    for transport in [Transport::WebSocketTunnel, Transport::Spdy] {
        let connection = Dialer::for_pod(&client, "ns", "web")
            .transport(transport)
            .dial()
            .await
            .unwrap();
        let mut stream = connection.connect(8080).await.unwrap();
        stream.write_all(b"ping").await.unwrap();
        stream.shutdown().await.unwrap();
        let mut back = Vec::new();
        stream.read_to_end(&mut back).await.unwrap();
        assert_eq!(back, b"ping", "{transport:?}");
    }
    assert_eq!(
        requests.lock()[0],
        kclient_fake::PortForwardRequest {
            namespace: "ns".into(),
            pod: "web".into(),
            port: 8080
        }
    );

    let forward = PortForwarder::new(Dialer::for_pod(&client, "ns", "web"), &["0:80"])
        .unwrap()
        .start()
        .await
        .unwrap();
    let mut local = tokio::net::TcpStream::connect(forward.local_addr(80).unwrap())
        .await
        .unwrap();
    local.write_all(b"through a listener").await.unwrap();
    local.shutdown().await.unwrap();
    let mut back = Vec::new();
    local.read_to_end(&mut back).await.unwrap();
    assert_eq!(back, b"through a listener");
    forward.stop().await.unwrap();
}

/// A handler that connects to a real listener of the test; a refused connection is the pod
/// side's error, which ends a forward.
#[tokio::test]
async fn port_forward_to_a_real_listener_and_its_refusal() {
    let server = server().await;
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = http.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = http.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = conn.read(&mut buf).await;
                let _ = conn
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                    )
                    .await;
            });
        }
    });
    server.set_port_forward_handler(forward_to_address(address));
    let client = client(&server);
    let connection = Dialer::for_pod(&client, "ns", "web").dial().await.unwrap();
    let mut stream = connection.connect(80).await.unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    stream.shutdown().await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    assert!(
        answer.ends_with(b"\r\n\r\nok"),
        "{}",
        String::from_utf8_lossy(&answer)
    );

    // Nothing listens there (a new handler serves the connections opened after it).
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    server.set_port_forward_handler(forward_to_address(closed));
    let connection = Dialer::for_pod(&client, "ns", "web").dial().await.unwrap();
    let mut stream = connection.connect(80).await.unwrap();
    let mut buf = Vec::new();
    let error = stream.read_to_end(&mut buf).await.unwrap_err();
    let remote = error
        .get_ref()
        .and_then(|e| e.downcast_ref::<portforward::Error>())
        .unwrap();
    let portforward::Error::Remote { message, .. } = remote else {
        panic!("{remote:?}");
    };
    assert!(
        message.starts_with("error forwarding port 80 to pod web, uid "),
        "{message}"
    );
    assert!(
        message.contains(&format!("dial tcp4 {closed}")),
        "{message}"
    );
}

/// Port-forward's refusals: a missing pod (404), no node (400), a pod that is not running
/// (the kubelet's 500, for the tunnel and the SPDY fallback alike).
#[tokio::test]
async fn port_forward_refusals_are_a_cluster_s() {
    let server = server().await;
    server.set_port_forward_handler(echo_port);
    let client = client(&server);
    let dial = |pod: &'static str| {
        let dialer = Dialer::for_pod(&client, "ns", pod);
        async move { dialer.dial().await }
    };
    let status_of = |e: &portforward::Error| match e {
        portforward::Error::Upgrade(u) => u.api_status().map(|s| (s.code, s.message.clone())),
        _ => None,
    };
    let missing = dial("nope").await.unwrap_err();
    assert_eq!(
        status_of(&missing),
        Some((404, "pods \"nope\" not found".into()))
    );
    let unscheduled = dial("unscheduled").await.unwrap_err();
    assert_eq!(
        status_of(&unscheduled),
        Some((400, "pod unscheduled does not have a host assigned".into()))
    );
    let done = dial("done").await.unwrap_err();
    let portforward::Error::Upgrade(UpgradeError::Refused(rest)) = &done else {
        panic!("{done:?}");
    };
    assert_eq!(rest.http_code(), Some(500));
    assert!(
        rest.to_string().contains("pod not found (\\\"done_ns\\\")")
            || rest.to_string().contains("pod not found (\"done_ns\")"),
        "{rest}"
    );
}

/// Sessions end when the server goes.
#[tokio::test]
async fn shutting_the_server_down_ends_its_sessions() {
    let server = server().await;
    server.set_exec_handler(|_process: Process| async move {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        0
    });
    let client = client(&server);
    let executor = Executor::exec(
        &client,
        "ns",
        "web",
        &ExecOptions::command(["sleep"]).stdout(),
    );
    let session = tokio::spawn(async move { executor.output(None).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.shutdown().await;
    let result = tokio::time::timeout(Duration::from_secs(10), session)
        .await
        .expect("the session ended")
        .unwrap();
    assert!(result.is_err(), "{result:?}");
}

/// A handler that fails drops (resets) the data stream before the fake writes its error:
/// the reset must not hide the error that follows, whichever thread gets there first (a
/// regression: a second poll after the reset took the end for a clean one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pod_side_error_follows_a_reset_data_stream_every_time() {
    let server = server().await;
    server.set_port_forward_handler(
        |request: kclient_fake::PortForwardRequest, stream| async move {
            drop(stream);
            Err::<(), String>(format!("connect: connection refused ({})", request.port))
        },
    );
    let client = client(&server);
    for attempt in 0..50 {
        let connection = Dialer::for_pod(&client, "ns", "web").dial().await.unwrap();
        let mut stream = connection.connect(81).await.unwrap();
        let mut buf = Vec::new();
        let error = stream.read_to_end(&mut buf).await.unwrap_err();
        let remote = error
            .get_ref()
            .and_then(|e| e.downcast_ref::<portforward::Error>());
        assert!(
            matches!(remote, Some(portforward::Error::Remote { port: 81, message }) if message.ends_with("connect: connection refused (81)")),
            "attempt {attempt}: {error:?}"
        );
    }
}

/// The kubelet stand-in's port-forward route (what kube-apiserver proxies to; the e2e
/// suite's `kubelet_standin` runs exec and port-forward through a real kube-apiserver):
/// a SPDY upgrade on `/portForward/{namespace}/{pod}`, HTTPS with a certificate nobody
/// verifies, other paths 404.
#[tokio::test]
async fn the_kubelet_stand_in_serves_port_forward_over_a_spdy_upgrade() {
    let kubelet = kclient_fake::FakeKubelet::start().await.unwrap();
    kubelet.set_port_forward_handler(echo_port);
    let node = kubelet.node("n1");
    assert_eq!(
        node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"],
        kubelet.port()
    );
    let mut config = kclient_rest::Config::new(format!("https://127.0.0.1:{}", kubelet.port()));
    config.tls.insecure = true;
    config.qps = None;
    let client = kclient_rest::RestClient::new(config).unwrap();
    let dialer = Dialer::new({
        let client = client.clone();
        move |method| client.request(method).abs_path("/portForward/ns/web")
    })
    .transport(Transport::Spdy);
    let connection = dialer.dial().await.unwrap();
    let mut stream = connection.connect(80).await.unwrap();
    stream.write_all(b"kubelet").await.unwrap();
    stream.shutdown().await.unwrap();
    let mut back = Vec::new();
    stream.read_to_end(&mut back).await.unwrap();
    assert_eq!(back, b"kubelet");
    let missing = client.post().abs_path("/pods").send().await.unwrap_err();
    assert_eq!(missing.http_code(), Some(404));
}
