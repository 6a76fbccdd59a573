//! [`PortForwarder`]: local listeners whose connections are forwarded to a pod's ports
//! (client-go's `portforward.PortForwarder`), and [`PortForward`], the running forward.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::dialer::{Dialer, PortForwardConnection};
use super::Error;
use crate::spdy::CloseReason;

/// A local port and the pod's port it forwards to (client-go's `ForwardedPort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ForwardedPort {
    /// The local port (0 before listening: any free port).
    pub local: u16,
    /// The pod's port.
    pub remote: u16,
}

impl ForwardedPort {
    /// `local` → `remote`.
    pub fn new(local: u16, remote: u16) -> Self {
        Self { local, remote }
    }
}

/// kubectl's port specifications: `5000` (local and remote 5000), `8888:5000`, `0:5000` or
/// `:5000` (any free local port).
impl FromStr for ForwardedPort {
    type Err = Error;

    fn from_str(spec: &str) -> Result<Self, Error> {
        let parts: Vec<&str> = spec.split(':').collect();
        let (local, remote) = match parts.as_slice() {
            [both] => (*both, *both),
            ["", remote] => ("0", *remote),
            [local, remote] => (*local, *remote),
            _ => return Err(Error::InvalidPort(format!("invalid port format '{spec}'"))),
        };
        let local: u16 = local
            .parse()
            .map_err(|e| Error::InvalidPort(format!("error parsing local port '{local}': {e}")))?;
        let remote: u16 = remote.parse().map_err(|e| {
            Error::InvalidPort(format!("error parsing remote port '{remote}': {e}"))
        })?;
        if remote == 0 {
            return Err(Error::InvalidPort("remote port must be > 0".into()));
        }
        Ok(Self { local, remote })
    }
}

/// Where to listen, and whether it must succeed (client-go's `listenAddress`: the two
/// addresses of `localhost` need one success between them, an IP given must succeed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ListenAddress {
    ip: IpAddr,
    /// Part of `localhost`, where one address of the pair suffices.
    localhost: bool,
}

fn parse_addresses(addresses: &[&str]) -> Result<Vec<ListenAddress>, Error> {
    let mut parsed: Vec<ListenAddress> = Vec::new();
    for address in addresses {
        if *address == "localhost" {
            for ip in [
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(Ipv6Addr::LOCALHOST),
            ] {
                if !parsed.iter().any(|p| p.ip == ip) {
                    parsed.push(ListenAddress {
                        ip,
                        localhost: true,
                    });
                }
            }
        } else {
            let ip: IpAddr = address
                .parse()
                .map_err(|_| Error::InvalidAddress(format!("{address} is not a valid IP")))?;
            // As in client-go, an IP named on its own must bind, even if `localhost` named it.
            parsed.retain(|p| p.ip != ip);
            parsed.push(ListenAddress {
                ip,
                localhost: false,
            });
        }
    }
    // client-go sorts them (as strings) for a stable order.
    parsed.sort_by_key(|a| a.ip.to_string());
    Ok(parsed)
}

/// Forwards local ports to a pod's ports (client-go's `PortForwarder`).
///
/// [`start`](Self::start) dials the pod, listens on every port (on `127.0.0.1` and `::1` for
/// `localhost`, the default), and returns a [`PortForward`] with the ports it bound; each
/// accepted connection is forwarded on its own pair of streams. As in client-go, when the
/// pod side reports an error for one connection (nothing listens on that port in the pod),
/// the whole forward ends, with [`Error::LostConnectionToPod`]: a caller notices a forward
/// that cannot work instead of seeing each connection fail.
#[derive(Debug)]
pub struct PortForwarder {
    dialer: Dialer,
    addresses: Vec<ListenAddress>,
    ports: Vec<ForwardedPort>,
}

impl PortForwarder {
    /// Forwards `ports` (kubectl's specifications, see [`ForwardedPort`]'s `FromStr`) from
    /// `localhost` (client-go's `New`).
    pub fn new(dialer: Dialer, ports: &[&str]) -> Result<Self, Error> {
        Self::on_addresses(dialer, &["localhost"], ports)
    }

    /// Forwards `ports` from these addresses (`localhost` or IPs; client-go's
    /// `NewOnAddresses`).
    pub fn on_addresses(dialer: Dialer, addresses: &[&str], ports: &[&str]) -> Result<Self, Error> {
        if addresses.is_empty() {
            return Err(Error::InvalidAddress(
                "you must specify at least 1 address".into(),
            ));
        }
        if ports.is_empty() {
            return Err(Error::InvalidPort(
                "you must specify at least 1 port".into(),
            ));
        }
        let ports = ports
            .iter()
            .map(|p| p.parse())
            .collect::<Result<Vec<ForwardedPort>, Error>>()?;
        Ok(Self {
            dialer,
            addresses: parse_addresses(addresses)?,
            ports,
        })
    }

