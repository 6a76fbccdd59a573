//! `cargo xtask test`: every check CI runs, in order, stopping at the first failure.

use std::env;
use std::time::Instant;

use anyhow::{bail, Result};

use crate::{cargo, e2e, step};

/// Optional features switched on for checks and tests, so that feature-gated code is built
/// and tested too. (`--all-features` cannot be used: the facade's Kubernetes-version features
/// are mutually exclusive.)
pub(crate) const TEST_FEATURES: &str =
    "kclient-fake/apiserver,kclient-workqueue/prometheus,kclient-cache/compact-protobuf,kclient-cache/informer-delta-fifo,kclient/fake,kclient/tools,kclient/streaming,kclient/controller,kclient/derive,kclient/webhook";

/// The packages and features the tests are built with: the workspace but the user's crate of
/// docs/envtest.md (whose test needs the real binaries: it runs in the e2e step). The doc tests
/// and the benchmark harness's smoke run are built with the same ones, so that they reuse the
/// tests' build: cargo resolves the dependencies' features from the packages it is given, and
/// other packages would mean building every crate again (1.5 minutes of CI each).
pub(crate) const TESTED_PACKAGES: [&str; 5] = [
    "--workspace",
    "--exclude",
    "envtest-greeter",
    "--features",
    TEST_FEATURES,
];

/// The golden CRDs of kclient-derive-tests that codegen's types are made from.
const DERIVE_GOLDEN_CRDS: [&str; 5] = ["memcached", "fields", "enums", "cel", "versions"];

/// Set (to anything but `0`) to leave the e2e suite out of `cargo xtask test`, e.g. on a
/// machine without Go. CI does not set it.
const SKIP_E2E_ENV: &str = "KCLIENT_SKIP_E2E";

pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(unknown) = args.first() {
        bail!("`cargo xtask test` takes no arguments (got {unknown:?})");
    }
    let started = Instant::now();

    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--check"]);
    step("cargo fmt --check", fmt)?;

    // The crates depend on each other only along the allowed edges (docs/architecture.md).
    eprintln!("==> cargo xtask layering");
    crate::layering::run(&[])?;

    // One name, one thing: no two public types of the facade share a name.
    eprintln!("==> cargo xtask public-names");
    crate::public_names::run(&[])?;

    // Inside each crate, no modules importing from each other in circles of more than three.
    eprintln!("==> cargo xtask module-circles");
    crate::module_circles::run(&[])?;

    // No hand-written library file over 1,000 lines, no function over 80.
    eprintln!("==> cargo xtask sizes");
    crate::sizes::run(&[])?;

    eprintln!("==> cargo xtask codegen --check");
    crate::codegen::run(&["--check".to_owned()])?;

    // The CRD example's generated types match its CRD.
    let crd_example = crate::workspace_root().join("examples/crd_controller");
    eprintln!("==> cargo xtask codegen crd examples/crd_controller/crontab.yaml --check");
    crate::codegen::run(&[
        "crd".to_owned(),
        crd_example.join("crontab.yaml").display().to_string(),
        "--out".to_owned(),
        crd_example.join("generated").display().to_string(),
        "--check".to_owned(),
    ])?;

    // The types codegen makes from the derive's golden CRDs match them (kclient-derive-tests'
    // tests/codegen.rs checks that they read and write what the derived types do).
    let derive_tests = crate::workspace_root().join("crates/kclient-derive-tests/tests");
    eprintln!(
        "==> cargo xtask codegen crd crates/kclient-derive-tests/tests/golden/*.yaml --check"
    );
    let mut args = vec!["crd".to_owned()];
    for name in DERIVE_GOLDEN_CRDS {
        let yaml = derive_tests.join("golden").join(format!("{name}.yaml"));
        args.push(yaml.display().to_string());
    }
    args.extend([
        "--out".to_owned(),
        derive_tests.join("generated").display().to_string(),
        "--check".to_owned(),
    ]);
    crate::codegen::run(&args)?;

    let mut clippy = cargo();
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--features",
        TEST_FEATURES,
    ]);
    clippy.args(["--", "-D", "warnings"]);
    step("cargo clippy -D warnings", clippy)?;

    // Every published crate packages, and the docs' dependency lines resolve (no build;
    // offline, so after a step that has fetched every dependency: on a machine with an
    // empty cargo cache nothing else would have).
    eprintln!("==> cargo xtask publish-check");
    crate::publish::run(&[])?;

    // The facade with no layer and with each layer alone (about 4 s warm, 2–3 min cold on
    // two cores), so that no layer needs another one's feature.
    eprintln!("==> cargo xtask check-features");
    crate::check_features::run(&[])?;

    // Unit, integration and example/bench targets compile and run; then the doc tests.
    let mut tests = cargo();
    tests.arg("test").args(TESTED_PACKAGES).arg("--all-targets");
    step("cargo test (all targets)", tests)?;

    // The peer benchmark harness in its smoke mode (tiny sizes, kclient only, no timing
    // checked): it stays buildable and runnable without measuring anything.
    eprintln!("==> cargo xtask bench --smoke");
    crate::bench::run(&["--smoke".to_owned()])?;

    // envtest-greeter has no doc test.
    let mut doc_tests = cargo();
    doc_tests.arg("test").args(TESTED_PACKAGES).arg("--doc");
    step("cargo test --doc", doc_tests)?;

    let mut docs = cargo();
    docs.args([
        "doc",
        "--workspace",
        "--no-deps",
        "--features",
        TEST_FEATURES,
    ]);
    docs.env("RUSTDOCFLAGS", "-D warnings");
    step("cargo doc (warnings are errors)", docs)?;

    ensure_cargo_deny()?;
    let mut deny = cargo();
    deny.args([
        "deny",
        "--all-features",
        "check",
        "licenses",
        "bans",
        "sources",
    ]);
    step("cargo deny check licenses bans sources", deny)?;

    // Last, the end-to-end suite against a real kube-apiserver (built once, then cached).
    if env::var_os(SKIP_E2E_ENV).is_some_and(|v| !v.is_empty() && v != "0") {
        eprintln!(
            "==> e2e suite SKIPPED: {SKIP_E2E_ENV} is set (CI never sets it; unset it to run \
             the suite against a real kube-apiserver)"
        );
    } else {
        eprintln!("==> cargo xtask e2e test");
        let e2e_started = Instant::now();
        e2e::test(&[])?;
        eprintln!(
            "<== cargo xtask e2e test: ok in {:.1}s",
            e2e_started.elapsed().as_secs_f64()
        );
    }

    eprintln!(
        "xtask test: all steps passed in {:.0}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Installs cargo-deny (from crates.io, pinned) when it is missing.
fn ensure_cargo_deny() -> Result<()> {
    let present = cargo()
        .args(["deny", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if present {
        return Ok(());
    }
    let mut install = cargo();
    install.args([
        "install",
        "cargo-deny",
        "--locked",
        "--version",
        CARGO_DENY_VERSION,
    ]);
    step("cargo install cargo-deny", install)
}

/// The cargo-deny release the checks are written for.
const CARGO_DENY_VERSION: &str = "0.20.2";
