//! `cargo xtask check-features`: builds the facade (`kclient`) with no layer, then with each
//! layer feature alone, so that no layer accidentally needs another one's feature (a `use`
//! of a module another feature gates, a variant of `kclient::Error` only some builds have).
//!
//! The layer features are read from `crates/kclient/Cargo.toml` (every feature but `default`,
//! the Kubernetes versions and the API groups), so a new layer is checked without touching
//! this file. Each build also enables `v1_37`, the Kubernetes version k8s-openapi needs to
//! compile at all: the version features choose API types, not layers.
//!
//! The API groups (`group-apps`, …) choose which protobuf codecs kclient-protobuf compiles:
//! it is built with each group alone, so that every group's generated list of the groups it
//! needs is complete (the layer builds above have no group at all).

use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::{cargo, step, workspace_root};

/// The Kubernetes version each build enables.
const VERSION_FEATURE: &str = "v1_37";

pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(unknown) = args.first() {
        bail!("`cargo xtask check-features` takes no arguments (got {unknown:?})");
    }
    let started = Instant::now();
    let layers = layer_features()?;
    let mut builds: Vec<Option<&str>> = vec![None];
    builds.extend(layers.iter().map(|f| Some(f.as_str())));
    for layer in builds {
        let features = match layer {
            Some(layer) => format!("{layer},{VERSION_FEATURE}"),
            None => VERSION_FEATURE.to_owned(),
        };
        let mut check = cargo();
        check.args([
            "check",
            "--quiet",
            "-p",
            "kclient",
            "--lib",
            "--no-default-features",
            "--features",
            &features,
        ]);
        step(
            &format!("cargo check -p kclient, {}", layer.unwrap_or("no layer")),
            check,
        )?;
    }
    let groups = group_features()?;
    for group in &groups {
        let mut check = cargo();
        let features = format!("{group},{VERSION_FEATURE}");
        check.args([
            "check",
            "--quiet",
            "-p",
            "kclient-protobuf",
            "--lib",
            "--no-default-features",
            "--features",
            &features,
        ]);
        step(&format!("cargo check -p kclient-protobuf, {group}"), check)?;
    }
    eprintln!(
        "check-features: the facade builds with no layer and with each of {} alone, \
         kclient-protobuf with each of {} API groups alone, in {:.0}s",
        layers.join(", "),
        groups.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The facade's features, as [`parse_features`] reads them.
fn facade_features() -> Result<Vec<String>> {
    let path = workspace_root().join("crates/kclient/Cargo.toml");
    let manifest =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let features = parse_features(&manifest);
    if features.is_empty() {
        bail!("no features found in {}", path.display());
    }
    Ok(features)
}

/// Whether a facade feature chooses API groups (`group-apps`, `all-groups`, `common-groups`).
fn is_group(feature: &str) -> bool {
    feature.starts_with("group-") || feature.ends_with("-groups")
}

/// The API groups' features (`group-…`), one each.
fn group_features() -> Result<Vec<String>> {
    Ok(facade_features()?
        .into_iter()
        .filter(|f| f.starts_with("group-"))
        .collect())
}

/// The facade's layer features: its features less the API groups, in manifest order.
fn layer_features() -> Result<Vec<String>> {
    Ok(facade_features()?
        .into_iter()
        .filter(|f| !is_group(f))
        .collect())
}

/// The `[features]` table of a manifest less `default` and the `v1_*` versions, in manifest
/// order.
fn parse_features(manifest: &str) -> Vec<String> {
    let mut in_features = false;
    let mut features = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_features = line == "[features]";
            continue;
        }
        if !in_features || line.starts_with('#') {
            continue;
        }
        let Some((name, _)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if name != "default" && !name.starts_with("v1_") && !name.is_empty() {
            features.push(name.to_owned());
        }
    }
    features
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_features_leave_out_default_and_versions() {
        let manifest = "[package]\nname = \"kclient\"\n\n[features]\ndefault = [\"rest\", \"v1_37\"]\n\
                        ## Config.\nrest = [\"dep:kclient-rest\"]\ncache = [\"dep:kclient-cache\"]\n\
                        v1_35 = [\"k8s-openapi/v1_35\"]\n\n[dependencies]\nserde = \"1\"\n";
        assert_eq!(parse_features(manifest), ["rest", "cache"]);
    }

    #[test]
    fn the_facade_manifest_has_the_known_layers() {
        let layers = layer_features().unwrap();
        assert!(!layers.iter().any(|l| is_group(l)), "{layers:?}");
        assert!(group_features().unwrap().iter().any(|g| g == "group-core"));
        for layer in [
            "rest",
            "discovery",
            "dynamic",
            "typed",
            "cache",
            "informers",
            "workqueue",
            "tools",
        ] {
            assert!(layers.iter().any(|l| l == layer), "{layer} in {layers:?}");
        }
    }
}
