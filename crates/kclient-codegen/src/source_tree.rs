//! Walking the source trees the generator reads (k8s-openapi's crate, the Kubernetes Go
//! modules): the files under a directory, and k8s-openapi's files with their module paths.

use std::path::{Path, PathBuf};

use crate::error::Error;

/// The files under `dir` (recursively) that `keep` keeps, in path order.
pub(crate) fn files_under(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    walk(dir, keep, &mut files)?;
    files.sort();
    Ok(files)
}

fn walk(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.is_dir() {
            walk(&path, keep, out)?;
        } else if keep(&path) {
            out.push(path);
        }
    }
    Ok(())
}

/// Hands every `.rs` file of one version of k8s-openapi's source (`…/src/v1_37`), in path
/// order, to `each` with its module path under the version (`["api", "core", "v1"]`).
pub(crate) fn each_k8s_openapi_file(
    version_dir: &Path,
    mut each: impl FnMut(&[String], &str),
) -> Result<(), Error> {
    let rust = |p: &Path| p.extension().is_some_and(|e| e == "rs");
    for file in files_under(version_dir, &rust)? {
        let source = std::fs::read_to_string(&file).map_err(|e| Error::io(&file, e))?;
        let module: Vec<String> = file
            .strip_prefix(version_dir)
            .unwrap_or(&file)
            .parent()
            .map(|p| {
                p.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        each(&module, &source);
    }
    Ok(())
}
