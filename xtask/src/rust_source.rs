//! The hand-written Rust of a crate, as the source checks (`public-names`, `module-circles`)
//! read it: the library's files without generated code, binaries and tests, and each file's
//! code without its test module and comment lines.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The directories of the workspace's crates that have a `src/` (`crates/*`), in order.
pub(crate) fn crate_dirs() -> Result<Vec<PathBuf>> {
    let crates = crate::workspace_root().join("crates");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&crates)
        .with_context(|| format!("reading {}", crates.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    dirs.retain(|dir| dir.join("src").is_dir());
    dirs.sort();
    Ok(dirs)
}

/// The `.rs` files below `src` (a crate's source directory) with their code (see
/// [`code_of`]): not `generated/`, `tests/` or `bin/`, not `tests.rs`, not a binary's
/// `main.rs`.
pub(crate) fn library_files(src: &Path) -> Result<Vec<(PathBuf, String)>> {
    let mut files = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let path = entry?.path();
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "generated" | "tests" | "bin") {
                    dirs.push(path);
                }
                continue;
            }
            if !name.ends_with(".rs") || name == "tests.rs" || (dir == src && name == "main.rs") {
                continue;
            }
            let text =
                fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            files.push((path, code_of(&text)));
        }
    }
    files.sort();
    Ok(files)
}

/// A file's code: up to its `#[cfg(test)]` test module, without comment lines (doc
/// comments included: their examples declare and import nothing of the crate).
pub(crate) fn code_of(text: &str) -> String {
    let mut code = String::new();
    for line in without_test_module(text).lines() {
        if !line.trim().starts_with("//") {
            code.push_str(line);
            code.push('\n');
        }
    }
    code
}

/// A file's text up to its `#[cfg(test)]` test module (which is cut with its attribute).
pub(crate) fn without_test_module(text: &str) -> &str {
    // Where the last non-blank line began, and that line.
    let mut previous = (0, "");
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if previous.1 == "#[cfg(test)]"
            && (trimmed.starts_with("mod tests") || trimmed.starts_with("pub(crate) mod tests"))
        {
            return &text[..previous.0];
        }
        if !trimmed.is_empty() && !trimmed.starts_with("//") {
            previous = (at, trimmed);
        }
        at += line.len();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_modules_and_comments_are_left_out() {
        let text =
            "pub struct A;\n/// pub struct B;\n#[cfg(test)]\nmod tests {\n    pub struct C;\n}\n";
        assert_eq!(code_of(text), "pub struct A;\n");
    }
}
