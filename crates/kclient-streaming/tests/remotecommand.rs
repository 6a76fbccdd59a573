//! The exec and attach client against scripted servers: the channel protocol as
//! kube-apiserver speaks it (v5 and v4), exit codes, terminals, and every way a server can
//! fail a session.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kclient_core::ApiStatus;
use kclient_streaming::remotecommand::{
    AttachOptions, Error, ExecOptions, Executor, StreamOptions, TerminalSize,
};
use kclient_streaming::upgrade::UpgradeError;
use parking_lot::Mutex;
use tokio_tungstenite::tungstenite::Message;

use crate::support::{self, accept_websocket, finish, respond, send, ScriptedServer};

/// Every binary message a server received, in order.
type Seen = Arc<Mutex<Vec<Vec<u8>>>>;

/// Whether an error is the one a case expects.
type ErrorCheck = Box<dyn Fn(&Error) -> bool + Send>;

/// Reads the client's messages until it closes stdin (v5) or `until` messages came.
async fn read_client(
    ws: &mut tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>,
    seen: &Seen,
    until_close_signal: bool,
) {
    while let Some(Ok(message)) = ws.next().await {
        if let Message::Binary(data) = message {
            let done = until_close_signal && data[..] == [255, 0];
            seen.lock().push(data.to_vec());
            if done {
                return;
            }
        }
    }
}

/// A v5 session as kube-apiserver runs one: the empty first message on stdout, the command's
/// output on stdout and stderr, the stdin it read (to the CLOSE signal), then the status.
#[tokio::test]
async fn exec_carries_stdin_stdout_stderr_and_ends_with_success() {
    let seen: Seen = Arc::default();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let (server_seen, server_heads) = (seen.clone(), heads.clone());
    let server = ScriptedServer::start(move |head, tcp| {
        let (seen, heads) = (server_seen.clone(), server_heads.clone());
        async move {
            heads.lock().push(head.clone());
            let mut ws = accept_websocket(&head, tcp, Some("v5.channel.k8s.io")).await;
            send(&mut ws, 1, b"").await;
            send(&mut ws, 1, b"out:").await;
            send(&mut ws, 2, b"err").await;
            read_client(&mut ws, &seen, true).await;
            let input: Vec<u8> = seen
                .lock()
                .iter()
                .filter(|m| m[0] == 0)
                .flat_map(|m| m[1..].to_vec())
                .collect();
            send(&mut ws, 1, &input).await;
            finish(&mut ws, support::SUCCESS).await;
        }
    })
    .await;
    let client = server.client();
    let options = ExecOptions::command(["sh", "-c", "cat"])
        .container("app")
        .stdin()
        .stdout()
        .stderr();
    let executor = Executor::exec(&client, "ns", "web", &options);
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    executor
        .stream(
            StreamOptions::new()
                .stdin(&b"hello world"[..])
                .stdout(&mut stdout)
                .stderr(&mut stderr),
        )
        .await
        .unwrap();
    assert_eq!(stdout, b"out:hello world");
    assert_eq!(stderr, b"err");

    let head = heads.lock()[0].clone();
    assert_eq!(head.method, "GET", "a WebSocket handshake is a GET");
    assert_eq!(head.path, "/api/v1/namespaces/ns/pods/web/exec");
    assert_eq!(head.query_values("command"), ["sh", "-c", "cat"]);
    assert_eq!(head.query_values("container"), ["app"]);
    for stream in ["stdin", "stdout", "stderr"] {
        assert_eq!(head.query_values(stream), ["true"], "{stream}");
    }
    assert!(head.query_values("tty").is_empty());
    assert_eq!(
        head.header("Sec-WebSocket-Protocol"),
        Some("v5.channel.k8s.io, v4.channel.k8s.io")
    );
    assert_eq!(head.header("Upgrade"), Some("websocket"));
    assert_eq!(head.header("Connection"), Some("Upgrade"));
    let last = seen.lock().last().cloned().unwrap();
    assert_eq!(last, [255, 0], "v5 closes stdin with the CLOSE signal");
}

/// A non-zero exit is the error's exit code; `output` turns it into a value.
#[tokio::test]
async fn a_non_zero_exit_is_an_exit_code() {
    let server = ScriptedServer::start(|head, tcp| async move {
        let mut ws = accept_websocket(&head, tcp, Some("v5.channel.k8s.io")).await;
        send(&mut ws, 1, b"partial\n").await;
        finish(&mut ws, &support::exit_status(3)).await;
    })
    .await;
    let client = server.client();
    let executor = Executor::exec(
        &client,
        "ns",
        "web",
        &ExecOptions::command(["false"]).stdout().stderr(),
    );
    let error = executor.stream(StreamOptions::new()).await.unwrap_err();
    assert_eq!(error.exit_code(), Some(3), "{error:?}");
    assert_eq!(error.to_string(), "command terminated with exit code 3");
    let output = executor.output(None).await.unwrap();
    assert_eq!(output.exit_code, 3);
    assert_eq!(output.stdout, b"partial\n");
}

