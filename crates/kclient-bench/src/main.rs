//! kclient's side of the peer benchmarks (`cargo xtask bench`, `docs/benchmarks.md`): the
//! scenarios that `bench/peers/client-go` and `bench/peers/kube-rs` also run, with the same
//! arguments, each printing its result as one JSON object on stdout; and the harness's helpers
//! (the manifest the fake API server loads, seeding and cleaning a real cluster, the writer of
//! the watch scenario).
//!
//! ```text
//! kclient-bench sync      --kubeconfig K [--namespace NS] [--kind pods|configmaps|pod-view] --count N --mode list|stream --managed-fields keep|strip [--cache decoded|compact] [--lookups L] [--gets G] [--handlers H] [--settle S] [--http1]
//! kclient-bench watch     --kubeconfig K --namespace NS --count N
//! kclient-bench workqueue --shape queue|contended --iterations I [--repeat R]
//! kclient-bench decode    --kubeconfig K [--namespace NS] --count N [--repeat R] [--http1]
//! kclient-bench controller --kubeconfig K --namespace NS --count N --controllers 1|3 [--owns metadata|whole] [--concurrency W] [--requeue --settle S]
//! kclient-bench decode-local --count N [--repeat R]   (the two decoders alone, in memory)
//! kclient-bench reads-local --count N --managed-fields keep|strip --cache decoded|compact [--gets G] [--lookups L]   (a cache's reads alone, in memory)
//! kclient-bench soak --objects N --seconds S [--sample X] [--fault-every F]   (an informer factory and a controller against kclient-fake under churn and faults, sampled)
//! kclient-bench soak-server --objects N --seconds S [--sample X] [--fault-every F]   (the soak's server, churn and faults: the process `soak` starts)
//! kclient-bench write-bodies --kubeconfig K --namespace NS --count N [--repeat R] [--concurrency C]   (JSON against protobuf request bodies)
//!
//! kclient-bench manifest  --path FILE --count N --namespace NS --objects M [--owned O --owned-namespace NS2]   (N Pods, M ConfigMaps in NS, O ConfigMaps owning a Secret each in NS2)
//! kclient-bench seed      --kubeconfig K --namespace NS --count N --objects M
//! kclient-bench write     --kubeconfig K --namespace NS --count N --objects M [--concurrency C]
//! kclient-bench cleanup   --kubeconfig K --namespace NS
//! ```
//!
//! Linux only: memory and CPU time come from `/proc/self`.

mod args;
mod controller;
mod decode;
mod decode_local;
mod objects;
mod pod_view;
mod proc_stats;
mod reads_local;
mod soak;
mod sync;
mod watch;
mod workqueue;
mod write_bodies;

use std::process::ExitCode;

/// The heap's live bytes, counted (`heap-count` feature: the soak's samples).
#[cfg(feature = "heap-count")]
#[global_allocator]
static ALLOCATOR: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);

use serde_json::json;

/// What every scenario returns.
pub(crate) type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let all: Vec<String> = std::env::args().skip(1).collect();
    let Some(scenario) = all.first() else {
        eprintln!("usage: kclient-bench <scenario> [options] (see the crate's documentation)");
        return ExitCode::FAILURE;
    };
    match run(scenario, &all[1..]).await {
        Ok(Some(mut result)) => {
            result["client"] = json!("kclient");
            result["scenario"] = json!(scenario);
            println!("{result}");
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("kclient-bench {scenario}: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(scenario: &str, rest: &[String]) -> Result<Option<serde_json::Value>, Error> {
    let options = args::Options::parse(rest)?;
    Ok(match scenario {
        "sync" => Some(sync::run(&options).await?),
        "controller" => Some(controller::run(&options).await?),
        "watch" => Some(watch::run(&options).await?),
        "workqueue" => Some(workqueue::run(&options).await?),
        "decode" => Some(decode::run(&options).await?),
        "write-bodies" => Some(write_bodies::run(&options).await?),
        "decode-local" => Some(decode_local::run(&options)?),
        "reads-local" => Some(reads_local::run(&options)?),
        "soak" => Some(soak::run(&options).await?),
        "soak-server" => {
            soak::server::serve(&options).await?;
            None
        }
        "manifest" => {
            objects::write_manifest(&options)?;
            None
        }
        "seed" => Some(objects::seed(&options).await?),
        "write" => Some(objects::write(&options).await?),
        "cleanup" => {
            objects::cleanup(&options).await?;
            None
        }
        other => return Err(format!("unknown scenario {other:?}").into()),
    })
}
