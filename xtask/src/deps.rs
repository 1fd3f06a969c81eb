//! The dependency rules of ARCHITECTURE.md, checked with `cargo metadata`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Which of our crates each crate may depend on (normal and build dependencies).
const ALLOWED: &[(&str, &[&str])] = &[
    ("coral-base", &[]),
    ("coral-score", &["coral-base"]),
    ("coral-embed", &["coral-base"]),
    ("coral-store", &["coral-base"]),
    ("coral-heat", &["coral-base"]),
    ("coral-thread", &["coral-base"]),
    ("coral-timeline", &["coral-base", "coral-score"]),
    (
        "coral",
        &[
            "coral-base",
            "coral-score",
            "coral-embed",
            "coral-store",
            "coral-heat",
            "coral-thread",
            "coral-timeline",
        ],
    ),
    ("coral-mcp", &["coral"]),
];

/// External crates only the edge may use.
const EDGE_ONLY: &[&str] = &["tokio", "rmcp", "hyper", "axum"];

pub fn check(root: &Path) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root)
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let ours: Vec<&str> = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .collect();
    let rules: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut problems = Vec::new();
    for package in meta["packages"].as_array().into_iter().flatten() {
        let name = package["name"].as_str().unwrap_or_default();
        let Some(allowed) = rules.get(name) else {
            continue; // xtask and benches may use anything
        };
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            if dep["kind"].as_str() == Some("dev") {
                continue;
            }
            let dep_name = dep["name"].as_str().unwrap_or_default();
            if ours.contains(&dep_name) && !allowed.contains(&dep_name) {
                problems.push(format!("{name} must not depend on {dep_name}"));
            }
            if EDGE_ONLY.contains(&dep_name) && name != "coral-mcp" {
                problems.push(format!("{name} must not depend on {dep_name} (edge only)"));
            }
        }
    }
    for name in rules.keys() {
        if !ours.contains(name) {
            problems.push(format!("crate {name} is missing from the workspace"));
        }
    }
    if !problems.is_empty() {
        bail!("dependency rules broken:\n  {}", problems.join("\n  "));
    }
    eprintln!("xtask deps: dependency rules hold");
    Ok(())
}
