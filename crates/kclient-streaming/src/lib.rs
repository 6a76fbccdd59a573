//! kclient-streaming: exec, attach and port-forward — client-go's `tools/remotecommand` and
//! `tools/portforward`, with the protocols under them, on kclient-rest's transport.
//!
//! - [`remotecommand`]: an [`Executor`](remotecommand::Executor) runs a command in a
//!   container (or attaches to one) over a WebSocket with the `v5.channel.k8s.io` channel
//!   protocol (`v4.channel.k8s.io` from servers without it): stdin (its end signalled with
//!   v5's CLOSE), stdout, stderr, a TTY with terminal resizes, and the command's end as an
//!   exit code or the server's `Status`.
//! - [`portforward`]: a [`PortForwarder`](portforward::PortForwarder) listens locally and
//!   forwards each connection to a pod's port over SPDY/3.1, tunnelled through a WebSocket
//!   (`SPDY/3.1+portforward.k8s.io`, what kube-apiserver 1.30+ offers) or, when the server
//!   refuses the tunnel, over a SPDY upgrade;
//!   [`PortForwardConnection::connect`](portforward::PortForwardConnection::connect) gives
//!   one forwarded connection as an `AsyncRead + AsyncWrite` without a listener.
//! - [`upgrade`]: the WebSocket and SPDY upgrades on
//!   [`Request::upgrade`](kclient_rest::Request::upgrade) (HTTP/1.1, the client's TLS,
//!   proxy, credentials and impersonation), and how they fail ([`upgrade::UpgradeError`],
//!   with the server's `Status`).
//! - [`spdy`]: SPDY/3.1 as moby/spdystream speaks it (frames, header compression with the
//!   SPDY dictionary, connections and streams), for port-forward's client and kclient-fake's
//!   server.
//! - [`chunks`]: a byte stream that arrives in chunks, read as an `AsyncRead`
//!   ([`ChunkReader`](chunks::ChunkReader)): the read half of SPDY streams and of the
//!   WebSocket tunnel, and of a server implementation's stdin (kclient-fake's exec).
//!
//! Every wait is bounded (the upgrade, a stream's answer, a silent server) and every
//! failure is a typed error; dropping a session's future cancels it and closes its
//! connection. kclient-typed's `streaming` feature puts these on the typed client's pods
//! (`pods.exec(name, &options)`, `pods.forward(name, local, remote)`).
//!
//! The examples use the paths a program depending on the `kclient` facade writes
//! (`kclient::streaming::…`); one depending on kclient-streaming alone writes `kclient_streaming::…`.
//!
//! ```no_run
//! # mod kclient { pub mod rest { pub use ::kclient_rest::*; } pub mod streaming { pub use ::kclient_streaming::*; } } // the facade's paths
//! use kclient::streaming::portforward::{Dialer, PortForwarder};
//! use kclient::streaming::remotecommand::{ExecOptions, Executor};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = kclient::rest::RestClient::new(kclient::rest::Config::infer()?)?;
//!
//! // `kubectl exec web -- sh -c 'echo hello; exit 3'`
//! let options = ExecOptions::command(["sh", "-c", "echo hello; exit 3"]).stdout().stderr();
//! let output = Executor::exec(&client, "default", "web", &options).output(None).await?;
//! assert_eq!((output.stdout.as_slice(), output.exit_code), (&b"hello\n"[..], 3));
//!
//! // `kubectl port-forward web :80`
//! let forward = PortForwarder::new(Dialer::for_pod(&client, "default", "web"), &[":80"])?
//!     .start()
//!     .await?;
//! println!("forwarding {} -> 80", forward.local_addr(80).unwrap());
//! forward.stop().await?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod chunks;
pub mod portforward;
pub mod remotecommand;
pub mod spdy;
pub mod upgrade;
