//! `cargo xtask public-names`: no two public types of the facade's crates share a name.
//!
//! One name, one thing: a reader who meets `Controller` or `Store` in kclient's docs, in an
//! error message or in a `use` line knows which one is meant. The check reads the crates'
//! sources (no build): every `pub struct`, `enum`, `trait`, `type` and `union` that a user
//! can reach — declared in a chain of `pub mod`s, or named by a `pub use` of its crate (an
//! `as` rename counts as a name of its own) — outside tests, generated code (whose names are
//! Kubernetes') and items marked `#[deprecated]` (the old names kept for a release). A name
//! declared twice fails the check unless [`SHARED`] lists it with the reason.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::rust_source::library_files;

/// Names more than one public item may carry, and why a reader is not misled.
const SHARED: &[(&str, &str)] = &[
    (
        "Error",
        "each crate's own error type, always read with its crate (`kclient::rest::Error`), the Rust convention",
    ),
    (
        "Selector",
        "apimachinery's labels and fields packages both have one; read as `labels::Selector` / `fields::Selector`",
    ),
    (
        "Requirement",
        "apimachinery's labels and fields packages both have one; read as `labels::Requirement` / `fields::Requirement`",
    ),
    (
        "Operator",
        "apimachinery's labels and fields packages both have one; read as `labels::Operator` / `fields::Operator`",
    ),
];

/// A public type's name and where it is declared.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Declaration {
    name: String,
    place: String,
}

pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(unknown) = args.first() {
        bail!("`cargo xtask public-names` takes no arguments (got {unknown:?})");
    }
    let root = crate::workspace_root();
    let mut declarations = Vec::new();
    for krate in facade_crates() {
        declarations.extend(crate_declarations(
            &root.join("crates").join(krate).join("src"),
        )?);
    }
    let clashes = clashes(&declarations);
    if !clashes.is_empty() {
        let mut report = String::new();
        for (name, places) in &clashes {
            report.push_str(&format!("\n  {name}: {}", places.join(", ")));
        }
        bail!(
            "public types of the facade share a name (rename one, keep the old name as a \
             #[deprecated] alias, or list the name in xtask/src/public_names.rs with why):{report}"
        );
    }
    eprintln!(
        "public-names: {} public types, no name shared but {}",
        declarations.len(),
        SHARED
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// Crates the facade depends on without re-exporting them: kclient-protobuf, whose API-group
/// features it forwards.
const NOT_REEXPORTED: &[&str] = &["kclient-protobuf"];

/// The facade and the crates it re-exports (the facade's row of the layering allow-list, less
/// [`NOT_REEXPORTED`]).
fn facade_crates() -> Vec<&'static str> {
    let (_, layers) = crate::layering::ALLOWED
        .iter()
        .find(|(from, _)| *from == "kclient")
        .expect("the layering allow-list has the facade");
    std::iter::once("kclient")
        .chain(
            layers
                .iter()
                .copied()
                .filter(|c| !NOT_REEXPORTED.contains(c)),
        )
        .collect()
}

/// The names declared more than once and not in [`SHARED`], with their places.
fn clashes(declarations: &[Declaration]) -> BTreeMap<String, Vec<String>> {
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for declaration in declarations {
        by_name
            .entry(declaration.name.clone())
            .or_default()
            .push(declaration.place.clone());
    }
    by_name.retain(|name, places| places.len() > 1 && !SHARED.iter().any(|(n, _)| n == name));
    by_name
}

/// The public types of the crate whose `src` directory is `src`.
fn crate_declarations(src: &Path) -> Result<Vec<Declaration>> {
    let sources = library_files(src)?;
    let mut reexported = BTreeSet::new();
    let mut declarations = Vec::new();
    for (file, code) in &sources {
        let (names, renames) = reexports(code);
        reexported.extend(names);
        declarations.extend(renames.into_iter().map(|name| Declaration {
            name,
            place: place(file),
        }));
    }
    let sources: BTreeMap<PathBuf, String> = sources.into_iter().collect();
    for (file, code) in &sources {
        let public_module = module_is_public(src, file, &sources);
        for (name, line) in declared_types(code) {
            if public_module || reexported.contains(&name) {
                declarations.push(Declaration {
                    name,
                    place: format!("{}:{line}", place(file)),
                });
            }
        }
    }
    Ok(declarations)
}

/// `path` from the workspace's `crates/` on, for messages.
fn place(path: &Path) -> String {
    let text = path.display().to_string();
    match text.find("crates/") {
        Some(at) => text[at..].to_owned(),
        None => text,
    }
}

