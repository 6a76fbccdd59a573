//! The diff after `pod updates may not change fields other than ...`: apimachinery's
//! `diff.Diff`, a unified diff (three lines of context, no file header) of the two values
//! pretty-printed as JSON with a one-space indent, lines matched as go-difflib's
//! `SequenceMatcher` matches them (the longest matching block first, then recursively on
//! each side of it).

use serde::Serialize;
use serde_json::Value;

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// What one stretch of the two line lists is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Equal,
    Replace,
    Delete,
    Insert,
}

/// One stretch: `a[i1..i2]` against `b[j1..j2]` (go-difflib's `OpCode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OpCode {
    tag: Tag,
    i1: usize,
    i2: usize,
    j1: usize,
    j2: usize,
}

/// The unified diff from `a` to `b` (empty when they print the same).
pub(super) fn unified(a: &Value, b: &Value) -> String {
    let (a, b) = (pretty(a), pretty(b));
    let a: Vec<&str> = a.split_inclusive('\n').collect();
    let b: Vec<&str> = b.split_inclusive('\n').collect();
    let mut out = String::new();
    for group in grouped(&opcodes(&a, &b)) {
        let (first, last) = (group[0], group[group.len() - 1]);
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(first.i1, last.i2),
            range(first.j1, last.j2)
        ));
        for code in group {
            if code.tag == Tag::Equal {
                for line in &a[code.i1..code.i2] {
                    push_line(&mut out, ' ', line);
                }
                continue;
            }
            if matches!(code.tag, Tag::Replace | Tag::Delete) {
                for line in &a[code.i1..code.i2] {
                    push_line(&mut out, '-', line);
                }
            }
            if matches!(code.tag, Tag::Replace | Tag::Insert) {
                for line in &b[code.j1..code.j2] {
                    push_line(&mut out, '+', line);
                }
            }
        }
    }
    out
}

/// `json.MarshalIndent(v, "", " ")`.
fn pretty(v: &Value) -> String {
    let mut bytes = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    // Serialising a Value into memory cannot fail.
    let _ = v.serialize(&mut serializer);
    String::from_utf8(bytes).unwrap_or_default()
}

fn push_line(out: &mut String, prefix: char, line: &str) {
    out.push(prefix);
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push('\n');
    }
}

/// go-difflib's `formatRangeUnified`.
fn range(start: usize, stop: usize) -> String {
    let length = stop - start;
    match length {
        1 => format!("{}", start + 1),
        0 => format!("{start},0"),
        _ => format!("{},{length}", start + 1),
    }
}

/// The longest block of equal lines of `a[alo..ahi]` and `b[blo..bhi]`, the earliest one in
/// `a` (then in `b`) among equals, as `(i, j, size)`.
fn longest_match(
    a: &[&str],
    b: &[&str],
    (alo, ahi): (usize, usize),
    (blo, bhi): (usize, usize),
) -> (usize, usize, usize) {
    let mut best = (alo, blo, 0);
    // lengths[j + 1]: the length of the match ending at a[i], b[j] (previous row).
    let mut previous = vec![0usize; bhi - blo + 1];
    for (i, line) in a.iter().enumerate().take(ahi).skip(alo) {
        let mut current = vec![0usize; bhi - blo + 1];
        for (j, other) in b.iter().enumerate().take(bhi).skip(blo) {
            if line == other {
                let k = previous[j - blo] + 1;
                current[j - blo + 1] = k;
                if k > best.2 {
                    best = (i + 1 - k, j + 1 - k, k);
                }
            }
        }
        previous = current;
    }
    best
}

/// The matching blocks, in order (go-difflib's `GetMatchingBlocks`, without its junk
/// heuristics, which only apply to sequences of 200 lines or more with popular lines).
fn matching_blocks(a: &[&str], b: &[&str]) -> Vec<(usize, usize, usize)> {
    let mut queue = vec![((0, a.len()), (0, b.len()))];
    let mut blocks = Vec::new();
    while let Some(((alo, ahi), (blo, bhi))) = queue.pop() {
        let (i, j, k) = longest_match(a, b, (alo, ahi), (blo, bhi));
        if k == 0 {
            continue;
        }
        blocks.push((i, j, k));
        if alo < i && blo < j {
            queue.push(((alo, i), (blo, j)));
        }
        if i + k < ahi && j + k < bhi {
            queue.push(((i + k, ahi), (j + k, bhi)));
        }
    }
    blocks.sort_unstable();
    // Adjacent blocks are merged.
    let mut merged: Vec<(usize, usize, usize)> = Vec::new();
    for (i, j, k) in blocks {
        match merged.last_mut() {
            Some(last) if last.0 + last.2 == i && last.1 + last.2 == j => last.2 += k,
            _ => merged.push((i, j, k)),
        }
    }
    merged.push((a.len(), b.len(), 0));
    merged
}

