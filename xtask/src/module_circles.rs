//! `cargo xtask module-circles` (a step of `cargo xtask test`): no crate has a circle of more
//! than [`MAX_CIRCLE`] modules that import from each other.
//!
//! The crates' layering is checked by `cargo xtask layering`; this is the same rule one level
//! down, inside each crate: a module that reaches back into the modules that use it (a handler
//! importing its dispatcher's request type, an error type importing the config that returns
//! it) makes a room nobody can read one file of. The check reads the sources (no build):
//! module A depends on module B when A names an item of B — through a `use` of `crate::…` or
//! `super::…`, or such a path in its code — where B is the module that defines the item
//! (re-exports of a child's items by its parent are followed to the child). Test modules
//! (`#[cfg(test)] mod tests`, `tests.rs`), comments and generated code are left out. The
//! strongly connected modules of each crate are then found, and any set larger than
//! [`MAX_CIRCLE`] fails the check, named module by module.

use std::collections::{BTreeMap, BTreeSet};

use std::path::Path;

use anyhow::{bail, Result};

use crate::rust_source::{crate_dirs, library_files};

/// The largest circle of modules a crate may have (three, as docs/architecture.md says).
const MAX_CIRCLE: usize = 3;

/// A module's path inside its crate (`["streaming", "exec"]`; empty for the crate root).
type ModulePath = Vec<String>;

pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(unknown) = args.first() {
        bail!("`cargo xtask module-circles` takes no arguments (got {unknown:?})");
    }
    let mut report = String::new();
    let mut checked = 0;
    for dir in crate_dirs()? {
        let src = dir.join("src");
        checked += 1;
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        for circle in circles(&read_modules(&src)?) {
            let names: Vec<String> = circle.iter().map(display).collect();
            report.push_str(&format!(
                "\n  {name}: {} modules: {}",
                circle.len(),
                names.join(", ")
            ));
        }
    }
    if !report.is_empty() {
        bail!(
            "modules that import from each other in circles of more than {MAX_CIRCLE} (move the \
             items both sides need into a module below them):{report}"
        );
    }
    eprintln!("module-circles: {checked} crates, no circle of more than {MAX_CIRCLE} modules");
    Ok(())
}

fn display(module: &ModulePath) -> String {
    if module.is_empty() {
        "lib".to_owned()
    } else {
        module.join("::")
    }
}

/// Each module of the crate whose sources are in `src`, with its code.
fn read_modules(src: &Path) -> Result<BTreeMap<ModulePath, String>> {
    let mut modules = BTreeMap::new();
    for (path, code) in library_files(src)? {
        let relative = path.strip_prefix(src).unwrap_or(&path);
        let mut module: ModulePath = relative
            .parent()
            .into_iter()
            .flat_map(Path::iter)
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let stem = relative.file_stem().unwrap_or_default().to_string_lossy();
        if stem != "mod" && stem != "lib" {
            module.push(stem.into_owned());
        }
        modules.insert(module, code);
    }
    Ok(modules)
}

/// The paths a text's `use` statements bring in, braces expanded
/// (`use a::{b, c::d as e};` → `a::b`, `a::c::d`).
fn use_paths(text: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if let Some(tree) = use_statement_start(line) {
            let start = offset + (line.len() - tree.len());
            let end = text[start..].find(';').map_or(text.len(), |e| start + e);
            expand("", &without_renames(&text[start..end]), &mut paths);
        }
        offset += line.len();
    }
    paths
}

/// The use tree a line starts, when it starts a `use` item (`use`, `pub use`,
/// `pub(crate) use`): what follows the keyword.
fn use_statement_start(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    if let Some(after) = rest.strip_prefix("pub") {
        rest = after.trim_start();
        if rest.starts_with('(') {
            rest = rest[rest.find(')')? + 1..].trim_start();
        }
    }
    rest.strip_prefix("use ")
}

/// A use tree without whitespace and without its `as` renames (`c::d as e}` → `c::d}`).
fn without_renames(tree: &str) -> String {
    let mut out = String::new();
    let mut tokens = tree.split_whitespace();
    while let Some(token) = tokens.next() {
        if token == "as" {
            // Keep what closes the renamed item (`e},` → `},`).
            if let Some(name) = tokens.next() {
                out.extend(name.chars().filter(|c| !(c.is_alphanumeric() || *c == '_')));
            }
        } else {
            out.push_str(token);
        }
    }
    out
}

/// `prefix` + each path of a use tree `tree` (whitespace removed).
fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let Some(open) = tree.find('{') else {
        out.push(format!("{prefix}{tree}"));
        return;
    };
    let head = &tree[..open];
    let close = tree
        .rfind('}')
        .filter(|close| *close > open)
        .unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                if i > start {
                    expand(&format!("{prefix}{head}"), &inner[start..i], out);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < inner.len() {
        expand(&format!("{prefix}{head}"), &inner[start..], out);
    }
}

/// `text` without its `use` statements.
fn without_uses(text: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in text.split_inclusive('\n') {
        if !skipping && use_statement_start(line).is_some() {
            skipping = true;
        }
        if skipping {
            if let Some(end) = line.find(';') {
                out.push_str(&line[end + 1..]);
                skipping = false;
            }
            continue;
        }
        out.push_str(line);
    }
    out
}

/// The paths written in code outside `use` statements that start with `crate::` or
/// `super::` (`crate::errors::not_found(…)`).
fn inline_paths(text: &str) -> Vec<String> {
    let text = &without_uses(text);
    let mut paths = Vec::new();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = text[from..].find(start) {
            let at = from + at;
            let before = text[..at].chars().next_back();
            let end = text[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(text.len(), |e| at + e);
            if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':')) {
                paths.push(text[at..end].trim_end_matches(':').to_owned());
            }
            from = end.max(at + start.len());
        }
    }
    paths
}

