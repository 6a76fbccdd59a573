//! The servers' ports on 127.0.0.1: chosen below the kernel's ephemeral range, held open
//! until the server that binds them is started.
//!
//! A port the kernel hands out for `bind(0)` is one it may hand out a moment later as the
//! local port of an outgoing connection — another test's client, the e2e cluster's
//! kube-apiserver talking to its etcd, or the environment's own readiness probe, which can
//! even connect to itself (TCP's simultaneous open) while the server it waits for is still
//! starting. The server then exits with "address already in use". Ports below the ephemeral
//! range (`net.ipv4.ip_local_port_range`) are never given to outgoing connections: such a
//! port is taken only by someone binding it on purpose, which a start survives by choosing
//! again (see [`exited_on_taken_port`]). Where the range leaves no room below it, `bind(0)` is used.

use std::hash::BuildHasher;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::ops::Range;

use crate::Error;

/// The lowest port chosen: above the well-known and most registered services' ports.
const FLOOR: u16 = 15000;
/// How many ports of the band are tried before `bind(0)`.
const TRIES: usize = 64;

/// An environment's ports, held until each server is started.
#[derive(Debug)]
pub(crate) struct Ports {
    /// kube-apiserver's secure port.
    pub(crate) apiserver: HeldPort,
    /// etcd's client port.
    pub(crate) etcd_client: HeldPort,
    /// etcd's peer port.
    pub(crate) etcd_peer: HeldPort,
}

impl Ports {
    /// Free ports, or `apiserver` for kube-apiserver if given.
    pub(crate) fn choose(apiserver: Option<u16>) -> Result<Self, Error> {
        Ok(Ports {
            apiserver: match apiserver {
                Some(port) => HeldPort::exactly(port)?,
                None => HeldPort::free()?,
            },
            etcd_client: HeldPort::free()?,
            etcd_peer: HeldPort::free()?,
        })
    }
}

/// A port held by a listener of ours until [`release`](Self::release).
#[derive(Debug)]
pub(crate) struct HeldPort {
    port: u16,
    listener: Option<TcpListener>,
}

impl HeldPort {
    /// `port` exactly, if nothing listens on it.
    pub(crate) fn exactly(port: u16) -> Result<Self, Error> {
        match bind(port) {
            Ok(listener) => Ok(HeldPort {
                port,
                listener: Some(listener),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(Error::PortInUse { port }),
            Err(e) => Err(Error::io(format!("binding 127.0.0.1:{port}"))(e)),
        }
    }

    /// A free port, below the ephemeral range where there is room. Ports held at once are
    /// distinct.
    pub(crate) fn free() -> Result<Self, Error> {
        if let Some(band) = band_below_ephemeral() {
            let random = std::collections::hash_map::RandomState::new();
            let width = u64::from(band.end - band.start);
            for attempt in 0..TRIES {
                let offset = u16::try_from(random.hash_one(attempt) % width).unwrap_or(0);
                let port = band.start + offset;
                if let Ok(listener) = bind(port) {
                    return Ok(HeldPort {
                        port,
                        listener: Some(listener),
                    });
                }
            }
        }
        let listener = bind(0).map_err(Error::io("finding a free port on 127.0.0.1"))?;
        let port = listener
            .local_addr()
            .map_err(Error::io("finding a free port on 127.0.0.1"))?
            .port();
        Ok(HeldPort {
            port,
            listener: Some(listener),
        })
    }

    /// The port.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Closes our listener, for the server about to bind the port.
    pub(crate) fn release(&mut self) -> u16 {
        self.listener = None;
        self.port
    }
}

/// The server that exited because its port was taken, if that is what `error` says.
pub(crate) fn exited_on_taken_port(error: &Error) -> Option<&str> {
    match error {
        Error::Exited {
            component,
            log_tail,
            ..
        } if log_tail.contains("address already in use") => Some(component),
        _ => None,
    }
}

fn bind(port: u16) -> std::io::Result<TcpListener> {
    TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
}

/// `[FLOOR, start of the ephemeral range)`, if that holds at least 1,000 ports.
fn band_below_ephemeral() -> Option<Range<u16>> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    band_below(&range)
}

fn band_below(ip_local_port_range: &str) -> Option<Range<u16>> {
    let low: u16 = ip_local_port_range
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    (low >= FLOOR + 1000).then_some(FLOOR..low)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_band_ends_where_the_ephemeral_range_starts() {
        assert_eq!(band_below("32768\t60999\n"), Some(FLOOR..32768));
        assert_eq!(band_below("15500 60999"), None, "too narrow");
        assert_eq!(band_below("1024 65535"), None);
        assert_eq!(band_below(""), None);
        assert_eq!(band_below("x 1"), None);
    }

    #[test]
    fn ports_held_at_once_are_distinct_and_bound_until_released() {
        let mut held: Vec<HeldPort> = (0..20).map(|_| HeldPort::free().unwrap()).collect();
        let mut ports: Vec<u16> = held.iter().map(HeldPort::port).collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 20);
        if let Some(band) = band_below_ephemeral() {
            assert!(ports.iter().all(|p| band.contains(p)), "{ports:?}");
        }
        let port = held[0].port();
        assert!(matches!(
            HeldPort::exactly(port),
            Err(Error::PortInUse { port: p }) if p == port
        ));
        assert_eq!(held[0].release(), port);
        // (Binding it again here could fail for a moment: another test's child process, forked
        // but not yet executing its program, may still hold a copy of the listener.)
        assert!(held[0].listener.is_none());
    }

    #[test]
    fn only_an_exit_for_a_taken_port_is_retried() {
        let exited = |tail: &str| Error::Exited {
            component: "etcd".into(),
            log: "etcd.log".into(),
            log_tail: tail.into(),
        };
        let taken = exited("listen tcp 127.0.0.1:20001: bind: address already in use");
        assert_eq!(exited_on_taken_port(&taken), Some("etcd"));
        assert_eq!(exited_on_taken_port(&exited("panic: something else")), None);
        assert_eq!(exited_on_taken_port(&Error::PortInUse { port: 1 }), None);
    }
}
