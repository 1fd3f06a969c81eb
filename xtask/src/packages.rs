//! The workspace's members and the dependencies of each, as `cargo metadata` lists them (read
//! by the dependency rules, `deps.rs`, and the ARCHITECTURE.md check, `architecture_doc.rs`).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// One dependency of a workspace member, as `cargo metadata` lists it.
#[derive(Clone, Debug)]
pub(crate) struct Dep {
    pub(crate) name: String,
    /// `None` for a normal dependency, else `"dev"` or `"build"`.
    pub(crate) kind: Option<String>,
}

/// A workspace member.
#[derive(Clone, Debug)]
pub(crate) struct Package {
    pub(crate) name: String,
    /// Its folder relative to the workspace root (`crates/coral-store`, `xtask`).
    pub(crate) folder: String,
    pub(crate) deps: Vec<Dep>,
}

/// The workspace members, from `cargo metadata --no-deps` run in `root`.
pub(crate) fn metadata(root: &Path) -> Result<Vec<Package>> {
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
    let workspace_root = meta["workspace_root"].as_str().unwrap_or_default();
    let str_of = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    Ok(meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let manifest = Path::new(p["manifest_path"].as_str().unwrap_or_default());
            let folder = manifest
                .parent()
                .and_then(|d| d.strip_prefix(workspace_root).ok())
                .map(|d| d.to_string_lossy().into_owned())
                .unwrap_or_default();
            Package {
                name: str_of(&p["name"]),
                folder,
                deps: p["dependencies"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|d| Dep {
                        name: str_of(&d["name"]),
                        kind: d["kind"].as_str().map(String::from),
                    })
                    .collect(),
            }
        })
        .collect())
}
