//! Protobuf codecs of the built-in types (issue 26): the join of the `generated.proto` files,
//! the Go struct tags and k8s-openapi's fields, and the emitter of `Decode`/`Encode` impls on
//! the k8s-openapi types (kclient-protobuf's `src/generated/v1_NN/`).
//!
//! Two steps, so that generating needs no network:
//!
//! 1. [`distill`] (`cargo xtask codegen protobuf-refresh`, with the Go modules fetched through
//!    the Go module proxy) parses the `generated.proto` files of `k8s.io/api`,
//!    `k8s.io/apimachinery`, `k8s.io/apiextensions-apiserver` and `k8s.io/kube-aggregator`
//!    ([`proto`]) and the Go structs beside them ([`go`]), keeps the messages that have a
//!    k8s-openapi type and those they reach, and gives a [`ProtobufInput`]: the checked-in
//!    `data/protobuf-v1.NN.json`.
//! 2. [`generate_protobuf`] (`cargo xtask codegen [--check]`) joins each input with k8s-openapi's
//!    source of the same version ([`openapi`]) and emits the codecs ([`emit`]); it refuses to
//!    emit when a field has no rule.

pub mod emit;
pub mod go;
pub mod groups;
pub mod openapi;
pub mod proto;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::output::GeneratedFiles;
use crate::source_tree::files_under;
pub use emit::generate_protobuf;
pub use openapi::{read_definitions, Definition};

/// The Go modules the `generated.proto` files come from.
pub const MODULES: &[&str] = &[
    "k8s.io/api",
    "k8s.io/apimachinery",
    "k8s.io/apiextensions-apiserver",
    "k8s.io/kube-aggregator",
];

/// A fetched Go module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleSource {
    /// The module version (`v0.37.1`).
    pub version: String,
    /// The `h1:` hash `go mod download -json` reported.
    pub sum: String,
}

/// One proto field with its Go facts: `[number, name, label, type, go type, json tag]`
/// (`label` is `optional`, `repeated` or `map`; `type` a scalar or a message's full name, the
/// value type for maps; the Go type and json tag are empty when no Go field was found, e.g.
/// for a Go type alias of another package's struct).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputField(
    pub u32,
    pub String,
    pub String,
    pub String,
    pub String,
    pub String,
);

impl InputField {
    /// The field number.
    pub fn number(&self) -> u32 {
        self.0
    }
    /// The proto field name.
    pub fn name(&self) -> &str {
        &self.1
    }
    /// `optional`, `repeated` or `map`.
    pub fn label(&self) -> &str {
        &self.2
    }
    /// The type (value type of maps).
    pub fn type_name(&self) -> &str {
        &self.3
    }
    /// The Go type, empty when unknown.
    pub fn go_type(&self) -> &str {
        &self.4
    }
    /// The Go json tag, empty when unknown.
    pub fn json_tag(&self) -> &str {
        &self.5
    }
}

/// The checked-in input of one Kubernetes version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtobufInput {
    /// `1.37`.
    #[serde(rename = "kubernetesVersion")]
    pub kubernetes_version: String,
    /// Module path → version and hash.
    pub modules: BTreeMap<String, ModuleSource>,
    /// Message full name (`k8s.io.api.core.v1.Pod`) → fields in number order.
    pub messages: BTreeMap<String, Vec<InputField>>,
}

impl ProtobufInput {
    /// Parses a saved input.
    pub fn from_json(text: &str, what: &str) -> Result<Self, Error> {
        serde_json::from_str(text).map_err(|source| Error::Json {
            what: what.to_owned(),
            source,
        })
    }

    /// Reads a saved input.
    pub fn load(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::from_json(&text, &path.display().to_string())
    }

    /// The JSON text: one message per line, so that a refresh diffs readably.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{\n");
        out += &format!(
            "  \"kubernetesVersion\": {},\n",
            s(&self.kubernetes_version)
        );
        out += &format!("  \"modules\": {},\n", s(&self.modules));
        out += "  \"messages\": {\n";
        let n = self.messages.len();
        for (i, (name, fields)) in self.messages.iter().enumerate() {
            out += &format!(
                "    {}: {}{}\n",
                s(name),
                s(fields),
                if i + 1 < n { "," } else { "" }
            );
        }
        out += "  }\n}\n";
        out
    }

    /// Writes the JSON text.
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        std::fs::write(path, self.to_json()).map_err(|e| Error::io(path, e))
    }
}

/// Compact JSON of a value (strings, maps and vectors of them always serialise).
fn s<T: Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// A Go module on disk (the `Dir` of `go mod download -json`).
#[derive(Debug, Clone)]
pub struct ModuleDir {
    /// `k8s.io/api`.
    pub path: String,
    /// What was fetched.
    pub source: ModuleSource,
    /// The module's directory.
    pub dir: PathBuf,
}

