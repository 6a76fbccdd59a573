//! Where the binaries come from, in this order:
//!
//! 1. the directory given to
//!    [`EnvironmentBuilder::binary_assets_directory`](crate::EnvironmentBuilder::binary_assets_directory);
//! 2. `KUBEBUILDER_ASSETS`: a directory holding `etcd`, `kube-apiserver` and `kubectl`, as
//!    controller-runtime's `setup-envtest use -p path` prints one
//!    (`~/.local/share/kubebuilder-envtest/k8s/1.37.1-linux-amd64`);
//! 3. kclient's own build cache, where `cargo xtask e2e build` puts the binaries it builds
//!    from the Kubernetes Go module: `<root>/<version>/bin` (the version asked for, else the
//!    newest there), the root being `$KCLIENT_E2E_CACHE`, else `$XDG_CACHE_HOME/kclient/e2e`,
//!    else `~/.cache/kclient/e2e`.
//!
//! An explicit directory wins over `KUBEBUILDER_ASSETS` (controller-runtime lets the
//! variable win): a test that names its binaries means those.

use std::env;
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::Error;

/// The variable naming setup-envtest's directory of binaries.
pub const KUBEBUILDER_ASSETS: &str = "KUBEBUILDER_ASSETS";
/// The variable moving kclient's build cache (`cargo xtask e2e` honours it too).
pub const KCLIENT_CACHE_ENV: &str = "KCLIENT_E2E_CACHE";

/// etcd's file name.
pub const ETCD: &str = "etcd";
/// kube-apiserver's file name.
pub const KUBE_APISERVER: &str = "kube-apiserver";
/// kube-controller-manager's file name (kclient's build has it; setup-envtest's has not).
pub const KUBE_CONTROLLER_MANAGER: &str = "kube-controller-manager";
/// kubectl's file name.
pub const KUBECTL: &str = "kubectl";

/// How long `kube-apiserver --version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a directory of binaries came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// Given to `binary_assets_directory`.
    Explicit,
    /// The `KUBEBUILDER_ASSETS` variable.
    KubebuilderAssets,
    /// kclient's build cache.
    KclientCache,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Explicit => "EnvironmentBuilder::binary_assets_directory",
            Origin::KubebuilderAssets => KUBEBUILDER_ASSETS,
            Origin::KclientCache => "kclient's build cache",
        })
    }
}

/// The directory of binaries an environment runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryAssets {
    directory: PathBuf,
    origin: Origin,
}

impl BinaryAssets {
    /// The directory.
    pub fn directory(&self) -> &Path {
        &self.directory
    }

    /// Where it came from.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The path of the binary `name` in it (which may not exist).
    pub fn path(&self, name: &str) -> PathBuf {
        self.directory.join(name)
    }

    /// The kubectl of the directory, if it has one.
    pub fn kubectl(&self) -> Option<PathBuf> {
        Some(self.path(KUBECTL)).filter(|p| p.is_file())
    }
}

/// kclient's build cache root: `$KCLIENT_E2E_CACHE`, else `$XDG_CACHE_HOME/kclient/e2e`,
/// else `$HOME/.cache/kclient/e2e`; `None` when none of the three is set.
pub fn kclient_cache_root() -> Option<PathBuf> {
    let var = |name: &str| {
        env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var(KCLIENT_CACHE_ENV)
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("kclient").join("e2e")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("kclient").join("e2e")))
}

/// The directory of kclient's build of one Kubernetes version (`v1.37.1`) under `root`.
pub fn kclient_cache_bin_dir(root: &Path, kubernetes_version: &str) -> PathBuf {
    root.join(kubernetes_version).join("bin")
}

/// What the look-up is given: the builder's directory and version, and the environment's
/// variables (read by [`Lookup::from_env`], given directly by tests).
#[derive(Debug, Default)]
pub(crate) struct Lookup {
    pub(crate) explicit: Option<PathBuf>,
    pub(crate) kubebuilder_assets: Option<OsString>,
    pub(crate) cache_root: Option<PathBuf>,
    pub(crate) version: Option<String>,
}

impl Lookup {
    pub(crate) fn from_env(explicit: Option<PathBuf>, version: Option<String>) -> Self {
        Lookup {
            explicit,
            kubebuilder_assets: env::var_os(KUBEBUILDER_ASSETS).filter(|v| !v.is_empty()),
            cache_root: kclient_cache_root(),
            version,
        }
    }

