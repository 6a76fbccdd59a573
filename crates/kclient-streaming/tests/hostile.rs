//! exec, attach and port-forward against hostile servers (issue 46, "every layer under
//! attack"): frames larger than the bound, unknown channels and streams, connections that
//! end mid-frame, malformed statuses, odd refusals of the upgrade, servers that never close
//! or flood output faster than it is read. Each case ends in a typed error or a clean end,
//! with memory bounded by the configured buffers, and every wait here is bounded (`BOUND`),
//! so a regression fails instead of hanging.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::{SinkExt, StreamExt};
use kclient_streaming::portforward::{self, Dialer, PortForwarder, Transport};
use kclient_streaming::remotecommand::{
    Error, ExecOptions, Executor, StreamOptions, MAX_ERROR_STREAM_LEN, PING_READ_DEADLINE,
    STATUS_CLOSE_GRACE,
};
use kclient_streaming::spdy::{self, Frame, FrameDecoder, FrameEncoder, Headers};
use kclient_streaming::upgrade::UpgradeError;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::codec::{Encoder, FramedRead, FramedWrite};

use crate::support::{
    self, accept_spdy, accept_websocket, exit_status, switch_to_websocket, RequestHead,
    ScriptedServer,
};

/// The most any case may take: generous, so that only a hang reaches it.
const BOUND: Duration = Duration::from_secs(30);

/// Whether an error is the one a case expects.
type ErrorCheck = fn(&Error) -> bool;

/// The same, with what it captured.
type BoxedCheck = Box<dyn Fn(&Error) -> bool>;

// ---------------------------------------------------------------------------------------
// Raw WebSocket frames, as a server writes them (unmasked).