    /// Forwards these ports from `localhost`.
    pub fn with_ports(dialer: Dialer, ports: Vec<ForwardedPort>) -> Result<Self, Error> {
        if ports.iter().any(|p| p.remote == 0) {
            return Err(Error::InvalidPort("remote port must be > 0".into()));
        }
        if ports.is_empty() {
            return Err(Error::InvalidPort(
                "you must specify at least 1 port".into(),
            ));
        }
        Ok(Self {
            dialer,
            addresses: parse_addresses(&["localhost"])?,
            ports,
        })
    }

    /// Dials the pod and listens: the forward runs until [`PortForward::stop`], its drop, or
    /// the loss of the connection to the pod (client-go's `ForwardPorts` up to `Ready`).
    pub async fn start(self) -> Result<PortForward, Error> {
        let connection = self.dialer.dial().await?;
        let mut ports = self.ports;
        let mut listeners = Vec::new();
        let mut failures = Vec::new();
        for port in &mut ports {
            match listen_on_port(&self.addresses, port).await {
                Ok(mut bound) => listeners.append(&mut bound),
                Err(e) => {
                    tracing::warn!(local = port.local, error = %e, "unable to listen on port");
                    failures.push(e);
                }
            }
        }
        if listeners.is_empty() {
            connection.close();
            return Err(Error::Listen(format!(
                "unable to listen on any of the requested ports: {ports:?}: {}",
                failures.join("; ")
            )));
        }
        let stop = CancellationToken::new();
        let local_addresses = listeners
            .iter()
            .map(|(l, p)| (l.local_addr().ok(), *p))
            .collect();
        let task = tokio::spawn(forward(connection, listeners, stop.clone()));
        Ok(PortForward {
            ports: ports.into_iter().filter(|p| p.local != 0).collect(),
            local_addresses,
            stop,
            task: Some(task),
        })
    }
}

/// Listens on every address for `port`, filling in the local port the first listener got
/// (so `0` binds one free port on every address). Errors as client-go words them.
async fn listen_on_port(
    addresses: &[ListenAddress],
    port: &mut ForwardedPort,
) -> Result<Vec<(TcpListener, ForwardedPort)>, String> {
    let mut bound = Vec::new();
    let mut errors = Vec::new();
    let (mut localhost_ok, mut localhost_failed, mut other_failed) = (0, 0, 0);
    for address in addresses {
        match TcpListener::bind(SocketAddr::new(address.ip, port.local)).await {
            Ok(listener) => {
                if let Ok(addr) = listener.local_addr() {
                    port.local = addr.port();
                }
                tracing::info!(from = %SocketAddr::new(address.ip, port.local), to = port.remote, "Forwarding");
                bound.push((listener, *port));
                if address.localhost {
                    localhost_ok += 1;
                }
            }
            Err(e) => {
                errors.push(format!("unable to create listener: Error {e}"));
                if address.localhost {
                    localhost_failed += 1;
                } else {
                    other_failed += 1;
                }
            }
        }
    }
    if (localhost_ok == 0 && localhost_failed > 0) || other_failed > 0 {
        return Err(format!(
            "Listeners failed to create with the following errors: {errors:?}"
        ));
    }
    Ok(bound)
}

/// Accepts on every listener and forwards each connection, until stopped or the connection
/// to the pod is lost.
async fn forward(
    connection: PortForwardConnection,
    listeners: Vec<(TcpListener, ForwardedPort)>,
    stop: CancellationToken,
) -> Result<(), Error> {
    let mut accepting = JoinSet::new();
    for (listener, port) in listeners {
        let (connection, stop) = (connection.clone(), stop.clone());
        accepting.spawn(accept_loop(listener, port, connection, stop));
    }
    let result = tokio::select! {
        _ = stop.cancelled() => Ok(()),
        reason = connection.closed() => Err(Error::LostConnectionToPod(reason)),
    };
    stop.cancel();
    connection.close();
    accepting.shutdown().await;
    result
}

async fn accept_loop(
    listener: TcpListener,
    port: ForwardedPort,
    connection: PortForwardConnection,
    stop: CancellationToken,
) {
    let mut handling = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((conn, _)) => {
                    tracing::info!(local = port.local, "Handling connection");
                    handling.spawn(handle_connection(conn, port, connection.clone()));
                }
                Err(e) => {
                    tracing::warn!(local = port.local, error = %e, "error accepting connection");
                    break;
                }
            },
            Some(_) = handling.join_next(), if !handling.is_empty() => {}
            _ = stop.cancelled() => break,
        }
    }
    handling.shutdown().await;
}

