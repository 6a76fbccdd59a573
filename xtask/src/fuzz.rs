//! `cargo xtask fuzz [--cases N] [--seconds S] [--seed X] [--release] [SUITE...]`: the
//! workspace's property tests and fuzz targets run longer than `cargo xtask test` runs them,
//! from new seeds.
//!
//! With the tests, every property suite runs a fixed number of cases from a fixed seed
//! (`kclient-testkit`), so the same commit always gives the same result. This command is the
//! opt-in long run: each round draws a seed (or takes `--seed`), prints it, and runs every
//! suite with proptest's `PROPTEST_RNG_SEED` and `PROPTEST_CASES`. A failure is shrunk by
//! proptest and appended to the suite's regression file (`<crate>/proptest-regressions/*.txt`,
//! in the repository), which every later run — CI's included — replays first: commit it with
//! the fix. `--seconds` repeats rounds with new seeds until the time is up.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::{cargo, step, workspace_root};

/// A property suite: its name on the command line, the `cargo test` target that holds it and
/// the filter that picks its tests out of that target.
struct Suite {
    name: &'static str,
    cargo_args: &'static [&'static str],
    filter: Option<&'static str>,
}

/// Every randomized suite of the workspace.
const SUITES: &[Suite] = &[
    Suite {
        name: "core",
        cargo_args: &["-p", "kclient-core", "--test", "fuzz"],
        filter: None,
    },
    Suite {
        name: "rest",
        cargo_args: &["-p", "kclient-rest", "--test", "fuzz"],
        filter: None,
    },
    Suite {
        name: "cache",
        cargo_args: &["-p", "kclient-cache", "--test", "properties"],
        filter: None,
    },
    Suite {
        name: "protobuf",
        cargo_args: &["-p", "kclient-protobuf", "--test", "fuzz"],
        filter: None,
    },
    Suite {
        name: "fake",
        cargo_args: &["-p", "kclient-fake", "--lib"],
        filter: Some("query::fuzz::"),
    },
];

/// Cases per suite and round unless `--cases` says otherwise.
const DEFAULT_CASES: u32 = 10_000;

#[derive(Debug, PartialEq)]
struct Options {
    cases: u32,
    seconds: Option<u64>,
    seed: Option<u64>,
    release: bool,
    suites: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut options = Options {
        cases: DEFAULT_CASES,
        seconds: None,
        seed: None,
        release: false,
        suites: Vec::new(),
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| {
            args.next()
                .with_context(|| format!("{flag} needs a value"))
                .cloned()
        };
        match arg.as_str() {
            "--cases" => options.cases = value("--cases")?.parse().context("--cases")?,
            "--seconds" => {
                options.seconds = Some(value("--seconds")?.parse().context("--seconds")?)
            }
            "--seed" => options.seed = Some(value("--seed")?.parse().context("--seed")?),
            "--release" => options.release = true,
            "help" | "-h" | "--help" => bail!("{}", usage()),
            flag if flag.starts_with('-') => bail!("unknown flag {flag:?}\n{}", usage()),
            suite => {
                if !SUITES.iter().any(|s| s.name == suite) {
                    bail!("unknown suite {suite:?}\n{}", usage());
                }
                options.suites.push(suite.to_owned());
            }
        }
    }
    if options.cases == 0 {
        bail!("--cases must be at least 1");
    }
    Ok(options)
}

fn usage() -> String {
    let names: Vec<_> = SUITES.iter().map(|s| s.name).collect();
    format!(
        "usage: cargo xtask fuzz [--cases N] [--seconds S] [--seed X] [--release] [SUITE...]\n  \
         --cases N    cases per suite and round (default {DEFAULT_CASES})\n  \
         --seconds S  repeat rounds with new seeds until S seconds have passed\n  \
         --seed X     the first round's seed (a u64; later rounds draw new ones)\n  \
         --release    build the suites optimized (faster cases, a longer build)\n  \
         SUITE        any of {} (default: all)",
        names.join(", ")
    )
}

pub(crate) fn run(args: &[String]) -> Result<()> {
    let options = parse(args)?;
    let suites: Vec<&Suite> = SUITES
        .iter()
        .filter(|s| options.suites.is_empty() || options.suites.iter().any(|n| n == s.name))
        .collect();

    // Build every suite first, so that the rounds measure only the cases.
    for suite in &suites {
        let mut build = test_command(suite, options.release);
        build.arg("--no-run");
        step(&format!("build the {} suite", suite.name), build)?;
    }

    let started = Instant::now();
    let mut seed = options.seed.unwrap_or_else(new_seed);
    let mut failed = Vec::new();
    for round in 1.. {
        eprintln!(
            "fuzz: round {round}, seed {seed}, {} cases per suite (replay: cargo xtask fuzz --seed {seed} --cases {})",
            options.cases, options.cases
        );
        for suite in &suites {
            let mut test = test_command(suite, options.release);
            test.args(suite.filter);
            test.env("PROPTEST_RNG_SEED", seed.to_string())
                .env("PROPTEST_CASES", options.cases.to_string());
            let name = format!("fuzz {} (seed {seed})", suite.name);
            if step(&name, test).is_err() {
                failed.push(name);
            }
        }
        let out_of_time = options
            .seconds
            .is_none_or(|s| started.elapsed() >= Duration::from_secs(s));
        if !failed.is_empty() || out_of_time {
            break;
        }
        seed = new_seed();
    }
    if failed.is_empty() {
        eprintln!(
            "fuzz: no failure in {:.0}s",
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let recorded = recorded_regressions();
    bail!(
        "{} failed: {}\nthe shrunk cases were appended to the suites' regression files, which every \
         later test run replays; commit them with the fix:\n{recorded}",
        failed.len(),
        failed.join(", ")
    )
}

/// `cargo test` for one suite (the workspace's test features are not needed by these suites).
fn test_command(suite: &Suite, release: bool) -> Command {
    let mut cmd = cargo();
    cmd.arg("test");
    if release {
        cmd.arg("--release");
    }
    cmd.args(suite.cargo_args);
    cmd
}

/// A seed nobody chose: the standard library's per-process random hash keys.
fn new_seed() -> u64 {
    RandomState::new().hash_one(Instant::now())
}

/// The regression files that differ from the last commit (`git status`), for the message.
fn recorded_regressions() -> String {
    Command::new("git")
        .args(["status", "--porcelain", "--", "*proptest-regressions*"])
        .current_dir(workspace_root())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "  (git status shows none)\n".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn flags_and_suites_are_parsed() {
        let o = parse(&args(&[
            "--cases",
            "50",
            "--seconds",
            "600",
            "--seed",
            "7",
            "rest",
        ]))
        .unwrap();
        assert_eq!(
            o,
            Options {
                cases: 50,
                seconds: Some(600),
                seed: Some(7),
                release: false,
                suites: vec!["rest".into()],
            }
        );
        assert_eq!(parse(&[]).unwrap().cases, DEFAULT_CASES);
        assert!(parse(&args(&["nope"])).is_err());
        assert!(parse(&args(&["--cases"])).is_err());
        assert!(parse(&args(&["--cases", "0"])).is_err());
        assert!(parse(&args(&["--bogus"])).is_err());
    }

    #[test]
    fn seeds_differ_between_draws() {
        assert_ne!(new_seed(), new_seed());
    }
}