/// Over v4 the end of stdin cannot be told: no CLOSE signal is sent.
#[tokio::test]
async fn v4_is_spoken_too_and_sends_no_close_signal() {
    let seen: Seen = Arc::default();
    let server_seen = seen.clone();
    let server = ScriptedServer::start(move |head, tcp| {
        let seen = server_seen.clone();
        async move {
            let mut ws = accept_websocket(&head, tcp, Some("v4.channel.k8s.io")).await;
            // Reads for a moment (the stdin arrives), then ends the session.
            let _ = tokio::time::timeout(
                Duration::from_millis(300),
                read_client(&mut ws, &seen, false),
            )
            .await;
            finish(&mut ws, support::SUCCESS).await;
        }
    })
    .await;
    let client = server.client();
    let executor = Executor::exec(&client, "ns", "web", &ExecOptions::command(["cat"]).stdin());
    executor
        .stream(StreamOptions::new().stdin(&b"abc"[..]))
        .await
        .unwrap();
    let seen = seen.lock().clone();
    assert_eq!(seen, [b"\0abc".to_vec()]);
}

/// A TTY: no stderr is carried, and each terminal size goes to the resize channel as
/// client-go's JSON encoder writes it.
#[tokio::test]
async fn a_tty_sends_terminal_sizes_on_the_resize_channel() {
    let seen: Seen = Arc::default();
    let server_seen = seen.clone();
    let server = ScriptedServer::start(move |head, tcp| {
        let seen = server_seen.clone();
        async move {
            assert_eq!(head.query_values("tty"), ["true"]);
            let mut ws = accept_websocket(&head, tcp, Some("v5.channel.k8s.io")).await;
            send(&mut ws, 2, b"not for a terminal").await;
            while seen.lock().len() < 2 {
                match ws.next().await {
                    Some(Ok(Message::Binary(data))) => seen.lock().push(data.to_vec()),
                    Some(Ok(_)) => {}
                    _ => break,
                }
            }
            finish(&mut ws, support::SUCCESS).await;
        }
    })
    .await;
    let client = server.client();
    let executor = Executor::attach(
        &client,
        "ns",
        "web",
        &AttachOptions::default().stdout().tty(),
    );
    let sizes = futures::stream::iter([
        TerminalSize {
            width: 80,
            height: 24,
        },
        TerminalSize {
            width: 120,
            height: 40,
        },
    ]);
    let mut stderr = Vec::new();
    executor
        .stream(
            StreamOptions::new()
                .tty(true)
                .stderr(&mut stderr)
                .terminal_size_queue(sizes),
        )
        .await
        .unwrap();
    assert!(stderr.is_empty(), "a terminal merges stderr into stdout");
    let seen = seen.lock().clone();
    assert_eq!(
        seen,
        [
            b"\x04{\"Width\":80,\"Height\":24}\n".to_vec(),
            b"\x04{\"Width\":120,\"Height\":40}\n".to_vec(),
        ]
    );
}

/// A refused upgrade is an upgrade error carrying the server's `Status` (as kube-apiserver
/// refuses a missing container, before any upgrade).
#[tokio::test]
async fn a_refused_upgrade_is_an_upgrade_error_with_the_status() {
    let server = ScriptedServer::start(|_, tcp| async move {
        respond(
            tcp,
            "400 Bad Request",
            "application/json",
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"container nope is not valid for pod web","reason":"BadRequest","code":400}"#,
        )
        .await;
    })
    .await;
    let client = server.client();
    let executor = Executor::exec(&client, "ns", "web", &ExecOptions::command(["ls"]).stdout());
    let error = executor.stream(StreamOptions::new()).await.unwrap_err();
    let Error::Upgrade(upgrade) = &error else {
        panic!("{error:?}");
    };
    assert!(upgrade.is_upgrade_failure());
    let status = error.api_status().unwrap();
    assert_eq!(status.code, 400);
    assert_eq!(status.message, "container nope is not valid for pod web");
    let UpgradeError::Refused(rest) = upgrade else {
        panic!("{upgrade:?}")
    };
    assert!(rest.is_bad_request());
}

