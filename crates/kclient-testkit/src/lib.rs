//! Support shared by kclient's own test suites and benchmarks (not published).
//!
//! Every property test of the workspace takes its configuration from [`proptest_config`], so
//! that the same commit always tests the same inputs: `cargo test` and `cargo xtask test` run
//! from [`FIXED_SEED`] with a small number of cases, after replaying every failure recorded in
//! the suite's committed regression file. Longer runs with new seeds are opt-in:
//! `cargo xtask fuzz [--cases N] [--seconds S] [--seed X]` sets proptest's own variables
//! ([`CASES_ENV`], [`SEED_ENV`]), prints the seed, and each failure it finds is appended to the
//! regression file, to be committed with its fix.
//!
//! Chaos tests and soaks take their random choices from a [`SeededRng`], so that a seed names
//! a run and the same seed runs the same faults in the same order.
//!
//! Tests of what is logged open a [`trace::capture`]: the spans and events made on their own
//! thread, whatever the other tests of the binary do at the same time.
//!
//! ```
//! use kclient_testkit::SeededRng;
//!
//! let mut rng = SeededRng::new(46);
//! let mut faults = ["drop watches", "compact", "503 storm"];
//! rng.shuffle(&mut faults);
//! let replica = rng.below(3);
//! assert!(replica < 3);
//! ```

#[cfg(feature = "proptest")]
mod property_tests;
mod seeded_rng;
pub mod trace;

#[cfg(feature = "proptest")]
pub use property_tests::{proptest_config, CASES_ENV, FIXED_SEED, SEED_ENV};
pub use seeded_rng::SeededRng;