    /// The directory to use, holding every binary of `needed`.
    pub(crate) fn locate(&self, needed: &[&str]) -> Result<BinaryAssets, Error> {
        let found = if let Some(dir) = &self.explicit {
            (dir.clone(), Origin::Explicit)
        } else if let Some(dir) = &self.kubebuilder_assets {
            (PathBuf::from(dir), Origin::KubebuilderAssets)
        } else if let Some(dir) = self.in_cache() {
            (dir, Origin::KclientCache)
        } else {
            let cache = match (&self.cache_root, &self.version) {
                (Some(root), Some(v)) => kclient_cache_bin_dir(root, v).display().to_string(),
                (Some(root), None) => format!("{}/<version>/bin", root.display()),
                (None, _) => "no cache root: HOME is unset".to_owned(),
            };
            return Err(Error::BinariesNotFound {
                searched: format!(
                    "no binary_assets_directory given, {KUBEBUILDER_ASSETS} unset, none in {cache}"
                ),
            });
        };
        let (directory, origin) = found;
        for binary in needed {
            if !directory.join(binary).is_file() {
                return Err(Error::BinaryMissing {
                    binary: (*binary).to_owned(),
                    directory,
                    origin: origin.to_string(),
                    help: missing_help(binary),
                });
            }
        }
        Ok(BinaryAssets { directory, origin })
    }

    /// The newest build in kclient's cache (of the version asked for, if one was) that has a
    /// kube-apiserver.
    fn in_cache(&self) -> Option<PathBuf> {
        let root = self.cache_root.as_ref()?;
        let mut builds: Vec<(Vec<u64>, PathBuf)> = fs::read_dir(root)
            .ok()?
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let version = entry.file_name().to_string_lossy().into_owned();
                let bin = kclient_cache_bin_dir(root, &version);
                let wanted = self
                    .version
                    .as_deref()
                    .is_none_or(|asked| version_matches(asked, &version));
                (version.starts_with('v') && wanted && bin.join(KUBE_APISERVER).is_file())
                    .then(|| (version_key(&version), bin))
            })
            .collect();
        builds.sort();
        builds.pop().map(|(_, bin)| bin)
    }
}

fn missing_help(binary: &str) -> String {
    if binary == KUBE_CONTROLLER_MANAGER {
        "setup-envtest's directories have no kube-controller-manager: use kclient's build \
         (`cargo xtask e2e build`) or leave `controller_manager` off"
            .to_owned()
    } else {
        format!(
            "a directory of binaries holds etcd, kube-apiserver and kubectl \
             (`setup-envtest use -p path` prints one); put {binary} there or point at another"
        )
    }
}

/// `v1.37.1` → `[1, 37, 1]` (what is not a number counts as 0).
fn version_key(version: &str) -> Vec<u64> {
    version
        .trim_start_matches('v')
        .split('.')
        .map(|part| part.parse().unwrap_or(0))
        .collect()
}