/// The module an absolute path (segments after `crate`) leads to: the longest prefix that is
/// a module, followed through that module's re-exports of its children's items.
fn resolve(
    path: &[&str],
    modules: &BTreeMap<ModulePath, String>,
    reexports: &BTreeMap<ModulePath, BTreeMap<String, ModulePath>>,
) -> Option<ModulePath> {
    for n in (0..=path.len()).rev() {
        let mut module: ModulePath = path[..n].iter().map(|s| (*s).to_owned()).collect();
        if !modules.contains_key(&module) {
            continue;
        }
        let mut next = n;
        while let Some(child) = path
            .get(next)
            .and_then(|name| reexports.get(&module)?.get(*name))
        {
            module = child.clone();
            next += 1;
        }
        return Some(module);
    }
    None
}

/// The modules each module names items of.
fn dependencies(
    modules: &BTreeMap<ModulePath, String>,
) -> BTreeMap<ModulePath, BTreeSet<ModulePath>> {
    // A module's re-exports of its children's items: `pub use child::Item;`.
    let mut reexports: BTreeMap<ModulePath, BTreeMap<String, ModulePath>> = BTreeMap::new();
    for (module, text) in modules {
        for path in use_paths(text) {
            let segments: Vec<&str> = path
                .split("::")
                .filter(|s| !s.is_empty() && *s != "self")
                .collect();
            let [child, .., item] = segments.as_slice() else {
                continue;
            };
            let mut child_module = module.clone();
            child_module.push((*child).to_owned());
            if modules.contains_key(&child_module) {
                reexports
                    .entry(module.clone())
                    .or_default()
                    .insert((*item).to_owned(), child_module);
            }
        }
    }
    let mut edges = BTreeMap::new();
    for (module, text) in modules {
        let mut targets = BTreeSet::new();
        for path in use_paths(text).into_iter().chain(inline_paths(text)) {
            let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            let absolute: Vec<&str> = match segments.first() {
                Some(&"crate") => segments[1..].to_vec(),
                Some(&"super") => {
                    let ups = segments.iter().take_while(|s| **s == "super").count();
                    let Some(keep) = module.len().checked_sub(ups) else {
                        continue;
                    };
                    let mut absolute: Vec<&str> =
                        module[..keep].iter().map(String::as_str).collect();
                    absolute.extend(&segments[ups..]);
                    absolute
                }
                _ => continue,
            };
            if let Some(target) = resolve(&absolute, modules, &reexports) {
                if &target != module {
                    targets.insert(target);
                }
            }
        }
        edges.insert(module.clone(), targets);
    }
    edges
}

/// The sets of more than [`MAX_CIRCLE`] modules that all reach each other.
fn circles(modules: &BTreeMap<ModulePath, String>) -> Vec<Vec<ModulePath>> {
    let edges = dependencies(modules);
    let reach = |from: &ModulePath| -> BTreeSet<ModulePath> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(m) = stack.pop() {
            for next in edges.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&ModulePath, BTreeSet<ModulePath>> =
        edges.keys().map(|m| (m, reach(m))).collect();
    let mut placed = BTreeSet::new();
    let mut found = Vec::new();
    for module in edges.keys() {
        if placed.contains(module) || !reachable[module].contains(module) {
            continue;
        }
        let circle: Vec<ModulePath> = edges
            .keys()
            .filter(|other| {
                reachable[module].contains(*other) && reachable[*other].contains(module)
            })
            .cloned()
            .collect();
        placed.extend(circle.iter().cloned());
        if circle.len() > MAX_CIRCLE {
            found.push(circle);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rust_source::code_of;

    fn crate_of(files: &[(&str, &str)]) -> BTreeMap<ModulePath, String> {
        files
            .iter()
            .map(|(path, text)| {
                let module = path
                    .split('/')
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
                (module, code_of(text))
            })
            .collect()
    }

    #[test]
    fn use_trees_are_expanded() {
        let paths =
            use_paths("use crate::a::{b, c::{D, E as F}};\npub use super::g;\nfn reuse() {}");
        assert_eq!(
            paths,
            [
                "crate::a::b",
                "crate::a::c::D",
                "crate::a::c::E",
                "super::g"
            ]
        );
    }

    #[test]
    fn a_circle_of_four_is_found_and_one_of_three_is_not() {
        let four = crate_of(&[
            ("", "mod a; mod b; mod c; mod d;"),
            ("a", "use crate::b::X;"),
            ("b", "use crate::c::Y;"),
            ("c", "fn f() { crate::d::z(); }"),
            ("d", "use super::a::W;"),
        ]);
        let found = circles(&four);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].len(), 4);
        let three = crate_of(&[
            ("a", "use crate::b::X;"),
            ("b", "use crate::c::Y;"),
            ("c", "use crate::a::W;"),
        ]);
        assert!(circles(&three).is_empty());
    }

    #[test]
    fn re_exports_lead_to_the_child_and_tests_and_comments_do_not_count() {
        let modules = crate_of(&[
            ("", "mod x; mod y; mod z; mod w;\npub use x::Thing;"),
            ("x", "use crate::y::A;"),
            ("y", "use crate::z::B;"),
            ("z", "// use crate::w::C;\nuse crate::w::C;"),
            (
                "w",
                "use crate::Thing;\n#[cfg(test)]\nmod tests {\n    use crate::y::A;\n}",
            ),
        ]);
        // w -> x (through the root's re-export) -> y -> z -> w: four.
        assert_eq!(circles(&modules).len(), 1);
        let edges = dependencies(&modules);
        assert_eq!(edges[&vec!["w".to_owned()]].len(), 1, "{edges:?}");
    }
}
