//! A linear pre-check of YAML text before it is parsed: how deeply it nests.
//!
//! `serde_yaml_ng` enforces its recursion limit only after scanning the nested tokens, which
//! takes time quadratic in the depth: 50,000 levels of `[` took seconds, 100,000 tens of
//! seconds, on an async worker. [`check_yaml_nesting`] counts the nesting of flow
//! collections (`[`, `{`) and of block sequences opened on one line (`- - - x`), outside
//! quoted scalars and comments, in one pass, and refuses text deeper than the limit before
//! any parser sees it. Indentation cannot nest cheaply (each level costs a line of growing
//! indentation), so it is left to the parser.
//!
//! ```
//! use kclient_core::yaml_nesting::{check_yaml_nesting, MAX_YAML_NESTING};
//!
//! assert!(check_yaml_nesting("a: [1, {b: [2]}]\n- - x\n", MAX_YAML_NESTING).is_ok());
//! let deep = "[".repeat(50_000);
//! let err = check_yaml_nesting(&deep, MAX_YAML_NESTING).unwrap_err();
//! assert_eq!(err.to_string(), "YAML nested deeper than 128 levels (at byte 128)");
//! ```

/// The nesting limit kclient applies to YAML (serde_yaml_ng's own recursion limit).
pub const MAX_YAML_NESTING: usize = 128;

/// YAML text that nests deeper than allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("YAML nested deeper than {limit} levels (at byte {offset})")]
pub struct NestingTooDeep {
    /// The limit.
    pub limit: usize,
    /// Where the limit was passed.
    pub offset: usize,
}

/// Refuses `text` if its flow collections, or the block sequences opened on one line, nest
/// deeper than `limit`. Linear in the length of `text`; conservative (a bracket inside a
/// plain scalar counts too, which no real document nests a hundred deep).
pub fn check_yaml_nesting(text: &str, limit: usize) -> Result<(), NestingTooDeep> {
    let bytes = text.as_bytes();
    let too_deep = |offset| NestingTooDeep { limit, offset };
    let mut flow_depth = 0usize;
    let mut i = 0;
    let mut line_start = true;
    while i < bytes.len() {
        let b = bytes[i];
        if line_start {
            // Block sequence entries opened on one line: `- - - x`.
            let mut j = i;
            while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
                j += 1;
            }
            let mut dashes = 0usize;
            while j + 1 < bytes.len()
                && bytes[j] == b'-'
                && (bytes[j + 1] == b' ' || bytes[j + 1] == b'\t')
            {
                dashes += 1;
                if dashes > limit {
                    return Err(too_deep(j));
                }
                j += 2;
                while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
                    j += 1;
                }
            }
            line_start = false;
            i = j;
            continue;
        }
        match b {
            b'\n' => line_start = true,
            b'#' if i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'\n') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'\'' => {
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == b'\'' {
                        if bytes.get(i + 1) == Some(&b'\'') {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
            }
            b'[' | b'{' => {
                flow_depth += 1;
                if flow_depth > limit {
                    return Err(too_deep(i));
                }
            }
            b']' | b'}' => flow_depth = flow_depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_documents_pass() {
        let kubeconfig = "apiVersion: v1\nclusters:\n- name: c # a comment with [[[ brackets\n  cluster: {server: 'https://x[1]', x: \"{{{\"}\nusers: []\n";
        assert!(check_yaml_nesting(kubeconfig, 3).is_ok());
        assert!(check_yaml_nesting("'it''s [' : 1\n", 0).is_ok());
    }

    #[test]
    fn deep_flow_and_block_nesting_is_refused() {
        let flow = format!("{}{}", "[".repeat(129), "]".repeat(129));
        assert_eq!(
            check_yaml_nesting(&flow, 128),
            Err(NestingTooDeep {
                limit: 128,
                offset: 128
            })
        );
        assert!(check_yaml_nesting(&"{a: ".repeat(200), 128).is_err());
        let dashes = format!("{}x\n", "- ".repeat(200));
        assert!(check_yaml_nesting(&dashes, 128).is_err());
        assert!(check_yaml_nesting(&format!("{}x\n", "- ".repeat(100)), 128).is_ok());
        // Balanced but wide is fine.
        assert!(check_yaml_nesting(&"[1], ".repeat(10_000), 2).is_ok());
    }
}