/// Whether a binary reporting `found` is the version `asked` (`1.37.1`, `v1.37.1`, or a
/// prefix of whole components such as `1.37`).
pub(crate) fn version_matches(asked: &str, found: &str) -> bool {
    let asked = asked.trim_start_matches('v');
    let found = found.trim_start_matches('v');
    found == asked
        || found
            .strip_prefix(asked)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// Checks that `kube-apiserver --version` reports `asked` (within a bounded wait).
pub(crate) async fn check_version(apiserver: &Path, asked: &str) -> Result<(), Error> {
    let version_error = |reason: String| Error::Version {
        binary: apiserver.to_path_buf(),
        reason,
    };
    let output = tokio::process::Command::new(apiserver)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(VERSION_TIMEOUT, output)
        .await
        .map_err(|_| version_error(format!("no answer within {VERSION_TIMEOUT:?}")))?
        .map_err(|e| version_error(e.to_string()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    // "Kubernetes v1.37.1"
    let found = match text.trim().strip_prefix("Kubernetes ") {
        Some(found) if output.status.success() => found.to_owned(),
        _ => {
            return Err(version_error(format!(
                "`--version` answered {:?} ({})",
                text.trim(),
                output.status
            )))
        }
    };
    if version_matches(asked, &found) {
        Ok(())
    } else {
        Err(Error::VersionMismatch {
            binary: apiserver.to_path_buf(),
            expected: asked.to_owned(),
            found,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(names: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for name in names {
            fs::write(dir.path().join(name), "").unwrap();
        }
        dir
    }

    #[test]
    fn an_explicit_directory_wins_over_kubebuilder_assets_and_the_cache() {
        let explicit = dir_with(&[ETCD, KUBE_APISERVER]);
        let assets = dir_with(&[ETCD, KUBE_APISERVER]);
        let lookup = Lookup {
            explicit: Some(explicit.path().to_path_buf()),
            kubebuilder_assets: Some(assets.path().into()),
            ..Lookup::default()
        };
        let found = lookup.locate(&[ETCD, KUBE_APISERVER]).unwrap();
        assert_eq!(
            (found.directory(), found.origin()),
            (explicit.path(), Origin::Explicit)
        );
        let lookup = Lookup {
            explicit: None,
            ..lookup
        };
        let found = lookup.locate(&[ETCD, KUBE_APISERVER]).unwrap();
        assert_eq!(
            (found.directory(), found.origin()),
            (assets.path(), Origin::KubebuilderAssets)
        );
    }

    #[test]
    fn the_cache_gives_the_newest_build_or_the_version_asked_for() {
        let root = tempfile::tempdir().unwrap();
        for version in ["v1.9.0", "v1.37.1", "v1.36.3"] {
            let bin = kclient_cache_bin_dir(root.path(), version);
            fs::create_dir_all(&bin).unwrap();
            fs::write(bin.join(KUBE_APISERVER), "").unwrap();
            fs::write(bin.join(ETCD), "").unwrap();
        }
        // Not a build: no kube-apiserver.
        fs::create_dir_all(kclient_cache_bin_dir(root.path(), "v2.0.0")).unwrap();
        let mut lookup = Lookup {
            cache_root: Some(root.path().to_path_buf()),
            ..Lookup::default()
        };
        let newest = lookup.locate(&[ETCD]).unwrap();
        assert_eq!(
            newest.directory(),
            kclient_cache_bin_dir(root.path(), "v1.37.1")
        );
        assert_eq!(newest.origin(), Origin::KclientCache);
        lookup.version = Some("1.36".into());
        assert_eq!(
            lookup.locate(&[ETCD]).unwrap().directory(),
            kclient_cache_bin_dir(root.path(), "v1.36.3")
        );
        lookup.version = Some("v1.35.0".into());
        let err = lookup.locate(&[ETCD]).unwrap_err();
        assert!(matches!(err, Error::BinariesNotFound { .. }), "{err}");
        assert!(err.to_string().contains("v1.35.0/bin"), "{err}");
    }

    #[test]
    fn nothing_found_says_where_it_looked_and_what_to_do() {
        let lookup = Lookup::default();
        let err = lookup.locate(&[ETCD]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("KUBEBUILDER_ASSETS unset"), "{text}");
        assert!(text.contains("setup-envtest use -p path"), "{text}");
        assert!(text.contains("cargo xtask e2e build"), "{text}");
    }

    #[test]
    fn a_missing_binary_is_named_with_its_directory() {
        let assets = dir_with(&[ETCD, KUBE_APISERVER, KUBECTL]);
        let lookup = Lookup {
            kubebuilder_assets: Some(assets.path().into()),
            ..Lookup::default()
        };
        let err = lookup
            .locate(&[ETCD, KUBE_APISERVER, KUBE_CONTROLLER_MANAGER])
            .unwrap_err();
        match &err {
            Error::BinaryMissing {
                binary,
                directory,
                origin,
                ..
            } => {
                assert_eq!(binary, KUBE_CONTROLLER_MANAGER);
                assert_eq!(directory, assets.path());
                assert_eq!(origin, KUBEBUILDER_ASSETS);
            }
            other => panic!("{other}"),
        }
        assert!(err.to_string().contains("leave `controller_manager` off"));
    }

    #[test]
    fn versions_match_whole_components() {
        assert!(version_matches("1.37.1", "v1.37.1"));
        assert!(version_matches("v1.37", "v1.37.1"));
        assert!(!version_matches("1.3", "v1.37.1"));
        assert!(!version_matches("1.37.2", "v1.37.1"));
        assert!(version_key("v1.37.1") > version_key("v1.9.0"));
    }
}
