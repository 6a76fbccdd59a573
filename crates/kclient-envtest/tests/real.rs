//! etcd and kube-apiserver for real (`KCLIENT_ENVTEST_BINARIES`): what an environment serves
//! and installs, detaching, and that no test process — panicking, aborted, or ending with the
//! shared environment alive — leaves a server, a port or a directory behind.

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kclient_envtest::{Environment, Error, Origin, ProcessRecord, TOKEN_CONTEXT};
use kclient_rest::{Config, KubeconfigOptions, RestClient};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::support::{assert_nothing_left, pid_gone, port_of, real_binaries, script, BINARIES_ENV};

/// What a child test process reports of its environment.
#[derive(Debug, Serialize, Deserialize)]
struct Started {
    processes: Vec<ProcessRecord>,
    ports: Vec<u16>,
    directory: PathBuf,
}

impl Started {
    fn of(env: &Environment) -> Self {
        Started {
            processes: env.processes(),
            ports: vec![port_of(env.server()), port_of(env.etcd_url())],
            directory: env.directory().to_path_buf(),
        }
    }
}

const ROLE_ENV: &str = "KCLIENT_ENVTEST_CHILD_ROLE";
const STARTED_ENV: &str = "KCLIENT_ENVTEST_CHILD_STARTED";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_environment_installs_serves_detaches_and_stops_by_its_record() {
    let Some(bin) =
        real_binaries("an_environment_installs_serves_detaches_and_stops_by_its_record")
    else {
        return;
    };
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer", "maximum": 5}}}}
            }}}]
        }
    }))
    .unwrap();
    let webhook: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "widget-check"},
        "webhooks": [{
            "name": "check.example.com",
            "clientConfig": {"url": "https://127.0.0.1:1/validate"},
            "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["widgets"]}],
            "failurePolicy": "Ignore",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"]
        }]
    }))
    .unwrap();
    let env = Environment::builder()
        .binary_assets_directory(&bin)
        .crd(crd)
        .validating_webhook_configuration(webhook)
        .start()
        .await
        .unwrap();
    assert_eq!(env.binaries().origin(), Origin::Explicit);

    // The CRD is served, with its schema.
    let client = RestClient::new(env.config()).unwrap();
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let widget = |size: i32| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": format!("w{size}")}, "spec": {"size": size}});
    client
        .post()
        .abs_path(widgets)
        .json_body(&widget(3))
        .bytes()
        .await
        .unwrap();
    let refused = client
        .post()
        .abs_path(widgets)
        .json_body(&widget(6))
        .bytes()
        .await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("should be less than or equal to 5")),
        "{refused:?}"
    );
    // The webhook configuration is there.
    let clientset = env.clientset().unwrap();
    let installed = clientset
        .cluster_scoped::<ValidatingWebhookConfiguration>()
        .get("widget-check")
        .await
        .unwrap();
    assert_eq!(installed.webhooks.unwrap()[0].name, "check.example.com");
    // The kubeconfig's token context is an admin too.
    let token = Config::from_kubeconfig(&KubeconfigOptions {
        path: Some(env.kubeconfig().to_path_buf()),
        context: Some(TOKEN_CONTEXT.to_owned()),
        ..KubeconfigOptions::default()
    })
    .unwrap();
    RestClient::new(token)
        .unwrap()
        .get()
        .abs_path("/api/v1/namespaces/kube-system/secrets")
        .bytes()
        .await
        .unwrap();

    // Detached, the servers outlive the handle; the record stops them.
    let started = Started::of(&env);
    let detached = env.detach();
    assert!(detached.is_running());
    detached.probe_ready().await.unwrap();
    detached.stop(Duration::from_secs(20)).unwrap();
    assert!(!detached.is_running());
    assert_nothing_left(
        &started.processes,
        &started.ports,
        None,
        Duration::from_secs(30),
    );
    assert!(
        started.directory.exists(),
        "a detached environment keeps its directory"
    );
    fs::remove_dir_all(&started.directory).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kube_apiserver_that_never_listens_fails_within_the_timeout_and_nothing_is_left() {
    let Some(real) = real_binaries("a_kube_apiserver_that_never_listens_fails_within_the_timeout")
    else {
        return;
    };
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(real.join("etcd"), bin.path().join("etcd")).unwrap();
    let pid_file = bin.path().join("kube-apiserver.pid");
    script(
        bin.path(),
        "kube-apiserver",
        &format!("echo $$ > {}; exec sleep 600", pid_file.display()),
    );
    let started = Instant::now();
    let err = Environment::builder()
        .binary_assets_directory(bin.path())
        // etcd is ready in under a second; the fake kube-apiserver never.
        .start_timeout(Duration::from_secs(4))
        .start()
        .await
        .unwrap_err();
    let took = started.elapsed();
    let Error::NotReady { component, log, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(component, "kube-apiserver");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    let pid: u32 = fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        pid_gone(pid),
        "the fake kube-apiserver (pid {pid}) still runs"
    );
    // Its temporary directory is gone, and no etcd runs on its data.
    let directory = log.parent().and_then(Path::parent).unwrap();
    assert!(!directory.exists(), "{} is left", directory.display());
    assert!(
        processes_mentioning(directory).is_empty(),
        "left running: {:?}",
        processes_mentioning(directory)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_etcd_whose_port_was_taken_meanwhile_starts_again_on_another() {
    let Some(real) = real_binaries("an_etcd_whose_port_was_taken_meanwhile_starts_again") else {
        return;
    };
    // The first etcd finds its port taken; the next is the real one.
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        real.join("kube-apiserver"),
        bin.path().join("kube-apiserver"),
    )
    .unwrap();
    let first = bin.path().join("first-run");
    script(
        bin.path(),
        "etcd",
        &format!(
            "if [ ! -e {first} ]; then touch {first}; \
             echo 'listen tcp: bind: address already in use'; exit 1; fi; exec {etcd} \"$@\"",
            first = first.display(),
            etcd = real.join("etcd").display(),
        ),
    );
    let env = Environment::builder()
        .binary_assets_directory(bin.path())
        .start()
        .await
        .unwrap();
    assert!(first.exists());
    env.clientset()
        .unwrap()
        .core_v1()
        .namespaces()
        .get("default")
        .await
        .unwrap();
    let started = Started::of(&env);
    assert_eq!(started.processes.len(), 2, "{:?}", started.processes);
    env.stop().unwrap();
    assert_nothing_left(
        &started.processes,
        &started.ports,
        Some(&started.directory),
        Duration::from_secs(30),
    );
}

#[test]
fn a_panicking_test_leaves_no_server_no_port_and_no_directory() {
    // The environment's drop, as the panic unwinds.
    child_leaves_nothing_behind("panic", |status| !status.success());
}

#[test]
fn an_aborted_test_process_leaves_no_server_no_port_and_no_directory() {
    // The watchdog's doing: no destructor runs.
    child_leaves_nothing_behind("abort", |status| status.signal() == Some(6));
}

#[test]
fn the_shared_environment_stops_when_the_test_binary_exits() {
    // The watchdog's doing: a static is never dropped.
    child_leaves_nothing_behind("shared", |status| status.success());
}

/// Runs [`child_role`] in `role`, checks how it ended, then that its servers, ports and
/// directory are gone within 40 s (the stop timeout is 20 s).
fn child_leaves_nothing_behind(role: &str, ended_as_expected: impl Fn(ExitStatus) -> bool) {
    let Some(bin) = real_binaries(&format!("the child test's role {role}")) else {
        return;
    };
    let (status, started) = run_child(role, &bin);
    assert!(
        ended_as_expected(status),
        "the child ({role}) ended: {status}"
    );
    assert_nothing_left(
        &started.processes,
        &started.ports,
        Some(&started.directory),
        Duration::from_secs(40),
    );
}

/// The tests above run this one in a child process (the same test binary), in a role: it
/// starts an environment, reports it, then panics, aborts, or passes with the shared
/// environment still alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a child process of the tests above: they run it"]
async fn child_role() {
    let role = std::env::var(ROLE_ENV).expect("run by the tests above");
    let report = std::env::var_os(STARTED_ENV).expect("run by the tests above");
    let bin = PathBuf::from(std::env::var_os(BINARIES_ENV).expect("run by the tests above"));
    let write = |env: &Environment| {
        fs::write(&report, serde_json::to_vec(&Started::of(env)).unwrap()).unwrap();
    };
    if role == "shared" {
        let configure = || Environment::builder().binary_assets_directory(&bin);
        let env = Environment::shared(configure).await.unwrap();
        // A second caller gets the same environment.
        let again = Environment::shared(|| unreachable!()).await.unwrap();
        assert_eq!(env.server(), again.server());
        env.clientset()
            .unwrap()
            .core_v1()
            .namespaces()
            .get("default")
            .await
            .unwrap();
        write(env);
        return;
    }
    let env = Environment::builder()
        .binary_assets_directory(&bin)
        .start()
        .await
        .unwrap();
    write(&env);
    match role.as_str() {
        "panic" => panic!("a test failing with its environment alive"),
        "abort" => std::process::abort(),
        other => panic!("unknown role {other}"),
    }
}

/// Runs [`child_role`] in a child process, at most 3 minutes; its status and environment.
/// Its output (a failing test's, on purpose) goes to a file, shown if it reported nothing.
fn run_child(role: &str, bin: &Path) -> (ExitStatus, Started) {
    let scratch = tempfile::tempdir().unwrap();
    let report = scratch.path().join("started.json");
    let output = scratch.path().join("output.txt");
    let out = fs::File::create(&output).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["real::child_role", "--exact", "--ignored", "--nocapture"])
        .env(ROLE_ENV, role)
        .env(STARTED_ENV, &report)
        .env(BINARIES_ENV, bin)
        .env("RUST_BACKTRACE", "0")
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(180) {
            child.kill().unwrap();
            panic!("the child test ({role}) did not end within 3 minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let report = fs::read(&report).unwrap_or_else(|e| {
        let output = fs::read_to_string(&output).unwrap_or_default();
        panic!("the child ({role}, {status}) reported nothing ({e}); its output:\n{output}")
    });
    (status, serde_json::from_slice(&report).unwrap())
}

/// The processes whose command line mentions `path`.
fn processes_mentioning(path: &Path) -> Vec<String> {
    let needle = path.to_string_lossy().into_owned();
    fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            (cmdline.contains(&needle) && !pid_gone(pid)).then(|| format!("{pid}: {cmdline}"))
        })
        .collect()
}
