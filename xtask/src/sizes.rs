//! `cargo xtask sizes` (a step of `cargo xtask test`): no hand-written library file over
//! [`MAX_FILE_LINES`] lines and no hand-written library function over [`MAX_FN_LINES`].
//!
//! A file that long holds more than one concept, a function that long more than one job
//! (docs/architecture.md, "Keeping the house"). The check reads the sources (no build): the
//! library files of each crate as `module-circles` reads them (no generated code, binaries,
//! `tests/` or `tests.rs`), each up to its `#[cfg(test)]` test module, comments counted as
//! lines. A function runs from its `fn` line to the brace that closes its body. The test
//! harness crates ([`HARNESSES`]) are tests themselves and are left out.

use std::fs;

use anyhow::{bail, Context, Result};

use crate::rust_source::{crate_dirs, library_files, without_test_module};

/// The longest hand-written library file, in lines.
const MAX_FILE_LINES: usize = 1_000;

/// The longest hand-written library function, in lines.
const MAX_FN_LINES: usize = 80;

/// The crates that are test or benchmark code: the e2e scenarios, the benchmark harness and
/// the shared test support.
const HARNESSES: [&str; 3] = ["kclient-e2e", "kclient-bench", "kclient-testkit"];

pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(unknown) = args.first() {
        bail!("`cargo xtask sizes` takes no arguments (got {unknown:?})");
    }
    let root = crate::workspace_root();
    let mut report = String::new();
    let mut files = 0;
    for dir in crate_dirs()? {
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        if HARNESSES.contains(&name.as_ref()) {
            continue;
        }
        for (path, _) in library_files(&dir.join("src"))? {
            files += 1;
            let text =
                fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            let shown = path.strip_prefix(&root).unwrap_or(&path).display();
            for finding in oversized(&text) {
                report.push_str(&format!("\n  {shown}{finding}"));
            }
        }
    }
    if !report.is_empty() {
        bail!(
            "hand-written library code over the limits ({MAX_FILE_LINES} lines a file, \
             {MAX_FN_LINES} a function; split by concept, or by job):{report}"
        );
    }
    eprintln!(
        "sizes: {files} library files, none over {MAX_FILE_LINES} lines, no function over \
         {MAX_FN_LINES}"
    );
    Ok(())
}

/// What is over the limits in a file's text: `: N lines` for the file, `:LINE fn NAME: N
/// lines` for each function.
fn oversized(text: &str) -> Vec<String> {
    let code = without_test_module(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut findings = Vec::new();
    if lines.len() > MAX_FILE_LINES {
        findings.push(format!(": {} lines", lines.len()));
    }
    for (start, name, length) in functions(&lines) {
        if length > MAX_FN_LINES {
            findings.push(format!(":{} fn {name}: {length} lines", start + 1));
        }
    }
    findings
}

/// Each function with a body: the index of its `fn` line, its name, its length in lines.
fn functions<'a>(lines: &[&'a str]) -> Vec<(usize, &'a str, usize)> {
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        let mut depth = 0i64;
        let mut opened = false;
        for (offset, body_line) in lines[start..].iter().enumerate() {
            let (opens, closes) = braces(body_line);
            depth += opens - closes;
            opened |= opens > 0;
            if !opened && body_line.trim_end().ends_with(';') {
                break; // a declaration without a body
            }
            if opened && depth <= 0 {
                found.push((start, name, offset + 1));
                break;
            }
        }
    }
    found
}

/// The name of the function a line declares (`pub(crate) async fn name…`), if it does.
fn fn_name(line: &str) -> Option<&str> {
    let mut words = line.trim_start();
    loop {
        let word_end = words.find([' ', '(', '<']).unwrap_or(words.len());
        let (word, rest) = words.split_at(word_end);
        match word {
            "pub" | "const" | "async" | "unsafe" | "extern" | "default" => {}
            "fn" => {
                let rest = rest.trim_start();
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                return (end > 0).then(|| &rest[..end]);
            }
            _ if word.starts_with("pub") || word.starts_with('"') => {}
            _ => return None,
        }
        // `pub(crate)`'s parenthesis and an ABI string belong to the word before `fn`.
        let rest = match rest.strip_prefix('(') {
            Some(inner) => inner.split_once(')')?.1,
            None => rest,
        };
        words = rest.trim_start();
    }
}

/// The braces a line opens and closes, outside strings, character literals and comments.
fn braces(line: &str) -> (i64, i64) {
    let (mut opens, mut closes) = (0, 0);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '\'' => {
                // A character literal ('{', '\''), not a lifetime ('a).
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with('\\') {
                    chars.nth(2);
                } else if rest.chars().nth(1) == Some('\'') {
                    chars.nth(1);
                }
            }
            '{' => opens += 1,
            '}' => closes += 1,
            _ => {}
        }
    }
    (opens, closes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_are_measured_from_fn_to_their_closing_brace() {
        let text = "pub(crate) async fn a() {\n    let s = \"}\";\n    let c = '{';\n}\n\
                    fn b<'a>(x: &'a str) -> usize\nwhere\n{\n    x.len() // }\n}\n\
                    trait T {\n    fn c(&self);\n}\n";
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(functions(&lines), [(0, "a", 4), (4, "b", 5)]);
    }

    #[test]
    fn declarations_are_recognised_and_other_lines_are_not() {
        assert_eq!(fn_name("    pub fn new() -> Self {"), Some("new"));
        assert_eq!(
            fn_name("pub(super) const unsafe fn raw(x: u8)"),
            Some("raw")
        );
        assert_eq!(fn_name("extern \"C\" fn callback() {}"), Some("callback"));
        assert_eq!(fn_name("let f = |x| x; // fn not"), None);
        assert_eq!(fn_name("impl Fn() for X {"), None);
    }

    #[test]
    fn a_long_function_and_a_long_file_are_reported() {
        let body = "    step();\n".repeat(MAX_FN_LINES);
        let text = format!(
            "fn long() {{\n{body}}}\n{}",
            "// note\n".repeat(MAX_FILE_LINES)
        );
        assert_eq!(
            oversized(&text),
            [
                format!(": {} lines", MAX_FN_LINES + 2 + MAX_FILE_LINES),
                format!(":1 fn long: {} lines", MAX_FN_LINES + 2),
            ]
        );
    }
}
