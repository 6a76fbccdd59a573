//! Fuzz target for kubeconfig parsing, as a property test: any text gives a kubeconfig or a
//! typed error, never a panic, and no error quotes a value it was given.
//! With the tests it runs a fixed number of cases from a fixed seed (`kclient-testkit`);
//! `cargo xtask fuzz` runs it longer with new seeds and records what fails in
//! `proptest-regressions/fuzz.txt`, replayed by every later run.

use kclient_rest::kubeconfig::Kubeconfig;
use proptest::prelude::*;

fn yaml_soup() -> impl Strategy<Value = String> {
    proptest::string::string_regex(
        r"(apiVersion: v1\n|kind: Config\n|clusters:\n|users:\n|contexts:\n|- name: [a-z]{1,3}\n|  cluster: |  user: |server: |insecure-skip-tls-verify: (yes|no|maybe)\n|token: |SECRET-[a-z]{4}|\[|\]|\{|\}|: |- |\n|  |'|\x22|#|&a |\*a|!!str |---\n){0,60}",
    )
    .unwrap()
}

proptest! {
    #![proptest_config(kclient_testkit::proptest_config(1024, concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/fuzz.txt")))]

    #[test]
    fn kubeconfig_parsing_never_panics_nor_quotes_values(text in yaml_soup(), bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
        for input in [text.clone(), String::from_utf8_lossy(&bytes).into_owned()] {
            match Kubeconfig::from_yaml(&input) {
                Ok(kubeconfig) => {
                    // What parses writes back and parses again.
                    let yaml = kubeconfig.to_yaml().unwrap();
                    prop_assert!(Kubeconfig::from_yaml(&yaml).is_ok(), "{yaml}");
                }
                Err(e) => prop_assert!(!e.to_string().contains("SECRET-"), "{e}"),
            }
        }
    }
}

// The YAML nesting pre-check (kclient-core) against the parser it protects. The check must
// never count less nesting than libyaml builds: a quote it wrongly reads as opening a quoted
// scalar would hide every bracket after it, and a deep document would reach the parser.

use kclient_core::yaml_nesting::yaml_nesting_depths;
use serde_yaml_ng::{Mapping, Value};

/// How deeply a parsed value nests (tags are not a level).
fn value_depth(v: &Value) -> usize {
    match v {
        Value::Sequence(items) => 1 + items.iter().map(value_depth).max().unwrap_or(0),
        Value::Mapping(map) => {
            1 + map
                .iter()
                .map(|(k, v)| value_depth(k).max(value_depth(v)))
                .max()
                .unwrap_or(0)
        }
        Value::Tagged(tagged) => value_depth(&tagged.value),
        _ => 0,
    }
}

/// Scalars written the ways that trip a naive scan: quotes inside plain scalars, brackets,
/// `#` and escaped quotes inside quoted ones. (YAML text, value.)
const SCALARS: &[(&str, &str)] = &[
    ("don't", "don't"),
    ("a\"b", "a\"b"),
    ("x#y", "x#y"),
    ("a:b", "a:b"),
    ("'[{''x #'", "[{'x #"),
    ("\"]} \\\" # ['\"", "]} \" # ['"),
    ("'multi\n  [[ line'", "multi [[ line"),
];

#[derive(Debug, Clone)]
enum Tree {
    Scalar(usize),
    /// A literal block scalar holding brackets and quotes (block context only).
    Literal,
    Seq(Vec<Tree>, bool),
    Map(Vec<Tree>, bool),
}

const LITERAL_LINES: [&str; 3] = ["'[[ \"x", "]] } {", "#[ not a comment"];

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = prop_oneof![
        (0..SCALARS.len()).prop_map(Tree::Scalar),
        Just(Tree::Literal),
    ];
    leaf.prop_recursive(6, 48, 4, |inner| {
        prop_oneof![
            (
                proptest::collection::vec(inner.clone(), 0..4),
                any::<bool>()
            )
                .prop_map(|(items, flow)| Tree::Seq(items, flow)),
            (proptest::collection::vec(inner, 0..4), any::<bool>())
                .prop_map(|(items, flow)| Tree::Map(items, flow)),
        ]
    })
}

struct Rendered {
    flow: usize,
    block: usize,
}

