//! Authenticating from outside the cluster (client-go's
//! `examples/out-of-cluster-client-configuration`): a kubeconfig file gives the server, its
//! CA and the user's credentials; the program lists the pods of the cluster and looks for
//! one that does not exist, telling a `NotFound` from other errors.
//!
//! Which kubeconfig: `--kubeconfig <path>` (client-go's `-kubeconfig` flag), else
//! client-go's loading rules (`KUBECONFIG`, a list of files merged, else
//! `~/.kube/config`); `--context <name>` picks a context other than the current one. With
//! no kubeconfig at all it starts kclient-fake, writes a kubeconfig for it to a temporary
//! file and reads that, so the same code path runs.
//!
//! ```text
//! cargo run -p kclient --features fake --example out_of_cluster_config                      # kclient-fake
//! cargo run -p kclient --features fake --example out_of_cluster_config -- --kubeconfig ~/.kube/config --times 3
//! ```

use std::path::PathBuf;
use std::time::Duration;

use kclient::core::{ApiStatus, ErrorReport, ListOptions};
use kclient::fake::FakeApiServer;
use kclient::rest::{Config, KubeconfigOptions};
use kclient::typed::Clientset;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The pod the example looks for and does not expect to find.
const MISSING_POD: &str = "example-xxxxx";

/// The command line.
#[derive(Debug, Default, PartialEq)]
struct Args {
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
    times: Option<usize>,
}

fn parse_args(args: &[String]) -> Result<Args, Error> {
    let mut out = Args::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--kubeconfig" => out.kubeconfig = Some(value()?.into()),
            "--context" => out.context = Some(value()?.clone()),
            "--times" => out.times = Some(value()?.parse()?),
            other => return Err(format!("unknown argument {other:?} (usage: [--kubeconfig PATH] [--context NAME] [--times N])").into()),
        }
    }
    Ok(out)
}

/// Client-go's `clientcmd.BuildConfigFromFlags("", kubeconfig)`, with a context override.
fn load(kubeconfig: Option<PathBuf>, context: Option<String>) -> Result<Config, Error> {
    Ok(Config::from_kubeconfig(&KubeconfigOptions {
        path: kubeconfig,
        context,
        ..Default::default()
    })?)
}

/// Runs `times` rounds (forever when `None`); returns the pod count of each.
async fn run(config: Config, times: Option<usize>) -> Result<Vec<usize>, Error> {
    let namespace = config.namespace().to_owned();
    let clientset = Clientset::new(config)?;
    let mut counts = Vec::new();
    loop {
        let pods = clientset
            .core_v1()
            .pods("")
            .list(&ListOptions::default())
            .await?;
        println!("There are {} pods in the cluster", pods.items.len());
        counts.push(pods.items.len());
        match clientset.core_v1().pods(&namespace).get(MISSING_POD).await {
            Ok(_) => println!("Found pod {MISSING_POD} in namespace {namespace}"),
            Err(e) if e.is_not_found() => {
                println!("Pod {MISSING_POD} not found in namespace {namespace}")
            }
            Err(e) => return Err(e.into()),
        }
        if times.is_some_and(|t| counts.len() >= t) {
            return Ok(counts);
        }
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
}

/// Whether client-go's loading rules would find a kubeconfig.
fn kubeconfig_available() -> bool {
    std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty())
        || std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(".kube/config").exists())
            .unwrap_or(false)
}

/// kclient-fake with a few pods, and a kubeconfig for it written to `path`.
async fn fake_with_kubeconfig(path: &std::path::Path) -> Result<FakeApiServer, Error> {
    let pod = |ns: &str, name: &str| {
        serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}})
    };
    let server = FakeApiServer::builder()
        .https()
        .token("out-of-cluster")
        .objects([pod("default", "web-0"), pod("kube-system", "dns-0")])
        .start()
        .await?;
    server.write_kubeconfig(path)?;
    Ok(server)
}

#[tokio::main]
async fn main() -> Result<(), ErrorReport> {
    let args = parse_args(&std::env::args().skip(1).collect::<Vec<_>>())?;
    if args.kubeconfig.is_some() || kubeconfig_available() {
        run(load(args.kubeconfig, args.context)?, args.times).await?;
        return Ok(());
    }
    let path = std::env::temp_dir().join(format!("kclient-kubeconfig-{}", std::process::id()));
    let _server = fake_with_kubeconfig(&path).await?;
    println!(
        "No kubeconfig found: started kclient-fake, its kubeconfig is {}",
        path.display()
    );
    let result = async {
        run(
            load(Some(path.clone()), args.context)?,
            args.times.or(Some(1)),
        )
        .await
    }
    .await;
    let _ = std::fs::remove_file(&path);
    result?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() -> Result<(), Error> {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse_args(&args(&[]))?, Args::default());
        assert_eq!(
            parse_args(&args(&[
                "--kubeconfig",
                "k",
                "--context",
                "c",
                "--times",
                "2"
            ]))?,
            Args {
                kubeconfig: Some("k".into()),
                context: Some("c".into()),
                times: Some(2)
            }
        );
        assert!(parse_args(&args(&["--times", "x"])).is_err());
        assert!(parse_args(&args(&["--kubeconfig"])).is_err());
        Ok(())
    }

    #[tokio::test]
    async fn the_kubeconfig_of_kclient_fake_reaches_it() -> Result<(), Error> {
        let path =
            std::env::temp_dir().join(format!("kclient-kubeconfig-test-{}", std::process::id()));
        let _server = fake_with_kubeconfig(&path).await?;
        let config = load(Some(path.clone()), None);
        let missing_context = load(Some(path.clone()), Some("nope".into()));
        std::fs::remove_file(&path)?;
        assert_eq!(run(config?, Some(1)).await?, [2]);
        assert!(missing_context.unwrap_err().to_string().contains("nope"));
        Ok(())
    }
}
