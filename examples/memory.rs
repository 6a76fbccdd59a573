//! What the managedFields transform saves: the same Pods cached twice, by an informer that
//! keeps `metadata.managedFields` and by one that strips them before they enter the cache
//! (the informer factory's default), with the heap each cache holds measured by a counting
//! allocator.
//!
//! managedFields record which field manager owns which field, for server-side apply; a
//! controller almost never reads them, yet on a typical object they are a large share of its
//! bytes (k/k#118454 puts them at about 40%). client-go caches them unless a transform is
//! set; kclient's factory strips them unless `keep_managed_fields()` is called.
//!
//! ```text
//! cargo run --release -p kclient --features fake --example memory              # 5000 Pods
//! cargo run --release -p kclient --features fake --example memory -- 20000
//! ```
//!
//! The Pods are kclient-fake's realistic sample (a Deployment's Pod with probes, resources,
//! a volume, status and the managedFields of three managers), served over HTTPS and decoded
//! as in production.

use std::alloc::System;
use std::time::Duration;

use cap::Cap;
use kclient::fake::FakeApiServer;
use kclient::prelude::*;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The heap an informer's cache of every Pod holds, and how many Pods it holds.
async fn cached_bytes(
    clientset: &Clientset,
    keep_managed_fields: bool,
) -> Result<(usize, usize), Error> {
    let before = ALLOCATOR.allocated();
    let builder = SharedInformerFactory::builder(clientset.clone());
    let factory = if keep_managed_fields {
        builder.keep_managed_fields()
    } else {
        builder
    }
    .build();
    let informer = factory.core_v1().pods().informer();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    if !factory.wait_for_cache_sync(&cancel).await.all_synced() {
        return Err("the pod cache did not sync".into());
    }
    // The list's response buffers are freed once decoded; what is left is the cache (and
    // the informer's fixed parts, the same in both runs).
    tokio::time::sleep(Duration::from_millis(50)).await;
    let held = ALLOCATOR.allocated().saturating_sub(before);
    let count = informer.get_store().len();
    factory.shutdown().await;
    Ok((held, count))
}

/// What was measured.
#[derive(Debug)]
struct Measurement {
    pods: usize,
    /// JSON bytes of one Pod's managedFields.
    managed_fields_json: usize,
    /// Heap per cached Pod with managedFields kept.
    kept_per_pod: usize,
    /// Heap per cached Pod with managedFields stripped.
    stripped_per_pod: usize,
}

impl Measurement {
    fn saved_per_pod(&self) -> usize {
        self.kept_per_pod.saturating_sub(self.stripped_per_pod)
    }
}

async fn measure(pods: usize) -> Result<Measurement, Error> {
    let server = FakeApiServer::builder()
        .https()
        .token("memory")
        .objects((0..pods).map(|i| kclient::fake::samples::realistic_pod(i, true)))
        .start()
        .await?;
    let clientset = Clientset::new(server.config()?)?;
    // A first run pays for what is allocated once per process (TLS, connection pool,
    // lazily initialised statics), so that neither measured run does.
    cached_bytes(&clientset, true).await?;
    let (kept, kept_count) = cached_bytes(&clientset, true).await?;
    let (stripped, stripped_count) = cached_bytes(&clientset, false).await?;
    if kept_count != pods || stripped_count != pods {
        return Err(format!("cached {kept_count} and {stripped_count} Pods of {pods}").into());
    }
    let sample = kclient::fake::samples::realistic_pod(0, true);
    Ok(Measurement {
        pods,
        managed_fields_json: sample["metadata"]["managedFields"].to_string().len(),
        kept_per_pod: kept / pods,
        stripped_per_pod: stripped / pods,
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), ErrorReport> {
    let pods = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 5000,
    };
    let m = measure(pods).await?;
    println!(
        "{} Pods cached by an informer (heap per Pod, counting allocator):",
        m.pods
    );
    println!("  managedFields kept       {:>7} bytes", m.kept_per_pod);
    println!("  managedFields stripped   {:>7} bytes", m.stripped_per_pod);
    println!(
        "  saved                    {:>7} bytes per Pod ({:.0}%), {:.1} MiB for the {} Pods",
        m.saved_per_pod(),
        100.0 * m.saved_per_pod() as f64 / m.kept_per_pod.max(1) as f64,
        (m.saved_per_pod() * m.pods) as f64 / (1024.0 * 1024.0),
        m.pods
    );
    println!(
        "  (one Pod's managedFields are {} bytes of JSON)",
        m.managed_fields_json
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stripping_managed_fields_saves_at_least_half_their_json_size_per_pod(
    ) -> Result<(), Error> {
        let m = measure(300).await?;
        println!("{m:?}");
        assert!(m.stripped_per_pod < m.kept_per_pod, "{m:?}");
        assert!(
            m.saved_per_pod() * 2 >= m.managed_fields_json,
            "decoded managedFields take at least half their JSON size: {m:?}"
        );
        Ok(())
    }
}
