//! Manifests: Kubernetes objects in YAML (several documents per file) or JSON, read from
//! files or whole folders, for preloading a server (`kclient-fake-apiserver --load dir/`, or
//! [`FakeApiServerBuilder::objects`](crate::FakeApiServerBuilder::objects)). `List` objects
//! (`kind: List`, `PodList`, …) are expanded into their items.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::Error;

fn manifest_err(path: &Path, message: impl Into<String>) -> Error {
    Error::Manifest {
        path: path.display().to_string(),
        message: message.into(),
    }
}

fn expand(v: Value, out: &mut Vec<Value>) {
    let is_list = v
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k == "List" || k.ends_with("List"))
        && v.get("items").is_some_and(Value::is_array);
    if is_list {
        if let Some(Value::Array(items)) = v.get("items").cloned() {
            for item in items {
                expand(item, out);
            }
        }
    } else if v.is_object() {
        out.push(v);
    }
}

/// Parses a request body as YAML (JSON is YAML too), refusing nesting deeper than
/// [`MAX_YAML_NESTING`](kclient_core::yaml_nesting::MAX_YAML_NESTING) before parsing: a
/// pathological body would otherwise keep the parser busy for seconds.
pub(crate) fn parse_yaml_body(body: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    kclient_core::yaml_nesting::check_yaml_nesting(
        text,
        kclient_core::yaml_nesting::MAX_YAML_NESTING,
    )
    .map_err(|e| e.to_string())?;
    let parse = || serde_yaml_ng::from_str::<Value>(text).map_err(|e| e.to_string());
    // A large body is parsed with the worker handed over to blocking work, so that the
    // server's other connections are not held up meanwhile (on a multi-threaded runtime;
    // a single-threaded one has no other worker to hand them to).
    let multi_threaded = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if body.len() > LARGE_YAML_BODY && multi_threaded {
        tokio::task::block_in_place(parse)
    } else {
        parse()
    }
}

/// From this size on, a YAML body is parsed as blocking work.
const LARGE_YAML_BODY: usize = 256 * 1024;
/// Parses the objects of one manifest text (`name` is used in errors).
pub fn parse_manifests(name: &Path, text: &str) -> Result<Vec<Value>, Error> {
    kclient_core::yaml_nesting::check_yaml_nesting(
        text,
        kclient_core::yaml_nesting::MAX_YAML_NESTING,
    )
    .map_err(|e| manifest_err(name, e.to_string()))?;
    let mut out = Vec::new();
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let v: Value = serde_json::from_str(text).map_err(|e| manifest_err(name, e.to_string()))?;
        match v {
            Value::Array(items) => items.into_iter().for_each(|i| expand(i, &mut out)),
            other => expand(other, &mut out),
        }
        return Ok(out);
    }
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let v: Value =
            serde::Deserialize::deserialize(doc).map_err(|e| manifest_err(name, e.to_string()))?;
        if v.is_null() {
            continue;
        }
        expand(v, &mut out);
    }
    Ok(out)
}

fn collect_files(path: &Path, files: &mut Vec<PathBuf>) -> Result<(), Error> {
    let meta = std::fs::metadata(path).map_err(|e| manifest_err(path, e.to_string()))?;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| manifest_err(path, e.to_string()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for entry in entries {
            let is_manifest = entry.is_dir()
                || entry
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
            if is_manifest {
                collect_files(&entry, files)?;
            }
        }
    } else {
        files.push(path.to_path_buf());
    }
    Ok(())
}

/// Reads every object from `paths` (files, or folders searched recursively for `.yaml`,
/// `.yml` and `.json` files in name order). Namespaces come first, then
/// CustomResourceDefinitions, then everything else, so objects can be created in order.
pub fn load_manifests<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<Value>, Error> {
    let mut files = Vec::new();
    for p in paths {
        collect_files(p.as_ref(), &mut files)?;
    }
    let mut objects = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| manifest_err(&f, e.to_string()))?;
        objects.extend(parse_manifests(&f, &text)?);
    }
    let rank = |v: &Value| match v.get("kind").and_then(Value::as_str) {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    };
    objects.sort_by_key(rank);
    Ok(objects)
}

#[cfg(test)]
mod large_body_tests {
    use super::*;

    #[test]
    fn large_yaml_bodies_parse_on_either_runtime() {
        let small = b"metadata: {name: x}\n";
        let mut big = String::from("metadata: {name: x}\ndata:\n");
        for i in 0..40_000 {
            big.push_str(&format!("  k{i}: v\n"));
        }
        assert!(big.len() > LARGE_YAML_BODY);
        for multi in [false, true] {
            let rt = if multi {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .build()
                    .unwrap()
            } else {
                tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap()
            };
            let v = rt
                .block_on(async { parse_yaml_body(big.as_bytes()) })
                .unwrap();
            assert_eq!(v["data"]["k39999"], "v");
            assert!(rt.block_on(async { parse_yaml_body(small) }).is_ok());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_document_yaml_and_lists() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: b}}\n";
        let objs = parse_manifests(Path::new("x.yaml"), text).unwrap();
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[1]["kind"], "Secret");
        let json = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"}}"#;
        assert_eq!(parse_manifests(Path::new("x.json"), json).unwrap().len(), 1);
        assert!(parse_manifests(Path::new("bad.yaml"), "a: [").is_err());
    }

    #[test]
    fn folders_sorted_namespaces_first() {
        let dir =
            std::env::temp_dir().join(format!("kclient-fake-manifests-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(
            dir.join("a.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("sub/b.yml"),
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n",
        )
        .unwrap();
        std::fs::write(dir.join("ignored.txt"), "nope").unwrap();
        let objs = load_manifests(&[&dir]).unwrap();
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[0]["kind"], "Namespace");
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(load_manifests(&[dir.join("missing")]).is_err());
    }
}