/// Answers that do not switch: plain text, a 200, a wrong accept key, a protocol not offered.
#[tokio::test]
async fn answers_that_do_not_switch_are_upgrade_failures() {
    let cases: Vec<(&str, ErrorCheck)> = vec![
        (
            "text",
            Box::new(
                |e| matches!(e, Error::Upgrade(UpgradeError::Refused(r)) if r.http_code() == Some(503)),
            ),
        ),
        (
            "ok",
            Box::new(
                |e| matches!(e, Error::Upgrade(UpgradeError::Refused(r)) if r.http_code() == Some(200)),
            ),
        ),
        (
            "accept",
            Box::new(
                |e| matches!(e, Error::Upgrade(UpgradeError::Handshake(m)) if m.contains("Sec-WebSocket-Accept")),
            ),
        ),
        (
            "protocol",
            Box::new(
                |e| matches!(e, Error::Upgrade(UpgradeError::Handshake(m)) if m.contains("invalid protocol")),
            ),
        ),
        (
            "none",
            Box::new(
                |e| matches!(e, Error::Upgrade(UpgradeError::Handshake(m)) if m.contains("got \"\"")),
            ),
        ),
    ];
    for (case, check) in cases {
        let server = ScriptedServer::start(move |head, mut tcp| async move {
            match case {
                "text" => respond(tcp, "503 Service Unavailable", "text/plain", "no kubelet").await,
                "ok" => respond(tcp, "200 OK", "text/plain", "hello").await,
                "accept" => {
                    use tokio::io::AsyncWriteExt;
                    let _ = tcp
                        .write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: wrong\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n")
                        .await;
                }
                "protocol" => drop(accept_websocket(&head, tcp, Some("v3.channel.k8s.io")).await),
                _ => drop(accept_websocket(&head, tcp, None).await),
            }
        })
        .await;
        let client = server.client();
        let executor = Executor::exec(&client, "ns", "web", &ExecOptions::command(["ls"]));
        let error = executor.stream(StreamOptions::new()).await.unwrap_err();
        assert!(check(&error), "{case}: {error:?}");
        let Error::Upgrade(upgrade) = &error else {
            unreachable!()
        };
        assert!(upgrade.is_upgrade_failure(), "{case}");
    }
}

