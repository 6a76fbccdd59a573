//! Golden tests of the generator: the output for fixture inputs is compared with checked-in
//! files. After an intended change, regenerate them with `KCLIENT_BLESS=1 cargo test -p
//! kclient-codegen --test integration golden::` and review the diff.

use std::path::{Path, PathBuf};

use kclient_codegen::crd::generate_crds;
use kclient_codegen::{
    generate_clientset, generate_informers, ClientsetOptions, CrdOptions, GeneratedFiles,
    InformersOptions, ResourceTable,
};

fn here(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(path)
}

/// Compares `files` with `dir`, or rewrites `dir` when `KCLIENT_BLESS` is set.
fn assert_golden(files: &GeneratedFiles, dir: &Path) {
    if std::env::var_os("KCLIENT_BLESS").is_some() {
        files.write(dir).unwrap();
        return;
    }
    let drift = files.diff(dir).unwrap();
    assert!(
        drift.is_empty(),
        "generated code differs from {} (KCLIENT_BLESS=1 rewrites it):\n{drift}",
        dir.display()
    );
}

#[test]
fn clientset_for_two_versions() {
    let tables: Vec<ResourceTable> = ["resources-small.json", "resources-small-next.json"]
        .iter()
        .map(|f| ResourceTable::load(here(&format!("fixtures/{f}"))).unwrap())
        .collect();
    let files = generate_clientset(&tables, &ClientsetOptions::default())
        .unwrap()
        .rustfmt()
        .unwrap();
    assert_eq!(files.len(), 3, "mod.rs, core_v1.rs, apps_v1.rs");
    let apps = files.get("apps_v1.rs").unwrap();
    assert!(
        apps.contains("#[cfg(kclient_k8s = \"1.36\")]"),
        "ReplicaSet is new in 1.36"
    );
    assert_golden(&files, &here("golden/clientset"));
}

#[test]
fn informers_for_two_versions() {
    let tables: Vec<ResourceTable> = ["resources-small.json", "resources-small-next.json"]
        .iter()
        .map(|f| ResourceTable::load(here(&format!("fixtures/{f}"))).unwrap())
        .collect();
    let files = generate_informers(&tables, &InformersOptions::default())
        .unwrap()
        .rustfmt()
        .unwrap();
    assert_eq!(files.len(), 3, "mod.rs, core_v1.rs, apps_v1.rs");
    let apps = files.get("apps_v1.rs").unwrap();
    assert!(apps.contains("pub fn deployments("));
    assert!(
        !apps.contains("replica_sets"),
        "the fixture's ReplicaSet cannot be watched: no informer"
    );
    assert!(
        !files.get("mod.rs").unwrap().contains("Clientset"),
        "the informers know no client"
    );
    assert_golden(&files, &here("golden/informers"));
}

#[test]
fn generation_is_deterministic() {
    let tables: Vec<ResourceTable> = ["resources-small-next.json", "resources-small.json"]
        .iter()
        .map(|f| ResourceTable::load(here(&format!("fixtures/{f}"))).unwrap())
        .collect();
    let a = generate_clientset(&tables, &ClientsetOptions::default()).unwrap();
    let reversed: Vec<ResourceTable> = tables.iter().rev().cloned().collect();
    let b = generate_clientset(&reversed, &ClientsetOptions::default()).unwrap();
    assert_eq!(a, b, "the order of the tables does not matter");
    let a = generate_informers(&tables, &InformersOptions::default()).unwrap();
    let b = generate_informers(&reversed, &InformersOptions::default()).unwrap();
    assert_eq!(a, b, "nor for the informers");
}

fn fixture_crds() -> Vec<(String, String)> {
    ["crontab.yaml", "widget.yaml"]
        .iter()
        .map(|f| {
            let path = format!("crates/kclient-codegen/tests/fixtures/{f}");
            (
                path,
                std::fs::read_to_string(here(&format!("fixtures/{f}"))).unwrap(),
            )
        })
        .collect()
}

#[test]
fn crd_types_for_the_fixtures() {
    let files = generate_crds(&fixture_crds(), &CrdOptions::default())
        .unwrap()
        .rustfmt()
        .unwrap();
    let names: Vec<String> = files.iter().map(|(p, _)| p.display().to_string()).collect();
    assert_eq!(names, ["cron_tab.rs", "mod.rs", "widget.rs"]);
    // The same files `crd_types.rs` compiles and runs against kclient-fake.
    assert_golden(&files, &here("crd_generated"));
}
