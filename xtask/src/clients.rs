//! Checks of `coral mcp` with the official clients: the Python MCP SDK and the MCP Inspector CLI.
//!
//! Both are installed on first use into `target/ci-tools/` (a Python venv and an npm prefix),
//! pinned to the versions below, so a fresh machine needs only Python 3 with pip and Node.js.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The Python MCP SDK version the checks use.
pub const PYTHON_MCP: &str = "mcp==2.3.0";
/// The MCP Inspector version the checks use.
pub const INSPECTOR: &str = "@modelcontextprotocol/inspector@2.12.0";

fn run(cmd: &mut Command, what: &str) -> Result<std::process::Output> {
    let out = cmd.output().with_context(|| format!("running {what}"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(out)
}

fn python_client(tools: &Path) -> Result<PathBuf> {
    let python = tools.join("venv/bin/python");
    let ready = python.exists()
        && Command::new(&python)
            .args(["-c", "import mcp"])
            .output()
            .is_ok_and(|o| o.status.success());
    if !ready {
        eprintln!(
            "xtask: installing the Python MCP client ({PYTHON_MCP}) into {}",
            tools.display()
        );
        run(
            Command::new("python3")
                .args(["-m", "venv"])
                .arg(tools.join("venv")),
            "python3 -m venv",
        )?;
        run(
            Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                PYTHON_MCP,
            ]),
            "pip install mcp",
        )?;
    }
    Ok(python)
}

fn inspector(tools: &Path) -> Result<PathBuf> {
    let bin = tools.join("node_modules/.bin/mcp-inspector");
    if !bin.exists() {
        eprintln!(
            "xtask: installing the MCP Inspector ({INSPECTOR}) into {}",
            tools.display()
        );
        run(
            Command::new("npm")
                .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
                .arg(tools)
                .arg(INSPECTOR),
            "npm install @modelcontextprotocol/inspector",
        )?;
    }
    Ok(bin)
}

/// Build the binary, then run both client checks against it.
pub fn check(root: &Path) -> Result<()> {
    crate::cargo(&["build", "--quiet", "-p", "coral-mcp"])?;
    let coral = crate::target_dir(root).join("debug/coral");
    let tools = root.join("target/ci-tools");
    std::fs::create_dir_all(&tools)?;

    let python = python_client(&tools)?;
    let script = root.join("crates/coral-mcp/tests/clients/python_mcp_client.py");
    let out = run(
        Command::new(&python).arg(&script).arg(&coral),
        "the Python MCP client check",
    )?;
    eprint!("{}", String::from_utf8_lossy(&out.stdout));

    let inspector = inspector(&tools)?;
    let data = tempfile::tempdir()?;
    let out = Command::new(&inspector)
        .arg("--cli")
        .arg(&coral)
        .arg("--data-dir")
        .arg(data.path())
        .args(["-q", "mcp", "--method", "tools/list", "--strict"])
        .current_dir(data.path())
        .output()
        .context("running the MCP Inspector")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || !stderr.trim().is_empty() {
        bail!(
            "MCP Inspector --strict reported problems ({}):\n{stderr}",
            out.status
        );
    }
    let listed: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("the Inspector printed no JSON tool list")?;
    let count = listed["tools"].as_array().map_or(0, Vec::len);
    if count == 0 {
        bail!("the Inspector listed no tools");
    }
    eprintln!("xtask: MCP Inspector --strict: {count} tools, no schema problems");
    Ok(())
}
