//! [`LoadingRules`]: which kubeconfig files to read and how to merge them (client-go's
//! `clientcmd.ClientConfigLoadingRules`).

use std::path::{Path, PathBuf};

use super::{Kubeconfig, KubeconfigError};

/// The environment variable with a list of kubeconfig files (`KUBECONFIG`).
pub const KUBECONFIG_ENV: &str = "KUBECONFIG";
/// The directory under the home directory that holds the default kubeconfig (`.kube`).
pub const RECOMMENDED_HOME_DIR: &str = ".kube";
/// The default kubeconfig's file name (`config`).
pub const RECOMMENDED_FILE_NAME: &str = "config";

/// Which kubeconfig files to load, in order of precedence.
///
/// - With an explicit path, only that file is read, and it must exist.
/// - Otherwise every file of `precedence` that exists is read (missing files are skipped), and
///   they are merged: the first file to define a cluster, user, context or extension name wins
///   (whole entries, never field by field), and the first file to set `current-context` wins.
///
/// [`LoadingRules::from_env`] builds kubectl's default rules: the `KUBECONFIG` list
/// (deduplicated) if set, else `~/.kube/config`.
///
/// ```no_run
/// use kclient_rest::kubeconfig::LoadingRules;
///
/// let kubeconfig = LoadingRules::from_env().load().unwrap();
/// println!("current context: {:?}", kubeconfig.current_context);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadingRules {
    /// A file that must exist and is the only one read (kubectl's `--kubeconfig`).
    pub explicit_path: Option<PathBuf>,
    /// Files to merge when there is no explicit path, first has precedence.
    pub precedence: Vec<PathBuf>,
}

impl LoadingRules {
    /// kubectl's default rules: the `KUBECONFIG` list if the variable is set and not empty, else
    /// `~/.kube/config`.
    pub fn from_env() -> Self {
        match std::env::var_os(KUBECONFIG_ENV) {
            Some(list) if !list.is_empty() => Self::from_path_list(&list),
            _ => Self {
                explicit_path: None,
                precedence: recommended_home_file().into_iter().collect(),
            },
        }
    }

    /// Rules for a `KUBECONFIG`-style list (`:`-separated, `;` on Windows): empty entries are
    /// dropped and repeated files are kept once, at their first position.
    pub fn from_path_list(list: &std::ffi::OsStr) -> Self {
        let mut precedence: Vec<PathBuf> = Vec::new();
        for path in std::env::split_paths(list) {
            if path.as_os_str().is_empty() || precedence.contains(&path) {
                continue;
            }
            precedence.push(path);
        }
        Self {
            explicit_path: None,
            precedence,
        }
    }

    /// Rules that read exactly `path`.
    pub fn explicit(path: impl Into<PathBuf>) -> Self {
        Self {
            explicit_path: Some(path.into()),
            precedence: Vec::new(),
        }
    }

    /// Loads and merges the files. Missing files of the precedence list are skipped; an
    /// unreadable or unparsable file is an error naming it.
    pub fn load(&self) -> Result<Kubeconfig, KubeconfigError> {
        self.load_reporting_missing().map(|(kc, _)| kc)
    }

    /// Like [`load`](Self::load), also returning the files that were not found.
    pub(crate) fn load_reporting_missing(
        &self,
    ) -> Result<(Kubeconfig, Vec<PathBuf>), KubeconfigError> {
        if let Some(path) = &self.explicit_path {
            if !path.exists() {
                return Err(KubeconfigError::ExplicitFileMissing(path.clone()));
            }
            return Ok((Kubeconfig::read_from(path)?, Vec::new()));
        }
        let mut merged = Kubeconfig::default();
        let mut missing = Vec::new();
        let mut found_any = false;
        for path in &self.precedence {
            match Kubeconfig::read_from(path) {
                Ok(kc) => {
                    found_any = true;
                    merged = merged.merge(kc);
                }
                Err(KubeconfigError::Read { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    missing.push(path.clone());
                }
                Err(e) => return Err(e),
            }
        }
        if !found_any && !missing.is_empty() {
            tracing::debug!(missing = ?missing, "no kubeconfig file found");
        }
        Ok((merged, missing))
    }

    /// Whether any file these rules name exists.
    pub fn any_file_exists(&self) -> bool {
        match &self.explicit_path {
            Some(p) => p.exists(),
            None => self.precedence.iter().any(|p| Path::new(p).exists()),
        }
    }
}

/// `~/.kube/config`, if there is a home directory.
pub(crate) fn recommended_home_file() -> Option<PathBuf> {
    home_dir().map(|h| h.join(RECOMMENDED_HOME_DIR).join(RECOMMENDED_FILE_NAME))
}

/// The home directory: `$HOME`, else (on Windows) `%USERPROFILE%`.
fn home_dir() -> Option<PathBuf> {
    let from = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    from("HOME").or_else(|| from("USERPROFILE"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_lists_are_split_and_deduplicated() {
        let sep = if cfg!(windows) { ";" } else { ":" };
        let list = ["/a", "", "/b", "/a", "/c"].join(sep);
        let rules = LoadingRules::from_path_list(list.as_ref());
        assert_eq!(
            rules.precedence,
            vec![
                PathBuf::from("/a"),
                PathBuf::from("/b"),
                PathBuf::from("/c")
            ]
        );
        assert_eq!(rules.explicit_path, None);
    }

    #[test]
    fn the_default_file_is_under_the_home_directory() {
        if let Some(file) = recommended_home_file() {
            assert!(file.ends_with(".kube/config"), "{}", file.display());
        }
        assert_eq!(KUBECONFIG_ENV, "KUBECONFIG");
        assert_eq!(RECOMMENDED_HOME_DIR, ".kube");
        assert_eq!(RECOMMENDED_FILE_NAME, "config");
    }
}
