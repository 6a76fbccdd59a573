//! `kclient-fake-apiserver`: serves kclient-fake's in-memory Kubernetes API on a chosen port,
//! optionally preloaded with manifests, and writes a kubeconfig for kubectl.
//!
//! ```text
//! kclient-fake-apiserver --port 6443 --load ./manifests --kubeconfig /tmp/fake.kubeconfig
//! kubectl --kubeconfig /tmp/fake.kubeconfig get pods -A -w
//! ```

use kclient_fake::cli::{self, Options, USAGE};

#[tokio::main]
async fn main() {
    let opts = match Options::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("kclient-fake-apiserver: {e}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    if opts.help {
        print!("{USAGE}");
        return;
    }
    let server = match cli::start(&opts).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("kclient-fake-apiserver: {e}");
            std::process::exit(1);
        }
    };
    println!("serving on {}", server.url());
    if let Some(path) = &opts.kubeconfig {
        println!("kubeconfig written to {}", path.display());
    }
    if tokio::signal::ctrl_c().await.is_err() {
        eprintln!("kclient-fake-apiserver: cannot wait for Ctrl-C; exiting");
    }
    server.shutdown().await;
}