/// The public, non-deprecated types a file declares, with their line numbers.
fn declared_types(text: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let mut deprecated = false;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[deprecated") {
            deprecated = true;
            continue;
        }
        if let Some(name) = declared_type(trimmed) {
            if !deprecated {
                found.push((name, index + 1));
            }
        }
        // An attribute or a comment (or an attribute's continued lines) leaves the flag
        // for the item that follows; any item ends it.
        if starts_item(trimmed) {
            deprecated = false;
        }
    }
    found
}

/// Whether a line starts an item (the end of the attributes before it).
fn starts_item(line: &str) -> bool {
    let line = line.strip_prefix("pub(crate) ").unwrap_or(line);
    let line = line.strip_prefix("pub ").unwrap_or(line);
    [
        "struct ",
        "enum ",
        "trait ",
        "type ",
        "union ",
        "fn ",
        "async fn ",
        "impl",
        "mod ",
        "use ",
        "const ",
        "static ",
    ]
    .iter()
    .any(|start| line.starts_with(start))
}

/// The name a line declares as a public type (`pub struct Name…`), if it does.
fn declared_type(line: &str) -> Option<String> {
    let rest = line.strip_prefix("pub ")?;
    let rest = ["struct ", "enum ", "trait ", "type ", "union "]
        .iter()
        .find_map(|kind| rest.strip_prefix(kind))?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The names a file's `pub use` statements make public (the last segment of each path), and
/// the new names they give (`… as Name`).
fn reexports(text: &str) -> (Vec<String>, Vec<String>) {
    let (mut names, mut renames) = (Vec::new(), Vec::new());
    let mut rest = text;
    while let Some(at) = rest.find("pub use ") {
        let start = &rest[at + "pub use ".len()..];
        let end = start.find(';').unwrap_or(start.len());
        let statement = &start[..end];
        rest = &start[end..];
        for element in statement.split([',', '{', '}']) {
            let words: Vec<&str> = element.split_whitespace().collect();
            match words.as_slice() {
                [_, "as", alias] if *alias != "_" => renames.push((*alias).to_owned()),
                [path] => {
                    let last = path.rsplit("::").next().unwrap_or(path);
                    if !last.is_empty() {
                        names.push(last.to_owned());
                    }
                }
                _ => {}
            }
        }
    }
    (names, renames)
}

/// Whether every module from the crate root down to `file` is declared `pub mod`.
fn module_is_public(src: &Path, file: &Path, sources: &BTreeMap<PathBuf, String>) -> bool {
    let Ok(relative) = file.strip_prefix(src) else {
        return false;
    };
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    let mut parent = src.join("lib.rs");
    let mut dir = src.to_path_buf();
    for part in parts {
        let Some(text) = sources.get(&parent) else {
            return false;
        };
        if !declares_pub_mod(text, &part) {
            return false;
        }
        dir = dir.join(&part);
        parent = if dir.join("mod.rs").exists() {
            dir.join("mod.rs")
        } else {
            dir.with_extension("rs")
        };
    }
    true
}

/// Whether `text` declares `pub mod name`.
fn declares_pub_mod(text: &str, name: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim();
        line == format!("pub mod {name};") || line == format!("pub mod {name} {{")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_are_public_non_deprecated_types() {
        let text = "pub struct A;\npub(crate) struct B;\n#[deprecated(\n    note = \"x\"\n)]\npub type C = A;\n\
                    /// pub struct D;\n#[derive(Debug)]\npub enum E {}\npub fn f() {}\npub trait G {}\n";
        let names: Vec<String> = declared_types(text).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["A", "E", "G"]);
    }

    #[test]
    fn reexports_give_last_segments_and_renames() {
        let text = "pub use a::{B, c::D as E};\npub use f::G;\n//! pub use h::I;\nuse j::K;\n";
        let (names, renames) = reexports(&crate::rust_source::code_of(text));
        assert_eq!(names, ["B", "G"]);
        assert_eq!(renames, ["E"]);
    }

    #[test]
    fn shared_names_need_a_reason() {
        let at = |name: &str, place: &str| Declaration {
            name: name.into(),
            place: place.into(),
        };
        let found = clashes(&[
            at("Store", "a.rs:1"),
            at("Store", "b.rs:2"),
            at("Error", "a.rs:3"),
            at("Error", "b.rs:4"),
            at("Alone", "c.rs:5"),
        ]);
        assert_eq!(found.len(), 1);
        assert_eq!(found["Store"], ["a.rs:1", "b.rs:2"]);
    }

    #[test]
    fn the_facade_crates_are_read() {
        let crates = facade_crates();
        assert!(crates.contains(&"kclient") && crates.contains(&"kclient-controller"));
    }
}
