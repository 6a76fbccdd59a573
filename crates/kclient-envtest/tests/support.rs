//! What the tests share: fake binaries, the real ones, and checks that nothing is left.

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kclient_envtest::ProcessRecord;

/// Names the directory of real binaries (etcd, kube-apiserver, kubectl).
pub const BINARIES_ENV: &str = "KCLIENT_ENVTEST_BINARIES";

/// The real binaries' directory, or `None` (and a line saying why the test does nothing).
pub fn real_binaries(test: &str) -> Option<PathBuf> {
    match std::env::var_os(BINARIES_ENV).filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => {
            eprintln!(
                "SKIPPED {test}: it runs etcd and kube-apiserver, and {BINARIES_ENV} is unset \
                 (`cargo xtask e2e test` sets it; or set it to ~/.cache/kclient/e2e/<version>/bin)"
            );
            None
        }
    }
}

/// Writes an executable shell script `name` into `dir`.
pub fn script(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// Whether nothing listens on `port` of 127.0.0.1.
pub fn port_free(port: u16) -> bool {
    TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).is_ok()
}

/// Whether the process `pid` is gone (or a zombie).
pub fn pid_gone(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
        Err(_) => true,
    }
}

/// The port of `http(s)://127.0.0.1:PORT`.
pub fn port_of(url: &str) -> u16 {
    url.rsplit(':').next().unwrap().parse().unwrap()
}

/// Waits, at most `limit`, until the processes are gone, the ports free and the directory
/// removed (if one is given); panics naming what is left.
pub fn assert_nothing_left(
    processes: &[ProcessRecord],
    ports: &[u16],
    directory: Option<&Path>,
    limit: Duration,
) {
    let started = Instant::now();
    loop {
        let left: Vec<String> = processes
            .iter()
            .filter(|p| !pid_gone(p.pid))
            .map(|p| format!("{} (pid {})", p.name, p.pid))
            .chain(
                ports
                    .iter()
                    .filter(|&&port| !port_free(port))
                    .map(|port| format!("port {port}")),
            )
            .chain(
                directory
                    .filter(|d| d.exists())
                    .map(|d| d.display().to_string()),
            )
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < limit,
            "left behind after {limit:?}: {}",
            left.join(", ")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
