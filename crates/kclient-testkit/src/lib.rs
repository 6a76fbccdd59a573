//! Support shared by kclient's own test suites (a dev-dependency only; not published).
//!
//! Every property test of the workspace takes its configuration from [`proptest_config`], so
//! that the same commit always tests the same inputs: `cargo test` and `cargo xtask test` run
//! from [`FIXED_SEED`] with a small number of cases, after replaying every failure recorded in
//! the suite's committed regression file. Longer runs with new seeds are opt-in:
//! `cargo xtask fuzz [--cases N] [--seconds S] [--seed X]` sets proptest's own variables
//! ([`CASES_ENV`], [`SEED_ENV`]), prints the seed, and each failure it finds is appended to the
//! regression file, to be committed with its fix.
//!
//! ```
//! use kclient_testkit::proptest_config;
//! use proptest::prelude::*;
//!
//! proptest! {
//!     #![proptest_config(proptest_config(64, concat!(env!("CARGO_MANIFEST_DIR"), "/tests/doc.proptest-regressions")))]
//!     // In a suite this function carries `#[test]`; the example calls it instead.
//!     fn addition_commutes(a in 0u32..1000, b in 0u32..1000) {
//!         prop_assert_eq!(a + b, b + a);
//!     }
//! }
//! addition_commutes();
//! ```

use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};

/// The seed every property test runs from unless [`SEED_ENV`] says otherwise.
pub const FIXED_SEED: u64 = 0x6b63_6c69_656e_7431;

/// proptest's variable for the number of cases; when set it replaces each suite's own count.
pub const CASES_ENV: &str = "PROPTEST_CASES";

/// proptest's variable for the seed; when set (a decimal `u64`) it replaces [`FIXED_SEED`].
pub const SEED_ENV: &str = "PROPTEST_RNG_SEED";

/// The configuration of a property test suite: `cases` cases from [`FIXED_SEED`], failures
/// replayed from and recorded in `regressions` (an absolute path, usually
/// `concat!(env!("CARGO_MANIFEST_DIR"), "/tests/<suite>.proptest-regressions")`).
///
/// [`CASES_ENV`] and [`SEED_ENV`], when set, win over `cases` and the fixed seed (proptest reads
/// them into its default configuration); this is how `cargo xtask fuzz` runs longer.
pub fn proptest_config(cases: u32, regressions: &'static str) -> Config {
    let from_env = Config::default();
    Config {
        cases: if std::env::var_os(CASES_ENV).is_some() {
            from_env.cases
        } else {
            cases
        },
        rng_seed: if std::env::var_os(SEED_ENV).is_some() {
            from_env.rng_seed
        } else {
            RngSeed::Fixed(FIXED_SEED)
        },
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(regressions))),
        ..from_env
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_the_variables_the_seed_is_fixed_and_failures_are_recorded_in_the_file() {
        if std::env::var_os(SEED_ENV).is_some() || std::env::var_os(CASES_ENV).is_some() {
            return; // a fuzz run: the variables win, as documented
        }
        let config = proptest_config(7, "/tmp/x.proptest-regressions");
        assert_eq!(config.cases, 7);
        assert_eq!(config.rng_seed, RngSeed::Fixed(FIXED_SEED));
        assert!(config.failure_persistence.is_some());
    }
}
