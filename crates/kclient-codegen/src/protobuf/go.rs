//! The Go facts of a proto field, from the struct definitions of the `*.go` files next to a
//! `generated.proto`: the Go type (pointer, value, slice, map) and the `json` tag (name,
//! `omitempty`/`omitzero`, `,inline`). A line parser over gofmt'd source: a field is a line
//! inside `type X struct {` at one tab of indentation with a `protobuf:"…"` tag.

use std::collections::BTreeMap;

/// A Go struct field carrying a `protobuf` tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoField {
    /// The Go type as written (`*int64`, `[]Container`, `metav1.ObjectMeta`).
    pub go_type: String,
    /// The `json` tag (`name,omitempty`, `,inline`, or empty when there is none).
    pub json: String,
}

/// Go structs of one package: struct name → proto field number → field.
pub type GoStructs = BTreeMap<String, BTreeMap<u32, GoField>>;

/// Reads the structs of one Go source file into `out`.
pub fn read_structs(source: &str, out: &mut GoStructs) {
    let mut current: Option<String> = None;
    for line in source.lines() {
        if let Some(name) = line
            .strip_prefix("type ")
            .and_then(|r| r.strip_suffix(" struct {"))
            .filter(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            current = Some(name.to_owned());
            out.entry(name.to_owned()).or_default();
            continue;
        }
        if line.starts_with('}') {
            current = None;
            continue;
        }
        let Some(name) = &current else { continue };
        let Some(rest) = line.strip_prefix('\t').filter(|r| !r.starts_with('\t')) else {
            continue;
        };
        let (Some(open), Some(close)) = (rest.find('`'), rest.rfind('`')) else {
            continue;
        };
        if close <= open {
            continue;
        }
        let decl: Vec<&str> = rest[..open].split_whitespace().collect();
        let go_type = match decl.as_slice() {
            [ty] | [_, ty] => ty.to_string(),
            _ => continue,
        };
        let tags = tags(&rest[open + 1..close]);
        let Some(protobuf) = tags.get("protobuf") else {
            continue;
        };
        let Some(number) = protobuf.split(',').nth(1).and_then(|n| n.parse().ok()) else {
            continue;
        };
        let json = tags.get("json").cloned().unwrap_or_default();
        out.entry(name.clone())
            .or_default()
            .insert(number, GoField { go_type, json });
    }
}

/// `key:"value" key2:"value2"` → map.
fn tags(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = text.trim();
    while let Some((key, after)) = rest.split_once(":\"") {
        let Some(end) = after.find('"') else { break };
        out.insert(key.trim().to_owned(), after[..end].to_owned());
        rest = after[end + 1..].trim_start();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tagged_fields() {
        let src = "type Probe struct {\n\t// The action.\n\tProbeHandler `json:\",inline\" protobuf:\"bytes,1,opt,name=handler\"`\n\tInitialDelaySeconds int32 `json:\"initialDelaySeconds,omitempty\" protobuf:\"varint,2,opt,name=initialDelaySeconds\"`\n\tTerminationGracePeriodSeconds *int64 `json:\"terminationGracePeriodSeconds,omitempty\" protobuf:\"varint,7,opt,name=terminationGracePeriodSeconds\"`\n\tSkipped string `json:\"skipped\"`\n}\n";
        let mut out = GoStructs::new();
        read_structs(src, &mut out);
        let probe = &out["Probe"];
        assert_eq!(
            probe[&1],
            GoField {
                go_type: "ProbeHandler".into(),
                json: ",inline".into()
            }
        );
        assert_eq!(probe[&2].json, "initialDelaySeconds,omitempty");
        assert_eq!(probe[&7].go_type, "*int64");
        assert_eq!(probe.len(), 3);
    }
}
