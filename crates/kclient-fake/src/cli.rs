//! The command line of `kclient-fake-apiserver`: options, and starting a server with
//! preloaded manifests and a kubeconfig written for kubectl.
//!
//! ```text
//! kclient-fake-apiserver [--port 6443] [--https] [--token TOKEN] [--client-certs]
//!                        [--kubeconfig PATH] [--load FILE_OR_DIR]...
//!                        [--history-window EVENTS] [--bookmark-interval SECONDS]
//! ```

use std::path::PathBuf;
use std::time::Duration;

use crate::{load_manifests, Error, FakeApiServer};

/// The usage text.
pub const USAGE: &str = "\
usage: kclient-fake-apiserver [options]

An in-memory Kubernetes API server on 127.0.0.1, for demos and tests.

options:
  --port PORT                 listen on this port (default 0: any free port)
  --https                     serve HTTPS with a generated certificate authority
  --token TOKEN               require this bearer token (implies nothing about TLS)
  --client-certs              require client certificates signed by the server's CA (implies --https)
  --kubeconfig PATH           write a kubeconfig for this server to PATH
  --load PATH                 preload the YAML/JSON manifests in a file or folder (repeatable)
  --history-window EVENTS     events kept for watches and continue tokens (default 10000)
  --bookmark-interval SECONDS how often watches get bookmarks (default 60)
  --feature-gates GATES       kube-apiserver's alpha gates the fake has, as kube-apiserver takes
                              them (ShardedListAndWatch=true)
  -h, --help                  print this help
";

/// Parsed options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `--port`.
    pub port: u16,
    /// `--https`.
    pub https: bool,
    /// `--token`.
    pub tokens: Vec<String>,
    /// `--client-certs`.
    pub client_certs: bool,
    /// `--kubeconfig`.
    pub kubeconfig: Option<PathBuf>,
    /// `--load`.
    pub load: Vec<PathBuf>,
    /// `--history-window`.
    pub history_window: Option<usize>,
    /// `--bookmark-interval` in seconds.
    pub bookmark_interval: Option<u64>,
    /// `--feature-gates ShardedListAndWatch=…`.
    pub sharded_list_and_watch: bool,
    /// `--help`.
    pub help: bool,
}

impl Options {
    /// Parses the arguments after the program name.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Self, String> {
        let mut opts = Options::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
                _ => (arg.clone(), None),
            };
            let mut value = |what: &str| -> Result<String, String> {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .ok_or_else(|| format!("{name} needs {what}"))
            };
            match name.as_str() {
                "--port" => {
                    opts.port = value("a port")?
                        .parse()
                        .map_err(|e| format!("--port: {e}"))?
                }
                "--https" => opts.https = true,
                "--token" => opts.tokens.push(value("a token")?),
                "--client-certs" => opts.client_certs = true,
                "--kubeconfig" => opts.kubeconfig = Some(value("a path")?.into()),
                "--load" => opts.load.push(value("a path")?.into()),
                "--history-window" => {
                    opts.history_window = Some(
                        value("a number of events")?
                            .parse()
                            .map_err(|e| format!("--history-window: {e}"))?,
                    )
                }
                "--bookmark-interval" => {
                    opts.bookmark_interval = Some(
                        value("seconds")?
                            .parse()
                            .map_err(|e| format!("--bookmark-interval: {e}"))?,
                    )
                }
                "--feature-gates" => {
                    for gate in value("gates")?.split(',').filter(|g| !g.is_empty()) {
                        let (name, on) = gate.split_once('=').ok_or_else(|| {
                            format!("--feature-gates: missing bool value for {gate}")
                        })?;
                        let on: bool = on.parse().map_err(|e| {
                            format!("--feature-gates: invalid value of {name}={on}: {e}")
                        })?;
                        match name {
                            "ShardedListAndWatch" => opts.sharded_list_and_watch = on,
                            _ => {
                                return Err(format!(
                                    "--feature-gates: unrecognized feature gate: {name}"
                                ))
                            }
                        }
                    }
                }
                "-h" | "--help" => opts.help = true,
                other => return Err(format!("unknown option {other:?}")),
            }
        }
        Ok(opts)
    }
}

/// Starts a server as the options say: preloads the manifests (namespaces and CRDs first)
/// and writes the kubeconfig.
pub async fn start(opts: &Options) -> Result<FakeApiServer, Error> {
    let mut builder = FakeApiServer::builder().port(opts.port);
    if opts.https {
        builder = builder.https();
    }
    if opts.client_certs {
        builder = builder.client_cert_auth();
    }
    for t in &opts.tokens {
        builder = builder.token(t.clone());
    }
    if let Some(w) = opts.history_window {
        builder = builder.history_window(w);
    }
    if let Some(s) = opts.bookmark_interval {
        builder = builder.bookmark_interval(Duration::from_secs(s));
    }
    builder = builder.sharded_list_and_watch(opts.sharded_list_and_watch);
    let server = builder.start().await?;
    for obj in load_manifests(&opts.load)? {
        server.seed(obj)?;
    }
    if let Some(path) = &opts.kubeconfig {
        server.write_kubeconfig(path)?;
    }
    Ok(server)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        Options::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_options() {
        let o = parse(&[
            "--port",
            "6443",
            "--https",
            "--token=t",
            "--load",
            "a",
            "--load=b",
            "--kubeconfig",
            "k",
        ])
        .unwrap();
        assert_eq!(o.port, 6443);
        assert!(o.https);
        assert_eq!(o.tokens, ["t"]);
        assert_eq!(o.load, [PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(o.kubeconfig, Some(PathBuf::from("k")));
        assert!(parse(&["--port"]).is_err());
        assert!(parse(&["--port", "x"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
        assert!(parse(&["-h"]).unwrap().help);
    }

    #[test]
    fn feature_gates_as_kube_apiserver_takes_them() {
        assert!(!parse(&[]).unwrap().sharded_list_and_watch);
        assert!(
            parse(&["--feature-gates=ShardedListAndWatch=true"])
                .unwrap()
                .sharded_list_and_watch
        );
        assert!(
            !parse(&["--feature-gates", "ShardedListAndWatch=false"])
                .unwrap()
                .sharded_list_and_watch
        );
        assert!(parse(&["--feature-gates=ShardedListAndWatch"]).is_err());
        assert!(parse(&["--feature-gates=ShardedListAndWatch=yes"]).is_err());
        assert!(parse(&["--feature-gates=NoSuchGate=true"]).is_err());
    }
}