/// Parses the `generated.proto` files and Go structs of the modules, and keeps the messages
/// that have a k8s-openapi definition (`definitions`, by definition name) and every message
/// they reach.
pub fn distill(
    kubernetes_version: &str,
    modules: &[ModuleDir],
    definitions: &BTreeMap<String, Definition>,
) -> Result<ProtobufInput, Error> {
    let mut all: BTreeMap<String, Vec<InputField>> = BTreeMap::new();
    for module in modules {
        let proto = |p: &Path| p.file_name().is_some_and(|n| n == "generated.proto");
        for file in files_under(&module.dir, &proto)? {
            read_proto_file(module, &file, &mut all)?;
        }
    }
    let keep = reached(&all, definitions);
    Ok(ProtobufInput {
        kubernetes_version: kubernetes_version.to_owned(),
        modules: modules
            .iter()
            .map(|m| (m.path.clone(), m.source.clone()))
            .collect(),
        messages: all.into_iter().filter(|(n, _)| keep.contains(n)).collect(),
    })
}

/// Reads the messages of one `generated.proto` of `module` into `all` (by full name), each
/// field with the Go type and JSON tag of its struct field in the package's Go files.
fn read_proto_file(
    module: &ModuleDir,
    file: &Path,
    all: &mut BTreeMap<String, Vec<InputField>>,
) -> Result<(), Error> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::io(file, e))?;
    let rel = file
        .strip_prefix(&module.dir)
        .unwrap_or(file)
        .display()
        .to_string();
    let parsed = proto::parse(&text, &format!("{}/{rel}", module.path))?;
    let structs = go_structs(file.parent().unwrap_or(&module.dir))?;
    for message in parsed.messages {
        let go = structs.get(&message.name);
        let mut fields: Vec<InputField> = message
            .fields
            .into_iter()
            .map(|f| {
                let g = go.and_then(|g| g.get(&f.number));
                InputField(
                    f.number,
                    f.name,
                    f.label,
                    f.type_name,
                    g.map(|g| g.go_type.clone()).unwrap_or_default(),
                    g.map(|g| g.json.clone()).unwrap_or_default(),
                )
            })
            .collect();
        fields.sort_by_key(|f| f.0);
        all.insert(format!("{}.{}", parsed.package, message.name), fields);
    }
    Ok(())
}

/// The Go structs of the package in `dir` (its `.go` files, tests and `generated.pb.go`
/// aside), read in file name order.
fn go_structs(dir: &Path) -> Result<go::GoStructs, Error> {
    let mut structs = go::GoStructs::new();
    let mut go_files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.ends_with(".go") && !n.ends_with("_test.go") && n != "generated.pb.go"
            })
        })
        .collect();
    go_files.sort();
    for go_file in go_files {
        let source = std::fs::read_to_string(&go_file).map_err(|e| Error::io(&go_file, e))?;
        go::read_structs(&source, &mut structs);
    }
    Ok(structs)
}

/// The messages that have a k8s-openapi type, and every message they reach through their
/// fields.
fn reached(
    all: &BTreeMap<String, Vec<InputField>>,
    definitions: &BTreeMap<String, Definition>,
) -> BTreeSet<String> {
    let mut keep = BTreeSet::new();
    let mut todo: Vec<String> = all
        .keys()
        .filter(|name| definitions.contains_key(&openapi::definition_name(name)))
        .cloned()
        .collect();
    while let Some(name) = todo.pop() {
        if !keep.insert(name.clone()) {
            continue;
        }
        for f in all.get(&name).into_iter().flatten() {
            if all.contains_key(f.type_name()) && !keep.contains(f.type_name()) {
                todo.push(f.type_name().to_owned());
            }
        }
    }
    keep
}

/// What [`generate`] gives: the codecs (paths relative to kclient-protobuf's
/// `src/generated/`), the test schemas (relative to its `tests/generated/`) and the API
/// groups' cargo features of kclient-protobuf and of the facade.
pub struct Generated {
    /// The codecs of every version.
    pub codecs: GeneratedFiles,
    /// The test schemas of every version.
    pub tests: GeneratedFiles,
    /// kclient-protobuf's `[features]` lines of the API groups, over every version.
    pub group_features: String,
    /// The facade's `[features]` lines of the API groups.
    pub facade_group_features: String,
}

/// Generates the codecs of every version: `inputs` pairs each version's input with the
/// definitions read from k8s-openapi's source of that version.
pub fn generate(
    inputs: &[(ProtobufInput, BTreeMap<String, Definition>)],
) -> Result<Generated, Error> {
    let (mut codecs, mut tests) = (GeneratedFiles::new(), GeneratedFiles::new());
    for (input, definitions) in inputs {
        for (path, content) in generate_protobuf(input, definitions)?.iter() {
            match path.strip_prefix("tests") {
                Ok(test) => tests.insert(test.to_path_buf(), content.to_owned()),
                Err(_) => codecs.insert(path.to_path_buf(), content.to_owned()),
            }
        }
    }
    let all: Vec<&ProtobufInput> = inputs.iter().map(|(input, _)| input).collect();
    let needs = groups::group_needs(&all);
    Ok(Generated {
        codecs,
        tests,
        group_features: groups::protobuf_features(&needs),
        facade_group_features: groups::facade_features(&needs),
    })
}
