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
    let script = root.join("crates/coral-mcp/tests/clients/python_mcp_http_client.py");
    let out = run(
        Command::new(&python).arg(&script).arg(&coral),
        "the Python MCP Streamable HTTP client check",
    )?;
    eprint!("{}", String::from_utf8_lossy(&out.stdout));
    let script = root.join("crates/coral-mcp/tests/clients/python_mcp_roots.py");
    let out = run(
        Command::new(&python).arg(&script).arg(&coral),
        "the Python MCP client roots check (--project auto)",
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
    inspect_http(&inspector, &coral)
}

/// The Inspector against `coral mcp --http`: the tool list with `--strict`, then the resource,
/// template and prompt lists.
fn inspect_http(inspector: &Path, coral: &Path) -> Result<()> {
    use std::io::BufRead;

    let data = tempfile::tempdir()?;
    let mut server = Command::new(coral)
        .arg("--data-dir")
        .arg(data.path())
        .args(["-q", "mcp", "--http", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .context("starting coral mcp --http")?;
    let result = (|| -> Result<()> {
        let mut line = String::new();
        let stdout = server.stdout.take().context("the server's stdout")?;
        std::io::BufReader::new(stdout).read_line(&mut line)?;
        let info: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("coral mcp --http printed no address: {line:?}"))?;
        let url = format!(
            "http://{}{}",
            info["listening"].as_str().unwrap_or_default(),
            info["endpoint"].as_str().unwrap_or_default()
        );
        let mut counts = Vec::new();
        for (method, key, strict) in [
            ("tools/list", "tools", true),
            ("resources/list", "resources", false),
            ("resources/templates/list", "resourceTemplates", false),
            ("prompts/list", "prompts", false),
        ] {
            let mut cmd = Command::new(inspector);
            cmd.args(["--cli", &url, "--transport", "http", "--method", method]);
            if strict {
                cmd.arg("--strict");
            }
            let out = cmd
                .output()
                .context("running the MCP Inspector over HTTP")?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            if !out.status.success() || !stderr.trim().is_empty() {
                bail!(
                    "MCP Inspector over HTTP, {method}, reported problems ({}):\n{stderr}",
                    out.status
                );
            }
            let listed: serde_json::Value = serde_json::from_slice(&out.stdout)
                .with_context(|| format!("the Inspector printed no JSON for {method}"))?;
            let n = listed[key].as_array().map_or(0, Vec::len);
            if n == 0 {
                bail!("the Inspector over HTTP listed no {key}");
            }
            counts.push(format!("{n} {key}"));
        }
        eprintln!(
            "xtask: MCP Inspector --transport http: {} (tools --strict clean)",
            counts.join(", ")
        );
        Ok(())
    })();
    let _ = server.kill();
    let _ = server.wait();
    result
}