impl Tree {
    /// The value libyaml should read (`in_flow`: written inside a flow collection).
    fn value(&self, in_flow: bool) -> Value {
        let in_flow = in_flow || (!self.is_block() && !matches!(self, Tree::Literal));
        match self {
            Tree::Scalar(i) => Value::String(SCALARS[*i].1.to_owned()),
            Tree::Literal if in_flow => Value::String(SCALARS[4].1.to_owned()),
            Tree::Literal => Value::String(LITERAL_LINES.join("\n") + "\n"),
            Tree::Seq(items, _) => {
                Value::Sequence(items.iter().map(|v| v.value(in_flow)).collect())
            }
            Tree::Map(items, _) => Value::Mapping(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (Value::String(format!("k{i}")), v.value(in_flow)))
                    .collect::<Mapping>(),
            ),
        }
    }

    /// Whether this node is written in block style when its parent is.
    fn is_block(&self) -> bool {
        matches!(self, Tree::Seq(items, false) | Tree::Map(items, false) if !items.is_empty())
    }

    /// Writes the node in flow style (a literal becomes a quoted scalar there).
    fn flow(&self, out: &mut String, depth: usize, r: &mut Rendered) {
        match self {
            Tree::Scalar(i) => out.push_str(SCALARS[*i].0),
            Tree::Literal => out.push_str(SCALARS[4].0),
            Tree::Seq(items, _) | Tree::Map(items, _) => {
                r.flow = r.flow.max(depth + 1);
                let map = matches!(self, Tree::Map(..));
                out.push(if map { '{' } else { '[' });
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    if map {
                        out.push_str(&format!("k{i}: "));
                    }
                    item.flow(out, depth + 1, r);
                }
                out.push(if map { '}' } else { ']' });
            }
        }
    }

    /// Writes the node in block context at `indent` (after `- ` or `key: ` on the current line).
    fn block(&self, out: &mut String, indent: usize, blocks: usize, r: &mut Rendered) {
        let pad = " ".repeat(indent);
        match self {
            Tree::Literal => {
                out.push_str("|\n");
                for line in LITERAL_LINES {
                    out.push_str(&format!("{pad}  {line}\n"));
                }
            }
            Tree::Seq(items, _) | Tree::Map(items, _) if self.is_block() => {
                r.block = r.block.max(blocks + 1);
                let map = matches!(self, Tree::Map(..));
                for (i, item) in items.iter().enumerate() {
                    out.push_str(&pad);
                    if map {
                        out.push_str(&format!("k{i}: "));
                    } else {
                        out.push_str("- ");
                    }
                    if item.is_block() {
                        out.push('\n');
                        item.block(out, indent + 2, blocks + 1, r);
                    } else {
                        item.block_inline(out, indent, blocks + 1, r);
                    }
                }
            }
            other => {
                out.push_str(&pad);
                other.block_inline(out, indent, blocks, r);
            }
        }
    }

    /// A scalar, literal or flow collection after `- ` or `key: `.
    fn block_inline(&self, out: &mut String, indent: usize, blocks: usize, r: &mut Rendered) {
        if matches!(self, Tree::Literal) {
            self.block(out, indent, blocks, r);
        } else {
            self.flow(out, 0, r);
            out.push('\n');
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// Documents of known nesting, written with every trap in both styles: libyaml reads the
    /// intended value, and the pre-check counts exactly its flow and block depth.
    #[test]
    fn the_yaml_nesting_precheck_counts_what_libyaml_reads(t in tree()) {
        let mut text = String::new();
        let mut r = Rendered { flow: 0, block: 0 };
        t.block(&mut text, 0, 0, &mut r);
        let parsed: Value = serde_yaml_ng::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&parsed, &t.value(false), "{}", text);
        prop_assert_eq!(yaml_nesting_depths(&text), (r.flow, r.block), "{}", text);
    }

    /// Random text made of the characters that matter: whatever libyaml parses nests no
    /// deeper than the pre-check counted. Two constructs add a level with neither a bracket
    /// nor an indentation, at most one per counted level (hence the factor two): a block
    /// sequence written at its parent key's column, and a single-pair mapping inside a flow
    /// sequence (`[a: b]`, `[? x]`).
    #[test]
    fn the_yaml_nesting_precheck_never_undercounts(text in proptest::string::string_regex(
        r"(\[|\]|\{|\}|, |,|: |:|\n|  | |'|\x22|#|- |-|\|\n|>\n|a|b'c|\\|\? |&x |!t |\*x){0,80}").unwrap()) {
        let (flow, block) = yaml_nesting_depths(&text);
        if let Ok(value) = serde_yaml_ng::from_str::<Value>(&text) {
            prop_assert!(value_depth(&value) <= 2 * (flow + block), "depth {} > 2 * ({flow} + {block}): {:?}", value_depth(&value), text);
        }
    }
}
