//! A wrong setup: each case a typed error that says what to do, within a bounded wait, and
//! nothing left running. The binaries are shell scripts standing in for the real ones.

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use kclient_envtest::{Environment, Error};

use crate::support::{pid_gone, script};

/// How long any of these may take, at most.
const BOUND: Duration = Duration::from_secs(30);

async fn start(builder: kclient_envtest::EnvironmentBuilder) -> Result<Environment, Error> {
    tokio::time::timeout(BOUND, builder.start())
        .await
        .expect("start() returned within its bound")
}

#[tokio::test]
async fn missing_binaries_say_where_they_were_looked_for_and_what_to_do() {
    let empty = tempfile::tempdir().unwrap();
    let err = start(Environment::builder().binary_assets_directory(empty.path()))
        .await
        .unwrap_err();
    match &err {
        Error::BinaryMissing {
            binary, directory, ..
        } => {
            assert_eq!(binary, "etcd");
            assert_eq!(directory, empty.path());
        }
        other => panic!("{other}"),
    }
    let text = err.to_string();
    assert!(text.contains("setup-envtest use -p path"), "{text}");
}

#[tokio::test]
async fn a_wrong_version_is_refused_before_anything_starts() {
    let bin = tempfile::tempdir().unwrap();
    script(bin.path(), "etcd", "exec sleep 600");
    script(
        bin.path(),
        "kube-apiserver",
        r#"[ "$1" = --version ] && echo "Kubernetes v1.2.3" && exit 0
touch "$(dirname "$0")/started"; exec sleep 600"#,
    );
    let err = start(
        Environment::builder()
            .binary_assets_directory(bin.path())
            .kubernetes_version("1.37.1"),
    )
    .await
    .unwrap_err();
    match &err {
        Error::VersionMismatch {
            expected, found, ..
        } => assert_eq!((expected.as_str(), found.as_str()), ("1.37.1", "v1.2.3")),
        other => panic!("{other}"),
    }
    assert!(
        err.to_string().contains("setup-envtest use 1.37.1 -p path"),
        "{err}"
    );
    assert!(!bin.path().join("started").exists());
}

#[tokio::test]
async fn a_port_in_use_is_refused() {
    let bin = tempfile::tempdir().unwrap();
    script(bin.path(), "etcd", "exec sleep 600");
    script(bin.path(), "kube-apiserver", "exec sleep 600");
    let taken = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
    let port = taken.local_addr().unwrap().port();
    let err = start(
        Environment::builder()
            .binary_assets_directory(bin.path())
            .apiserver_port(port),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, Error::PortInUse { port: p } if p == port),
        "{err}"
    );
    assert!(err.to_string().contains("give another `apiserver_port`"));
}

#[tokio::test]
async fn a_port_taken_meanwhile_is_chosen_again_a_bounded_number_of_times() {
    // An etcd whose port is always taken by the time it binds it.
    let bin = tempfile::tempdir().unwrap();
    let calls = bin.path().join("calls");
    script(
        bin.path(),
        "etcd",
        &format!(
            "echo \"$@\" >> {}; echo 'listen tcp: bind: address already in use'; exit 1",
            calls.display()
        ),
    );
    script(bin.path(), "kube-apiserver", "exec sleep 600");
    let err = start(Environment::builder().binary_assets_directory(bin.path()))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Exited { component, log_tail, .. }
            if component == "etcd" && log_tail.contains("address already in use")),
        "{err}"
    );
    let calls = fs::read_to_string(&calls).unwrap();
    let mut client_urls: Vec<&str> = calls
        .split_whitespace()
        .filter(|arg| arg.starts_with("--listen-client-urls="))
        .collect();
    assert_eq!(client_urls.len(), 3, "three attempts: {calls}");
    client_urls.sort_unstable();
    client_urls.dedup();
    assert_eq!(client_urls.len(), 3, "on other ports each time: {calls}");
}

#[tokio::test]
async fn a_server_that_never_becomes_ready_fails_within_the_timeout_and_is_stopped() {
    let bin = tempfile::tempdir().unwrap();
    let pid_file = bin.path().join("etcd.pid");
    script(
        bin.path(),
        "etcd",
        &format!(
            "echo $$ > {}; echo 'listening nowhere'; exec sleep 600",
            pid_file.display()
        ),
    );
    script(bin.path(), "kube-apiserver", "exec sleep 600");
    let started = Instant::now();
    let err = start(
        Environment::builder()
            .binary_assets_directory(bin.path())
            .start_timeout(Duration::from_secs(2)),
    )
    .await
    .unwrap_err();
    let took = started.elapsed();
    match &err {
        Error::NotReady {
            component,
            timeout,
            log_tail,
            ..
        } => {
            assert_eq!(component, "etcd");
            assert_eq!(*timeout, Duration::from_secs(2));
            assert!(log_tail.contains("listening nowhere"), "{log_tail}");
        }
        other => panic!("{other}"),
    }
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(err
        .to_string()
        .contains("raise `EnvironmentBuilder::start_timeout`"));
    let pid: u32 = fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(pid_gone(pid), "the fake etcd (pid {pid}) still runs");
}

#[tokio::test]
async fn a_server_that_exits_is_reported_with_the_end_of_its_log() {
    let bin = tempfile::tempdir().unwrap();
    script(
        bin.path(),
        "etcd",
        "echo 'etcd: unknown flag: --bogus' >&2; exit 2",
    );
    script(bin.path(), "kube-apiserver", "exec sleep 600");
    let err = start(Environment::builder().binary_assets_directory(bin.path()))
        .await
        .unwrap_err();
    match &err {
        Error::Exited {
            component,
            log_tail,
            ..
        } => {
            assert_eq!(component, "etcd");
            assert!(log_tail.contains("unknown flag: --bogus"), "{log_tail}");
        }
        other => panic!("{other}"),
    }
}