/// A frame: its first byte (FIN, RSV and opcode), then the length and the payload.
fn ws_frame(first: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![first];
    match payload.len() {
        n if n < 126 => frame.push(n as u8),
        n if n <= 0xffff => {
            frame.push(126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    frame.extend_from_slice(payload);
    frame
}

/// A whole binary message on `channel`.
fn channel_frame(channel: u8, data: &[u8]) -> Vec<u8> {
    let mut payload = vec![channel];
    payload.extend_from_slice(data);
    ws_frame(0x82, &payload)
}

/// A close frame with `code` and `reason`.
fn close_frame(code: u16, reason: &str) -> Vec<u8> {
    let mut payload = code.to_be_bytes().to_vec();
    payload.extend_from_slice(reason.as_bytes());
    ws_frame(0x88, &payload)
}

/// What a raw server does once its bytes are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Then {
    /// Ends the TCP connection (no close frame).
    Hang,
    /// Keeps the connection, reading (and discarding) what the client sends until it goes.
    Hold,
}

/// A server that answers the upgrade with `v5.channel.k8s.io`, writes `bytes` raw, then
/// does what `then` says.
async fn raw_server(bytes: Vec<u8>, then: Then) -> ScriptedServer {
    let bytes = Arc::new(bytes);
    ScriptedServer::start(move |head, mut tcp| {
        let bytes = bytes.clone();
        async move {
            switch_to_websocket(&head, &mut tcp, Some("v5.channel.k8s.io")).await;
            let _ = tcp.write_all(&bytes).await;
            match then {
                Then::Hang => {
                    let _ = tcp.shutdown().await;
                }
                Then::Hold => drain(&mut tcp).await,
            }
        }
    })
    .await
}

/// Reads until the client goes.
async fn drain(tcp: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    while tcp.read(&mut buf).await.is_ok_and(|n| n > 0) {}
}

/// Runs an exec session with stdout collected against `server`, within [`BOUND`].
async fn exec(server: &ScriptedServer, max_message_len: usize) -> (Result<(), Error>, Vec<u8>) {
    exec_within(server, max_message_len, BOUND).await
}

/// Runs an exec session with stdout collected against `server`, within `bound` (on tokio's
/// clock, paused or not).
async fn exec_within(
    server: &ScriptedServer,
    max_message_len: usize,
    bound: Duration,
) -> (Result<(), Error>, Vec<u8>) {
    let client = server.client();
    let executor = Executor::exec(&client, "ns", "web", &ExecOptions::command(["ls"]).stdout())
        .max_message_len(max_message_len);
    let mut stdout = Vec::new();
    let result = tokio::time::timeout(
        bound,
        executor.stream(StreamOptions::new().stdout(&mut stdout)),
    )
    .await
    .expect("the session ended within the bound");
    (result, stdout)
}

// ---------------------------------------------------------------------------------------
// exec: channels, frames, statuses.

/// Messages on channels the session does not read (unknown numbers, stdin and resize from
/// the server, a CLOSE signal from the server) are discarded, as client-go's `readDemuxLoop`
/// discards them; a flood of them holds nothing, and the session ends as the status says.
#[tokio::test]
async fn unknown_channels_are_discarded_as_client_go_does() {
    let mut bytes = channel_frame(1, b"a");
    for channel in [5u8, 7, 42, 128, 254] {
        bytes.extend(channel_frame(channel, b"not for anyone"));
    }
    bytes.extend(channel_frame(0, b"stdin from the server"));
    bytes.extend(channel_frame(4, br#"{"Width":1,"Height":1}"#));
    bytes.extend(ws_frame(0x82, &[255, 1]));
    bytes.extend(ws_frame(0x82, &[255]));
    // 10,000 messages (10 MB) on an unknown channel: read and dropped one by one.
    let junk = channel_frame(9, &[b'j'; 1000]);
    for _ in 0..10_000 {
        bytes.extend_from_slice(&junk);
    }
    bytes.extend(channel_frame(1, b"b"));
    bytes.extend(channel_frame(3, support::SUCCESS.as_bytes()));
    bytes.extend(close_frame(1000, ""));
    let server = raw_server(bytes, Then::Hold).await;
    let (result, stdout) = exec(&server, 64 * 1024).await;
    result.unwrap();
    assert_eq!(stdout, b"ab");
}

/// The connection ends in the middle of a frame (its header cut, its extended length cut,
/// its payload cut, the status's frame cut): the session is `ConnectionLost` at once, never
/// a success or a wait, and what came before was written.
#[tokio::test]
async fn a_connection_closed_mid_frame_is_connection_lost() {
    let big = channel_frame(1, &[b'x'; 1000]);
    let status = channel_frame(3, support::SUCCESS.as_bytes());
    let cuts: Vec<(&str, Vec<u8>)> = vec![
        ("the first byte only", big[..1].to_vec()),
        ("the extended length cut", big[..3].to_vec()),
        ("the payload cut", big[..500].to_vec()),
        ("the status cut", status[..status.len() - 5].to_vec()),
        ("a 64-bit length cut", [0x82u8, 127, 0, 0, 0, 0, 0].to_vec()),
    ];
    for (case, cut) in cuts {
        let mut bytes = channel_frame(1, b"before");
        bytes.extend(cut);
        let server = raw_server(bytes, Then::Hang).await;
        let (result, stdout) = exec(&server, 64 * 1024).await;
        let error = result.unwrap_err();
        assert!(
            matches!(error, Error::ConnectionLost(_)),
            "{case}: {error:?}"
        );
        assert_eq!(stdout, b"before", "{case}");
    }
}

/// Frames that break RFC 6455 (masked by the server, reserved bits, unknown opcodes,
/// fragmented or oversized control frames, a stray continuation, a malformed close) are
/// `ConnectionLost`; a length beyond the bound, announced or reached through fragments, is
/// `MessageTooLarge` before anything of that size is allocated or waited for. The server
/// keeps the connection open each time: the frame alone ends the session.
#[tokio::test]
async fn frames_that_break_the_protocol_are_typed_errors() {
    let lost: ErrorCheck = |e| matches!(e, Error::ConnectionLost(_));
    let too_large: ErrorCheck = |e| matches!(e, Error::MessageTooLarge { max: 1024, .. });
    let text: ErrorCheck = |e| {
        matches!(e, Error::ConnectionLost(_))
            || matches!(e, Error::Protocol(m) if m.contains("text"))
    };
    let mut fragmented = ws_frame(0x02, &[1u8; 600]);
    fragmented.extend(ws_frame(0x00, &[b'y'; 600]));
    fragmented.extend(ws_frame(0x80, &[b'z'; 600]));
    let cases: Vec<(&str, Vec<u8>, ErrorCheck)> = vec![
        (
            "masked by the server",
            vec![0x82, 0x83, 1, 2, 3, 4, 0, 0, 0],
            lost,
        ),
        ("reserved bits", vec![0xc2, 0x01, 0x01], lost),
        ("an unknown data opcode", vec![0x83, 0x01, 0x01], lost),
        ("an unknown control opcode", vec![0x8b, 0x00], lost),
        ("a fragmented ping", vec![0x09, 0x00], lost),
        ("a ping of 200 bytes", ws_frame(0x89, &[0; 200]), lost),
        ("a stray continuation", vec![0x80, 0x01, 0x01], lost),
        ("a close of one byte", vec![0x88, 0x01, 0x03], lost),
        ("a close with code 999", close_frame(999, ""), |e| {
            // tungstenite answers it as a protocol violation.
            matches!(
                e,
                Error::ConnectionLost(_) | Error::AbnormalClose { code: 1002, .. }
            )
        }),
        (
            "a text message not UTF-8",
            vec![0x81, 0x02, 0xff, 0xfe],
            text,
        ),
        (
            "a 2^63-1 byte frame announced",
            vec![0x82, 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            too_large,
        ),
        (
            "a 64-bit length with its top bit set",
            vec![0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1],
            |e| {
                matches!(
                    e,
                    Error::ConnectionLost(_) | Error::MessageTooLarge { max: 1024, .. }
                )
            },
        ),
        (
            "a 1 MiB frame announced",
            vec![0x82, 127, 0, 0, 0, 0, 0, 0x10, 0, 0],
            too_large,
        ),
        ("fragments over the limit together", fragmented, too_large),
    ];
    for (case, frame, check) in cases {
        let mut bytes = channel_frame(1, b"before");
        bytes.extend(frame);
        let server = raw_server(bytes, Then::Hold).await;
        let (result, stdout) = exec(&server, 1024).await;
        let error = result.unwrap_err();
        assert!(check(&error), "{case}: {error:?}");
        assert_eq!(stdout, b"before", "{case}");
    }
}

/// A frame that starts and never completes, on a connection the server keeps open: the
/// read deadline ends the session (on tokio's clock), as it ends a silent server's.
#[tokio::test(start_paused = true)]
async fn a_frame_that_never_completes_ends_at_the_read_deadline() {
    let mut bytes = channel_frame(1, b"before");
    bytes.extend_from_slice(&channel_frame(1, &[b'x'; 1000])[..100]);
    let server = raw_server(bytes, Then::Hold).await;
    let started = tokio::time::Instant::now();
    let (result, stdout) = exec_within(&server, 64 * 1024, BOUND + PING_READ_DEADLINE).await;
    let error = result.unwrap_err();
    assert!(matches!(error, Error::HeartbeatTimeout(_)), "{error:?}");
    assert_eq!(stdout, b"before");
    let waited = started.elapsed();
    assert!(
        waited >= PING_READ_DEADLINE && waited < PING_READ_DEADLINE + Duration::from_secs(1),
        "{waited:?}"
    );
}

/// What the error channel carries must be one `Status`: anything else (not JSON, not UTF-8,
/// JSON of another shape, a nesting bomb, a status cut short or followed by more) is
/// `ErrorStream`, never a panic nor a success; a status split over several messages is read
/// whole.
#[tokio::test]
async fn a_malformed_status_is_a_typed_error() {
    let error_stream: ErrorCheck = |e| matches!(e, Error::ErrorStream(_));
    let nesting_bomb = "[".repeat(60_000);
    let long_message = format!(
        r#"{{"metadata":{{}},"status":"Failure","message":"{}","reason":"InternalError","code":500}}"#,
        "m".repeat(60_000)
    );
    let cases: Vec<(&str, Vec<Vec<u8>>, ErrorCheck)> = vec![
        ("not UTF-8", vec![vec![0xff, 0xfe, 0x00, 0x80]], error_stream),
        ("an array", vec![b"[1,2,3]".to_vec()], error_stream),
        ("a string", vec![br#""Failure""#.to_vec()], error_stream),
        ("a number for status", vec![br#"{"status":5}"#.to_vec()], error_stream),
        ("an empty object", vec![b"{}".to_vec()], |e| {
            matches!(e, Error::ErrorStream(m) if m.contains("unknown error"))
        }),
        (
            "causes of the wrong type",
            vec![br#"{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":"x"}}"#.to_vec()],
            error_stream,
        ),
        (
            "an exit code out of range",
            vec![br#"{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"99999999999999999999"}]}}"#.to_vec()],
            |e| matches!(e, Error::ErrorStream(m) if m.contains("invalid exit code value")),
        ),
        ("a nesting bomb", vec![nesting_bomb.into_bytes()], error_stream),
        ("cut short", vec![br#"{"status":"Succ"#.to_vec()], error_stream),
        (
            "trailing bytes",
            vec![br#"{"metadata":{},"status":"Success"}xyz"#.to_vec()],
            error_stream,
        ),
        (
            "two statuses",
            vec![support::SUCCESS.as_bytes().to_vec(), exit_status(3).into_bytes()],
            error_stream,
        ),
        (
            "split over three messages",
            {
                let status = exit_status(7).into_bytes();
                vec![status[..10].to_vec(), status[10..40].to_vec(), status[40..].to_vec()]
            },
            |e| e.exit_code() == Some(7),
        ),
        (
            "a long message within the bound",
            vec![long_message.into_bytes()],
            |e| matches!(e, Error::Remote(s) if s.code == 500 && s.message.len() == 60_000),
        ),
    ];
    for (case, messages, check) in cases {
        let mut bytes = channel_frame(1, b"before");
        for message in &messages {
            bytes.extend(channel_frame(3, message));
        }
        bytes.extend(close_frame(1000, ""));
        let server = raw_server(bytes, Then::Hold).await;
        let (result, stdout) = exec(&server, 1024 * 1024).await;
        let error = result.unwrap_err();
        assert!(check(&error), "{case}: {error:?}");
        assert_eq!(stdout, b"before", "{case}");
    }
}

/// The error channel keeps at most `MAX_ERROR_STREAM_LEN` bytes, whether one message goes
/// past it or many small ones do: the session ends there, without reading the rest.
#[tokio::test]
async fn an_error_channel_past_its_bound_is_refused() {
    let one = vec![channel_frame(3, &vec![b' '; MAX_ERROR_STREAM_LEN + 1])];
    let many = vec![channel_frame(3, &[b' '; 1000]); MAX_ERROR_STREAM_LEN / 1000 + 1];
    for (case, frames) in [("one message", one), ("many messages", many)] {
        let mut bytes = channel_frame(1, b"before");
        for frame in &frames {
            bytes.extend_from_slice(frame);
        }
        // Then a flood the client must not wait for.
        let server = ScriptedServer::start(move |head, mut tcp| {
            let bytes = bytes.clone();
            async move {
                switch_to_websocket(&head, &mut tcp, Some("v5.channel.k8s.io")).await;
                let _ = tcp.write_all(&bytes).await;
                let more = channel_frame(3, &[b' '; 1000]);
                for _ in 0..100_000 {
                    if tcp.write_all(&more).await.is_err() {
                        return;
                    }
                }
            }
        })
        .await;
        let (result, stdout) = exec(&server, 1024 * 1024).await;
        let error = result.unwrap_err();
        assert!(
            matches!(&error, Error::Protocol(m) if m.contains(&format!("more than {MAX_ERROR_STREAM_LEN} bytes"))),
            "{case}: {error:?}"
        );
        assert_eq!(stdout, b"before", "{case}");
    }
}

/// A close other than a normal closure is never a success: without a status it is
/// `AbnormalClose` (client-go's "next reader: websocket: close 1011"); after a status, the
/// status says how the command ended. A normal closure, or one without a code, ends the
/// session cleanly.
#[tokio::test]
async fn an_abnormal_close_is_never_a_success() {
    let cases: Vec<(&str, Vec<u8>, ErrorCheck)> = vec![
        (
            "1011 without a status",
            close_frame(1011, "boom"),
            |e| matches!(e, Error::AbnormalClose { code: 1011, reason } if reason == "boom"),
        ),
        ("1001 without a status", close_frame(1001, ""), |e| {
            matches!(e, Error::AbnormalClose { code: 1001, .. })
        }),
        (
            "1011 after an exit status",
            [
                channel_frame(3, exit_status(3).as_bytes()),
                close_frame(1011, "late"),
            ]
            .concat(),
            |e| e.exit_code() == Some(3),
        ),
    ];
    for (case, frames, check) in cases {
        let server = raw_server([channel_frame(1, b"before"), frames].concat(), Then::Hold).await;
        let (result, stdout) = exec(&server, 1024).await;
        let error = result.unwrap_err();
        assert!(check(&error), "{case}: {error:?}");
        let message = error.to_string();
        assert!(!message.is_empty(), "{case}");
        assert_eq!(stdout, b"before", "{case}");
    }
    for (case, close) in [
        ("1000", close_frame(1000, "")),
        ("no code", ws_frame(0x88, &[])),
    ] {
        let server = raw_server([channel_frame(1, b"before"), close].concat(), Then::Hold).await;
        let (result, stdout) = exec(&server, 1024).await;
        assert!(result.is_ok(), "{case}: {result:?}");
        assert_eq!(stdout, b"before", "{case}");
    }
}

/// A server that sends its status but never closes (it answers pings, or keeps sending
/// output) ends the session with that status `STATUS_CLOSE_GRACE` after it came, on tokio's
/// clock; a status cut short and never finished ends it as a malformed status.
#[tokio::test(start_paused = true)]
async fn a_server_that_never_closes_after_its_status_ends_within_the_grace() {
    #[derive(Clone, Copy, Debug)]
    enum After {
        /// Reads (answering pings) and sends nothing more.
        Idle,
        /// Sends a line of output every second.
        Chatty,
        /// Sent half a status, and nothing more.
        HalfStatus,
    }
    for after in [After::Idle, After::Chatty, After::HalfStatus] {
        let server = ScriptedServer::start(move |head, tcp| async move {
            let mut ws = accept_websocket(&head, tcp, Some("v5.channel.k8s.io")).await;
            support::send(&mut ws, 1, b"before").await;
            let status = exit_status(2);
            match after {
                After::HalfStatus => support::send(&mut ws, 3, &status.as_bytes()[..20]).await,
                _ => support::send(&mut ws, 3, status.as_bytes()).await,
            }
            let mut ticks = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    next = ws.next() => if !matches!(next, Some(Ok(_))) { return },
                    _ = ticks.tick(), if matches!(after, After::Chatty) => {
                        if ws.send(Message::Binary(Bytes::from_static(b"\x01more"))).await.is_err() {
                            return;
                        }
                    }
                }
            }
        })
        .await;
        let started = tokio::time::Instant::now();
        let (result, stdout) = exec(&server, 1024).await;
        let waited = started.elapsed();
        let error = result.unwrap_err();
        match after {
            After::HalfStatus => assert!(matches!(error, Error::ErrorStream(_)), "{error:?}"),
            _ => assert_eq!(error.exit_code(), Some(2), "{after:?}: {error:?}"),
        }
        assert!(stdout.starts_with(b"before"), "{after:?}");
        assert!(
            waited >= STATUS_CLOSE_GRACE && waited < STATUS_CLOSE_GRACE + Duration::from_secs(1),
            "{after:?}: {waited:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// exec: odd refusals of the upgrade.

/// Answers that are not a WebSocket `101` as the client asked for it: a `101` without the
/// `Upgrade` header or with another one, without `Sec-WebSocket-Accept`, with a list of
/// subprotocols; a `200` with a `Status`; a redirect (not followed); an answer that is not
/// HTTP; a connection closed before the answer; a head without end (bounded by the HTTP
/// client's buffer). Each is a typed upgrade error, at once.
#[tokio::test]
async fn odd_refusals_of_the_upgrade_are_typed_errors() {
    let handshake = |needle: &'static str| -> BoxedCheck {
        Box::new(
            move |e| matches!(e, Error::Upgrade(UpgradeError::Handshake(m)) if m.contains(needle)),
        )
    };
    let refused = |code: u16| -> BoxedCheck {
        Box::new(
            move |e| matches!(e, Error::Upgrade(UpgradeError::Refused(r)) if r.http_code() == Some(code)),
        )
    };
    let request: BoxedCheck = Box::new(|e| matches!(e, Error::Upgrade(UpgradeError::Request(_))));
    let cases: Vec<(&str, BoxedCheck)> = vec![
        ("101 without Upgrade", handshake("not to websocket")),
        ("101 to h2c", handshake("not to websocket")),
        (
            "101 without Sec-WebSocket-Accept",
            handshake("Sec-WebSocket-Accept"),
        ),
        ("101 with both subprotocols", handshake("invalid protocol")),
        ("200 with a Status", refused(200)),
        ("302 redirect", refused(302)),
        ("not HTTP", request),
        (
            "closed before answering",
            Box::new(|e| matches!(e, Error::Upgrade(UpgradeError::Request(_)))),
        ),
        (
            "a head without end",
            Box::new(|e| {
                // hyper's head buffer is full (`Parse(TooLarge)`): no code to judge by.
                matches!(e, Error::Upgrade(UpgradeError::Request(_)))
            }),
        ),
    ];
    for (case, check) in cases {
        let heads: Arc<Mutex<Vec<RequestHead>>> = Arc::default();
        let seen = heads.clone();
        let server = ScriptedServer::start(move |head, mut tcp| {
            seen.lock().push(head.clone());
            async move {
                let key = head.header("Sec-WebSocket-Key").unwrap_or_default();
                let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
                let answer = match case {
                    "101 without Upgrade" => format!("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n"),
                    "101 to h2c" => format!("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n"),
                    "101 without Sec-WebSocket-Accept" => "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n".to_string(),
                    "101 with both subprotocols" => format!("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: v5.channel.k8s.io, v4.channel.k8s.io\r\n\r\n"),
                    "200 with a Status" => {
                        let body = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}"#;
                        format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len())
                    }
                    "302 redirect" => "HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n".to_string(),
                    "not HTTP" => "SSH-2.0-OpenSSH_9.6\r\n\r\n".to_string(),
                    "closed before answering" => String::new(),
                    _ => {
                        let _ = tcp.write_all(b"HTTP/1.1 101 Switching Protocols\r\n").await;
                        let line = format!("X-Junk: {}\r\n", "j".repeat(1000));
                        // 8 MB of header lines, or until the client gives up.
                        for _ in 0..8_000 {
                            if tcp.write_all(line.as_bytes()).await.is_err() {
                                return;
                            }
                        }
                        drain(&mut tcp).await;
                        return;
                    }
                };
                let _ = tcp.write_all(answer.as_bytes()).await;
                if answer.starts_with("HTTP/1.1 101") {
                    drain(&mut tcp).await;
                } else {
                    let _ = tcp.shutdown().await;
                }
            }
        })
        .await;
        let client = server.client();
        let executor = Executor::exec(&client, "ns", "web", &ExecOptions::command(["ls"]));
        let error = tokio::time::timeout(BOUND, executor.stream(StreamOptions::new()))
            .await
            .unwrap_or_else(|_| panic!("{case}: hung"))
            .unwrap_err();
        assert!(check(&error), "{case}: {error:?}");
        assert_eq!(
            heads.lock().len(),
            1,
            "{case}: one request, nothing followed"
        );
    }
}

/// A `101` that is all the server says: the upgrade succeeds, and the connection's end is
/// `ConnectionLost`; bytes that are not WebSocket frames after the `101` are too.
#[tokio::test]
async fn a_bare_or_garbled_switch_is_connection_lost() {
    for (case, bytes) in [
        ("nothing after the 101", Vec::new()),
        ("text after the 101", b"hello, this is not a frame".to_vec()),
    ] {
        let server = raw_server(bytes, Then::Hang).await;
        let (result, _) = exec(&server, 1024).await;
        let error = result.unwrap_err();
        assert!(
            matches!(error, Error::ConnectionLost(_)),
            "{case}: {error:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// exec: a server flooding stdout faster than it is read.

/// A local stdout that takes `first` bytes, then takes nothing until released.
#[derive(Clone, Default)]
struct Gate {
    consumed: Arc<AtomicUsize>,
    blocked: Arc<AtomicBool>,
    released: Arc<AtomicBool>,
    waker: Arc<Mutex<Option<Waker>>>,
}

impl Gate {
    fn release(&self) {
        self.released.store(true, Ordering::SeqCst);
        if let Some(waker) = self.waker.lock().take() {
            waker.wake();
        }
    }
}

struct GatedWriter {
    gate: Gate,
    first: usize,
}

impl AsyncWrite for GatedWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let gate = &self.gate;
        if gate.consumed.load(Ordering::SeqCst) >= self.first
            && !gate.released.load(Ordering::SeqCst)
        {
            *gate.waker.lock() = Some(cx.waker().clone());
            gate.blocked.store(true, Ordering::SeqCst);
            // Released meanwhile: go on.
            if !gate.released.load(Ordering::SeqCst) {
                return Poll::Pending;
            }
        }
        gate.consumed.fetch_add(buf.len(), Ordering::SeqCst);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// The most the kernel may buffer on a loopback connection: the receiver's socket buffer
/// and the sender's, at their largest (Linux's `tcp_rmem` and `tcp_wmem` maxima; 64 MiB
/// where they cannot be read).
fn kernel_buffers() -> usize {
    let max = |path: &str| -> Option<usize> {
        std::fs::read_to_string(path)
            .ok()?
            .split_whitespace()
            .nth(2)?
            .parse()
            .ok()
    };
    match (
        max("/proc/sys/net/ipv4/tcp_rmem"),
        max("/proc/sys/net/ipv4/tcp_wmem"),
    ) {
        (Some(r), Some(w)) => r + w,
        _ => 64 << 20,
    }
}

/// How long a write must stay blocked, after the reader stopped, to count as held back.
const STALL: Duration = Duration::from_secs(2);

/// A server's flood: one frame written over and over, as fast as TCP takes it. A write
/// blocked for [`STALL`] that began after the reader stopped (`reader_blocked`) is reported
/// once, with the bytes written so far, and the flood waits for `resume` to go on.
#[derive(Clone)]
struct Flood {
    frame: Arc<Vec<u8>>,
    frames: usize,
    reader_blocked: Arc<AtomicBool>,
    written: Arc<AtomicUsize>,
    stalled: Arc<Mutex<Option<tokio::sync::oneshot::Sender<usize>>>>,
    resume: Arc<tokio::sync::Notify>,
}

impl Flood {
    /// `frame` enough times to pass `bound` four times over, and 200 MiB at least.
    fn new(
        frame: Vec<u8>,
        bound: usize,
        reader_blocked: Arc<AtomicBool>,
    ) -> (Self, tokio::sync::oneshot::Receiver<usize>) {
        let frames = (200usize << 20).max(4 * bound) / frame.len() + 1;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let flood = Self {
            frame: Arc::new(frame),
            frames,
            reader_blocked,
            written: Arc::default(),
            stalled: Arc::new(Mutex::new(Some(tx))),
            resume: Arc::default(),
        };
        (flood, rx)
    }

    fn total(&self) -> usize {
        self.frames * self.frame.len()
    }

    /// Writes the flood; whether all of it went.
    async fn run(&self, tcp: &mut TcpStream) -> bool {
        let mut sent = 0usize;
        while sent < self.total() {
            let reader_blocked = self.reader_blocked.load(Ordering::SeqCst);
            let offset = sent % self.frame.len();
            match tokio::time::timeout(STALL, tcp.write(&self.frame[offset..])).await {
                Ok(Ok(n)) => {
                    sent += n;
                    self.written.store(sent, Ordering::SeqCst);
                }
                Ok(Err(_)) => return false,
                // Blocked since before the reader stopped: held back.
                Err(_) if reader_blocked => {
                    let tx = self.stalled.lock().take();
                    if let Some(tx) = tx {
                        let _ = tx.send(sent);
                        self.resume.notified().await;
                    }
                }
                // The reader was still reading: a slow moment, not backpressure.
                Err(_) => {}
            }
        }
        true
    }

    /// Waits for the flood to be held back; checks that what is in flight (written, not
    /// `consumed`) is within `bound`.
    async fn held_back(
        &self,
        stalled: tokio::sync::oneshot::Receiver<usize>,
        consumed: &AtomicUsize,
        bound: usize,
    ) {
        let stalled_at = tokio::time::timeout(BOUND, stalled)
            .await
            .expect("the server's writes stalled")
            .unwrap();
        let consumed = consumed.load(Ordering::SeqCst);
        let in_flight = stalled_at - consumed;
        println!(
            "flood of {} bytes: held back after {stalled_at} written, {consumed} read out; \
             {in_flight} in flight (bound {bound})",
            self.total()
        );
        assert!(
            stalled_at < self.total(),
            "the server wrote everything: nothing held it back"
        );
        assert!(
            in_flight <= bound,
            "{in_flight} bytes in flight, over the bound of {bound}"
        );
    }
}

/// A server writes stdout as fast as TCP takes it, far more than any buffer holds, while
/// the local stdout takes 1 MiB and then nothing: the server's writes stall (the client
/// reads no more than it has written out), with what is in flight bounded by the client's
/// buffers (its read buffer and a message of at most `max_message_len`) and the kernel's
/// socket buffers. Released, the reader takes the rest and the session ends cleanly with
/// every byte.
#[tokio::test]
async fn a_stdout_flood_is_held_back_by_a_slow_reader() {
    const CHUNK: usize = 32 * 1024;
    const MAX_MESSAGE_LEN: usize = 64 * 1024;
    /// What the client may hold besides the kernel: its read buffer (tungstenite's 128 KiB,
    /// and what the HTTP client read past the 101), the frame being read and the message
    /// being written out.
    const CLIENT_BUFFERS: usize = 512 * 1024 + 2 * MAX_MESSAGE_LEN;
    let bound = kernel_buffers() + CLIENT_BUFFERS;
    let gate = Gate::default();
    let (flood, stalled) = Flood::new(
        channel_frame(1, &[b'x'; CHUNK]),
        bound,
        gate.blocked.clone(),
    );
    let server = {
        let flood = flood.clone();
        ScriptedServer::start(move |head, mut tcp| {
            let flood = flood.clone();
            async move {
                switch_to_websocket(&head, &mut tcp, Some("v5.channel.k8s.io")).await;
                if flood.run(&mut tcp).await {
                    let status = channel_frame(3, support::SUCCESS.as_bytes());
                    let _ = tcp.write_all(&status).await;
                    let _ = tcp.write_all(&close_frame(1000, "")).await;
                    drain(&mut tcp).await;
                }
            }
        })
        .await
    };
    let client = server.client();
    let executor = Executor::exec(
        &client,
        "ns",
        "web",
        &ExecOptions::command(["yes"]).stdout(),
    )
    .max_message_len(MAX_MESSAGE_LEN);
    let writer = GatedWriter {
        gate: gate.clone(),
        first: 1 << 20,
    };
    let session =
        tokio::spawn(async move { executor.stream(StreamOptions::new().stdout(writer)).await });

    flood.held_back(stalled, &gate.consumed, bound).await;

    gate.release();
    flood.resume.notify_one();
    tokio::time::timeout(Duration::from_secs(120), session)
        .await
        .expect("the session ended after the release")
        .unwrap()
        .unwrap();
    assert_eq!(gate.consumed.load(Ordering::SeqCst), flood.frames * CHUNK);
    assert_eq!(flood.written.load(Ordering::SeqCst), flood.total());
}

// ---------------------------------------------------------------------------------------
// port-forward against a raw SPDY server.

/// A SPDY server over a plain upgrade, frame by frame.
struct RawSpdy {
    read: FramedRead<tokio::net::tcp::OwnedReadHalf, FrameDecoder>,
    write: FramedWrite<tokio::net::tcp::OwnedWriteHalf, FrameEncoder>,
}

impl RawSpdy {
    async fn accept(tcp: TcpStream) -> Self {
        let tcp = accept_spdy(tcp, portforward::PORT_FORWARD_PROTOCOL_V1_NAME).await;
        let (read, write) = tcp.into_split();
        Self {
            read: FramedRead::new(read, FrameDecoder::default()),
            write: FramedWrite::new(write, FrameEncoder::default()),
        }
    }

    async fn send(&mut self, frame: Frame) -> bool {
        self.write.send(frame).await.is_ok()
    }

    async fn data(&mut self, stream_id: u32, fin: bool, data: &[u8]) -> bool {
        self.send(Frame::Data {
            stream_id,
            fin,
            data: Bytes::copy_from_slice(data),
        })
        .await
    }

    /// The next frame; `None` at the end (or a failure).
    async fn next(&mut self) -> Option<Frame> {
        self.read.next().await.and_then(Result::ok)
    }

    /// Answers every stream the client opens; hands `on_data` each data stream's id (its
    /// error stream's is two less) once answered.
    async fn serve<F, Fut>(mut self, mut on_data: F)
    where
        F: FnMut(Self, u32) -> Fut,
        Fut: std::future::Future<Output = Option<Self>>,
    {
        while let Some(frame) = self.next().await {
            if let Frame::SynStream {
                stream_id, headers, ..
            } = frame
            {
                let reply = Frame::SynReply {
                    stream_id,
                    fin: false,
                    headers: Headers::new(),
                };
                if !self.send(reply).await {
                    return;
                }
                if headers.get(portforward::STREAM_TYPE_HEADER)
                    == Some(portforward::STREAM_TYPE_DATA)
                {
                    match on_data(self, stream_id).await {
                        Some(back) => self = back,
                        None => return,
                    }
                }
            }
        }
    }
}

fn spdy_dialer(server: &ScriptedServer) -> Dialer {
    Dialer::for_pod(&server.client(), "ns", "web").transport(Transport::Spdy)
}

/// `DATA` for streams the client never opened (an id it will open next, the server's own
/// ids, ids far off) is dropped, as moby/spdystream drops it: the forwarded connection
/// reads only its own bytes, the next one does not see the stale data, and the connection
/// goes on.
#[tokio::test]
async fn data_for_a_stream_never_opened_is_dropped() {
    let server = ScriptedServer::start(|_, tcp| async move {
        RawSpdy::accept(tcp)
            .await
            .serve(|mut spdy, data_id| async move {
                for ghost in [data_id + 2, data_id + 4, 2, 98, 0x7fff_fff1] {
                    if !spdy.data(ghost, false, b"ghost").await {
                        return None;
                    }
                }
                let ok = spdy.data(data_id, true, b"real").await
                    && spdy.data(data_id - 2, true, b"").await;
                ok.then_some(spdy)
            })
            .await;
    })
    .await;
    let connection = spdy_dialer(&server).dial().await.unwrap();
    for _ in 0..3 {
        let mut stream = tokio::time::timeout(BOUND, connection.connect(80))
            .await
            .unwrap()
            .unwrap();
        let mut back = Vec::new();
        tokio::time::timeout(BOUND, stream.read_to_end(&mut back))
            .await
            .expect("the forwarded connection ended")
            .unwrap();
        assert_eq!(back, b"real");
        assert_eq!(stream.remote_error(), None);
    }
    assert_eq!(connection.close_reason(), None, "the connection goes on");
}

/// The pod side's error stream carries bytes that are not UTF-8, in more frames than a
/// stream buffers and past `MAX_ERROR_STREAM_LEN`, before the data stream ends: the
/// message is kept lossily and cut at the bound, and the data is read to its end (the error
/// stream is drained alongside it, as client-go reads it in a goroutine of its own, so it
/// cannot hold the connection back).
#[tokio::test]
async fn an_error_stream_not_utf8_and_past_its_bound_is_kept_lossily() {
    let server = ScriptedServer::start(|_, tcp| async move {
        RawSpdy::accept(tcp)
            .await
            .serve(|mut spdy, data_id| async move {
                let junk: Vec<u8> = [0xffu8, 0xfe, b'e'].repeat(2000);
                for _ in 0..40 {
                    if !spdy.data(data_id - 2, false, &junk).await {
                        return None;
                    }
                }
                let ok = spdy.data(data_id, true, b"payload").await
                    && spdy.data(data_id - 2, true, b"").await;
                ok.then_some(spdy)
            })
            .await;
    })
    .await;
    let connection = spdy_dialer(&server).dial().await.unwrap();
    let mut stream = connection.connect(80).await.unwrap();
    let mut back = Vec::new();
    let error = tokio::time::timeout(BOUND, stream.read_to_end(&mut back))
        .await
        .expect("the forwarded connection ended")
        .unwrap_err();
    assert_eq!(back, b"payload");
    let remote = error
        .get_ref()
        .and_then(|e| e.downcast_ref::<portforward::Error>())
        .unwrap_or_else(|| panic!("{error:?}"));
    let portforward::Error::Remote { port: 80, message } = remote else {
        panic!("{remote:?}");
    };
    assert!(message.contains('\u{fffd}'), "kept lossily");
    // Each kept byte is at most one replacement character (3 bytes).
    let kept = message.chars().count();
    assert!(
        kept <= portforward::MAX_ERROR_STREAM_LEN,
        "{kept} characters kept"
    );
    assert!(message.len() <= 3 * portforward::MAX_ERROR_STREAM_LEN);
}

/// A SPDY frame cut by the end of the connection (over a SPDY upgrade; through the tunnel,
/// a normal close in the middle of a frame): the connection ends as failed, with the cut
/// frame in the reason, and the stream being opened gets that error, at once.
#[tokio::test]
async fn a_cut_spdy_frame_ends_the_connection() {
    let mut encoder = FrameEncoder::default();
    let mut reply = BytesMut::new();
    encoder
        .encode(
            Frame::SynReply {
                stream_id: 1,
                fin: false,
                headers: Headers::new(),
            },
            &mut reply,
        )
        .unwrap();
    let half = Bytes::copy_from_slice(&reply[..reply.len() / 2]);

    let upgrade_half = half.clone();
    let over_upgrade = ScriptedServer::start(move |_, tcp| {
        let half = upgrade_half.clone();
        async move {
            let mut spdy = RawSpdy::accept(tcp).await;
            // The client's first SYN_STREAM, then half an answer and the end.
            let _ = spdy.next().await;
            let mut tcp = spdy
                .write
                .into_inner()
                .reunite(spdy.read.into_inner())
                .unwrap();
            let _ = tcp.write_all(&half).await;
            let _ = tcp.shutdown().await;
        }
    })
    .await;
    let tunnel_half = half.clone();
    let through_tunnel = ScriptedServer::start(move |head, tcp| {
        let half = tunnel_half.clone();
        async move {
            let mut ws = accept_websocket(&head, tcp, Some("SPDY/3.1+portforward.k8s.io")).await;
            let _ = ws.next().await;
            let _ = ws.send(Message::Binary(half)).await;
            let _ = ws.close(None).await;
            while let Some(Ok(_)) = ws.next().await {}
        }
    })
    .await;
    for (case, dialer) in [
        ("over a SPDY upgrade", spdy_dialer(&over_upgrade)),
        (
            "through the tunnel",
            Dialer::for_pod(&through_tunnel.client(), "ns", "web")
                .transport(Transport::WebSocketTunnel),
        ),
    ] {
        let connection = dialer.dial().await.unwrap();
        let error = tokio::time::timeout(BOUND, connection.connect(80))
            .await
            .unwrap_or_else(|_| panic!("{case}: hung"))
            .unwrap_err();
        let portforward::Error::Spdy(spdy::Error::Closed(reason)) = &error else {
            panic!("{case}: {error:?}");
        };
        assert!(
            matches!(reason, spdy::CloseReason::Failed(m) if m.contains("bytes remaining")),
            "{case}: {reason:?}"
        );
        assert_eq!(connection.close_reason().as_ref(), Some(reason), "{case}");
    }
}

/// A `SYN_REPLY` whose header block inflates past the bound (a zlib bomb) ends the
/// connection as failed; the stream being opened gets that error.
#[tokio::test]
async fn a_header_bomb_in_a_reply_ends_the_connection() {
    let server = ScriptedServer::start(|_, tcp| async move {
        let mut spdy = RawSpdy::accept(tcp).await;
        while let Some(frame) = spdy.next().await {
            if let Frame::SynStream { stream_id, .. } = frame {
                let mut headers = Headers::new();
                headers.set("bomb", "b".repeat(4 * spdy::DEFAULT_MAX_HEADER_BLOCK_LEN));
                let reply = Frame::SynReply {
                    stream_id,
                    fin: false,
                    headers,
                };
                if !spdy.send(reply).await {
                    return;
                }
            }
        }
    })
    .await;
    let connection = spdy_dialer(&server).dial().await.unwrap();
    let error = tokio::time::timeout(BOUND, connection.connect(80))
        .await
        .expect("the stream's opening ended")
        .unwrap_err();
    assert!(
        matches!(
            &error,
            portforward::Error::Spdy(spdy::Error::Closed(spdy::CloseReason::Failed(_)))
        ),
        "{error:?}"
    );
}

/// The local side is done (it half-closed, or went), and the pod side never answers nor
/// closes: the forwarded connection waits for the pod side, as client-go's does, but
/// nothing waits without bound: closing the connection ends its streams at once, and
/// stopping a forward with such connections returns at once and ends them at the server.
#[tokio::test]
async fn a_pod_side_that_never_closes_is_bounded_by_close_and_stop() {
    #[derive(Debug, PartialEq, Eq)]
    enum Seen {
        /// A data stream's half-close from the client.
        Fin,
        /// The connection's end, and how.
        End(&'static str),
    }
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel::<Seen>();
    let server = ScriptedServer::start(move |_, tcp| {
        let seen = seen_tx.clone();
        async move {
            let mut spdy = RawSpdy::accept(tcp).await;
            // Answers streams, reads what comes, sends nothing on them and never finishes
            // them.
            let how = loop {
                match spdy.next().await {
                    Some(Frame::SynStream { stream_id, .. }) => {
                        let reply = Frame::SynReply {
                            stream_id,
                            fin: false,
                            headers: Headers::new(),
                        };
                        if !spdy.send(reply).await {
                            break "write failed";
                        }
                    }
                    // Error streams (even ids from the client's odd ones: 1, 5, 9, …) are
                    // finished at once; data streams when the local side is done.
                    Some(Frame::Data {
                        stream_id,
                        fin: true,
                        ..
                    }) if stream_id % 4 == 3 => {
                        let _ = seen.send(Seen::Fin);
                    }
                    Some(Frame::GoAway { .. }) => break "GOAWAY",
                    Some(_) => {}
                    None => break "EOF",
                }
            };
            let _ = seen.send(Seen::End(how));
        }
    })
    .await;
    async fn next(seen: &mut tokio::sync::mpsc::UnboundedReceiver<Seen>) -> Option<Seen> {
        tokio::time::timeout(BOUND, seen.recv())
            .await
            .expect("the server saw it")
    }

    // One forwarded connection, half-closed by this side: the read waits for the pod side;
    // closing the connection ends it.
    let connection = spdy_dialer(&server).dial().await.unwrap();
    let mut stream = connection.connect(80).await.unwrap();
    stream.write_all(b"request").await.unwrap();
    stream.shutdown().await.unwrap();
    assert_eq!(next(&mut seen_rx).await, Some(Seen::Fin));
    let mut back = Vec::new();
    let reading = stream.read_to_end(&mut back);
    tokio::pin!(reading);
    assert!(
        futures::poll!(&mut reading).is_pending(),
        "the pod side said nothing: the read waits for it"
    );
    connection.close();
    // An orderly end of the connection (this side's close) is the end of its streams' data.
    let result = tokio::time::timeout(BOUND, reading)
        .await
        .expect("the read ended");
    assert!(matches!(result, Ok(0)), "{result:?}");
    assert_eq!(
        tokio::time::timeout(BOUND, connection.closed())
            .await
            .unwrap(),
        spdy::CloseReason::Local
    );
    assert_eq!(next(&mut seen_rx).await, Some(Seen::End("GOAWAY")));

    // A forward whose local connections came and went, each pair left open by the pod side.
    let forward = PortForwarder::new(spdy_dialer(&server), &["0:80"])
        .unwrap()
        .start()
        .await
        .unwrap();
    let address = forward.local_addr(80).unwrap();
    for _ in 0..5 {
        let mut local = TcpStream::connect(address).await.unwrap();
        local.write_all(b"GET / HTTP/1.0\r\n\r\n").await.unwrap();
        local.shutdown().await.unwrap();
        drop(local);
    }
    for _ in 0..5 {
        assert_eq!(next(&mut seen_rx).await, Some(Seen::Fin));
    }
    tokio::time::timeout(BOUND, forward.stop())
        .await
        .expect("stop returned")
        .unwrap();
    assert_eq!(next(&mut seen_rx).await, Some(Seen::End("GOAWAY")));
}

/// The pod side floods a forwarded connection as fast as TCP takes it while the local
/// reader takes 1 MiB and then nothing: the server's writes stall, with what is in flight
/// bounded by the stream's buffer ([`STREAM_BUFFER_FRAMES`](spdy::STREAM_BUFFER_FRAMES)
/// frames), the frame being decoded and the kernel's socket buffers. Released, the reader
/// takes every byte to the end.
#[tokio::test]
async fn a_forwarded_flood_is_held_back_by_a_slow_reader() {
    // The stream's pieces, the decoder's buffer (a frame and the reads around it), and what
    // the HTTP client read past the 101.
    const KUBELET_FRAME: usize = 32 * 1024;
    flood_held_back(
        KUBELET_FRAME,
        (spdy::STREAM_BUFFER_FRAMES + 4) * (KUBELET_FRAME + 8) + 512 * 1024,
    )
    .await;
}

/// As [`a_forwarded_flood_is_held_back_by_a_slow_reader`], with frames of 4 MiB: a frame is
/// handed to the stream in pieces, so what the stream holds is at most two frames' bytes,
/// not `STREAM_BUFFER_FRAMES` frames (64 MiB here, 256 MiB at the protocol's largest).
#[tokio::test]
async fn a_flood_of_large_frames_is_held_back_by_two_frames() {
    const LARGE_FRAME: usize = 4 * 1024 * 1024;
    flood_held_back(LARGE_FRAME, 3 * (LARGE_FRAME + 8) + 512 * 1024).await;
}

/// A flood of `DATA` frames of `frame_len` bytes on a forwarded connection whose reader takes
/// 1 MiB and stops: held back within the kernel's buffers and `client_buffers`.
async fn flood_held_back(frame_len: usize, client_buffers: usize) {
    let bound = kernel_buffers() + client_buffers;
    let reader_blocked = Arc::new(AtomicBool::new(false));
    // DATA frames of the first data stream (id 3: the error stream is 1), written raw.
    let mut frame = BytesMut::new();
    FrameEncoder::default()
        .encode(
            Frame::Data {
                stream_id: 3,
                fin: false,
                data: Bytes::from(vec![b'x'; frame_len]),
            },
            &mut frame,
        )
        .unwrap();
    let (flood, stalled) = Flood::new(frame.to_vec(), bound, reader_blocked.clone());
    let server = {
        let flood = flood.clone();
        ScriptedServer::start(move |_, tcp| {
            let flood = flood.clone();
            async move {
                let mut spdy = RawSpdy::accept(tcp).await;
                // Answers the error stream and the data stream (the error stream's FIN comes
                // between them), then floods the data stream.
                let mut answered = 0;
                while answered < 2 {
                    match spdy.next().await {
                        Some(Frame::SynStream { stream_id, .. }) => {
                            let reply = Frame::SynReply {
                                stream_id,
                                fin: false,
                                headers: Headers::new(),
                            };
                            if !spdy.send(reply).await {
                                return;
                            }
                            answered += 1;
                        }
                        Some(_) => {}
                        None => return,
                    }
                }
                let mut tcp = spdy
                    .write
                    .into_inner()
                    .reunite(spdy.read.into_inner())
                    .unwrap();
                if flood.run(&mut tcp).await {
                    let mut end = BytesMut::new();
                    let mut encoder = FrameEncoder::default();
                    for stream_id in [3, 1] {
                        let fin = Frame::Data {
                            stream_id,
                            fin: true,
                            data: Bytes::new(),
                        };
                        encoder.encode(fin, &mut end).unwrap();
                    }
                    let _ = tcp.write_all(&end).await;
                    drain(&mut tcp).await;
                }
            }
        })
        .await
    };
    let connection = spdy_dialer(&server).dial().await.unwrap();
    let mut stream = connection.connect(80).await.unwrap();
    let consumed = AtomicUsize::new(0);
    let mut buf = vec![0u8; 64 * 1024];
    while consumed.load(Ordering::SeqCst) < 1 << 20 {
        let n = tokio::time::timeout(BOUND, stream.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0);
        consumed.fetch_add(n, Ordering::SeqCst);
    }
    reader_blocked.store(true, Ordering::SeqCst);

    flood.held_back(stalled, &consumed, bound).await;

    flood.resume.notify_one();
    let rest = tokio::time::timeout(Duration::from_secs(120), async {
        let mut rest = 0;
        loop {
            match stream.read(&mut buf).await.unwrap() {
                0 => return rest,
                n => rest += n,
            }
        }
    })
    .await
    .expect("the forwarded connection ended after the release");
    assert_eq!(consumed.into_inner() + rest, flood.frames * frame_len);
}
