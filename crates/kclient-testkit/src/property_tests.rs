//! The property tests' configuration: a fixed seed and committed regressions.

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
///
/// ```
/// use kclient_testkit::proptest_config;
/// use proptest::prelude::*;
///
/// proptest! {
///     #![proptest_config(proptest_config(64, concat!(env!("CARGO_MANIFEST_DIR"), "/tests/doc.proptest-regressions")))]
///     // In a suite this function carries `#[test]`; the example calls it instead.
///     fn addition_commutes(a in 0u32..1000, b in 0u32..1000) {
///         prop_assert_eq!(a + b, b + a);
///     }
/// }
/// addition_commutes();
/// ```
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
    use std::sync::Mutex;

    use proptest::prelude::*;
    use proptest::test_runner::TestRunner;

    use super::*;

    fn fuzzing() -> bool {
        std::env::var_os(SEED_ENV).is_some() || std::env::var_os(CASES_ENV).is_some()
    }

    /// A regression file of its own in the temporary directory (proptest wants `&'static str`).
    fn scratch_file(name: &str) -> &'static str {
        let dir = std::env::temp_dir().join(format!("kclient-testkit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        Box::leak(path.display().to_string().into_boxed_str())
    }

    /// The first `n` values a runner with this configuration generates.
    fn first_values(config: Config, n: usize) -> Vec<u64> {
        let seen = Mutex::new(Vec::new());
        let mut runner = TestRunner::new(config);
        runner
            .run(&any::<u64>(), |v| {
                seen.lock().unwrap().push(v);
                Ok(())
            })
            .unwrap();
        let mut seen = seen.into_inner().unwrap();
        seen.truncate(n);
        seen
    }

    #[test]
    fn without_the_variables_the_seed_is_fixed_and_failures_are_recorded_in_the_file() {
        if fuzzing() {
            return; // a fuzz run: the variables win, as documented
        }
        let config = proptest_config(7, "/tmp/x.proptest-regressions");
        assert_eq!(config.cases, 7);
        assert_eq!(config.rng_seed, RngSeed::Fixed(FIXED_SEED));
        assert!(config.failure_persistence.is_some());
    }

    #[test]
    fn two_runs_generate_the_same_inputs() {
        if fuzzing() {
            return;
        }
        let a = first_values(proptest_config(32, scratch_file("a.txt")), 32);
        let b = first_values(proptest_config(32, scratch_file("b.txt")), 32);
        assert_eq!(a.len(), 32);
        assert_eq!(a, b);
    }

    #[test]
    fn a_failure_is_recorded_in_the_regression_file_and_replayed_first() {
        let file = scratch_file("suite.txt");
        let mut runner = TestRunner::new(proptest_config(256, file));
        let found = runner.run(&(0u32..1000), |v| {
            prop_assert!(v < 500);
            Ok(())
        });
        assert!(found.is_err(), "the failing case is found");
        let recorded = std::fs::read_to_string(file).unwrap();
        assert!(recorded.lines().any(|l| l.starts_with("cc ")), "{recorded}");

        // A later run replays it before any new case: the first value it tries fails.
        let seen = Mutex::new(Vec::new());
        let mut runner = TestRunner::new(proptest_config(1, file));
        let replayed = runner.run(&(0u32..1000), |v| {
            seen.lock().unwrap().push(v);
            prop_assert!(v < 500);
            Ok(())
        });
        assert!(replayed.is_err());
        assert!(seen.into_inner().unwrap()[0] >= 500);
    }
}
