//! The dashboard's browser test (`crates/coral-mcp/tests/dashboard.rs`) needs its npm packages,
//! pinned by `crates/coral-mcp/tests/browser/package-lock.json`: `cargo xtask ci` installs them
//! when they are missing, as `clients` installs the MCP Inspector. Chromium itself comes from
//! Debian (`apt-get install chromium`, done by `.ci/run`); puppeteer-core never downloads one.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// `npm ci` in the browser test's folder unless its packages are there.
pub fn ensure_packages(root: &Path) -> Result<()> {
    let dir = root.join("crates/coral-mcp/tests/browser");
    if dir
        .join("node_modules/puppeteer-core/package.json")
        .exists()
    {
        return Ok(());
    }
    eprintln!(
        "xtask: installing the browser test's npm packages (npm ci) in {}",
        dir.display()
    );
    let status = Command::new("npm")
        .args(["ci", "--silent", "--no-audit", "--no-fund"])
        .env("PUPPETEER_SKIP_DOWNLOAD", "1")
        .current_dir(&dir)
        .status()
        .context("running npm ci (is Node.js with npm installed?)")?;
    if !status.success() {
        bail!("npm ci in {} failed ({status})", dir.display());
    }
    Ok(())
}