/// go-difflib's `GetOpCodes`.
fn opcodes(a: &[&str], b: &[&str]) -> Vec<OpCode> {
    let (mut i, mut j) = (0, 0);
    let mut codes = Vec::new();
    for (ai, bj, size) in matching_blocks(a, b) {
        let tag = match (i < ai, j < bj) {
            (true, true) => Some(Tag::Replace),
            (true, false) => Some(Tag::Delete),
            (false, true) => Some(Tag::Insert),
            (false, false) => None,
        };
        if let Some(tag) = tag {
            codes.push(OpCode {
                tag,
                i1: i,
                i2: ai,
                j1: j,
                j2: bj,
            });
        }
        i = ai + size;
        j = bj + size;
        if size > 0 {
            codes.push(OpCode {
                tag: Tag::Equal,
                i1: ai,
                i2: i,
                j1: bj,
                j2: j,
            });
        }
    }
    codes
}

/// go-difflib's `GetGroupedOpCodes(3)`: the changes with their context, a group per hunk.
fn grouped(codes: &[OpCode]) -> Vec<Vec<OpCode>> {
    let mut codes = codes.to_vec();
    if codes.is_empty() || codes.iter().all(|c| c.tag == Tag::Equal) {
        return Vec::new();
    }
    if let Some(first) = codes.first_mut().filter(|c| c.tag == Tag::Equal) {
        first.i1 = first.i1.max(first.i2.saturating_sub(CONTEXT));
        first.j1 = first.j1.max(first.j2.saturating_sub(CONTEXT));
    }
    if let Some(last) = codes.last_mut().filter(|c| c.tag == Tag::Equal) {
        last.i2 = last.i2.min(last.i1 + CONTEXT);
        last.j2 = last.j2.min(last.j1 + CONTEXT);
    }
    let mut groups = Vec::new();
    let mut group = Vec::new();
    for code in codes {
        let OpCode {
            tag,
            mut i1,
            i2,
            mut j1,
            j2,
        } = code;
        if tag == Tag::Equal && i2 - i1 > 2 * CONTEXT {
            group.push(OpCode {
                tag,
                i1,
                i2: i2.min(i1 + CONTEXT),
                j1,
                j2: j2.min(j1 + CONTEXT),
            });
            groups.push(std::mem::take(&mut group));
            i1 = i1.max(i2 - CONTEXT);
            j1 = j1.max(j2 - CONTEXT);
        }
        group.push(OpCode {
            tag,
            i1,
            i2,
            j1,
            j2,
        });
    }
    if !(group.is_empty() || group.len() == 1 && group[0].tag == Tag::Equal) {
        groups.push(group);
    }
    groups
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn one_changed_field_with_three_lines_of_context() {
        let old = json!({"containers": [{"image": "nginx", "name": "c"}],
                         "dnsPolicy": "ClusterFirst", "nodeName": "a",
                         "restartPolicy": "Always", "schedulerName": "default-scheduler"});
        let mut new = old.clone();
        new["nodeName"] = json!("b");
        assert_eq!(
            unified(&old, &new),
            concat!(
                "@@ -6,7 +6,7 @@\n",
                "   }\n",
                "  ],\n",
                "  \"dnsPolicy\": \"ClusterFirst\",\n",
                "- \"nodeName\": \"a\",\n",
                "+ \"nodeName\": \"b\",\n",
                "  \"restartPolicy\": \"Always\",\n",
                "  \"schedulerName\": \"default-scheduler\"\n",
                " }\n",
            )
        );
    }

    #[test]
    fn an_added_field_and_far_apart_changes_make_separate_hunks() {
        let lines: serde_json::Map<String, Value> =
            (0..20).map(|i| (format!("k{i:02}"), json!(i))).collect();
        let old = Value::Object(lines);
        let mut new = old.clone();
        new["k01"] = json!(100);
        new["k18"] = json!(118);
        let diff = unified(&old, &new);
        assert_eq!(diff.matches("@@ -").count(), 2, "{diff}");
        assert!(diff.contains("- \"k01\": 1,\n+ \"k01\": 100,\n"), "{diff}");
        assert!(unified(&old, &old).is_empty());
        let mut grown = old.clone();
        grown["zz"] = json!(true);
        let diff = unified(&old, &grown);
        assert!(diff.contains("+ \"zz\": true\n"), "{diff}");
    }

    #[test]
    fn ranges_are_written_as_difflib_writes_them() {
        assert_eq!(range(5, 6), "6");
        assert_eq!(range(5, 5), "5,0");
        assert_eq!(range(0, 7), "1,7");
    }
}
