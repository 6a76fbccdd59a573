//! kubectl against the fake server, started the way `kclient-fake-apiserver` starts it (when
//! kubectl is installed; otherwise only the kubeconfig and preloading are checked).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use kclient_fake::cli::{self, Options};

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kclient-fake-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn kubectl(kubeconfig: &PathBuf, args: &[&str]) -> (bool, String) {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_against_the_fake_server() {
    let dir = temp_dir("kubectl");
    std::fs::write(
        dir.join("app.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: demo}\nspec:\n  containers: [{name: c, image: nginx}]\n",
    )
    .unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let opts = Options::parse(
        [
            "--load".to_string(),
            dir.join("app.yaml").display().to_string(),
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
        ]
        .into_iter(),
    )
    .unwrap();
    let server = cli::start(&opts).await.unwrap();
    let written = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(written.contains(&server.url()));
    let pods = server.list_values(&kclient_core::GroupResource::new("", "pods"), Some("demo"));
    assert_eq!(pods.len(), 1, "the manifest was preloaded");
    if !kubectl_available() {
        eprintln!("kubectl is not installed: only the kubeconfig and preloading were checked");
        return;
    }

    let kc = kubeconfig.clone();
    tokio::task::spawn_blocking(move || {
        let (ok, out) = kubectl(&kc, &["get", "pods", "-A"]);
        assert!(ok, "{out}");
        assert!(out.contains("web"), "{out}");

        // `get -w` prints the list, then changes as they happen.
        let mut watch = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kc)
            .args(["-n", "demo", "get", "pods", "-w", "--request-timeout=20s"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
        let header = lines.next().unwrap().unwrap();
        assert!(header.starts_with("NAME"), "{header}");
        assert!(lines.next().unwrap().unwrap().starts_with("web"));
        let (ok, out) = kubectl(&kc, &["-n", "demo", "run", "db", "--image=postgres"]);
        assert!(ok, "{out}");
        let mut seen = false;
        for line in lines.by_ref().take(5) {
            if line.unwrap().starts_with("db") {
                seen = true;
                break;
            }
        }
        let _ = watch.kill();
        let _ = watch.wait();
        assert!(seen, "the watch printed the new pod");

        std::fs::write(
            kc.with_file_name("deploy.yaml"),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api, namespace: demo}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: api}}\n  template:\n    metadata: {labels: {app: api}}\n    spec: {containers: [{name: c, image: 'api:1'}]}\n",
        )
        .unwrap();
        let file = kc.with_file_name("deploy.yaml").display().to_string();
        let (ok, out) = kubectl(&kc, &["apply", "-f", &file]);
        assert!(ok, "{out}");
        let (ok, out) = kubectl(&kc, &["apply", "--server-side", "-f", &file]);
        assert!(ok, "{out}");
        let (ok, out) = kubectl(&kc, &["-n", "demo", "scale", "deploy", "api", "--replicas=3"]);
        assert!(ok, "{out}");
        let (ok, out) = kubectl(
            &kc,
            &["-n", "demo", "get", "deploy", "api", "-o", "jsonpath={.spec.replicas}/{.metadata.generation}"],
        );
        assert!(ok, "{out}");
        assert_eq!(out.trim(), "3/2");
        let (ok, out) = kubectl(&kc, &["delete", "namespace", "demo"]);
        assert!(ok, "{out}");
        let (ok, out) = kubectl(&kc, &["get", "namespace", "demo"]);
        assert!(!ok);
        assert!(out.contains("NotFound"), "{out}");
    })
    .await
    .unwrap();
    server.shutdown().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
