//! kclient's end-to-end suite.
//!
//! Scenarios (in [`scenarios`]) send every request through kclient-rest's `RestClient` (see
//! [`client`]) and run against a [`Target`]: a real kube-apiserver started by
//! `cargo xtask e2e up` (found through `KCLIENT_E2E_KUBECONFIG`) and a fresh kclient-fake
//! started in-process. Each scenario returns a [`Transcript`] of what it observed (status
//! codes, reasons, event sequences; never uids or timestamps), so that the same scenario run
//! against both targets can be compared: a difference is a bug in the fake unless the real
//! server says otherwise.
//!
//! Without `KCLIENT_E2E_KUBECONFIG` the scenarios run against the fake alone (so
//! `cargo test --workspace` stays hermetic and still exercises them) and the real-server-only
//! tests print why they skip; `cargo xtask e2e test` (and `cargo xtask test`) run everything
//! against both.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use kclient_e2e::{scenarios, Target};
//! if let Some(target) = Target::real_from_env()? {
//!     let transcript = scenarios::config_map_crud(&target).await?;
//!     println!("{transcript}");
//! }
//! # Ok(())
//! # }
//! ```

pub mod client;
pub mod peers;
pub mod scenarios;
pub mod target;
pub mod transcript;

pub use target::{Target, TargetKind};
pub use transcript::Transcript;
