//! `cargo xtask demo`: the main demo of the informer stack.

use anyhow::{bail, Result};

pub(crate) fn run(_args: &[String]) -> Result<()> {
    bail!(
        "the demo arrives with the examples issue (an informer-driven controller against the \
         embedded fake API server, or a real cluster via KUBECONFIG); nothing to run yet"
    )
}
