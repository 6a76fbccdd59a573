//! kube-rs as the client (issue 49): the `e2e/peers/kube-rs` program (kube-runtime's
//! `finalizer()` step by step, then a `Controller` with a finalizer) against every available
//! target, the transcripts equal. A binary of its own: the program is built on first use (a
//! minute or two the first time), while no other scenario runs. `KCLIENT_E2E_SKIP_KUBE_RS=1`
//! skips it, saying so.

use anyhow::Result;
use kclient_e2e::scenarios::{kube_rs_finalizer, run_everywhere};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_runtime_finalizer_and_controller_agree_on_both_servers() -> Result<()> {
    run_everywhere(
        "kube_rs_finalizer",
        |t| Box::pin(kube_rs_finalizer(t)),
        true,
    )
    .await
}