/// Copies between a local connection and a new forwarded connection (client-go's
/// `handleConnection`).
async fn handle_connection(
    mut local: TcpStream,
    port: ForwardedPort,
    connection: PortForwardConnection,
) {
    let mut remote = match connection.connect(port.remote).await {
        Ok(remote) => remote,
        Err(e) => {
            tracing::warn!(local = port.local, remote = port.remote, error = %e, "error creating forwarding streams");
            return;
        }
    };
    let copied = tokio::io::copy_bidirectional(&mut local, &mut remote).await;
    let _ = local.shutdown().await;
    if let Err(e) = &copied {
        tracing::debug!(local = port.local, remote = port.remote, error = %e, "forwarded connection ended");
    }
    if let Some(message) = remote.remote_error() {
        // As client-go: the pod side could not forward, so the forward ends.
        tracing::error!(local = port.local, remote = port.remote, %message, "an error occurred forwarding");
        connection.close();
    }
}

/// A running port-forward: the ports it listens on (client-go's `GetPorts`, with each
/// `local` port bound), until [`stop`](Self::stop), its drop, or the loss of the connection
/// to the pod ([`done`](Self::done) then says so).
pub struct PortForward {
    ports: Vec<ForwardedPort>,
    local_addresses: Vec<(Option<SocketAddr>, ForwardedPort)>,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<Result<(), Error>>>,
}

impl fmt::Debug for PortForward {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PortForward")
            .field("ports", &self.ports)
            .finish_non_exhaustive()
    }
}

impl PortForward {
    /// The forwarded ports, each with the local port it got.
    pub fn ports(&self) -> &[ForwardedPort] {
        &self.ports
    }

    /// The local address forwarding to the pod's `remote` port (the first one bound: an
    /// IPv4 address for `localhost` when it has one).
    pub fn local_addr(&self, remote: u16) -> Option<SocketAddr> {
        self.local_addresses
            .iter()
            .filter(|(_, p)| p.remote == remote)
            .filter_map(|(a, _)| *a)
            .min_by_key(|a| a.is_ipv6())
    }

    /// Every local address listened on, with its port pair.
    pub fn local_addresses(&self) -> impl Iterator<Item = (SocketAddr, ForwardedPort)> + '_ {
        self.local_addresses
            .iter()
            .filter_map(|(a, p)| a.map(|a| (a, *p)))
    }

    /// Stops listening and closes the connection to the pod.
    pub async fn stop(mut self) -> Result<(), Error> {
        self.stop.cancel();
        self.join().await
    }

    /// Waits until the forward ends by itself: the connection to the pod was lost
    /// ([`Error::LostConnectionToPod`]).
    pub async fn done(&mut self) -> Result<(), Error> {
        self.join().await
    }

    async fn join(&mut self) -> Result<(), Error> {
        let Some(task) = self.task.take() else {
            return Ok(());
        };
        match task.await {
            Ok(result) => result,
            Err(e) => Err(Error::LostConnectionToPod(CloseReason::Failed(
                e.to_string(),
            ))),
        }
    }
}

impl Drop for PortForward {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_specifications_are_kubectl_s() {
        assert_eq!(
            "5000".parse::<ForwardedPort>().unwrap(),
            ForwardedPort::new(5000, 5000)
        );
        assert_eq!(
            "8888:5000".parse::<ForwardedPort>().unwrap(),
            ForwardedPort::new(8888, 5000)
        );
        assert_eq!(
            "0:5000".parse::<ForwardedPort>().unwrap(),
            ForwardedPort::new(0, 5000)
        );
        assert_eq!(
            ":5000".parse::<ForwardedPort>().unwrap(),
            ForwardedPort::new(0, 5000)
        );
        for bad in ["", "a", "1:2:3", "70000", "80:0", "0", "x:80", "80:y"] {
            assert!(bad.parse::<ForwardedPort>().is_err(), "{bad}");
        }
        let e = "1:2:3".parse::<ForwardedPort>().unwrap_err();
        assert_eq!(e.to_string(), "invalid port format '1:2:3'");
        let e = "80:0".parse::<ForwardedPort>().unwrap_err();
        assert_eq!(e.to_string(), "remote port must be > 0");
    }

    #[test]
    fn localhost_is_both_loopback_addresses_and_ips_are_checked() {
        let a = parse_addresses(&["localhost"]).unwrap();
        assert_eq!(a.len(), 2, "{a:?}");
        assert!(a.iter().all(|a| a.localhost));
        let a = parse_addresses(&["localhost", "127.0.0.1"]).unwrap();
        assert_eq!(a.len(), 2, "127.0.0.1 once: {a:?}");
        assert!(!a[0].localhost, "named on its own, it must bind");
        let a = parse_addresses(&["10.0.0.1"]).unwrap();
        assert!(!a[0].localhost);
        assert!(parse_addresses(&["not-an-ip"]).is_err());
    }
}