/// Bad sessions: a connection dropped mid-way, an oversized message, a text message, an
/// empty message, garbage on the error channel. Each is its own typed error.
#[tokio::test]
async fn broken_sessions_are_typed_errors() {
    let cases: Vec<(&str, ErrorCheck)> = vec![
        ("drop", Box::new(|e| matches!(e, Error::ConnectionLost(_)))),
        (
            "big",
            Box::new(|e| matches!(e, Error::MessageTooLarge { max: 1024, .. })),
        ),
        (
            "text",
            Box::new(|e| matches!(e, Error::Protocol(m) if m.contains("text"))),
        ),
        (
            "empty",
            Box::new(|e| matches!(e, Error::Protocol(m) if m.contains("empty"))),
        ),
        (
            "garbage",
            Box::new(
                |e| matches!(e, Error::ErrorStream(m) if m.starts_with("error stream protocol error")),
            ),
        ),
        (
            "internal",
            Box::new(
                |e| matches!(e, Error::Remote(s) if s.code == 500 && s.message.contains("container not found")),
            ),
        ),
    ];
    for (case, check) in cases {
        let server = ScriptedServer::start(move |head, tcp| async move {
            let mut ws = accept_websocket(&head, tcp, Some("v5.channel.k8s.io")).await;
            send(&mut ws, 1, b"some output").await;
            match case {
                // The TCP connection ends without a close frame.
                "drop" => drop(ws),
                "big" => send(&mut ws, 1, &[b'x'; 4096]).await,
                "text" => ws.send_text("hello").await,
                "empty" => {
                    use futures::SinkExt;
                    ws.send(Message::Binary(Vec::new().into())).await.unwrap();
                }
                "garbage" => finish(&mut ws, "not a status").await,
                _ => finish(&mut ws, r#"{"metadata":{},"status":"Failure","message":"Internal error occurred: unable to upgrade connection: container not found (\"app\")","reason":"InternalError","details":{"causes":[{"message":"unable to upgrade connection: container not found (\"app\")"}]},"code":500}"#).await,
            }
            // Keep the socket a moment so the client reads what was sent.
            tokio::time::sleep(Duration::from_millis(200)).await;
        })
        .await;
        let client = server.client();
        let executor = Executor::exec(&client, "ns", "web", &ExecOptions::command(["ls"]).stdout())
            .max_message_len(1024);
        let mut stdout = Vec::new();
        let error = executor
            .stream(StreamOptions::new().stdout(&mut stdout))
            .await
            .unwrap_err();
        assert!(check(&error), "{case}: {error:?}");
        assert_eq!(
            stdout, b"some output",
            "{case}: what came before the failure was written"
        );
    }
}

trait SendText {
    async fn send_text(&mut self, text: &str);
}

impl SendText for tokio_tungstenite::WebSocketStream<tokio::net::TcpStream> {
    async fn send_text(&mut self, text: &str) {
        use futures::SinkExt;
        self.send(Message::Text(text.into())).await.unwrap();
    }
}

/// A server that goes silent (no data, no pong) ends the session after the read deadline,
/// on tokio's clock; one that answers pings keeps it alive however long the command runs.
#[tokio::test(start_paused = true)]
async fn a_silent_server_ends_the_session_after_the_read_deadline() {
    let server = ScriptedServer::start(|head, tcp| async move {
        let ws = accept_websocket(&head, tcp, Some("v5.channel.k8s.io")).await;
        // Holds the connection without reading it: no pong goes back.
        tokio::time::sleep(Duration::from_secs(3600)).await;
        drop(ws);
    })
    .await;
    let client = server.client();
    let executor = Executor::exec(
        &client,
        "ns",
        "web",
        &ExecOptions::command(["sleep", "1000"]),
    );
    let started = tokio::time::Instant::now();
    let error = executor.stream(StreamOptions::new()).await.unwrap_err();
    assert!(
        matches!(error, Error::HeartbeatTimeout(d) if d == Duration::from_secs(61)),
        "{error:?}"
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(61) && waited < Duration::from_secs(62),
        "{waited:?}"
    );

    // Answering pings (the WebSocket layer does so while it reads) keeps a long command alive.
    let server = ScriptedServer::start(|head, tcp| async move {
        let mut ws = accept_websocket(&head, tcp, Some("v5.channel.k8s.io")).await;
        let _ = tokio::time::timeout(Duration::from_secs(300), async {
            while let Some(Ok(_)) = ws.next().await {}
        })
        .await;
        finish(&mut ws, support::SUCCESS).await;
    })
    .await;
    let client = server.client();
    let executor = Executor::exec(
        &client,
        "ns",
        "web",
        &ExecOptions::command(["sleep", "300"]),
    );
    executor.stream(StreamOptions::new()).await.unwrap();
}

/// A server that never answers the upgrade: the upgrade timeout ends the wait.
#[tokio::test(start_paused = true)]
async fn an_unanswered_upgrade_times_out() {
    let server = ScriptedServer::start(|_, tcp| async move {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        drop(tcp);
    })
    .await;
    let client = server.client();
    let executor = Executor::exec(&client, "ns", "web", &ExecOptions::command(["ls"]))
        .upgrade_timeout(Duration::from_secs(10));
    let error = executor.stream(StreamOptions::new()).await.unwrap_err();
    assert!(
        matches!(error, Error::Upgrade(UpgradeError::Timeout(d)) if d == Duration::from_secs(10)),
        "{error:?}"
    );
}

/// Dropping the session's future (a cancellation) closes the connection: the server sees
/// its end.
#[tokio::test]
async fn cancelling_a_session_closes_its_connection() {
    let (ended_tx, ended_rx) = tokio::sync::oneshot::channel::<()>();
    let ended_tx = Arc::new(Mutex::new(Some(ended_tx)));
    let server = ScriptedServer::start(move |head, tcp| {
        let ended_tx = ended_tx.clone();
        async move {
            let mut ws = accept_websocket(&head, tcp, Some("v5.channel.k8s.io")).await;
            send(&mut ws, 1, b"started").await;
            while let Some(Ok(_)) = ws.next().await {}
            if let Some(tx) = ended_tx.lock().take() {
                let _ = tx.send(());
            }
        }
    })
    .await;
    let client = server.client();
    let executor = Executor::exec(
        &client,
        "ns",
        "web",
        &ExecOptions::command(["sleep", "1000"]).stdout(),
    );
    let (started_tx, mut started_rx) = tokio::sync::mpsc::channel(1);
    struct Notify(tokio::sync::mpsc::Sender<()>);
    impl tokio::io::AsyncWrite for Notify {
        fn poll_write(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            let _ = self.0.try_send(());
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
    let session = executor.stream(StreamOptions::new().stdout(Notify(started_tx)));
    tokio::select! {
        result = session => panic!("the session ended by itself: {result:?}"),
        _ = started_rx.recv() => {}
    }
    tokio::time::timeout(Duration::from_secs(10), ended_rx)
        .await
        .expect("the server saw the connection end")
        .unwrap();
}
